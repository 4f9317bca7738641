/*-------------------------------------------------------------------------
 *
 * samples_response.c
 *	  Writing SAMPLES responses (ReadResponse) straight from series sets.
 *
 * ReadResponse { repeated QueryResult results = 1 }, QueryResult {
 * repeated TimeSeries timeseries = 1 }, TimeSeries { repeated Label labels
 * = 1; repeated Sample samples = 2 }, Label { name = 1; value = 2 },
 * Sample { double value = 1; int64 timestamp = 2 }.
 *
 * The encoded size of each series and of the whole result are known
 * before anything is written (the series set adds up each series' bytes as
 * its samples arrive, their times' and their total while it is finished),
 * so each series is read once, when it is written: no message objects, no
 * allocation per sample.
 * As protobuf encoders do, a sample's fields are left out when zero; a
 * value is left out only when its bits are all zero (+0.0), so that -0.0,
 * infinities and every NaN payload (the stale marker among them) keep their
 * exact bits.
 *
 * A series that holds histograms carries them as TimeSeries.histograms = 4
 * instead of samples: Histogram { count_int = 1 | count_float = 2, sum = 3,
 * schema = 4 (sint32), zero_threshold = 5, zero_count_int = 6 |
 * zero_count_float = 7, negative_spans = 8, negative_deltas = 9 (packed
 * sint64), negative_counts = 10 (packed double), positive_spans = 11,
 * positive_deltas = 12, positive_counts = 13, reset_hint = 14, timestamp =
 * 15, custom_values = 16 (packed double) }, BucketSpan { offset = 1
 * (sint32), length = 2 }.  The count and zero count, a oneof, are always
 * written, in the member of the histogram's kind (a float histogram whose
 * count is 0 is still one); other fields are left out when zero, doubles
 * only when their bits are all zero, as for samples.  One routine both
 * measures and writes a histogram (HistogramOut), so that the size the set
 * counted (PromHistogramFieldSize) is what is written.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "engine/engine.h"
#include "histogram/histogram.h"
#include "protocol.h"

/* Field numbers. */
#define RESULTS_FIELD		1	/* ReadResponse.results */
#define TIMESERIES_FIELD	1	/* QueryResult.timeseries */
#define SAMPLES_FIELD		2	/* TimeSeries.samples */
#define HISTOGRAMS_FIELD	4	/* TimeSeries.histograms */
#define SAMPLE_VALUE_FIELD	1
#define SAMPLE_TIME_FIELD	2

/* Field numbers of a Histogram, and of a BucketSpan. */
#define H_COUNT_INT				1
#define H_COUNT_FLOAT			2
#define H_SUM					3
#define H_SCHEMA				4
#define H_ZERO_THRESHOLD		5
#define H_ZERO_COUNT_INT		6
#define H_ZERO_COUNT_FLOAT		7
#define H_NEGATIVE_SPANS		8
#define H_NEGATIVE_DELTAS		9
#define H_NEGATIVE_COUNTS		10
#define H_POSITIVE_SPANS		11
#define H_POSITIVE_DELTAS		12
#define H_POSITIVE_COUNTS		13
#define H_RESET_HINT			14
#define H_TIMESTAMP				15
#define H_CUSTOM_VALUES			16
#define SPAN_OFFSET				1
#define SPAN_LENGTH				2

/*---- Histograms ----*/

/*
 * Where a histogram is written, or only measured: bytes go to p unless it is
 * NULL; n counts them either way.
 */
typedef struct HistogramOut
{
	char	   *p;
	Size		n;
} HistogramOut;

/* Write or count a varint. */
static void
out_varint(HistogramOut *out, uint64 value)
{
	out->n += wire_varint_size(value);
	if (out->p != NULL)
		out->p = wire_put_varint(out->p, value);
}

/* Write or count a field's tag (any field number). */
static void
out_tag(HistogramOut *out, int field, int type)
{
	out_varint(out, ((uint64) field << 3) | type);
}

/* Write or count 8 bytes, little-endian. */
static void
out_fixed64(HistogramOut *out, uint64 bits)
{
	out->n += 8;
	if (out->p != NULL)
		out->p = wire_put_fixed64(out->p, bits);
}

/* The zigzag form of a signed integer, as sint32 and sint64 fields take. */
static inline uint64
zigzag(int64 value)
{
	return ((uint64) value << 1) ^ (value < 0 ? ~UINT64CONST(0) : 0);
}

/* A varint field, left out when zero unless always. */
static void
out_varint_field(HistogramOut *out, int field, uint64 value, bool always)
{
	if (value == 0 && !always)
		return;
	out_tag(out, field, WIRE_VARINT);
	out_varint(out, value);
}

/* A double field, left out when its bits are all zero unless always. */
static void
out_double_field(HistogramOut *out, int field, double value, bool always)
{
	if (wire_double_bits(value) == 0 && !always)
		return;
	out_tag(out, field, WIRE_FIXED64);
	out_fixed64(out, wire_double_bits(value));
}

/* Repeated BucketSpan fields. */
static void
out_spans(HistogramOut *out, int field, const PromBucketSpan *spans, uint32 n)
{
	uint32		i;

	for (i = 0; i < n; i++)
	{
		uint64		offset = zigzag(spans[i].offset);
		Size		size = (offset != 0 ? 1 + wire_varint_size(offset) : 0) +
			(spans[i].length != 0 ? 1 + wire_varint_size(spans[i].length) : 0);

		out_tag(out, field, WIRE_LEN);
		out_varint(out, size);
		out_varint_field(out, SPAN_OFFSET, offset, false);
		out_varint_field(out, SPAN_LENGTH, spans[i].length, false);
	}
}

/* A packed field of bucket deltas (sint64) or counts (double); none if empty. */
static void
out_buckets(HistogramOut *out, int field, const PromHistogramBucket *buckets,
			uint32 n, bool counts)
{
	Size		size = 0;
	uint32		i;

	if (n == 0)
		return;
	if (counts)
		size = (Size) n * 8;
	else
		for (i = 0; i < n; i++)
			size += wire_varint_size(zigzag(buckets[i].delta));
	out_tag(out, field, WIRE_LEN);
	out_varint(out, size);
	for (i = 0; i < n; i++)
	{
		if (counts)
			out_fixed64(out, wire_double_bits(buckets[i].count));
		else
			out_varint(out, zigzag(buckets[i].delta));
	}
}

/* A Histogram message's fields, in field order. */
static void
out_histogram(HistogramOut *out, const PromHistogram *h, int64 t)
{
	bool		is_float = PromHistogramIsFloat(h);
	const double *custom = PromHistogramCustomValues(h);
	uint32		i;

	if (is_float)
		out_double_field(out, H_COUNT_FLOAT, h->count.value, true);
	else
		out_varint_field(out, H_COUNT_INT, h->count.integer, true);
	out_double_field(out, H_SUM, h->sum, false);
	out_varint_field(out, H_SCHEMA, zigzag(h->schema), false);
	out_double_field(out, H_ZERO_THRESHOLD, h->zero_threshold, false);
	if (is_float)
		out_double_field(out, H_ZERO_COUNT_FLOAT, h->zero_count.value, true);
	else
		out_varint_field(out, H_ZERO_COUNT_INT, h->zero_count.integer, true);
	out_spans(out, H_NEGATIVE_SPANS, PromHistogramNegativeSpans(h),
			  h->nnegative_spans);
	out_buckets(out, is_float ? H_NEGATIVE_COUNTS : H_NEGATIVE_DELTAS,
				PromHistogramNegativeBuckets(h), h->nnegative_buckets, is_float);
	out_spans(out, H_POSITIVE_SPANS, PromHistogramPositiveSpans(h),
			  h->npositive_spans);
	out_buckets(out, is_float ? H_POSITIVE_COUNTS : H_POSITIVE_DELTAS,
				PromHistogramPositiveBuckets(h), h->npositive_buckets, is_float);
	out_varint_field(out, H_RESET_HINT, h->reset_hint, false);
	out_varint_field(out, H_TIMESTAMP, (uint64) t, false);
	if (h->ncustom_values > 0)
	{
		out_tag(out, H_CUSTOM_VALUES, WIRE_LEN);
		out_varint(out, (Size) h->ncustom_values * 8);
		for (i = 0; i < h->ncustom_values; i++)
			out_fixed64(out, wire_double_bits(custom[i]));
	}
}

/* Bytes of a Histogram message. */
static Size
histogram_message_size(const PromHistogram *h, int64 t)
{
	HistogramOut out = {NULL, 0};

	out_histogram(&out, h, t);
	return out.n;
}

/*
 * Bytes of a histogram of time t as a histograms field of a TimeSeries: what
 * a series of histograms counts for it in its message (samples.c).
 */
Size
PromHistogramFieldSize(const PromHistogram *h, int64 t)
{
	return wire_len_field_size(histogram_message_size(h, t));
}

/* Write a histogram of time t as a histograms field; returns the end. */
static char *
put_histogram_field(char *p, const PromHistogram *h, int64 t)
{
	HistogramOut out;

	p = wire_put_len_header(p, HISTOGRAMS_FIELD, histogram_message_size(h, t));
	out.p = p;
	out.n = 0;
	out_histogram(&out, h, t);
	return out.p;
}

/*
 * A time's tag and varint as one word, for times below 2^49 ms (the year
 * 19800), whose varint has at most 7 bytes: the tag is byte 0.  A time of
 * 2^28 ms (three days after 1970) or over has a varint of its 4 low 7-bit
 * groups, each marked as continued, followed by the varint of its higher
 * bits, which the times of a block of samples share (they change every 3.1
 * days): the word of those is made once, and each sample's spreads only its
 * 28 low bits (wire_spread28).
 */
#define TIME_LOW_BITS		28
#define TIME_HIGH_LIMIT		(UINT64CONST(1) << (49 - TIME_LOW_BITS))

typedef struct TimeFieldHigh
{
	uint64		high;			/* the time's bits above the low 28; none
								 * matches PG_UINT64_MAX */
	uint64		word;			/* the tag, the continuation bits of the low
								 * groups and the varint of high */
	int			size;			/* of the time's varint */
} TimeFieldHigh;

/* Make the high part of the time field of times of the given high bits. */
static void
set_time_field_high(TimeFieldHigh *cached, uint64 high)
{
	int			high_size = wire_varint_size(high);
	uint32		high_varint = wire_spread28((uint32) high) |
		(0x80808080 & (((uint32) 1 << (8 * (high_size - 1))) - 1));

	Assert(high > 0 && high < TIME_HIGH_LIMIT);
	cached->high = high;
	cached->word = ((uint64) high_varint << 40) |
		(UINT64CONST(0x80808080) << 8) |
		WIRE_TAG(SAMPLE_TIME_FIELD, WIRE_VARINT);
	cached->size = 4 + high_size;
}

/* The time field's word for a time whose high bits are those cached. */
static inline uint64
time_field_word(const TimeFieldHigh *cached, uint64 t)
{
	return cached->word | ((uint64) wire_spread28((uint32) t & 0x0FFFFFFF) << 8);
}

/*
 * Write n samples of a run from the given one as repeated Sample fields;
 * returns the end.  Each may take WIRE_SAMPLE_FIELD_MAX bytes, written or
 * not.
 *
 * The usual sample, at a time of 2^28 ms or over and below 2^49 ms, is
 * written by five stores whatever its value: its field's tag and length,
 * the value's tag and bits, and then, one byte on or nine (over the value's
 * field when its bits are all zero), the time's field as one word.  Any
 * other is written field by field.
 */
static char *
put_samples(char *p, const PromSampleRun *run, uint32 from, uint32 n)
{
	TimeFieldHigh cached = {PG_UINT64_MAX, 0, 0};
	uint32		i;

	for (i = from; i < from + n; i++)
	{
		PromSample	sample = PromSampleRunSample(run, i);
		uint64		bits = wire_double_bits(sample.v);
		uint64		t = (uint64) sample.t;
		uint64		high = t >> TIME_LOW_BITS;
		int			value_size = wire_sample_value_size(sample.v);

		if (unlikely(high != cached.high) && high - 1 < TIME_HIGH_LIMIT - 1)
			set_time_field_high(&cached, high);
		if (likely(high == cached.high))
		{
			p[0] = (char) WIRE_TAG(SAMPLES_FIELD, WIRE_LEN);
			p[1] = (char) (value_size + 1 + cached.size);
			p[2] = (char) WIRE_TAG(SAMPLE_VALUE_FIELD, WIRE_FIXED64);
			(void) wire_put_fixed64(p + 3, bits);
			p += 2 + value_size;
			(void) wire_put_fixed64(p, time_field_word(&cached, t));
			p += 1 + cached.size;
			continue;
		}
		*p++ = (char) WIRE_TAG(SAMPLES_FIELD, WIRE_LEN);
		*p++ = (char) wire_sample_size(sample.t, sample.v);
		if (bits != 0)
		{
			*p++ = (char) WIRE_TAG(SAMPLE_VALUE_FIELD, WIRE_FIXED64);
			p = wire_put_fixed64(p, bits);
		}
		if (t != 0)
		{
			*p++ = (char) WIRE_TAG(SAMPLE_TIME_FIELD, WIRE_VARINT);
			p = wire_put_varint(p, t);
		}
	}
	return p;
}

/*
 * The producer of one QueryResult, as field 1 of a ReadResponse, holding
 * the series of a finished set in their order; where it is: in which
 * series, and in which run of its samples (none yet: at its labels).
 */
typedef struct SamplesProducer
{
	PromProducer producer;
	const PromSeriesSet *set;
	PromSeries *const *series;
	int			nseries;
	Size		result_size;	/* bytes of the QueryResult */
	bool		started;		/* is its field header written? */
	int			next;			/* the series being written */
	bool		in_samples;		/* are its labels written? */
	PromSampleRun run;			/* then its run being written */
	uint32		done;			/* samples of that run written */
	bool		histograms;		/* does the series hold histograms? */
} SamplesProducer;

/*
 * Write the next items of a QueryResult: its field header, then for each
 * series its field header with its labels, then its samples in runs; the
 * set knows the bytes of each series and of them all, so each series is
 * read once, here.  It throws no error (see PromProducer).
 */
static Size
produce_samples(PromProducer *producer, char *buf, Size room, Size *need)
{
	SamplesProducer *self = (SamplesProducer *) producer;
	char	   *p = buf;
	char	   *end = buf + room;

	if (!self->started)
	{
		Size		size = wire_len_header_size(self->result_size);

		if (size > room)
		{
			*need = size;
			return 0;
		}
		p = wire_put_len_header(p, RESULTS_FIELD, self->result_size);
		self->started = true;
	}
	while (self->next < self->nseries)
	{
		const PromSeries *series = self->series[self->next];

		if (!self->in_samples)
		{
			Size		header_size = wire_len_header_size(series->message_bytes);

			PromPrefetchSeries(self->series, self->next, self->nseries);

			/*
			 * The header and labels must fit; a whole series that fits (a
			 * series' labels are part of its message) needs no labels' size
			 */
			if (header_size + series->message_bytes > (Size) (end - p))
			{
				Size		size = header_size +
					PromSeriesLabelsSize(self->set, series);

				if (size > (Size) (end - p))
				{
					*need = size;
					return p - buf;
				}
			}
			p = wire_put_len_header(p, TIMESERIES_FIELD, series->message_bytes);
			p = PromPutSeriesLabels(p, self->set, series);
			self->in_samples = true;
			self->histograms = PromSeriesHoldsHistograms(self->set, series);
			PromSampleRunFirst(&self->run, series);
			self->done = 0;
		}
		while (self->run.block != NULL)
		{
			uint32		n;

			/* a run may be empty: sorting moved its samples to earlier ones */
			if (self->done == self->run.count)
			{
				PromSampleRunNext(&self->run);
				self->done = 0;
				continue;
			}
			if (self->histograms)
			{
				PromSample	sample = PromSampleRunSample(&self->run, self->done);
				const PromHistogram *h = PromSampleHistogram(&sample);
				Size		size = PromHistogramFieldSize(h, sample.t);

				if (size > (Size) (end - p))
				{
					*need = size;
					return p - buf;
				}
				p = put_histogram_field(p, h, sample.t);
				self->done++;
				continue;
			}
			n = Min(self->run.count - self->done,
					(uint32) ((end - p) / WIRE_SAMPLE_FIELD_MAX));
			if (n == 0)
			{
				*need = WIRE_SAMPLE_FIELD_MAX;
				return p - buf;
			}
			p = put_samples(p, &self->run, self->done, n);
			self->done += n;
		}
		self->in_samples = false;
		self->next++;
	}
	return p - buf;
}

/*
 * Write one QueryResult, as field 1 of a ReadResponse, holding the series
 * of a finished set in their order; last if no other follows it in the
 * message.  The set's memory may go when this returns.
 */
void
PromWriteSamplesResult(PromSnappyWriter *writer, const PromSeriesSet *set,
					   bool last)
{
	SamplesProducer producer;

	memset(&producer, 0, sizeof(producer));
	producer.producer.produce = produce_samples;
	producer.set = set;
	producer.series = PromSeriesSetSeries(set, &producer.nseries);
	producer.result_size = PromSeriesSetResultBytes(set);
	/* a series may count no further (see PROM_MESSAGE_BYTES_MAX) */
	if (producer.result_size >= PROM_MESSAGE_BYTES_MAX)
		PromResponseTooLarge();
	producer.producer.remaining = wire_len_field_size(producer.result_size);
	PromSnappyWriterWrite(writer, &producer.producer, last);
}

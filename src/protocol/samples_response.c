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
 * instead of samples, each a Histogram message with its timestamp
 * (histogram/histogram_wire.c writes them, and measures them for the set,
 * which counts a series' histograms when it is finished).
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
	PromHistogramsAhead ahead;	/* then its histograms asked for ahead */
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
			if (self->histograms)
				PromHistogramsAheadStart(&self->ahead, series);
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
				Size		bound = PromHistogramFieldBound(h);

				if (bound > (Size) (end - p))
				{
					*need = bound;
					return p - buf;
				}
				PromHistogramsAheadStep(&self->ahead);
				p = PromPutHistogramField(p, HISTOGRAMS_FIELD, h, sample.t);
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
PromWriteSamplesResult(PromSnappyWriter *writer, PromSeriesSet *set,
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

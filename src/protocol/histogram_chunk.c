/*-------------------------------------------------------------------------
 *
 * histogram_chunk.c
 *	  Histogram chunks: a series of native histograms cut into HISTOGRAM (2)
 *	  chunks for integer histograms and FLOAT_HISTOGRAM (3) chunks for float
 *	  ones, for STREAMED_XOR_CHUNKS answers (chunk_encode.c) and for
 *	  compaction (storage/compact.c).
 *
 * 1. The format is Prometheus's (tsdb/docs/format/chunks.md): a 2-byte
 *    sample count, a flags byte whose two high bits say whether the chunk
 *    follows a counter reset (10), follows none (01), may or may not
 *    (00), or belongs to a gauge histogram (11); then the bucket layout,
 *    fixed for the whole chunk: the zero threshold (one byte for 0 and for
 *    powers of two from 2^-243 to 2^10, else 255 and its 64 bits), the
 *    schema, the positive and negative spans, the custom bounds of schema
 *    -53; then the samples.  Integer histograms carry their time, count,
 *    zero count and bucket deltas as varbit integers, deltas for the second
 *    sample and deltas of deltas after; float histograms their counts as
 *    64 bits and then XORs with the sample before, as XOR chunks carry
 *    floats; both carry the sum so.
 * 2. A chunk holds at most 120 samples (fewer if its caller asks:
 *    compaction splits a series' samples evenly), all of one kind and one layout
 *    (PromHistogramSameLayout: schema, zero threshold, spans, custom
 *    bounds), all gauge histograms or none.  A new chunk is cut wherever
 *    one of these changes, and, for a counter, at a counter reset: a
 *    sample whose hint says so, or whose count, zero count or a bucket is
 *    below the one before's, or that lacks a bucket the one before had
 *    with a count.  Prometheus rewrites a chunk to take in new buckets; a
 *    new chunk keeps each histogram exactly as it is, and a client takes
 *    any cut.
 * 3. A chunk's counter-reset bits: gauge histograms 11; at a series' start
 *    and after a stale marker, from its first sample's hint (yes 10, no 01,
 *    unknown 00); otherwise what the reset detection above says of its
 *    first sample and the sample before (10 or 01), or 00 when the two
 *    differ in kind, schema or zero threshold, as Prometheus's appender
 *    says.
 * 4. A stale marker (the sum's NaN 0x7ff0000000000002) is a chunk of its
 *    own, of an empty layout and counts of zero: Prometheus's chunk readers
 *    return a stale sample's sum alone and read no buckets after it, so a
 *    stale sample among others would need their rules; alone, any reader
 *    of the format reads it.
 * 5. Values go by their bits: a zero threshold or custom bound takes its
 *    short form only when that decodes to the same bits (so -0.0 stays
 *    -0.0), and integer arithmetic wraps as Go's does.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <math.h>

#include "bitstream.h"
#include "histogram/histogram.h"
#include "protocol.h"
#include "utils/memutils.h"

/* The counter-reset bits of a chunk's flags byte. */
#define RESET_UNKNOWN_BITS		0x00
#define RESET_NO_BITS			0x40
#define RESET_YES_BITS			0x80
#define RESET_GAUGE_BITS		0xC0

/*---- Varbit numbers ----*/

/*
 * The buckets of varbit numbers: a prefix of ones ended by a zero (none
 * after eight ones) and that many bits of the number.
 */
static const struct
{
	int			bits;
	uint64		prefix;
	int			prefix_len;
}			varbit_buckets[] = {
	{3, 0x2, 2}, {6, 0x6, 3}, {9, 0xe, 4}, {12, 0x1e, 5},
	{18, 0x3e, 6}, {25, 0x7e, 7}, {56, 0xfe, 8}
};

/* Write a number of a bucket: its prefix and its low bits. */
static inline void
put_varbit_bucket(XorWriter *w, int bucket, uint64 bits)
{
	int			n = varbit_buckets[bucket].bits;

	put_bits(w, varbit_buckets[bucket].prefix, varbit_buckets[bucket].prefix_len);
	put_bits64(w, bits & ((UINT64CONST(1) << n) - 1), n);
}

/* Write a signed varbit number (between 1 bit and 9 bytes). */
static void
put_varbit_int(XorWriter *w, int64 value)
{
	int			i;

	if (value == 0)
	{
		put_bits(w, 0, 1);
		return;
	}
	for (i = 0; i < (int) lengthof(varbit_buckets); i++)
	{
		int64		half = INT64CONST(1) << (varbit_buckets[i].bits - 1);

		if (value >= -(half - 1) && value <= half)
		{
			put_varbit_bucket(w, i, (uint64) value);
			return;
		}
	}
	put_bits(w, 0xff, 8);
	put_bits64(w, (uint64) value, 64);
}

/* Write an unsigned varbit number (between 1 bit and 9 bytes). */
static void
put_varbit_uint(XorWriter *w, uint64 value)
{
	int			i;

	if (value == 0)
	{
		put_bits(w, 0, 1);
		return;
	}
	for (i = 0; i < (int) lengthof(varbit_buckets); i++)
	{
		if (value < (UINT64CONST(1) << varbit_buckets[i].bits))
		{
			put_varbit_bucket(w, i, value);
			return;
		}
	}
	put_bits(w, 0xff, 8);
	put_bits64(w, value, 64);
}

/*---- The layout ----*/

/* Write the zero threshold: see 1. and 5. in the header comment. */
static void
put_zero_threshold(XorWriter *w, double threshold)
{
	int			exp;
	double		frac;

	if (wire_double_bits(threshold) == 0)
	{
		put_bits(w, 0, 8);
		return;
	}
	frac = frexp(threshold, &exp);
	if (frac == 0.5 && exp >= -242 && exp <= 11)
	{
		put_bits(w, (uint64) (exp + 243), 8);
		return;
	}
	put_bits(w, 0xff, 8);
	put_bits64(w, wire_double_bits(threshold), 64);
}

/*
 * Write a custom bound: as a thousandth of an unsigned number plus one when
 * that gives back its bits exactly and the number fits 25 bits, else a 0
 * bit and its 64 bits.
 */
static void
put_custom_bound(XorWriter *w, double bound)
{
	double		thousandths = bound * 1000;

	if (thousandths >= 0 && thousandths <= 33554430)
	{
		uint64		rounded = (uint64) round(thousandths);

		if (wire_double_bits((double) rounded / 1000) == wire_double_bits(bound))
		{
			put_varbit_uint(w, rounded + 1);
			return;
		}
	}
	put_bits(w, 0, 1);
	put_bits64(w, wire_double_bits(bound), 64);
}

/* Write spans: their number, then each one's length and offset. */
static void
put_spans(XorWriter *w, const PromBucketSpan *spans, uint32 n)
{
	uint32		i;

	put_varbit_uint(w, n);
	for (i = 0; i < n; i++)
	{
		put_varbit_uint(w, spans[i].length);
		put_varbit_int(w, spans[i].offset);
	}
}

/* Is a histogram a stale marker? */
static inline bool
is_stale(const PromHistogram *h)
{
	return wire_double_bits(h->sum) == PROM_STALE_NAN_BITS;
}

/* Write a chunk's layout, that of its first histogram (empty if stale). */
static void
put_layout(XorWriter *w, const PromHistogram *h)
{
	uint32		i;

	if (is_stale(h))
	{
		put_zero_threshold(w, 0);
		put_varbit_int(w, 0);
		put_spans(w, NULL, 0);
		put_spans(w, NULL, 0);
		return;
	}
	put_zero_threshold(w, h->zero_threshold);
	put_varbit_int(w, h->schema);
	put_spans(w, PromHistogramPositiveSpans(h), h->npositive_spans);
	put_spans(w, PromHistogramNegativeSpans(h), h->nnegative_spans);
	if (h->schema == PROM_SCHEMA_CUSTOM)
	{
		put_varbit_uint(w, h->ncustom_values);
		for (i = 0; i < h->ncustom_values; i++)
			put_custom_bound(w, PromHistogramCustomValues(h)[i]);
	}
}

/* Bytes a layout may take at most, the last partial byte included. */
static Size
layout_bound(const PromHistogram *h)
{
	return 9 + 9 + 2 * 9 +
		18 * ((Size) h->npositive_spans + h->nnegative_spans) +
		9 + 9 * (Size) h->ncustom_values + 1;
}

/* Bytes a sample may take at most: time, counts, sum, buckets. */
static Size
sample_bound(const PromHistogram *h)
{
	return 9 + 3 * 10 +
		10 * ((Size) h->npositive_buckets + h->nnegative_buckets) + 1;
}

/*---- Counter resets ----*/

/* Walking a histogram's buckets with their indexes and absolute counts. */
typedef struct BucketWalk
{
	const PromBucketSpan *spans;
	uint32		nspans;
	const PromHistogramBucket *buckets;
	uint32		nbuckets;
	bool		is_float;
	uint32		span;			/* the span being walked */
	uint32		in_span;		/* buckets of it walked */
	uint32		taken;			/* buckets walked */
	int64		next_index;		/* the index of the next bucket */
	int64		index;			/* the current bucket's index */
	int64		count;			/* and its count, integer histograms */
	double		value;			/* or float ones */
} BucketWalk;

/* Start a walk of one side's buckets. */
static void
walk_start(BucketWalk *walk, const PromHistogram *h, bool positive)
{
	memset(walk, 0, sizeof(BucketWalk));
	walk->is_float = PromHistogramIsFloat(h);
	walk->spans = positive ? PromHistogramPositiveSpans(h) :
		PromHistogramNegativeSpans(h);
	walk->nspans = positive ? h->npositive_spans : h->nnegative_spans;
	walk->buckets = positive ? PromHistogramPositiveBuckets(h) :
		PromHistogramNegativeBuckets(h);
	walk->nbuckets = positive ? h->npositive_buckets : h->nnegative_buckets;
}

/* Step to the next bucket; false past the last. */
static bool
walk_next(BucketWalk *walk)
{
	while (walk->span < walk->nspans && walk->taken < walk->nbuckets)
	{
		const PromBucketSpan *span = &walk->spans[walk->span];

		if (walk->in_span == 0)
			walk->next_index += span->offset;
		if (walk->in_span < span->length)
		{
			const PromHistogramBucket *b = &walk->buckets[walk->taken++];

			walk->index = walk->next_index++;
			walk->in_span++;
			if (walk->is_float)
				walk->value = b->count;
			else
				walk->count = (int64) ((uint64) walk->count + (uint64) b->delta);
			return true;
		}
		walk->span++;
		walk->in_span = 0;
	}
	return false;
}

/* Is the walk's current bucket's count below the other's? */
static bool
walk_below(const BucketWalk *walk, const BucketWalk *other)
{
	return walk->is_float ? walk->value < other->value :
		walk->count < other->count;
}

/* Is the walk's current bucket's count other than zero? */
static bool
walk_nonzero(const BucketWalk *walk)
{
	return walk->is_float ? walk->value != 0 : walk->count != 0;
}

/*
 * Did a side's buckets go down from prev to h: one below the same bucket
 * of prev, or gone where prev had a count?
 */
static bool
buckets_went_down(const PromHistogram *prev, const PromHistogram *h,
				  bool positive)
{
	BucketWalk	before;
	BucketWalk	after;
	bool		more;

	walk_start(&before, prev, positive);
	walk_start(&after, h, positive);
	more = walk_next(&after);
	while (walk_next(&before))
	{
		while (more && after.index < before.index)
			more = walk_next(&after);
		if (!more || after.index != before.index)
		{
			if (walk_nonzero(&before))
				return true;
		}
		else if (walk_below(&after, &before))
			return true;
	}
	return false;
}

/*
 * Did a bucket of either side go down from prev to h, the two of one layout
 * (PromHistogramSameLayout) and of one kind?  Then both hold the same
 * buckets in the same places and none is gone: each count is compared with
 * the one in its place, an integer histogram's counts summed from its
 * deltas side by side, each side from zero, as buckets_went_down's walks
 * do.  A pair whose bucket numbers differ (which a valid layout rules out)
 * is walked.
 */
static bool
buckets_went_down_in_layout(const PromHistogram *prev, const PromHistogram *h)
{
	const PromHistogramBucket *before = PromHistogramPositiveBuckets(prev);
	const PromHistogramBucket *after = PromHistogramPositiveBuckets(h);
	uint32		npositive = h->npositive_buckets;
	uint32		n = npositive + h->nnegative_buckets;
	uint64		before_count = 0;
	uint64		after_count = 0;
	uint32		i;

	if (prev->npositive_buckets != npositive ||
		prev->nnegative_buckets != h->nnegative_buckets)
		return buckets_went_down(prev, h, true) ||
			buckets_went_down(prev, h, false);
	if (PromHistogramIsFloat(h))
	{
		for (i = 0; i < n; i++)
			if (after[i].count < before[i].count)
				return true;
		return false;
	}
	for (i = 0; i < n; i++)
	{
		if (i == npositive)
			before_count = after_count = 0;
		before_count += (uint64) before[i].delta;
		after_count += (uint64) after[i].delta;
		if ((int64) after_count < (int64) before_count)
			return true;
	}
	return false;
}

/*
 * The counter-reset bits of a chunk whose first sample is h, after prev
 * (NULL at a series' start): see 3. in the header comment.  Also what
 * decides, within a chunk, that h is a counter reset (not RESET_NO_BITS),
 * where the caller knows the two of one layout (same_layout).
 */
static uint8
counter_reset_bits(const PromHistogram *prev, const PromHistogram *h,
				   bool same_layout)
{
	bool		is_float = PromHistogramIsFloat(h);

	if (h->reset_hint == PROM_RESET_GAUGE)
		return RESET_GAUGE_BITS;
	if (h->reset_hint == PROM_RESET_YES)
		return RESET_YES_BITS;
	if (prev == NULL || is_stale(prev) || is_stale(h) ||
		prev->reset_hint == PROM_RESET_GAUGE ||
		PromHistogramIsFloat(prev) != is_float)
		return h->reset_hint == PROM_RESET_NO ? RESET_NO_BITS :
			RESET_UNKNOWN_BITS;
	if (is_float ? h->count.value < prev->count.value :
		h->count.integer < prev->count.integer)
		return RESET_YES_BITS;
	if (h->schema != prev->schema ||
		h->zero_threshold != prev->zero_threshold)
		return RESET_UNKNOWN_BITS;
	if (!same_layout && h->schema == PROM_SCHEMA_CUSTOM &&
		(h->ncustom_values != prev->ncustom_values ||
		 memcmp(PromHistogramCustomValues(h), PromHistogramCustomValues(prev),
				sizeof(double) * h->ncustom_values) != 0))
		return RESET_YES_BITS;
	if (is_float ? h->zero_count.value < prev->zero_count.value :
		h->zero_count.integer < prev->zero_count.integer)
		return RESET_YES_BITS;
	if (same_layout ? buckets_went_down_in_layout(prev, h) :
		buckets_went_down(prev, h, true) || buckets_went_down(prev, h, false))
		return RESET_YES_BITS;
	return RESET_NO_BITS;
}

/*---- Chunks ----*/

/*
 * Make room for need more bytes after the writer's position, and the
 * writer's slack past them (bitstream.h).
 */
static void
ensure_room(PromHistogramChunker *chunker, XorWriter *w, Size need)
{
	Size		used = w->p - chunker->buf;

	need += BITSTREAM_SLACK;
	if (chunker->capacity - used >= need)
		return;
	chunker->capacity = Max(chunker->capacity * 2, used + need);
	chunker->buf = repalloc_huge(chunker->buf, chunker->capacity);
	w->p = chunker->buf + used;
}

/* The state of a chunk's samples, each one's against the one before. */
typedef struct SampleState
{
	int64		t;
	int64		t_delta;
	uint64		count;
	int64		count_delta;
	uint64		zero_count;
	int64		zero_count_delta;
	uint64		sum;			/* integer histograms' sum, as bits */
	uint8		sum_leading;
	uint8		sum_trailing;
	/* float histograms: each value's bits and window, by place */
	uint64	   *bits;
	uint8	   *leading;
	uint8	   *trailing;
	/* integer histograms: each bucket's delta and its change */
	int64	   *deltas;
	int64	   *delta_changes;
} SampleState;

/* Write a float as its XOR with the one before (XOR chunks' encoding). */
static inline void
put_xor_value(XorWriter *w, double value, uint64 *bits, uint8 *leading,
			  uint8 *trailing)
{
	uint64		new_bits = wire_double_bits(value);

	put_xor(w, new_bits ^ *bits, leading, trailing);
	*bits = new_bits;
}

/*
 * Write sample n of a chunk.  A float histogram's values go by place:
 * count, zero count, sum, then the positive and negative buckets.  The
 * negative buckets follow the positive ones in a value, so that both are
 * one array here.
 */
static void
put_sample(XorWriter *w, SampleState *st, int n, int64 t,
		   const PromHistogram *h)
{
	const PromHistogramBucket *buckets = PromHistogramPositiveBuckets(h);
	uint32		nbuckets = is_stale(h) ? 0 :
		h->npositive_buckets + h->nnegative_buckets;
	uint32		i;

	if (n == 0)
		put_varbit_int(w, t);
	else
	{
		int64		t_delta = (int64) ((uint64) t - (uint64) st->t);

		put_varbit_int(w, (int64) ((uint64) t_delta - (uint64) st->t_delta));
		st->t_delta = t_delta;
	}
	st->t = t;

	if (PromHistogramIsFloat(h))
	{
		double		head[3];

		head[0] = is_stale(h) ? 0 : h->count.value;
		head[1] = is_stale(h) ? 0 : h->zero_count.value;
		head[2] = h->sum;
		for (i = 0; i < 3 + nbuckets; i++)
		{
			double		value = i < 3 ? head[i] : buckets[i - 3].count;

			if (n == 0)
			{
				st->bits[i] = wire_double_bits(value);
				st->leading[i] = XOR_NO_WINDOW;
				st->trailing[i] = 0;
				put_bits64(w, st->bits[i], 64);
			}
			else
				put_xor_value(w, value, &st->bits[i], &st->leading[i],
							  &st->trailing[i]);
		}
		return;
	}

	if (n == 0)
	{
		st->count = is_stale(h) ? 0 : h->count.integer;
		st->zero_count = is_stale(h) ? 0 : h->zero_count.integer;
		put_varbit_uint(w, st->count);
		put_varbit_uint(w, st->zero_count);
		st->sum = wire_double_bits(h->sum);
		st->sum_leading = XOR_NO_WINDOW;
		st->sum_trailing = 0;
		put_bits64(w, st->sum, 64);
		for (i = 0; i < nbuckets; i++)
		{
			st->deltas[i] = buckets[i].delta;
			st->delta_changes[i] = 0;
			put_varbit_int(w, st->deltas[i]);
		}
		return;
	}
	{
		int64		count_delta = (int64) (h->count.integer - st->count);
		int64		zero_delta = (int64) (h->zero_count.integer - st->zero_count);

		put_varbit_int(w, (int64) ((uint64) count_delta - (uint64) st->count_delta));
		put_varbit_int(w, (int64) ((uint64) zero_delta - (uint64) st->zero_count_delta));
		st->count = h->count.integer;
		st->zero_count = h->zero_count.integer;
		st->count_delta = count_delta;
		st->zero_count_delta = zero_delta;
	}
	put_xor_value(w, h->sum, &st->sum, &st->sum_leading, &st->sum_trailing);
	for (i = 0; i < nbuckets; i++)
	{
		int64		delta = buckets[i].delta;
		int64		change = (int64) ((uint64) delta - (uint64) st->deltas[i]);

		put_varbit_int(w, (int64) ((uint64) change - (uint64) st->delta_changes[i]));
		st->deltas[i] = delta;
		st->delta_changes[i] = change;
	}
}

/*
 * May h follow prev in a chunk whose counter-reset bits are reset_bits
 * (see 2. in the header comment)?
 */
static bool
may_follow(const PromHistogram *prev, const PromHistogram *h, uint8 reset_bits)
{
	if (is_stale(prev) || is_stale(h) ||
		PromHistogramIsFloat(prev) != PromHistogramIsFloat(h) ||
		(h->reset_hint == PROM_RESET_GAUGE) != (reset_bits == RESET_GAUGE_BITS) ||
		!PromHistogramSameLayout(prev, h))
		return false;
	return reset_bits == RESET_GAUGE_BITS ||
		counter_reset_bits(prev, h, true) == RESET_NO_BITS;
}

/* Start cutting a series' samples, which hold histograms, into chunks. */
void
PromHistogramChunkerStart(PromHistogramChunker *chunker,
						  const PromSample *samples, int64 nsamples)
{
	chunker->samples = samples;
	chunker->nsamples = nsamples;
	chunker->next = 0;
	chunker->max_samples = PROM_CHUNK_SAMPLES;
	if (chunker->buf == NULL)
	{
		chunker->capacity = 1024;
		chunker->buf = palloc(chunker->capacity);
	}
}

/*
 * Encode the next chunk of the series' histograms into chunker->buf: false
 * when none are left.  Sets its encoding, its data's length and the times
 * of its first and last samples.
 */
bool
PromHistogramChunkerNext(PromHistogramChunker *chunker, int *encoding,
						 Size *len, int64 *min_t, int64 *max_t)
{
	const PromSample *samples = chunker->samples + chunker->next;
	int64		left = chunker->nsamples - chunker->next;
	const PromHistogram *first;
	const PromHistogram *prev;
	SampleState st;
	XorWriter	w;
	uint32		nvalues;
	uint8		reset_bits;
	int			n;

	if (left <= 0)
		return false;
	first = PromSampleHistogram(&samples[0]);
	prev = chunker->next > 0 ? PromSampleHistogram(&samples[-1]) : NULL;
	reset_bits = counter_reset_bits(prev, first, false);

	nvalues = 3 + first->npositive_buckets + first->nnegative_buckets;
	memset(&st, 0, sizeof(st));
	st.bits = palloc(sizeof(uint64) * nvalues);
	st.leading = palloc(nvalues);
	st.trailing = palloc(nvalues);
	st.deltas = palloc(sizeof(int64) * nvalues);
	st.delta_changes = palloc(sizeof(int64) * nvalues);

	w.p = chunker->buf;
	w.acc = 0;
	w.nacc = 0;
	ensure_room(chunker, &w, 3 + layout_bound(first));
	put_bits(&w, 0, 16);		/* the sample count, set below */
	put_bits(&w, reset_bits, 8);
	put_layout(&w, first);
	for (n = 0; n < left && n < chunker->max_samples; n++)
	{
		const PromHistogram *h = PromSampleHistogram(&samples[n]);

		/* histograms lie apart in the set's memory: ask ahead for them */
		if (n + PROM_HISTOGRAMS_AHEAD < left)
			PromPrefetchHistogram(&samples[n + PROM_HISTOGRAMS_AHEAD]);
		if (n > 0 && !may_follow(PromSampleHistogram(&samples[n - 1]), h,
								 reset_bits))
			break;
		ensure_room(chunker, &w, sample_bound(h));
		put_sample(&w, &st, n, samples[n].t, h);
	}
	*len = finish_bits(&w) - chunker->buf;
	chunker->buf[0] = (uint8) (n >> 8);
	chunker->buf[1] = (uint8) n;
	*encoding = PromHistogramIsFloat(first) ?
		PROMETHEUS__CHUNK__ENCODING__FLOAT_HISTOGRAM :
		PROMETHEUS__CHUNK__ENCODING__HISTOGRAM;
	*min_t = samples[0].t;
	*max_t = samples[n - 1].t;
	chunker->next += n;
	pfree(st.bits);
	pfree(st.leading);
	pfree(st.trailing);
	pfree(st.deltas);
	pfree(st.delta_changes);
	return true;
}

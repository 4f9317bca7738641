/*-------------------------------------------------------------------------
 *
 * histogram_wire.c
 *	  A native histogram as a prompb.Histogram message: its size, which a
 *	  series set counts (engine/samples.c), and its bytes, which a SAMPLES
 *	  answer writes (protocol/samples_response.c).
 *
 * Histogram { count_int = 1 | count_float = 2, sum = 3, schema = 4
 * (sint32), zero_threshold = 5, zero_count_int = 6 | zero_count_float = 7,
 * negative_spans = 8, negative_deltas = 9 (packed sint64), negative_counts
 * = 10 (packed double), positive_spans = 11, positive_deltas = 12,
 * positive_counts = 13, reset_hint = 14, timestamp = 15, custom_values = 16
 * (packed double) }, BucketSpan { offset = 1 (sint32), length = 2 }.  The
 * count and zero count, a oneof, are always written, in the member of the
 * histogram's kind (a float histogram whose count is 0 is still one); other
 * fields are left out when zero, doubles only when their bits are all zero,
 * so that -0.0 and every NaN payload keep their bits.  One routine both
 * measures and writes a histogram (HistogramOut), so that the size counted
 * is the size written.  A writer does not measure first: it leaves room
 * for the longest length a field may have (from a bound on its bytes),
 * writes the field's contents after it, then writes the length and moves
 * the contents back to it where the length is shorter (put_len_close).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "histogram/histogram.h"
#include "protocol/protocol.h"

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

/*
 * Where a histogram is written, or only measured: with write, bytes go to p;
 * without, n counts them.  Every routine below takes write as a constant
 * and is inlined into the two callers of out_histogram, so that each is a
 * straight pass of its own, with no test per byte of which one it is.
 */
typedef struct HistogramOut
{
	char	   *p;
	Size		n;
} HistogramOut;

/* Write or count a varint. */
static pg_attribute_always_inline void
out_varint(HistogramOut *out, bool write, uint64 value)
{
	if (write)
		out->p = wire_put_varint(out->p, value);
	else
		out->n += wire_varint_size(value);
}

/* Write or count a field's tag (any field number). */
static pg_attribute_always_inline void
out_tag(HistogramOut *out, bool write, int field, int type)
{
	out_varint(out, write, ((uint64) field << 3) | type);
}

/* Write or count 8 bytes, little-endian. */
static pg_attribute_always_inline void
out_fixed64(HistogramOut *out, bool write, uint64 bits)
{
	if (write)
		out->p = wire_put_fixed64(out->p, bits);
	else
		out->n += 8;
}

/* The zigzag form of a signed integer, as sint32 and sint64 fields take. */
static inline uint64
zigzag(int64 value)
{
	return ((uint64) value << 1) ^ (value < 0 ? ~UINT64CONST(0) : 0);
}

/* A varint field, left out when zero unless always. */
static pg_attribute_always_inline void
out_varint_field(HistogramOut *out, bool write, int field, uint64 value,
				 bool always)
{
	if (value == 0 && !always)
		return;
	out_tag(out, write, field, WIRE_VARINT);
	out_varint(out, write, value);
}

/* A double field, left out when its bits are all zero unless always. */
static pg_attribute_always_inline void
out_double_field(HistogramOut *out, bool write, int field, double value,
				 bool always)
{
	if (wire_double_bits(value) == 0 && !always)
		return;
	out_tag(out, write, field, WIRE_FIXED64);
	out_fixed64(out, write, wire_double_bits(value));
}

/* Repeated BucketSpan fields. */
static pg_attribute_always_inline void
out_spans(HistogramOut *out, bool write, int field,
		  const PromBucketSpan *spans, uint32 n)
{
	uint32		i;

	for (i = 0; i < n; i++)
	{
		uint64		offset = zigzag(spans[i].offset);
		Size		size = (offset != 0 ? 1 + wire_varint_size(offset) : 0) +
			(spans[i].length != 0 ? 1 + wire_varint_size(spans[i].length) : 0);

		out_tag(out, write, field, WIRE_LEN);
		out_varint(out, write, size);
		out_varint_field(out, write, SPAN_OFFSET, offset, false);
		out_varint_field(out, write, SPAN_LENGTH, spans[i].length, false);
	}
}

/*
 * Finish a length-delimited field whose contents were written from
 * len_at + reserve to end, reserve being the bytes of the longest length
 * they may have: write their length at len_at, moving them back to follow
 * it when it is shorter; returns the end.
 */
static inline char *
put_len_close(char *len_at, int reserve, char *end)
{
	char	   *contents = len_at + reserve;
	Size		size = end - contents;
	int			len_size = wire_varint_size(size);

	if (len_size < reserve)
		memmove(len_at + len_size, contents, size);
	(void) wire_put_varint(len_at, size);
	return len_at + len_size + size;
}

/* A packed field of bucket deltas (sint64) or counts (double); none if empty. */
static pg_attribute_always_inline void
out_buckets(HistogramOut *out, bool write, int field,
			const PromHistogramBucket *buckets, uint32 n, bool counts)
{
	Size		size = 0;
	uint32		i;

	if (n == 0)
		return;
	out_tag(out, write, field, WIRE_LEN);
	if (counts)
	{
		out_varint(out, write, (Size) n * 8);
		if (!write)
			out->n += (Size) n * 8;
		else
			for (i = 0; i < n; i++)
				out->p = wire_put_fixed64(out->p, wire_double_bits(buckets[i].count));
	}
	else if (write)
	{
		/* a delta's varint has at most 10 bytes */
		char	   *len_at = out->p;
		int			reserve = wire_varint_size((Size) n * 10);

		out->p += reserve;
		for (i = 0; i < n; i++)
			out->p = wire_put_varint(out->p, zigzag(buckets[i].delta));
		out->p = put_len_close(len_at, reserve, out->p);
	}
	else
	{
		for (i = 0; i < n; i++)
			size += wire_varint_size(zigzag(buckets[i].delta));
		out->n += wire_varint_size(size) + size;
	}
}

/* A Histogram message's fields, in field order. */
static pg_attribute_always_inline void
out_histogram(HistogramOut *out, bool write, const PromHistogram *h, int64 t)
{
	bool		is_float = PromHistogramIsFloat(h);
	const double *custom = PromHistogramCustomValues(h);
	uint32		i;

	if (is_float)
		out_double_field(out, write, H_COUNT_FLOAT, h->count.value, true);
	else
		out_varint_field(out, write, H_COUNT_INT, h->count.integer, true);
	out_double_field(out, write, H_SUM, h->sum, false);
	out_varint_field(out, write, H_SCHEMA, zigzag(h->schema), false);
	out_double_field(out, write, H_ZERO_THRESHOLD, h->zero_threshold, false);
	if (is_float)
		out_double_field(out, write, H_ZERO_COUNT_FLOAT, h->zero_count.value,
						 true);
	else
		out_varint_field(out, write, H_ZERO_COUNT_INT, h->zero_count.integer,
						 true);
	out_spans(out, write, H_NEGATIVE_SPANS, PromHistogramNegativeSpans(h),
			  h->nnegative_spans);
	out_buckets(out, write, is_float ? H_NEGATIVE_COUNTS : H_NEGATIVE_DELTAS,
				PromHistogramNegativeBuckets(h), h->nnegative_buckets, is_float);
	out_spans(out, write, H_POSITIVE_SPANS, PromHistogramPositiveSpans(h),
			  h->npositive_spans);
	out_buckets(out, write, is_float ? H_POSITIVE_COUNTS : H_POSITIVE_DELTAS,
				PromHistogramPositiveBuckets(h), h->npositive_buckets, is_float);
	out_varint_field(out, write, H_RESET_HINT, h->reset_hint, false);
	out_varint_field(out, write, H_TIMESTAMP, (uint64) t, false);
	if (h->ncustom_values > 0)
	{
		out_tag(out, write, H_CUSTOM_VALUES, WIRE_LEN);
		out_varint(out, write, (Size) h->ncustom_values * 8);
		for (i = 0; i < h->ncustom_values; i++)
			out_fixed64(out, write, wire_double_bits(custom[i]));
	}
}

/*
 * Bytes of a histogram of time t as a Histogram message, and, as a
 * length-delimited field of a one-byte tag (wire_len_field_size), what a
 * series of histograms counts for it in its message (engine/samples.c).
 */
Size
PromHistogramMessageSize(const PromHistogram *h, int64 t)
{
	HistogramOut out = {NULL, 0};

	out_histogram(&out, false, h, t);
	return out.n;
}

/*
 * A bound on the bytes of a histogram's Histogram message, of any time:
 * each varint at its longest (10 bytes, 5 for a sint32 and a span's
 * length), each field of its own.
 */
static inline Size
message_bound(const PromHistogram *h)
{
	Size		nspans = (Size) h->npositive_spans + h->nnegative_spans;
	Size		nbuckets = (Size) h->npositive_buckets + h->nnegative_buckets;

	/* count, sum, schema, zero threshold, zero count, reset hint, time */
	return 11 + 9 + 6 + 9 + 11 + 11 + 11 +
	/* each span a field of its offset's and its length's fields */
		nspans * (1 + 10 + 6 + 6) +
	/* the two packed fields of buckets, then the custom values */
		2 * (1 + 10) + 10 * nbuckets +
		1 + 10 + 8 * (Size) h->ncustom_values;
}

/*
 * Bytes that writing a histogram as a length-delimited field (below field
 * 16) may take at most, its bytes past the field's end included: room that
 * PromPutHistogramField needs.
 */
Size
PromHistogramFieldBound(const PromHistogram *h)
{
	Size		bound = message_bound(h);

	return 1 + wire_varint_size(bound) + bound;
}

/*
 * Write a histogram of time t as a length-delimited field numbered field
 * (below 16), where PromHistogramFieldBound bytes are free; returns the
 * end.
 */
char *
PromPutHistogramField(char *p, int field, const PromHistogram *h, int64 t)
{
	HistogramOut out;
	int			reserve = wire_varint_size(message_bound(h));

	*p = (char) WIRE_TAG(field, WIRE_LEN);
	out.p = p + 1 + reserve;
	out.n = 0;
	out_histogram(&out, true, h, t);
	Assert((Size) (out.p - (p + 1 + reserve)) == PromHistogramMessageSize(h, t));
	return put_len_close(p + 1, reserve, out.p);
}

/*-------------------------------------------------------------------------
 *
 * histogram.h
 *	  Native histograms: the prom_histogram type, one flat varlena that is
 *	  at once what a table stores, what the engine carries as a sample's
 *	  value and what the encoders read.
 *
 * 1. A value holds every field of prompb.Histogram but its timestamp (the
 *    row's time column holds that): integer or float kind, counter-reset
 *    hint, schema, zero threshold, count, zero count, sum, the positive and
 *    negative spans and buckets, and the custom bucket bounds of schema -53.
 *    Fields are kept as they came, so a value written and read back is the
 *    same bit for bit, NaN payloads (the stale marker) included.
 * 2. An integer histogram's buckets are deltas (the first an absolute
 *    count, each later one the change from the bucket before it, across
 *    spans and within one sign), its count and zero count unsigned
 *    integers; a float histogram's buckets are absolute counts, its count
 *    and zero count doubles.  Both are 8 bytes, so the layout is one.
 * 3. After the 64-byte header come, 8-aligned: the positive spans, the
 *    negative spans, the positive buckets, the negative buckets, the custom
 *    values.  PromHistogramSize gives the total for given counts.
 * 4. A value is checked once, where it enters (text or binary input, remote
 *    write): spans add up to the bucket count, schema in range, sizes within
 *    promread.max_histogram_buckets.  Code that reads a value trusts it.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PROMREAD_HISTOGRAM_H
#define PROMREAD_HISTOGRAM_H

#include "postgres.h"

#include "compat.h"
#include "fmgr.h"
#include "lib/stringinfo.h"

/* Kinds. */
#define PROM_HISTOGRAM_INTEGER		0
#define PROM_HISTOGRAM_FLOAT		1

/* Counter-reset hints, numbered as prompb.Histogram.ResetHint. */
#define PROM_RESET_UNKNOWN			0
#define PROM_RESET_YES				1
#define PROM_RESET_NO				2
#define PROM_RESET_GAUGE			3

/* Prometheus's staleness marker: a NaN of these bits (a float or a sum). */
#define PROM_STALE_NAN_BITS			UINT64CONST(0x7ff0000000000002)

/* Schemas: exponential from -4 to 8, or custom bucket bounds. */
#define PROM_SCHEMA_MIN				(-4)
#define PROM_SCHEMA_MAX				8
#define PROM_SCHEMA_CUSTOM			(-53)

/* A run of consecutive buckets: its offset from the previous span's end. */
typedef struct PromBucketSpan
{
	int32		offset;
	uint32		length;
} PromBucketSpan;

/* A count of a histogram: unsigned for integer ones, double for float. */
typedef union PromHistogramCount
{
	uint64		integer;
	double		value;
} PromHistogramCount;

/* A bucket: a delta for integer histograms, a count for float ones. */
typedef union PromHistogramBucket
{
	int64		delta;
	double		count;
} PromHistogramBucket;

/* The prom_histogram type's value: see the header comment. */
typedef struct PromHistogram
{
	int32		vl_len_;		/* varlena header: do not touch directly */
	uint8		kind;			/* PROM_HISTOGRAM_INTEGER or _FLOAT */
	uint8		reset_hint;		/* PROM_RESET_* */
	int16		schema;
	uint32		npositive_spans;
	uint32		nnegative_spans;
	uint32		npositive_buckets;
	uint32		nnegative_buckets;
	uint32		ncustom_values;
	uint32		padding;		/* zero */
	PromHistogramCount count;
	PromHistogramCount zero_count;
	double		zero_threshold;
	double		sum;
	/* then the spans, buckets and custom values: see the header comment */
} PromHistogram;

#define PROM_HISTOGRAM_HEADER_SIZE	sizeof(PromHistogram)

StaticAssertDecl(sizeof(PromHistogram) == 64,
				 "PromHistogram's header is not 64 bytes");

/* The bytes of a value with these counts. */
static inline Size
PromHistogramSize(uint32 npositive_spans, uint32 nnegative_spans,
				  uint32 npositive_buckets, uint32 nnegative_buckets,
				  uint32 ncustom_values)
{
	return PROM_HISTOGRAM_HEADER_SIZE +
		sizeof(PromBucketSpan) * ((Size) npositive_spans + nnegative_spans) +
		sizeof(PromHistogramBucket) * ((Size) npositive_buckets + nnegative_buckets) +
		sizeof(double) * (Size) ncustom_values;
}

static inline bool
PromHistogramIsFloat(const PromHistogram *h)
{
	return h->kind == PROM_HISTOGRAM_FLOAT;
}

static inline PromBucketSpan *
PromHistogramPositiveSpans(const PromHistogram *h)
{
	return (PromBucketSpan *) ((char *) unconstify(PromHistogram *, h) +
							   PROM_HISTOGRAM_HEADER_SIZE);
}

static inline PromBucketSpan *
PromHistogramNegativeSpans(const PromHistogram *h)
{
	return PromHistogramPositiveSpans(h) + h->npositive_spans;
}

static inline PromHistogramBucket *
PromHistogramPositiveBuckets(const PromHistogram *h)
{
	return (PromHistogramBucket *) (PromHistogramNegativeSpans(h) +
									h->nnegative_spans);
}

static inline PromHistogramBucket *
PromHistogramNegativeBuckets(const PromHistogram *h)
{
	return PromHistogramPositiveBuckets(h) + h->npositive_buckets;
}

static inline double *
PromHistogramCustomValues(const PromHistogram *h)
{
	return (double *) (PromHistogramNegativeBuckets(h) + h->nnegative_buckets);
}

#define DatumGetPromHistogramP(X)	((PromHistogram *) PG_DETOAST_DATUM(X))
#define PG_GETARG_PROM_HISTOGRAM_P(n) DatumGetPromHistogramP(PG_GETARG_DATUM(n))
#define PG_RETURN_PROM_HISTOGRAM_P(x) PG_RETURN_POINTER(x)

/* in histogram.c */
extern PromHistogram *PromHistogramAllocate(uint32 npositive_spans,
											uint32 nnegative_spans,
											uint32 npositive_buckets,
											uint32 nnegative_buckets,
											uint32 ncustom_values);
extern void PromHistogramCheckSizes(uint32 npositive_spans,
									uint32 nnegative_spans,
									uint32 npositive_buckets,
									uint32 nnegative_buckets,
									uint32 ncustom_values);
extern void PromHistogramCheck(const PromHistogram *h);
extern pg_attribute_noreturn() void PromHistogramRefuse(int sqlerrcode, const char *what,
														const char *fmt,...) pg_attribute_printf(3, 4);

/* A value that breaks one of Prometheus's rules (22023). */
#define PromHistogramInvalid(...) \
	PromHistogramRefuse(ERRCODE_INVALID_PARAMETER_VALUE, "invalid native histogram", __VA_ARGS__)

/* Text that is not a histogram's text form (22P02). */
#define PromHistogramInvalidText(...) \
	PromHistogramRefuse(ERRCODE_INVALID_TEXT_REPRESENTATION, \
						"invalid input syntax for type prom_histogram", __VA_ARGS__)
extern bool PromHistogramSameLayout(const PromHistogram *a,
									const PromHistogram *b);
extern Oid	PromHistogramTypeOid(void);
extern bool PromIsHistogramType(Oid type);

/* in histogram_wire.c: as a prompb.Histogram field */
extern Size PromHistogramMessageSize(const PromHistogram *h, int64 t);
extern Size PromHistogramFieldBound(const PromHistogram *h);
extern char *PromPutHistogramField(char *p, int field, const PromHistogram *h,
								   int64 t);

#endif							/* PROMREAD_HISTOGRAM_H */

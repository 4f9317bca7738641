/*-------------------------------------------------------------------------
 *
 * histogram.c
 *	  The prom_histogram type's checks and helpers: allocation, validation
 *	  as Prometheus validates a native histogram, layout comparison, the
 *	  type's OID, and bitwise equality with hashing.
 *
 * PromHistogramCheck follows Prometheus's Histogram.Validate and
 * FloatHistogram.Validate (model/histogram): a value promread accepts is one
 * Prometheus would accept, no more and no less, except that promread also
 * refuses what Go silently wraps (an integer bucket count past int64, a sum
 * of counts past uint64) and what its own layout cannot hold (an unknown
 * kind or reset hint, non-zero padding, sizes over
 * promread.max_histogram_buckets).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <math.h>

#include "access/hash.h"
#include "access/transam.h"
#include "catalog/pg_type_d.h"
#include "common/int.h"
#include "histogram/histogram.h"
#include "promread.h"
#include "utils/inval.h"
#include "utils/memutils.h"
#include "utils/syscache.h"

PG_FUNCTION_INFO_V1(prom_histogram_eq);
PG_FUNCTION_INFO_V1(prom_histogram_ne);
PG_FUNCTION_INFO_V1(prom_histogram_hash);

/* A zeroed value with room for these counts, its varlena size set. */
PromHistogram *
PromHistogramAllocate(uint32 npositive_spans, uint32 nnegative_spans,
					  uint32 npositive_buckets, uint32 nnegative_buckets,
					  uint32 ncustom_values)
{
	Size		size = PromHistogramSize(npositive_spans, nnegative_spans,
										 npositive_buckets, nnegative_buckets,
										 ncustom_values);
	PromHistogram *h;

	if (!AllocSizeIsValid(size))
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("native histogram of %zu bytes is too large", size)));
	h = palloc0(size);
	SET_VARSIZE(h, size);
	h->npositive_spans = npositive_spans;
	h->nnegative_spans = nnegative_spans;
	h->npositive_buckets = npositive_buckets;
	h->nnegative_buckets = nnegative_buckets;
	h->ncustom_values = ncustom_values;
	return h;
}

/*
 * Refuse a histogram or its text: "<what>: <the formatted reason>", with the
 * given SQLSTATE (histogram.h's PromHistogramRefuse* macros name both).
 */
void
PromHistogramRefuse(int sqlerrcode, const char *what, const char *fmt,...)
{
	char		buf[256];
	va_list		args;

	va_start(args, fmt);
	vsnprintf(buf, sizeof(buf), fmt, args);
	va_end(args);
	ereport(ERROR,
			(errcode(sqlerrcode),
			 errmsg("%s: %s", what, buf)));
}

/*
 * Refuse more buckets, spans or custom values than
 * promread.max_histogram_buckets; called before a value of these counts
 * is allocated, so an announced size never costs memory.
 */
void
PromHistogramCheckSizes(uint32 npositive_spans, uint32 nnegative_spans,
						uint32 npositive_buckets, uint32 nnegative_buckets,
						uint32 ncustom_values)
{
	uint64		limit = (uint64) promread_max_histogram_buckets;
	const char *what = NULL;

	if ((uint64) npositive_buckets + nnegative_buckets > limit)
		what = "buckets";
	else if ((uint64) npositive_spans + nnegative_spans > limit)
		what = "spans";
	else if (ncustom_values > limit)
		what = "custom bucket bounds";
	if (what != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("native histogram has more %s than promread.max_histogram_buckets (%d)",
						what, promread_max_histogram_buckets),
				 errhint("Raise promread.max_histogram_buckets to accept larger histograms.")));
}

/*
 * Prometheus's checkHistogramSpans for an exponential schema: offsets of
 * spans after the first not negative, bucket indexes within int32, lengths
 * adding up to the bucket count.
 */
static void
check_exponential_spans(const PromBucketSpan *spans, uint32 nspans,
						uint32 nbuckets, const char *side)
{
	uint64		length = 0;
	int64		end = 0;

	for (uint32 i = 0; i < nspans; i++)
	{
		if (i > 0 && spans[i].offset < 0)
			PromHistogramInvalid("%s span %u has negative offset %d",
							  side, i + 1, spans[i].offset);
		if (i == 0 && spans[i].offset == PG_INT32_MIN)
			PromHistogramInvalid("%s span 1 starts at bucket index %d, out of range",
							  side, spans[i].offset);
		length += spans[i].length;
		end += (int64) spans[i].offset + spans[i].length;
		if (end - 1 > PG_INT32_MAX)
			PromHistogramInvalid("%s span %u ends at bucket index " INT64_FORMAT ", out of range",
							  side, i + 1, end - 1);
	}
	if (length != nbuckets)
		PromHistogramInvalid("%s spans need " UINT64_FORMAT " buckets, have %u",
						  side, length, nbuckets);
}

/*
 * Prometheus's checkHistogramCustomBounds: bounds not NaN, strictly
 * increasing, the last not +Inf (it is implied); spans' offsets not
 * negative, their lengths adding up to the bucket count, and no span past
 * the last bound's bucket.
 */
static void
check_custom_buckets(const PromHistogram *h)
{
	const double *bounds = PromHistogramCustomValues(h);
	const PromBucketSpan *spans = PromHistogramPositiveSpans(h);
	uint64		length = 0;
	uint64		reach = 0;

	for (uint32 i = 0; i < h->ncustom_values; i++)
	{
		if (isnan(bounds[i]))
			PromHistogramInvalid("custom bucket bound %u is NaN", i + 1);
		if (i > 0 && bounds[i] <= bounds[i - 1])
			PromHistogramInvalid("custom bucket bound %u is not greater than the one before it",
							  i + 1);
	}
	if (h->ncustom_values > 0 && isinf(bounds[h->ncustom_values - 1]) &&
		bounds[h->ncustom_values - 1] > 0)
		PromHistogramInvalid("the last custom bucket bound must not be +Inf, which is implied");
	for (uint32 i = 0; i < h->npositive_spans; i++)
	{
		if (spans[i].offset < 0)
			PromHistogramInvalid("custom bucket span %u has negative offset %d",
							  i + 1, spans[i].offset);
		length += spans[i].length;
		reach += (uint64) spans[i].offset + spans[i].length;
	}
	if (length != h->npositive_buckets)
		PromHistogramInvalid("spans need " UINT64_FORMAT " buckets, have %u",
						  length, h->npositive_buckets);
	if ((uint64) h->ncustom_values + 1 < reach)
		PromHistogramInvalid("%u custom bucket bounds cannot cover spans of total length " UINT64_FORMAT,
						  h->ncustom_values, reach);
}

/*
 * Prometheus's checkHistogramBuckets for integer buckets: the running sum
 * of the deltas (each bucket's count) never negative.  Adds the counts to
 * *total.
 */
static void
check_integer_buckets(const PromHistogramBucket *buckets, uint32 n,
					  const char *side, uint64 *total)
{
	int64		count = 0;

	for (uint32 i = 0; i < n; i++)
	{
		if (pg_add_s64_overflow(count, buckets[i].delta, &count))
			PromHistogramInvalid("%s bucket %u's count is out of range", side, i + 1);
		if (count < 0)
			PromHistogramInvalid("%s bucket %u has negative count " INT64_FORMAT,
							  side, i + 1, count);
		if (pg_add_u64_overflow(*total, (uint64) count, total))
			PromHistogramInvalid("the bucket counts add up to more than 2^64");
	}
}

/* Float buckets: no count negative (NaN is allowed, as in Prometheus). */
static void
check_float_buckets(const PromHistogramBucket *buckets, uint32 n,
					const char *side)
{
	for (uint32 i = 0; i < n; i++)
		if (buckets[i].count < 0)
			PromHistogramInvalid("%s bucket %u has negative count %g",
							  side, i + 1, buckets[i].count);
}

/*
 * Check a value as Prometheus checks a histogram it ingests (see the
 * header comment), and its layout; ereport ERROR if it is invalid.
 */
void
PromHistogramCheck(const PromHistogram *h)
{
	bool		is_float = PromHistogramIsFloat(h);
	uint64		total = 0;

	if (h->kind != PROM_HISTOGRAM_INTEGER && h->kind != PROM_HISTOGRAM_FLOAT)
		PromHistogramInvalid("kind %u is neither integer (0) nor float (1)", h->kind);
	if (h->reset_hint > PROM_RESET_GAUGE)
		PromHistogramInvalid("counter reset hint %u is not one of 0 to 3", h->reset_hint);
	if (h->padding != 0)
		PromHistogramInvalid("padding is not zero");
	PromHistogramCheckSizes(h->npositive_spans, h->nnegative_spans,
							h->npositive_buckets, h->nnegative_buckets,
							h->ncustom_values);
	if (VARSIZE(h) != PromHistogramSize(h->npositive_spans, h->nnegative_spans,
										h->npositive_buckets, h->nnegative_buckets,
										h->ncustom_values))
		PromHistogramInvalid("its size does not match its counts");

	if (h->schema == PROM_SCHEMA_CUSTOM)
	{
		check_custom_buckets(h);
		if (is_float ? h->zero_count.value != 0 : h->zero_count.integer != 0)
			PromHistogramInvalid("a histogram with custom buckets must have zero count 0");
		if (h->zero_threshold != 0)
			PromHistogramInvalid("a histogram with custom buckets must have zero threshold 0");
		if (h->nnegative_spans > 0)
			PromHistogramInvalid("a histogram with custom buckets cannot have negative spans");
		if (h->nnegative_buckets > 0)
			PromHistogramInvalid("a histogram with custom buckets cannot have negative buckets");
	}
	else if (h->schema >= PROM_SCHEMA_MIN && h->schema <= PROM_SCHEMA_MAX)
	{
		check_exponential_spans(PromHistogramPositiveSpans(h), h->npositive_spans,
								h->npositive_buckets, "positive");
		check_exponential_spans(PromHistogramNegativeSpans(h), h->nnegative_spans,
								h->nnegative_buckets, "negative");
		if (is_float && h->zero_count.value < 0)
			PromHistogramInvalid("zero bucket has negative count %g", h->zero_count.value);
		if (h->ncustom_values > 0)
			PromHistogramInvalid("a histogram with exponential schema %d cannot have custom bucket bounds",
							  h->schema);
	}
	else
		PromHistogramInvalid("schema %d is neither from %d to %d nor %d",
						  h->schema, PROM_SCHEMA_MIN, PROM_SCHEMA_MAX,
						  PROM_SCHEMA_CUSTOM);

	if (is_float)
	{
		if (h->count.value < 0)
			PromHistogramInvalid("count %g is negative", h->count.value);
		check_float_buckets(PromHistogramNegativeBuckets(h), h->nnegative_buckets,
							"negative");
		check_float_buckets(PromHistogramPositiveBuckets(h), h->npositive_buckets,
							"positive");
		return;
	}

	/* integer histograms: the buckets and zero bucket add up to the count */
	check_integer_buckets(PromHistogramNegativeBuckets(h), h->nnegative_buckets,
						  "negative", &total);
	check_integer_buckets(PromHistogramPositiveBuckets(h), h->npositive_buckets,
						  "positive", &total);
	if (pg_add_u64_overflow(total, h->zero_count.integer, &total))
		PromHistogramInvalid("the bucket counts add up to more than 2^64");
	if (isnan(h->sum) ? total > h->count.integer : total != h->count.integer)
		PromHistogramInvalid(UINT64_FORMAT " observations found in buckets, but count is " UINT64_FORMAT,
						  total, h->count.integer);
}

/*
 * Equal schemas, zero thresholds (bit for bit), spans and custom bounds.
 * The chunk encoder asks this of every sample against the one before: the
 * few spans of a histogram are compared in a loop, not by a call of memcmp.
 */
bool
PromHistogramSameLayout(const PromHistogram *a, const PromHistogram *b)
{
	const PromBucketSpan *a_spans = PromHistogramPositiveSpans(a);
	const PromBucketSpan *b_spans = PromHistogramPositiveSpans(b);
	uint32		nspans = a->npositive_spans + a->nnegative_spans;
	uint32		i;

	if (a->schema != b->schema ||
		memcmp(&a->zero_threshold, &b->zero_threshold, sizeof(double)) != 0 ||
		a->npositive_spans != b->npositive_spans ||
		a->nnegative_spans != b->nnegative_spans ||
		a->ncustom_values != b->ncustom_values)
		return false;
	/* the spans of both signs are contiguous, and so are custom values */
	for (i = 0; i < nspans; i++)
		if (a_spans[i].offset != b_spans[i].offset ||
			a_spans[i].length != b_spans[i].length)
			return false;
	return a->ncustom_values == 0 ||
		memcmp(PromHistogramCustomValues(a), PromHistogramCustomValues(b),
			   sizeof(double) * (Size) a->ncustom_values) == 0;
}

/* The cached OID of prom_histogram; any change to pg_type forgets it. */
static Oid	histogram_type_oid = InvalidOid;

/* Syscache callback: pg_type changed, the type may have been dropped. */
static void
forget_type_oid(Datum arg, int cacheid, uint32 hashvalue)
{
	histogram_type_oid = InvalidOid;
}

/* The OID of the prom_histogram type in the extension's schema. */
Oid
PromHistogramTypeOid(void)
{
	static bool callback_registered = false;

	if (!callback_registered)
	{
		CacheRegisterSyscacheCallback(TYPEOID, forget_type_oid, (Datum) 0);
		callback_registered = true;
	}
	if (!OidIsValid(histogram_type_oid))
	{
		Oid			oid = GetSysCacheOid2(TYPENAMENSP, Anum_pg_type_oid,
										  CStringGetDatum("prom_histogram"),
										  ObjectIdGetDatum(PromExtensionNamespace()));

		if (!OidIsValid(oid))
			elog(ERROR, "promread type prom_histogram is missing");
		histogram_type_oid = oid;
	}
	return histogram_type_oid;
}

/*
 * Is a type prom_histogram?  No error when the extension's objects have no
 * such type yet (a library newer than they are, before ALTER EXTENSION
 * UPDATE): no column is of it then.  A built-in type never is.
 */
bool
PromIsHistogramType(Oid type)
{
	if (type < FirstNormalObjectId)
		return false;
	if (!OidIsValid(histogram_type_oid) &&
		!OidIsValid(PromExtensionTypeOid("prom_histogram")))
		return false;
	return type == PromHistogramTypeOid();
}

/* Whether two values are the same bit for bit. */
static bool
same_bits(const PromHistogram *a, const PromHistogram *b)
{
	return VARSIZE(a) == VARSIZE(b) &&
		memcmp(VARDATA(a), VARDATA(b), VARSIZE(a) - VARHDRSZ) == 0;
}

/* prom_histogram_eq(a, b): the same value bit for bit. */
Datum
prom_histogram_eq(PG_FUNCTION_ARGS)
{
	PG_RETURN_BOOL(same_bits(PG_GETARG_PROM_HISTOGRAM_P(0),
							 PG_GETARG_PROM_HISTOGRAM_P(1)));
}

/* prom_histogram_ne(a, b): not the same value bit for bit. */
Datum
prom_histogram_ne(PG_FUNCTION_ARGS)
{
	PG_RETURN_BOOL(!same_bits(PG_GETARG_PROM_HISTOGRAM_P(0),
							  PG_GETARG_PROM_HISTOGRAM_P(1)));
}

/* prom_histogram_hash(h): a hash of the value's bytes, for hash joins. */
Datum
prom_histogram_hash(PG_FUNCTION_ARGS)
{
	PromHistogram *h = PG_GETARG_PROM_HISTOGRAM_P(0);

	return hash_any((unsigned char *) VARDATA(h), VARSIZE(h) - VARHDRSZ);
}

/*-------------------------------------------------------------------------
 *
 * write_request_json.c
 *	  prom_write_request: a remote-write request built from jsonb, as
 *	  Prometheus would send it, for tests and for people writing by hand.
 *
 * Times are numbers of ms since the Unix epoch; sample values are numbers
 * or the strings "NaN", "+Inf", "-Inf" and "StaleNaN" (the stale marker);
 * histograms are objects with prompb.Histogram's field names, exemplars
 * objects of labels, value and timestamp.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <math.h>

#include <snappy-c.h>

#include "protocol/protocol.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "promread.h"
#include "common/shortest_dec.h"
#include "histogram/histogram.h"
#include "utils/lsyscache.h"
#include "utils/builtins.h"
#include "utils/float.h"
#include "utils/jsonb.h"
#include "utils/memutils.h"
#include "utils/numeric.h"

PG_FUNCTION_INFO_V1(prom_write_request);

/* Raise 22023 for malformed input of prom_write_request. */
static pg_attribute_noreturn() void
invalid_json(const char *message)
{
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("invalid series for prom_write_request: %s", message),
			 errhint("Pass [{\"labels\": {\"__name__\": \"up\", ...}, \"samples\": [[ms, value], ...], \"histograms\": [{...}], \"exemplars\": [{...}]}, ...].")));
}

/* A JSON sample value: a number, or "NaN", "+Inf", "-Inf", "StaleNaN". */
static double
json_sample_value(const JsonbValue *v)
{
	if (v->type == jbvNumeric)
		return DatumGetFloat8(DirectFunctionCall1(numeric_float8,
												  NumericGetDatum(v->val.numeric)));
	if (v->type == jbvString)
	{
		const char *s = v->val.string.val;
		int			len = v->val.string.len;

		if (len == 3 && memcmp(s, "NaN", 3) == 0)
			return get_float8_nan();
		if (len == 4 && memcmp(s, "+Inf", 4) == 0)
			return get_float8_infinity();
		if (len == 4 && memcmp(s, "-Inf", 4) == 0)
			return -get_float8_infinity();
		if (len == 8 && memcmp(s, "StaleNaN", 8) == 0)
		{
			uint64		bits = PROM_STALE_NAN_BITS;
			double		value;

			memcpy(&value, &bits, sizeof(value));
			return value;
		}
	}
	invalid_json("a sample value is a number, \"NaN\", \"+Inf\", \"-Inf\" or \"StaleNaN\"");
}

/*
 * The labels of a JSON object {"name": "value", ...} as Label messages;
 * *n set to their number.
 */
static Prometheus__Label **
json_labels(JsonbContainer *object, size_t *n)
{
	Prometheus__Label **labels = palloc(sizeof(Prometheus__Label *) *
										Max(JsonContainerSize(object), 1));
	JsonbIterator *it = JsonbIteratorInit(object);
	JsonbValue	v;
	JsonbIteratorToken token;

	*n = 0;
	while ((token = JsonbIteratorNext(&it, &v, true)) != WJB_DONE)
	{
		Prometheus__Label *label;

		if (token != WJB_KEY)
			continue;
		label = palloc(sizeof(Prometheus__Label));
		prometheus__label__init(label);
		label->name.data = (uint8_t *) v.val.string.val;
		label->name.len = v.val.string.len;
		if (JsonbIteratorNext(&it, &v, true) != WJB_VALUE || v.type != jbvString)
			invalid_json("label values are strings");
		label->value.data = (uint8_t *) v.val.string.val;
		label->value.len = v.val.string.len;
		labels[(*n)++] = label;
	}
	return labels;
}

/* The array under a key of an object, or NULL when the key is absent. */
static JsonbContainer *
json_array(JsonbContainer *object, const char *key, const char *message)
{
	JsonbValue	v;

	if (getKeyJsonValueFromContainer(object, key, strlen(key), &v) == NULL)
		return NULL;
	if (v.type != jbvBinary || !JsonContainerIsArray(v.val.binary.data))
		invalid_json(message);
	return v.val.binary.data;
}

/* The integer under a key of an object, or false when the key is absent. */
static bool
json_int64(JsonbContainer *object, const char *key, int64 *out)
{
	JsonbValue	v;

	if (getKeyJsonValueFromContainer(object, key, strlen(key), &v) == NULL)
		return false;
	if (v.type != jbvNumeric)
		invalid_json(psprintf("\"%s\" is an integer", key));
	*out = DatumGetInt64(DirectFunctionCall1(numeric_int8, NumericGetDatum(v.val.numeric)));
	return true;
}

/* The number under a key of an object (as json_sample_value), or false. */
static bool
json_double(JsonbContainer *object, const char *key, double *out)
{
	JsonbValue	v;

	if (getKeyJsonValueFromContainer(object, key, strlen(key), &v) == NULL)
		return false;
	*out = json_sample_value(&v);
	return true;
}

/* The integers of an optional array under a key, *n set to their number. */
static int64_t *
json_int64s(JsonbContainer *object, const char *key, size_t *n)
{
	JsonbContainer *array = json_array(object, key, "bucket deltas are an array of integers");
	int64_t    *out;
	size_t		i;

	*n = array != NULL ? JsonContainerSize(array) : 0;
	out = palloc(sizeof(int64_t) * Max(*n, 1));
	for (i = 0; i < *n; i++)
	{
		JsonbValue *v = getIthJsonbValueFromContainer(array, i);

		if (v->type != jbvNumeric)
			invalid_json("bucket deltas are an array of integers");
		out[i] = DatumGetInt64(DirectFunctionCall1(numeric_int8, NumericGetDatum(v->val.numeric)));
	}
	return out;
}

/* The numbers of an optional array under a key, *n set to their number. */
static double *
json_doubles(JsonbContainer *object, const char *key, size_t *n)
{
	JsonbContainer *array = json_array(object, key, "bucket counts and bounds are arrays of numbers");
	double	   *out;
	size_t		i;

	*n = array != NULL ? JsonContainerSize(array) : 0;
	out = palloc(sizeof(double) * Max(*n, 1));
	for (i = 0; i < *n; i++)
		out[i] = json_sample_value(getIthJsonbValueFromContainer(array, i));
	return out;
}

/* The spans of an optional array [[offset, length], ...] under a key. */
static Prometheus__BucketSpan **
json_spans(JsonbContainer *object, const char *key, size_t *n)
{
	JsonbContainer *array = json_array(object, key, "spans are an array of [offset, length]");
	Prometheus__BucketSpan **out;
	size_t		i;

	*n = array != NULL ? JsonContainerSize(array) : 0;
	out = palloc(sizeof(Prometheus__BucketSpan *) * Max(*n, 1));
	for (i = 0; i < *n; i++)
	{
		JsonbValue *pair = getIthJsonbValueFromContainer(array, i);
		JsonbValue *offset;
		JsonbValue *length;

		if (pair->type != jbvBinary || !JsonContainerIsArray(pair->val.binary.data) ||
			JsonContainerSize(pair->val.binary.data) != 2 ||
			(offset = getIthJsonbValueFromContainer(pair->val.binary.data, 0))->type != jbvNumeric ||
			(length = getIthJsonbValueFromContainer(pair->val.binary.data, 1))->type != jbvNumeric)
			invalid_json("spans are an array of [offset, length]");
		out[i] = palloc(sizeof(Prometheus__BucketSpan));
		prometheus__bucket_span__init(out[i]);
		out[i]->offset = DatumGetInt32(DirectFunctionCall1(numeric_int4,
														   NumericGetDatum(offset->val.numeric)));
		out[i]->length = (uint32) DatumGetInt64(DirectFunctionCall1(numeric_int8,
																	NumericGetDatum(length->val.numeric)));
	}
	return out;
}

/*
 * A Histogram message from a JSON object of its fields, named as in
 * prompb.Histogram: count_int or count_float, sum, schema, zero_threshold,
 * zero_count_int or zero_count_float, positive_spans and negative_spans
 * ([[offset, length], ...]), positive_deltas, negative_deltas,
 * positive_counts, negative_counts, reset_hint, timestamp, custom_values,
 * start_timestamp.  Absent fields are unset, so that any message can be
 * built, valid or not.
 */
static Prometheus__Histogram *
json_histogram(JsonbContainer *object)
{
	Prometheus__Histogram *h = palloc(sizeof(Prometheus__Histogram));
	int64		i;

	prometheus__histogram__init(h);
	if (json_int64(object, "count_int", &i))
	{
		h->count_case = PROMETHEUS__HISTOGRAM__COUNT_COUNT_INT;
		h->count_int = (uint64) i;
	}
	if (json_double(object, "count_float", &h->count_float))
		h->count_case = PROMETHEUS__HISTOGRAM__COUNT_COUNT_FLOAT;
	if (json_int64(object, "zero_count_int", &i))
	{
		h->zero_count_case = PROMETHEUS__HISTOGRAM__ZERO_COUNT_ZERO_COUNT_INT;
		h->zero_count_int = (uint64) i;
	}
	if (json_double(object, "zero_count_float", &h->zero_count_float))
		h->zero_count_case = PROMETHEUS__HISTOGRAM__ZERO_COUNT_ZERO_COUNT_FLOAT;
	(void) json_double(object, "sum", &h->sum);
	(void) json_double(object, "zero_threshold", &h->zero_threshold);
	if (json_int64(object, "schema", &i))
		h->schema = (int32) i;
	if (json_int64(object, "reset_hint", &i))
		h->reset_hint = (Prometheus__Histogram__ResetHint) i;
	(void) json_int64(object, "timestamp", &h->timestamp);
	(void) json_int64(object, "start_timestamp", &h->start_timestamp);
	h->positive_spans = json_spans(object, "positive_spans", &h->n_positive_spans);
	h->negative_spans = json_spans(object, "negative_spans", &h->n_negative_spans);
	h->positive_deltas = json_int64s(object, "positive_deltas", &h->n_positive_deltas);
	h->negative_deltas = json_int64s(object, "negative_deltas", &h->n_negative_deltas);
	h->positive_counts = json_doubles(object, "positive_counts", &h->n_positive_counts);
	h->negative_counts = json_doubles(object, "negative_counts", &h->n_negative_counts);
	h->custom_values = json_doubles(object, "custom_values", &h->n_custom_values);
	return h;
}

/*
 * The histograms and exemplars of a series' JSON object, if any:
 * "histograms": [{...}, ...] (json_histogram) and "exemplars": [{"labels":
 * {...}, "value": v, "timestamp": ms}, ...].
 */
static void
json_histograms_exemplars(JsonbContainer *object, Prometheus__TimeSeries *ts)
{
	JsonbContainer *histograms = json_array(object, "histograms",
											"\"histograms\" is an array of objects");
	JsonbContainer *exemplars = json_array(object, "exemplars",
										   "\"exemplars\" is an array of objects");
	int			n;
	int			i;

	n = histograms != NULL ? JsonContainerSize(histograms) : 0;
	ts->histograms = palloc(sizeof(Prometheus__Histogram *) * Max(n, 1));
	for (i = 0; i < n; i++)
	{
		JsonbValue *h = getIthJsonbValueFromContainer(histograms, i);

		if (h->type != jbvBinary || !JsonContainerIsObject(h->val.binary.data))
			invalid_json("\"histograms\" is an array of objects");
		ts->histograms[ts->n_histograms++] = json_histogram(h->val.binary.data);
	}

	n = exemplars != NULL ? JsonContainerSize(exemplars) : 0;
	ts->exemplars = palloc(sizeof(Prometheus__Exemplar *) * Max(n, 1));
	for (i = 0; i < n; i++)
	{
		JsonbValue *e = getIthJsonbValueFromContainer(exemplars, i);
		Prometheus__Exemplar *exemplar;
		JsonbValue	labels;

		if (e->type != jbvBinary || !JsonContainerIsObject(e->val.binary.data))
			invalid_json("\"exemplars\" is an array of objects");
		exemplar = palloc(sizeof(Prometheus__Exemplar));
		prometheus__exemplar__init(exemplar);
		if (getKeyJsonValueFromContainer(e->val.binary.data, "labels", 6, &labels) != NULL)
		{
			if (labels.type != jbvBinary || !JsonContainerIsObject(labels.val.binary.data))
				invalid_json("an exemplar's \"labels\" is an object");
			exemplar->labels = json_labels(labels.val.binary.data, &exemplar->n_labels);
		}
		(void) json_double(e->val.binary.data, "value", &exemplar->value);
		(void) json_int64(e->val.binary.data, "timestamp", &exemplar->timestamp);
		ts->exemplars[ts->n_exemplars++] = exemplar;
	}
}

/* Fill a TimeSeries from one element of prom_write_request's array. */
static void
json_series(JsonbContainer *object, Prometheus__TimeSeries *ts)
{
	JsonbValue	labels;
	JsonbContainer *samples;
	int			n;
	int			i;

	if (getKeyJsonValueFromContainer(object, "labels", 6, &labels) == NULL ||
		labels.type != jbvBinary || !JsonContainerIsObject(labels.val.binary.data))
		invalid_json("each series has an object \"labels\"");
	samples = json_array(object, "samples", "\"samples\" is an array");
	ts->labels = json_labels(labels.val.binary.data, &ts->n_labels);
	json_histograms_exemplars(object, ts);
	if (samples == NULL)
		return;

	n = JsonContainerSize(samples);
	ts->samples = palloc_extended(sizeof(Prometheus__Sample *) * Max(n, 1), MCXT_ALLOC_HUGE);
	for (i = 0; i < n; i++)
	{
		JsonbValue *pair = getIthJsonbValueFromContainer(samples, i);
		JsonbValue *t;
		Prometheus__Sample *sample;

		if (pair == NULL || pair->type != jbvBinary ||
			!JsonContainerIsArray(pair->val.binary.data) ||
			JsonContainerSize(pair->val.binary.data) != 2)
			invalid_json("a sample is an array [ms, value]");
		t = getIthJsonbValueFromContainer(pair->val.binary.data, 0);
		if (t->type != jbvNumeric)
			invalid_json("a sample's time is a number of milliseconds");
		sample = palloc(sizeof(Prometheus__Sample));
		prometheus__sample__init(sample);
		sample->timestamp = DatumGetInt64(DirectFunctionCall1(numeric_int8,
															  NumericGetDatum(t->val.numeric)));
		sample->value = json_sample_value(getIthJsonbValueFromContainer(pair->val.binary.data, 1));
		ts->samples[ts->n_samples++] = sample;
	}
}

/*
 * prom_write_request(series jsonb) returns bytea: a snappy-compressed
 * WriteRequest of the series given as [{"labels": {...}, "samples": [[ms,
 * value], ...], "histograms": [...], "exemplars": [...]}, ...] (samples,
 * histograms and exemplars each optional), as Prometheus would send it.  Nothing is checked
 * here that prom_remote_write checks, so that bad requests can be built.
 */
Datum
prom_write_request(PG_FUNCTION_ARGS)
{
	Jsonb	   *series = PG_GETARG_JSONB_P(0);
	Prometheus__WriteRequest msg = PROMETHEUS__WRITE_REQUEST__INIT;
	uint8_t    *packed;
	size_t		packed_len;
	int			n;
	int			i;

	if (!JB_ROOT_IS_ARRAY(series) || JB_ROOT_IS_SCALAR(series))
		invalid_json("the series are a JSON array");
	n = JsonContainerSize(&series->root);
	msg.timeseries = palloc(sizeof(Prometheus__TimeSeries *) * Max(n, 1));
	for (i = 0; i < n; i++)
	{
		JsonbValue *element = getIthJsonbValueFromContainer(&series->root, i);
		Prometheus__TimeSeries *ts = palloc(sizeof(Prometheus__TimeSeries));

		if (element->type != jbvBinary || !JsonContainerIsObject(element->val.binary.data))
			invalid_json("each series is a JSON object");
		prometheus__time_series__init(ts);
		json_series(element->val.binary.data, ts);
		msg.timeseries[msg.n_timeseries++] = ts;
	}

	packed_len = prometheus__write_request__get_packed_size(&msg);
	packed = palloc_extended(Max(packed_len, 1), MCXT_ALLOC_HUGE);
	prometheus__write_request__pack(&msg, packed);
	PG_RETURN_BYTEA_P(PromSnappyCompress((const char *) packed, packed_len,
										 "remote write request"));
}

/*-------------------------------------------------------------------------
 *
 * json.c
 *	  prom_read_request_json and prom_read_response_json: remote-read
 *	  messages decoded for people, as jsonb; prom_write_request: a
 *	  remote-write request built from jsonb, as Prometheus would send it.
 *
 * Times are numbers of ms since the Unix epoch; sample values are numbers
 * with the shortest decimal that reads back as the same double, or the
 * strings "NaN", "+Inf" and "-Inf".
 *
 * A response is either a SAMPLES response (a snappy block of a
 * ReadResponse) or a STREAMED_XOR_CHUNKS stream of frames (see chunk_encode.c),
 * and both give the same JSON.  The two are told apart by the first frame:
 * a stream is empty or starts with a whole frame whose CRC-32C matches,
 * which a snappy block does only by a 1 in 2^32 accident; failing that,
 * a valid snappy block is a SAMPLES response, and anything else is an
 * error that says why it is neither.  Frames of the same query and the
 * same labels in a row are one series (a long series spans frames), and
 * results are grouped by query index, one per index from 0 to the highest
 * seen (so queries after the last one with a series have no result: the
 * stream does not say how many queries there were).  Every length, CRC and
 * chunk is checked; nothing is read past the end of the input.
 *
 * A series that carries histograms (TimeSeries.histograms of a SAMPLES
 * response, HISTOGRAM and FLOAT_HISTOGRAM chunks of a stream) has, after
 * its "samples", "histograms": [[t, {...}], ...], each histogram as the
 * prom_histogram type's text form, a JSON object; a series without any has
 * no such key.  A histogram decoded from a chunk has what the chunk
 * carries: the chunk's counter-reset hint on its first sample, and a stale
 * marker's sum alone.
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

PG_FUNCTION_INFO_V1(prom_read_request_json);
PG_FUNCTION_INFO_V1(prom_read_response_json);
PG_FUNCTION_INFO_V1(prom_write_request);

/* The stale marker: the NaN Prometheus writes when a series ends. */
#define STALE_NAN_BITS	UINT64CONST(0x7ff0000000000002)

/* Push a string; it must be valid UTF-8 without NULs to fit in jsonb. */
static void
push_string(JsonbParseState **state, JsonbIteratorToken token,
			const char *s, size_t len)
{
	JsonbValue	v;

	if (pg_encoding_verifymbstr(PG_UTF8, s, len) != (int) len)
		ereport(ERROR,
				(errcode(ERRCODE_CHARACTER_NOT_IN_REPERTOIRE),
				 errmsg("remote read message holds a string that is not valid UTF-8 or contains NUL")));
	v.type = jbvString;
	v.val.string.val = (char *) s;
	v.val.string.len = len;
	pushJsonbValue(state, token, &v);
}

/* Push an object key. */
static void
push_key(JsonbParseState **state, const char *key)
{
	push_string(state, WJB_KEY, key, strlen(key));
}

/* Push a number given as decimal text. */
static void
push_number(JsonbParseState **state, JsonbIteratorToken token,
			const char *digits)
{
	JsonbValue	v;

	v.type = jbvNumeric;
	v.val.numeric = DatumGetNumeric(DirectFunctionCall3(numeric_in,
														CStringGetDatum(digits),
														ObjectIdGetDatum(InvalidOid),
														Int32GetDatum(-1)));
	pushJsonbValue(state, token, &v);
}

/* Push an integer. */
static void
push_int64(JsonbParseState **state, JsonbIteratorToken token, int64 value)
{
	char		buf[32];

	snprintf(buf, sizeof(buf), INT64_FORMAT, value);
	push_number(state, token, buf);
}

/* Push a sample value: a number, or "NaN", "+Inf", "-Inf". */
static void
push_double(JsonbParseState **state, JsonbIteratorToken token, double value)
{
	if (isnan(value))
		push_string(state, token, "NaN", 3);
	else if (isinf(value))
		push_string(state, token, value > 0 ? "+Inf" : "-Inf", 4);
	else
	{
		char		buf[32];

		/* the shortest decimal that reads back as the same double */
		double_to_shortest_decimal_buf(value, buf);
		push_number(state, token, buf);
	}
}

/* Push a named int64 field. */
static void
push_int64_field(JsonbParseState **state, const char *key, int64 value)
{
	push_key(state, key);
	push_int64(state, WJB_VALUE, value);
}

/* Push labels as an object of names to values. */
static void
push_labels(JsonbParseState **state, Prometheus__Label **labels, size_t n)
{
	size_t		i;

	push_key(state, "labels");
	pushJsonbValue(state, WJB_BEGIN_OBJECT, NULL);
	for (i = 0; i < n; i++)
	{
		push_string(state, WJB_KEY, wire_bytes(labels[i]->name),
					labels[i]->name.len);
		push_string(state, WJB_VALUE, wire_bytes(labels[i]->value),
					labels[i]->value.len);
	}
	pushJsonbValue(state, WJB_END_OBJECT, NULL);
}

/* Push one sample as [time, value]. */
static void
push_sample(JsonbParseState **state, int64 t, double v)
{
	pushJsonbValue(state, WJB_BEGIN_ARRAY, NULL);
	push_int64(state, WJB_ELEM, t);
	push_double(state, WJB_ELEM, v);
	pushJsonbValue(state, WJB_END_ARRAY, NULL);
}

/*
 * Push a series' histograms, when it has any, as "histograms": [[t, {...}],
 * ...], each as the type's text form (a JSON object); samples' values point
 * to the histograms.
 */
static void
push_histograms(JsonbParseState **state, const PromSample *samples, int64 n)
{
	Oid			output;
	bool		varlena;
	int64		i;

	if (n == 0)
		return;
	getTypeOutputInfo(PromHistogramTypeOid(), &output, &varlena);
	push_key(state, "histograms");
	pushJsonbValue(state, WJB_BEGIN_ARRAY, NULL);
	for (i = 0; i < n; i++)
	{
		const PromHistogram *h = PromSampleHistogram(&samples[i]);
		char	   *text = OidOutputFunctionCall(output, PointerGetDatum(h));
		Jsonb	   *object = DatumGetJsonbP(DirectFunctionCall1(jsonb_in,
																CStringGetDatum(text)));
		JsonbValue	v;

		v.type = jbvBinary;
		v.val.binary.data = &object->root;
		v.val.binary.len = VARSIZE(object) - VARHDRSZ;
		pushJsonbValue(state, WJB_BEGIN_ARRAY, NULL);
		push_int64(state, WJB_ELEM, samples[i].t);
		pushJsonbValue(state, WJB_ELEM, &v);
		pushJsonbValue(state, WJB_END_ARRAY, NULL);
		pfree(text);
	}
	pushJsonbValue(state, WJB_END_ARRAY, NULL);
}

/* Open a QueryResult: {"timeseries": [ */
static void
push_result_start(JsonbParseState **state)
{
	pushJsonbValue(state, WJB_BEGIN_OBJECT, NULL);
	push_key(state, "timeseries");
	pushJsonbValue(state, WJB_BEGIN_ARRAY, NULL);
}

/* Open a series: {"labels": {...}, "samples": [ */
static void
push_series_start(JsonbParseState **state, Prometheus__Label **labels,
				  size_t nlabels)
{
	CHECK_FOR_INTERRUPTS();
	pushJsonbValue(state, WJB_BEGIN_OBJECT, NULL);
	push_labels(state, labels, nlabels);
	push_key(state, "samples");
	pushJsonbValue(state, WJB_BEGIN_ARRAY, NULL);
}

/* Close what push_result_start or push_series_start opened. */
static void
push_array_in_object_end(JsonbParseState **state)
{
	pushJsonbValue(state, WJB_END_ARRAY, NULL);
	pushJsonbValue(state, WJB_END_OBJECT, NULL);
}

/* The matcher type's name, or its number when unrecognized. */
static void
push_matcher_type(JsonbParseState **state, int type)
{
	static const char *const names[] = {"EQ", "NEQ", "RE", "NRE"};

	push_key(state, "type");
	if (type >= 0 && type < (int) lengthof(names))
		push_string(state, WJB_VALUE, names[type], strlen(names[type]));
	else
		push_int64(state, WJB_VALUE, type);
}

/* Push a query's hints, when it has any. */
static void
push_hints(JsonbParseState **state, const Prometheus__ReadHints *hints)
{
	JsonbValue	by;
	size_t		i;

	if (hints == NULL)
		return;
	push_key(state, "hints");
	pushJsonbValue(state, WJB_BEGIN_OBJECT, NULL);
	push_int64_field(state, "step_ms", hints->step_ms);
	push_key(state, "func");
	push_string(state, WJB_VALUE, hints->func, strlen(hints->func));
	push_int64_field(state, "start_ms", hints->start_ms);
	push_int64_field(state, "end_ms", hints->end_ms);
	push_key(state, "grouping");
	pushJsonbValue(state, WJB_BEGIN_ARRAY, NULL);
	for (i = 0; i < hints->n_grouping; i++)
		push_string(state, WJB_ELEM, hints->grouping[i],
					strlen(hints->grouping[i]));
	pushJsonbValue(state, WJB_END_ARRAY, NULL);
	push_key(state, "by");
	by.type = jbvBool;
	by.val.boolean = hints->by;
	pushJsonbValue(state, WJB_VALUE, &by);
	push_int64_field(state, "range_ms", hints->range_ms);
	pushJsonbValue(state, WJB_END_OBJECT, NULL);
}

/*
 * prom_read_request_json(request bytea) returns the queries and accepted
 * response types of a snappy-compressed ReadRequest.
 */
Datum
prom_read_request_json(PG_FUNCTION_ARGS)
{
	bytea	   *body = PG_GETARG_BYTEA_PP(0);
	JsonbParseState *state = NULL;
	Prometheus__ReadRequest *msg;
	JsonbValue *result;
	size_t		i;

	msg = PromUnpackReadRequest(VARDATA_ANY(body), VARSIZE_ANY_EXHDR(body),
								PromDecodeBudgetCreate("remote read request"));
	pushJsonbValue(&state, WJB_BEGIN_OBJECT, NULL);
	push_key(&state, "queries");
	pushJsonbValue(&state, WJB_BEGIN_ARRAY, NULL);
	for (i = 0; i < msg->n_queries; i++)
	{
		const Prometheus__Query *query = msg->queries[i];
		size_t		j;

		CHECK_FOR_INTERRUPTS();
		pushJsonbValue(&state, WJB_BEGIN_OBJECT, NULL);
		push_int64_field(&state, "start_timestamp_ms", query->start_timestamp_ms);
		push_int64_field(&state, "end_timestamp_ms", query->end_timestamp_ms);
		push_key(&state, "matchers");
		pushJsonbValue(&state, WJB_BEGIN_ARRAY, NULL);
		for (j = 0; j < query->n_matchers; j++)
		{
			const Prometheus__LabelMatcher *m = query->matchers[j];

			pushJsonbValue(&state, WJB_BEGIN_OBJECT, NULL);
			push_matcher_type(&state, m->type);
			push_key(&state, "name");
			push_string(&state, WJB_VALUE, wire_bytes(m->name), m->name.len);
			push_key(&state, "value");
			push_string(&state, WJB_VALUE, wire_bytes(m->value), m->value.len);
			pushJsonbValue(&state, WJB_END_OBJECT, NULL);
		}
		pushJsonbValue(&state, WJB_END_ARRAY, NULL);
		push_hints(&state, query->hints);
		pushJsonbValue(&state, WJB_END_OBJECT, NULL);
	}
	pushJsonbValue(&state, WJB_END_ARRAY, NULL);
	push_key(&state, "accepted_response_types");
	pushJsonbValue(&state, WJB_BEGIN_ARRAY, NULL);
	for (i = 0; i < msg->n_accepted_response_types; i++)
	{
		int			type = msg->accepted_response_types[i];

		if (type == PROM_RESPONSE_SAMPLES || type == PROM_RESPONSE_STREAMED_XOR_CHUNKS)
		{
			const char *name = PromResponseTypeName(type);

			push_string(&state, WJB_ELEM, name, strlen(name));
		}
		else
			push_int64(&state, WJB_ELEM, type);
	}
	pushJsonbValue(&state, WJB_END_ARRAY, NULL);
	result = pushJsonbValue(&state, WJB_END_OBJECT, NULL);
	PG_RETURN_JSONB_P(JsonbValueToJsonb(result));
}

/*
 * A histogram of a SAMPLES response as a prom_histogram value, checked as
 * the type checks its input (PromHistogramCheck).
 */
static PromHistogram *
histogram_from_message(const Prometheus__Histogram *m)
{
	bool		is_float = m->count_case == PROMETHEUS__HISTOGRAM__COUNT_COUNT_FLOAT;
	size_t		npositive = is_float ? m->n_positive_counts : m->n_positive_deltas;
	size_t		nnegative = is_float ? m->n_negative_counts : m->n_negative_deltas;
	PromHistogram *h;
	size_t		i;

	if (m->n_positive_spans > PG_UINT32_MAX || m->n_negative_spans > PG_UINT32_MAX ||
		npositive > PG_UINT32_MAX || nnegative > PG_UINT32_MAX ||
		m->n_custom_values > PG_UINT32_MAX ||
		m->schema < PG_INT16_MIN || m->schema > PG_INT16_MAX ||
		(int) m->reset_hint < PROM_RESET_UNKNOWN ||
		(int) m->reset_hint > PROM_RESET_GAUGE)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_BINARY_REPRESENTATION),
				 errmsg("could not decode remote read response"),
				 errdetail("A histogram's schema, reset hint or sizes are out of range.")));
	h = PromHistogramAllocate(m->n_positive_spans, m->n_negative_spans,
							  npositive, nnegative, m->n_custom_values);
	h->kind = is_float ? PROM_HISTOGRAM_FLOAT : PROM_HISTOGRAM_INTEGER;
	h->reset_hint = (uint8) m->reset_hint;
	h->schema = (int16) m->schema;
	h->zero_threshold = m->zero_threshold;
	h->sum = m->sum;
	if (is_float)
	{
		h->count.value = m->count_float;
		h->zero_count.value = m->zero_count_case ==
			PROMETHEUS__HISTOGRAM__ZERO_COUNT_ZERO_COUNT_FLOAT ? m->zero_count_float : 0;
	}
	else
	{
		h->count.integer = m->count_int;
		h->zero_count.integer = m->zero_count_case ==
			PROMETHEUS__HISTOGRAM__ZERO_COUNT_ZERO_COUNT_INT ? m->zero_count_int : 0;
	}
	for (i = 0; i < m->n_positive_spans; i++)
	{
		PromHistogramPositiveSpans(h)[i].offset = m->positive_spans[i]->offset;
		PromHistogramPositiveSpans(h)[i].length = m->positive_spans[i]->length;
	}
	for (i = 0; i < m->n_negative_spans; i++)
	{
		PromHistogramNegativeSpans(h)[i].offset = m->negative_spans[i]->offset;
		PromHistogramNegativeSpans(h)[i].length = m->negative_spans[i]->length;
	}
	for (i = 0; i < npositive; i++)
	{
		if (is_float)
			PromHistogramPositiveBuckets(h)[i].count = m->positive_counts[i];
		else
			PromHistogramPositiveBuckets(h)[i].delta = m->positive_deltas[i];
	}
	for (i = 0; i < nnegative; i++)
	{
		if (is_float)
			PromHistogramNegativeBuckets(h)[i].count = m->negative_counts[i];
		else
			PromHistogramNegativeBuckets(h)[i].delta = m->negative_deltas[i];
	}
	if (m->n_custom_values > 0)
		memcpy(PromHistogramCustomValues(h), m->custom_values,
			   sizeof(double) * m->n_custom_values);
	PromHistogramCheck(h);
	return h;
}

/* Push the results of a SAMPLES response (a snappy ReadResponse). */
static void
push_samples_results(JsonbParseState **state, const char *body, Size body_len)
{
	Prometheus__ReadResponse *msg;
	PromDecodeBudget *budget;
	char	   *data;
	Size		len;
	size_t		i;

	budget = PromDecodeBudgetCreate("remote read response");
	data = PromSnappyDecompress(body, body_len, MaxAllocSize,
								"remote read response", NULL,
								ERRCODE_PROGRAM_LIMIT_EXCEEDED, budget, &len);
	msg = prometheus__read_response__unpack(&budget->allocator, len,
											(const uint8_t *) data);
	pfree(data);
	if (msg == NULL)
	{
		PromDecodeBudgetCheck(budget, 0);
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_BINARY_REPRESENTATION),
				 errmsg("could not decode remote read response"),
				 errdetail("The data is not a valid protobuf ReadResponse.")));
	}
	PromDecodeBudgetHold(budget);

	for (i = 0; i < msg->n_results; i++)
	{
		const Prometheus__QueryResult *result = msg->results[i];
		size_t		j;

		push_result_start(state);
		for (j = 0; j < result->n_timeseries; j++)
		{
			const Prometheus__TimeSeries *series = result->timeseries[j];
			size_t		k;

			PromSample *histograms = palloc(sizeof(PromSample) *
											Max(series->n_histograms, 1));

			push_series_start(state, series->labels, series->n_labels);
			for (k = 0; k < series->n_samples; k++)
				push_sample(state, series->samples[k]->timestamp,
							series->samples[k]->value);
			pushJsonbValue(state, WJB_END_ARRAY, NULL);
			for (k = 0; k < series->n_histograms; k++)
			{
				histograms[k].t = series->histograms[k]->timestamp;
				histograms[k].v = PromHistogramSampleValue(histogram_from_message(series->histograms[k]));
			}
			push_histograms(state, histograms, series->n_histograms);
			pushJsonbValue(state, WJB_END_OBJECT, NULL);
			pfree(histograms);
		}
		push_array_in_object_end(state);
	}
}

/* One series of a chunked stream, gathered from its frames. */
typedef struct SampleArray
{
	PromSample *samples;
	int64		n;
	int64		capacity;
} SampleArray;

typedef struct DecodedSeries
{
	Prometheus__Label **labels;
	size_t		nlabels;
	SampleArray floats;			/* of XOR chunks */
	SampleArray histograms;		/* of histogram chunks: values point to
								 * histograms */
} DecodedSeries;

/* Do two label lists hold the same labels? */
static bool
same_labels(Prometheus__Label **a, size_t na, Prometheus__Label **b, size_t nb)
{
	size_t		i;

	if (na != nb)
		return false;
	for (i = 0; i < na; i++)
		if (a[i]->name.len != b[i]->name.len ||
			a[i]->value.len != b[i]->value.len ||
			memcmp(wire_bytes(a[i]->name), wire_bytes(b[i]->name), a[i]->name.len) != 0 ||
			memcmp(wire_bytes(a[i]->value), wire_bytes(b[i]->value), a[i]->value.len) != 0)
			return false;
	return true;
}

/*
 * Decode a chunk's samples and append them to a series: those of histogram
 * chunks to its histograms, those of XOR chunks to its floats.
 */
static void
append_chunk(DecodedSeries *series, const Prometheus__Chunk *chunk,
			 int64 frame, size_t index)
{
	bool		histograms = chunk->type == PROMETHEUS__CHUNK__ENCODING__HISTOGRAM ||
		chunk->type == PROMETHEUS__CHUNK__ENCODING__FLOAT_HISTOGRAM;
	SampleArray *array = histograms ? &series->histograms : &series->floats;
	int			nsamples;
	PromSample *samples = histograms ?
		PromDecodeHistogramChunk(chunk->type, wire_bytes(chunk->data),
								 chunk->data.len, frame, index, &nsamples) :
		PromDecodeChunk(chunk->type, wire_bytes(chunk->data), chunk->data.len,
						frame, index, &nsamples);

	if (array->n + nsamples > array->capacity)
	{
		array->capacity = Max(array->capacity * 2, array->n + nsamples);
		array->samples = array->samples == NULL ?
			palloc_extended(sizeof(PromSample) * array->capacity, MCXT_ALLOC_HUGE) :
			repalloc_huge(array->samples, sizeof(PromSample) * array->capacity);
	}
	memcpy(array->samples + array->n, samples, sizeof(PromSample) * nsamples);
	array->n += nsamples;
	pfree(samples);
}

/* The series of a chunked stream being gathered, by query index. */
typedef struct ChunkedResults
{
	List	  **results;		/* of DecodedSeries, by query index */
	int64		nresults;
	DecodedSeries *last;		/* the series of the previous frame */
	int64		last_index;
} ChunkedResults;

/*
 * Add one series of a frame to the results: frames of the same query and
 * labels in a row are one series.
 */
static void
gather_series(void *arg, int64 query_index,
			  const Prometheus__ChunkedSeries *cs, int64 frame)
{
	ChunkedResults *gathered = arg;
	size_t		k;

	if (query_index >= gathered->nresults)
	{
		int64		n = query_index + 1;
		int64		i;

		gathered->results = gathered->results == NULL ?
			palloc0(sizeof(List *) * n) :
			repalloc(gathered->results, sizeof(List *) * n);
		for (i = gathered->nresults; i < n; i++)
			gathered->results[i] = NIL;
		gathered->nresults = n;
	}
	if (gathered->last == NULL || gathered->last_index != query_index ||
		!same_labels(gathered->last->labels, gathered->last->nlabels,
					 cs->labels, cs->n_labels))
	{
		gathered->last = palloc0(sizeof(DecodedSeries));
		gathered->last->labels = cs->labels;
		gathered->last->nlabels = cs->n_labels;
		gathered->last_index = query_index;
		gathered->results[query_index] = lappend(gathered->results[query_index],
												 gathered->last);
	}
	for (k = 0; k < cs->n_chunks; k++)
		append_chunk(gathered->last, cs->chunks[k], frame, k);
}

/*
 * Push the results of a STREAMED_XOR_CHUNKS response (a stream of frames):
 * one per query index from 0 to the highest seen.
 */
static void
push_chunked_results(JsonbParseState **state, const char *data, Size len)
{
	ChunkedResults gathered = {0};
	int64		i;

	PromForEachChunkedSeries(data, len, gather_series, &gathered, NULL);
	for (i = 0; i < gathered.nresults; i++)
	{
		ListCell   *lc;

		push_result_start(state);
		foreach(lc, gathered.results[i])
		{
			DecodedSeries *series = lfirst(lc);
			int64		k;

			push_series_start(state, series->labels, series->nlabels);
			for (k = 0; k < series->floats.n; k++)
				push_sample(state, series->floats.samples[k].t,
							series->floats.samples[k].v);
			pushJsonbValue(state, WJB_END_ARRAY, NULL);
			push_histograms(state, series->histograms.samples,
							series->histograms.n);
			pushJsonbValue(state, WJB_END_OBJECT, NULL);
		}
		push_array_in_object_end(state);
	}
}

/*
 * prom_read_response_json(response bytea) returns the series of a SAMPLES
 * or STREAMED_XOR_CHUNKS response: {"results": [{"timeseries": [{"labels":
 * {...}, "samples": [[t, v], ...]}]}]}.
 */
Datum
prom_read_response_json(PG_FUNCTION_ARGS)
{
	bytea	   *body = PG_GETARG_BYTEA_PP(0);
	const char *data = VARDATA_ANY(body);
	Size		len = VARSIZE_ANY_EXHDR(body);
	JsonbParseState *state = NULL;
	JsonbValue *result;
	const char *not_a_frame = NULL;

	/* a stream of frames, or a snappy block (see the file header) */
	if (len > 0)
	{
		const char *message;
		Size		message_len;
		Size		pos = 0;

		not_a_frame = PromReadFrame(data, len, &pos, 0, &message, &message_len);
		if (not_a_frame != NULL &&
			snappy_validate_compressed_buffer(data, len) != SNAPPY_OK)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_BINARY_REPRESENTATION),
					 errmsg("could not decode remote read response"),
					 errdetail_internal("The data is neither a snappy block nor a stream of frames. %s",
										not_a_frame)));
	}

	pushJsonbValue(&state, WJB_BEGIN_OBJECT, NULL);
	push_key(&state, "results");
	pushJsonbValue(&state, WJB_BEGIN_ARRAY, NULL);
	if (not_a_frame == NULL)
		push_chunked_results(&state, data, len);
	else
		push_samples_results(&state, data, len);
	pushJsonbValue(&state, WJB_END_ARRAY, NULL);
	result = pushJsonbValue(&state, WJB_END_OBJECT, NULL);
	PG_RETURN_JSONB_P(JsonbValueToJsonb(result));
}

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
			uint64		bits = STALE_NAN_BITS;
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

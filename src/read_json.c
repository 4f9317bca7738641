/*-------------------------------------------------------------------------
 *
 * read_json.c
 *	  prom_read_request_json and prom_read_response_json: remote-read
 *	  messages decoded for people, as jsonb (write_request_json.c builds
 *	  remote-write requests from jsonb).
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
 * A response of a few megabytes may hold millions of samples (an XOR chunk
 * of 65,535 samples takes 16 kB; a SAMPLES response of empty samples, two
 * bytes a sample before snappy), and each costs a few hundred bytes of
 * jsonb tree.  So everything a response's decoding allocates, its messages,
 * samples, histograms and tree, is allocated in a decoding budget's memory
 * context and counted against promread.max_memory as it grows, for the
 * whole call (53200 past it); the jsonb made of the tree at the end is the
 * result.
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

/*
 * Count what a response's decoding holds, the tree built so far included,
 * against promread.max_memory (53200 past it), and let a long loop be
 * cancelled: once per sample, histogram, chunk and series.
 */
static void
count_memory(PromDecodeBudget *budget)
{
	CHECK_FOR_INTERRUPTS();
	PromDecodeBudgetCharge(budget, 0);
}

/* Push one sample as [time, value]. */
static void
push_sample(JsonbParseState **state, int64 t, double v,
			PromDecodeBudget *budget)
{
	count_memory(budget);
	pushJsonbValue(state, WJB_BEGIN_ARRAY, NULL);
	push_int64(state, WJB_ELEM, t);
	push_double(state, WJB_ELEM, v);
	pushJsonbValue(state, WJB_END_ARRAY, NULL);
}

/*
 * Push a series' histograms, when it has any, as "histograms": [[t, {...}],
 * ...], each as the type's text form (a JSON object); samples' values point
 * to the histograms.  The text and jsonb_in's parse are made in a context
 * of their own, reset after each histogram: only the jsonb is kept, not
 * the tens of bytes a bucket jsonb_in leaves behind.  They are not counted,
 * so a histogram of a chunk (which no setting bounds) is held to
 * promread.max_histogram_buckets first, as a SAMPLES response's is.
 */
static void
push_histograms(JsonbParseState **state, const PromSample *samples, int64 n,
				PromDecodeBudget *budget)
{
	MemoryContext scratch;
	Oid			output;
	bool		varlena;
	int64		i;

	if (n == 0)
		return;
	getTypeOutputInfo(PromHistogramTypeOid(), &output, &varlena);
	scratch = AllocSetContextCreate(CurrentMemoryContext,
									"promread histogram as JSON",
									ALLOCSET_DEFAULT_SIZES);
	push_key(state, "histograms");
	pushJsonbValue(state, WJB_BEGIN_ARRAY, NULL);
	for (i = 0; i < n; i++)
	{
		const PromHistogram *h = PromSampleHistogram(&samples[i]);
		MemoryContext oldcxt;
		char	   *text;
		Jsonb	   *parsed;
		Jsonb	   *object;
		JsonbValue	v;

		PromHistogramCheckSizes(h->npositive_spans, h->nnegative_spans,
								h->npositive_buckets, h->nnegative_buckets,
								h->ncustom_values);
		oldcxt = MemoryContextSwitchTo(scratch);
		text = OidOutputFunctionCall(output, PointerGetDatum(h));
		parsed = DatumGetJsonbP(DirectFunctionCall1(jsonb_in,
													CStringGetDatum(text)));
		MemoryContextSwitchTo(oldcxt);
		object = palloc(VARSIZE(parsed));
		memcpy(object, parsed, VARSIZE(parsed));
		MemoryContextReset(scratch);
		count_memory(budget);
		v.type = jbvBinary;
		v.val.binary.data = &object->root;
		v.val.binary.len = VARSIZE(object) - VARHDRSZ;
		pushJsonbValue(state, WJB_BEGIN_ARRAY, NULL);
		push_int64(state, WJB_ELEM, samples[i].t);
		pushJsonbValue(state, WJB_ELEM, &v);
		pushJsonbValue(state, WJB_END_ARRAY, NULL);
	}
	pushJsonbValue(state, WJB_END_ARRAY, NULL);
	MemoryContextDelete(scratch);
}

/* Open a QueryResult: {"timeseries": [ */
static void
push_result_start(JsonbParseState **state, PromDecodeBudget *budget)
{
	count_memory(budget);
	pushJsonbValue(state, WJB_BEGIN_OBJECT, NULL);
	push_key(state, "timeseries");
	pushJsonbValue(state, WJB_BEGIN_ARRAY, NULL);
}

/* Open a series: {"labels": {...}, "samples": [ */
static void
push_series_start(JsonbParseState **state, Prometheus__Label **labels,
				  size_t nlabels, PromDecodeBudget *budget)
{
	count_memory(budget);
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
 * the type checks its input (PromHistogramCheck), within the budget.
 */
static PromHistogram *
histogram_from_message(const Prometheus__Histogram *m,
					   PromDecodeBudget *budget)
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
	PromDecodeBudgetCharge(budget, PromHistogramSize(m->n_positive_spans,
													 m->n_negative_spans,
													 npositive, nnegative,
													 m->n_custom_values));
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

/*
 * Push the results of a SAMPLES response (a snappy ReadResponse), decoded
 * within the budget.
 */
static void
push_samples_results(JsonbParseState **state, const char *body, Size body_len,
					 PromDecodeBudget *budget)
{
	Prometheus__ReadResponse *msg;
	char	   *data;
	Size		len;
	size_t		i;

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

		push_result_start(state, budget);
		for (j = 0; j < result->n_timeseries; j++)
		{
			const Prometheus__TimeSeries *series = result->timeseries[j];
			size_t		k;

			PromSample *histograms = palloc(sizeof(PromSample) *
											Max(series->n_histograms, 1));

			push_series_start(state, series->labels, series->n_labels, budget);
			for (k = 0; k < series->n_samples; k++)
				push_sample(state, series->samples[k]->timestamp,
							series->samples[k]->value, budget);
			pushJsonbValue(state, WJB_END_ARRAY, NULL);
			for (k = 0; k < series->n_histograms; k++)
			{
				PromHistogram *h = histogram_from_message(series->histograms[k],
														  budget);

				histograms[k].t = series->histograms[k]->timestamp;
				histograms[k].v = PromHistogramSampleValue(h);
			}
			push_histograms(state, histograms, series->n_histograms, budget);
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
 * chunks to its histograms, those of XOR chunks to its floats; all of them
 * within the budget.
 */
static void
append_chunk(DecodedSeries *series, const Prometheus__Chunk *chunk,
			 int64 frame, size_t index, PromDecodeBudget *budget)
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
		PromDecodeBudgetCharge(budget, sizeof(PromSample) * array->capacity);
		array->samples = array->samples == NULL ?
			palloc_extended(sizeof(PromSample) * array->capacity, MCXT_ALLOC_HUGE) :
			repalloc_huge(array->samples, sizeof(PromSample) * array->capacity);
	}
	memcpy(array->samples + array->n, samples, sizeof(PromSample) * nsamples);
	array->n += nsamples;
	pfree(samples);
	count_memory(budget);
}

/* The series of a chunked stream being gathered, by query index. */
typedef struct ChunkedResults
{
	List	  **results;		/* of DecodedSeries, by query index */
	int64		nresults;
	DecodedSeries *last;		/* the series of the previous frame */
	int64		last_index;
	PromDecodeBudget *budget;	/* what they may hold */
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
		append_chunk(gathered->last, cs->chunks[k], frame, k,
					 gathered->budget);
}

/*
 * Push the results of a STREAMED_XOR_CHUNKS response (a stream of frames):
 * one per query index from 0 to the highest seen; its samples are decoded
 * within the budget, and its frames within one of their own (charged as
 * well) in a child of the current memory context.
 */
static void
push_chunked_results(JsonbParseState **state, const char *data, Size len,
					 PromDecodeBudget *budget)
{
	ChunkedResults gathered = {0};
	int64		i;

	gathered.budget = budget;
	PromForEachChunkedSeries(data, len, gather_series, &gathered, NULL);
	for (i = 0; i < gathered.nresults; i++)
	{
		ListCell   *lc;

		push_result_start(state, budget);
		foreach(lc, gathered.results[i])
		{
			DecodedSeries *series = lfirst(lc);
			int64		k;

			push_series_start(state, series->labels, series->nlabels, budget);
			for (k = 0; k < series->floats.n; k++)
				push_sample(state, series->floats.samples[k].t,
							series->floats.samples[k].v, budget);
			pushJsonbValue(state, WJB_END_ARRAY, NULL);
			push_histograms(state, series->histograms.samples,
							series->histograms.n, budget);
			pushJsonbValue(state, WJB_END_OBJECT, NULL);
		}
		push_array_in_object_end(state);
	}
}

/*
 * prom_read_response_json(response bytea) returns the series of a SAMPLES
 * or STREAMED_XOR_CHUNKS response: {"results": [{"timeseries": [{"labels":
 * {...}, "samples": [[t, v], ...]}]}]}.  Its decoding and tree are made
 * within one budget (see the file header), freed once the result is made.
 */
Datum
prom_read_response_json(PG_FUNCTION_ARGS)
{
	bytea	   *body = PG_GETARG_BYTEA_PP(0);
	const char *data = VARDATA_ANY(body);
	Size		len = VARSIZE_ANY_EXHDR(body);
	JsonbParseState *state = NULL;
	JsonbValue *result;
	Jsonb	   *jsonb;
	const char *not_a_frame = NULL;
	PromDecodeBudget *budget;
	MemoryContext oldcxt;

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

	budget = PromDecodeBudgetCreate("remote read response");
	oldcxt = MemoryContextSwitchTo(budget->context);
	pushJsonbValue(&state, WJB_BEGIN_OBJECT, NULL);
	push_key(&state, "results");
	pushJsonbValue(&state, WJB_BEGIN_ARRAY, NULL);
	if (not_a_frame == NULL)
		push_chunked_results(&state, data, len, budget);
	else
		push_samples_results(&state, data, len, budget);
	pushJsonbValue(&state, WJB_END_ARRAY, NULL);
	result = pushJsonbValue(&state, WJB_END_OBJECT, NULL);
	MemoryContextSwitchTo(oldcxt);
	jsonb = JsonbValueToJsonb(result);
	MemoryContextDelete(budget->context);
	pfree(budget);
	PG_RETURN_JSONB_P(jsonb);
}

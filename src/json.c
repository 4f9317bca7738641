/*-------------------------------------------------------------------------
 *
 * json.c
 *	  prom_read_request_json and prom_read_response_json: remote-read
 *	  messages decoded for people, as jsonb.
 *
 * Times are numbers of ms since the Unix epoch; sample values are numbers
 * with the shortest decimal that reads back as the same double, or the
 * strings "NaN", "+Inf" and "-Inf".
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <math.h>

#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "promread.h"
#include "proto/remote.pb-c.h"
#include "common/shortest_dec.h"
#include "utils/builtins.h"
#include "utils/float.h"
#include "utils/jsonb.h"
#include "utils/memutils.h"
#include "utils/numeric.h"
#include "wire.h"

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
push_number(JsonbParseState **state, JsonbIteratorToken token, const char *text)
{
	JsonbValue	v;

	v.type = jbvNumeric;
	v.val.numeric = DatumGetNumeric(DirectFunctionCall3(numeric_in,
														CStringGetDatum(text),
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
		push_string(state, WJB_KEY, (const char *) labels[i]->name.data,
					labels[i]->name.len);
		push_string(state, WJB_VALUE, (const char *) labels[i]->value.data,
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
	char	   *data;
	Size		len;
	size_t		i;

	data = PromSnappyDecompress(VARDATA_ANY(body), VARSIZE_ANY_EXHDR(body),
								promread_max_request_bytes,
								"remote read request",
								"promread.max_request_bytes", &len);
	msg = prometheus__read_request__unpack(&PromProtobufAllocator, len,
										   (const uint8_t *) data);
	if (msg == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_BINARY_REPRESENTATION),
				 errmsg("could not decode remote read request"),
				 errdetail("The data is not a valid protobuf ReadRequest.")));

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
			push_string(&state, WJB_VALUE, (const char *) m->name.data, m->name.len);
			push_key(&state, "value");
			push_string(&state, WJB_VALUE, (const char *) m->value.data, m->value.len);
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

/* Push the results of a SAMPLES response (a snappy ReadResponse). */
static void
push_samples_results(JsonbParseState **state, const char *body, Size body_len)
{
	Prometheus__ReadResponse *msg;
	char	   *data;
	Size		len;
	size_t		i;

	data = PromSnappyDecompress(body, body_len, MaxAllocSize,
								"remote read response", NULL, &len);
	msg = prometheus__read_response__unpack(&PromProtobufAllocator, len,
											(const uint8_t *) data);
	if (msg == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_BINARY_REPRESENTATION),
				 errmsg("could not decode remote read response"),
				 errdetail("The data is not a valid protobuf ReadResponse.")));

	for (i = 0; i < msg->n_results; i++)
	{
		const Prometheus__QueryResult *result = msg->results[i];
		size_t		j;

		pushJsonbValue(state, WJB_BEGIN_OBJECT, NULL);
		push_key(state, "timeseries");
		pushJsonbValue(state, WJB_BEGIN_ARRAY, NULL);
		for (j = 0; j < result->n_timeseries; j++)
		{
			const Prometheus__TimeSeries *series = result->timeseries[j];
			size_t		k;

			CHECK_FOR_INTERRUPTS();
			pushJsonbValue(state, WJB_BEGIN_OBJECT, NULL);
			push_labels(state, series->labels, series->n_labels);
			push_key(state, "samples");
			pushJsonbValue(state, WJB_BEGIN_ARRAY, NULL);
			for (k = 0; k < series->n_samples; k++)
				push_sample(state, series->samples[k]->timestamp,
								   series->samples[k]->value);
			pushJsonbValue(state, WJB_END_ARRAY, NULL);
			pushJsonbValue(state, WJB_END_OBJECT, NULL);
		}
		pushJsonbValue(state, WJB_END_ARRAY, NULL);
		pushJsonbValue(state, WJB_END_OBJECT, NULL);
	}
}

/*
 * prom_read_response_json(response bytea) returns the series of a
 * ReadResponse: {"results": [{"timeseries": [{"labels": {...},
 * "samples": [[t, v], ...]}]}]}.
 */
Datum
prom_read_response_json(PG_FUNCTION_ARGS)
{
	bytea	   *body = PG_GETARG_BYTEA_PP(0);
	JsonbParseState *state = NULL;
	JsonbValue *result;

	pushJsonbValue(&state, WJB_BEGIN_OBJECT, NULL);
	push_key(&state, "results");
	pushJsonbValue(&state, WJB_BEGIN_ARRAY, NULL);
	push_samples_results(&state, VARDATA_ANY(body), VARSIZE_ANY_EXHDR(body));
	pushJsonbValue(&state, WJB_END_ARRAY, NULL);
	result = pushJsonbValue(&state, WJB_END_OBJECT, NULL);
	PG_RETURN_JSONB_P(JsonbValueToJsonb(result));
}

/*-------------------------------------------------------------------------
 *
 * read_request.c
 *	  Decoding and checking remote-read requests, and building them for
 *	  SQL users and tests.
 *
 * A request is untrusted input: its snappy block announces its own size
 * (checked against promread.max_request_bytes before anything is
 * allocated), its protobuf may be truncated or malformed, and its values
 * may be anything.  Every problem becomes an error with its own message and
 * SQLSTATE, so that PostgREST answers 400 for bad input: undecodable data
 * 22P03, invalid UTF-8 22021, other invalid values 22023, regexes 2201B,
 * only unsupported response types 0A000, limits 54000.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "lib/stringinfo.h"
#include "protocol.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

PG_FUNCTION_INFO_V1(prom_read_request);
PG_FUNCTION_INFO_V1(prom_read_request_multi);

/* The most queries in a request (matchers in a query: PROM_MAX_MATCHERS). */
#define MAX_QUERIES		1000

/* The protocol's name of a response type. */
const char *
PromResponseTypeName(int type)
{
	switch (type)
	{
		case PROM_RESPONSE_SAMPLES:
			return "SAMPLES";
		case PROM_RESPONSE_STREAMED_XOR_CHUNKS:
			return "STREAMED_XOR_CHUNKS";
	}
	return psprintf("%d", type);
}

/* Does promread answer with this response type? */
static bool
response_type_served(int type)
{
	return type == PROM_RESPONSE_SAMPLES ||
		type == PROM_RESPONSE_STREAMED_XOR_CHUNKS;
}

/*
 * The response type, as Prometheus negotiates it: the first accepted type
 * that is served; SAMPLES when the request lists none.
 */
static PromResponseType
negotiate_response_type(const Prometheus__ReadRequest *msg)
{
	StringInfoData accepted;
	size_t		i;

	if (msg->n_accepted_response_types == 0)
		return PROM_RESPONSE_SAMPLES;
	for (i = 0; i < msg->n_accepted_response_types; i++)
		if (response_type_served(msg->accepted_response_types[i]))
			return (PromResponseType) msg->accepted_response_types[i];

	initStringInfo(&accepted);
	for (i = 0; i < msg->n_accepted_response_types; i++)
		appendStringInfo(&accepted, "%s%s", i > 0 ? ", " : "",
						 PromResponseTypeName(msg->accepted_response_types[i]));
	ereport(ERROR,
			(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
			 errmsg("none of the accepted response types is supported"),
			 errdetail("The request accepts %s.", accepted.data),
			 errhint("promread answers with SAMPLES or STREAMED_XOR_CHUNKS.")));
	return PROM_RESPONSE_SAMPLES;
}

/* Check and convert one query of a request, within the budget. */
static void
decode_query(const Prometheus__Query *msg, int index, PromQuery *query,
			 PromDecodeBudget *budget)
{
	size_t		i;

	if (msg->n_matchers > PROM_MAX_MATCHERS)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("query %d of the remote read request has too many matchers", index),
				 errdetail("It has %zu matchers; the limit is %d.",
						   msg->n_matchers, PROM_MAX_MATCHERS)));
	if (msg->start_timestamp_ms > msg->end_timestamp_ms)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("query %d of the remote read request ends before it starts", index),
				 errdetail("The start is %lld ms and the end %lld ms.",
						   (long long) msg->start_timestamp_ms,
						   (long long) msg->end_timestamp_ms)));

	query->start_ms = msg->start_timestamp_ms;
	query->end_ms = msg->end_timestamp_ms;
	query->nmatchers = 0;
	query->matchers = palloc(sizeof(PromMatcher) * Max(msg->n_matchers, 1));
	for (i = 0; i < msg->n_matchers; i++)
	{
		const Prometheus__LabelMatcher *m = msg->matchers[i];
		PromMatcher *matcher = &query->matchers[query->nmatchers];
		int			type = m->type;
		char	   *name;

		if (type < PROM_MATCH_EQ || type > PROM_MATCH_NRE)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("query %d of the remote read request has a matcher of unrecognized type %d",
							index, type)));
		name = pnstrdup(wire_bytes(m->name), m->name.len);
		PromMatcherInit(matcher, (PromMatchType) type, name,
						wire_bytes(m->value), m->value.len);
		PromDecodeBudgetCheck(budget, 0);
		if (strlen(name) == m->name.len)
			query->nmatchers++;
		else if (!matcher->matches_empty)
		{
			/* no series has a label whose name holds a NUL */
			query->nmatchers = 0;
			return;
		}
	}
}

/*
 * Decompress and unpack a snappy-compressed ReadRequest, within
 * promread.max_request_bytes and the budget, in the budget's context.
 */
struct Prometheus__ReadRequest *
PromUnpackReadRequest(const char *body, Size len, PromDecodeBudget *budget)
{
	return (Prometheus__ReadRequest *)
		PromUnpackRequest(body, len, &prometheus__read_request__descriptor,
						  "remote read request", ERRCODE_PROGRAM_LIMIT_EXCEEDED,
						  budget);
}

/*
 * Decode a snappy-compressed ReadRequest into queries and a response type,
 * allocated in a child of CurrentMemoryContext whose bytes count toward
 * promread.max_memory while it lives (53200 past it).
 */
PromReadRequest *
PromDecodeReadRequest(const char *body, Size len)
{
	PromDecodeBudget *budget = PromDecodeBudgetCreate("remote read request");
	MemoryContext oldcxt = MemoryContextSwitchTo(budget->context);
	PromReadRequest *request = palloc0(sizeof(PromReadRequest));
	Prometheus__ReadRequest *msg = PromUnpackReadRequest(body, len, budget);
	size_t		i;

	if (msg->n_queries > MAX_QUERIES)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("remote read request has too many queries"),
				 errdetail("It has %zu queries; the limit is %d.",
						   msg->n_queries, MAX_QUERIES)));

	request->response_type = negotiate_response_type(msg);
	request->nqueries = msg->n_queries;
	request->queries = palloc0(sizeof(PromQuery) * Max(msg->n_queries, 1));
	for (i = 0; i < msg->n_queries; i++)
		decode_query(msg->queries[i], i, &request->queries[i], budget);
	PromDecodeBudgetHold(budget);
	MemoryContextSwitchTo(oldcxt);
	return request;
}

/* The response type a name in prom_read_request's response_types means. */
static int
response_type_of_name(const char *name)
{
	if (pg_strcasecmp(name, "samples") == 0)
		return PROM_RESPONSE_SAMPLES;
	if (pg_strcasecmp(name, "streamed_xor_chunks") == 0)
		return PROM_RESPONSE_STREAMED_XOR_CHUNKS;
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("unrecognized response type \"%s\"", name),
			 errhint("Valid response types are samples and streamed_xor_chunks.")));
	return -1;
}

/*
 * Build a snappy-compressed ReadRequest with one query per selector, as
 * Prometheus would send it.
 */
static bytea *
build_read_request(Datum *selectors, int nselectors, TimestampTz start,
				   TimestampTz end, ArrayType *response_types)
{
	Prometheus__ReadRequest msg = PROMETHEUS__READ_REQUEST__INIT;
	Datum	   *type_names;
	bool	   *type_nulls;
	int			ntypes;
	uint8_t    *packed;
	size_t		packed_len;
	int			i;

	if (nselectors > MAX_QUERIES)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("a remote read request holds at most %d queries",
						MAX_QUERIES)));
	msg.n_queries = nselectors;
	msg.queries = palloc(sizeof(Prometheus__Query *) * Max(nselectors, 1));
	for (i = 0; i < nselectors; i++)
	{
		Prometheus__Query *query = palloc(sizeof(Prometheus__Query));
		PromQuery	parsed;
		int			j;

		prometheus__query__init(query);
		PromParseSelector(TextDatumGetCString(selectors[i]), &parsed);
		query->start_timestamp_ms = PromTimestamptzArgToMs(start);
		query->end_timestamp_ms = PromTimestamptzArgToMs(end);
		query->n_matchers = parsed.nmatchers;
		query->matchers = palloc(sizeof(Prometheus__LabelMatcher *) *
								 Max(parsed.nmatchers, 1));
		for (j = 0; j < parsed.nmatchers; j++)
		{
			Prometheus__LabelMatcher *m = palloc(sizeof(Prometheus__LabelMatcher));

			prometheus__label_matcher__init(m);
			m->type = (Prometheus__LabelMatcher__Type) parsed.matchers[j].type;
			m->name.data = (uint8_t *) parsed.matchers[j].name;
			m->name.len = strlen(parsed.matchers[j].name);
			m->value.data = (uint8_t *) parsed.matchers[j].value;
			m->value.len = parsed.matchers[j].value_len;
			query->matchers[j] = m;
		}
		msg.queries[i] = query;
	}

	deconstruct_array(response_types, TEXTOID, -1, false, TYPALIGN_INT,
					  &type_names, &type_nulls, &ntypes);
	msg.n_accepted_response_types = ntypes;
	msg.accepted_response_types = palloc(sizeof(int) * Max(ntypes, 1));
	for (i = 0; i < ntypes; i++)
	{
		if (type_nulls[i])
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("response_types must not contain NULL")));
		msg.accepted_response_types[i] = (Prometheus__ReadRequest__ResponseType)
			response_type_of_name(TextDatumGetCString(type_names[i]));
	}

	packed_len = prometheus__read_request__get_packed_size(&msg);
	packed = palloc_extended(Max(packed_len, 1), MCXT_ALLOC_HUGE);
	prometheus__read_request__pack(&msg, packed);
	return PromSnappyCompress((const char *) packed, packed_len,
							  "remote read request");
}

/*
 * prom_read_request(selector text, start_time timestamptz, end_time
 * timestamptz, response_types text[]) returns a ReadRequest of one query.
 */
Datum
prom_read_request(PG_FUNCTION_ARGS)
{
	Datum		selector = PG_GETARG_DATUM(0);

	PG_RETURN_BYTEA_P(build_read_request(&selector, 1,
										 PG_GETARG_TIMESTAMPTZ(1),
										 PG_GETARG_TIMESTAMPTZ(2),
										 PG_GETARG_ARRAYTYPE_P(3)));
}

/*
 * prom_read_request(selectors text[], start_time timestamptz, end_time
 * timestamptz, response_types text[]) returns a ReadRequest of one query
 * per selector.
 */
Datum
prom_read_request_multi(PG_FUNCTION_ARGS)
{
	Datum	   *selectors;
	bool	   *nulls;
	int			n;
	int			i;

	deconstruct_array(PG_GETARG_ARRAYTYPE_P(0), TEXTOID, -1, false,
					  TYPALIGN_INT, &selectors, &nulls, &n);
	for (i = 0; i < n; i++)
		if (nulls[i])
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("selectors must not contain NULL")));
	PG_RETURN_BYTEA_P(build_read_request(selectors, n,
										 PG_GETARG_TIMESTAMPTZ(1),
										 PG_GETARG_TIMESTAMPTZ(2),
										 PG_GETARG_ARRAYTYPE_P(3)));
}

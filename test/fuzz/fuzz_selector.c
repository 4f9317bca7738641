/*
 * fuzz_selector.c
 *	  libFuzzer target: PromQL series selectors (src/protocol/selector.c's
 *	  PromParseSelector, the parser prom_series and prom_read_request use),
 *	  with matcher construction (src/matcher.c) and the translation of regex
 *	  matchers from RE2 to PostgreSQL AREs (src/regex/prom_regex.c).
 *
 * The input is the selector text.  PostgreSQL text cannot hold a NUL byte,
 * so the text stops at the first NUL, as text_to_cstring would see it; the
 * bytes need not be valid UTF-8 (the parser must survive that too).
 *
 * An ERROR is a clean rejection when its SQLSTATE is one the parser uses:
 * 22023 (syntax), 22021 (invalid UTF-8), 2201B (regex), 54001 (stack depth),
 * 54000 (more than PROM_MAX_MATCHERS matchers), 53200 (promread.max_memory).
 * Anything else, a sanitizer report, a broken invariant of the parsed
 * query (fuzz_checks.h), or memory outliving the input is a bug.
 *
 * A selector that parses is also sent through a ReadRequest, built as
 * read_request.c's prom_read_request builds it (protobuf-c, snappy), and decoded
 * with PromDecodeReadRequest: the decoded matchers must be the parsed ones.
 *
 * The translated ARE is not compiled: PostgreSQL's regex engine is not
 * linked (RE_compile_and_execute is stubbed to succeed in pg_shim.c).
 */
#include "postgres.h"

#include <stdint.h>
#include <stdlib.h>

#include "fuzz_checks.h"
#include "pg_shim.h"
#include "promread.h"
#include "protocol/protocol.h"

static const char *const allowed[] = {
	"22023", "22021", "2201B", "53200", "54000", "54001", NULL
};

/* The query through a ReadRequest and back, as prom_read_request makes it. */
static void
round_trip(const PromQuery *query)
{
	Prometheus__ReadRequest msg = PROMETHEUS__READ_REQUEST__INIT;
	Prometheus__Query q = PROMETHEUS__QUERY__INIT;
	Prometheus__Query *qp = &q;
	Prometheus__LabelMatcher *ms;
	Prometheus__LabelMatcher **mps;
	uint8_t    *packed;
	size_t		packed_len;
	bytea	   *body;
	PromReadRequest *decoded;

	if (query->nmatchers > PROM_MAX_MATCHERS)
		shim_fail("selector accepted with %d matchers", query->nmatchers);
	ms = palloc(sizeof(*ms) * query->nmatchers);
	mps = palloc(sizeof(*mps) * query->nmatchers);
	for (int i = 0; i < query->nmatchers; i++)
	{
		prometheus__label_matcher__init(&ms[i]);
		ms[i].type = (Prometheus__LabelMatcher__Type) query->matchers[i].type;
		ms[i].name.data = (uint8_t *) query->matchers[i].name;
		ms[i].name.len = strlen(query->matchers[i].name);
		ms[i].value.data = (uint8_t *) query->matchers[i].value;
		ms[i].value.len = query->matchers[i].value_len;
		mps[i] = &ms[i];
	}
	q.start_timestamp_ms = -1;
	q.end_timestamp_ms = 1;
	q.n_matchers = query->nmatchers;
	q.matchers = mps;
	msg.n_queries = 1;
	msg.queries = &qp;
	packed_len = prometheus__read_request__get_packed_size(&msg);
	packed = palloc(Max(packed_len, 1));
	prometheus__read_request__pack(&msg, packed);
	body = PromSnappyCompress((const char *) packed, packed_len, "request");

	decoded = PromDecodeReadRequest(VARDATA(body), VARSIZE(body) - VARHDRSZ);
	if (decoded->nqueries != 1 || decoded->queries[0].nmatchers != query->nmatchers ||
		decoded->queries[0].start_ms != -1 || decoded->queries[0].end_ms != 1)
		shim_fail("round trip: %d queries, %d matchers", decoded->nqueries,
				  decoded->nqueries ? decoded->queries[0].nmatchers : -1);
	for (int i = 0; i < query->nmatchers; i++)
	{
		const PromMatcher *a = &query->matchers[i];
		const PromMatcher *b = &decoded->queries[0].matchers[i];

		if (a->type != b->type || strcmp(a->name, b->name) != 0 ||
			a->value_len != b->value_len ||
			memcmp(a->value, b->value, a->value_len) != 0 ||
			a->matches_empty != b->matches_empty ||
			(a->regex != NULL) != (b->regex != NULL) ||
			(a->regex && (VARSIZE(a->regex->anchored) != VARSIZE(b->regex->anchored) ||
						  memcmp(a->regex->anchored, b->regex->anchored,
								 VARSIZE(a->regex->anchored)) != 0 ||
						  a->regex->is_literal_set != b->regex->is_literal_set ||
						  a->regex->nliterals != b->regex->nliterals)))
			shim_fail("round trip: matcher %d differs", i);
	}
}

static void
parse(const uint8_t *data, size_t size)
{
	char	   *text = pnstrdup((const char *) data, size);
	PromQuery	query;

	PromParseSelector(text, &query);
	if (query.nmatchers < 1)
		shim_fail("selector accepted with no matcher");
	fuzz_check_query(&query);
	/* at least one matcher does not match "" (PromQL's rule) */
	for (int i = 0; i < query.nmatchers; i++)
		if (!query.matchers[i].matches_empty)
		{
			round_trip(&query);
			return;
		}
	shim_fail("selector accepted with every matcher matching \"\"");
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* to check that a crash is reported: FUZZ_CRASH_ON=<an input> */
	static const char *crash_on = NULL;
	static bool crash_on_read = false;

	if (!crash_on_read)
	{
		crash_on = getenv("FUZZ_CRASH_ON");
		crash_on_read = true;
	}
	if (crash_on && strlen(crash_on) == size && memcmp(crash_on, data, size) == 0)
		shim_fail("FUZZ_CRASH_ON input");

	/*
	 * Not a decoder of untrusted bytes: what a selector's regexes hold is
	 * bounded by their own limits, so promread.max_memory is its default.
	 */
	promread_max_memory = 1024 * 1024;
	shim_memory_margin = 0;
	shim_begin_input();
	SHIM_RUN(parse(data, size));
	shim_end_input(allowed);
	return 0;
}

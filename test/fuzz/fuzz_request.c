/*
 * fuzz_request.c
 *	  libFuzzer target: the body of a remote-read POST, a snappy-compressed
 *	  protobuf ReadRequest, through PromDecodeReadRequest (src/protocol/read_request.c):
 *	  the snappy length check against promread.max_request_bytes (its default,
 *	  32 MB) and decompression (src/protocol/wire.c), protobuf-c's unpacking (the
 *	  protoc-c output of src/protocol/proto/remote.proto), every check of the request,
 *	  and matcher construction (src/matcher.c) with the translation of regex
 *	  matchers from RE2 to PostgreSQL AREs (src/regex/prom_regex.c).
 *
 * The input is exactly the bytes a client POSTs.  To reach past snappy,
 * a custom mutator decompresses an input that is a valid snappy block,
 * mutates the protobuf inside with libFuzzer's own mutations, and
 * compresses it again (one mutation in eight works on the compressed bytes
 * instead, for the snappy paths).
 *
 * An ERROR is a clean rejection when its SQLSTATE is one read_request.c
 * documents: 22P03 (undecodable), 22021 (invalid UTF-8), 22023 (other
 * invalid values), 2201B (regex), 0A000 (response types), 54000 (limits),
 * 53200 (past promread.max_memory, 256 kB in the shim), plus 54001 (stack
 * depth).  Anything else (an internal error XX000, such as an allocation
 * beyond 1 GB), a sanitizer report, a broken invariant of the decoded
 * request (fuzz_checks.h), memory outliving the input, or memory more than
 * 2 MB past promread.max_memory (pg_shim.c) is a bug.
 *
 * The translated ARE is not compiled: PostgreSQL's regex engine is not
 * linked (RE_compile_and_execute is stubbed to succeed in pg_shim.c).
 * Nothing here reaches the catalog: PromDecodeReadRequest stops before it.
 */
#include "postgres.h"

#include <stdint.h>

#include "fuzz_checks.h"
#include "pg_shim.h"
#include "promread.h"
#include "protocol/protocol.h"

static const char *const allowed[] = {
	"22P03", "22021", "22023", "2201B", "0A000", "53200", "54000", "54001", NULL
};

static void
decode(const uint8_t *data, size_t size)
{
	PromReadRequest *request = PromDecodeReadRequest((const char *) data, size);

	if (request->nqueries < 0 || request->nqueries > 1000)
		shim_fail("decoded %d queries", request->nqueries);
	if (request->response_type != PROM_RESPONSE_SAMPLES &&
		request->response_type != PROM_RESPONSE_STREAMED_XOR_CHUNKS)
		shim_fail("response type %d", (int) request->response_type);
	for (int i = 0; i < request->nqueries; i++)
	{
		const PromQuery *q = &request->queries[i];

		if (q->start_ms > q->end_ms)
			shim_fail("query %d ends before it starts", i);
		if (q->nmatchers > 1000)
			shim_fail("query %d has %d matchers", i, q->nmatchers);
		fuzz_check_query(q);
	}
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* a matcher may hold a literal set of 1 MB before the budget's check */
	shim_memory_margin = 2 * 1024 * 1024;
	shim_begin_input();
	SHIM_RUN(decode(data, size));
	shim_end_input(allowed);
	return 0;
}

/*-------------------------------------------------------------------------
 *
 * remote_read.c
 *	  prom_remote_read(request bytea): the remote-read endpoint.
 *
 * Decodes the request, answers each query in order through the series
 * engine and writes the response as Prometheus's own server does, then
 * sets the transaction-local response.headers that PostgREST sends.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "promread.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "wire.h"

PG_FUNCTION_INFO_V1(prom_remote_read);

/* Set the HTTP response headers for PostgREST, until the transaction ends. */
void
PromSetResponseHeaders(const char *headers_json)
{
	(void) set_config_option("response.headers", headers_json,
							 PGC_USERSET, PGC_S_SESSION, GUC_ACTION_LOCAL,
							 true, 0, false);
}

/*
 * prom_remote_read(request bytea) returns the snappy-compressed ReadResponse
 * to a snappy-compressed ReadRequest: one QueryResult per query, in order.
 */
Datum
prom_remote_read(PG_FUNCTION_ARGS)
{
	bytea	   *body = PG_GETARG_BYTEA_PP(0);
	MemoryContext callcxt;
	MemoryContext oldcxt;
	PromReadRequest *request;
	PromSnappyWriter response;
	bytea	   *result;
	uint64		begin;
	int			i;

	PromPhasesStart();
	callcxt = AllocSetContextCreate(CurrentMemoryContext, "prom_remote_read",
									ALLOCSET_DEFAULT_SIZES);
	oldcxt = MemoryContextSwitchTo(callcxt);

	begin = PromPhaseBegin();
	request = PromDecodeReadRequest(VARDATA_ANY(body), VARSIZE_ANY_EXHDR(body));
	PromPhaseEnd(PROM_PHASE_DECODE, begin);
	MemoryContextSwitchTo(oldcxt);
	PromSnappyWriterInit(&response);
	MemoryContextSwitchTo(callcxt);
	for (i = 0; i < request->nqueries; i++)
	{
		PromSeriesSet *set = PromRunQuery(&request->queries[i], callcxt);

		begin = PromPhaseBegin();
		PromWriteSamplesResult(&response, set);
		PromPhaseEnd(PROM_PHASE_ENCODE, begin);
		PromPhasesMemory(MemoryContextMemAllocated(callcxt, true) +
						 PromSeriesSetMemory(set) + response.out_size +
						 response.stage_size);
		PromSeriesSetFree(set);
	}

	MemoryContextSwitchTo(oldcxt);
	begin = PromPhaseBegin();
	result = PromSnappyWriterFinish(&response);
	PromPhaseEnd(PROM_PHASE_ENCODE, begin);
	PromPhases.bytes = response.total;
	PromPhases.compressed = VARSIZE(result) - VARHDRSZ;
	MemoryContextDelete(callcxt);
	PromPhasesFinish();

	PromSetResponseHeaders("[{\"Content-Type\": \"application/x-protobuf\"}, "
						   "{\"Content-Encoding\": \"snappy\"}]");
	PG_RETURN_BYTEA_P(result);
}

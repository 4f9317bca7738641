/*-------------------------------------------------------------------------
 *
 * remote_read.c
 *	  prom_remote_read(request bytea): the remote-read endpoint.
 *
 * Decodes the request, answers each query in order through the series
 * engine and writes the response as Prometheus's own server does, in the
 * negotiated type (SAMPLES: a snappy ReadResponse; STREAMED_XOR_CHUNKS: a
 * stream of frames, chunk_encode.c), then sets the transaction-local
 * response.headers that PostgREST sends.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "engine/engine.h"
#include "phases.h"
#include "promread.h"
#include "protocol/protocol.h"
#include "scan/scan.h"
#include "utils/guc.h"
#include "utils/memutils.h"

PG_FUNCTION_INFO_V1(prom_remote_read);

/* Set the HTTP response headers for PostgREST, until the transaction ends. */
static void
PromSetResponseHeaders(const char *headers_json)
{
	(void) set_config_option("response.headers", headers_json,
							 PGC_USERSET, PGC_S_SESSION, GUC_ACTION_LOCAL,
							 true, 0, false);
}

/*
 * prom_remote_read(request bytea) returns the response to a
 * snappy-compressed ReadRequest in the negotiated type: a snappy-compressed
 * ReadResponse with one QueryResult per query, in order (SAMPLES), or the
 * frames of every query, in order, uncompressed (STREAMED_XOR_CHUNKS).
 */
Datum
prom_remote_read(PG_FUNCTION_ARGS)
{
	bytea	   *body = PG_GETARG_BYTEA_PP(0);
	MemoryContext callcxt;
	MemoryContext oldcxt;
	PromReadRequest *request;
	PromSnappyWriter response;
	PromBuffer	frames;
	bool		chunked;
	bytea	   *result;
	uint64		begin;
	int			i;

	PromPhasesStart();
	PromScanBeginCall();
	callcxt = AllocSetContextCreate(CurrentMemoryContext, "prom_remote_read",
									ALLOCSET_SMALL_SIZES);
	oldcxt = MemoryContextSwitchTo(callcxt);

	begin = PromPhaseBegin();
	request = PromDecodeReadRequest(VARDATA_ANY(body), VARSIZE_ANY_EXHDR(body));
	PromPhaseEnd(PROM_PHASE_DECODE, begin);
	chunked = request->response_type == PROM_RESPONSE_STREAMED_XOR_CHUNKS;
	MemoryContextSwitchTo(oldcxt);
	if (chunked)
	{
		/* the frames are the answer: they are written into the result bytea */
		PromBufferInit(&frames, 1024);
		(void) PromBufferReserve(&frames, VARHDRSZ);
	}
	else
		PromSnappyWriterInit(&response);
	MemoryContextSwitchTo(callcxt);
	for (i = 0; i < request->nqueries; i++)
	{
		PromSeriesSet *set = PromRunQuery(&request->queries[i], callcxt,
												  chunked);

		begin = PromPhaseBegin();
		if (chunked)
			PromAppendChunkedResult(&frames, set, i);
		else
			PromWriteSamplesResult(&response, set,
								   i == request->nqueries - 1);
		PromPhaseEnd(PROM_PHASE_ENCODE, begin);
		PromPhasesMemory(MemoryContextMemAllocated(callcxt, true) +
						 PromSeriesSetArenaBytes(set) +
						 (chunked ? frames.len :
						  PromSnappyWriterBytes(&response)));
		PromSeriesSetFree(set);
	}

	MemoryContextSwitchTo(oldcxt);
	if (chunked)
	{
		if (frames.len > MaxAllocSize)
			ereport(ERROR,
					(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
					 errmsg("remote read response is too large"),
					 errdetail("The encoded response has %zu bytes; a bytea holds at most 1 GB.",
							   frames.len - VARHDRSZ)));
		result = (bytea *) frames.data;
		SET_VARSIZE(result, frames.len);
		PromPhases.bytes = frames.len - VARHDRSZ;
	}
	else
	{
		begin = PromPhaseBegin();
		result = PromSnappyWriterFinish(&response);
		PromPhaseEnd(PROM_PHASE_ENCODE, begin);
		PromPhases.bytes = response.total;
	}
	PromPhases.compressed = VARSIZE(result) - VARHDRSZ;
	MemoryContextDelete(callcxt);
	PromPhasesFinish();

	if (chunked)
		PromSetResponseHeaders("[{\"Content-Type\": \"application/x-streamed-protobuf; "
							   "proto=prometheus.ChunkedReadResponse\"}]");
	else
		PromSetResponseHeaders("[{\"Content-Type\": \"application/x-protobuf\"}, "
							   "{\"Content-Encoding\": \"snappy\"}]");
	PG_RETURN_BYTEA_P(result);
}

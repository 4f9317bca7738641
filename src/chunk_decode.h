/*-------------------------------------------------------------------------
 *
 * chunk_decode.h
 *	  Reading STREAMED_XOR_CHUNKS streams series by series (chunk_decode.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef PROMREAD_CHUNK_DECODE_H
#define PROMREAD_CHUNK_DECODE_H

#include "proto/remote.pb-c.h"

/* Called for each series of a stream: its frame's query index and number. */
typedef void (*PromChunkedSeriesFn) (void *arg, int64 query_index,
									 const Prometheus__ChunkedSeries *series,
									 int64 frame);

extern void PromForEachChunkedSeries(const char *data, Size len,
									 PromChunkedSeriesFn fn, void *arg,
									 MemoryContext frame_context);

#endif							/* PROMREAD_CHUNK_DECODE_H */

/*-------------------------------------------------------------------------
 *
 * chunk_decode.h
 *	  Reading STREAMED_XOR_CHUNKS streams series by series, and the chunks
 *	  they carry (chunk_decode.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef PROMREAD_CHUNK_DECODE_H
#define PROMREAD_CHUNK_DECODE_H

#include "engine/engine.h"
#include "protocol/proto/remote.pb-c.h"

extern pg_attribute_noreturn() void PromStreamError(const char *detail);
extern const char *PromReadFrame(const char *data, Size len, Size *pos,
								 int64 frame, const char **message,
								 Size *message_len);
extern const char *PromXorChunkDecodeInto(const void *data, Size len,
										  PromSample **samples, int *capacity,
										  int *nsamples);
extern const char *PromXorChunkDecode(const void *data, Size len,
									  PromSample **samples, int *nsamples);
extern const char *PromHistogramChunkDecode(const void *data, Size len,
											bool is_float, PromSample **samples,
											int *nsamples);
extern PromSample *PromDecodeChunk(int encoding, const void *data, Size len,
								   int64 frame, size_t index, int *nsamples);
extern PromSample *PromDecodeHistogramChunk(int encoding, const void *data,
											Size len, int64 frame,
											size_t index, int *nsamples);

/* Called for each series of a stream: its frame's query index and number. */
typedef void (*PromChunkedSeriesFn) (void *arg, int64 query_index,
									 const Prometheus__ChunkedSeries *series,
									 int64 frame);

extern void PromForEachChunkedSeries(const char *data, Size len,
									 PromChunkedSeriesFn fn, void *arg,
									 MemoryContext frame_context);

#endif							/* PROMREAD_CHUNK_DECODE_H */

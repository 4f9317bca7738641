/*-------------------------------------------------------------------------
 *
 * protocol.h
 *	  The protocol's public interface: remote-read and remote-write
 *	  requests decoded, SAMPLES and STREAMED_XOR_CHUNKS answers encoded and
 *	  decoded, the buffers and snappy compression they are written with.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PROMREAD_PROTOCOL_H
#define PROMREAD_PROTOCOL_H

#include "promread.h"

#include "engine/engine.h"
#include "write_request.h"

/* Response types; the numbers are those of ReadRequest.ResponseType. */
typedef enum PromResponseType
{
	PROM_RESPONSE_SAMPLES = 0,
	PROM_RESPONSE_STREAMED_XOR_CHUNKS = 1
} PromResponseType;

/* A decoded remote-read request. */
typedef struct PromReadRequest
{
	int			nqueries;
	PromQuery  *queries;
	PromResponseType response_type;
} PromReadRequest;

/* in read_request.c */
extern PromReadRequest *PromDecodeReadRequest(const char *body, Size len);
extern const char *PromResponseTypeName(int type);

/* in write_request.c */
extern PromWriteRequest *PromDecodeWriteRequest(const char *body, Size len);
extern PromWriteRequest *PromDecodeWriteRequestV2(const char *body, Size len);
extern void PromWriteSeriesSetSamples(PromWriteSeries *series,
									  const PromSample *samples, int n);

/* Answers are written with the buffers of wire.h. */
struct PromSnappyWriter;
struct PromBuffer;

/* in samples_response.c */
extern void PromWriteSamplesResult(struct PromSnappyWriter *writer,
								   PromSeriesSet *set, bool last);


/* Samples per chunk at most, as Prometheus cuts them. */
#define PROM_CHUNK_SAMPLES		120

/*
 * Bound on the bytes of an XOR chunk of n samples: the header, then at most
 * 20 bytes a sample (18 for the first, under 20 for the second, under 19
 * for the others), the final partial byte included.
 */
#define PromXorChunkBound(n)	(2 + (Size) (n) * 20)

/* in chunk_encode.c: STREAMED_XOR_CHUNKS frames, read by chunk_decode.h's */
extern void PromAppendChunkedResult(struct PromBuffer *buf,
									const PromSeriesSet *set,
									int64 query_index);
extern Size PromEncodeXorChunk(const PromSample *samples, int n, uint8 *out,
							   int64 *min_t, int64 *max_t);

/* in histogram_chunk.c: a series of histograms cut into chunks */
typedef struct PromHistogramChunker
{
	const PromSample *samples;	/* the series' samples, in time order */
	int64		nsamples;
	int64		next;			/* the first not in a chunk yet */
	uint8	   *buf;			/* the last chunk's data */
	Size		capacity;
	int			max_samples;	/* a chunk's samples at most: Start sets
								 * PROM_CHUNK_SAMPLES, a caller may lower it */
} PromHistogramChunker;

extern void PromHistogramChunkerStart(PromHistogramChunker *chunker,
									  const PromSample *samples,
									  int64 nsamples);
extern bool PromHistogramChunkerNext(PromHistogramChunker *chunker,
									 int *encoding, Size *len,
									 int64 *min_t, int64 *max_t);

/* in chunk_decode.c */
#include "chunk_decode.h"

/* in wire.c */
extern uint32 PromCrc32c(const char *data, Size len);

/* in wire.c and snappy_writer.c: buffers, varints, snappy */
#include "wire.h"

/* the messages, as protoc-c generates them from proto/remote.proto */
#include "protocol/proto/remote.pb-c.h"
#include "protocol/proto/write_v2.pb-c.h"

#endif							/* PROMREAD_PROTOCOL_H */

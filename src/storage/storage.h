/*-------------------------------------------------------------------------
 *
 * storage.h
 *	  Metrics stored as Prometheus chunks (docs/chunk-storage.md): reading
 *	  stored chunks, the storage catalog, creating a metric's relations and
 *	  the partitions of its chunks.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PROMREAD_STORAGE_H
#define PROMREAD_STORAGE_H

#include "promread.h"
#include "datatype/timestamp.h"
#include "engine/engine.h"

/* Chunk encodings, as m#chunks.encoding and remote read number them. */
#define PROM_CHUNK_XOR				1
#define PROM_CHUNK_HISTOGRAM		2
#define PROM_CHUNK_FLOAT_HISTOGRAM	3

/* in chunk_functions.c */
extern TimestampTz PromStorageTimestamp(int64 ms);
extern PromSample *PromStorageDecodeChunk(int encoding, const bytea *chunk,
										  int *nsamples);
extern int	PromStorageChunkSampleCount(const bytea *chunk);

#endif							/* PROMREAD_STORAGE_H */

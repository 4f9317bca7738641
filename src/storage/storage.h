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
#include "utils/timestamp.h"
#include "engine/engine.h"
#include "remote_write.h"

/* Prometheus's 2-hour windows, which no chunk spans, and a day, in ms. */
#define PROM_CHUNK_WINDOW_MS		INT64CONST(7200000)
#define PROM_DAY_MS					INT64CONST(86400000)

/* Chunk encodings, as m#chunks.encoding and remote read number them. */
#define PROM_CHUNK_XOR				1
#define PROM_CHUNK_HISTOGRAM		2
#define PROM_CHUNK_FLOAT_HISTOGRAM	3

/*
 * A metric in chunk storage: its entry in prom_storage_catalog, naming its
 * registered view (relation) and its tables.
 */
typedef struct PromStorageEntry
{
	char	   *metric;
	Oid			relation;		/* the view "m", registered as the metric */
	Oid			series;			/* "m#series" */
	Oid			chunks;			/* "m#chunks", partitioned by min_time */
	Oid			head;			/* "m#head" */
	bool		has_retention;	/* false: samples are kept for ever */
	Interval	retention;
} PromStorageEntry;

/* in stored_chunks.c */
extern TimestampTz PromStorageTimestamp(int64 ms);
extern PromSample *PromStorageDecodeChunk(int encoding, const bytea *chunk,
										  int *nsamples);

/* in storage_catalog.c */
extern PromStorageEntry *PromStorageLookup(const char *metric);
extern void PromStorageCatalogStore(const PromStorageEntry *entry);
extern List *PromStorageEntries(void);
extern bool PromStorageCatalogSetRetention(const char *metric,
										   const Interval *retention);

/* in create.c */
extern PromMetricEntry *PromStorageCreateMetric(const char *metric, Oid nspid,
												const char *const *labels,
												int nlabels, bool histograms,
												bool for_write);
extern PromMetricEntry *PromStorageAddLabelColumns(const PromMetricEntry *entry,
												   const PromStorageEntry *storage,
												   const char *const *labels,
												   int nlabels);
extern Oid	PromStorageChunkPartition(const PromStorageEntry *entry, int64 t);

/* in retention.c: what compaction acts on, retention */
extern List *PromCompactEntries(const char *metric);
extern bool PromCompactOwns(const PromStorageEntry *entry);
extern void PromCompactCheckOwner(const PromStorageEntry *entry);
extern void PromApplyRetention(const PromStorageEntry *entry,
							   const char *chunks, const char *head,
							   int64 now_ms);

/* Floor division of a time by a span (ms): the number of its span. */
static inline int64
PromFloorDiv(int64 t, int64 span)
{
	return t / span - (t % span < 0 ? 1 : 0);
}

#endif							/* PROMREAD_STORAGE_H */

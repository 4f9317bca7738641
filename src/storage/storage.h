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
#include "utils/relcache.h"
#include "utils/snapshot.h"
#include "utils/timestamp.h"
#include "engine/engine.h"
#include "histogram/histogram.h"
#include "write_tables.h"

/* Prometheus's 2-hour windows, which no chunk spans, and a day, in ms. */
#define PROM_CHUNK_WINDOW_MS		INT64CONST(7200000)
#define PROM_DAY_MS					INT64CONST(86400000)

/* The windows after now's that a head has partitions for, made ahead. */
#define PROM_HEAD_WINDOWS_AHEAD		6

/*
 * The most windows before now's that a new metric's head has partitions
 * made for, back to its first samples (a day): samples written late.
 */
#define PROM_HEAD_WINDOWS_BEHIND	12

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
	Oid			head;			/* "m#head", partitioned by window */
	bool		has_retention;	/* false: samples are kept for ever */
	Interval	retention;
	Oid			late;			/* "m#late", or InvalidOid (made by hand) */
	int64		compacted_before;	/* the watermark; PG_INT64_MIN: none */
	TransactionId xmin;			/* of the entry's row as read */
} PromStorageEntry;

/* A window partition of a head: the window's number and the partition. */
typedef struct PromHeadWindow
{
	int64		window;			/* floor(t / 2 h) of its rows */
	Oid			partition;
} PromHeadWindow;

/* A window a compaction has rows of: their number, and their values' bytes. */
typedef struct PromHeadDueWindow
{
	int64		window;
	int64		rows;
	int64		value_bytes;
} PromHeadDueWindow;

/* in stored_chunks.c */
extern TimestampTz PromStorageTimestamp(int64 ms);
extern PromSample *PromStorageDecodeChunk(int encoding, const bytea *chunk,
										  int *nsamples);

/* in storage_catalog.c */
extern PromStorageEntry *PromStorageLookup(const char *metric);
extern PromStorageEntry *PromStorageStoredEntry(const char *metric);
extern void PromStorageCatalogStore(const PromStorageEntry *entry);
extern List *PromStorageEntries(void);
extern bool PromStorageCatalogSetRetention(const char *metric,
										   const Interval *retention);
extern bool PromStorageCatalogSetCompactedBefore(const char *metric,
												 int64 compacted_before);
extern int64 PromStorageCompactedBefore(const char *metric, Oid head, Snapshot snapshot);

/* in create.c */
extern PromMetricEntry *PromStorageCreateMetric(const char *metric, Oid nspid,
												const char *const *labels,
												int nlabels, bool histograms,
												bool for_write, int64 earliest_ms);
extern PromMetricEntry *PromStorageAddLabelColumns(const PromMetricEntry *entry,
												   const PromStorageEntry *storage,
												   const char *const *labels,
												   int nlabels);
extern Oid	PromStorageChunkPartition(const PromStorageEntry *entry, int64 t);

/* in head.c: the head's partitions by window, behind the watermark */
extern void PromHeadWindows(Relation head, PromHeadWindow **windows,
							int *nwindows, Oid *default_partition);
extern Oid	PromHeadWindowPartition(const PromHeadWindow *windows, int nwindows,
									int64 window);
extern char *PromHeadPartitionName(const char *metric, Oid head, int64 window,
								   bool is_default);
extern void PromHeadCreatePartition(const char *metric, Oid head, int64 window,
									bool is_default);
extern void PromHeadMakePartitions(const PromStorageEntry *entry, int64 now_ms,
								   int64 earliest_ms);
extern void PromStorageInit(void);
extern void PromHeadMaintain(const PromStorageEntry *entry, int64 cutoff,
							 int64 now_ms);
extern PromHeadDueWindow *PromHeadDueWindows(const PromStorageEntry *entry,
											 int64 bound,
											 const PromHeadWindow *partitions,
											 int npartitions,
											 Oid default_partition, int *ndue);

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

/*-------------------------------------------------------------------------
 *
 * compact.h
 *	  What compaction (compact.c) and retention (retention.c) share: the
 *	  storage catalog's entries and the day partitions of m#chunks.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PROMREAD_COMPACT_H
#define PROMREAD_COMPACT_H

#include "promread.h"
#include "datatype/timestamp.h"

/* Prometheus's block windows: 2 hours, in ms since the Unix epoch. */
#define PROM_WINDOW_MS			INT64CONST(7200000)

/* A day, the span of one partition of m#chunks. */
#define PROM_DAY_MS				INT64CONST(86400000)

/* A metric of chunk storage, as its registered entry names it. */
typedef struct PromStorageTarget
{
	char	   *metric;
	Oid			relation;		/* the registered view */
	Oid			series;
	Oid			chunks;
	Oid			head;
	bool		has_retention;
	Interval	retention;
} PromStorageTarget;

/* The partitions of m#chunks made so far in a compaction: a cache. */
typedef struct PromPartitionCache
{
	Oid			chunks;
	int64		lo;				/* the range of min_time of the last */
	int64		hi;				/* partition found or made */
	bool		valid;
} PromPartitionCache;

/* in retention.c */
extern List *PromStorageTargets(const char *metric);
extern void PromStorageCheckOwner(const PromStorageTarget *target);
extern bool PromStorageOwns(const PromStorageTarget *target);
extern void PromChunkPartitionEnsure(PromPartitionCache *cache, int64 t);
extern void PromApplyRetention(const PromStorageTarget *target,
							   const char *chunks, const char *head,
							   int64 now_ms);

/* Floor division of a time by a span: the span's number. */
static inline int64
PromFloorDiv(int64 t, int64 span)
{
	return t / span - (t % span < 0 ? 1 : 0);
}

#endif							/* PROMREAD_COMPACT_H */

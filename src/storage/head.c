/*-------------------------------------------------------------------------
 *
 * head.c
 *	  The head of a chunk metric partitioned by 2-hour window, behind a
 *	  watermark: its partitions found, made ahead of time and dropped whole
 *	  once no snapshot needs them, and the windows a compaction has rows of
 *	  (docs/chunk-storage.md).
 *
 * The layout.  m#head is partitioned by range of t: a partition a window,
 * "m#head_YYYYMMDDHH" holding [w * 2 h, (w + 1) * 2 h), with a B-tree on
 * (series_id, t), made ahead of time (PromHeadMakePartitions), and the
 * default partition "m#head_default" for rows of windows without one (a
 * time far from now, or a row inserted by hand).  m#late, a plain table of
 * the same columns and index, holds the rows that arrive for windows
 * compacted already.  The metric's entry in prom_storage_catalog holds the
 * watermark compacted_before (NULL: minus infinity), a multiple of 2 h: the
 * head rows before it are in chunks.
 *
 * Readers (scan_chunks.c's head statement, the view "m") read, in their own
 * snapshot, the head rows with t >= compacted_before, the watermark as that
 * snapshot sees it, every row of the default partition and every row of
 * m#late.  The watermark moves in the
 * transaction that writes the chunks of the windows below it, so a snapshot
 * sees either the head rows of a window (old watermark, no chunks) or its
 * chunks (new watermark), never both and never neither.  That is why a
 * compacted partition cannot be dropped in the compaction's own
 * transaction: a REPEATABLE READ reader whose snapshot predates the
 * compaction reads the old watermark, and would find the rows gone.
 *
 * Writers (write_chunks.c) lock the partition of each window a request
 * touches (ROW EXCLUSIVE, in ascending order of OID; the default partition
 * for a window without one), and those alone, so that they do not wait
 * for a compaction of other windows, then read the watermark with the latest
 * snapshot: rows of windows before it go to m#late, the others to m#head
 * (routed to their partition, or to the default one).  Compaction
 * (compact.c) takes SHARE on each partition of the windows it compacts
 * (from the watermark up), in ascending order of OID too, before it reads
 * them, and keeps them to its commit, where the watermark moves.  A writer therefore
 * either holds its lock first (the compaction waits for it to commit, and
 * then reads its rows), or waits for the compaction to commit and then
 * reads the moved watermark, sending its rows to m#late.  No row lands in
 * a window partition below the watermark after the compaction read it.
 * Rows of m#late and of the default partition, which readers read whole,
 * are deleted as they are compacted (DELETE ... RETURNING, as before: they
 * are few), so a row committed there after the compaction read stays,
 * visible, for the next: neither needs a lock.  A row inserted by hand
 * into a window partition below the watermark (not through remote write)
 * is not seen, and goes with the partition: late samples go to m#late.
 * Both sides lock partitions in ascending order of OID, after the metric's
 * lock in the catalog when they take it (a writer adding a label column, a
 * compaction moving the watermark), so they do not
 * deadlock on one metric; a writer of several metrics and a compaction of
 * several may (different orders of metrics), and the deadlock detector
 * then cancels one of them.
 *
 * Partitions are made and dropped under ACCESS EXCLUSIVE on m#head, taken
 * conditionally (PromHeadMaintain retries a few times and otherwise leaves
 * it to the next compaction: a writer without a window partition writes to
 * the default one), and kept to the compaction's commit: a query on the view
 * plans with the partitions it sees and may read with a newer snapshot.  A
 * partition wholly below the watermark is dropped once the watermark's row
 * has an xmin older than every snapshot (GetOldestNonRemovableTransactionId):
 * then no snapshot reads the old watermark, so none reads the partition.  A
 * reader still running holds ACCESS SHARE on m#head, which the drop waits
 * for (conditionally).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/relation.h"
#include "access/transam.h"
#include "catalog/pg_class.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "partitioning/partbounds.h"
#include "partitioning/partdesc.h"
#include "storage/bufmgr.h"
#include "storage/lmgr.h"
#include "storage/procarray.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/datetime.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/syscache.h"

#include "storage/storage.h"

/* The fewest bytes a head row takes on disk: its header, columns, pointer. */
#define HEAD_ROW_DISK_BYTES	52

/* Attempts at the lock of m#head that making and dropping partitions need. */
#define MAINTAIN_TRIES		20
#define MAINTAIN_WAIT_US	5000L

/*
 * The window partitions of a head (open, locked), in ascending order of
 * window, and its default partition (InvalidOid: none).  A partition that is
 * not exactly one window is left out (the default is the only other one
 * promread makes).
 */
void
PromHeadWindows(Relation head, PromHeadWindow **windows, int *nwindows,
				Oid *default_partition)
{
	PartitionDesc desc;
	PartitionBoundInfo bounds;
	int			j;

	*windows = NULL;
	*nwindows = 0;
	*default_partition = InvalidOid;
	if (head->rd_rel->relkind != RELKIND_PARTITIONED_TABLE)
		return;
	desc = RelationGetPartitionDesc(head, true);
	bounds = desc->boundinfo;
	if (bounds == NULL || bounds->strategy != PARTITION_STRATEGY_RANGE)
		return;
	if (bounds->default_index >= 0)
		*default_partition = desc->oids[bounds->default_index];
	*windows = palloc(sizeof(PromHeadWindow) * Max(desc->nparts, 1));
	/* the partition whose upper bound is datums[j] starts at datums[j - 1] */
	for (j = 1; j < bounds->ndatums; j++)
	{
		int64		lo;
		int64		hi;

		if (bounds->indexes[j] < 0 ||
			bounds->kind[j - 1][0] != PARTITION_RANGE_DATUM_VALUE ||
			bounds->kind[j][0] != PARTITION_RANGE_DATUM_VALUE)
			continue;
		lo = DatumGetInt64(bounds->datums[j - 1][0]);
		hi = DatumGetInt64(bounds->datums[j][0]);
		if (hi - lo != PROM_CHUNK_WINDOW_MS || lo % PROM_CHUNK_WINDOW_MS != 0)
			continue;
		(*windows)[*nwindows].window = PromFloorDiv(lo, PROM_CHUNK_WINDOW_MS);
		(*windows)[*nwindows].partition = desc->oids[bounds->indexes[j]];
		(*nwindows)++;
	}
}

/*
 * PromHeadWindows of a head locked by the caller, the relation closed again
 * (DDL on a relation refuses to run while this session has it open).
 */
static void
head_windows(Oid head, PromHeadWindow **windows, int *nwindows, Oid *default_partition,
			 bool *partitioned)
{
	Relation	rel = relation_open(head, NoLock);

	*partitioned = rel->rd_rel->relkind == RELKIND_PARTITIONED_TABLE;
	PromHeadWindows(rel, windows, nwindows, default_partition);
	relation_close(rel, NoLock);
}

/* The partition of a window among a head's (PromHeadWindows), or InvalidOid. */
Oid
PromHeadWindowPartition(const PromHeadWindow *windows, int nwindows, int64 window)
{
	int			lo = 0;
	int			hi = nwindows - 1;

	while (lo <= hi)
	{
		int			mid = (lo + hi) / 2;

		if (windows[mid].window == window)
			return windows[mid].partition;
		if (windows[mid].window < window)
			lo = mid + 1;
		else
			hi = mid - 1;
	}
	return InvalidOid;
}

/*
 * The name of a head partition: "m#head_YYYYMMDDHH" of its window's start
 * (UTC), or "m#head_default".
 */
static char *
partition_name(const char *metric, int64 window, bool is_default)
{
	int64		start = window * PROM_CHUNK_WINDOW_MS;
	int64		day = PromFloorDiv(start, PROM_DAY_MS);
	int			year;
	int			month;
	int			mday;

	if (is_default)
		return PromCreatedRelationName(metric, "#head_default");
	j2date((int) (day + UNIX_EPOCH_JDATE), &year, &month, &mday);
	return PromCreatedRelationName(metric,
								   psprintf("#head_%04d%02d%02d%02d", year, month, mday,
											(int) ((start - day * PROM_DAY_MS) / 3600000)));
}

/* The quoted, qualified name of a head's partition (see partition_name). */
char *
PromHeadPartitionName(const char *metric, Oid head, int64 window, bool is_default)
{
	return quote_qualified_identifier(get_namespace_name(get_rel_namespace(head)),
									  partition_name(metric, window, is_default));
}

/*
 * Create a partition of a metric's head for a window, or its default
 * partition; the caller holds ACCESS EXCLUSIVE on the head, and runs
 * inside SPI.
 */
void
PromHeadCreatePartition(const char *metric, Oid head, int64 window, bool is_default)
{
	char	   *name = PromHeadPartitionName(metric, head, window, is_default);
	char	   *parent = PromQuotedRelationName(head);

	if (is_default)
		PromRunDDL(psprintf("CREATE TABLE %s PARTITION OF %s DEFAULT", name, parent));
	else
		PromRunDDL(psprintf("CREATE TABLE %s PARTITION OF %s FOR VALUES FROM ("
							INT64_FORMAT ") TO (" INT64_FORMAT ")", name, parent,
							window * PROM_CHUNK_WINDOW_MS,
							(window + 1) * PROM_CHUNK_WINDOW_MS));
}

/*
 * Make the missing partitions of windows [from, to] of a head (under ACCESS
 * EXCLUSIVE), none below the watermark; a window whose rows are in the
 * default partition already is left there (its partition could not be
 * attached).  Runs inside SPI.
 */
static void
make_partitions(const PromStorageEntry *entry, int64 from, int64 to)
{
	PromHeadWindow *windows;
	int			nwindows;
	Oid			default_partition;
	bool		partitioned;
	int64		window;

	head_windows(entry->head, &windows, &nwindows, &default_partition, &partitioned);
	for (window = from; window <= to; window++)
	{
		Datum		args[2];
		Oid			types[2] = {INT8OID, INT8OID};

		if (window * PROM_CHUNK_WINDOW_MS < entry->compacted_before ||
			OidIsValid(PromHeadWindowPartition(windows, nwindows, window)))
			continue;
		if (OidIsValid(default_partition))
		{
			args[0] = Int64GetDatum(window * PROM_CHUNK_WINDOW_MS);
			args[1] = Int64GetDatum((window + 1) * PROM_CHUNK_WINDOW_MS);
			if (SPI_execute_with_args(psprintf("SELECT FROM %s WHERE t >= $1 AND t < $2 LIMIT 1",
											   PromQuotedRelationName(default_partition)),
									  2, types, args, NULL, true, 1) != SPI_OK_SELECT)
				elog(ERROR, "could not read the default partition of metric \"%s\"",
					 entry->metric);
			if (SPI_processed > 0)
				continue;
		}
		PromHeadCreatePartition(entry->metric, entry->head, window, false);
	}
}

/*
 * Make a new metric's window partitions, of the windows around now (ms),
 * and back to earliest_ms (the first samples its creator writes, late;
 * PG_INT64_MAX: none) for at most PROM_HEAD_WINDOWS_BEHIND windows, so that
 * they are compacted without being deleted row by row; its creator holds
 * every lock.  Runs inside SPI.
 */
void
PromHeadMakePartitions(const PromStorageEntry *entry, int64 now_ms, int64 earliest_ms)
{
	int64		window = PromFloorDiv(now_ms, PROM_CHUNK_WINDOW_MS);
	int64		from = window - 1;

	if (earliest_ms < now_ms)
		from = Max(Min(from, PromFloorDiv(earliest_ms, PROM_CHUNK_WINDOW_MS)),
				   window - PROM_HEAD_WINDOWS_BEHIND);
	LockRelationOid(entry->head, AccessExclusiveLock);
	make_partitions(entry, from, window + PROM_HEAD_WINDOWS_AHEAD);
}

/*
 * Drop the partitions wholly below the watermark once no snapshot may read
 * the watermark before it moved, and make those of the windows from the one
 * compaction reaches (cutoff, ms) to PROM_HEAD_WINDOWS_AHEAD after now's:
 * under ACCESS EXCLUSIVE on the head, taken conditionally (see the header),
 * only when there is something to do.  entry is the metric's entry read
 * after the compaction's lock on the head.  Runs inside SPI, as the
 * metric's owner.
 */
void
PromHeadMaintain(const PromStorageEntry *entry, int64 cutoff, int64 now_ms)
{
	Relation	catalog;
	PromHeadWindow *windows;
	int			nwindows;
	Oid			default_partition;
	bool		partitioned;
	int64		from = PromFloorDiv(cutoff, PROM_CHUNK_WINDOW_MS);
	int64		to = PromFloorDiv(now_ms, PROM_CHUNK_WINDOW_MS) + PROM_HEAD_WINDOWS_AHEAD;
	bool		settled;
	int			ndroppable = 0;
	bool		missing = false;
	int			tries;
	int			i;

	head_windows(entry->head, &windows, &nwindows, &default_partition, &partitioned);
	if (!OidIsValid(entry->late) || !partitioned)
		return;
	catalog = relation_open(get_relname_relid("prom_storage_catalog",
											  PromExtensionNamespace()),
							AccessShareLock);
	settled = TransactionIdPrecedes(entry->xmin, GetOldestNonRemovableTransactionId(catalog));
	relation_close(catalog, AccessShareLock);
	for (i = 0; i < nwindows; i++)
		if (settled && (windows[i].window + 1) * PROM_CHUNK_WINDOW_MS <= entry->compacted_before)
			ndroppable++;
	/* half of the windows ahead made: time to make more */
	for (i = 0; i <= PROM_HEAD_WINDOWS_AHEAD / 2 && !missing; i++)
		missing = !OidIsValid(PromHeadWindowPartition(windows, nwindows, to - i));
	if (ndroppable == 0 && !missing)
		return;
	for (tries = 0; !ConditionalLockRelationOid(entry->head, AccessExclusiveLock); tries++)
	{
		if (tries == MAINTAIN_TRIES)
		{
			elog(DEBUG1, "promread left the partitions of the head of metric \"%s\" for later: it is busy",
				 entry->metric);
			return;
		}
		CHECK_FOR_INTERRUPTS();
		pg_usleep(MAINTAIN_WAIT_US);
	}
	for (i = 0; i < nwindows && ndroppable > 0; i++)
	{
		if ((windows[i].window + 1) * PROM_CHUNK_WINDOW_MS > entry->compacted_before)
			continue;
		CHECK_FOR_INTERRUPTS();
		/* a partition in use (read by hand, vacuumed) is left for later */
		if (!ConditionalLockRelationOid(windows[i].partition, AccessExclusiveLock))
			continue;
		PromRunDDL(psprintf("DROP TABLE %s", PromQuotedRelationName(windows[i].partition)));
	}
	if (missing)
		make_partitions(entry, from, to);
}

/*
 * Drop a metric's head partitions wholly below its watermark now, whatever
 * snapshot may still read them, before its entry (and so the watermark its
 * view reads) goes: the metric unregistered, or registered anew.  The
 * view, with no watermark left, would show their rows beside the chunks
 * that hold them.  Done when the caller owns the head (the metric's owner,
 * or a superuser), under ACCESS EXCLUSIVE on it.  Runs inside SPI.
 */
static void
drop_compacted(const PromStorageEntry *entry)
{
	PromHeadWindow *windows;
	int			nwindows;
	Oid			default_partition;
	bool		partitioned;
	int			i;

	if (entry->compacted_before == PG_INT64_MIN ||
		!SearchSysCacheExists1(RELOID, ObjectIdGetDatum(entry->head)) ||
		!pg_class_ownercheck(entry->head, GetUserId()))
		return;
	LockRelationOid(entry->head, AccessExclusiveLock);
	if (!SearchSysCacheExists1(RELOID, ObjectIdGetDatum(entry->head)))
		return;					/* dropped meanwhile */
	head_windows(entry->head, &windows, &nwindows, &default_partition, &partitioned);
	for (i = 0; i < nwindows; i++)
		if ((windows[i].window + 1) * PROM_CHUNK_WINDOW_MS <= entry->compacted_before)
			PromRunDDL(psprintf("DROP TABLE %s",
								PromQuotedRelationName(windows[i].partition)));
}

/* The catalog's PromForgetStorageHook: drop_compacted for a metric. */
static void
forget_metric(const char *metric)
{
	PromStorageEntry *entry = PromStorageStoredEntry(metric);

	if (entry == NULL)
		return;
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	drop_compacted(entry);
	SPI_finish();
}

/* Hook chunk storage into the catalog (_PG_init). */
void
PromStorageInit(void)
{
	PromForgetStorageHook = forget_metric;
}

/* Order due windows by window. */
static int
compare_due(const void *a, const void *b)
{
	int64		wa = ((const PromHeadDueWindow *) a)->window;
	int64		wb = ((const PromHeadDueWindow *) b)->window;

	return wa < wb ? -1 : wa > wb;
}

/*
 * The windows before bound (ms) that a compaction of a metric has rows of,
 * in ascending order, each with its rows and their values' bytes: counted
 * for m#late's and the default partition's rows (they are few), estimated
 * from its size for a window partition from the watermark on (counting
 * would read it once more): HEAD_ROW_DISK_BYTES a row at least, the values
 * at most the partition.  partitions and default_partition are the head's
 * (PromHeadWindows).  Runs inside SPI.
 */
PromHeadDueWindow *
PromHeadDueWindows(const PromStorageEntry *entry, int64 bound,
				   const PromHeadWindow *partitions, int npartitions,
				   Oid default_partition, int *ndue)
{
	Oid			types[1] = {INT8OID};
	Datum		args[1];
	PromHeadDueWindow *due;
	uint64		nrows;
	uint64		r;
	int			n = 0;
	int			i;

	args[0] = Int64GetDatum(bound);
	if (SPI_execute_with_args(psprintf("SELECT t / %lld - (t %% %lld < 0)::int, count(*), sum(pg_column_size(value)) "
									   "FROM (SELECT t, value FROM %s WHERE t < $1%s%s%s) r GROUP BY 1",
									   (long long) PROM_CHUNK_WINDOW_MS,
									   (long long) PROM_CHUNK_WINDOW_MS,
									   PromQuotedRelationName(entry->late),
									   OidIsValid(default_partition) ?
									   " UNION ALL SELECT t, value FROM " : "",
									   OidIsValid(default_partition) ?
									   PromQuotedRelationName(default_partition) : "",
									   OidIsValid(default_partition) ? " WHERE t < $1" : ""),
							  1, types, args, NULL, false, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not list the windows of metric \"%s\"", entry->metric);
	nrows = SPI_processed;
	due = palloc(sizeof(PromHeadDueWindow) * (nrows + npartitions + 1));
	for (r = 0; r < nrows; r++)
	{
		HeapTuple	row = SPI_tuptable->vals[r];
		bool		isnull;

		due[n].window = DatumGetInt64(SPI_getbinval(row, SPI_tuptable->tupdesc, 1, &isnull));
		due[n].rows = DatumGetInt64(SPI_getbinval(row, SPI_tuptable->tupdesc, 2, &isnull));
		due[n++].value_bytes = DatumGetInt64(SPI_getbinval(row, SPI_tuptable->tupdesc, 3,
															&isnull));
	}
	SPI_freetuptable(SPI_tuptable);
	for (i = 0; i < npartitions; i++)
	{
		int64		lo = partitions[i].window * PROM_CHUNK_WINDOW_MS;
		Relation	rel;
		int64		disk;

		if (lo < entry->compacted_before || lo >= bound)
			continue;
		rel = relation_open(partitions[i].partition, NoLock);
		disk = (int64) RelationGetNumberOfBlocks(rel) * BLCKSZ;
		relation_close(rel, NoLock);
		due[n].window = partitions[i].window;
		due[n].rows = disk / HEAD_ROW_DISK_BYTES;
		due[n++].value_bytes = disk;
	}
	qsort(due, n, sizeof(PromHeadDueWindow), compare_due);
	/* a window of a partition and of late rows: one */
	*ndue = 0;
	for (i = 0; i < n; i++)
	{
		if (*ndue > 0 && due[*ndue - 1].window == due[i].window)
		{
			due[*ndue - 1].rows += due[i].rows;
			due[*ndue - 1].value_bytes += due[i].value_bytes;
		}
		else
			due[(*ndue)++] = due[i];
	}
	return due;
}

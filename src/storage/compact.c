/*-------------------------------------------------------------------------
 *
 * compact.c
 *	  prom_compact: the head rows of metrics in chunk storage moved into
 *	  Prometheus chunks (docs/chunk-storage.md).
 *
 * 1. A metric's head is compacted by 2-hour windows (multiples of 7,200,000
 *    ms since the Unix epoch), each whole window that ends at or before
 *    now() - promread.compact_after, oldest first.  A window's rows are
 *    read in one statement: its partition of m#head, read and left in place
 *    (head.c: the watermark, moved at the end to the first window not
 *    compacted, hides them, and a later compaction drops the partition
 *    once no snapshot predates the move), and its rows of m#late and of
 *    the head's default partition, deleted and returned (DELETE ...
 *    RETURNING in a CTE: they are few).  The rows are read through a
 *    cursor in batches in the order they lie in (no sort), gathered by
 *    series in a hash table, each series put in time order in C (it
 *    usually is already: remote write appends in time order), then cut
 *    into chunks, series by series in id order, the chunks inserted in
 *    batches; all in the caller's transaction, so that readers see each
 *    sample once, before or after, and an error or a crash loses nothing.
 *    The partitions of the windows compacted are locked first (SHARE, to
 *    the commit), in ascending order of OID, so that a writer either wrote
 *    before (its rows are read) or reads the moved watermark (head.c's
 *    header gives the argument); then, once every metric of the call is
 *    compacted, partitions are made ahead and dropped (PromHeadMaintain),
 *    under a lock held to the commit.
 * 2. A series' samples of a window, n of them, are cut into ceil(n / 120)
 *    chunks of sizes that differ by one at most.  Histograms go through
 *    histogram_chunk.c's chunker, which cuts where Prometheus cuts too (a
 *    change of kind or layout, a counter reset, a stale marker), each chunk
 *    of at most ceil(n / ceil(n / 120)) samples.  Values go by their bits,
 *    stale markers and NaN payloads included.
 * 3. Head rows of one series at one millisecond: the one whose value's
 *    bytes are greatest is kept (a float's 64 bits as an unsigned number, a
 *    histogram's stored form compared byte by byte, the longer greater when
 *    one is the other's start), the others are dropped, so that the result
 *    does not depend on the order rows were written in.
 * 4. Late samples: when a series has chunks in a window being compacted
 *    (head rows arrived after the window was compacted), those chunks are
 *    deleted and decoded, merged with the head's samples (a head sample
 *    replaces a chunk's sample of the same millisecond) and cut again.
 *    The series of a window are looked up so in one statement (series_id =
 *    ANY, by the index on (min_time / 2 h, series_id)).  The default
 *    partition's rows before the watermark (inserted by hand) are
 *    compacted so too.
 * 5. Compactions of one metric wait for each other: each takes SHARE
 *    UPDATE EXCLUSIVE on m#head, which writers (ROW EXCLUSIVE) and readers
 *    do not wait for, then reads the watermark the one before it left.
 *    A compaction runs in READ COMMITTED only, where each statement sees
 *    what the compaction before it committed.
 * 6. Each metric is compacted as its owner, in a security-restricted
 *    operation with search_path pg_catalog, pg_temp, as PostgreSQL runs
 *    maintenance (VACUUM, REFRESH MATERIALIZED VIEW): a superuser compacting
 *    every metric runs no code of their owners as itself.
 * 7. Memory: a window's samples are held at once, in a context reset per
 *    window, ROW_BYTES a float row (histograms: their stored bytes too).
 *    A window that would take more than maintenance_work_mem (as VACUUM and
 *    CREATE INDEX take, compaction being maintenance) is read in passes,
 *    each reading the rows of the series whose id modulo the passes is the
 *    pass's number: the rows of m#late and of the default partition are
 *    counted when the windows are listed, a window partition's estimated
 *    from its size (PromHeadDueWindows).  Each series' hash entry is left
 *    out of the estimate (counting series would take a sort), so a window
 *    of few rows a series goes over it.  The stored chunks of a pass's
 *    series (4.) are held as stored, each series' decoded only while it is
 *    compacted.  A series' decoding, merge and cut live in a context reset
 *    per series; rows come in batches of FETCH_ROWS and chunks go in
 *    batches of INSERT_CHUNKS.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/relation.h"
#include "access/xact.h"
#include "catalog/pg_class.h"
#include "catalog/pg_type.h"
#include "common/int.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "storage/lmgr.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/syscache.h"

#include "histogram/histogram.h"
#include "protocol/protocol.h"
#include "storage/storage.h"
#include "compaction.h"

PG_FUNCTION_INFO_V1(prom_compact);

/*
 * A head row's bytes while its window is compacted (a float's sample and the
 * room its array grows into), and the most passes a window is read in (7.).
 */
#define ROW_BYTES			(2 * sizeof(PromSample))
#define MAX_PASSES			1024

/*---- Metrics ----*/

/* Prepare a statement of the compaction, its arguments of the types given. */
static SPIPlanPtr
prepare(const char *sql, int nargs, Oid *types)
{
	SPIPlanPtr	plan = SPI_prepare(sql, nargs, types);

	if (plan == NULL)
		elog(ERROR, "could not prepare \"%s\": %s", sql,
			 SPI_result_code_string(SPI_result));
	return plan;
}

/* A relation's owner. */
static Oid
relation_owner(Oid relid)
{
	HeapTuple	tuple = SearchSysCache1(RELOID, ObjectIdGetDatum(relid));
	Oid			owner;

	if (!HeapTupleIsValid(tuple))
		elog(ERROR, "cache lookup failed for relation %u", relid);
	owner = ((Form_pg_class) GETSTRUCT(tuple))->relowner;
	ReleaseSysCache(tuple);
	return owner;
}

/*
 * Lock the partitions of the head that the windows before bound (ms) read,
 * from the watermark on, in ascending order of OID, the order writers lock
 * every partition in (SHARE, to the commit: head.c's header); returns the
 * head's window partitions and its default one.
 */
static void
lock_windows(Compaction *c, int64 bound, PromHeadWindow **windows, int *nwindows,
			 Oid *default_partition)
{
	Relation	head_rel = relation_open(c->entry->head, NoLock);
	Oid		   *relids;
	int			n = 0;
	int			i;

	PromHeadWindows(head_rel, windows, nwindows, default_partition);
	relation_close(head_rel, NoLock);
	relids = palloc(sizeof(Oid) * Max(*nwindows, 1));
	for (i = 0; i < *nwindows; i++)
	{
		int64		lo = (*windows)[i].window * PROM_CHUNK_WINDOW_MS;

		if (lo >= c->entry->compacted_before && lo < bound)
			relids[n++] = (*windows)[i].partition;
	}
	qsort(relids, n, sizeof(Oid), oid_cmp);
	for (i = 0; i < n; i++)
		LockRelationOid(relids[i], ShareLock);
}

/*
 * Prepare the statement of a window's rows (1. above): those of m#late and
 * of the default partition, deleted, and those of the window's partition
 * (InvalidOid: none, or below the watermark), read; $1 and $2 the window,
 * $3 the passes and $4 the pass.
 */
static SPIPlanPtr
prepare_window(Compaction *c, Oid partition, Oid default_partition)
{
	Oid			types[4] = {INT8OID, INT8OID, INT8OID, INT8OID};
	StringInfoData sql;
	int			i;

	initStringInfo(&sql);
	for (i = 0; i < 2; i++)
	{
		Oid			relid = i == 0 ? c->entry->late : default_partition;

		if (!OidIsValid(relid))
			continue;
		appendStringInfo(&sql, "%s d%d AS (DELETE FROM %s WHERE t >= $1 AND t < $2"
						 " AND abs(series_id %% $3) = $4 RETURNING series_id, t, value)",
						 i == 0 ? "WITH" : ",", i, PromQuotedRelationName(relid));
	}
	appendStringInfoString(&sql, " SELECT series_id, t, value FROM d0");
	if (OidIsValid(default_partition))
		appendStringInfoString(&sql, " UNION ALL SELECT series_id, t, value FROM d1");
	if (OidIsValid(partition))
		appendStringInfo(&sql, " UNION ALL SELECT series_id, t, value FROM %s"
						 " WHERE abs(series_id %% $3) = $4",
						 PromQuotedRelationName(partition));
	return prepare(sql.data, 4, types);
}

/* The end of the windows a compaction at now_ms compacts (ms). */
static int64
compaction_cutoff(int64 now_ms)
{
	int64		cutoff;

	if (pg_sub_s64_overflow(now_ms, promread_compact_after, &cutoff))
		cutoff = PG_INT64_MIN;
	return cutoff;
}

/*
 * Compact a metric's head within SPI, its retention carried out first;
 * returns the chunks written.  entry is read after the head's lock.
 */
static int64
compact_metric(const PromStorageEntry *entry, int64 now_ms)
{
	Compaction *c = palloc0(sizeof(Compaction));
	char	   *head = PromQuotedRelationName(entry->head);
	char	   *chunks = PromQuotedRelationName(entry->chunks);
	int64		cutoff;
	int64		bound;
	Oid			types[5] = {INT8OID, INT8OID, INT8OID, INT8OID, INT8OID};
	PromHeadWindow *partitions;
	int			npartitions;
	Oid			default_partition;
	PromHeadDueWindow *due;
	int			ndue;
	int			i;
	int			pass;

	if (!OidIsValid(entry->late))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("metric \"%s\" has no table of late samples", entry->metric),
				 errdetail("Its layout was not made by prom_create_metric or remote write.")));
	c->entry = entry;
	c->histograms = PromIsHistogramType(get_atttype(entry->head,
													get_attnum(entry->head, "value")));
	c->xor_buf = palloc(PromXorChunkBound(PROM_CHUNK_SAMPLES));
	PromApplyRetention(entry, chunks, head, now_ms);

	/* the windows that end at or before now() - promread.compact_after */
	cutoff = compaction_cutoff(now_ms);
	if (pg_mul_s64_overflow(PromFloorDiv(cutoff, PROM_CHUNK_WINDOW_MS), PROM_CHUNK_WINDOW_MS,
							&bound))
		return 0;

	/*
	 * The metric's lock, which moving the watermark takes, first: a writer
	 * adding a label column holds it before it locks its windows'
	 * partitions, so taking it after ours would deadlock
	 */
	if (bound > entry->compacted_before)
		PromCatalogLockForWrite(entry->metric);
	lock_windows(c, bound, &partitions, &npartitions, &default_partition);

	due = PromHeadDueWindows(entry, bound, partitions, npartitions, default_partition,
							 &ndue);
	types[0] = INT8ARRAYOID;
	/* the index's keys of [$2, $3): SQL's division truncates toward zero */
	c->probe_plan = prepare(psprintf("WITH d AS (DELETE FROM %s WHERE series_id = ANY ($1) AND min_time >= $2 AND min_time < $3 "
									 "AND (min_time OPERATOR(pg_catalog./) %lld) = ANY (ARRAY[$2 / %lld, ($3 - 1) / %lld]) "
									 "RETURNING series_id, min_time, encoding, chunk) "
									 "SELECT series_id, encoding, chunk FROM d ORDER BY series_id, min_time",
									 chunks, (long long) PROM_CHUNK_WINDOW_MS,
									 (long long) PROM_CHUNK_WINDOW_MS,
									 (long long) PROM_CHUNK_WINDOW_MS), 3, types);
	types[0] = types[1] = types[2] = INT8ARRAYOID;
	types[3] = INT2ARRAYOID;
	types[4] = BYTEAARRAYOID;
	c->insert_plan = prepare(psprintf("INSERT INTO %s (series_id, min_time, max_time, encoding, chunk) "
									  "SELECT * FROM unnest($1, $2, $3, $4, $5)",
									  chunks), 5, types);
	c->window_cxt = AllocSetContextCreate(CurrentMemoryContext, "promread compaction window",
										  ALLOCSET_DEFAULT_SIZES);
	c->series_cxt = AllocSetContextCreate(CurrentMemoryContext, "promread compaction series",
										  ALLOCSET_DEFAULT_SIZES);
	c->batch_cxt = AllocSetContextCreate(CurrentMemoryContext, "promread compaction chunks",
										 ALLOCSET_DEFAULT_SIZES);
	for (i = 0; i < ndue; i++)
	{
		Oid			partition = InvalidOid;
		/* 7. above: histograms are held as stored, floats in PromSamples */
		int64		bytes = due[i].rows * (int64) ROW_BYTES +
			(c->histograms ? due[i].value_bytes : 0);
		int			npasses = (int) Min(bytes / ((int64) maintenance_work_mem * 1024) + 1,
										MAX_PASSES);

		/* the first window of int64's range starts at its start */
		if (pg_mul_s64_overflow(due[i].window, PROM_CHUNK_WINDOW_MS, &c->lo))
			c->lo = PG_INT64_MIN;
		c->hi = (due[i].window + 1) * PROM_CHUNK_WINDOW_MS;
		/* a partition below the watermark holds rows compacted already */
		if (c->lo >= entry->compacted_before)
			partition = PromHeadWindowPartition(partitions, npartitions, due[i].window);
		c->window_plan = prepare_window(c, partition, default_partition);
		for (pass = 0; pass < npasses; pass++)
			PromCompactPass(c, npasses, pass);
		SPI_freeplan(c->window_plan);
	}
	MemoryContextDelete(c->window_cxt);
	MemoryContextDelete(c->series_cxt);
	MemoryContextDelete(c->batch_cxt);

	/* the rows read of the partitions before bound are in chunks now */
	if (bound > entry->compacted_before)
	{
		PromCatalogLockForWrite(entry->metric);
		if (!PromStorageCatalogSetCompactedBefore(entry->metric, bound))
			elog(ERROR, "metric \"%s\" lost its storage entry", entry->metric);
	}
	return c->written;
}

/*
 * Make and drop a compacted metric's head partitions (PromHeadMaintain),
 * entry as its compaction read it; returns 0.
 */
static int64
maintain_head(const PromStorageEntry *entry, int64 now_ms)
{
	PromHeadMaintain(entry, compaction_cutoff(now_ms), now_ms);
	return 0;
}

/*
 * Run work (compact_metric or maintain_head) on a metric as its owner, the
 * owner of its view (6. above), connected to SPI; returns what work does.
 */
static int64
as_owner(const PromStorageEntry *entry, int64 now_ms,
		 int64 (*work) (const PromStorageEntry *entry, int64 now_ms))
{
	Oid			save_userid;
	int			save_sec_context;
	int			save_nestlevel;
	int64		result;

	GetUserIdAndSecContext(&save_userid, &save_sec_context);
	SetUserIdAndSecContext(relation_owner(entry->relation),
						   save_sec_context | SECURITY_LOCAL_USERID_CHANGE |
						   SECURITY_RESTRICTED_OPERATION);
	save_nestlevel = NewGUCNestLevel();
	(void) set_config_option("search_path", "pg_catalog, pg_temp",
							 PGC_USERSET, PGC_S_SESSION, GUC_ACTION_SAVE,
							 true, 0, false);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	result = work(entry, now_ms);
	SPI_finish();
	AtEOXact_GUC(false, save_nestlevel);
	SetUserIdAndSecContext(save_userid, save_sec_context);
	return result;
}

/*
 * Compact a metric as its owner after taking the head's lock, adding its
 * entry as read then to *compacted; returns the chunks written.
 */
static int64
compact_as_owner(const PromStorageEntry *entry, int64 now_ms, List **compacted)
{
	PromStorageEntry *fresh;

	LockRelationOid(entry->head, ShareUpdateExclusiveLock);
	if (!SearchSysCacheExists1(RELOID, ObjectIdGetDatum(entry->head)) ||
		!SearchSysCacheExists1(RELOID, ObjectIdGetDatum(entry->relation)))
		return 0;				/* dropped while we waited */
	/* the watermark as the compaction before us left it */
	fresh = PromStorageLookup(entry->metric);
	if (fresh == NULL || fresh->head != entry->head)
		return 0;
	*compacted = lappend(*compacted, fresh);
	return as_owner(fresh, now_ms, compact_metric);
}

/*
 * prom_compact(metric text DEFAULT NULL) RETURNS bigint: compact a metric,
 * or every metric of chunk storage the caller owns; returns the chunks
 * written.
 */
Datum
prom_compact(PG_FUNCTION_ARGS)
{
	char	   *metric = PG_ARGISNULL(0) ? NULL : text_to_cstring(PG_GETARG_TEXT_PP(0));
	int64		now_ms = PromTimestampToMs(GetCurrentTransactionStartTimestamp());
	List	   *entries;
	List	   *compacted = NIL;
	ListCell   *lc;
	int64		written = 0;

	PreventCommandIfReadOnly("prom_compact()");
	if (IsolationUsesXactSnapshot())
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_TRANSACTION_STATE),
				 errmsg("prom_compact cannot run in a REPEATABLE READ or SERIALIZABLE transaction"),
				 errdetail("Each of its statements must see what a compaction before it committed."),
				 errhint("Call it in a READ COMMITTED transaction.")));
	entries = PromCompactEntries(metric);
	foreach(lc, entries)
	{
		PromStorageEntry *entry = lfirst(lc);

		if (metric != NULL)
			PromCompactCheckOwner(entry);
		else if (!PromCompactOwns(entry) || !OidIsValid(entry->late))
			continue;
		written += compact_as_owner(entry, now_ms, &compacted);
	}

	/*
	 * Head partitions are made and dropped last, once every metric is
	 * compacted, so that the lock that takes blocks each metric's readers
	 * and writers for as short a time as the transaction allows.
	 */
	foreach(lc, compacted)
	{
		PromStorageEntry *entry = lfirst(lc);

		/* its view, whose owner makes and drops them, dropped meanwhile */
		LockRelationOid(entry->relation, AccessShareLock);
		if (SearchSysCacheExists1(RELOID, ObjectIdGetDatum(entry->relation)))
			(void) as_owner(entry, now_ms, maintain_head);
	}
	PG_RETURN_INT64(written);
}

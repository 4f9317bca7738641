/*-------------------------------------------------------------------------
 *
 * scan_chunks.c
 *	  Reading a metric in chunk storage (docs/chunk-storage.md): its series
 *	  table with the matchers, then the chunks and head rows of the series
 *	  selected.
 *
 * A chunk metric's registered relation is a view that turns every chunk
 * into rows.  A read goes to the tables behind it instead:
 *
 * 1. prom_storage_catalog names the metric's series, chunks and head
 *    tables; its entry counts while the metric is registered to the view.
 *    The reader looks it up (PromMetricStorage) and gives it to the scan.
 *    The view is locked and checked as a row metric's relation is (scan.c),
 *    then the three tables.  The registered label columns are read from the
 *    series table, and every matcher becomes a predicate of it
 *    (scan_predicates.c, as for a relation whose rows are not stored): a
 *    series row is read once a read, so SQL decides a matcher once a
 *    series.
 * 2. The caller reads the three tables with its own rights, and row-level
 *    security on the series table applies, since the executor reads it.
 *    The rights are checked before the first statement runs, so that a
 *    metric whose tables the caller may not read fails a query that names
 *    it and is skipped by one that does not, before any sample is added,
 *    as a row metric is (PromScanRunSkippingUnreadable).
 * 3. Three statements run, each on one table, so that none is a join to
 *    plan, and the series' labels are read once, not once a chunk:
 *      - the series statement reads the id and label columns of the series
 *        the matchers select.  Its rows become a map from id to label
 *        values (series_map.c), held in an arena that promread.max_memory
 *        bounds.  When it selects no series, nothing else runs (nor is
 *        built): a read of a series that does not exist costs one small
 *        statement;
 *      - the chunk statement reads the chunks that reach into [start,
 *        end]: max_time >= start AND min_time <= end AND min_time > start
 *        - 2 h.  A chunk lies within one of Prometheus's 2-hour windows, so
 *        the last bound is implied, and lets the planner prune m#chunks'
 *        partitions of min_time from below too;
 *      - the head statement reads the head rows with start <= t <= end:
 *        those of m#head from the watermark on (compacted_before, as the
 *        caller's snapshot sees it) or of a window without a partition
 *        before it (the windows with one have their rows in chunks: head.c;
 *        the others are in the default partition, never compacted;
 *        tableoid would say so too, but needs SELECT on the whole table),
 *        then every row of m#late.
 *    When the matchers are predicates and they select at most
 *    MAX_LISTED_SERIES series, the chunk and head statements also take
 *    series_id = ANY(the ids), and the chunk statement the windows of the
 *    range as keys of m#chunks' index, (min_time / 2 h) = ANY(the
 *    windows): the planner then searches the index for each window and
 *    series (and each head partition's B-tree on (series_id, t) for each
 *    series) rather than reading the range's every row.  Otherwise (no
 *    matcher past the name, or more series, whose long list the planner
 *    would estimate element by element) they read the range, and a row
 *    whose series the map does not hold (one the matchers or row-level
 *    security leave out) is skipped.
 *    Each row's labels are its series' in the map: the previous row's
 *    series is tried first, then the map's hash.  All three run read-only
 *    in the caller's snapshot: a compaction that commits between them
 *    (the watermark moved, chunks written) is seen by none, and each
 *    sample is read once.  Their text depends on the relations, the
 *    columns and the shapes of the matchers only, so that their plans are
 *    cached (scan_plans.c).  The chunk and head statements of at most
 *    MAX_GENERIC_PLAN_SERIES series listed are planned once (a generic
 *    plan), since planning them costs more than running them: the plan
 *    searches the indexes series by series, and constants bound the time
 *    to the range's UTC days, so that it holds (and locks) only the
 *    partitions of those days, and the reads of a day share it.  The
 *    series statement is planned once too, from the statistics, unless a
 *    matcher is a pattern (a regex not a literal set), whose prefix only a
 *    plan for its value can give an index.  Every other statement is
 *    planned for each read's values.
 * 4. The chunk statement runs first.  For a STREAMED_XOR_CHUNKS answer
 *    (a set that keeps chunks, PromSeriesSetKeepChunks) each chunk is
 *    added to its series as it is (PromSeriesSetAddChunk): its bytes,
 *    encoding and times, its sample count read from its first two bytes
 *    for the sample limit, nothing decoded; the encoder (chunk_encode.c)
 *    sends it whole, as Prometheus's server sends its chunks, and decodes
 *    and merges only the chunks that overlap another or head samples of
 *    their series.  Otherwise each chunk is decoded in C into one buffer,
 *    reused from chunk to chunk, and its samples in [start, end] are added
 *    to their series as one run (PromSeriesSetAddRun); a histogram chunk's
 *    histograms are decoded in a context reset after each chunk and copied
 *    into the set.  Then the head statement's rows go into a layout of
 *    their own, made after the chunks': the set's finish merges series of
 *    equal labels in the order they were made (order.c), so a series' head
 *    samples come after all of its chunks' samples, even when its chunks
 *    came apart and made it twice (group.c), and a head sample replaces a
 *    chunk's sample of the same millisecond when the engine sorts the
 *    series' samples (it keeps the last of equal times), as compaction's
 *    merge does.  So the chunks need no order: the statement has no sort
 *    (kept chunks are put in time order per series when the set is
 *    finished).
 * 5. A chunk whose encoding is not the metric's (XOR for a float metric, a
 *    histogram encoding for a histogram metric), that does not decode, or,
 *    kept as it is, whose header counts no sample, is an error (XX001)
 *    naming its series and time.
 *
 * A chunk metric's relation is a view, never a foreign table: shards
 * (shards.c) do not apply.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/relation.h"
#include "catalog/pg_type.h"
#include "histogram/histogram.h"
#include "miscadmin.h"
#include "phases.h"
#include "protocol/protocol.h"
#include "scan_internal.h"
#include "storage/lmgr.h"
#include "utils/acl.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"

/* Columns of the chunk statement's rows. */
#define CHUNK_COLUMNS		5

/*
 * Selected series past this many are not listed in the chunk and head
 * statements: the planner estimates = ANY over a constant array element by
 * element, and reading the range is as cheap by then.
 */
#define MAX_LISTED_SERIES	4096

/*
 * Listed series past this many are read with a plan made for the call's
 * values: the generic plan searches the index for each series listed
 * (build_statements), where a plan for many might read whole partitions.
 */
#define MAX_GENERIC_PLAN_SERIES	256

/*
 * Windows past this many (85 days) are not listed in the chunk statement:
 * the index would be searched windows times series times.
 */
#define MAX_LISTED_WINDOWS	1024

/* Receives the series statement's rows (series_id, labels) into a map. */
typedef struct SeriesReceiver
{
	DestReceiver pub;
	SeriesMap  *map;
	const MetricScan *scan;
} SeriesReceiver;

/* Receives the chunk statement's rows and adds their samples to the set. */
typedef struct ChunkReceiver
{
	DestReceiver pub;
	PromSeriesSet *set;
	PromLayout *layout;
	const ChunkScan *cs;
	PromSample *buffer;			/* an XOR chunk's samples, reused */
	int			capacity;
	MemoryContext context;		/* the buffer's, the receiver's own */
	MemoryContext chunk_context;	/* a chunk's detoasting and histograms,
									 * reset after each chunk */
} ChunkReceiver;

/* Receives the head statement's rows (series_id, t, value) into the set. */
typedef struct HeadReceiver
{
	DestReceiver pub;
	PromSeriesSet *set;
	PromLayout *layout;
	const ChunkScan *cs;
} HeadReceiver;

/*
 * Lock a table of a metric's storage until the transaction ends; false when
 * it was dropped since the storage catalog was read.
 */
static bool
lock_storage_table(Oid relid)
{
	LockRelationOid(relid, AccessShareLock);
	if (SearchSysCacheExists1(RELOID, ObjectIdGetDatum(relid)))
		return true;
	UnlockRelationOid(relid, AccessShareLock);
	return false;
}

/*
 * The windows of a head (locked) whose partitions lie before the watermark,
 * as an int8[] (their rows are in chunks: head.c).
 */
static Datum
compacted_windows(Oid head, int64 compacted_before)
{
	Relation	rel = relation_open(head, NoLock);
	PromHeadWindow *windows;
	int			nwindows;
	Oid			default_partition;
	Datum	   *found;
	int			n = 0;
	int			i;

	PromHeadWindows(rel, &windows, &nwindows, &default_partition);
	relation_close(rel, NoLock);
	found = palloc(sizeof(Datum) * Max(nwindows, 1));
	for (i = 0; i < nwindows; i++)
		if (windows[i].window < PromFloorDiv(compacted_before, PROM_CHUNK_WINDOW_MS) &&
			compacted_before != PG_INT64_MIN)
			found[n++] = Int64GetDatum(windows[i].window);
	return PointerGetDatum(construct_array(found, n, INT8OID, 8, FLOAT8PASSBYVAL,
										   TYPALIGN_DOUBLE));
}

/*
 * Plan the read of a metric in chunk storage for a query: lock its view and
 * tables, read their columns, and build the series statement with the
 * matchers (the chunk and head statements follow the series it selects:
 * PromChunkScanSelectSeries).  False when there is nothing to read (a
 * relation gone, the registration skipped, or no series can match).
 */
bool
PromChunkScanPrepare(const PromMetricEntry *entry,
					 const PromStorageEntry *storage, const PromQuery *query,
					 bool named, ChunkScan *cs)
{
	MetricScan *scan = &cs->scan;
	PromMetricEntry *series_entry = palloc(sizeof(PromMetricEntry));
	Oid			type;
	int			i;

	memset(cs, 0, sizeof(ChunkScan));
	cs->storage = *storage;
	cs->start_ms = query->start_ms;
	cs->end_ms = query->end_ms;
	if (!PromScanLockRelation(entry, named) ||
		!lock_storage_table(storage->series) ||
		!lock_storage_table(storage->chunks) ||
		!lock_storage_table(storage->head) ||
		(OidIsValid(storage->late) && !lock_storage_table(storage->late)))
		return false;

	/* label columns are the series table's; matchers read its values */
	*series_entry = *entry;
	series_entry->relid = storage->series;
	scan->entry = series_entry;
	scan->nlabels = entry->nlabels + (entry->overflow_column != NULL);
	scan->labels = palloc(sizeof(MetricColumn) * Max(scan->nlabels, 1));
	scan->overflow = entry->overflow_column != NULL ? entry->nlabels : -1;
	if (!PromScanReadLabelColumns(entry, storage->series, named, scan->labels) ||
		!PromScanReadColumn(entry, storage->head, "t", named, &scan->time_column) ||
		!PromScanReadColumn(entry, storage->head, "value", named,
							&scan->value_column))
		return false;
	if (!PromScanCheckColumnType(entry, named, &scan->time_column, "time",
								 scan->time_column.type == INT8OID))
		return false;
	type = scan->value_column.type;
	if (!PromScanCheckColumnType(entry, named, &scan->value_column, "value",
								 type == FLOAT8OID || PromIsHistogramType(type)))
		return false;
	cs->histograms = type != FLOAT8OID;

	initStringInfo(&scan->stmt.sql);
	appendStringInfoString(&scan->stmt.sql, "SELECT series_id");
	for (i = 0; i < scan->nlabels; i++)
		appendStringInfo(&scan->stmt.sql, ", %s",
						 quote_identifier(scan->labels[i].name));
	appendStringInfo(&scan->stmt.sql, " FROM %s WHERE true",
					 PromQuotedRelationName(storage->series));
	scan->predicates = scan->stmt.sql.len;
	if (!PromScanAddMatchers(scan, query, false))
		return false;
	scan->stmt.planning = scan->pattern_predicates ? SCAN_PLAN_PER_CALL : SCAN_PLAN_ONCE;
	return true;
}

/* Take one row of the series statement: series_id, then the labels. */
static bool
series_receive(TupleTableSlot *slot, DestReceiver *self)
{
	SeriesReceiver *receiver = (SeriesReceiver *) self;

	slot_getallattrs(slot);
	if (slot->tts_isnull[0])
		return true;			/* no series a chunk could name */
	PromSeriesMapAdd(receiver->map, DatumGetInt64(slot->tts_values[0]),
				   slot->tts_values + 1, slot->tts_isnull + 1);
	return true;
}

/*
 * Report that a statement's rows are not those its receiver was built for:
 * the tables were locked before their columns were read, so this is a
 * defence against reading a pointer made of an integer.
 */
static pg_attribute_noreturn() void
report_changed(const MetricScan *scan)
{
	ereport(ERROR,
			(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			 errmsg("relation of metric \"%s\" changed while it was read",
					scan->entry->metric),
			 errhint("Retry the read.")));
}

/* Check, before the first row, that the rows are series_id and the labels. */
static void
series_startup(DestReceiver *self, int operation, TupleDesc typeinfo)
{
	SeriesReceiver *receiver = (SeriesReceiver *) self;
	const MetricScan *scan = receiver->scan;
	bool		fits = typeinfo->natts == scan->nlabels + 1 &&
		TupleDescAttr(typeinfo, 0)->atttypid == INT8OID;
	int			i;

	for (i = 0; fits && i < scan->nlabels; i++)
		fits = TupleDescAttr(typeinfo, i + 1)->atttypid == scan->labels[i].type;
	if (!fits)
		report_changed(scan);
}

/* Nothing to do at the end of a statement's rows. */
static void
receiver_shutdown(DestReceiver *self)
{
}

static void
receiver_destroy(DestReceiver *self)
{
}

/* Set a receiver's functions other than the one that takes a row. */
static void
receiver_init(DestReceiver *receiver, ReceiveSlotFn receive,
			  void (*startup) (DestReceiver *self, int operation,
							   TupleDesc typeinfo))
{
	receiver->receiveSlot = receive;
	receiver->rStartup = startup;
	receiver->rShutdown = receiver_shutdown;
	receiver->rDestroy = receiver_destroy;
	receiver->mydest = DestNone;
}

/*
 * Give the chunk statement the keys of m#chunks' index, (min_time / 2 h,
 * series_id), of the chunks with after < min_time <= end: their windows,
 * as SQL's division (toward zero) numbers them, each searched with each
 * series listed.  Not when there are too many of them.
 */
static void
add_window_keys(ScanStatement *stmt, int64 after, int64 end)
{
	int64		first;
	int64		last;
	Datum	   *keys;
	int			n;

	if (after >= end)
		return;
	first = (after + 1) / PROM_CHUNK_WINDOW_MS;
	last = end / PROM_CHUNK_WINDOW_MS;
	if (last - first >= MAX_LISTED_WINDOWS)
		return;
	n = (int) (last - first + 1);
	keys = palloc(sizeof(Datum) * n);
	for (int i = 0; i < n; i++)
		keys[i] = Int64GetDatum(first + i);
	stmt->param_types[stmt->nparams] = INT8ARRAYOID;
	stmt->param_values[stmt->nparams] =
		PointerGetDatum(construct_array(keys, n, INT8OID, sizeof(int64), true,
										TYPALIGN_DOUBLE));
	stmt->nparams++;
	appendStringInfo(&stmt->sql,
					 " AND (min_time OPERATOR(pg_catalog./) " INT64_FORMAT
					 ") OPERATOR(pg_catalog.=) ANY ($%d)",
					 PROM_CHUNK_WINDOW_MS, stmt->nparams);
}

/*
 * Keep the head statement to the rows not compacted yet (step 3 of the
 * header comment): those of m#head from the watermark on, as the caller's
 * snapshot sees it, or of a window without a partition before it; then
 * m#late's rows (of the series listed, when listed).
 */
static void
add_head_watermark(ChunkScan *cs, bool listed)
{
	ScanStatement *head = &cs->head;
	int64		watermark =
		PromStorageCompactedBefore(cs->storage.metric, cs->storage.head,
								   ActiveSnapshotSet() ? GetActiveSnapshot() :
								   GetTransactionSnapshot());
	int			first = head->nparams + 1;

	head->param_types[head->nparams] = INT8OID;
	head->param_values[head->nparams++] = Int64GetDatum(watermark);
	head->param_types[head->nparams] = INT8ARRAYOID;
	head->param_values[head->nparams++] = compacted_windows(cs->storage.head, watermark);
	appendStringInfo(&head->sql,
					 " AND (t OPERATOR(pg_catalog.>=) $%d"
					 " OR t OPERATOR(pg_catalog./) " INT64_FORMAT
					 " OPERATOR(pg_catalog.-) (t OPERATOR(pg_catalog.%%) " INT64_FORMAT
					 " OPERATOR(pg_catalog.<) 0)::pg_catalog.int4"
					 " OPERATOR(pg_catalog.<>) ALL ($%d))",
					 first, PROM_CHUNK_WINDOW_MS, PROM_CHUNK_WINDOW_MS, first + 1);
	if (!OidIsValid(cs->storage.late))
		return;
	appendStringInfo(&head->sql,
					 " UNION ALL SELECT series_id, t, value FROM %s"
					 " WHERE t OPERATOR(pg_catalog.>=) $1"
					 " AND t OPERATOR(pg_catalog.<=) $2",
					 PromQuotedRelationName(cs->storage.late));
	if (listed)
		appendStringInfoString(&head->sql,
							   " AND series_id OPERATOR(pg_catalog.=) ANY ($4)");
}

/*
 * Bound a generic statement's column by constants, [low, high] widened to
 * whole UTC days: the plan, made once for any values, then holds only the
 * partitions of those days, which alone it locks and opens when it runs,
 * and the reads of a day share it.  The statement's parameters bound the
 * column exactly.
 */
static void
add_plan_time_bounds(ScanStatement *stmt, const char *column, int64 low, int64 high)
{
	if (low > PG_INT64_MIN + PROM_DAY_MS)
		appendStringInfo(&stmt->sql, " AND %s OPERATOR(pg_catalog.>=) " INT64_FORMAT,
						 column, PromFloorDiv(low, PROM_DAY_MS) * PROM_DAY_MS);
	if (high < PG_INT64_MAX - PROM_DAY_MS)
		appendStringInfo(&stmt->sql, " AND %s OPERATOR(pg_catalog.<) " INT64_FORMAT,
						 column, (PromFloorDiv(high, PROM_DAY_MS) + 1) * PROM_DAY_MS);
}

/*
 * Build the chunk and head statements for the series selected (step 3 of
 * the header comment): the series listed when the matchers were predicates
 * and selected few enough, for explain also when they selected none.
 * Statements that list few series are planned once (generic): their plan,
 * an index search a series, costs more to make than to run.
 */
static void
build_statements(ChunkScan *cs)
{
	const MetricScan *scan = &cs->scan;
	SeriesMap  *map = cs->series;
	bool		listed = scan->stmt.sql.len > scan->predicates &&
		PromSeriesMapCount(map) <= MAX_LISTED_SERIES;
	bool		generic = listed && PromSeriesMapCount(map) <= MAX_GENERIC_PLAN_SERIES;
	ScanStatement *stmts[2] = {&cs->chunks, &cs->head};
	int64		after = cs->start_ms < PG_INT64_MIN + PROM_CHUNK_WINDOW_MS ?
		PG_INT64_MIN : cs->start_ms - PROM_CHUNK_WINDOW_MS;
	int			k;

	initStringInfo(&cs->chunks.sql);
	appendStringInfo(&cs->chunks.sql,
					 "SELECT series_id, min_time, max_time, encoding, chunk FROM %s"
					 " WHERE max_time OPERATOR(pg_catalog.>=) $1"
					 " AND min_time OPERATOR(pg_catalog.<=) $2"
					 " AND min_time OPERATOR(pg_catalog.>) $3",
					 PromQuotedRelationName(cs->storage.chunks));
	initStringInfo(&cs->head.sql);
	appendStringInfo(&cs->head.sql,
					 "SELECT series_id, t, value FROM %s"
					 " WHERE t OPERATOR(pg_catalog.>=) $1"
					 " AND t OPERATOR(pg_catalog.<=) $2",
					 PromQuotedRelationName(cs->storage.head));

	/* $1 start, $2 end, $3 the bound of the chunks' min_time below */
	for (k = 0; k < 2; k++)
	{
		ScanStatement *stmt = stmts[k];

		stmt->nparams = 3;
		stmt->param_types[0] = stmt->param_types[1] = stmt->param_types[2] = INT8OID;
		stmt->param_values[0] = Int64GetDatum(cs->start_ms);
		stmt->param_values[1] = Int64GetDatum(cs->end_ms);
		stmt->param_values[2] = Int64GetDatum(after);
		stmt->planning = generic ? SCAN_PLAN_ONCE_BY_INDEX : SCAN_PLAN_PER_CALL;
	}
	if (listed)
	{
		Datum		array = PromSeriesMapIds(map);
		for (k = 0; k < 2; k++)
		{
			stmts[k]->param_types[3] = INT8ARRAYOID;
			stmts[k]->param_values[3] = array;
			stmts[k]->nparams = 4;
			appendStringInfoString(&stmts[k]->sql,
								   " AND series_id OPERATOR(pg_catalog.=) ANY ($4)");
		}
		add_window_keys(&cs->chunks, after, cs->end_ms);
	}
	if (generic)
	{
		add_plan_time_bounds(&cs->chunks, "min_time", after + 1, cs->end_ms);
		add_plan_time_bounds(&cs->head, "t", cs->start_ms, cs->end_ms);
	}
	add_head_watermark(cs, listed);
}

/*
 * Check that the caller may read a table of the metric's storage, as the
 * executor will: SELECT on the table, or on each of its columns.
 */
static void
check_table_rights(Oid relid)
{
	Oid			user = GetUserId();

	if (pg_class_aclcheck(relid, user, ACL_SELECT) != ACLCHECK_OK &&
		pg_attribute_aclcheck_all(relid, user, ACL_SELECT,
								  ACLMASK_ALL) != ACLCHECK_OK)
		aclcheck_error(ACLCHECK_NO_PRIV, OBJECT_TABLE, get_rel_name(relid));
}

/*
 * Check the caller's rights on the three tables, then run the series
 * statement into a map of the series it selects (cs->series) and build the
 * chunk and head statements for them, when it selects some or explaining
 * says to; the number of series selected.  The caller is connected to SPI
 * and frees the map (PromChunkScanFree).
 */
int64
PromChunkScanSelectSeries(ChunkScan *cs, bool explaining)
{
	SeriesReceiver receiver;
	SPIExecuteOptions options;

	check_table_rights(cs->storage.series);
	check_table_rights(cs->storage.chunks);
	check_table_rights(cs->storage.head);
	if (OidIsValid(cs->storage.late))
		check_table_rights(cs->storage.late);

	memset(&receiver, 0, sizeof(receiver));
	receiver_init(&receiver.pub, series_receive, series_startup);
	receiver.scan = &cs->scan;
	receiver.map = cs->series = PromSeriesMapCreate(&cs->scan);
	memset(&options, 0, sizeof(options));
	options.params = PromScanStatementParams(&cs->scan.stmt);
	options.read_only = true;
	options.dest = &receiver.pub;
	PromScanRun(PromScanCachedPlan(&cs->scan.stmt), cs->scan.stmt.planning,
				&options, NULL);
	PromSeriesMapIndex(cs->series);
	if (explaining || PromSeriesMapCount(cs->series) > 0)
		build_statements(cs);
	return PromSeriesMapCount(cs->series);
}

/* Free what PromChunkScanSelectSeries made. */
void
PromChunkScanFree(ChunkScan *cs)
{
	if (cs->series != NULL)
		PromSeriesMapFree(cs->series);
	cs->series = NULL;
}

/*
 * Report a chunk that cannot be read: its table, series and time, and why
 * (a phrase that follows "the chunk").
 */
static pg_attribute_noreturn() void
report_bad_chunk(const ChunkReceiver *receiver, TupleTableSlot *slot,
				 const char *reason)
{
	ereport(ERROR,
			(errcode(ERRCODE_DATA_CORRUPTED),
			 errmsg("invalid chunk in table \"%s\" of metric \"%s\"",
					get_rel_name(receiver->cs->storage.chunks),
					receiver->cs->scan.entry->metric),
			 errdetail("The chunk of series %lld from %lld ms %s.",
					   slot->tts_isnull[0] ? 0 :
					   (long long) DatumGetInt64(slot->tts_values[0]),
					   slot->tts_isnull[1] ? 0 :
					   (long long) DatumGetInt64(slot->tts_values[1]),
					   reason)));
}

/*
 * Keep one chunk of the chunk statement as it is, for a set that keeps
 * chunks: its header read for its sample count, nothing decoded.
 */
static void
keep_chunk(ChunkReceiver *receiver, TupleTableSlot *slot,
		   const PromSelectedSeries *series, int encoding, bytea *chunk)
{
	const uint8 *data = (const uint8 *) VARDATA_ANY(chunk);
	PromStoredChunk stored;

	stored.len = VARSIZE_ANY_EXHDR(chunk);
	stored.nsamples = stored.len >= 2 ? (data[0] << 8) | data[1] : 0;
	if (stored.len <= 2 || stored.nsamples == 0)
		report_bad_chunk(receiver, slot, "is not valid: it holds no sample");
	stored.min_t = DatumGetInt64(slot->tts_values[1]);
	stored.max_t = DatumGetInt64(slot->tts_values[2]);
	if (stored.min_t > stored.max_t)
		report_bad_chunk(receiver, slot, "is not valid: it ends before it begins");
	stored.data = (const char *) data;
	stored.encoding = encoding;
	PromSeriesSetAddChunk(receiver->set, receiver->layout, series->values,
						  series->isnull, &stored);
}

/*
 * Take one chunk of the chunk statement (series_id, min_time, max_time,
 * encoding, chunk) of a series selected: kept as it is for a set that keeps
 * chunks (keep_chunk), else decoded and its samples in the query's range
 * added to its series, as one run.
 */
static bool
chunk_receive(TupleTableSlot *slot, DestReceiver *self)
{
	ChunkReceiver *receiver = (ChunkReceiver *) self;
	const ChunkScan *cs = receiver->cs;
	bool		histograms = cs->histograms;
	const PromSelectedSeries *series;
	MemoryContext oldcxt;
	int			encoding;
	bytea	   *chunk;
	PromSample *samples;
	int			nsamples;
	const char *reason;
	int			i;

	slot_getallattrs(slot);
	for (i = 0; i < CHUNK_COLUMNS; i++)
		if (slot->tts_isnull[i])
			report_bad_chunk(receiver, slot, "has a NULL column");
	series = PromSeriesMapFind(cs->series, DatumGetInt64(slot->tts_values[0]));
	if (series == NULL)
		return true;
	encoding = DatumGetInt16(slot->tts_values[3]);
	if (histograms ? (encoding != PROM_CHUNK_HISTOGRAM &&
								encoding != PROM_CHUNK_FLOAT_HISTOGRAM) :
		encoding != PROM_CHUNK_XOR)
		report_bad_chunk(receiver, slot,
						 psprintf("has encoding %d, which the chunks of a metric of %s do not have",
								  encoding, histograms ? "histograms" : "floats"));
	oldcxt = MemoryContextSwitchTo(receiver->chunk_context);
	chunk = DatumGetByteaPP(slot->tts_values[4]);
	if (PromSeriesSetKeepsChunks(receiver->set))
	{
		MemoryContextSwitchTo(oldcxt);
		keep_chunk(receiver, slot, series, encoding, chunk);
		MemoryContextReset(receiver->chunk_context);
		return true;
	}
	if (!histograms)
	{
		MemoryContextSwitchTo(receiver->context);
		reason = PromXorChunkDecodeInto(VARDATA_ANY(chunk),
										VARSIZE_ANY_EXHDR(chunk),
										&receiver->buffer, &receiver->capacity,
										&nsamples);
	}
	else
		reason = PromHistogramChunkDecode(VARDATA_ANY(chunk),
										  VARSIZE_ANY_EXHDR(chunk),
										  encoding == PROM_CHUNK_FLOAT_HISTOGRAM,
										  &samples, &nsamples);
	MemoryContextSwitchTo(oldcxt);
	if (reason != NULL)
		report_bad_chunk(receiver, slot,
						 psprintf("is not valid: %s", reason));
	if (!histograms)
		samples = receiver->buffer;

	nsamples = PromKeepSamplesInRange(samples, nsamples, cs->start_ms, cs->end_ms);
	if (histograms)
		for (i = 0; i < nsamples; i++)
			samples[i].v = PromSeriesSetCopyHistogram(receiver->set,
													  PointerGetDatum(PromSampleHistogram(&samples[i])));
	PromSeriesSetAddRun(receiver->set, receiver->layout, series->values,
						series->isnull, samples, nsamples);
	MemoryContextReset(receiver->chunk_context);
	return true;
}

/*
 * Check, before the first row, that the rows are series_id, min_time,
 * max_time, encoding and chunk.
 */
static void
chunk_startup(DestReceiver *self, int operation, TupleDesc typeinfo)
{
	ChunkReceiver *receiver = (ChunkReceiver *) self;
	static const Oid chunk_types[CHUNK_COLUMNS] = {
		INT8OID, INT8OID, INT8OID, INT2OID, BYTEAOID
	};
	bool		fits = typeinfo->natts == CHUNK_COLUMNS;
	int			i;

	for (i = 0; fits && i < CHUNK_COLUMNS; i++)
		fits = TupleDescAttr(typeinfo, i)->atttypid == chunk_types[i];
	if (!fits)
		report_changed(&receiver->cs->scan);
}

/* Free a chunk receiver, its buffer and its context, once it has read. */
static void
chunk_receiver_free(ChunkReceiver *receiver)
{
	if (receiver->buffer != NULL)
		pfree(receiver->buffer);
	MemoryContextDelete(receiver->chunk_context);
}

/* Make a receiver of the chunk statement's rows into a layout of its own. */
static void
chunk_receiver_init(ChunkReceiver *receiver, PromSeriesSet *set,
					const ChunkScan *cs)
{
	memset(receiver, 0, sizeof(ChunkReceiver));
	receiver_init(&receiver->pub, chunk_receive, chunk_startup);
	receiver->set = set;
	receiver->layout = PromScanAddLayout(set, &cs->scan);
	receiver->cs = cs;
	receiver->context = CurrentMemoryContext;
	receiver->chunk_context = AllocSetContextCreate(CurrentMemoryContext,
													"promread chunk",
													ALLOCSET_DEFAULT_SIZES);
}

/*
 * Take one row of the head statement (series_id, t, value) of a series
 * selected; NOT NULL columns, but a NULL is a row without a sample, skipped
 * as a row metric's is.
 */
static bool
head_receive(TupleTableSlot *slot, DestReceiver *self)
{
	HeadReceiver *receiver = (HeadReceiver *) self;
	const PromSelectedSeries *series;
	double		v;

	slot_getallattrs(slot);
	if (slot->tts_isnull[0] || slot->tts_isnull[1] || slot->tts_isnull[2])
		return true;
	series = PromSeriesMapFind(receiver->cs->series,
							 DatumGetInt64(slot->tts_values[0]));
	if (series == NULL)
		return true;
	v = receiver->cs->histograms ?
		PromSeriesSetCopyHistogram(receiver->set, slot->tts_values[2]) :
		DatumGetFloat8(slot->tts_values[2]);
	PromSeriesSetAdd(receiver->set, receiver->layout, series->values,
					 series->isnull, DatumGetInt64(slot->tts_values[1]), v);
	return true;
}

/* Check, before the first row, that the rows are series_id, t and value. */
static void
head_startup(DestReceiver *self, int operation, TupleDesc typeinfo)
{
	HeadReceiver *receiver = (HeadReceiver *) self;
	const MetricScan *scan = &receiver->cs->scan;

	if (typeinfo->natts != 3 ||
		TupleDescAttr(typeinfo, 0)->atttypid != INT8OID ||
		TupleDescAttr(typeinfo, 1)->atttypid != INT8OID ||
		TupleDescAttr(typeinfo, 2)->atttypid != scan->value_column.type)
		report_changed(scan);
}

/* The run of a chunk metric's statements, as a skipping step. */
typedef struct ChunkRun
{
	ChunkScan  *cs;
	PromSeriesSet *set;
} ChunkRun;

/*
 * Select the series, then read their chunks, then their head rows, each
 * into a layout of its own, made in that order (step 4 of the header
 * comment).
 */
static void
chunk_run_step(void *arg)
{
	ChunkRun   *run = (ChunkRun *) arg;
	ChunkScan  *cs = run->cs;
	ChunkReceiver chunks;
	HeadReceiver head;
	SPIExecuteOptions options;

	if (PromChunkScanSelectSeries(cs, false) == 0)
		return;
	elog(DEBUG1, "promread scan of the chunks of metric \"%s\": %s",
		 cs->scan.entry->metric, cs->chunks.sql.data);
	elog(DEBUG1, "promread scan of the head of metric \"%s\": %s",
		 cs->scan.entry->metric, cs->head.sql.data);

	chunk_receiver_init(&chunks, run->set, cs);
	memset(&options, 0, sizeof(options));
	options.read_only = true;
	options.params = PromScanStatementParams(&cs->chunks);
	options.dest = &chunks.pub;
	PromScanRun(PromScanCachedPlan(&cs->chunks), cs->chunks.planning, &options, NULL);
	chunk_receiver_free(&chunks);

	memset(&head, 0, sizeof(head));
	receiver_init(&head.pub, head_receive, head_startup);
	head.set = run->set;
	head.layout = PromScanAddLayout(run->set, &cs->scan);
	head.cs = cs;
	options.params = PromScanStatementParams(&cs->head);
	options.dest = &head.pub;
	PromScanRun(PromScanCachedPlan(&cs->head), cs->head.planning, &options, NULL);
}

/*
 * Read the samples of a metric in chunk storage that the query selects into
 * the series set; named as for PromScanMetric.  The caller is connected to
 * SPI.
 */
void
PromScanChunkMetric(PromSeriesSet *set, const PromMetricEntry *entry,
					const PromStorageEntry *storage, const PromQuery *query,
					bool named)
{
	ChunkScan	cs;
	ChunkRun	run;
	uint64		begin = PromPhaseBegin();
	bool		prepared = PromChunkScanPrepare(entry, storage, query, named, &cs);

	PromPhaseEnd(PROM_PHASE_PLAN, begin);
	if (!prepared)
		return;
	elog(DEBUG1, "promread scan of the series of metric \"%s\": %s",
		 entry->metric, cs.scan.stmt.sql.data);
	run.cs = &cs;
	run.set = set;
	if (named)
		chunk_run_step(&run);
	else
		(void) PromScanRunSkippingUnreadable(chunk_run_step, &run, set);
	PromChunkScanFree(&cs);
}

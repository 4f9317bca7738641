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
 *    series, and only the chunks of the series selected are read.
 * 2. The caller reads the three tables with its own rights, and row-level
 *    security on the series table applies, since the executor reads it.
 *    The rights are checked before the first statement runs, so that a
 *    metric whose tables the caller may not read fails a query that names
 *    it and is skipped by one that does not, before any sample is added,
 *    as a row metric is (PromScanRunSkippingUnreadable).
 * 3. Two statements read the series the matchers select (a subquery, whose
 *    predicates name the series table's columns alone) joined to
 *      - the chunks that reach into [start, end]: max_time >= start AND
 *        min_time <= end AND min_time > start - 2 h.  A chunk lies within one
 *        of Prometheus's 2-hour windows, so the last bound is implied, and
 *        lets the planner prune m#chunks' partitions of min_time from below
 *        too;
 *      - the head rows with start <= t <= end.
 *    Their text depends on the relations, the columns and the shapes of the
 *    matchers only, so that their plans are cached (scan_plans.c).  Both
 *    run read-only in the caller's snapshot: a compaction that commits
 *    between them (head rows deleted, chunks written) is seen by neither,
 *    and each sample is read once.
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
 *    into the set.  Then the head statement's rows go through the row
 *    receiver (scan_exec.c) into a layout of their own, made after the
 *    chunks': the set's finish merges series of equal labels in the order
 *    they were made (order.c), so a series' head samples come after all of
 *    its chunks' samples, even when its chunks came apart and made it
 *    twice (group.c), and a head sample replaces a chunk's sample of the
 *    same millisecond when the engine sorts the series' samples (it keeps
 *    the last of equal times), as compaction's merge does.  So the chunks
 *    need no order: the statement has no sort (kept chunks are put in
 *    time order per series when the set is finished).
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

#include "catalog/pg_type.h"
#include "histogram/histogram.h"
#include "miscadmin.h"
#include "phases.h"
#include "protocol/protocol.h"
#include "scan_internal.h"
#include "storage/lmgr.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/syscache.h"

/* Columns of the chunk statement's rows after the label columns. */
#define CHUNK_COLUMNS		5

/* Receives the chunk statement's rows and adds their samples to the set. */
typedef struct ChunkReceiver
{
	DestReceiver pub;
	PromSeriesSet *set;
	PromLayout *layout;
	const ChunkScan *cs;
	const MetricScan *scan;		/* cs's */
	int64		start_ms;
	int64		end_ms;
	bool		histograms;		/* the metric's values are histograms */
	PromSample *buffer;			/* an XOR chunk's samples, reused */
	int			capacity;
	MemoryContext context;		/* the buffer's, the receiver's own */
	MemoryContext chunk_context;	/* a chunk's detoasting and histograms,
									 * reset after each chunk */
} ChunkReceiver;

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

/* Append the label columns of the series subquery, each "s.<column>, ". */
static void
append_label_columns(StringInfo sql, const MetricScan *scan)
{
	int			i;

	for (i = 0; i < scan->nlabels; i++)
		appendStringInfo(sql, "s.%s, ", quote_identifier(scan->labels[i].name));
}

/* Give a statement the parameters of the series subquery. */
static void
copy_params(ScanStatement *stmt, const ScanStatement *from)
{
	stmt->nparams = from->nparams;
	memcpy(stmt->param_types, from->param_types, sizeof(Oid) * from->nparams);
	memcpy(stmt->param_values, from->param_values, sizeof(Datum) * from->nparams);
}

/*
 * Plan the read of a metric in chunk storage for a query: lock its view and
 * tables, read their columns, and build the series subquery with the
 * matchers, then the chunk and head statements.  False when there is
 * nothing to read (a relation gone, the registration skipped, or no series
 * can match).
 */
bool
PromChunkScanPrepare(const PromMetricEntry *entry,
					 const PromStorageEntry *storage, const PromQuery *query,
					 bool named, ChunkScan *cs)
{
	MetricScan *scan = &cs->scan;
	PromMetricEntry *series_entry = palloc(sizeof(PromMetricEntry));
	const char *series;
	Oid			type;
	int			i;

	memset(cs, 0, sizeof(ChunkScan));
	cs->storage = *storage;
	if (!PromScanLockRelation(entry, named) ||
		!lock_storage_table(storage->series) ||
		!lock_storage_table(storage->chunks) ||
		!lock_storage_table(storage->head))
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

	/* $1 start, $2 end, $3 the bound of the chunks' min_time below */
	scan->stmt.nparams = 3;
	for (i = 0; i < 3; i++)
		scan->stmt.param_types[i] = INT8OID;
	scan->stmt.param_values[0] = Int64GetDatum(query->start_ms);
	scan->stmt.param_values[1] = Int64GetDatum(query->end_ms);
	scan->stmt.param_values[2] =
		Int64GetDatum(query->start_ms < PG_INT64_MIN + PROM_CHUNK_WINDOW_MS ?
					  PG_INT64_MIN : query->start_ms - PROM_CHUNK_WINDOW_MS);

	/* the series subquery, with the matchers as its predicates */
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
	series = scan->stmt.sql.data;

	initStringInfo(&cs->chunks.sql);
	appendStringInfoString(&cs->chunks.sql, "SELECT ");
	append_label_columns(&cs->chunks.sql, scan);
	appendStringInfo(&cs->chunks.sql,
					 "c.series_id, c.min_time, c.max_time, c.encoding, c.chunk"
					 " FROM (%s) s"
					 " JOIN %s c ON c.series_id OPERATOR(pg_catalog.=) s.series_id"
					 " WHERE c.max_time OPERATOR(pg_catalog.>=) $1"
					 " AND c.min_time OPERATOR(pg_catalog.<=) $2"
					 " AND c.min_time OPERATOR(pg_catalog.>) $3",
					 series, PromQuotedRelationName(storage->chunks));
	copy_params(&cs->chunks, &scan->stmt);

	initStringInfo(&cs->head.sql);
	appendStringInfoString(&cs->head.sql, "SELECT ");
	append_label_columns(&cs->head.sql, scan);
	appendStringInfo(&cs->head.sql,
					 "h.t, h.value FROM (%s) s"
					 " JOIN %s h ON h.series_id OPERATOR(pg_catalog.=) s.series_id"
					 " WHERE h.t OPERATOR(pg_catalog.>=) $1"
					 " AND h.t OPERATOR(pg_catalog.<=) $2",
					 series, PromQuotedRelationName(storage->head));
	copy_params(&cs->head, &scan->stmt);
	return true;
}

/*
 * Report a chunk that cannot be read: its table, series and time, and why
 * (a phrase that follows "the chunk").
 */
static pg_attribute_noreturn() void
report_bad_chunk(const ChunkReceiver *receiver, TupleTableSlot *slot,
				 const char *reason)
{
	int			n = receiver->scan->nlabels;

	ereport(ERROR,
			(errcode(ERRCODE_DATA_CORRUPTED),
			 errmsg("invalid chunk in table \"%s\" of metric \"%s\"",
					get_rel_name(receiver->cs->storage.chunks),
					receiver->scan->entry->metric),
			 errdetail("The chunk of series %lld from %lld ms %s.",
					   slot->tts_isnull[n] ? 0 :
					   (long long) DatumGetInt64(slot->tts_values[n]),
					   slot->tts_isnull[n + 1] ? 0 :
					   (long long) DatumGetInt64(slot->tts_values[n + 1]),
					   reason)));
}

/*
 * Keep one chunk of the chunk statement as it is, for a set that keeps
 * chunks: its header read for its sample count, nothing decoded.
 */
static void
keep_chunk(ChunkReceiver *receiver, TupleTableSlot *slot, int encoding,
		   bytea *chunk)
{
	int			n = receiver->scan->nlabels;
	const uint8 *data = (const uint8 *) VARDATA_ANY(chunk);
	PromStoredChunk stored;

	stored.len = VARSIZE_ANY_EXHDR(chunk);
	stored.nsamples = stored.len >= 2 ? (data[0] << 8) | data[1] : 0;
	if (stored.len <= 2 || stored.nsamples == 0)
		report_bad_chunk(receiver, slot, "is not valid: it holds no sample");
	stored.min_t = DatumGetInt64(slot->tts_values[n + 1]);
	stored.max_t = DatumGetInt64(slot->tts_values[n + 2]);
	if (stored.min_t > stored.max_t)
		report_bad_chunk(receiver, slot, "is not valid: it ends before it begins");
	stored.data = (const char *) data;
	stored.encoding = encoding;
	PromSeriesSetAddChunk(receiver->set, receiver->layout, slot->tts_values,
						  slot->tts_isnull, &stored);
}

/*
 * Take one chunk of the chunk statement (labels, series_id, min_time,
 * max_time, encoding, chunk): kept as it is for a set that keeps chunks
 * (keep_chunk), else decoded and its samples in the query's range added to
 * its series, as one run.
 */
static bool
chunk_receive(TupleTableSlot *slot, DestReceiver *self)
{
	ChunkReceiver *receiver = (ChunkReceiver *) self;
	int			n = receiver->scan->nlabels;
	MemoryContext oldcxt;
	int			encoding;
	bytea	   *chunk;
	PromSample *samples;
	int			nsamples;
	const char *reason;
	int			i;

	slot_getallattrs(slot);
	for (i = 0; i < CHUNK_COLUMNS; i++)
		if (slot->tts_isnull[n + i])
			report_bad_chunk(receiver, slot, "has a NULL column");
	encoding = DatumGetInt16(slot->tts_values[n + 3]);
	if (receiver->histograms ? (encoding != PROM_CHUNK_HISTOGRAM &&
								encoding != PROM_CHUNK_FLOAT_HISTOGRAM) :
		encoding != PROM_CHUNK_XOR)
		report_bad_chunk(receiver, slot,
						 psprintf("has encoding %d, which the chunks of a metric of %s do not have",
								  encoding, receiver->histograms ? "histograms" : "floats"));
	oldcxt = MemoryContextSwitchTo(receiver->chunk_context);
	chunk = DatumGetByteaPP(slot->tts_values[n + 4]);
	if (PromSeriesSetKeepsChunks(receiver->set))
	{
		MemoryContextSwitchTo(oldcxt);
		keep_chunk(receiver, slot, encoding, chunk);
		MemoryContextReset(receiver->chunk_context);
		return true;
	}
	if (!receiver->histograms)
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
	if (!receiver->histograms)
		samples = receiver->buffer;

	nsamples = PromKeepSamplesInRange(samples, nsamples, receiver->start_ms,
									  receiver->end_ms);
	if (receiver->histograms)
		for (i = 0; i < nsamples; i++)
			samples[i].v = PromSeriesSetCopyHistogram(receiver->set,
													  PointerGetDatum(PromSampleHistogram(&samples[i])));
	PromSeriesSetAddRun(receiver->set, receiver->layout, slot->tts_values,
						slot->tts_isnull, samples, nsamples);
	MemoryContextReset(receiver->chunk_context);
	return true;
}

/*
 * Check, before the first row, that the rows are those the layout was built
 * for (as scan.c's receiver does): the label columns, then series_id,
 * min_time, max_time, encoding and chunk.
 */
static void
chunk_startup(DestReceiver *self, int operation, TupleDesc typeinfo)
{
	ChunkReceiver *receiver = (ChunkReceiver *) self;
	const MetricScan *scan = receiver->scan;
	static const Oid chunk_types[CHUNK_COLUMNS] = {
		INT8OID, INT8OID, INT8OID, INT2OID, BYTEAOID
	};
	bool		fits = typeinfo->natts == scan->nlabels + CHUNK_COLUMNS;
	int			i;

	for (i = 0; fits && i < typeinfo->natts; i++)
		fits = TupleDescAttr(typeinfo, i)->atttypid ==
			(i < scan->nlabels ? scan->labels[i].type :
			 chunk_types[i - scan->nlabels]);
	if (!fits)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("relation of metric \"%s\" changed while it was read",
						scan->entry->metric),
				 errhint("Retry the read.")));
}

/* Nothing to do at the end of the chunks. */
static void
chunk_shutdown(DestReceiver *self)
{
}

static void
chunk_destroy(DestReceiver *self)
{
}

/* Free a chunk receiver, its buffer and its context, once it has read. */
static void
chunk_receiver_free(DestReceiver *self)
{
	ChunkReceiver *receiver = (ChunkReceiver *) self;

	if (receiver->buffer != NULL)
		pfree(receiver->buffer);
	MemoryContextDelete(receiver->chunk_context);
	pfree(receiver);
}

/* A receiver of the chunk statement's rows into a layout of its own. */
static DestReceiver *
chunk_receiver_create(PromSeriesSet *set, PromLayout *layout,
					  const ChunkScan *cs, const PromQuery *query)
{
	ChunkReceiver *receiver = palloc0(sizeof(ChunkReceiver));

	receiver->pub.receiveSlot = chunk_receive;
	receiver->pub.rStartup = chunk_startup;
	receiver->pub.rShutdown = chunk_shutdown;
	receiver->pub.rDestroy = chunk_destroy;
	receiver->pub.mydest = DestNone;
	receiver->set = set;
	receiver->layout = layout;
	receiver->cs = cs;
	receiver->scan = &cs->scan;
	receiver->start_ms = query->start_ms;
	receiver->end_ms = query->end_ms;
	receiver->histograms = cs->histograms;
	receiver->context = CurrentMemoryContext;
	receiver->chunk_context = AllocSetContextCreate(CurrentMemoryContext,
													"promread chunk",
													ALLOCSET_DEFAULT_SIZES);
	return &receiver->pub;
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

/* The run of a chunk metric's statements, as a skipping step. */
typedef struct ChunkRun
{
	const ChunkScan *cs;
	SPIPlanPtr	chunk_plan;
	SPIPlanPtr	head_plan;
	SPIExecuteOptions chunk_options;
	SPIExecuteOptions head_options;
} ChunkRun;

/* Check the caller's rights, then read the chunks, then the head. */
static void
chunk_run_step(void *arg)
{
	ChunkRun   *run = (ChunkRun *) arg;

	check_table_rights(run->cs->storage.series);
	check_table_rights(run->cs->storage.chunks);
	check_table_rights(run->cs->storage.head);
	PromScanRun(run->chunk_plan, &run->chunk_options, NULL);
	PromScanRun(run->head_plan, &run->head_options, PromScanReadOnly);
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
	PromLayout *head_layout;
	uint64		begin = PromPhaseBegin();

	if (!PromChunkScanPrepare(entry, storage, query, named, &cs))
	{
		PromPhaseEnd(PROM_PHASE_PLAN, begin);
		return;
	}
	memset(&run, 0, sizeof(run));
	run.cs = &cs;
	run.chunk_options.dest = chunk_receiver_create(set, PromScanAddLayout(set, &cs.scan),
												   &cs, query);
	run.head_options.dest = PromScanReceiverCreate(set, &cs.scan, &head_layout);
	elog(DEBUG1, "promread scan of the chunks of metric \"%s\": %s",
		 entry->metric, cs.chunks.sql.data);
	elog(DEBUG1, "promread scan of the head of metric \"%s\": %s",
		 entry->metric, cs.head.sql.data);
	run.chunk_plan = PromScanCachedPlan(&cs.chunks);
	run.head_plan = PromScanCachedPlan(&cs.head);
	PromPhaseEnd(PROM_PHASE_PLAN, begin);

	run.chunk_options.params = PromScanStatementParams(&cs.chunks);
	run.chunk_options.read_only = true;
	run.head_options.params = PromScanStatementParams(&cs.head);
	run.head_options.read_only = true;
	if (named)
		chunk_run_step(&run);
	else
		(void) PromScanRunSkippingUnreadable(chunk_run_step, &run, set);
	chunk_receiver_free(run.chunk_options.dest);
}

/*-------------------------------------------------------------------------
 *
 * write_head.c
 *	  Appending the rows of a remote-write request to the head of a metric
 *	  in chunk storage (docs/chunk-storage.md), once write_chunks.c has
 *	  resolved its series.
 *
 * 1. m#head is partitioned by 2-hour window behind a watermark (head.c's
 *    header gives the argument): the partition of each window the rows
 *    touch is locked, in ascending order of OID (ROW EXCLUSIVE), and those
 *    alone, so that a compaction of other windows does not hold the write
 *    up; then the watermark is read with the latest snapshot; rows before it go to
 *    m#late (which the writer needs INSERT on then), the others to m#head.
 *    A metric whose layout was made by hand, without m#late, has all its
 *    rows written to m#head.
 *
 * 2. Rows are appended straight to the table they belong in (a window's
 *    partition of m#head, its default partition, or m#late), as COPY
 *    appends a row once it has routed it: table_multi_insert of up to
 *    HEAD_APPEND_ROWS rows, then each row's index entries.  This skips
 *    what COPY does a row and a statement besides (its input format,
 *    routing, a slot made for each row buffered, the partition's indexes
 *    opened again each statement), and is done only where COPY would run
 *    nothing else: a plain table of exactly (series_id, t, value float8),
 *    without triggers (nor statement triggers on m#head), check
 *    constraints, defaults, row-level security, or an index checked later
 *    than its insertion (deferrable unique, exclusion), written with
 *    the caller's INSERT privilege on m#head's (or m#late's) columns.
 *    Everything else, histograms included, goes by COPY in binary form, in
 *    COPYs of at most HEAD_COPY_ROWS: COPY pins the table's tuple
 *    descriptor once for each slot it buffers (up to 1,000), and
 *    PostgreSQL 15's resource owner finds equal pins among many in time
 *    that grows with their number (the slots of an append hold an
 *    unpinned copy of the descriptor).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/table.h"
#include "access/tableam.h"
#include "catalog/pg_class.h"
#include "catalog/pg_index.h"
#include "catalog/pg_type.h"
#include "executor/executor.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "partitioning/partdesc.h"
#include "promread.h"
#include "write_internal.h"
#include "storage/lmgr.h"
#include "storage/storage.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"

/* The most rows of one COPY into m#head (see the header). */
#define HEAD_COPY_ROWS			64

/* The most rows of one table_multi_insert (see the header). */
#define HEAD_APPEND_ROWS		100

/* A COPY stream into one table, sent every HEAD_COPY_ROWS rows. */
typedef struct HeadCopy
{
	Relation	rel;
	StringInfoData out;
	int			nrows;
} HeadCopy;

/* Send a stream's rows, if any, with a COPY; start it again. */
static void
flush_copy(HeadCopy *copy, List *attnames)
{
	if (copy->nrows == 0)
		return;
	PromCopyAppendTrailer(&copy->out);
	PromWriteCopy(copy->rel, attnames, &copy->out);
	resetStringInfo(&copy->out);
	PromCopyAppendHeader(&copy->out);
	copy->nrows = 0;
}

/*
 * Is a head (locked) partitioned into windows and a default partition
 * alone, the partitions a write touches plain tables?
 */
static bool
only_windows(Relation head_rel, int nwindows, Oid default_partition,
			 const Oid *partitions, int npartitions)
{
	int			i;

	if (head_rel->rd_rel->relkind != RELKIND_PARTITIONED_TABLE ||
		RelationGetPartitionDesc(head_rel, true)->nparts !=
		nwindows + (OidIsValid(default_partition) ? 1 : 0))
		return false;
	for (i = 0; i < npartitions; i++)
		if (get_rel_relkind(partitions[i]) != RELKIND_RELATION)
			return false;
	return true;
}

/*
 * Lock the partitions of m#head the group's rows go to (1. above): each
 * window's, or the default partition for a window without one, in
 * ascending order of OID, and check that writing them is trusted
 * (write_trust.c); then return the watermark, read with the latest
 * snapshot.  The others are not locked: a compaction of their windows
 * goes on.  A head with a partition of its own making (not one window, or
 * itself partitioned: rows could reach it where no window partition was
 * found) has every partition locked and checked, as a table of rows does,
 * and its rows are not routed here (routing->routed false).
 */
int64
PromWriteLockWindows(const PromWriteGroup *group, const PromMetricEntry *entry,
					 const PromMetricEntry *trust, bool histograms, Relation head_rel,
					 PromHeadRouting *routing)
{
	PromHeadWindow *windows;
	int			nwindows;
	Oid			default_partition;
	int64	   *touched = NULL;
	int			ntouched = 0;
	int			capacity = 0;
	Oid		   *partitions;
	int			npartitions = 0;
	int			i;

	PromHeadWindows(head_rel, &windows, &nwindows, &default_partition);
	for (i = 0; i < group->nseries; i++)
	{
		const PromWriteSeries *series = group->series[i];
		int			s;

		for (s = 0; s < PromWriteSeriesRows(series, histograms); s++)
		{
			int64		window = PromFloorDiv(PromWriteSeriesTime(series, s, histograms),
											  PROM_CHUNK_WINDOW_MS);

			/* rows come in time order a series: most repeat the last */
			if (ntouched > 0 && touched[ntouched - 1] == window)
				continue;
			if (ntouched == capacity)
			{
				capacity = Max(capacity * 2, 8);
				touched = touched == NULL ? palloc(sizeof(int64) * capacity) :
					repalloc(touched, sizeof(int64) * capacity);
			}
			touched[ntouched++] = window;
		}
	}
	partitions = palloc(sizeof(Oid) * Max(ntouched, 1));
	for (i = 0; i < ntouched; i++)
	{
		Oid			partition = PromHeadWindowPartition(windows, nwindows, touched[i]);

		if (!OidIsValid(partition))
			partition = default_partition;
		if (OidIsValid(partition))
			partitions[npartitions++] = partition;
	}
	routing->windows = windows;
	routing->nwindows = nwindows;
	routing->default_partition = default_partition;
	routing->routed = only_windows(head_rel, nwindows, default_partition, partitions,
								   npartitions);
	if (!routing->routed)
	{
		PromCheckWriteTrusted(head_rel, trust);
		return PromStorageCompactedBefore(entry->metric, RelationGetRelid(head_rel),
										  GetLatestSnapshot());
	}
	qsort(partitions, npartitions, sizeof(Oid), oid_cmp);
	for (i = 0, ntouched = 0; i < npartitions; i++)
		if (i == 0 || partitions[i] != partitions[i - 1])
		{
			LockRelationOid(partitions[i], RowExclusiveLock);
			partitions[ntouched++] = partitions[i];
		}
	PromCheckWriteTrustedPartitions(head_rel, partitions, ntouched, trust);
	return PromStorageCompactedBefore(entry->metric, RelationGetRelid(head_rel),
										  GetLatestSnapshot());
}

/* Rows appended straight to one table (2. above). */
typedef struct HeadAppend
{
	Oid			relid;
	Relation	rel;			/* NULL: the table's rows go by COPY */
	ResultRelInfo *rri;			/* its indexes opened */
	TupleTableSlot *slots[HEAD_APPEND_ROWS];	/* made as needed */
	int			nslots;
	int			nrows;			/* filled */
} HeadAppend;

/* Where write_head sends rows: tables appended to, and COPY streams. */
typedef struct HeadWriter
{
	EState	   *estate;
	CommandId	cid;
	TupleDesc	desc;			/* (series_id, t, value), unpinned */
	HeadAppend *appends;
	int			nappends;
	HeadCopy	copies[2];		/* m#head, m#late */
	bool		checked[2];		/* the INSERT privilege on them */
	List	   *attnames;
} HeadWriter;

/*
 * Can rows be appended straight to this table (2. above): would COPY run
 * nothing for it but its indexes' insertions?
 */
static bool
appendable(Relation rel)
{
	static const char *const names[3] = {SERIES_ID_COLUMN, HEAD_TIME_COLUMN,
	HEAD_VALUE_COLUMN};
	static const Oid types[3] = {INT8OID, INT8OID, FLOAT8OID};
	TupleDesc	desc = RelationGetDescr(rel);
	List	   *indexes;
	ListCell   *lc;
	bool		ok = true;
	int			i;

	if (rel->rd_rel->relkind != RELKIND_RELATION || rel->trigdesc != NULL ||
		rel->rd_rel->relrowsecurity || desc->natts != 3 ||
		(desc->constr != NULL && (desc->constr->num_check > 0 ||
								  desc->constr->num_defval > 0 ||
								  desc->constr->has_generated_stored)))
		return false;
	for (i = 0; i < 3; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i);

		if (att->attisdropped || att->atttypid != types[i] ||
			strcmp(NameStr(att->attname), names[i]) != 0)
			return false;
	}
	indexes = RelationGetIndexList(rel);
	foreach(lc, indexes)
	{
		HeapTuple	tuple = SearchSysCache1(INDEXRELID, ObjectIdGetDatum(lfirst_oid(lc)));

		if (!HeapTupleIsValid(tuple))
			elog(ERROR, "cache lookup failed for index %u", lfirst_oid(lc));
		if (!((Form_pg_index) GETSTRUCT(tuple))->indimmediate ||
			((Form_pg_index) GETSTRUCT(tuple))->indisexclusion)
			ok = false;
		ReleaseSysCache(tuple);
	}
	list_free(indexes);
	return ok;
}

/*
 * The append of a table (locked by the caller), made on first use: its
 * rel NULL when the table is not appendable.
 */
static HeadAppend *
head_append(HeadWriter *hw, Oid relid)
{
	HeadAppend *a;
	int			i;

	for (i = 0; i < hw->nappends; i++)
		if (hw->appends[i].relid == relid)
			return &hw->appends[i];
	hw->appends = hw->nappends == 0 ? palloc(sizeof(HeadAppend)) :
		repalloc(hw->appends, sizeof(HeadAppend) * (hw->nappends + 1));
	a = &hw->appends[hw->nappends++];
	memset(a, 0, sizeof(HeadAppend));
	a->relid = relid;
	a->rel = table_open(relid, RowExclusiveLock);
	if (!appendable(a->rel))
	{
		table_close(a->rel, NoLock);
		a->rel = NULL;
		return a;
	}
	a->rri = makeNode(ResultRelInfo);
	InitResultRelInfo(a->rri, a->rel, 1, NULL, 0);
	ExecOpenIndices(a->rri, false);
	return a;
}

/* Insert an append's rows, and their index entries. */
static void
flush_append(HeadWriter *hw, HeadAppend *a)
{
	int			i;

	if (a->nrows == 0)
		return;
	table_multi_insert(a->rel, a->slots, a->nrows, hw->cid, 0, NULL);
	for (i = 0; i < a->nrows; i++)
	{
		if (a->rri->ri_NumIndices > 0)
		{
			/* no index is checked later (appendable), so none to recheck */
			list_free(PromInsertIndexTuples(a->rri, a->slots[i], hw->estate));
			ResetPerTupleExprContext(hw->estate);
		}
		ExecClearTuple(a->slots[i]);
	}
	a->nrows = 0;
}

/* Add a row to an append, inserting its rows once it is full. */
static void
append_row(HeadWriter *hw, HeadAppend *a, int64 series_id, int64 ms, float8 value)
{
	TupleTableSlot *slot;

	if (a->nrows == a->nslots)
		a->slots[a->nslots++] = MakeSingleTupleTableSlot(hw->desc,
														 table_slot_callbacks(a->rel));
	slot = a->slots[a->nrows++];
	slot->tts_values[0] = Int64GetDatum(series_id);
	slot->tts_values[1] = Int64GetDatum(ms);
	slot->tts_values[2] = Float8GetDatum(value);
	memset(slot->tts_isnull, 0, sizeof(bool) * 3);
	ExecStoreVirtualTuple(slot);
	if (a->nrows == HEAD_APPEND_ROWS)
		flush_append(hw, a);
}

/*
 * The append a row of m#head (late false) or m#late goes to, or NULL when
 * it goes by COPY: m#late, a head that is a plain table (made before heads
 * were partitioned, or by hand), or the row's window's partition of a
 * routed head.  Checks the INSERT privilege on the table it is written to
 * (m#head, not its partition, as COPY into m#head would) the first time.
 */
static HeadAppend *
row_target(HeadWriter *hw, const PromHeadRouting *routing, Relation head_rel,
		   Relation late_rel, bool late, int64 window)
{
	HeadAppend *a;
	Oid			relid;

	if (late || head_rel->rd_rel->relkind == RELKIND_RELATION)
		relid = RelationGetRelid(late ? late_rel : head_rel);	/* a plain table */
	else if (routing->routed && head_rel->trigdesc == NULL)
	{
		relid = PromHeadWindowPartition(routing->windows, routing->nwindows, window);
		if (!OidIsValid(relid))
			relid = routing->default_partition;
		if (!OidIsValid(relid))
			return NULL;		/* COPY says that no partition holds it */
	}
	else
		return NULL;
	a = head_append(hw, relid);
	if (a->rel == NULL)
		return NULL;
	if (!hw->checked[late])
	{
		PromCheckInsertPrivileges(late ? late_rel : head_rel, hw->attnames);
		hw->checked[late] = true;
	}
	return a;
}

/*
 * Append the group's rows (series_ids[i]: series i's id): series_id, t (ms, checked to be a timestamp
 * PostgreSQL can hold), value; to m#late those before the watermark
 * (late_rel NULL: none), the others to m#head, each window's to its
 * partition (routing, when the head's partitions are windows); straight
 * to each table where it can be done, by COPY in binary form otherwise,
 * in COPYs of at most HEAD_COPY_ROWS rows (2. above).
 */
void
PromWriteHead(const PromWriteGroup *group, const int64 *series_ids, const char *metric,
			  bool histograms, Relation head_rel, Relation late_rel,
			  int64 compacted_before, const PromHeadRouting *routing)
{
	uint16		be_ncolumns = pg_hton16(3);
	PromCopyValues values;
	HeadWriter	hw = {0};
	HeadAppend *target = NULL;
	int64		target_window = 0;
	bool		target_late = false;
	bool		have_target = false;
	int			i;

	hw.attnames = list_make3(makeString(SERIES_ID_COLUMN), makeString(HEAD_TIME_COLUMN),
							 makeString(HEAD_VALUE_COLUMN));
	hw.estate = CreateExecutorState();
	hw.cid = GetCurrentCommandId(true);
	hw.desc = CreateTemplateTupleDesc(3);
	TupleDescInitEntry(hw.desc, 1, SERIES_ID_COLUMN, INT8OID, -1, 0);
	TupleDescInitEntry(hw.desc, 2, HEAD_TIME_COLUMN, INT8OID, -1, 0);
	TupleDescInitEntry(hw.desc, 3, HEAD_VALUE_COLUMN, FLOAT8OID, -1, 0);
	PromCopyValuesInit(&values, histograms);
	for (i = 0; i < 2; i++)
	{
		hw.copies[i].rel = i == 0 ? head_rel : late_rel;
		hw.copies[i].nrows = 0;
		initStringInfo(&hw.copies[i].out);
		PromCopyAppendHeader(&hw.copies[i].out);
	}
	for (i = 0; i < group->nseries; i++)
	{
		const PromWriteSeries *series = group->series[i];
		int64		series_id = series_ids[i];
		uint64		be_id = pg_hton64((uint64) series_id);
		int			s;

		CHECK_FOR_INTERRUPTS();
		for (s = 0; s < PromWriteSeriesRows(series, histograms); s++)
		{
			int64		ms = PromWriteSeriesTime(series, s, histograms);
			bool		late = late_rel != NULL && ms < compacted_before;
			int64		window = PromFloorDiv(ms, PROM_CHUNK_WINDOW_MS);
			uint64		be_time = pg_hton64((uint64) ms);
			HeadCopy   *copy;

			(void) PromWriteTimestamp(ms, metric);
			/* rows come in time order a series: most go where the last went */
			if (!histograms &&
				(!have_target || late != target_late || window != target_window))
			{
				target = row_target(&hw, routing, head_rel, late_rel, late, window);
				target_late = late;
				target_window = window;
				have_target = true;
			}
			if (!histograms && target != NULL)
			{
				append_row(&hw, target, series_id, ms, PromWriteSeriesValue(series, s));
				continue;
			}
			copy = &hw.copies[late];
			enlargeStringInfo(&copy->out, 2 + 24);
			appendBinaryStringInfoNT(&copy->out, (const char *) &be_ncolumns, 2);
			PromCopyAppendField(&copy->out, &be_id, 8);
			PromCopyAppendField(&copy->out, &be_time, 8);
			PromCopyAppendValue(&copy->out, &values, series, s);
			if (++copy->nrows == HEAD_COPY_ROWS)
				flush_copy(copy, hw.attnames);
		}
	}
	for (i = 0; i < hw.nappends; i++)
	{
		HeadAppend *a = &hw.appends[i];
		int			k;

		if (a->rel == NULL)
			continue;
		flush_append(&hw, a);
		for (k = 0; k < a->nslots; k++)
			ExecDropSingleTupleTableSlot(a->slots[k]);
		ExecCloseIndices(a->rri);
		table_close(a->rel, NoLock);
	}
	FreeExecutorState(hw.estate);
	if (hw.nappends > 0)
		CommandCounterIncrement();
	flush_copy(&hw.copies[0], hw.attnames);
	flush_copy(&hw.copies[1], hw.attnames);
}

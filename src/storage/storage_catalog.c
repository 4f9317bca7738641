/*-------------------------------------------------------------------------
 *
 * storage_catalog.c
 *	  The storage catalog of chunk metrics: prom_storage_catalog (metric,
 *	  relation, series, chunks, head, retention, late, compacted_before),
 *	  read and written in C, and prom_head_compacted_before.
 *
 * An entry names the four relations of a metric in chunk storage
 * (docs/chunk-storage.md) and counts only while prom_metric_catalog
 * registers the metric to the entry's relation, its view: a metric
 * registered again with prom_register, or unregistered, loses its entry
 * (catalog.c removes it), and the event trigger prom_catalog_forget_dropped
 * removes the entry of a dropped relation.
 * Writers hold the metric's lock of the metric catalog (the one
 * PromCatalogLockForWrite takes), as every writer of a metric's
 * registration does, and open the table with PROM_CATALOG_WRITE_LOCK;
 * readers read it as committed now, under AccessShareLock, as
 * PromCatalogFind does.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "access/xact.h"
#include "catalog/indexing.h"
#include "fmgr.h"
#include "storage/storage.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"

#define STORAGE_TABLE		"prom_storage_catalog"
#define STORAGE_INDEX		"prom_storage_catalog_pkey"

/* Columns of the storage catalog. */
enum
{
	Anum_storage_metric = 1,
	Anum_storage_relation,
	Anum_storage_series,
	Anum_storage_chunks,
	Anum_storage_head,
	Anum_storage_retention,
	Anum_storage_late,
	Anum_storage_compacted_before,
	Natts_storage = Anum_storage_compacted_before
};

PG_FUNCTION_INFO_V1(prom_head_compacted_before);

/* The storage catalog, opened with lockmode, or NULL: it predates it. */
static Relation
open_storage_catalog(LOCKMODE lockmode, Oid *indexid)
{
	return PromCatalogOpenOptional(STORAGE_TABLE, STORAGE_INDEX, lockmode, indexid);
}

/* Decode a storage catalog tuple into an entry. */
static PromStorageEntry *
decode_storage_entry(Relation rel, HeapTuple tuple)
{
	Datum		values[Natts_storage];
	bool		isnull[Natts_storage];
	PromStorageEntry *entry = palloc0(sizeof(PromStorageEntry));
	int			i;

	if (RelationGetDescr(rel)->natts != Natts_storage)
		elog(ERROR, "promread storage catalog has %d columns",
			 RelationGetDescr(rel)->natts);
	heap_deform_tuple(tuple, RelationGetDescr(rel), values, isnull);
	for (i = 0; i < Anum_storage_retention - 1; i++)
		if (isnull[i])
			elog(ERROR, "promread storage catalog holds a NULL");
	entry->metric = TextDatumGetCString(values[Anum_storage_metric - 1]);
	entry->relation = DatumGetObjectId(values[Anum_storage_relation - 1]);
	entry->series = DatumGetObjectId(values[Anum_storage_series - 1]);
	entry->chunks = DatumGetObjectId(values[Anum_storage_chunks - 1]);
	entry->head = DatumGetObjectId(values[Anum_storage_head - 1]);
	entry->has_retention = !isnull[Anum_storage_retention - 1];
	if (entry->has_retention)
		entry->retention = *DatumGetIntervalP(values[Anum_storage_retention - 1]);
	entry->late = isnull[Anum_storage_late - 1] ? InvalidOid :
		DatumGetObjectId(values[Anum_storage_late - 1]);
	entry->compacted_before = isnull[Anum_storage_compacted_before - 1] ? PG_INT64_MIN :
		DatumGetInt64(values[Anum_storage_compacted_before - 1]);
	entry->xmin = HeapTupleHeaderGetXmin(tuple->t_data);
	return entry;
}

/*
 * The storage entry of a metric as stored, committed now, whether it counts
 * or not (see the header), or NULL: none.
 */
PromStorageEntry *
PromStorageStoredEntry(const char *metric)
{
	Oid			indexid;
	Relation	rel = open_storage_catalog(AccessShareLock, &indexid);
	ScanKeyData key;
	SysScanDesc scan;
	Snapshot	snapshot;
	HeapTuple	tuple;
	PromStorageEntry *entry = NULL;

	if (rel == NULL)
		return NULL;
	snapshot = RegisterSnapshot(GetLatestSnapshot());
	ScanKeyInit(&key, Anum_storage_metric, BTEqualStrategyNumber, F_TEXTEQ,
				CStringGetTextDatum(metric));
	scan = systable_beginscan(rel, indexid, true, snapshot, 1, &key);
	tuple = systable_getnext(scan);
	if (HeapTupleIsValid(tuple))
		entry = decode_storage_entry(rel, tuple);
	systable_endscan(scan);
	UnregisterSnapshot(snapshot);
	table_close(rel, AccessShareLock);
	return entry;
}

/*
 * The storage entry of a metric, as committed now, or NULL: the metric is
 * not in chunk storage, or its entry does not count (see the header).
 */
PromStorageEntry *
PromStorageLookup(const char *metric)
{
	PromStorageEntry *entry = PromStorageStoredEntry(metric);
	PromMetricEntry *registered;

	if (entry == NULL)
		return NULL;
	registered = PromCatalogFind(metric);
	if (registered == NULL || registered->relid != entry->relation)
		return NULL;
	return entry;
}

/*
 * The storage entries of every metric in chunk storage, as committed now,
 * those that count (see the header): a list of PromStorageEntry.
 */
List *
PromStorageEntries(void)
{
	Oid			indexid;
	Relation	rel = open_storage_catalog(AccessShareLock, &indexid);
	Snapshot	snapshot;
	SysScanDesc scan;
	HeapTuple	tuple;
	List	   *found = NIL;
	List	   *entries = NIL;
	ListCell   *lc;

	if (rel == NULL)
		return NIL;
	snapshot = RegisterSnapshot(GetLatestSnapshot());
	scan = systable_beginscan(rel, indexid, false, snapshot, 0, NULL);
	while (HeapTupleIsValid(tuple = systable_getnext(scan)))
		found = lappend(found, decode_storage_entry(rel, tuple));
	systable_endscan(scan);
	UnregisterSnapshot(snapshot);
	table_close(rel, AccessShareLock);

	foreach(lc, found)
	{
		PromStorageEntry *entry = lfirst(lc);
		PromMetricEntry *registered = PromCatalogFind(entry->metric);

		if (registered != NULL && registered->relid == entry->relation)
			entries = lappend(entries, entry);
	}
	return entries;
}

/*
 * Set a column of a metric's entry (isnull: to NULL); false when it has no
 * entry.  The caller holds the metric's lock (PromCatalogLockForWrite).
 */
static bool
set_column(const char *metric, int attnum, Datum value, bool isnull_value)
{
	Oid			indexid;
	Relation	rel = open_storage_catalog(PROM_CATALOG_WRITE_LOCK, &indexid);
	Datum		values[Natts_storage] = {0};
	bool		isnull[Natts_storage] = {0};
	bool		replace[Natts_storage] = {0};
	ScanKeyData key;
	SysScanDesc scan;
	Snapshot	snapshot;
	HeapTuple	tuple;
	bool		found;

	if (rel == NULL)
		return false;
	snapshot = RegisterSnapshot(GetLatestSnapshot());
	ScanKeyInit(&key, Anum_storage_metric, BTEqualStrategyNumber, F_TEXTEQ,
				CStringGetTextDatum(metric));
	scan = systable_beginscan(rel, indexid, true, snapshot, 1, &key);
	tuple = systable_getnext(scan);
	found = HeapTupleIsValid(tuple) && PromCatalogLockRow(rel, tuple, snapshot);
	if (found)
	{
		replace[attnum - 1] = true;
		isnull[attnum - 1] = isnull_value;
		values[attnum - 1] = value;
		CatalogTupleUpdate(rel, &tuple->t_self,
						   heap_modify_tuple(tuple, RelationGetDescr(rel),
											 values, isnull, replace));
	}
	systable_endscan(scan);
	UnregisterSnapshot(snapshot);
	table_close(rel, NoLock);
	CommandCounterIncrement();
	return found;
}

/*
 * Set the retention of a metric in chunk storage (NULL: keep its samples
 * for ever); false when it has no entry.  The caller holds the metric's
 * lock (PromCatalogLockForWrite) and checked its ownership.
 */
bool
PromStorageCatalogSetRetention(const char *metric, const Interval *retention)
{
	return set_column(metric, Anum_storage_retention,
					  PointerGetDatum(retention), retention == NULL);
}

/*
 * Move a metric's watermark: its head rows before compacted_before (ms) are
 * in chunks; false when it has no entry.  The caller holds the metric's
 * lock (PromCatalogLockForWrite).
 */
bool
PromStorageCatalogSetCompactedBefore(const char *metric, int64 compacted_before)
{
	return set_column(metric, Anum_storage_compacted_before,
					  Int64GetDatum(compacted_before), false);
}

/*
 * A metric's watermark (PG_INT64_MIN: nothing compacted, no entry, or one
 * whose head is not the one given) as a snapshot sees its entry.
 */
int64
PromStorageCompactedBefore(const char *metric, Oid head, Snapshot snapshot)
{
	Oid			indexid;
	Relation	rel = open_storage_catalog(AccessShareLock, &indexid);
	ScanKeyData key;
	SysScanDesc scan;
	HeapTuple	tuple;
	int64		compacted_before = PG_INT64_MIN;

	if (rel == NULL)
		return compacted_before;
	ScanKeyInit(&key, Anum_storage_metric, BTEqualStrategyNumber, F_TEXTEQ,
				CStringGetTextDatum(metric));
	scan = systable_beginscan(rel, indexid, true, snapshot, 1, &key);
	tuple = systable_getnext(scan);
	if (HeapTupleIsValid(tuple))
	{
		PromStorageEntry *entry = decode_storage_entry(rel, tuple);

		if (entry->head == head)
			compacted_before = entry->compacted_before;
	}
	systable_endscan(scan);
	table_close(rel, AccessShareLock);
	return compacted_before;
}

/*
 * prom_head_compacted_before(metric text, head regclass) RETURNS bigint: a
 * metric's watermark as the caller's snapshot sees it, when head is its
 * head (the least bigint when nothing is compacted, or it is not: a view
 * left behind by a metric unregistered never takes another's), which the
 * metric's view reads its head from.
 */
Datum
prom_head_compacted_before(PG_FUNCTION_ARGS)
{
	PG_RETURN_INT64(PromStorageCompactedBefore(text_to_cstring(PG_GETARG_TEXT_PP(0)),
											   PG_GETARG_OID(1), GetActiveSnapshot()));
}

/*
 * Record the relations of a metric just created in chunk storage, owned by
 * the current user, without retention or compaction; the caller holds the metric's lock
 * (PromCatalogLockForWrite).
 */
void
PromStorageCatalogStore(const PromStorageEntry *entry)
{
	Oid			indexid;
	Relation	rel = open_storage_catalog(PROM_CATALOG_WRITE_LOCK, &indexid);
	Datum		values[Natts_storage];
	bool		isnull[Natts_storage] = {0};

	if (rel == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("chunk storage needs extension promread 0.5.0"),
				 errhint("Run ALTER EXTENSION promread UPDATE.")));
	values[Anum_storage_metric - 1] = CStringGetTextDatum(entry->metric);
	values[Anum_storage_relation - 1] = ObjectIdGetDatum(entry->relation);
	values[Anum_storage_series - 1] = ObjectIdGetDatum(entry->series);
	values[Anum_storage_chunks - 1] = ObjectIdGetDatum(entry->chunks);
	values[Anum_storage_head - 1] = ObjectIdGetDatum(entry->head);
	isnull[Anum_storage_retention - 1] = true;
	values[Anum_storage_late - 1] = ObjectIdGetDatum(entry->late);
	isnull[Anum_storage_late - 1] = !OidIsValid(entry->late);
	isnull[Anum_storage_compacted_before - 1] = true;
	PromCatalogStoreRow(rel, indexid, entry->metric, values, isnull, NULL);
}

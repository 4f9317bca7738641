/*-------------------------------------------------------------------------
 *
 * retention.c
 *	  The storage catalog's entries as compaction reads them, the day
 *	  partitions of m#chunks, and retention: prom_set_retention stores it,
 *	  prom_compact carries it out (docs/chunk-storage.md).
 *
 * 1. An entry of prom_storage_catalog counts only while prom_metrics
 *    registers its metric to its relation.  Who owns that relation owns the
 *    metric: only such a role (or a superuser) compacts it or sets its
 *    retention.
 * 2. m#chunks is partitioned by range of min_time, a partition a UTC day,
 *    named after the table and the day ("m#chunks_20261206"; a name past
 *    63 bytes is cut and given a hash of the whole).  Compaction makes the
 *    partition a chunk needs when no partition holds its min_time.
 * 3. Retention: the partitions whose upper bound is at or before now() -
 *    retention are dropped, then chunks wholly older than it and head rows
 *    older than it are deleted (a chunk that straddles it stays whole).  A
 *    partition is dropped under an ACCESS EXCLUSIVE lock on m#chunks, so
 *    that a compaction that drops one waits for the metric's readers and
 *    they for it.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "catalog/indexing.h"
#include "catalog/pg_class.h"
#include "catalog/pg_inherits.h"
#include "common/hashfn.h"
#include "common/int.h"
#include "executor/spi.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "nodes/parsenodes.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/datetime.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"
#include "utils/timestamp.h"

#include "compact.h"

PG_FUNCTION_INFO_V1(prom_set_retention);

/* The storage catalog: its table, its index, its columns. */
#define STORAGE_TABLE			"prom_storage_catalog"
#define STORAGE_INDEX			"prom_storage_catalog_pkey"
#define Natts_storage			6
#define Anum_storage_metric		1
#define Anum_storage_relation	2
#define Anum_storage_series		3
#define Anum_storage_chunks		4
#define Anum_storage_head		5
#define Anum_storage_retention	6

/*---- The storage catalog ----*/

/* Decode an entry of the storage catalog. */
static PromStorageTarget *
decode_target(Relation rel, HeapTuple tuple)
{
	PromStorageTarget *target = palloc0(sizeof(PromStorageTarget));
	Datum		values[Natts_storage];
	bool		isnull[Natts_storage];

	heap_deform_tuple(tuple, RelationGetDescr(rel), values, isnull);
	target->metric = TextDatumGetCString(values[Anum_storage_metric - 1]);
	target->relation = DatumGetObjectId(values[Anum_storage_relation - 1]);
	target->series = DatumGetObjectId(values[Anum_storage_series - 1]);
	target->chunks = DatumGetObjectId(values[Anum_storage_chunks - 1]);
	target->head = DatumGetObjectId(values[Anum_storage_head - 1]);
	target->has_retention = !isnull[Anum_storage_retention - 1];
	if (target->has_retention)
		target->retention = *DatumGetIntervalP(values[Anum_storage_retention - 1]);
	return target;
}

/* Is a storage entry's metric registered to the entry's relation? */
static bool
target_counts(const PromStorageTarget *target)
{
	PromMetricEntry *entry = PromCatalogFind(target->metric);

	return entry != NULL && entry->relid == target->relation;
}

/*
 * The metrics of chunk storage that count (see 1. above): the one named,
 * or all when metric is NULL.  A metric named that is not in chunk storage
 * is refused: 42704 when it is not registered, 42809 when it is in row
 * storage.
 */
List *
PromStorageTargets(const char *metric)
{
	Oid			indexid;
	Relation	rel = PromCatalogOpenTable(STORAGE_TABLE, STORAGE_INDEX,
										   AccessShareLock, &indexid);
	Snapshot	snapshot = RegisterSnapshot(GetLatestSnapshot());
	ScanKeyData key;
	SysScanDesc scan;
	HeapTuple	tuple;
	List	   *found = NIL;
	List	   *targets = NIL;
	ListCell   *lc;

	if (metric != NULL)
		ScanKeyInit(&key, Anum_storage_metric, BTEqualStrategyNumber,
					F_TEXTEQ, CStringGetTextDatum(metric));
	scan = systable_beginscan(rel, indexid, metric != NULL, snapshot,
							  metric != NULL ? 1 : 0, &key);
	while (HeapTupleIsValid(tuple = systable_getnext(scan)))
		found = lappend(found, decode_target(rel, tuple));
	systable_endscan(scan);
	UnregisterSnapshot(snapshot);
	table_close(rel, AccessShareLock);

	foreach(lc, found)
	{
		if (target_counts(lfirst(lc)))
			targets = lappend(targets, lfirst(lc));
	}
	if (metric != NULL && targets == NIL)
	{
		if (PromCatalogFind(metric) != NULL)
			ereport(ERROR,
					(errcode(ERRCODE_WRONG_OBJECT_TYPE),
					 errmsg("metric \"%s\" is not stored in chunks", metric),
					 errdetail("Its samples are rows of its relation; compaction and retention apply to metrics created in chunk storage.")));
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("metric \"%s\" does not exist", metric)));
	}
	return targets;
}

/* Does the current user own a metric (see 1. above)? */
bool
PromStorageOwns(const PromStorageTarget *target)
{
	return pg_class_ownercheck(target->relation, GetUserId());
}

/* Raise 42501 unless the current user owns a metric. */
void
PromStorageCheckOwner(const PromStorageTarget *target)
{
	char	   *name = get_rel_name(target->relation);

	if (!PromStorageOwns(target))
		aclcheck_error(ACLCHECK_NOT_OWNER,
					   get_relkind_objtype(get_rel_relkind(target->relation)),
					   name != NULL ? name : target->metric);
}

/*---- Day partitions ----*/

/* A bound of a range partition: its value, or the given end for MIN/MAX. */
static int64
range_bound(PartitionRangeDatum *datum, int64 unbounded)
{
	if (datum->kind != PARTITION_RANGE_DATUM_VALUE)
		return unbounded;
	return DatumGetInt64(castNode(Const, datum->value)->constvalue);
}

/*
 * The range [lo, hi) of min_time a partition of m#chunks holds; false for
 * a default partition.
 */
static bool
partition_range(Oid partition, int64 *lo, int64 *hi)
{
	HeapTuple	tuple = SearchSysCache1(RELOID, ObjectIdGetDatum(partition));
	PartitionBoundSpec *spec;
	Datum		bound;
	bool		isnull;

	if (!HeapTupleIsValid(tuple))
		elog(ERROR, "cache lookup failed for relation %u", partition);
	bound = SysCacheGetAttr(RELOID, tuple, Anum_pg_class_relpartbound, &isnull);
	if (isnull)
		elog(ERROR, "relation %u is not a partition", partition);
	spec = castNode(PartitionBoundSpec, stringToNode(TextDatumGetCString(bound)));
	ReleaseSysCache(tuple);
	if (spec->is_default)
		return false;
	*lo = range_bound(linitial(spec->lowerdatums), PG_INT64_MIN);
	*hi = range_bound(linitial(spec->upperdatums), PG_INT64_MAX);
	return true;
}

/* A relation's name, schema-qualified and quoted. */
static char *
qualified_name(Oid relid, const char *relname)
{
	return quote_qualified_identifier(get_namespace_name(get_rel_namespace(relid)),
									  relname);
}

/*
 * The name of the partition of day (since the Unix epoch) of a chunks
 * table: its name, '_' and the date as YYYYMMDD (days outside the years 1
 * to 9999 by their number), cut with a hash as 2. above says.
 */
static char *
partition_name(const char *chunks, int64 day)
{
	char		suffix[32];
	int			year = 0;
	int			month;
	int			mday;
	int			len = strlen(chunks);

	if (day >= -UNIX_EPOCH_JDATE && day < PG_INT32_MAX - UNIX_EPOCH_JDATE)
		j2date((int) (day + UNIX_EPOCH_JDATE), &year, &month, &mday);
	if (year >= 1 && year <= 9999)
		snprintf(suffix, sizeof(suffix), "_%04d%02d%02d", year, month, mday);
	else
		snprintf(suffix, sizeof(suffix), "_day%lld", (long long) day);
	if (len + strlen(suffix) < NAMEDATALEN)
		return psprintf("%s%s", chunks, suffix);
	len = pg_mbcliplen(chunks, len, NAMEDATALEN - 1 - 9 - (int) strlen(suffix));
	return psprintf("%.*s_%08x%s", len, chunks,
					hash_bytes((const unsigned char *) chunks, (int) strlen(chunks)),
					suffix);
}

/*
 * Make the partition of a chunks table for a day; runs within SPI.  Sets
 * the range of min_time it holds.
 */
static void
create_partition(Oid chunks, int64 day, int64 *lo, int64 *hi)
{
	char	   *relname = get_rel_name(chunks);
	char	   *name = partition_name(relname, day);
	char	   *from;
	char	   *to;

	/* the first and last days of int64's range are open-ended */
	if (pg_mul_s64_overflow(day, PROM_DAY_MS, lo))
	{
		*lo = PG_INT64_MIN;
		from = "MINVALUE";
	}
	else
		from = psprintf(INT64_FORMAT, *lo);
	if (pg_mul_s64_overflow(day + 1, PROM_DAY_MS, hi))
	{
		*hi = PG_INT64_MAX;
		to = "MAXVALUE";
	}
	else
		to = psprintf(INT64_FORMAT, *hi);
	if (SPI_execute(psprintf("CREATE TABLE %s PARTITION OF %s FOR VALUES FROM (%s) TO (%s)",
							 qualified_name(chunks, name),
							 qualified_name(chunks, relname), from, to),
					false, 0) != SPI_OK_UTILITY)
		elog(ERROR, "could not create partition %s", name);
	CommandCounterIncrement();
}

/*
 * Make sure a partition of cache->chunks holds min_time t, making the one of
 * its day when none does; runs within SPI.  The cache keeps the range of
 * the last partition found or made.
 */
void
PromChunkPartitionEnsure(PromPartitionCache *cache, int64 t)
{
	List	   *partitions;
	ListCell   *lc;

	if (cache->valid && t >= cache->lo && t < cache->hi)
		return;
	cache->valid = true;
	partitions = find_inheritance_children(cache->chunks, NoLock);
	foreach(lc, partitions)
	{
		if (partition_range(lfirst_oid(lc), &cache->lo, &cache->hi) &&
			t >= cache->lo && t < cache->hi)
			return;
	}
	create_partition(cache->chunks, PromFloorDiv(t, PROM_DAY_MS),
					 &cache->lo, &cache->hi);
}

/*---- Retention ----*/

/*
 * Carry out a metric's retention (see 3. above) on its chunks and head
 * tables (quoted, qualified names), now_ms being now(); runs within SPI.
 */
void
PromApplyRetention(const PromStorageTarget *target, const char *chunks,
				   const char *head, int64 now_ms)
{
	TimestampTz now = PromMsToTimestamp(now_ms);
	int64		cutoff;
	List	   *partitions;
	ListCell   *lc;
	Oid			types[1] = {INT8OID};
	Datum		args[1];

	if (!target->has_retention)
		return;
	cutoff = PromTimestamptzArgToMs(DatumGetTimestampTz(
		DirectFunctionCall2(timestamptz_mi_interval, TimestampTzGetDatum(now),
							IntervalPGetDatum(&target->retention))));

	partitions = find_inheritance_children(target->chunks, NoLock);
	foreach(lc, partitions)
	{
		Oid			partition = lfirst_oid(lc);
		int64		lo;
		int64		hi;

		CHECK_FOR_INTERRUPTS();
		if (!partition_range(partition, &lo, &hi) || hi > cutoff)
			continue;
		if (SPI_execute(psprintf("DROP TABLE %s",
								 qualified_name(partition, get_rel_name(partition))),
						false, 0) != SPI_OK_UTILITY)
			elog(ERROR, "could not drop partition %u", partition);
	}

	args[0] = Int64GetDatum(cutoff);
	if (SPI_execute_with_args(psprintf("DELETE FROM %s WHERE min_time < $1 AND max_time < $1",
									   chunks),
							  1, types, args, NULL, false, 0) != SPI_OK_DELETE ||
		SPI_execute_with_args(psprintf("DELETE FROM %s WHERE t < $1", head),
							  1, types, args, NULL, false, 0) != SPI_OK_DELETE)
		elog(ERROR, "could not delete samples past retention");
}

/*
 * prom_set_retention(metric text, retention interval): store a metric's
 * retention (NULL: keep everything), which prom_compact carries out.  The
 * metric's owner only; a retention must be positive.
 */
Datum
prom_set_retention(PG_FUNCTION_ARGS)
{
	char	   *metric;
	PromStorageTarget *target;
	Relation	rel;
	Oid			indexid;
	Snapshot	snapshot;
	ScanKeyData key;
	SysScanDesc scan;
	HeapTuple	old;
	Datum		values[Natts_storage] = {0};
	bool		isnull[Natts_storage] = {0};
	bool		replace[Natts_storage] = {0};

	if (PG_ARGISNULL(0))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("metric must not be null")));
	metric = text_to_cstring(PG_GETARG_TEXT_PP(0));
	if (!PG_ARGISNULL(1))
	{
		Interval   *zero = palloc0(sizeof(Interval));

		if (!DatumGetBool(DirectFunctionCall2(interval_gt, PG_GETARG_DATUM(1),
											  IntervalPGetDatum(zero))))
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("retention must be positive"),
					 errhint("Use NULL to keep every sample.")));
	}
	PreventCommandIfReadOnly("prom_set_retention()");

	target = linitial(PromStorageTargets(metric));
	PromStorageCheckOwner(target);

	rel = PromCatalogOpenTable(STORAGE_TABLE, STORAGE_INDEX,
							   PROM_CATALOG_WRITE_LOCK, &indexid);
	PromCatalogLockName(rel, metric);
	snapshot = RegisterSnapshot(GetLatestSnapshot());
	ScanKeyInit(&key, Anum_storage_metric, BTEqualStrategyNumber, F_TEXTEQ,
				CStringGetTextDatum(metric));
	scan = systable_beginscan(rel, indexid, true, snapshot, 1, &key);
	old = systable_getnext(scan);
	if (!HeapTupleIsValid(old))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("metric \"%s\" does not exist", metric)));
	replace[Anum_storage_retention - 1] = true;
	isnull[Anum_storage_retention - 1] = PG_ARGISNULL(1);
	values[Anum_storage_retention - 1] = PG_ARGISNULL(1) ? (Datum) 0 :
		PG_GETARG_DATUM(1);
	CatalogTupleUpdate(rel, &old->t_self,
					   heap_modify_tuple(old, RelationGetDescr(rel), values,
										 isnull, replace));
	systable_endscan(scan);
	UnregisterSnapshot(snapshot);
	table_close(rel, NoLock);
	CommandCounterIncrement();
	PG_RETURN_VOID();
}

/*-------------------------------------------------------------------------
 *
 * retention.c
 *	  The metrics compaction acts on, and retention: prom_set_retention
 *	  stores it, prom_compact carries it out (docs/chunk-storage.md).
 *
 * 1. Who owns a metric's registered view owns the metric: only such a role
 *    (or a superuser) compacts it or sets its retention.
 * 2. Retention: the partitions of m#chunks whose upper bound is at or
 *    before now() - retention are dropped, then chunks wholly older than
 *    it and head and late rows older than it are deleted (a chunk that
 *    straddles it stays whole; head rows before the watermark are in
 *    chunks, and head.c drops their partitions).  Dropping a partition
 *    takes ACCESS EXCLUSIVE on m#chunks, so that a compaction that drops
 *    one waits for the metric's readers (ACCESS SHARE), and they for it,
 *    until it commits.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/relation.h"
#include "access/xact.h"
#include "catalog/pg_class.h"
#include "catalog/pg_inherits.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "nodes/parsenodes.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/syscache.h"
#include "utils/timestamp.h"

#include "storage/storage.h"

PG_FUNCTION_INFO_V1(prom_set_retention);

/*
 * The metrics of chunk storage compaction acts on: the one named, or all
 * when metric is NULL.  A metric named that is not in chunk storage is
 * refused: 42704 when it is not registered, 42809 when it is in row
 * storage.
 */
List *
PromCompactEntries(const char *metric)
{
	PromStorageEntry *entry;

	if (metric == NULL)
		return PromStorageEntries();
	entry = PromStorageLookup(metric);
	if (entry != NULL)
		return list_make1(entry);
	if (PromCatalogFind(metric) != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("metric \"%s\" is not stored in chunks", metric),
				 errdetail("Its samples are rows of its relation; compaction and retention apply to metrics in chunk storage.")));
	ereport(ERROR,
			(errcode(ERRCODE_UNDEFINED_OBJECT),
			 errmsg("metric \"%s\" does not exist", metric)));
	pg_unreachable();
}

/* Does the current user own a metric (see 1. above)? */
bool
PromCompactOwns(const PromStorageEntry *entry)
{
	return pg_class_ownercheck(entry->relation, GetUserId());
}

/* Raise 42501 unless the current user owns a metric. */
void
PromCompactCheckOwner(const PromStorageEntry *entry)
{
	char	   *name = get_rel_name(entry->relation);

	if (!PromCompactOwns(entry))
		aclcheck_error(ACLCHECK_NOT_OWNER,
					   get_relkind_objtype(get_rel_relkind(entry->relation)),
					   name != NULL ? name : entry->metric);
}

/*---- Retention ----*/

/*
 * The upper bound of the min_time a partition of m#chunks holds; false for
 * a default partition, or one up to MAXVALUE.
 */
static bool
partition_upper_bound(Oid partition, int64 *hi)
{
	HeapTuple	tuple = SearchSysCache1(RELOID, ObjectIdGetDatum(partition));
	PartitionBoundSpec *spec;
	PartitionRangeDatum *upper;
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
	upper = linitial_node(PartitionRangeDatum, spec->upperdatums);
	if (upper->kind != PARTITION_RANGE_DATUM_VALUE)
		return false;
	*hi = DatumGetInt64(castNode(Const, upper->value)->constvalue);
	return true;
}

/*
 * Carry out a metric's retention (see 2. above) on its chunks and head
 * tables (quoted, qualified names), now_ms being now(); runs within SPI.
 */
void
PromApplyRetention(const PromStorageEntry *entry, const char *chunks,
				   const char *head, int64 now_ms)
{
	TimestampTz now = PromMsToTimestamp(now_ms);
	int64		cutoff;
	List	   *partitions;
	ListCell   *lc;
	Oid			types[2] = {INT8OID, INT8OID};
	Datum		args[2];
	Relation	head_rel;
	PromHeadWindow *windows;
	int			nwindows;
	Oid			default_partition;

	if (!entry->has_retention)
		return;
	cutoff = PromTimestamptzArgToMs(DatumGetTimestampTz(
		DirectFunctionCall2(timestamptz_mi_interval, TimestampTzGetDatum(now),
							IntervalPGetDatum(&entry->retention))));

	partitions = find_inheritance_children(entry->chunks, NoLock);
	foreach(lc, partitions)
	{
		Oid			partition = lfirst_oid(lc);
		int64		hi;

		CHECK_FOR_INTERRUPTS();
		if (!partition_upper_bound(partition, &hi) || hi > cutoff)
			continue;
		if (SPI_execute(psprintf("DROP TABLE %s", PromQuotedRelationName(partition)),
						false, 0) != SPI_OK_UTILITY)
			elog(ERROR, "could not drop partition %u", partition);
	}

	/*
	 * head rows of window partitions before the watermark are in chunks:
	 * their partitions go (head.c); the default partition's rows are not
	 */
	head_rel = relation_open(entry->head, NoLock);
	PromHeadWindows(head_rel, &windows, &nwindows, &default_partition);
	relation_close(head_rel, NoLock);
	args[0] = Int64GetDatum(cutoff);
	args[1] = Int64GetDatum(entry->compacted_before);
	if (SPI_execute_with_args(psprintf("DELETE FROM %s WHERE min_time < $1 AND max_time < $1",
									   chunks),
							  1, types, args, NULL, false, 0) != SPI_OK_DELETE ||
		SPI_execute_with_args(psprintf("DELETE FROM %s WHERE t < $1 AND t >= $2", head),
							  2, types, args, NULL, false, 0) != SPI_OK_DELETE ||
		(OidIsValid(entry->late) &&
		 SPI_execute_with_args(psprintf("DELETE FROM %s WHERE t < $1",
										PromQuotedRelationName(entry->late)),
							   1, types, args, NULL, false, 0) != SPI_OK_DELETE) ||
		(OidIsValid(default_partition) &&
		 SPI_execute_with_args(psprintf("DELETE FROM %s WHERE t < $1",
										PromQuotedRelationName(default_partition)),
							   1, types, args, NULL, false, 0) != SPI_OK_DELETE))
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
	PromStorageEntry *entry;

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
		/* now() - retention must be a time (22008 otherwise), then always */
		(void) DirectFunctionCall2(timestamptz_mi_interval,
								   TimestampTzGetDatum(GetCurrentTransactionStartTimestamp()),
								   PG_GETARG_DATUM(1));
	}
	PreventCommandIfReadOnly("prom_set_retention()");
	entry = linitial(PromCompactEntries(metric));
	PromCompactCheckOwner(entry);
	PromCatalogLockForWrite(metric);
	/* gone meanwhile: as if it had never been */
	if (!PromStorageCatalogSetRetention(metric, PG_ARGISNULL(1) ? NULL :
										PG_GETARG_INTERVAL_P(1)))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("metric \"%s\" does not exist", metric)));
	PG_RETURN_VOID();
}

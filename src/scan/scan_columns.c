/*-------------------------------------------------------------------------
 *
 * scan_columns.c
 *	  A scan's relation and columns (scan.c, scan_chunks.c): the metric's
 *	  relation locked before its registered columns are read, so that no
 *	  DDL changes them until the transaction ends, and a registration that
 *	  no longer fits them reported: an error for a query that names the
 *	  metric, a warning once a call for one that selects it otherwise.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/namespace.h"
#include "promread.h"
#include "scan_internal.h"
#include "storage/lmgr.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/syscache.h"

/* Metrics whose misfit this call has reported (report_misfit). */
static List *warned_misfits = NIL;

/*
 * Report a registration that no longer fits its relation (a registered
 * column dropped, renamed or re-typed).  A query that names the metric
 * fails; one that selects it otherwise skips it, with a warning once per
 * call, so that one broken registration does not fail every query that
 * selects metrics by their labels.
 */
static void
report_misfit(const PromMetricEntry *entry, bool named, int sqlstate,
			  const char *problem)
{
	if (!named)
	{
		MemoryContext oldcxt;

		if (list_member_oid(warned_misfits, entry->relid))
			return;
		oldcxt = MemoryContextSwitchTo(TopMemoryContext);
		warned_misfits = lappend_oid(warned_misfits, entry->relid);
		MemoryContextSwitchTo(oldcxt);
	}
	ereport(named ? ERROR : WARNING,
			(errcode(sqlstate),
			 errmsg("%s", problem),
			 named ? 0 :
			 errdetail("Metric \"%s\" is skipped by queries that do not name it.",
					   entry->metric),
			 errhint("Register the metric again with prom_register().")));
}

/*
 * Forget which misfits were reported: called when a read begins.  The list
 * lives in TopMemoryContext, so that a read nested in another (a metric
 * view that calls prom_series) cannot leave it pointing at freed memory.
 */
void
PromScanBeginCall(void)
{
	list_free(warned_misfits);
	warned_misfits = NIL;
}

/*
 * Lock the metric's relation before reading its columns, so that no DDL
 * changes them until the transaction ends, and check that it can be read.
 * False when it is to be skipped: dropped since the catalog was read (its
 * entry goes with it), or another session's temporary table, which no
 * other session can read.
 */
bool
PromScanLockRelation(const PromMetricEntry *entry, bool named)
{
	Oid			relid = entry->relid;

	LockRelationOid(relid, AccessShareLock);
	if (!SearchSysCacheExists1(RELOID, ObjectIdGetDatum(relid)))
	{
		UnlockRelationOid(relid, AccessShareLock);
		return false;
	}
	if (get_rel_persistence(relid) == RELPERSISTENCE_TEMP &&
		!isTempOrTempToastNamespace(get_rel_namespace(relid)))
	{
		if (named)
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("metric \"%s\" is a temporary relation of another session",
							entry->metric),
					 errhint("Unregister the metric with prom_unregister().")));
		return false;
	}
	return true;
}

/*
 * Read a registered column of a locked relation (the metric's, or a table of
 * its chunk storage): its declared type (the scan's result type), base type
 * and collation.  False when it is missing (reported).
 */
bool
PromScanReadColumn(const PromMetricEntry *entry, Oid relid, const char *name,
				   bool named, MetricColumn *column)
{
	AttrNumber	attnum = get_attnum(relid, name);
	int32		typmod;

	column->name = name;
	if (attnum == InvalidAttrNumber)
	{
		report_misfit(entry, named, ERRCODE_UNDEFINED_COLUMN,
					  psprintf("column \"%s\" of relation \"%s\" registered for metric \"%s\" does not exist",
							   name, get_rel_name(relid), entry->metric));
		return false;
	}
	get_atttypetypmodcoll(relid, attnum, &column->type, &typmod,
						  &column->collation);
	column->basetype = getBaseType(column->type);
	return true;
}

/* Check a time or value column's type; false (reported) when it is not one. */
bool
PromScanCheckColumnType(const PromMetricEntry *entry, bool named,
				  const MetricColumn *column, const char *role, bool ok)
{
	if (!ok)
		report_misfit(entry, named, ERRCODE_DATATYPE_MISMATCH,
					  psprintf("%s column \"%s\" of metric \"%s\" has type %s",
							   role, column->name, entry->metric,
							   format_type_be(column->type)));
	return ok;
}

/*
 * Read the registered label columns, then the column of overflow labels if
 * any, of a locked relation (the metric's, or its chunk storage's series
 * table): false when the registration no longer fits them (reported).
 */
bool
PromScanReadLabelColumns(const PromMetricEntry *entry, Oid relid, bool named,
						 MetricColumn *labels)
{
	int			i;

	for (i = 0; i < entry->nlabels; i++)
	{
		if (!PromScanReadColumn(entry, relid, entry->label_columns[i], named,
								&labels[i]))
			return false;
		labels[i].label = entry->label_names[i];
		labels[i].kind = PromLabelKindOf(labels[i].type);
	}
	if (entry->overflow_column != NULL)
	{
		MetricColumn *overflow = &labels[entry->nlabels];

		if (!PromScanReadColumn(entry, relid, entry->overflow_column, named,
								overflow) ||
			!PromScanCheckColumnType(entry, named, overflow, "overflow labels",
							   overflow->basetype == JSONBOID))
			return false;
		/* no label's name: its labels are its values' */
		overflow->label = "";
		overflow->kind = PROM_LABEL_BINARY;
	}
	return true;
}

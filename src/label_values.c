/*-------------------------------------------------------------------------
 *
 * label_values.c
 *	  The distinct values of a label column, read through a btree index that
 *	  leads with it, one descent of the index per value.
 *
 * A regex that is not a literal set, or a negative matcher, cannot be
 * answered by an index: read row by row, a selector that keeps a tenth of
 * the series (instance=~"host-.*5") would still read every row.  Prometheus
 * decides such a matcher over the label values of its index and reads only
 * the series that pass; this file gives scan.c the same start.  When a
 * btree index leads with the label column, the column's distinct values are
 * read with a recursive query that takes the least value above the last one
 * (a loose index scan):
 *
 *   WITH RECURSIVE v(x) AS (
 *       (SELECT col FROM rel WHERE col IS NOT NULL ORDER BY col LIMIT 1)
 *     UNION ALL
 *       SELECT (SELECT col FROM rel WHERE col > v.x ORDER BY col LIMIT 1)
 *       FROM v WHERE v.x IS NOT NULL)
 *   SELECT x FROM v WHERE x IS NOT NULL LIMIT $max
 *
 * scan.c decides the matcher on each value and reads the accepted ones
 * with "col = ANY($n)", which the same index serves.  It costs a descent
 * per value, so it is done only when ANALYZE's statistics give the column
 * many rows per value (LABEL_VALUES_MIN_ROWS) and few values
 * (LABEL_VALUES_MAX); a column with more values than its statistics said
 * is left to the engine's per-value verdicts (layout.c), as is a relation
 * without statistics.  The values are those of the whole relation, not of
 * the query's time range: the time range then selects among their rows.
 *
 * The query runs as the caller, so privileges and row-level security apply
 * as to the scan.  It takes its own snapshot: a value first inserted
 * between it and the scan is not read, as if the read had begun a moment
 * earlier.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/relation.h"
#include "catalog/pg_am.h"
#include "catalog/pg_class.h"
#include "catalog/pg_index.h"
#include "catalog/pg_statistic.h"
#include "catalog/pg_type.h"
#include "commands/defrem.h"
#include "executor/spi.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "promread.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/pg_locale.h"
#include "utils/rel.h"
#include "utils/syscache.h"

/* Fewer rows per value than this (by ANALYZE) and every row is read. */
#define LABEL_VALUES_MIN_ROWS	16

/* More values than this (by ANALYZE) and every row is read. */
#define LABEL_VALUES_MAX		100000

/*
 * Does a valid, non-partial btree index of the relation lead with the
 * column, under the column's collation and its type's default operator
 * class, so that it returns the column's values in order?  The relation is
 * locked.
 */
static bool
index_orders_column(Oid relid, AttrNumber attnum, Oid type, Oid collation)
{
	Relation	rel = relation_open(relid, NoLock);
	Oid			opclass = GetDefaultOpClass(type, BTREE_AM_OID);
	List	   *indexes = RelationGetIndexList(rel);
	ListCell   *lc;
	bool		found = false;

	relation_close(rel, NoLock);
	foreach(lc, indexes)
	{
		Oid			indexid = lfirst_oid(lc);
		HeapTuple	tuple = SearchSysCache1(INDEXRELID, ObjectIdGetDatum(indexid));
		Form_pg_index index;
		oidvector  *collations;
		oidvector  *opclasses;
		bool		isnull;

		if (!HeapTupleIsValid(tuple))
			continue;
		index = (Form_pg_index) GETSTRUCT(tuple);
		collations = (oidvector *) DatumGetPointer(SysCacheGetAttr(INDEXRELID, tuple,
																   Anum_pg_index_indcollation,
																   &isnull));
		opclasses = (oidvector *) DatumGetPointer(SysCacheGetAttr(INDEXRELID, tuple,
																  Anum_pg_index_indclass,
																  &isnull));
		found = index->indisvalid && index->indkey.values[0] == attnum &&
			heap_attisnull(tuple, Anum_pg_index_indpred, NULL) &&
			collations->values[0] == collation &&
			opclasses->values[0] == opclass;
		ReleaseSysCache(tuple);
		if (found)
		{
			HeapTuple	classtuple = SearchSysCache1(RELOID, ObjectIdGetDatum(indexid));

			found = HeapTupleIsValid(classtuple) &&
				((Form_pg_class) GETSTRUCT(classtuple))->relam == BTREE_AM_OID;
			if (HeapTupleIsValid(classtuple))
				ReleaseSysCache(classtuple);
		}
		if (found)
			break;
	}
	list_free(indexes);
	return found;
}

/*
 * The number of distinct values ANALYZE found in the column, when it found
 * at least LABEL_VALUES_MIN_ROWS rows per value; 0 otherwise, or without
 * statistics.
 */
static double
values_worth_reading(Oid relid, AttrNumber attnum)
{
	bool		inherited = get_rel_relkind(relid) == RELKIND_PARTITIONED_TABLE;
	HeapTuple	tuple;
	double		distinct;
	double		rows = 0;

	tuple = SearchSysCache3(STATRELATTINH, ObjectIdGetDatum(relid),
							Int16GetDatum(attnum), BoolGetDatum(inherited));
	if (!HeapTupleIsValid(tuple))
		return 0;
	distinct = ((Form_pg_statistic) GETSTRUCT(tuple))->stadistinct;
	ReleaseSysCache(tuple);

	tuple = SearchSysCache1(RELOID, ObjectIdGetDatum(relid));
	if (HeapTupleIsValid(tuple))
	{
		rows = ((Form_pg_class) GETSTRUCT(tuple))->reltuples;
		ReleaseSysCache(tuple);
	}
	if (distinct < 0)
		distinct = -distinct * rows;	/* a fraction of the rows */
	if (distinct < 1 || rows < distinct * LABEL_VALUES_MIN_ROWS ||
		distinct > LABEL_VALUES_MAX)
		return 0;
	return distinct;
}

/*
 * Read the distinct non-NULL values of a label column (text, varchar or a
 * domain over them, of a deterministic collation) through an index, when
 * one serves and the statistics say it pays (see above).  lower and upper,
 * when not NULL, bound the values read, bytewise, and are used only on a
 * "C" column (a regex's literal prefix).  Returns the values as text
 * Datums, in the caller's memory context, or NULL when they were not read.
 * The relation is locked; the caller is connected to SPI.
 */
Datum *
PromReadLabelValues(Oid relid, const char *column, text *lower, text *upper,
					int *nvalues)
{
	AttrNumber	attnum = get_attnum(relid, column);
	Oid			type;
	int32		typmod;
	Oid			collation;
	double		expected;
	int			max_values;
	const char *quoted = quote_identifier(column);
	const char *relation;
	StringInfoData first;
	StringInfoData next;
	StringInfoData sql;
	Oid			types[3] = {TEXTOID, TEXTOID, INT4OID};
	Datum		args[3] = {0, 0, 0};
	char		nulls[3] = {'n', 'n', ' '};
	Datum	   *values;
	MemoryContext callercxt = CurrentMemoryContext;
	uint64		i;
	int			rc;

	if (attnum == InvalidAttrNumber)
		return NULL;
	get_atttypetypmodcoll(relid, attnum, &type, &typmod, &collation);
	type = getBaseType(type);
	if (!OidIsValid(collation) || !get_collation_isdeterministic(collation) ||
		(pg_attribute_aclcheck(relid, attnum, GetUserId(), ACL_SELECT) != ACLCHECK_OK &&
		 pg_class_aclcheck(relid, GetUserId(), ACL_SELECT) != ACLCHECK_OK))
		return NULL;
	expected = values_worth_reading(relid, attnum);
	if (expected == 0 || !index_orders_column(relid, attnum, type, collation))
		return NULL;
	/* a column that grew past twice its statistics is left to the engine */
	max_values = (int) Min(2 * expected + 1000, 2 * LABEL_VALUES_MAX);

	relation = PromQuotedRelationName(relid);
	if (!lc_collate_is_c(collation))
		lower = upper = NULL;
	initStringInfo(&first);
	initStringInfo(&next);
	appendStringInfo(&first, "%s IS NOT NULL", quoted);
	if (lower != NULL)
	{
		appendStringInfo(&first, " AND %s OPERATOR(pg_catalog.>=) $1", quoted);
		args[0] = PointerGetDatum(lower);
		nulls[0] = ' ';
	}
	if (upper != NULL)
	{
		appendStringInfo(&first, " AND %s OPERATOR(pg_catalog.<) $2", quoted);
		appendStringInfo(&next, " AND %s OPERATOR(pg_catalog.<) $2", quoted);
		args[1] = PointerGetDatum(upper);
		nulls[1] = ' ';
	}
	args[2] = Int32GetDatum(max_values + 1);

	initStringInfo(&sql);
	appendStringInfo(&sql,
					 "WITH RECURSIVE v(x) AS ("
					 "(SELECT %s FROM %s WHERE %s ORDER BY 1 LIMIT 1) UNION ALL "
					 "SELECT (SELECT %s FROM %s WHERE %s OPERATOR(pg_catalog.>) v.x%s "
					 "ORDER BY 1 LIMIT 1) FROM v WHERE v.x IS NOT NULL) "
					 "SELECT CAST(x AS pg_catalog.text) FROM v WHERE x IS NOT NULL "
					 "LIMIT $3",
					 quoted, relation, first.data,
					 quoted, relation, quoted, next.data);
	rc = SPI_execute_with_args(sql.data, 3, types, args, nulls, true, 0);
	if (rc != SPI_OK_SELECT)
		elog(ERROR, "promread read of label values failed: %s",
			 SPI_result_code_string(rc));
	if (SPI_processed > (uint64) max_values)
	{
		SPI_freetuptable(SPI_tuptable);
		return NULL;
	}

	values = MemoryContextAlloc(callercxt, sizeof(Datum) * Max(SPI_processed, 1));
	for (i = 0; i < SPI_processed; i++)
	{
		bool		isnull;
		Datum		value = SPI_getbinval(SPI_tuptable->vals[i],
										  SPI_tuptable->tupdesc, 1, &isnull);
		MemoryContext oldcxt = MemoryContextSwitchTo(callercxt);

		values[i] = PointerGetDatum(DatumGetTextPCopy(value));
		MemoryContextSwitchTo(oldcxt);
	}
	*nvalues = (int) SPI_processed;
	SPI_freetuptable(SPI_tuptable);
	return values;
}

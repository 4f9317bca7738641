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
 * prom_regex_label_values is the same read as a SQL function, the values a
 * regex accepts, for any table: through such an index when there is one,
 * else by reading the column.  prom_regex_match's planner support
 * (regex_support.c) makes it an index condition, so that a shard sent a
 * regex as prom_regex_match does what scan.c does here.
 *
 * The query runs with the rights of the scan it serves.  As the caller,
 * usually: privileges and row-level security apply as to the caller's
 * scan.  A table read through a view is checked as the view's owner,
 * whose policies apply (their expressions still evaluated as the caller):
 * its index condition then passes that role as a prom_scan_role, a type
 * whose values only the planner makes (its input is refused), and the
 * query's references to the relation are checked as that role, as the
 * view's expansion marks the scan's (check_as_post_parse_analyze).  So
 * the listing reads exactly the rows the scan may read.  It takes its own
 * snapshot: a value first inserted between it and the scan is not read, as
 * if the read had begun a moment earlier.  Statistics far out of date
 * bound the index's descents (read_values_through_index).
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
#include "nodes/nodeFuncs.h"
#include "parser/analyze.h"
#include "parser/parse_relation.h"
#include "promread.h"
#include "scan.h"
#include "utils/acl.h"
#include "utils/array.h"
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
 * The number of distinct values ANALYZE found in the column (0 without
 * statistics), and the relation's rows by the same count.
 */
static double
analyzed_values(Oid relid, AttrNumber attnum, double *rows)
{
	bool		inherited = get_rel_relkind(relid) == RELKIND_PARTITIONED_TABLE;
	HeapTuple	tuple;
	double		distinct;

	*rows = 0;
	tuple = SearchSysCache3(STATRELATTINH, ObjectIdGetDatum(relid),
							Int16GetDatum(attnum), BoolGetDatum(inherited));
	if (!HeapTupleIsValid(tuple))
		return 0;
	distinct = ((Form_pg_statistic) GETSTRUCT(tuple))->stadistinct;
	ReleaseSysCache(tuple);

	tuple = SearchSysCache1(RELOID, ObjectIdGetDatum(relid));
	if (HeapTupleIsValid(tuple))
	{
		*rows = ((Form_pg_class) GETSTRUCT(tuple))->reltuples;
		ReleaseSysCache(tuple);
	}
	if (distinct < 0)
		distinct = -distinct * *rows;	/* a fraction of the rows */
	return Max(distinct, 0);
}

/*
 * The number of distinct values ANALYZE found in the column, when it found
 * at least LABEL_VALUES_MIN_ROWS rows per value; 0 otherwise, or without
 * statistics.
 */
static double
values_worth_reading(Oid relid, AttrNumber attnum)
{
	double		rows;
	double		distinct = analyzed_values(relid, attnum, &rows);

	if (distinct < 1 || rows < distinct * LABEL_VALUES_MIN_ROWS ||
		distinct > LABEL_VALUES_MAX)
		return 0;
	return distinct;
}

/*
 * Does ANALYZE say that listing the column's values pays: many rows per
 * value and not too many values (see above)?
 */
bool
PromLabelValuesWorthReading(Oid relid, AttrNumber attnum)
{
	return values_worth_reading(relid, attnum) > 0;
}

/*
 * The relation whose references the next parse analysis marks to be
 * checked as check_as_role, while check_as_pending; see the header.
 */
static Oid	check_as_relid = InvalidOid;
static Oid	check_as_role = InvalidOid;
static bool check_as_pending = false;
static post_parse_analyze_hook_type previous_post_parse_analyze_hook = NULL;

/* Mark every reference to check_as_relid in a query tree, subqueries included. */
static bool
mark_check_as(Node *node, void *context)
{
	if (node == NULL)
		return false;
	if (IsA(node, Query))
	{
		Query	   *query = (Query *) node;
		ListCell   *lc;

		foreach(lc, query->rtable)
		{
			RangeTblEntry *rte = lfirst_node(RangeTblEntry, lc);

			if (rte->rtekind == RTE_RELATION && rte->relid == check_as_relid)
				PromSetCheckAsUser(query, rte, check_as_role);
		}
		return query_tree_walker(query, mark_check_as, context, 0);
	}
	return expression_tree_walker(node, mark_check_as, context);
}

/*
 * post_parse_analyze_hook, set while the listing's statement runs: marks
 * that statement's references to the relation, once, before its rewriting
 * applies the row-level security of the role it checks as.
 */
static void
check_as_post_parse_analyze(ParseState *pstate, Query *query, JumbleState *jstate)
{
	if (previous_post_parse_analyze_hook != NULL)
		previous_post_parse_analyze_hook(pstate, query, jstate);
	if (!check_as_pending)
		return;
	check_as_pending = false;
	(void) mark_check_as((Node *) query, NULL);
}

/*
 * SPI_execute_with_args, the statement's references to a relation checked
 * as a role when it is valid (see the header).  SPI analyses a statement
 * so run when it executes it, so the hook is set for that alone.
 */
static int
execute_checked_as(const char *sql, int nargs, Oid *types, Datum *args,
				   const char *nulls, Oid relid, Oid role)
{
	int			rc;

	if (!OidIsValid(role))
		return SPI_execute_with_args(sql, nargs, types, args, nulls, true, 0);
	check_as_relid = relid;
	check_as_role = role;
	check_as_pending = true;
	previous_post_parse_analyze_hook = post_parse_analyze_hook;
	post_parse_analyze_hook = check_as_post_parse_analyze;
	PG_TRY();
	{
		rc = SPI_execute_with_args(sql, nargs, types, args, nulls, true, 0);
	}
	PG_FINALLY();
	{
		post_parse_analyze_hook = previous_post_parse_analyze_hook;
		check_as_pending = false;
	}
	PG_END_TRY();
	return rc;
}

/*
 * Run the query that reads the distinct non-NULL values of a column as
 * text: through an index that orders the column, one descent per value
 * (between lower and upper when they are not NULL, a "C" column's bounds),
 * or else by reading the column, bytewise distinct (the bounds unused).  At most limit values
 * when limit is not negative.  The relation is checked as the scan's role
 * when that is valid, else as the caller.  Leaves them in SPI_tuptable.
 */
static void
run_values_query(Oid relid, const char *column, bool through_index,
				 text *lower, text *upper, int64 limit, Oid scan_role)
{
	const char *quoted = quote_identifier(column);
	const char *relation = PromQuotedRelationName(relid);
	StringInfoData first;
	StringInfoData next;
	StringInfoData sql;
	Oid			types[3] = {TEXTOID, TEXTOID, INT8OID};
	Datum		args[3] = {0, 0, Int64GetDatum(limit)};
	char		nulls[3] = {'n', 'n', limit < 0 ? 'n' : ' '};
	int			rc;

	initStringInfo(&sql);
	if (!through_index)
		appendStringInfo(&sql,
						 "SELECT DISTINCT CAST(%s AS pg_catalog.text) COLLATE pg_catalog.\"C\" "
						 "FROM %s WHERE %s IS NOT NULL LIMIT $3",
						 quoted, relation, quoted);
	else
	{
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
		appendStringInfo(&sql,
						 "WITH RECURSIVE v(x) AS ("
						 "(SELECT %s FROM %s WHERE %s ORDER BY 1 LIMIT 1) UNION ALL "
						 "SELECT (SELECT %s FROM %s WHERE %s OPERATOR(pg_catalog.>) v.x%s "
						 "ORDER BY 1 LIMIT 1) FROM v WHERE v.x IS NOT NULL) "
						 "SELECT CAST(x AS pg_catalog.text) FROM v WHERE x IS NOT NULL "
						 "LIMIT $3",
						 quoted, relation, first.data,
						 quoted, relation, quoted, next.data);
	}
	rc = execute_checked_as(sql.data, 3, types, args, nulls, relid, scan_role);
	if (rc != SPI_OK_SELECT)
		elog(ERROR, "promread read of label values failed: %s",
			 SPI_result_code_string(rc));
}

/*
 * Read the distinct non-NULL values of a column through an index that
 * orders it (between lower and upper when they are not NULL, see
 * run_values_query), one descent per value, unless there are more of them
 * than twice ANALYZE's count of the column's values (plus a margin, and
 * at most twice LABEL_VALUES_MAX): statistics that far out of date make a
 * read of the column cheaper than the descents.  True with the values in
 * SPI_tuptable; false when there were more, having read no more than the
 * bound.
 */
static bool
read_values_through_index(Oid relid, AttrNumber attnum, const char *column,
						  text *lower, text *upper, Oid scan_role)
{
	double		rows;
	double		expected = analyzed_values(relid, attnum, &rows);
	int64		max_values = (int64) Min(2 * expected + 1000, 2 * LABEL_VALUES_MAX);

	run_values_query(relid, column, true, lower, upper, max_values + 1, scan_role);
	if (SPI_processed > (uint64) max_values)
	{
		SPI_freetuptable(SPI_tuptable);
		return false;
	}
	return true;
}

/*
 * The values of SPI_tuptable that the regex accepts (all of them when it
 * is NULL), as text Datums in the given memory context, which frees the
 * tuple table.
 */
static Datum *
accepted_values(const PromRegex *regex, MemoryContext cxt, int *nvalues)
{
	Datum	   *values = MemoryContextAllocHuge(cxt,
												sizeof(Datum) * Max(SPI_processed, 1));
	int			naccepted = 0;
	uint64		i;

	for (i = 0; i < SPI_processed; i++)
	{
		bool		isnull;
		text	   *value = DatumGetTextPP(SPI_getbinval(SPI_tuptable->vals[i],
														 SPI_tuptable->tupdesc, 1,
														 &isnull));

		CHECK_FOR_INTERRUPTS();
		if (regex != NULL &&
			!PromRegexMatch(regex, VARDATA_ANY(value), VARSIZE_ANY_EXHDR(value)))
			continue;
		values[naccepted++] = PointerGetDatum(MemoryContextAllocHuge(cxt, VARSIZE_ANY(value)));
		memcpy(DatumGetPointer(values[naccepted - 1]), value, VARSIZE_ANY(value));
	}
	SPI_freetuptable(SPI_tuptable);
	*nvalues = naccepted;
	return values;
}

/*
 * Is the column text, varchar or a domain over them, of a deterministic
 * collation, so that its distinct values are its distinct byte strings?
 */
static bool
column_of_byte_strings(Oid relid, AttrNumber attnum, Oid *type, Oid *collation)
{
	int32		typmod;

	get_atttypetypmodcoll(relid, attnum, type, &typmod, collation);
	*type = getBaseType(*type);
	return (*type == TEXTOID || *type == VARCHAROID) && OidIsValid(*collation) &&
		get_collation_isdeterministic(*collation);
}

/*
 * Read the distinct non-NULL values of a label column (text, varchar or a
 * domain over them, of a deterministic collation) through an index, when
 * one serves and the statistics say it pays (see above).  A regex's literal
 * prefix, when narrowing is not NULL, bounds the values read on a "C"
 * column.  Returns the values as text Datums, in the caller's memory
 * context, or NULL when they were not read.  The relation is locked; the
 * caller is connected to SPI.
 */
Datum *
PromReadLabelValues(Oid relid, const char *column, const PromRegex *narrowing,
					int *nvalues)
{
	AttrNumber	attnum = get_attnum(relid, column);
	Oid			type;
	Oid			collation;
	text	   *lower = NULL;
	text	   *upper = NULL;

	if (attnum == InvalidAttrNumber ||
		!column_of_byte_strings(relid, attnum, &type, &collation) ||
		(pg_attribute_aclcheck(relid, attnum, GetUserId(), ACL_SELECT) != ACLCHECK_OK &&
		 pg_class_aclcheck(relid, GetUserId(), ACL_SELECT) != ACLCHECK_OK))
		return NULL;
	if (values_worth_reading(relid, attnum) == 0 ||
		!index_orders_column(relid, attnum, type, collation))
		return NULL;

	if (narrowing != NULL && narrowing->prefix_len > 0 && lc_collate_is_c(collation))
	{
		lower = cstring_to_text_with_len(narrowing->prefix, narrowing->prefix_len);
		upper = PromRegexPrefixUpperBound(narrowing);
	}
	/* a column that grew past twice its statistics is left to the engine */
	if (!read_values_through_index(relid, attnum, column, lower, upper, InvalidOid))
		return NULL;
	return accepted_values(NULL, CurrentMemoryContext, nvalues);
}

PG_FUNCTION_INFO_V1(prom_regex_label_values);

/*
 * prom_regex_label_values(relation regclass, label text, pattern text
 *						   [, scan_role prom_scan_role]) returns text[]
 *
 * The distinct values of a label column (text or varchar) that a
 * Prometheus regex matcher value accepts, in no particular order: read
 * through a btree index that leads with the column, one descent per value,
 * when there is one and the column has not grown far past its statistics
 * (read_values_through_index), else by reading the column.  It reads the
 * relation as the caller, or as the scan's role when given one, so that
 * privileges and row-level security apply as to the scan it serves: for
 * prom_regex_match's planner support makes it that scan's index condition
 * (regex_support.c).
 */
Datum
prom_regex_label_values(PG_FUNCTION_ARGS)
{
	Oid			relid = PG_GETARG_OID(0);
	char	   *column = text_to_cstring(PG_GETARG_TEXT_PP(1));
	text	   *pattern = PG_GETARG_TEXT_PP(2);
	MemoryContext callercxt = CurrentMemoryContext;
	Oid			scan_role = PG_NARGS() > 3 ? DatumGetObjectId(PG_GETARG_DATUM(3)) : InvalidOid;
	Relation	rel = relation_open(relid, AccessShareLock);
	AttrNumber	attnum = get_attnum(relid, column);
	PromRegex  *regex;
	Oid			type;
	Oid			collation;
	bool		through_index;
	text	   *lower = NULL;
	text	   *upper = NULL;
	Datum	   *values;
	int			nvalues;

	if (attnum <= 0)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_COLUMN),
				 errmsg("column \"%s\" of relation \"%s\" does not exist",
						column, RelationGetRelationName(rel))));
	if (!column_of_byte_strings(relid, attnum, &type, &collation))
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("column \"%s\" is not text or varchar of a deterministic collation",
						column)));
	regex = PromRegexCompile(VARDATA_ANY(pattern), VARSIZE_ANY_EXHDR(pattern));
	through_index = index_orders_column(relid, attnum, type, collation);
	if (through_index && regex->prefix_len > 0 && lc_collate_is_c(collation))
	{
		lower = cstring_to_text_with_len(regex->prefix, regex->prefix_len);
		upper = PromRegexPrefixUpperBound(regex);
	}

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	/* a column that grew past twice its statistics is read instead */
	if (!through_index ||
		!read_values_through_index(relid, attnum, column, lower, upper, scan_role))
		run_values_query(relid, column, false, NULL, NULL, -1, scan_role);
	values = accepted_values(regex, callercxt, &nvalues);
	SPI_finish();
	relation_close(rel, NoLock);
	PG_RETURN_ARRAYTYPE_P(construct_array(values, nvalues, TEXTOID, -1, false,
										  TYPALIGN_INT));
}

PG_FUNCTION_INFO_V1(prom_scan_role_in);

/*
 * prom_scan_role_in(cstring) returns prom_scan_role: refused.  A value of
 * the type lets prom_regex_label_values read as another role, so only the
 * planner makes them, for the scan of a view's relation (see the header).
 */
Datum
prom_scan_role_in(PG_FUNCTION_ARGS)
{
	ereport(ERROR,
			(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
			 errmsg("values of type prom_scan_role are made by the planner only")));
	PG_RETURN_VOID();
}

PG_FUNCTION_INFO_V1(prom_scan_role_out);

/* prom_scan_role_out(prom_scan_role) returns cstring: the role's name. */
Datum
prom_scan_role_out(PG_FUNCTION_ARGS)
{
	Oid			role = DatumGetObjectId(PG_GETARG_DATUM(0));
	char	   *name = GetUserNameFromId(role, true);

	PG_RETURN_CSTRING(name != NULL ? pstrdup(name) : psprintf("%u", role));
}

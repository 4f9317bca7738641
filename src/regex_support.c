/*-------------------------------------------------------------------------
 *
 * regex_support.c
 *	  prom_regex_match's planner support: its selectivity from the column's
 *	  statistics, and an index condition that reads only the values the
 *	  regex accepts.
 *
 * A shard is sent a regex matcher as "prom_regex_match(pattern, col)"
 * (shards.c).  To the planner that is an opaque boolean function: it
 * guesses how many rows pass, and no index serves it, so the shard would
 * read every row of the time range to decide a regex that keeps a tenth of
 * the series.  Prometheus decides a matcher over the label values of its
 * index and reads only the series that pass; scan.c does the same for a
 * local table (label_values.c).  This support function gives any query
 * that calls prom_regex_match, a shard's included, that plan:
 *
 * - Selectivity: the regex is decided on the column's most common values
 *   and histogram bounds, as PostgreSQL estimates "~" and LIKE.
 * - Index condition: for a btree index that leads with the column (text
 *   or varchar, the default operator family, a deterministic collation),
 *   when ANALYZE found many rows per value and estimates that the regex
 *   keeps at most half of the rows, the planner is offered
 *
 *	   col = ANY(prom_regex_label_values(<relation>, <column>, <pattern>))
 *
 *   which the executor evaluates once when the scan starts: a loose index
 *   scan lists the column's values, the regex decides each once, and the
 *   index then reads only the rows of the accepted values.  The
 *   condition is exact, but it is offered as lossy, so prom_regex_match
 *   still filters the rows read (a comparison a row: it keeps its last
 *   verdict).  A regex that keeps most rows is left to a sequential scan,
 *   which then costs a comparison a row as well.
 * - Rights: the listing must read the rows the scan may read.  A scan
 *   checks its relation as the executing role, or, read through a view, as
 *   the view's owner, whose policies then apply.  In the second case the
 *   condition passes that role to prom_regex_label_values as a
 *   prom_scan_role (which no SQL can make), and the listing is checked as
 *   that role (label_values.c); in the first it runs as the executing
 *   role, whoever that is when the plan runs.  A shard's foreign table
 *   that reads a view of another owner is served alike.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/namespace.h"
#include "catalog/pg_am.h"
#include "catalog/pg_collation.h"
#include "catalog/pg_operator.h"
#include "catalog/pg_opfamily.h"
#include "catalog/pg_statistic.h"
#include "catalog/pg_type.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "nodes/supportnodes.h"
#include "optimizer/optimizer.h"
#include "parser/parse_func.h"
#include "parser/parsetree.h"
#include "promread.h"
#include "scan/scan.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/selfuncs.h"
#include "utils/syscache.h"

/* A regex estimated to keep more of the rows than this is not indexed. */
#define INDEXED_FRACTION_MAX	0.5

/*
 * The fraction of the relation's rows whose value in the column the regex
 * accepts (the function being prom_regex_match, the pattern a Const),
 * estimated from the column's statistics; -1 without statistics.
 */
static double
accepted_fraction(VariableStatData *vardata, Oid funcid, Const *pattern,
				  bool varonleft)
{
	FmgrInfo	proc;
	double		common_fraction;
	double		common_accepted;
	double		other_accepted;
	double		null_fraction;
	int			histogram_size;

	if (!HeapTupleIsValid(vardata->statsTuple))
		return -1;
	null_fraction = ((Form_pg_statistic) GETSTRUCT(vardata->statsTuple))->stanullfrac;
	fmgr_info(funcid, &proc);
	common_accepted = mcv_selectivity(vardata, &proc, InvalidOid,
									  pattern->constvalue, varonleft,
									  &common_fraction);
	other_accepted = histogram_selectivity(vardata, &proc, InvalidOid,
										   pattern->constvalue, varonleft,
										   10, 1, &histogram_size);
	if (other_accepted < 0)
		other_accepted = common_fraction > 0 ?
			common_accepted / common_fraction : 0.5;
	return Min(1.0, Max(0.0, common_accepted +
						other_accepted * (1.0 - null_fraction - common_fraction)));
}

/* The selectivity of prom_regex_match(pattern, col) on one relation. */
static Node *
estimate_selectivity(SupportRequestSelectivity *req)
{
	VariableStatData vardata;
	Node	   *other;
	bool		varonleft;
	double		fraction = -1;

	if (req->is_join ||
		!get_restriction_variable(req->root, req->args, req->varRelid,
								  &vardata, &other, &varonleft))
		return NULL;
	if (!varonleft && IsA(other, Const) && !((Const *) other)->constisnull)
		fraction = accepted_fraction(&vardata, req->funcid, (Const *) other,
									 varonleft);
	ReleaseVariableStats(vardata);
	if (fraction < 0)
		return NULL;
	req->selectivity = fraction;
	return (Node *) req;
}

/* prom_regex_label_values in the schema of promread, or InvalidOid. */
static Oid
label_values_function(int nargs, Oid scan_role_type)
{
	Oid			argtypes[4] = {REGCLASSOID, TEXTOID, TEXTOID, scan_role_type};
	List	   *name = list_make2(makeString(get_namespace_name(PromExtensionNamespace())),
								  makeString("prom_regex_label_values"));

	return LookupFuncName(name, nargs, argtypes, true);
}

/*
 * The listing of the values of the relation's column that the pattern
 * accepts, read with the rights of the relation's scan (see above); NULL
 * when this version of the extension's SQL cannot.
 */
static FuncExpr *
listing_call(RelOptInfo *rel, Oid relid, AttrNumber attnum, Const *pattern)
{
	List	   *args = list_make3(makeConst(REGCLASSOID, -1, InvalidOid, sizeof(Oid),
											ObjectIdGetDatum(relid), false, true),
								  makeConst(TEXTOID, -1, DEFAULT_COLLATION_OID, -1,
											CStringGetTextDatum(get_attname(relid, attnum, false)),
											false, false),
								  copyObject(pattern));
	Oid			function;

	if (OidIsValid(rel->userid))
	{
		Oid			scan_role_type = GetSysCacheOid2(TYPENAMENSP, Anum_pg_type_oid,
													 CStringGetDatum("prom_scan_role"),
													 ObjectIdGetDatum(PromExtensionNamespace()));

		function = label_values_function(4, scan_role_type);
		args = lappend(args, makeConst(scan_role_type, -1, InvalidOid, sizeof(Oid),
									   ObjectIdGetDatum(rel->userid), false, true));
	}
	else
		function = label_values_function(3, InvalidOid);
	if (!OidIsValid(function))
		return NULL;
	return makeFuncExpr(function, TEXTARRAYOID, args, DEFAULT_COLLATION_OID,
						DEFAULT_COLLATION_OID, COERCE_EXPLICIT_CALL);
}

/*
 * The index condition of prom_regex_match(pattern, col) on an index that
 * leads with col (see above), or NIL.
 */
static List *
index_condition(SupportRequestIndexCondition *req)
{
	FuncExpr   *call = (FuncExpr *) req->node;
	IndexOptInfo *index = req->index;
	RangeTblEntry *rte = planner_rt_fetch(index->rel->relid, req->root);
	Node	   *pattern;
	Node	   *column;
	VariableStatData vardata;
	double		fraction;
	FuncExpr   *values;
	ScalarArrayOpExpr *any;

	if (!IsA(call, FuncExpr) || list_length(call->args) != 2 ||
		req->indexarg != 1 || req->indexcol != 0 ||
		index->relam != BTREE_AM_OID || req->opfamily != TEXT_BTREE_FAM_OID ||
		!OidIsValid(req->indexcollation) ||
		!get_collation_isdeterministic(req->indexcollation) ||
		rte->rtekind != RTE_RELATION || index->indexkeys[0] <= 0)
		return NIL;
	pattern = linitial(call->args);
	column = lsecond(call->args);
	if (!IsA(pattern, Const) || ((Const *) pattern)->constisnull ||
		!PromLabelValuesWorthReading(rte->relid, index->indexkeys[0]))
		return NIL;

	examine_variable(req->root, column, index->rel->relid, &vardata);
	fraction = accepted_fraction(&vardata, req->funcid, (Const *) pattern, false);
	ReleaseVariableStats(vardata);
	if (fraction < 0 || fraction > INDEXED_FRACTION_MAX)
		return NIL;
	values = listing_call(index->rel, rte->relid, index->indexkeys[0], (Const *) pattern);
	if (values == NULL)
		return NIL;

	any = makeNode(ScalarArrayOpExpr);
	any->opno = TextEqualOperator;
	any->opfuncid = F_TEXTEQ;
	any->useOr = true;
	any->inputcollid = req->indexcollation;
	any->args = list_make2(copyObject(column), values);
	any->location = -1;
	req->lossy = true;
	return list_make1(any);
}

PG_FUNCTION_INFO_V1(prom_regex_match_support);

/*
 * prom_regex_match_support(internal) returns internal
 *
 * The planner support function of prom_regex_match (see above).
 */
Datum
prom_regex_match_support(PG_FUNCTION_ARGS)
{
	Node	   *request = (Node *) PG_GETARG_POINTER(0);

	if (IsA(request, SupportRequestSelectivity))
		PG_RETURN_POINTER(estimate_selectivity((SupportRequestSelectivity *) request));
	if (IsA(request, SupportRequestIndexCondition))
		PG_RETURN_POINTER(index_condition((SupportRequestIndexCondition *) request));
	PG_RETURN_POINTER(NULL);
}

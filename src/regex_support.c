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
 * - Rights: prom_regex_label_values reads the column as the role that
 *   executes the query, with that role's privileges and row-level
 *   security.  The scan reads it as the relation's RTE says: a table
 *   read through a view is checked as the view's owner, whose policies
 *   apply (their expressions evaluated as the executing role).  The
 *   listing would then miss the rows that only the owner's policies show,
 *   or fail where only the owner may read (42501), so the condition is
 *   offered only when the scan runs as the executing role: the RTE checks
 *   as the current user, or as a role that is the current user, the plan
 *   then being valid for that role only (dependsOnRole).  A view owned by
 *   another role, a shard's foreign table that reads one among them, is
 *   read without it.
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
label_values_function(void)
{
	Oid			argtypes[3] = {REGCLASSOID, TEXTOID, TEXTOID};
	List	   *name = list_make2(makeString(get_namespace_name(PromExtensionNamespace())),
								  makeString("prom_regex_label_values"));

	return LookupFuncName(name, 3, argtypes, true);
}

/*
 * Does prom_regex_label_values, evaluated by the executing role, read the
 * relation with the rights its scan runs with (see above)?  When the scan
 * checks as a named role, the plan is marked valid for the current role
 * only.
 */
static bool
listing_runs_as_scan(PlannerInfo *root, RelOptInfo *rel)
{
	if (!OidIsValid(rel->userid))
		return true;
	if (rel->userid != GetUserId())
		return false;
	root->glob->dependsOnRole = true;
	return true;
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
	Oid			values_function;
	FuncExpr   *values;
	ScalarArrayOpExpr *any;

	if (!IsA(call, FuncExpr) || list_length(call->args) != 2 ||
		req->indexarg != 1 || req->indexcol != 0 ||
		index->relam != BTREE_AM_OID || req->opfamily != TEXT_BTREE_FAM_OID ||
		!OidIsValid(req->indexcollation) ||
		!get_collation_isdeterministic(req->indexcollation) ||
		rte->rtekind != RTE_RELATION || index->indexkeys[0] <= 0 ||
		!listing_runs_as_scan(req->root, index->rel))
		return NIL;
	pattern = linitial(call->args);
	column = lsecond(call->args);
	if (!IsA(pattern, Const) || ((Const *) pattern)->constisnull ||
		!PromLabelValuesWorthReading(rte->relid, index->indexkeys[0]))
		return NIL;

	examine_variable(req->root, column, index->rel->relid, &vardata);
	fraction = accepted_fraction(&vardata, req->funcid, (Const *) pattern, false);
	ReleaseVariableStats(vardata);
	values_function = label_values_function();
	if (fraction < 0 || fraction > INDEXED_FRACTION_MAX ||
		!OidIsValid(values_function))
		return NIL;

	values = makeFuncExpr(values_function, TEXTARRAYOID,
						  list_make3(makeConst(REGCLASSOID, -1, InvalidOid,
											   sizeof(Oid),
											   ObjectIdGetDatum(rte->relid),
											   false, true),
									 makeConst(TEXTOID, -1, DEFAULT_COLLATION_OID, -1,
											   CStringGetTextDatum(get_attname(rte->relid,
																			   index->indexkeys[0],
																			   false)),
											   false, false),
									 copyObject(pattern)),
						  DEFAULT_COLLATION_OID, DEFAULT_COLLATION_OID,
						  COERCE_EXPLICIT_CALL);
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

/*-------------------------------------------------------------------------
 *
 * scan_predicates.c
 *	  The WHERE clause of a metric's scan: the time range and the label
 *	  matchers as predicates, values bound as parameters.
 *
 * Each matcher is decided as early as it can be (scan.c's essay, step 2):
 * on a label the relation lacks, once, for the whole scan; on an enum
 * column, over the enum's labels; a literal-set regex as "= ANY($n)"; a
 * regex that is not one, or a negative matcher, on a text column of stored
 * rows, per distinct value (over the values an index lists, or by the
 * engine as it reads rows, with a regex's literal prefix as a range); any
 * other as "col <op> $n".  Identifiers are quoted and operators
 * schema-qualified.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "engine/engine.h"
#include "phases.h"
#include "promread.h"
#include "scan_internal.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/pg_locale.h"

/*
 * The first PostgreSQL timestamp whose millisecond is not before ms: the
 * first one for ms before PostgreSQL's range, infinity for ms past it (no
 * finite timestamp is at or after it, and infinity, unlike END_TIMESTAMP,
 * is valid input for a foreign server).
 */
static int64
ms_lower_bound(int64 ms)
{
	int64		min_ms = PromTimestampToMs(MIN_TIMESTAMP);
	int64		end_ms = PromTimestampToMs(END_TIMESTAMP);

	if (ms >= end_ms)
		return DT_NOEND;
	return PromMsToTimestamp(Max(min_ms, ms));
}

/* The first PostgreSQL timestamp of the millisecond after ms, or infinity. */
static int64
ms_upper_bound(int64 ms)
{
	return ms == PG_INT64_MAX ? DT_NOEND : ms_lower_bound(ms + 1);
}

/* Append a parameter and return its number. */
static int
add_param(ScanStatement *stmt, Oid type, Datum value)
{
	if (stmt->nparams == FUNC_MAX_ARGS)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("too many label matchers in one query"),
				 errdetail("A query of one metric can bind at most %d values.",
						   FUNC_MAX_ARGS)));
	stmt->param_types[stmt->nparams] = type;
	stmt->param_values[stmt->nparams] = value;
	return ++stmt->nparams;
}

/* A text[] of the literals of a literal-set regex. */
static Datum
literal_array(const PromRegex *regex)
{
	Datum	   *elems = palloc(sizeof(Datum) * Max(regex->nliterals, 1));
	int			i;

	for (i = 0; i < regex->nliterals; i++)
		elems[i] = PointerGetDatum(cstring_to_text_with_len(regex->literals[i],
															regex->literal_lens[i]));
	return PointerGetDatum(construct_array(elems, regex->nliterals, TEXTOID,
										   -1, false, TYPALIGN_INT));
}

/*
 * Add the predicate that a column holds one of the given values (of type
 * elemtype), or, with complement, none of them; a NULL column passes when
 * the matcher matches "".  Returns false when no row can match.
 */
static bool
add_value_list(ScanStatement *stmt, const char *quoted, bool matches_empty,
			   Oid elemtype, Datum *values, int nvalues, bool complement)
{
	int16		typlen;
	bool		byval;
	char		align;
	int			param;

	if (nvalues == 0 && !complement)
	{
		if (!matches_empty)
			return false;
		appendStringInfo(&stmt->sql, " AND %s IS NULL", quoted);
		return true;
	}
	get_typlenbyvalalign(elemtype, &typlen, &byval, &align);
	param = add_param(stmt, get_array_type(elemtype),
					  PointerGetDatum(construct_array(values, nvalues, elemtype,
													  typlen, byval, align)));
	appendStringInfoString(&stmt->sql, " AND ");
	if (matches_empty)
		appendStringInfo(&stmt->sql, "(%s IS NULL OR ", quoted);
	appendStringInfo(&stmt->sql, complement ?
					 "%s OPERATOR(pg_catalog.<>) ALL ($%d)" :
					 "%s OPERATOR(pg_catalog.=) ANY ($%d)", quoted, param);
	if (matches_empty)
		appendStringInfoChar(&stmt->sql, ')');
	return true;
}

/*
 * The predicate of a matcher on an enum column: the enum's labels are
 * matched once here, and the column compared with the matching values, or
 * with the others when they are fewer.  Returns false when no row can
 * match.
 */
static bool
add_enum_predicate(ScanStatement *stmt, const MetricColumn *column,
				   const char *quoted, const PromMatcher *matcher)
{
	const PromEnumLabels *labels = PromEnumLabelsOf(column->basetype);
	Datum	   *matching = palloc(sizeof(Datum) * Max(labels->nlabels, 1));
	Datum	   *others = palloc(sizeof(Datum) * Max(labels->nlabels, 1));
	int			nmatching = 0;
	int			nothers = 0;
	int			i;

	for (i = 0; i < labels->nlabels; i++)
	{
		if (PromMatcherMatches(matcher, labels->labels[i], labels->lens[i]))
			matching[nmatching++] = ObjectIdGetDatum(labels->values[i]);
		else
			others[nothers++] = ObjectIdGetDatum(labels->values[i]);
	}
	if (nothers == 0)
	{
		if (!matcher->matches_empty)
			appendStringInfo(&stmt->sql, " AND %s IS NOT NULL", quoted);
		return true;
	}
	if (nothers < nmatching)
		return add_value_list(stmt, quoted, matcher->matches_empty,
							  column->basetype, others, nothers, true);
	return add_value_list(stmt, quoted, matcher->matches_empty,
						  column->basetype, matching, nmatching, false);
}

/*
 * The predicate of a matcher on a column compared as text.  With a
 * regex_function (promread's prom_regex_match on foreign servers that list
 * promread), a regex that is not a literal set is a call of it, which such
 * a server evaluates once a run of equal values rather than once a row (and
 * its planner support over the values an index lists).  Otherwise a regex
 * of characters and "."s is LIKE, another an ARE.
 */
static void
add_text_predicate(ScanStatement *stmt, const MetricColumn *column,
				   const char *quoted, const PromMatcher *matcher,
				   const char *regex_function)
{
	char	   *expr = (char *) quoted;
	const char *collate = "";
	const char *op;
	Oid			param_type = TEXTOID;
	Datum		param_value;
	int			param;

	if (column->kind == PROM_LABEL_SCALAR || column->kind == PROM_LABEL_BINARY)
		expr = psprintf("CAST(%s AS pg_catalog.text)", quoted);
	if (OidIsValid(column->collation) &&
		!get_collation_isdeterministic(column->collation))
		collate = " COLLATE pg_catalog.\"C\"";

	if (matcher->regex != NULL && matcher->regex->is_literal_set)
	{
		op = matcher->type == PROM_MATCH_RE ?
			"OPERATOR(pg_catalog.=) ANY" : "OPERATOR(pg_catalog.<>) ALL";
		param_type = TEXTARRAYOID;
		param_value = literal_array(matcher->regex);
	}
	else if (matcher->regex != NULL && regex_function != NULL)
	{
		param = add_param(stmt, TEXTOID,
						  PointerGetDatum(cstring_to_text_with_len(matcher->value,
																   matcher->value_len)));
		appendStringInfo(&stmt->sql, " AND (%s%s%s($%d, %s%s))",
						 matcher->matches_empty ?
						 psprintf("%s IS NULL OR ", expr) : "",
						 matcher->type == PROM_MATCH_RE ? "" : "NOT ",
						 regex_function, param, expr, collate);
		return;
	}
	else if (matcher->regex != NULL && matcher->regex->like != NULL)
	{
		/* characters and "."s: LIKE, far cheaper a row than the ARE */
		op = matcher->type == PROM_MATCH_RE ?
			"OPERATOR(pg_catalog.~~)" : "OPERATOR(pg_catalog.!~~)";
		param_value = PointerGetDatum(matcher->regex->like);
	}
	else if (matcher->regex != NULL)
	{
		/*
		 * the translated ARE names no class and folds no case, so its answer
		 * is the same under any deterministic collation, and a foreign
		 * server is sent the predicate without a collation it might not ship
		 */
		op = matcher->type == PROM_MATCH_RE ?
			"OPERATOR(pg_catalog.~)" : "OPERATOR(pg_catalog.!~)";
		param_value = PointerGetDatum(matcher->regex->anchored);
	}
	else
	{
		op = matcher->type == PROM_MATCH_EQ ?
			"OPERATOR(pg_catalog.=)" : "OPERATOR(pg_catalog.<>)";
		param_value = PointerGetDatum(cstring_to_text_with_len(matcher->value,
															   matcher->value_len));
	}
	param = add_param(stmt, param_type, param_value);
	if (matcher->matches_empty)
		appendStringInfo(&stmt->sql, " AND (%s IS NULL OR %s%s %s ($%d))",
						 expr, expr, collate, op, param);
	else
		appendStringInfo(&stmt->sql, " AND %s%s %s ($%d)",
						 expr, collate, op, param);
}

/* Find a label column by label name, or NULL. */
static const MetricColumn *
find_label(const MetricColumn *columns, int ncolumns, const char *name)
{
	int			i;

	for (i = 0; i < ncolumns; i++)
		if (strcmp(columns[i].label, name) == 0)
			return &columns[i];
	return NULL;
}


/*
 * Is a matcher on a column of this kind decided per distinct value by the
 * engine rather than per row by SQL?  A regex that is not a literal set, and
 * a negative matcher, cannot be answered by an index; on a text or name
 * column of a relation whose rows are stored (rows_are_stored), it is
 * decided once per value.
 */
static bool
decided_per_value(const PromMatcher *matcher, const MetricColumn *column,
				  bool stored)
{
	if (!stored ||
		(column->kind != PROM_LABEL_TEXT && column->kind != PROM_LABEL_NAME))
		return false;
	return matcher->type == PROM_MATCH_NEQ || matcher->type == PROM_MATCH_NRE ||
		(matcher->type == PROM_MATCH_RE && !matcher->regex->is_literal_set);
}

/*
 * The predicate that narrows a regex decided per value to the rows whose
 * value begins with its literal prefix: a range, which a btree index under
 * the "C" collation serves (a "C" column's own index, or one on
 * (col COLLATE "C")).
 */
static void
add_prefix_range(ScanStatement *stmt, const MetricColumn *column,
				 const char *quoted, const PromRegex *regex)
{
	const char *collate = lc_collate_is_c(column->collation) ? "" :
		" COLLATE pg_catalog.\"C\"";
	text	   *upper = PromRegexPrefixUpperBound(regex);
	int			param;

	param = add_param(stmt, TEXTOID,
					  PointerGetDatum(cstring_to_text_with_len(regex->prefix,
															   regex->prefix_len)));
	appendStringInfo(&stmt->sql, " AND %s%s OPERATOR(pg_catalog.>=) $%d",
					 quoted, collate, param);
	if (upper == NULL)
		return;
	param = add_param(stmt, TEXTOID, PointerGetDatum(upper));
	appendStringInfo(&stmt->sql, " AND %s%s OPERATOR(pg_catalog.<) $%d",
					 quoted, collate, param);
}

/* What decide_over_values did with a matcher. */
typedef enum ValueVerdict
{
	VALUES_NOT_READ,			/* left to the engine */
	VALUES_DECIDED,				/* the accepted values are a predicate */
	VALUES_NONE_ACCEPTED		/* no row can match */
} ValueVerdict;

/*
 * Decide a matcher that no index answers over the distinct values of its
 * column, read through an index that leads with it (label_values.c), and
 * add the predicate that selects the accepted values, which the index
 * serves.  VALUES_NOT_READ when they were not read, or when every value
 * was accepted: the engine then decides the values it meets, those
 * inserted since included.
 */
static ValueVerdict
decide_over_values(MetricScan *scan, const MetricColumn *column,
				   const char *quoted, const PromMatcher *matcher)
{
	const PromRegex *regex = matcher->regex;
	Datum	   *values;
	int			nvalues;
	int			naccepted = 0;
	ValueDecision *decision;
	int			i;

	values = PromReadLabelValues(scan->entry->relid, column->name,
								 matcher->type == PROM_MATCH_RE ? regex : NULL,
								 &nvalues);
	if (values == NULL)
		return VALUES_NOT_READ;
	for (i = 0; i < nvalues; i++)
	{
		text	   *value = DatumGetTextPP(values[i]);

		PromPhases.matcher_evaluations++;
		if (PromMatcherMatches(matcher, VARDATA_ANY(value),
							   VARSIZE_ANY_EXHDR(value)))
			values[naccepted++] = values[i];
	}
	if (naccepted == nvalues)
		return VALUES_NOT_READ;

	decision = palloc(sizeof(ValueDecision));
	decision->matcher = matcher;
	decision->nvalues = nvalues;
	decision->naccepted = naccepted;
	scan->decisions = lappend(scan->decisions, decision);
	return add_value_list(&scan->stmt, quoted, matcher->matches_empty, TEXTOID,
						  values, naccepted, false) ?
		VALUES_DECIDED : VALUES_NONE_ACCEPTED;
}

/*
 * Does a regex sent as a predicate need its prefix's range beside it for an
 * index to serve it?  The planner derives the range of "~" itself on a "C"
 * column, and not of a function call.  A foreign server is sent the range
 * only on a "C" column, where it needs no COLLATE clause (which it could
 * not be sent, and which would keep a shard from grouping its rows).
 */
static bool
needs_prefix_range(const MetricScan *scan, const MetricColumn *column)
{
	bool		is_c = lc_collate_is_c(column->collation);

	if (!scan->has_foreign)
		return !is_c;
	return is_c && scan->regex_function != NULL;
}

/*
 * Add the predicates of the query's matchers on labels, and list in
 * scan->filters those the engine decides per distinct value (ScanFilter);
 * false when no row can match.
 */
bool
PromScanAddMatchers(MetricScan *scan, const PromQuery *query, bool stored)
{
	ScanStatement *stmt = &scan->stmt;
	const MetricColumn *labels = scan->labels;
	int			nlabels = scan->nlabels;
	int			i;

	for (i = 0; i < query->nmatchers; i++)
	{
		const PromMatcher *matcher = &query->matchers[i];
		const MetricColumn *column;
		const char *quoted;

		if (strcmp(matcher->name, "__name__") == 0)
			continue;			/* decided by the catalog lookup */
		column = find_label(labels, nlabels, matcher->name);
		if (column == NULL && scan->overflow >= 0)
		{
			/* an overflow label, or none: decided per value of the column */
			ScanFilter *filter = palloc(sizeof(ScanFilter));

			filter->column = scan->overflow;
			filter->matcher = matcher;
			scan->filters = lappend(scan->filters, filter);
			continue;
		}
		if (column == NULL)
		{
			/* the label is missing on every row */
			if (!matcher->matches_empty)
				return false;
			continue;
		}
		quoted = quote_identifier(column->name);
		/* an enum array or a cast to text is not sent to a foreign server */
		if (column->kind != PROM_LABEL_TEXT && column->kind != PROM_LABEL_NAME)
			scan->local_predicates = true;
		if (column->kind == PROM_LABEL_ENUM)
		{
			if (!add_enum_predicate(stmt, column, quoted, matcher))
				return false;
		}
		else if (decided_per_value(matcher, column, stored))
		{
			ScanFilter *filter;
			ValueVerdict verdict = column->kind == PROM_LABEL_TEXT ?
				decide_over_values(scan, column, quoted, matcher) : VALUES_NOT_READ;

			if (verdict == VALUES_NONE_ACCEPTED)
				return false;
			if (verdict == VALUES_DECIDED)
				continue;
			filter = palloc(sizeof(ScanFilter));
			filter->column = column - labels;
			filter->matcher = matcher;
			scan->filters = lappend(scan->filters, filter);
			if (matcher->type == PROM_MATCH_RE && column->kind == PROM_LABEL_TEXT &&
				matcher->regex->prefix_len > 0)
			{
				add_prefix_range(stmt, column, quoted, matcher->regex);
				scan->pattern_predicates = true;
			}
		}
		else
		{
			add_text_predicate(stmt, column, quoted, matcher,
							   scan->regex_function);
			if (matcher->regex != NULL && !matcher->regex->is_literal_set)
				scan->pattern_predicates = true;
			if (matcher->type == PROM_MATCH_RE && column->kind == PROM_LABEL_TEXT &&
				!matcher->regex->is_literal_set && matcher->regex->prefix_len > 0 &&
				needs_prefix_range(scan, column))
				add_prefix_range(stmt, column, quoted, matcher->regex);
		}
	}
	return true;
}

/*
 * Add the time range: [start, end] in ms on a bigint column; on a timestamp
 * column, from the first timestamp of the start's millisecond to before the
 * first of the millisecond after the end (infinity past PostgreSQL's range:
 * a bound written out must be valid input, for a foreign server).
 */
void
PromScanAddTimeRange(ScanStatement *stmt, const PromQuery *query,
			   const MetricColumn *time_column)
{
	const char *quoted = quote_identifier(time_column->name);
	Oid			type = time_column->basetype;

	if (type == INT8OID)
	{
		add_param(stmt, INT8OID, Int64GetDatum(query->start_ms));
		add_param(stmt, INT8OID, Int64GetDatum(query->end_ms));
		appendStringInfo(&stmt->sql,
						 " %s OPERATOR(pg_catalog.>=) $1 AND %s OPERATOR(pg_catalog.<=) $2",
						 quoted, quoted);
		return;
	}
	add_param(stmt, type, Int64GetDatum(ms_lower_bound(query->start_ms)));
	add_param(stmt, type, Int64GetDatum(ms_upper_bound(query->end_ms)));
	appendStringInfo(&stmt->sql,
					 " %s OPERATOR(pg_catalog.>=) $1 AND %s OPERATOR(pg_catalog.<) $2",
					 quoted, quoted);
}


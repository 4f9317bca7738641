/*-------------------------------------------------------------------------
 *
 * scan.c
 *	  Reading one metric relation through the executor.
 *
 * For a catalog entry and a query, the matchers on labels and the time
 * range become SQL predicates of one SELECT over the relation, so that
 * indexes, partition pruning, privileges and row-level security all apply.
 * Values are always bound as parameters and identifiers quoted; operators
 * are schema-qualified so that the search path cannot change their meaning.
 *
 * Each matcher is decided as early as it can be:
 *   - on a label the relation does not have, the matcher sees "" and is
 *     decided once: it either drops out or empties the whole scan;
 *   - on an enum column, it is evaluated once over the enum's labels and
 *     becomes "col = ANY(<matching values>)", or "col <> ALL(<the others>)"
 *     when those are fewer, compared by enum value;
 *   - otherwise it becomes "col <op> $n", where a regex that is a literal
 *     or an alternation of literals becomes "= ANY($n)", other regexes are
 *     translated to anchored AREs (prom_regex.c) and matched under the "C"
 *     collation.  When the matcher matches "", a NULL column (an absent
 *     label) matches too: "(col IS NULL OR col <op> $n)".  An empty string
 *     in the column reaches the operator and gets the same answer as "".
 * Equality needs no COLLATE "C" on a deterministic collation (it is
 * bytewise there, and an explicit collation would keep the column's index
 * out of use); a nondeterministic column gets one.
 *
 * The statement text depends only on the relation, its columns and the
 * shape of the predicates, never on values, so prepared statements are
 * cached per backend, keyed by statement text and parameter types.  They
 * are planned for each call's values (custom plans): the time range decides
 * between an index and a sequential scan, and partitions are pruned and
 * regex prefixes used at plan time.  Rows whose value is NULL carry no
 * sample; the receiver skips them rather than a predicate.  Rows go from
 * the executor straight into the series set through a DestReceiver of our
 * own: no SPI tuple table, no copy.  An ExecutorStart hook recognizes that
 * receiver and passes the plan's estimate of the rows to the series set,
 * which sizes sample blocks by it.  With promread.report_phases on, the scan
 * is run a second time without grouping, to time the executor alone
 * (time_scan_alone).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <xxhash.h>

#include "access/htup_details.h"
#include "catalog/pg_collation.h"
#include "catalog/pg_type.h"
#include "executor/executor.h"
#include "executor/spi.h"
#include "lib/stringinfo.h"
#include "nodes/params.h"
#include "promread.h"
#include "tcop/dest.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/datetime.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/pg_locale.h"
#include "utils/syscache.h"
#include "utils/timestamp.h"

/* Cached plans beyond this many are all dropped and planned afresh. */
#define PLAN_CACHE_MAX	1024

/* How the time column is stored. */
typedef enum TimeKind
{
	TIME_TIMESTAMP,				/* timestamptz or timestamp (read as UTC) */
	TIME_EPOCH_MS				/* bigint, ms since the Unix epoch */
} TimeKind;

/* A label column of the relation being scanned. */
typedef struct LabelColumn
{
	const char *name;
	Oid			type;			/* base type */
	Oid			collation;
	PromLabelKind kind;
} LabelColumn;

/* The statement being built for one scan. */
typedef struct ScanStatement
{
	StringInfoData sql;
	int			nparams;
	Oid			param_types[FUNC_MAX_ARGS];
	Datum		param_values[FUNC_MAX_ARGS];
} ScanStatement;

/* Receives the scan's rows and adds them to the series set. */
typedef struct ScanReceiver
{
	DestReceiver pub;
	PromSeriesSet *set;
	PromLayout *layout;
	int			nlabels;		/* label columns come first in the row */
	TimeKind	time_kind;
	uint64		sum;			/* of the samples read without grouping them
								 * (scan_read_only) */
} ScanReceiver;

/* A cached plan, keyed by a hash of its statement text and types. */
typedef struct PlanCacheEntry
{
	uint64		hash;			/* hash key */
	char	   *key;			/* statement text and parameter types */
	SPIPlanPtr	plan;
} PlanCacheEntry;

static HTAB *plan_cache = NULL;

static ExecutorStart_hook_type previous_executor_start = NULL;

/*
 * The first PostgreSQL timestamp whose millisecond is not before ms, with
 * ms clamped to PostgreSQL's range: [MIN_TIMESTAMP, END_TIMESTAMP].
 */
static int64
ms_lower_bound(int64 ms)
{
	int64		min_ms = PromTimestampToMs(MIN_TIMESTAMP);
	int64		end_ms = PromTimestampToMs(END_TIMESTAMP);

	return PromMsToTimestamp(Max(min_ms, Min(ms, end_ms)));
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
 * The predicate of a matcher on an enum column: the enum's labels are
 * matched once here, and the column compared with the matching values, or
 * with the others when they are fewer.  Returns false when no row can
 * match.
 */
static bool
add_enum_predicate(ScanStatement *stmt, const LabelColumn *column,
				   const char *quoted, const PromMatcher *matcher)
{
	const PromEnumLabels *labels = PromEnumLabelsOf(column->type);
	Datum	   *matching = palloc(sizeof(Datum) * Max(labels->nlabels, 1));
	Datum	   *others = palloc(sizeof(Datum) * Max(labels->nlabels, 1));
	int			nmatching = 0;
	int			nothers = 0;
	bool		complement;
	int			param;
	int			i;

	for (i = 0; i < labels->nlabels; i++)
	{
		if (PromMatcherMatches(matcher, labels->labels[i], labels->lens[i]))
			matching[nmatching++] = ObjectIdGetDatum(labels->values[i]);
		else
			others[nothers++] = ObjectIdGetDatum(labels->values[i]);
	}

	if (nmatching == 0)
	{
		if (!matcher->matches_empty)
			return false;
		appendStringInfo(&stmt->sql, " AND %s IS NULL", quoted);
		return true;
	}
	if (nothers == 0)
	{
		if (!matcher->matches_empty)
			appendStringInfo(&stmt->sql, " AND %s IS NOT NULL", quoted);
		return true;
	}

	complement = nothers < nmatching;
	param = add_param(stmt, get_array_type(column->type),
					  PointerGetDatum(construct_array(complement ? others : matching,
													  complement ? nothers : nmatching,
													  column->type, sizeof(Oid),
													  true, TYPALIGN_INT)));
	appendStringInfoString(&stmt->sql, " AND ");
	if (matcher->matches_empty)
		appendStringInfo(&stmt->sql, "(%s IS NULL OR ", quoted);
	appendStringInfo(&stmt->sql, complement ?
					 "%s OPERATOR(pg_catalog.<>) ALL ($%d)" :
					 "%s OPERATOR(pg_catalog.=) ANY ($%d)", quoted, param);
	if (matcher->matches_empty)
		appendStringInfoChar(&stmt->sql, ')');
	return true;
}

/* The predicate of a matcher on a column compared as text. */
static void
add_text_predicate(ScanStatement *stmt, const LabelColumn *column,
				   const char *quoted, const PromMatcher *matcher)
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
	else if (matcher->regex != NULL)
	{
		op = matcher->type == PROM_MATCH_RE ?
			"OPERATOR(pg_catalog.~)" : "OPERATOR(pg_catalog.!~)";
		collate = " COLLATE pg_catalog.\"C\"";
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
static const LabelColumn *
find_label(const LabelColumn *columns, int ncolumns, const char *name)
{
	int			i;

	for (i = 0; i < ncolumns; i++)
		if (strcmp(columns[i].name, name) == 0)
			return &columns[i];
	return NULL;
}

/* Look up a registered column and its base type, or raise an error. */
static Oid
registered_column_type(const PromMetricEntry *entry, const char *column,
					   Oid *collation)
{
	AttrNumber	attnum = get_attnum(entry->relid, column);
	Oid			type;
	int32		typmod;

	if (attnum == InvalidAttrNumber)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_COLUMN),
				 errmsg("column \"%s\" of relation \"%s\" registered for metric \"%s\" does not exist",
						column, get_rel_name(entry->relid), entry->metric),
				 errhint("Register the metric again with prom_register().")));
	get_atttypetypmodcoll(entry->relid, attnum, &type, &typmod, collation);
	return getBaseType(type);
}

/* How the engine should read a label column of the given base type. */
static PromLabelKind
label_kind(Oid type)
{
	int16		typlen;
	bool		byval;

	if (type == TEXTOID || type == VARCHAROID)
		return PROM_LABEL_TEXT;
	if (type == NAMEOID)
		return PROM_LABEL_NAME;
	if (type_is_enum(type))
		return PROM_LABEL_ENUM;
	get_typlenbyval(type, &typlen, &byval);
	return byval ? PROM_LABEL_SCALAR : PROM_LABEL_BINARY;
}

/* Get the cached plan of a statement, preparing it on first use. */
static SPIPlanPtr
cached_plan(const ScanStatement *stmt)
{
	StringInfoData key;
	PlanCacheEntry *entry;
	uint64		hash;
	bool		found;
	int			i;

	if (plan_cache == NULL)
	{
		HASHCTL		ctl;

		ctl.keysize = sizeof(uint64);
		ctl.entrysize = sizeof(PlanCacheEntry);
		ctl.hcxt = TopMemoryContext;
		plan_cache = hash_create("promread plans", 64, &ctl,
								 HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
	}

	initStringInfo(&key);
	appendStringInfoString(&key, stmt->sql.data);
	for (i = 0; i < stmt->nparams; i++)
		appendStringInfo(&key, " %u", stmt->param_types[i]);
	hash = XXH3_64bits(key.data, key.len);

	entry = hash_search(plan_cache, &hash, HASH_FIND, NULL);
	if (entry != NULL && strcmp(entry->key, key.data) == 0)
		return entry->plan;

	if (entry == NULL && hash_get_num_entries(plan_cache) >= PLAN_CACHE_MAX)
	{
		HASH_SEQ_STATUS status;

		hash_seq_init(&status, plan_cache);
		while ((entry = hash_seq_search(&status)) != NULL)
		{
			SPI_freeplan(entry->plan);
			pfree(entry->key);
			hash_search(plan_cache, &entry->hash, HASH_REMOVE, NULL);
		}
	}

	entry = hash_search(plan_cache, &hash, HASH_ENTER, &found);
	if (found)
	{
		/* a hash collision: the newer statement takes the slot */
		SPI_freeplan(entry->plan);
		pfree(entry->key);
	}
	entry->key = NULL;
	entry->plan = SPI_prepare_cursor(stmt->sql.data, stmt->nparams,
									 (Oid *) stmt->param_types,
									 CURSOR_OPT_PARALLEL_OK |
									 CURSOR_OPT_CUSTOM_PLAN);
	if (entry->plan == NULL || SPI_keepplan(entry->plan) != 0)
	{
		hash_search(plan_cache, &hash, HASH_REMOVE, NULL);
		elog(ERROR, "could not prepare promread scan: %s",
			 SPI_result_code_string(SPI_result));
	}
	entry->key = MemoryContextStrdup(TopMemoryContext, key.data);
	return entry->plan;
}

/*
 * Read a row's sample, its label columns deformed with it: false when its
 * time or its value is NULL (a row without a sample, skipped).
 */
static inline bool
read_sample(const ScanReceiver *receiver, TupleTableSlot *slot, int64 *t,
			double *v)
{
	int			n = receiver->nlabels;

	slot_getallattrs(slot);
	if (slot->tts_isnull[n] || slot->tts_isnull[n + 1])
		return false;
	if (receiver->time_kind == TIME_EPOCH_MS)
		*t = DatumGetInt64(slot->tts_values[n]);
	else
		*t = PromTimestampToMs(DatumGetTimestamp(slot->tts_values[n]));
	*v = DatumGetFloat8(slot->tts_values[n + 1]);
	return true;
}

/* Add one row of the scan to the series set. */
static bool
scan_receive(TupleTableSlot *slot, DestReceiver *self)
{
	ScanReceiver *receiver = (ScanReceiver *) self;
	int64		t;
	double		v;

	if (read_sample(receiver, slot, &t, &v))
		PromSeriesSetAdd(receiver->set, receiver->layout, slot->tts_values,
						 slot->tts_isnull, t, v);
	return true;
}

/*
 * Read one row as scan_receive does, without grouping it: the scan that
 * promread.report_phases runs again to time the executor alone.  The
 * sample is added up, so that it is read.
 */
static bool
scan_read_only(TupleTableSlot *slot, DestReceiver *self)
{
	ScanReceiver *receiver = (ScanReceiver *) self;
	int64		t;
	double		v;

	if (read_sample(receiver, slot, &t, &v))
		receiver->sum += (uint64) t + (uint64) (int64) v;
	return true;
}

/* Nothing to do at the start or the end of the scan's rows. */
static void
scan_startup(DestReceiver *self, int operation, TupleDesc typeinfo)
{
}

static void
scan_shutdown(DestReceiver *self)
{
}

static void
scan_destroy(DestReceiver *self)
{
}

/*
 * Start a query's executor; when the query is a promread scan (its rows go
 * to a ScanReceiver), tell the series set how many rows the plan expects.
 */
static void
scan_executor_start(QueryDesc *query, int eflags)
{
	if (previous_executor_start != NULL)
		previous_executor_start(query, eflags);
	else
		standard_ExecutorStart(query, eflags);
	if (query->dest != NULL && query->dest->receiveSlot == scan_receive)
	{
		ScanReceiver *receiver = (ScanReceiver *) query->dest;

		PromLayoutExpectRows(receiver->set, receiver->layout,
							 query->plannedstmt->planTree->plan_rows);
	}
}

/* Install the executor hook; called once, when the library is loaded. */
void
PromScanInit(void)
{
	previous_executor_start = ExecutorStart_hook;
	ExecutorStart_hook = scan_executor_start;
}

/*
 * For promread.report_phases, the scan just run (with_grouping ticks) is run
 * again with a receiver that reads each row as scan_receive does but groups
 * none: its time is the scan phase's, and the rest of the first run's the
 * group phase's, all that grouping adds to the scan, its cache misses
 * included.  Grouping is a few dozen instructions a row that the processor
 * overlaps with the executor's own: timed row by row, between fences, it
 * read up to six times what it adds (bench/RESULTS.md).  The plan and its
 * parameters are the same, and so are the rows, in the same snapshot.
 */
static void
time_scan_alone(SPIPlanPtr plan, SPIExecuteOptions *options,
				ScanReceiver *receiver, uint64 with_grouping)
{
	uint64		begin;
	int			rc;

	receiver->pub.receiveSlot = scan_read_only;
	begin = PromTicks();
	rc = SPI_execute_plan_extended(plan, options);
	if (rc < 0)
		elog(ERROR, "promread scan failed: %s", SPI_result_code_string(rc));
	PromPhasesScanned(with_grouping, PromTicks() - begin);
}

/*
 * Read the rows of one metric relation that the query selects into the
 * series set.  The caller is connected to SPI.
 */
void
PromScanMetric(PromSeriesSet *set, const PromMetricEntry *entry,
			   const PromQuery *query)
{
	int			nlabels = entry->nlabels;
	LabelColumn *columns = palloc(sizeof(LabelColumn) * (nlabels + 1));
	const char **names = palloc(sizeof(char *) * (nlabels + 1));
	PromLabelKind *kinds = palloc(sizeof(PromLabelKind) * (nlabels + 1));
	Oid		   *types = palloc(sizeof(Oid) * (nlabels + 1));
	const char **const_values = palloc0(sizeof(char *) * (nlabels + 1));
	ScanStatement stmt;
	ScanReceiver receiver;
	SPIExecuteOptions options;
	ParamListInfo params;
	Oid			time_type;
	Oid			value_type;
	Oid			collation;
	const char *time_quoted;
	const char *value_quoted;
	SPIPlanPtr	plan;
	uint64		begin = PromPhaseBegin();
	int			i;
	int			rc;

	/* the columns, as they are now */
	time_type = registered_column_type(entry, entry->time_column, &collation);
	value_type = registered_column_type(entry, entry->value_column, &collation);
	if (time_type != TIMESTAMPTZOID && time_type != TIMESTAMPOID &&
		time_type != INT8OID)
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("time column \"%s\" of metric \"%s\" has type %s",
						entry->time_column, entry->metric,
						format_type_be(time_type)),
				 errhint("Register the metric again with prom_register().")));
	for (i = 0; i < nlabels; i++)
	{
		columns[i].name = entry->label_columns[i];
		columns[i].type = registered_column_type(entry, columns[i].name,
												 &columns[i].collation);
		columns[i].kind = label_kind(columns[i].type);
		names[i] = columns[i].name;
		kinds[i] = columns[i].kind;
		types[i] = columns[i].type;
	}

	/* the statement: label columns, time, value; then the predicates */
	time_quoted = quote_identifier(entry->time_column);
	value_quoted = quote_identifier(entry->value_column);
	memset(&stmt, 0, sizeof(stmt));
	initStringInfo(&stmt.sql);
	appendStringInfoString(&stmt.sql, "SELECT ");
	for (i = 0; i < nlabels; i++)
		appendStringInfo(&stmt.sql, "%s, ", quote_identifier(columns[i].name));
	if (value_type == FLOAT8OID)
		appendStringInfo(&stmt.sql, "%s, %s", time_quoted, value_quoted);
	else
		appendStringInfo(&stmt.sql, "%s, CAST(%s AS pg_catalog.float8)",
						 time_quoted, value_quoted);
	appendStringInfo(&stmt.sql, " FROM %s WHERE",
					 quote_qualified_identifier(get_namespace_name(get_rel_namespace(entry->relid)),
												get_rel_name(entry->relid)));

	if (time_type == INT8OID)
	{
		add_param(&stmt, INT8OID, Int64GetDatum(query->start_ms));
		add_param(&stmt, INT8OID, Int64GetDatum(query->end_ms));
		appendStringInfo(&stmt.sql,
						 " %s OPERATOR(pg_catalog.>=) $1 AND %s OPERATOR(pg_catalog.<=) $2",
						 time_quoted, time_quoted);
	}
	else
	{
		add_param(&stmt, time_type,
				  Int64GetDatum(ms_lower_bound(query->start_ms)));
		add_param(&stmt, time_type,
				  Int64GetDatum(query->end_ms == PG_INT64_MAX ? END_TIMESTAMP :
								ms_lower_bound(query->end_ms + 1)));
		appendStringInfo(&stmt.sql,
						 " %s OPERATOR(pg_catalog.>=) $1 AND %s OPERATOR(pg_catalog.<) $2",
						 time_quoted, time_quoted);
	}

	for (i = 0; i < query->nmatchers; i++)
	{
		const PromMatcher *matcher = &query->matchers[i];
		const LabelColumn *column;

		if (strcmp(matcher->name, "__name__") == 0)
			continue;			/* decided by the catalog lookup */
		column = find_label(columns, nlabels, matcher->name);
		if (column == NULL)
		{
			if (!matcher->matches_empty)
			{
				/* the label is missing on every row */
				PromPhaseEnd(PROM_PHASE_PLAN, begin);
				return;
			}
			continue;
		}
		if (column->kind == PROM_LABEL_ENUM)
		{
			if (!add_enum_predicate(&stmt, column,
									quote_identifier(column->name), matcher))
			{
				PromPhaseEnd(PROM_PHASE_PLAN, begin);
				return;
			}
		}
		else
			add_text_predicate(&stmt, column, quote_identifier(column->name),
							   matcher);
	}

	/* __name__ is a constant label after the label columns */
	names[nlabels] = "__name__";
	kinds[nlabels] = PROM_LABEL_CONST;
	types[nlabels] = TEXTOID;
	const_values[nlabels] = entry->metric;

	memset(&receiver, 0, sizeof(receiver));
	receiver.pub.receiveSlot = scan_receive;
	receiver.pub.rStartup = scan_startup;
	receiver.pub.rShutdown = scan_shutdown;
	receiver.pub.rDestroy = scan_destroy;
	receiver.pub.mydest = DestNone;
	receiver.set = set;
	receiver.layout = PromLayoutCreate(set, nlabels + 1, names, kinds, types,
									   const_values);
	receiver.nlabels = nlabels;
	receiver.time_kind = time_type == INT8OID ? TIME_EPOCH_MS : TIME_TIMESTAMP;

	params = makeParamList(stmt.nparams);
	params->numParams = stmt.nparams;
	for (i = 0; i < stmt.nparams; i++)
	{
		params->params[i].value = stmt.param_values[i];
		params->params[i].isnull = false;
		params->params[i].pflags = PARAM_FLAG_CONST;
		params->params[i].ptype = stmt.param_types[i];
	}

	elog(DEBUG1, "promread scan of metric \"%s\": %s", entry->metric,
		 stmt.sql.data);
	plan = cached_plan(&stmt);
	PromPhaseEnd(PROM_PHASE_PLAN, begin);

	memset(&options, 0, sizeof(options));
	options.params = params;
	options.read_only = true;
	options.dest = &receiver.pub;
	begin = PromPhaseBegin();
	rc = SPI_execute_plan_extended(plan, &options);
	if (rc < 0)
		elog(ERROR, "promread scan failed: %s", SPI_result_code_string(rc));
	if (unlikely(PromPhases.active))
		time_scan_alone(plan, &options, &receiver, PromTicks() - begin);
}

/*-------------------------------------------------------------------------
 *
 * scan.c
 *	  Reading one metric relation through the executor: its statement,
 *	  then its run (scan_exec.c); a metric in chunk storage is read from
 *	  its tables instead (scan_chunks.c).
 *
 * 1. The relation is locked (AccessShareLock) before its registered
 *    columns are read, so that no DDL changes them until the metric is
 *    read: the transaction's end for a query that names its metric; for
 *    one that selects metrics otherwise, once the metric is read, in a
 *    subtransaction rolled back then (PromScanLettingGoOfLocks), since such
 *    a query may select thousands.  A registration that no longer fits its
 *    relation, or a relation the caller may not read, fails a query that
 *    names its metric and is skipped by one that selects metrics otherwise
 *    (scan_columns.c).
 * 2. The matchers on labels and the time range become predicates of one
 *    SELECT (scan_predicates.c), so that indexes, partition pruning, privileges and row-level
 *    security apply.  Values are bound as parameters, identifiers quoted,
 *    operators schema-qualified.  Each matcher is decided as early as it
 *    can be: on a label the relation lacks, once, for the whole scan; on an
 *    enum column, over the enum's labels, as "col = ANY(<values>)"; a regex
 *    whose strings are few (a literal set) as "= ANY($n)"; another regex or
 *    a negative matcher on a text column of a relation whose rows are
 *    stored, per distinct value: over the values an index lists
 *    (label_values.c), the accepted ones then bound as "= ANY($n)", or else
 *    by the engine as it reads rows (layout.c), a regex's literal prefix as
 *    a range an index serves; any other as "col <op> $n", a regex
 *    as an anchored ARE (prom_regex.c), or as LIKE when it is characters
 *    and "."s (host-.*5 as host-%5).  A matcher that matches "" also
 *    matches a NULL column.  A comparison gets COLLATE "C" only on a
 *    nondeterministic collation: elsewhere equality is bytewise and the ARE
 *    depends on no collation, and an explicit collation would keep an index
 *    out of use and a foreign server from evaluating it.
 * 3. The statement text depends on the relation, its columns and the shape
 *    of the predicates, never on values, so prepared statements are cached
 *    per backend by text and parameter types (scan_plans.c), and planned for
 *    each call's values (custom plans: the time range decides between an
 *    index and a sequential scan; partitions are pruned at plan time).
 * 4. Rows go from the executor into the series set through a DestReceiver
 *    of our own (scan_exec.c), which checks the row types before the first
 *    row.  An ExecutorStart hook passes the plan's estimate of the rows to
 *    the set, which sizes sample blocks by it.  Rows without a time or value carry
 *    no sample and are skipped by the receiver.  A value column of type
 *    prom_histogram (or a domain over it) makes a layout of histograms:
 *    each row's histogram is copied into the set, and the sample's value
 *    points to the copy (engine.h).
 * 5. With promread.report_phases on, each scan runs twice, the second time
 *    without grouping, to time the executor alone (PromScanRun).
 * 6. A relation whose partitions are foreign tables on servers that list
 *    promread is read by its partitions' own grouping instead (shards.c):
 *    the statement asks each for its series, and its receiver adds them.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_class.h"
#include "catalog/pg_inherits.h"
#include "commands/prepare.h"
#include "engine/engine.h"
#include "executor/spi.h"
#include "histogram/histogram.h"
#include "phases.h"
#include "promread.h"
#include "scan_internal.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"

/* A scan's run, as PromScanRunSkippingUnreadable's step. */
typedef struct ScanRun
{
	SPIPlanPtr	plan;
	ScanPlanning planning;
	SPIExecuteOptions *options;
	ReceiveSlotFn read_only;
} ScanRun;

/* Run a scan (a ScanRun). */
static void
scan_run_step(void *arg)
{
	ScanRun    *run = (ScanRun *) arg;

	PromScanRun(run->plan, run->planning, run->options, run->read_only);
}

/*
 * Read the registered columns of the locked relation as they are now: false
 * when the registration no longer fits them (reported).
 */
static bool
read_metric_columns(const PromMetricEntry *entry, bool named,
					MetricColumn *time_column, MetricColumn *value_column,
					MetricColumn *labels)
{
	Oid			type;

	if (!PromScanReadColumn(entry, entry->relid, entry->time_column, named,
							time_column) ||
		!PromScanReadColumn(entry, entry->relid, entry->value_column, named,
							value_column))
		return false;
	type = time_column->basetype;
	if (!PromScanCheckColumnType(entry, named, time_column, "time",
						   type == TIMESTAMPTZOID || type == TIMESTAMPOID ||
						   type == INT8OID))
		return false;
	type = value_column->basetype;
	if (!PromScanCheckColumnType(entry, named, value_column, "value",
						   type == FLOAT8OID || type == FLOAT4OID ||
						   type == NUMERICOID || type == INT2OID ||
						   type == INT4OID || type == INT8OID ||
						   PromIsHistogramType(type)))
		return false;
	return PromScanReadLabelColumns(entry, entry->relid, named, labels);
}

/*
 * Is the relation a foreign table, or a partitioned table with foreign
 * partitions?
 */
static bool
has_foreign_tables(Oid relid)
{
	char		relkind = get_rel_relkind(relid);
	ListCell   *lc;

	if (relkind == RELKIND_FOREIGN_TABLE)
		return true;
	if (relkind != RELKIND_PARTITIONED_TABLE)
		return false;
	foreach(lc, find_all_inheritors(relid, NoLock, NULL))
		if (get_rel_relkind(lfirst_oid(lc)) == RELKIND_FOREIGN_TABLE)
			return true;
	return false;
}

/*
 * Are the relation's rows read as they are stored, rather than computed: a
 * table, a materialized view, or a partitioned table without foreign
 * partitions?  Only then does the engine decide matchers per value.  A
 * view may join a table of series to one of samples, where SQL evaluates a
 * matcher once a series; a foreign server should filter rows where they
 * are.
 */
static bool
rows_are_stored(Oid relid, bool has_foreign)
{
	char		relkind = get_rel_relkind(relid);

	return relkind == RELKIND_RELATION || relkind == RELKIND_MATVIEW ||
		(relkind == RELKIND_PARTITIONED_TABLE && !has_foreign);
}

/*
 * The scan's expression of its value column: the column itself when it is a
 * float8 or a prom_histogram, else cast to that type (its base type when it
 * is a domain over prom_histogram, any other number to float8).
 */
static const char *
value_expression(const MetricColumn *column)
{
	const char *name = quote_identifier(column->name);

	if (column->type == FLOAT8OID || PromIsHistogramType(column->type))
		return name;
	if (PromIsHistogramType(column->basetype))
		return psprintf("CAST(%s AS %s)", name,
						format_type_be_qualified(column->basetype));
	return psprintf("CAST(%s AS pg_catalog.float8)", name);
}

/*
 * Plan the read of one metric relation for a query: lock it, read its
 * registered columns, and build the statement and the layout's columns.
 * False when there is nothing to read (the relation gone, skipped, or no
 * row can match).
 */
static bool
prepare_metric_scan(const PromMetricEntry *entry, const PromQuery *query,
					bool named, MetricScan *scan)
{
	int			nlabels = entry->nlabels + (entry->overflow_column != NULL);
	MetricColumn *labels = palloc(sizeof(MetricColumn) * Max(nlabels, 1));
	ScanStatement *stmt = &scan->stmt;
	int			i;

	memset(scan, 0, sizeof(MetricScan));
	scan->entry = entry;
	scan->labels = labels;
	scan->nlabels = nlabels;
	scan->overflow = entry->overflow_column != NULL ? entry->nlabels : -1;
	if (!PromScanLockRelation(entry, named) ||
		!read_metric_columns(entry, named, &scan->time_column,
							 &scan->value_column, labels))
		return false;

	/* the statement: label columns, time, value; then the predicates */
	initStringInfo(&stmt->sql);
	appendStringInfoString(&stmt->sql, "SELECT ");
	for (i = 0; i < nlabels; i++)
		appendStringInfo(&stmt->sql, "%s, ", quote_identifier(labels[i].name));
	scan->value_expression = value_expression(&scan->value_column);
	appendStringInfo(&stmt->sql, "%s, %s FROM %s WHERE",
					 quote_identifier(scan->time_column.name),
					 scan->value_expression,
					 PromQuotedRelationName(entry->relid));
	scan->predicates = stmt->sql.len;
	PromScanAddTimeRange(stmt, query, &scan->time_column);
	scan->has_foreign = has_foreign_tables(entry->relid);
	if (scan->has_foreign)
		scan->regex_function = PromShardRegexFunction(entry->relid);
	return PromScanAddMatchers(scan, query,
							   rows_are_stored(entry->relid, scan->has_foreign));
}

/* A metric's read, as PromScanLettingGoOfLocks's step. */
typedef struct MetricRead
{
	PromSeriesSet *set;
	const PromMetricEntry *entry;
	const PromStorageEntry *storage;
	const PromQuery *query;
} MetricRead;

static void scan_metric(PromSeriesSet *set, const PromMetricEntry *entry,
						const PromStorageEntry *storage, const PromQuery *query,
						bool named);

/* Read a metric the query does not name (a MetricRead). */
static void
metric_read_step(void *arg)
{
	MetricRead *read = arg;

	scan_metric(read->set, read->entry, read->storage, read->query, false);
}

/*
 * Read the rows of one metric relation that the query selects into the
 * series set; of a metric in chunk storage (storage, its entry), its
 * tables'.  named: the query names this metric (an equality matcher on
 * __name__), so that a relation the caller may not read, or a registration
 * that no longer fits, is an error rather than a metric skipped.  A metric
 * the query does not name is read letting go of its locks when done: a
 * selector without a name may select thousands of metrics, a dozen locks
 * each (PromScanLettingGoOfLocks).  The caller is connected to SPI.
 */
void
PromScanMetric(PromSeriesSet *set, const PromMetricEntry *entry,
			   const PromStorageEntry *storage, const PromQuery *query,
			   bool named)
{
	MetricRead	read = {set, entry, storage, query};

	if (named)
		scan_metric(set, entry, storage, query, true);
	else
		PromScanLettingGoOfLocks(metric_read_step, &read);
}

/* PromScanMetric's read of one metric. */
static void
scan_metric(PromSeriesSet *set, const PromMetricEntry *entry,
			const PromStorageEntry *storage, const PromQuery *query,
			bool named)
{
	MetricScan	scan;
	PromLayout *layout;
	ScanStatement shard_stmt;
	List	   *partitions;
	const ScanStatement *stmt = &scan.stmt;
	ReceiveSlotFn read_only = PromScanReadOnly;
	SPIExecuteOptions options;
	SPIPlanPtr	plan;
	uint64		begin;

	if (storage != NULL)
	{
		PromScanChunkMetric(set, entry, storage, query, named);
		return;
	}
	begin = PromPhaseBegin();
	if (!prepare_metric_scan(entry, query, named, &scan))
	{
		PromPhaseEnd(PROM_PHASE_PLAN, begin);
		return;
	}
	memset(&options, 0, sizeof(options));
	if (PromShardScanPrepare(&scan, &shard_stmt, &partitions))
	{
		stmt = &shard_stmt;
		options.dest = PromShardReceiverCreate(set, &scan, query, partitions);
		read_only = NULL;
	}
	else
		options.dest = PromScanReceiverCreate(set, &scan, &layout);
	elog(DEBUG1, "promread scan of metric \"%s\": %s", entry->metric,
		 stmt->sql.data);
	plan = PromScanCachedPlan(stmt);
	PromPhaseEnd(PROM_PHASE_PLAN, begin);

	options.params = PromScanStatementParams(stmt);
	options.read_only = true;
	if (named)
		PromScanRun(plan, stmt->planning, &options, read_only);
	else
	{
		ScanRun		run = {plan, stmt->planning, &options, read_only};
		ReceiveSlotFn receive = options.dest->receiveSlot;

		if (!PromScanRunSkippingUnreadable(scan_run_step, &run, set))
			options.dest->receiveSlot = receive;
	}
}

/*
 * The EXPLAINs of a read's statements, as PromScanRunSkippingUnreadable's
 * step: the plan of each, after its title if it has one.  Of a metric in
 * chunk storage, the series statement runs first, and the chunk and head
 * statements are those of the series it selects.
 */
typedef struct ExplainRun
{
	const char *options;		/* EXPLAIN's */
	int			nstmts;
	const ScanStatement *stmts[3];
	const char *titles[3];
	ChunkScan  *chunk_scan;		/* of a metric in chunk storage */
	List	   *lines;
} ExplainRun;

/*
 * EXPLAIN a statement as a read plans it, its lines in SPI_tuptable: with
 * its values as constants for a custom plan; for a generic one, prepared
 * and executed with its values as literals (EXECUTE takes no parameters),
 * so that the plan shown is the one made for any values; under a name the
 * session's own prepared statements do not use, dropped when done.
 */
static void
explain_statement(const char *options, const ScanStatement *stmt)
{
	int			nest = PromScanUsePlans(stmt->planning);
	int			rc;

	if (stmt->planning == SCAN_PLAN_PER_CALL)
		rc = SPI_execute_with_args(psprintf("EXPLAIN (%s) %s", options, stmt->sql.data),
								   stmt->nparams, (Oid *) stmt->param_types,
								   (Datum *) stmt->param_values, NULL, false, 0);
	else
	{
		StringInfoData prepare;
		StringInfoData execute;
		char		name[NAMEDATALEN];

		for (int n = 1;; n++)
		{
			snprintf(name, sizeof(name), "promread_explain_%d", n);
			if (FetchPreparedStatement(name, false) == NULL)
				break;
		}
		initStringInfo(&prepare);
		initStringInfo(&execute);
		appendStringInfo(&prepare, "PREPARE %s", name);
		appendStringInfo(&execute, "EXPLAIN (%s) EXECUTE %s", options, name);
		for (int i = 0; i < stmt->nparams; i++)
		{
			Oid			output;
			bool		varlena;

			getTypeOutputInfo(stmt->param_types[i], &output, &varlena);
			appendStringInfo(&prepare, "%s%s", i > 0 ? ", " : " (",
							 format_type_be_qualified(stmt->param_types[i]));
			appendStringInfo(&execute, "%s%s", i > 0 ? ", " : " (",
							 quote_literal_cstr(OidOutputFunctionCall(output, stmt->param_values[i])));
		}
		appendStringInfo(&prepare, "%s AS %s", stmt->nparams > 0 ? ")" : "", stmt->sql.data);
		if (stmt->nparams > 0)
			appendStringInfoChar(&execute, ')');
		if (SPI_execute(prepare.data, false, 0) != SPI_OK_UTILITY)
			elog(ERROR, "could not prepare promread explain");
		PG_TRY();
		{
			rc = SPI_execute(execute.data, false, 0);
		}
		PG_CATCH();
		{
			DropPreparedStatement(name, false);
			PG_RE_THROW();
		}
		PG_END_TRY();
		DropPreparedStatement(name, false);
	}
	AtEOXact_GUC(true, nest);
	if (rc < 0)
		elog(ERROR, "promread explain failed: %s", SPI_result_code_string(rc));
}

/* Run the EXPLAINs of an ExplainRun, adding their lines to its own. */
static void
explain_run_step(void *arg)
{
	ExplainRun *run = (ExplainRun *) arg;
	int			i;

	if (run->chunk_scan != NULL)
		(void) PromChunkScanSelectSeries(run->chunk_scan, true);

	for (i = 0; i < run->nstmts; i++)
	{
		uint64		k;

		explain_statement(run->options, run->stmts[i]);
		if (run->titles[i] != NULL)
			run->lines = lappend(run->lines, psprintf("  %s", run->titles[i]));
		for (k = 0; k < SPI_processed; k++)
			run->lines = lappend(run->lines,
								 psprintf("  %s", SPI_getvalue(SPI_tuptable->vals[k],
															   SPI_tuptable->tupdesc, 1)));
	}
}

/* A metric's EXPLAIN, as PromScanLettingGoOfLocks's step. */
typedef struct MetricExplain
{
	const PromMetricEntry *entry;
	const PromStorageEntry *storage;
	const PromQuery *query;
	bool		analyze;
	List	   *lines;			/* the result */
} MetricExplain;

static List *explain_metric(const PromMetricEntry *entry,
							const PromStorageEntry *storage,
							const PromQuery *query, bool named, bool analyze);

/* Explain a metric the query does not name (a MetricExplain). */
static void
metric_explain_step(void *arg)
{
	MetricExplain *explain = arg;

	explain->lines = explain_metric(explain->entry, explain->storage,
									explain->query, false, explain->analyze);
}

/*
 * The lines that explain reading one metric relation for a query: the
 * metric, the matchers the engine decides per value, then the plan of its
 * statement (EXPLAIN, with ANALYZE when asked: the statement then runs, its
 * rows discarded), planned for the query's values as reads plan it; of a
 * metric in chunk storage, the plans of its chunk and head statements.
 * NIL when nothing would be read, or when a relation the caller may not
 * read is skipped, as PromScanMetric skips it; as it, a metric the query
 * does not name is explained letting go of its locks when done.  The
 * caller is connected to SPI.
 */
List *
PromExplainMetric(const PromMetricEntry *entry,
				  const PromStorageEntry *storage, const PromQuery *query,
				  bool named, bool analyze)
{
	MetricExplain explain = {entry, storage, query, analyze, NIL};

	if (named)
		return explain_metric(entry, storage, query, true, analyze);
	PromScanLettingGoOfLocks(metric_explain_step, &explain);
	return explain.lines;
}

/* PromExplainMetric's lines of one metric. */
static List *
explain_metric(const PromMetricEntry *entry,
			   const PromStorageEntry *storage, const PromQuery *query,
			   bool named, bool analyze)
{
	MetricScan	scan_data;
	ChunkScan	chunk_scan;
	const MetricScan *scan = &scan_data;
	ScanStatement shard_stmt;
	List	   *partitions;
	List	   *lines = NIL;
	ListCell   *lc;
	ExplainRun	run;

	memset(&run, 0, sizeof(run));
	run.options = analyze ? "ANALYZE, BUFFERS, TIMING OFF" : "COSTS ON";
	if (storage != NULL)
	{
		if (!PromChunkScanPrepare(entry, storage, query, named, &chunk_scan))
			return NIL;
		scan = &chunk_scan.scan;
		lines = lappend(lines, psprintf("metric %s: %s, in chunk storage",
										entry->metric, get_rel_name(entry->relid)));
		run.chunk_scan = &chunk_scan;
		run.nstmts = 3;
		run.stmts[0] = &chunk_scan.scan.stmt;
		run.titles[0] = psprintf("series: %s",
								 PromQuotedRelationName(storage->series));
		run.stmts[1] = &chunk_scan.chunks;
		run.titles[1] = psprintf("chunks: %s",
								 PromQuotedRelationName(storage->chunks));
		run.stmts[2] = &chunk_scan.head;
		run.titles[2] = psprintf("head: %s",
								 PromQuotedRelationName(storage->head));
	}
	else
	{
		if (!prepare_metric_scan(entry, query, named, &scan_data))
			return NIL;
		lines = lappend(lines, psprintf("metric %s: %s", entry->metric,
										get_rel_name(entry->relid)));
		run.nstmts = 1;
		run.stmts[0] = &scan_data.stmt;
		if (PromShardScanPrepare(&scan_data, &shard_stmt, &partitions))
		{
			run.stmts[0] = &shard_stmt;
			run.options = psprintf("%s, VERBOSE", run.options);
			foreach(lc, partitions)
				lines = lappend(lines, psprintf("  grouped on its shard: %s",
												PromQuotedRelationName(lfirst_oid(lc))));
		}
	}
	foreach(lc, scan->filters)
	{
		const ScanFilter *filter = lfirst(lc);

		lines = lappend(lines, psprintf("  decided per distinct value: %s%s\"%s\"",
										filter->matcher->name,
										PromMatchTypeOperator(filter->matcher->type),
										filter->matcher->value));
	}
	foreach(lc, scan->decisions)
	{
		const ValueDecision *decision = lfirst(lc);

		lines = lappend(lines, psprintf("  decided over the values an index lists: %s%s\"%s\" (%d of %d values)",
										decision->matcher->name,
										PromMatchTypeOperator(decision->matcher->type),
										decision->matcher->value,
										decision->naccepted, decision->nvalues));
	}
	if (named)
		explain_run_step(&run);
	else if (!PromScanRunSkippingUnreadable(explain_run_step, &run, NULL))
		lines = run.lines = NIL;
	if (run.chunk_scan != NULL)
		PromChunkScanFree(run.chunk_scan);
	return list_concat(lines, run.lines);
}

/*-------------------------------------------------------------------------
 *
 * scan.c
 *	  Reading one metric relation through the executor.
 *
 * 1. The relation is locked (AccessShareLock) before its registered
 *    columns are read, so that no DDL changes them until the transaction
 *    ends.  A registration that no longer fits its relation, or a relation
 *    the caller may not read, fails a query that names its metric and is
 *    skipped by one that selects metrics otherwise.
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
 *    as an anchored ARE (prom_regex.c).  A matcher that matches "" also
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
 *    of our own, which checks the row types before the first row.  An
 *    ExecutorStart hook passes the plan's estimate of the rows to the set,
 *    which sizes sample blocks by it.  Rows without a time or value carry
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

#include "access/xact.h"
#include "catalog/namespace.h"
#include "catalog/pg_inherits.h"
#include "engine/engine.h"
#include "executor/executor.h"
#include "executor/spi.h"
#include "histogram/histogram.h"
#include "phases.h"
#include "promread.h"
#include "scan_internal.h"
#include "storage/lmgr.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/syscache.h"

/* Receives the scan's rows and adds them to the series set. */
typedef struct ScanReceiver
{
	DestReceiver pub;
	PromSeriesSet *set;
	PromLayout *layout;
	int			nlabels;		/* label columns come first in the row */
	int			ncolumns;		/* labels, time and value */
	const Oid  *result_types;	/* of each column, as the layout assumes */
	const char *metric;
	TimeKind	time_kind;
	bool		histograms;		/* the value is a prom_histogram */
	uint64		sum;			/* of the samples read without grouping them
								 * (scan_read_only) */
} ScanReceiver;

/* Metrics whose misfit this call has reported (report_misfit). */
static List *warned_misfits = NIL;

static ExecutorStart_hook_type previous_executor_start = NULL;

/*
 * Read a row's sample, its label columns deformed with it: false when its
 * time or its value is NULL (a row without a sample, skipped).  A histogram
 * is copied into the set (PromSeriesSetCopyHistogram) when copy is true;
 * else its value is only some bits of the Datum.
 */
static inline bool
read_sample(const ScanReceiver *receiver, TupleTableSlot *slot, int64 *t,
			double *v, bool copy)
{
	int			n = receiver->nlabels;

	slot_getallattrs(slot);
	if (slot->tts_isnull[n] || slot->tts_isnull[n + 1])
		return false;
	if (receiver->time_kind == TIME_EPOCH_MS)
		*t = DatumGetInt64(slot->tts_values[n]);
	else
		*t = PromTimestampToMs(DatumGetTimestamp(slot->tts_values[n]));
	if (unlikely(receiver->histograms))
		*v = copy ? PromSeriesSetCopyHistogram(receiver->set,
											   slot->tts_values[n + 1]) :
			(double) (slot->tts_values[n + 1] & 0xFF);
	else
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

	if (read_sample(receiver, slot, &t, &v, true))
		PromSeriesSetAdd(receiver->set, receiver->layout, slot->tts_values,
						 slot->tts_isnull, t, v);
	return true;
}

/*
 * Read one row as scan_receive does, without grouping it: the scan that
 * promread.report_phases runs again to time the executor alone.  The
 * sample is added up, so that it is read.
 */
bool
PromScanReadOnly(TupleTableSlot *slot, DestReceiver *self)
{
	ScanReceiver *receiver = (ScanReceiver *) self;
	int64		t;
	double		v;

	if (read_sample(receiver, slot, &t, &v, false))
		receiver->sum += (uint64) t + (uint64) (int64) v;
	return true;
}

/*
 * Check, before the first row, that the rows are those the layout was built
 * for: the relation was locked before its columns were read, so they cannot
 * have changed since, but a row read by the wrong kind of key would be a
 * pointer made of an integer, so the executor's own result types are
 * checked against what the layout assumed.
 */
static void
scan_startup(DestReceiver *self, int operation, TupleDesc typeinfo)
{
	ScanReceiver *receiver = (ScanReceiver *) self;
	int			i;

	for (i = 0; i < receiver->ncolumns; i++)
		if (typeinfo->natts != receiver->ncolumns ||
			TupleDescAttr(typeinfo, i)->atttypid != receiver->result_types[i])
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("relation of metric \"%s\" changed while it was read",
							receiver->metric),
					 errhint("Retry the read.")));
}

/* Nothing to do at the end of the scan's rows. */
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
 * Run a statement's plan into its receiver.  For promread.report_phases, a
 * row scan is then run again with the receiver's read_only function, which
 * reads each row as the receiver does but groups none: its time is the
 * scan phase's, and the rest of the first run's the group phase's, all
 * that grouping adds to the scan, its cache misses included (a row's
 * grouping overlaps with the executor's own work, so timing it row by row
 * would overstate it).  The plan and its parameters are the same, and so
 * are the rows, in the same snapshot.  Without a read_only function (the
 * shards' answers), the whole run is the scan phase.
 */
void
PromScanRun(SPIPlanPtr plan, SPIExecuteOptions *options, ReceiveSlotFn read_only)
{
	DestReceiver *dest = options->dest;
	ReceiveSlotFn receive = dest->receiveSlot;
	uint64		begin = PromPhaseBegin();
	uint64		with_grouping;
	int			nest = PromScanUseCustomPlans();
	int			rc;

	rc = SPI_execute_plan_extended(plan, options);
	AtEOXact_GUC(true, nest);
	if (rc < 0)
		elog(ERROR, "promread scan failed: %s", SPI_result_code_string(rc));
	if (likely(!PromPhases.active))
		return;

	with_grouping = PromTicks() - begin;
	if (read_only == NULL)
	{
		PromPhasesScanned(with_grouping, with_grouping);
		return;
	}
	dest->receiveSlot = read_only;
	begin = PromTicks();
	rc = SPI_execute_plan_extended(plan, options);
	if (rc < 0)
		elog(ERROR, "promread scan failed: %s", SPI_result_code_string(rc));
	PromPhasesScanned(with_grouping, PromTicks() - begin);
	dest->receiveSlot = receive;
}

/*
 * Run one step of reading a metric that the query selects without naming
 * it (its scan, or the EXPLAIN of its scan), in a subtransaction: a
 * relation that the caller may not read (a view whose owner may not read
 * what it reads, say) is skipped, as rows hidden by row-level security
 * are, rather than failing the query for every metric it selects.  False
 * when it was skipped.  Privileges are checked before the first row; any
 * other error, or one after samples were added to the set (when there is
 * one), fails the query.
 */
bool
PromScanRunSkippingUnreadable(void (*step) (void *arg), void *arg,
							  PromSeriesSet *set)
{
	MemoryContext oldcxt = CurrentMemoryContext;
	ResourceOwner oldowner = CurrentResourceOwner;
	int64		samples_before = set != NULL ? PromSeriesSetSampleCount(set) : 0;
	bool		done = true;

	BeginInternalSubTransaction(NULL);
	MemoryContextSwitchTo(oldcxt);
	PG_TRY();
	{
		step(arg);
		ReleaseCurrentSubTransaction();
		MemoryContextSwitchTo(oldcxt);
		CurrentResourceOwner = oldowner;
	}
	PG_CATCH();
	{
		ErrorData  *error;

		MemoryContextSwitchTo(oldcxt);
		error = CopyErrorData();
		FlushErrorState();
		RollbackAndReleaseCurrentSubTransaction();
		MemoryContextSwitchTo(oldcxt);
		CurrentResourceOwner = oldowner;
		if (error->sqlerrcode != ERRCODE_INSUFFICIENT_PRIVILEGE ||
			(set != NULL && PromSeriesSetSampleCount(set) != samples_before))
			ReThrowError(error);
		FreeErrorData(error);
		done = false;
	}
	PG_END_TRY();
	return done;
}

/* A scan's run, as PromScanRunSkippingUnreadable's step. */
typedef struct ScanRun
{
	SPIPlanPtr	plan;
	SPIExecuteOptions *options;
	ReceiveSlotFn read_only;
} ScanRun;

/* Run a scan (a ScanRun). */
static void
scan_run_step(void *arg)
{
	ScanRun    *run = (ScanRun *) arg;

	PromScanRun(run->plan, run->options, run->read_only);
}

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

/*
 * Add a layout for the scan's rows to the set: the label columns, then
 * __name__, a constant label; and the matchers the engine decides per
 * value.  Returns the receiver of the rows (label columns, time, value),
 * and sets *layout.
 */
DestReceiver *
PromScanReceiverCreate(PromSeriesSet *set, const MetricScan *scan,
					   PromLayout **layout)
{
	ScanReceiver *receiver = palloc0(sizeof(ScanReceiver));
	int			nlabels = scan->nlabels;
	const char **names = palloc(sizeof(char *) * (nlabels + 1));
	PromLabelKind *kinds = palloc(sizeof(PromLabelKind) * (nlabels + 1));
	Oid		   *types = palloc(sizeof(Oid) * (nlabels + 1));
	Oid		   *result_types = palloc(sizeof(Oid) * (nlabels + 2));
	const char **const_values = palloc0(sizeof(char *) * (nlabels + 1));
	ListCell   *lc;
	int			i;

	for (i = 0; i < nlabels; i++)
	{
		names[i] = scan->labels[i].label;
		kinds[i] = scan->labels[i].kind;
		types[i] = scan->labels[i].basetype;
		result_types[i] = scan->labels[i].type;
	}
	names[nlabels] = "__name__";
	kinds[nlabels] = PROM_LABEL_CONST;
	types[nlabels] = TEXTOID;
	const_values[nlabels] = scan->entry->metric;
	result_types[nlabels] = scan->time_column.type;
	result_types[nlabels + 1] = PromIsHistogramType(scan->value_column.basetype) ?
		scan->value_column.basetype : FLOAT8OID;

	receiver->pub.receiveSlot = scan_receive;
	receiver->pub.rStartup = scan_startup;
	receiver->pub.rShutdown = scan_shutdown;
	receiver->pub.rDestroy = scan_destroy;
	receiver->pub.mydest = DestNone;
	receiver->set = set;
	receiver->layout = PromSeriesSetAddLayout(set, nlabels + 1, names, kinds,
											  types, const_values);
	if (scan->overflow >= 0)
		PromLayoutSetOverflow(set, receiver->layout, scan->overflow);
	receiver->histograms = result_types[nlabels + 1] != FLOAT8OID;
	if (receiver->histograms)
		PromLayoutSetHistograms(set, receiver->layout);
	foreach(lc, scan->filters)
	{
		const ScanFilter *filter = lfirst(lc);

		PromLayoutAddFilter(set, receiver->layout, filter->column,
							filter->matcher);
	}
	receiver->nlabels = nlabels;
	receiver->ncolumns = nlabels + 2;
	receiver->result_types = result_types;
	receiver->metric = scan->entry->metric;
	receiver->time_kind = scan->time_column.basetype == INT8OID ?
		TIME_EPOCH_MS : TIME_TIMESTAMP;
	*layout = receiver->layout;
	return &receiver->pub;
}

/*
 * Read the rows of one metric relation that the query selects into the
 * series set.  named: the query names this metric (an equality matcher on
 * __name__), so that a relation the caller may not read, or a registration
 * that no longer fits, is an error rather than a metric skipped.  The
 * caller is connected to SPI.
 */
void
PromScanMetric(PromSeriesSet *set, const PromMetricEntry *entry,
			   const PromQuery *query, bool named)
{
	MetricScan	scan;
	PromLayout *layout;
	ScanStatement shard_stmt;
	List	   *partitions;
	const ScanStatement *stmt = &scan.stmt;
	ReceiveSlotFn read_only = PromScanReadOnly;
	SPIExecuteOptions options;
	SPIPlanPtr	plan;
	ChunkStorage storage;
	uint64		begin;

	if (PromChunkStorageOf(entry, &storage))
	{
		PromScanChunkMetric(set, entry, &storage, query, named);
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
		PromScanRun(plan, &options, read_only);
	else
	{
		ScanRun		run = {plan, &options, read_only};
		ReceiveSlotFn receive = options.dest->receiveSlot;

		if (!PromScanRunSkippingUnreadable(scan_run_step, &run, set))
			options.dest->receiveSlot = receive;
	}
}

/*
 * The EXPLAINs of a read's statements, as PromScanRunSkippingUnreadable's
 * step: the plan of each, after its title if it has one.
 */
typedef struct ExplainRun
{
	const char *options;		/* EXPLAIN's */
	int			nstmts;
	const ScanStatement *stmts[2];
	const char *titles[2];
	List	   *lines;
} ExplainRun;

/* Run the EXPLAINs of an ExplainRun, adding their lines to its own. */
static void
explain_run_step(void *arg)
{
	ExplainRun *run = (ExplainRun *) arg;
	int			i;

	for (i = 0; i < run->nstmts; i++)
	{
		const ScanStatement *stmt = run->stmts[i];
		int			nest = PromScanUseCustomPlans();
		uint64		k;
		int			rc;

		rc = SPI_execute_with_args(psprintf("EXPLAIN (%s) %s", run->options,
											stmt->sql.data),
								   stmt->nparams, (Oid *) stmt->param_types,
								   (Datum *) stmt->param_values, NULL, false, 0);
		AtEOXact_GUC(true, nest);
		if (rc < 0)
			elog(ERROR, "promread explain failed: %s", SPI_result_code_string(rc));
		if (run->titles[i] != NULL)
			run->lines = lappend(run->lines, psprintf("  %s", run->titles[i]));
		for (k = 0; k < SPI_processed; k++)
			run->lines = lappend(run->lines,
								 psprintf("  %s", SPI_getvalue(SPI_tuptable->vals[k],
															   SPI_tuptable->tupdesc, 1)));
	}
}

/*
 * The lines that explain reading one metric relation for a query: the
 * metric, the matchers the engine decides per value, then the plan of its
 * statement (EXPLAIN, with ANALYZE when asked: the statement then runs, its
 * rows discarded), planned for the query's values as reads plan it; of a
 * metric in chunk storage, the plans of its chunk and head statements.
 * NIL when nothing would be read, or when a relation the caller may not
 * read is skipped, as PromScanMetric skips it.  The caller is connected to
 * SPI.
 */
List *
PromExplainMetric(const PromMetricEntry *entry, const PromQuery *query,
				  bool named, bool analyze)
{
	MetricScan	scan_data;
	ChunkScan	chunk_scan;
	ChunkStorage storage;
	const MetricScan *scan = &scan_data;
	ScanStatement shard_stmt;
	List	   *partitions;
	List	   *lines = NIL;
	ListCell   *lc;
	ExplainRun	run;

	memset(&run, 0, sizeof(run));
	run.options = analyze ? "ANALYZE, BUFFERS, TIMING OFF" : "COSTS ON";
	if (PromChunkStorageOf(entry, &storage))
	{
		if (!PromChunkScanPrepare(entry, &storage, query, named, &chunk_scan))
			return NIL;
		scan = &chunk_scan.scan;
		lines = lappend(lines, psprintf("metric %s: %s, in chunk storage",
										entry->metric, get_rel_name(entry->relid)));
		run.nstmts = 2;
		run.stmts[0] = &chunk_scan.chunks;
		run.titles[0] = psprintf("chunks: %s",
								 PromQuotedRelationName(storage.chunks));
		run.stmts[1] = &chunk_scan.head;
		run.titles[1] = psprintf("head: %s",
								 PromQuotedRelationName(storage.head));
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
		return NIL;
	return list_concat(lines, run.lines);
}

/*-------------------------------------------------------------------------
 *
 * scan_exec.c
 *	  The executor's side of a scan (scan.c, scan_chunks.c): the
 *	  DestReceiver that adds rows to the series set, the ExecutorStart hook
 *	  that tells the set how many rows a plan expects, running a plan (twice
 *	  for promread.report_phases), skipping a metric the caller may not
 *	  read, and letting go of a metric's locks once it is read.
 *
 * scan.c's essay, steps 4 and 5, says how rows become samples.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "engine/engine.h"
#include "executor/executor.h"
#include "executor/spi.h"
#include "histogram/histogram.h"
#include "phases.h"
#include "promread.h"
#include "scan_internal.h"
#include "utils/guc.h"

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
								 * (PromScanReadOnly) */
} ScanReceiver;

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
PromScanRun(SPIPlanPtr plan, ScanPlanning planning, SPIExecuteOptions *options,
			ReceiveSlotFn read_only)
{
	DestReceiver *dest = options->dest;
	ReceiveSlotFn receive = dest->receiveSlot;
	uint64		begin = PromPhaseBegin();
	uint64		with_grouping;
	int			nest = PromScanUsePlans(planning);
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
 * Run a step in a subtransaction: committed when the step returns, or
 * rolled back (roll_back) to let go of the locks the step took.  Returns
 * the step's error, its subtransaction rolled back, or NULL.
 */
static ErrorData *
run_in_subtransaction(void (*step) (void *arg), void *arg, bool roll_back)
{
	MemoryContext oldcxt = CurrentMemoryContext;
	ResourceOwner oldowner = CurrentResourceOwner;
	ErrorData  *volatile error = NULL;

	BeginInternalSubTransaction(NULL);
	MemoryContextSwitchTo(oldcxt);
	PG_TRY();
	{
		step(arg);
	}
	PG_CATCH();
	{
		MemoryContextSwitchTo(oldcxt);
		error = CopyErrorData();
		FlushErrorState();
	}
	PG_END_TRY();
	if (error == NULL && !roll_back)
		ReleaseCurrentSubTransaction();
	else
		RollbackAndReleaseCurrentSubTransaction();
	MemoryContextSwitchTo(oldcxt);
	CurrentResourceOwner = oldowner;
	return error;
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
	int64		samples_before = set != NULL ? PromSeriesSetSampleCount(set) : 0;
	ErrorData  *error = run_in_subtransaction(step, arg, false);

	if (error == NULL)
		return true;
	if (error->sqlerrcode != ERRCODE_INSUFFICIENT_PRIVILEGE ||
		(set != NULL && PromSeriesSetSampleCount(set) != samples_before))
		ReThrowError(error);
	FreeErrorData(error);
	return false;
}

/*
 * Run a step that only reads (a metric's statements) in a subtransaction
 * that is rolled back when it is done, so that the locks it took, on the
 * metric's relations, their partitions and indexes, are let go then rather
 * than held to the end of the transaction, in the lock table every session
 * shares: a query that selects thousands of metrics would otherwise fill
 * it, failing itself and any session that needs a lock meanwhile.  What the
 * step read is in the series set, whose memory is the caller's; nothing it
 * did needs keeping, and an error is thrown again.
 */
void
PromScanLettingGoOfLocks(void (*step) (void *arg), void *arg)
{
	ErrorData  *error = run_in_subtransaction(step, arg, true);

	if (error != NULL)
		ReThrowError(error);
}

/*
 * Add a layout for the scan's rows to the set: the label columns, then
 * __name__, a constant label; and the matchers the engine decides per
 * value.
 */
PromLayout *
PromScanAddLayout(PromSeriesSet *set, const MetricScan *scan)
{
	int			nlabels = scan->nlabels;
	const char **names = palloc(sizeof(char *) * (nlabels + 1));
	PromLabelKind *kinds = palloc(sizeof(PromLabelKind) * (nlabels + 1));
	Oid		   *types = palloc(sizeof(Oid) * (nlabels + 1));
	const char **const_values = palloc0(sizeof(char *) * (nlabels + 1));
	PromLayout *layout;
	ListCell   *lc;
	int			i;

	for (i = 0; i < nlabels; i++)
	{
		names[i] = scan->labels[i].label;
		kinds[i] = scan->labels[i].kind;
		types[i] = scan->labels[i].basetype;
	}
	names[nlabels] = "__name__";
	kinds[nlabels] = PROM_LABEL_CONST;
	types[nlabels] = TEXTOID;
	const_values[nlabels] = scan->entry->metric;
	layout = PromSeriesSetAddLayout(set, nlabels + 1, names, kinds, types,
									const_values);
	if (scan->overflow >= 0)
		PromLayoutSetOverflow(set, layout, scan->overflow);
	if (PromIsHistogramType(scan->value_column.basetype))
		PromLayoutSetHistograms(set, layout);
	foreach(lc, scan->filters)
	{
		const ScanFilter *filter = lfirst(lc);

		PromLayoutAddFilter(set, layout, filter->column, filter->matcher);
	}
	return layout;
}

/*
 * A receiver of the scan's rows (label columns, time, value) into a layout
 * of their own (PromScanAddLayout), which it sets *layout to.
 */
DestReceiver *
PromScanReceiverCreate(PromSeriesSet *set, const MetricScan *scan,
					   PromLayout **layout)
{
	ScanReceiver *receiver = palloc0(sizeof(ScanReceiver));
	int			nlabels = scan->nlabels;
	Oid		   *result_types = palloc(sizeof(Oid) * (nlabels + 2));
	int			i;

	for (i = 0; i < nlabels; i++)
		result_types[i] = scan->labels[i].type;
	result_types[nlabels] = scan->time_column.type;
	result_types[nlabels + 1] = PromIsHistogramType(scan->value_column.basetype) ?
		scan->value_column.basetype : FLOAT8OID;

	receiver->pub.receiveSlot = scan_receive;
	receiver->pub.rStartup = scan_startup;
	receiver->pub.rShutdown = scan_shutdown;
	receiver->pub.rDestroy = scan_destroy;
	receiver->pub.mydest = DestNone;
	receiver->set = set;
	receiver->layout = PromScanAddLayout(set, scan);
	receiver->histograms = result_types[nlabels + 1] != FLOAT8OID;
	receiver->nlabels = nlabels;
	receiver->ncolumns = nlabels + 2;
	receiver->result_types = result_types;
	receiver->metric = scan->entry->metric;
	receiver->time_kind = scan->time_column.basetype == INT8OID ?
		TIME_EPOCH_MS : TIME_TIMESTAMP;
	*layout = receiver->layout;
	return &receiver->pub;
}

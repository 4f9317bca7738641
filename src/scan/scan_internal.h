/*-------------------------------------------------------------------------
 *
 * scan_internal.h
 *	  The read of one metric relation, shared by scan.c (its statement),
 *	  scan_columns.c (locking, columns), scan_exec.c (the executor and the
 *	  receiver), scan_predicates.c (the statement's predicates),
 *	  scan_plans.c (cached plans), shards.c (partitions that group their
 *	  own rows) and scan_chunks.c (metrics in chunk storage).  scan.h is
 *	  what other folders call.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PROMREAD_SCAN_INTERNAL_H
#define PROMREAD_SCAN_INTERNAL_H

#include "executor/spi.h"
#include "lib/stringinfo.h"
#include "tcop/dest.h"
#include "scan.h"
#include "storage/storage.h"

/* How the time column is stored. */
typedef enum TimeKind
{
	TIME_TIMESTAMP,				/* timestamptz or timestamp (read as UTC) */
	TIME_EPOCH_MS				/* bigint, ms since the Unix epoch */
} TimeKind;

/* A registered column of the relation being scanned, read under its lock. */
typedef struct MetricColumn
{
	const char *name;
	const char *label;			/* of a label column: the label it holds */
	Oid			type;			/* declared type: the scan's result type */
	Oid			basetype;		/* with domains looked through */
	Oid			collation;
	PromLabelKind kind;			/* of a label column */
} MetricColumn;

/* How a scan's statement is planned (scan_plans.c). */
typedef enum ScanPlanning
{
	SCAN_PLAN_PER_CALL,			/* a custom plan for each call's values */
	SCAN_PLAN_ONCE,				/* a generic plan, made from the statistics */
	SCAN_PLAN_ONCE_BY_INDEX		/* a generic plan that searches indexes */
} ScanPlanning;

/* The statement being built for one scan. */
typedef struct ScanStatement
{
	StringInfoData sql;
	int			nparams;
	Oid			param_types[FUNC_MAX_ARGS];
	Datum		param_values[FUNC_MAX_ARGS];
	ScanPlanning planning;
} ScanStatement;

/* A matcher the engine decides per distinct value of a label column. */
typedef struct ScanFilter
{
	int			column;			/* its place among the label columns */
	const PromMatcher *matcher;
} ScanFilter;

/* A matcher decided over the distinct values read through an index. */
typedef struct ValueDecision
{
	const PromMatcher *matcher;
	int			nvalues;		/* values read */
	int			naccepted;		/* of them, those that match */
} ValueDecision;

/* The read of one metric relation for one query, before it runs. */
typedef struct MetricScan
{
	const PromMetricEntry *entry;
	ScanStatement stmt;
	int			predicates;		/* where stmt's predicates start */
	const char *value_expression;	/* the value column as float8 */
	MetricColumn time_column;
	MetricColumn value_column;
	MetricColumn *labels;		/* the label columns, then the column of
								 * overflow labels if any */
	int			nlabels;
	int			overflow;		/* its place among them; -1: none */
	List	   *filters;		/* of ScanFilter */
	List	   *decisions;		/* of ValueDecision */
	bool		has_foreign;	/* the relation is or has foreign tables */
	const char *regex_function; /* prom_regex_match, qualified, when the
								 * foreign servers list promread */
	bool		local_predicates;	/* some predicate is one a foreign
									 * server is not sent */
	bool		pattern_predicates; /* some predicate is a regex, LIKE or
									 * prefix range, whose plan depends on
									 * its value */
} MetricScan;

/* A DestReceiver's function that takes a row. */
typedef bool (*ReceiveSlotFn) (TupleTableSlot *slot, DestReceiver *self);

/* The series a read of a metric in chunk storage selected (series_map.c). */
typedef struct SeriesMap SeriesMap;

/* A series the series statement selected: its id and label values. */
typedef struct PromSelectedSeries
{
	int64		id;
	Datum	   *values;			/* of the label columns, copied; a slot
								 * more, NULL */
	bool	   *isnull;
} PromSelectedSeries;

/* The read of a metric in chunk storage for one query, before it runs. */
typedef struct ChunkScan
{
	MetricScan	scan;			/* its stmt: the series the matchers select */
	PromStorageEntry storage;	/* its tables */
	int64		start_ms;		/* the query's range */
	int64		end_ms;
	SeriesMap  *series;			/* the series selected, once read */
	ScanStatement chunks;		/* their chunks in the range, once built */
	ScanStatement head;			/* their head rows in the range, once built */
	bool		histograms;		/* the metric's values are histograms */
} ChunkScan;

/* in scan_columns.c */
extern bool PromScanLockRelation(const PromMetricEntry *entry, bool named);
extern bool PromScanReadColumn(const PromMetricEntry *entry, Oid relid,
							   const char *name, bool named,
							   MetricColumn *column);
extern bool PromScanReadLabelColumns(const PromMetricEntry *entry, Oid relid,
									 bool named, MetricColumn *labels);
extern bool PromScanCheckColumnType(const PromMetricEntry *entry, bool named,
									const MetricColumn *column,
									const char *role, bool ok);

/* in scan_exec.c */
extern PromLayout *PromScanAddLayout(PromSeriesSet *set, const MetricScan *scan);
extern DestReceiver *PromScanReceiverCreate(PromSeriesSet *set,
											const MetricScan *scan,
											PromLayout **layout);
extern bool PromScanReadOnly(TupleTableSlot *slot, DestReceiver *self);
extern void PromScanRun(SPIPlanPtr plan, ScanPlanning planning,
						SPIExecuteOptions *options, ReceiveSlotFn read_only);
extern bool PromScanRunSkippingUnreadable(void (*step) (void *arg), void *arg,
										  PromSeriesSet *set);
extern void PromScanLettingGoOfLocks(void (*step) (void *arg), void *arg);

/* in series_map.c */
extern SeriesMap *PromSeriesMapCreate(const MetricScan *scan);
extern void PromSeriesMapAdd(SeriesMap *map, int64 id, const Datum *values,
							 const bool *isnull);
extern void PromSeriesMapIndex(SeriesMap *map);
extern const PromSelectedSeries *PromSeriesMapFind(SeriesMap *map, int64 id);
extern int64 PromSeriesMapCount(const SeriesMap *map);
extern Datum PromSeriesMapIds(const SeriesMap *map);
extern void PromSeriesMapFree(SeriesMap *map);

/* in scan_chunks.c */
extern bool PromChunkScanPrepare(const PromMetricEntry *entry,
								 const PromStorageEntry *storage,
								 const PromQuery *query, bool named,
								 ChunkScan *cs);
extern int64 PromChunkScanSelectSeries(ChunkScan *cs, bool explaining);
extern void PromChunkScanFree(ChunkScan *cs);
extern void PromScanChunkMetric(PromSeriesSet *set,
								const PromMetricEntry *entry,
								const PromStorageEntry *storage,
								const PromQuery *query, bool named);

/*
 * Keep, in place, the samples of an array that lie in [start_ms, end_ms];
 * returns how many: a chunk's samples outside a query's range are dropped.
 */
static inline int
PromKeepSamplesInRange(PromSample *samples, int nsamples, int64 start_ms,
					   int64 end_ms)
{
	int			kept = 0;
	int			i;

	for (i = 0; i < nsamples; i++)
		if (samples[i].t >= start_ms && samples[i].t <= end_ms)
			samples[kept++] = samples[i];
	return kept;
}

/* in scan_plans.c */
extern SPIPlanPtr PromScanCachedPlan(const ScanStatement *stmt);
extern ParamListInfo PromScanStatementParams(const ScanStatement *stmt);
extern int	PromScanUsePlans(ScanPlanning planning);

/* in scan_predicates.c */
extern void PromScanAddTimeRange(ScanStatement *stmt, const PromQuery *query,
								 const MetricColumn *time_column);
extern bool PromScanAddMatchers(MetricScan *scan, const PromQuery *query, bool stored);

/* shards.c */
extern const char *PromShardRegexFunction(Oid relid);
extern bool PromShardScanPrepare(const MetricScan *scan, ScanStatement *stmt,
								 List **partitions);
extern DestReceiver *PromShardReceiverCreate(PromSeriesSet *set,
											 const MetricScan *scan,
											 const PromQuery *query,
											 List *partitions);

#endif							/* PROMREAD_SCAN_INTERNAL_H */

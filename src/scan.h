/*-------------------------------------------------------------------------
 *
 * scan.h
 *	  The read of one metric relation, shared by scan.c (locking, columns,
 *	  the executor and the receiver) and scan_predicates.c (the statement's
 *	  predicates).
 *
 *-------------------------------------------------------------------------
 */
#ifndef PROMREAD_SCAN_H
#define PROMREAD_SCAN_H

#include "lib/stringinfo.h"
#include "promread.h"

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
	Oid			type;			/* declared type: the scan's result type */
	Oid			basetype;		/* with domains looked through */
	Oid			collation;
	PromLabelKind kind;			/* of a label column */
} MetricColumn;

/* The statement being built for one scan. */
typedef struct ScanStatement
{
	StringInfoData sql;
	int			nparams;
	Oid			param_types[FUNC_MAX_ARGS];
	Datum		param_values[FUNC_MAX_ARGS];
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
	MetricColumn time_column;
	MetricColumn value_column;
	MetricColumn *labels;
	int			nlabels;
	List	   *filters;		/* of ScanFilter */
	List	   *decisions;		/* of ValueDecision */
} MetricScan;

extern void ScanAddTimeRange(ScanStatement *stmt, const PromQuery *query,
							 const MetricColumn *time_column);
extern bool ScanAddMatchers(MetricScan *scan, const PromQuery *query, bool stored);

#endif							/* PROMREAD_SCAN_H */

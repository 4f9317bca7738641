/*-------------------------------------------------------------------------
 *
 * write_tables.h
 *	  The relations of a new metric (write_tables.c): their names, the DDL
 *	  that makes them, their label columns; a metric stored as rows made,
 *	  and label columns added to the table remote write made for one.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PROMREAD_WRITE_TABLES_H
#define PROMREAD_WRITE_TABLES_H

#include "promread.h"
#include "lib/stringinfo.h"

/* The label columns of a new metric's relations. */
typedef struct PromLabelColumns
{
	const char **columns;		/* their names */
	const char **labels;		/* the label each holds */
	int			ncolumns;
	const char *overflow;		/* the jsonb column of other labels, or NULL */
} PromLabelColumns;

extern char *PromCreatedRelationName(const char *metric, const char *suffix);
extern void PromRunDDL(const char *sql);
extern void PromAppendLabelColumns(StringInfo sql, const PromLabelColumns *chosen);
extern void PromCreateLabelIndexes(const char *qualified,
								   const PromLabelColumns *chosen,
								   const char *more_columns);
extern void PromCheckNewRelation(const char *metric, Oid nspid,
								 const char *name, bool for_write);
extern PromMetricEntry *PromCreateMetricStart(const char *metric, Oid nspid,
											  const char *const *labels,
											  int nlabels, bool for_write,
											  PromLabelColumns *chosen);
extern PromMetricEntry *PromCreateRowMetric(const char *metric, Oid nspid,
											const char *const *labels,
											int nlabels, bool histograms,
											bool for_write);
extern PromMetricEntry *PromWriteCreateMetric(const char *metric,
											  const char *const *labels,
											  int nlabels, bool histograms);
/* Told the columns just added to a metric's table (PromAddLabelColumns). */
typedef void (*PromNewColumnsFn) (void *arg, const char *const *columns,
								  int ncolumns);
extern PromMetricEntry *PromAddLabelColumns(const PromMetricEntry *entry,
											Oid table,
											const char *const *labels,
											int nlabels, PromNewColumnsFn added,
											void *arg);
extern PromMetricEntry *PromWriteAddLabelColumns(const PromMetricEntry *entry,
												 const char *const *labels,
												 int nlabels);

#endif							/* PROMREAD_WRITE_TABLES_H */

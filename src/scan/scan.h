/*-------------------------------------------------------------------------
 *
 * scan.h
 *	  Reading metric relations into series sets: scan's public interface.
 *
 * scan_internal.h holds what scan's own files share.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PROMREAD_SCAN_H
#define PROMREAD_SCAN_H

#include "promread.h"

#include "engine/engine.h"

/* in scan_exec.c */
extern void PromScanInit(void);

/* in scan_columns.c */
extern void PromScanBeginCall(void);

/* in scan.c; storage: of a metric in chunk storage (PromMetricStorage), or NULL */
struct PromStorageEntry;
extern void PromScanMetric(PromSeriesSet *set, const PromMetricEntry *entry,
						   const struct PromStorageEntry *storage,
						   const PromQuery *query, bool named);
extern List *PromExplainMetric(const PromMetricEntry *entry,
							   const struct PromStorageEntry *storage,
							   const PromQuery *query, bool named,
							   bool analyze);

/* in label_values.c */
extern Datum *PromReadLabelValues(Oid relid, const char *column,
								  const PromRegex *narrowing, int *nvalues);
extern bool PromLabelValuesWorthReading(Oid relid, AttrNumber attnum);

#endif							/* PROMREAD_SCAN_H */

/*-------------------------------------------------------------------------
 *
 * query.c
 *	  Answering one query: the metrics it selects, each scanned into one
 *	  series set (a metric in chunk storage from its tables), finished into
 *	  sorted series.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "engine/engine.h"
#include "executor/spi.h"
#include "phases.h"
#include "promread.h"
#include "scan/scan.h"
#include "storage/storage.h"
#include "utils/builtins.h"

/*
 * The storage catalog's entry of a metric in chunk storage, or NULL: the
 * metric is in row storage, or its entry does not count (its relation is
 * not the one registered).  Reads (PromRunQuery, prom_explain) give it to
 * the scan, which reads a chunk metric's tables rather than its view.
 */
const PromStorageEntry *
PromMetricStorage(const PromMetricEntry *entry)
{
	const PromStorageEntry *storage = PromStorageLookup(entry->metric);

	return storage != NULL && storage->relation == entry->relid ? storage : NULL;
}

/*
 * The query of a PromQL selector and a time range, as prom_series and
 * prom_explain take them; an end before the start is an error.
 */
void
PromQueryFromSelector(text *selector, TimestampTz start_time, TimestampTz end_time,
					  PromQuery *query)
{
	PromParseSelector(text_to_cstring(selector), query);
	query->start_ms = PromTimestamptzArgToMs(start_time);
	query->end_ms = PromTimestamptzArgToMs(end_time);
	if (query->start_ms > query->end_ms)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("end_time must not be before start_time")));
}

/*
 * Run a query and return its finished series set, allocated in a child of
 * the given context.  A query without matchers, with an empty time range or
 * selecting no registered metric has no series.  keep_chunks: the set is
 * for a STREAMED_XOR_CHUNKS answer, and keeps the stored chunks of chunk
 * metrics as they are (PromSeriesSetKeepChunks).
 */
PromSeriesSet *
PromRunQuery(const PromQuery *query, MemoryContext context, bool keep_chunks)
{
	PromSeriesSet *set = PromSeriesSetCreate(context);
	uint64		begin;

	if (keep_chunks)
		PromSeriesSetKeepChunks(set);

	if (query->nmatchers > 0 && query->start_ms <= query->end_ms)
	{
		List	   *entries;
		ListCell   *lc;
		bool		named;

		begin = PromPhaseBegin();
		entries = PromCatalogLookup(query, &named);
		PromPhaseEnd(PROM_PHASE_PLAN, begin);
		if (entries != NIL)
		{
			SPI_connect();
			foreach(lc, entries)
				PromScanMetric(set, lfirst(lc), PromMetricStorage(lfirst(lc)),
							   query, named);
			SPI_finish();
		}
	}
	begin = PromPhaseBegin();
	PromSeriesSetFinish(set);
	PromPhaseEnd(PROM_PHASE_SORT, begin);
	if (unlikely(PromPhases.active))
	{
		int			nseries;
		PromSeries *const *series = PromSeriesSetSeries(set, &nseries);
		int			i;

		PromPhases.rows += PromSeriesSetSampleCount(set);
		PromPhases.series += nseries;
		for (i = 0; i < nseries; i++)
			PromPhases.samples += PromSeriesSampleCount(series[i]);
	}
	return set;
}

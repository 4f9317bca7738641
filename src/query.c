/*-------------------------------------------------------------------------
 *
 * query.c
 *	  Answering one query: the metrics it selects, each scanned into one
 *	  series set, finished into sorted series.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "executor/spi.h"
#include "promread.h"

/*
 * Run a query and return its finished series set, allocated in a child of
 * the given context.  A query without matchers, with an empty time range or
 * selecting no registered metric has no series.
 */
PromSeriesSet *
PromRunQuery(const PromQuery *query, MemoryContext context)
{
	PromSeriesSet *set = PromSeriesSetCreate(context);

	if (query->nmatchers > 0 && query->start_ms <= query->end_ms)
	{
		List	   *entries = PromCatalogLookup(query);
		ListCell   *lc;

		if (entries != NIL)
		{
			SPI_connect();
			foreach(lc, entries)
				PromScanMetric(set, lfirst(lc), query);
			SPI_finish();
		}
	}
	PromSeriesSetFinish(set);
	return set;
}

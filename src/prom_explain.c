/*-------------------------------------------------------------------------
 *
 * prom_explain.c
 *	  prom_explain(selector, start_time, end_time, analyze): how promread
 *	  would read a selector, relation by relation.
 *
 * For each metric the selector selects, the lines say which relation is
 * read, which matchers the engine decides per distinct label value, and
 * the plan of the statement promread runs, planned for the selector's
 * values as a read plans it (EXPLAIN; with analyze, EXPLAIN ANALYZE, which
 * runs it).  Privileges are those of a read: a relation the caller may not
 * read is an error when the selector names its metric, and is skipped
 * otherwise.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "executor/spi.h"
#include "funcapi.h"
#include "promread.h"
#include "scan/scan.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"
#include "utils/tuplestore.h"

PG_FUNCTION_INFO_V1(prom_explain);

/*
 * prom_explain(selector text, start_time timestamptz, end_time timestamptz,
 * analyze boolean) returns setof text.
 */
Datum
prom_explain(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	PromQuery	query;
	List	   *entries;
	ListCell   *lc;
	bool		analyze = PG_GETARG_BOOL(3);
	bool		named;

#if PG_VERSION_NUM >= 160000
	InitMaterializedSRF(fcinfo, MAT_SRF_USE_EXPECTED_DESC);
#else
	InitMaterializedSRF(fcinfo, MAT_SRF_USE_EXPECTED_DESC);
#endif
	PromScanBeginCall();
	PromQueryFromSelector(PG_GETARG_TEXT_PP(0), PG_GETARG_TIMESTAMPTZ(1),
						  PG_GETARG_TIMESTAMPTZ(2), &query);

	entries = PromCatalogLookup(&query, &named);
	SPI_connect();
	foreach(lc, entries)
	{
		List	   *lines = PromExplainMetric(lfirst(lc), PromMetricStorage(lfirst(lc)),
											  &query, named, analyze);
		ListCell   *line;

		foreach(line, lines)
		{
			Datum		value = CStringGetTextDatum((char *) lfirst(line));
			bool		isnull = false;

			tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc,
								 &value, &isnull);
		}
	}
	SPI_finish();
	return (Datum) 0;
}

/*-------------------------------------------------------------------------
 *
 * convert_metric.c
 *	  prom_convert_metric: moving a metric in row storage to chunk storage.
 *
 * The metric's rows are moved, in one transaction, into a chunk metric of
 * the same name made in the table's schema (docs/chunk-storage.md):
 *
 * 1. The caller must own the table (42501); only a table or a partitioned
 *    table, whose rows are promread's to move, is converted (a view or a
 *    foreign table is not: 0A000), nor one whose owner is subject to
 *    row-level security (FORCE ROW LEVEL SECURITY), which would hide rows
 *    from the move, nor one that views depend on (2BP01).  The table is locked against writers (EXCLUSIVE:
 *    reads go on) before its registration is read again.
 * 2. The table is renamed out of the way, the metric unregistered and made
 *    again in chunk storage with the table's labels (an exemplar table
 *    stays the metric's).
 * 3. The rows are read as remote read reads them (scan/), so that every
 *    kind of label column, overflow labels, domains and duplicate times
 *    are what a reader saw, in time windows that hold about
 *    CONVERT_WINDOW_SAMPLES rows each, and written as remote write writes
 *    them (write_chunks.c: series rows, then head rows).
 * 4. The privileges granted on the table are granted on the view and the
 *    three tables; the table is dropped (RESTRICT: a view over it refuses
 *    the move); prom_compact then turns the head into chunks, as far as
 *    promread.compact_after allows.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/relation.h"
#include "catalog/pg_class.h"
#include "compat.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "protocol/protocol.h"
#include "write/write.h"
#include "scan/scan.h"
#include "storage/lmgr.h"
#include "storage/storage.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"

PG_FUNCTION_INFO_V1(prom_convert_metric);

/* About how many rows one window of the move reads. */
#define CONVERT_WINDOW_SAMPLES	1000000

/* Sort label names (const char **) bytewise. */
static int
label_name_cmp(const void *a, const void *b)
{
	return strcmp(*(const char *const *) a, *(const char *const *) b);
}

/* Sort a series' labels (PromWriteLabel) by name. */
static int
write_label_cmp(const void *a, const void *b)
{
	return strcmp(((const PromWriteLabel *) a)->name,
				  ((const PromWriteLabel *) b)->name);
}

/*
 * The table of a metric to convert, checked and locked against writers;
 * its registration as it stands under the lock.
 */
static PromMetricEntry *
lock_row_metric(const char *metric)
{
	PromMetricEntry *entry = PromCatalogFind(metric);
	PromMetricEntry *locked;
	Relation	rel;
	char		relkind;

	if (entry == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("metric \"%s\" is not registered", metric)));
	if (PromStorageLookup(metric) != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("metric \"%s\" is in chunk storage already", metric)));
	if (!pg_class_ownercheck(entry->relid, GetUserId()))
		aclcheck_error(ACLCHECK_NOT_OWNER, OBJECT_TABLE, get_rel_name(entry->relid));
	rel = relation_open(entry->relid, ExclusiveLock);
	relkind = rel->rd_rel->relkind;
	if (relkind != RELKIND_RELATION && relkind != RELKIND_PARTITIONED_TABLE)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("metric \"%s\" cannot be converted: \"%s\" is not a table",
						metric, RelationGetRelationName(rel)),
				 errdetail("Only the rows of a table or a partitioned table can be moved.")));
	if (rel->rd_rel->relforcerowsecurity)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("metric \"%s\" cannot be converted: its table forces row-level security",
						metric),
				 errdetail("Its owner would not see every row to move.")));
	relation_close(rel, NoLock);

	locked = PromCatalogFind(metric);
	if (locked == NULL || locked->relid != entry->relid)
		ereport(ERROR,
				(errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
				 errmsg("metric \"%s\" was registered again while it was being converted",
						metric)));
	return locked;
}

/*
 * Refuse a table that views depend on (2BP01), before anything is moved:
 * the move would fail when it drops the table.  SPI is connected.
 */
static void
check_no_views(const PromMetricEntry *entry)
{
	if (SPI_execute_with_args("SELECT r.ev_class::pg_catalog.regclass::pg_catalog.text "
							  "FROM pg_catalog.pg_depend d "
							  "JOIN pg_catalog.pg_rewrite r ON r.oid = d.objid "
							  "WHERE d.classid = 'pg_catalog.pg_rewrite'::pg_catalog.regclass "
							  "AND d.refclassid = 'pg_catalog.pg_class'::pg_catalog.regclass "
							  "AND d.refobjid = $1 AND r.ev_class <> $1 LIMIT 1",
							  1, (Oid[]) {OIDOID}, (Datum[]) {ObjectIdGetDatum(entry->relid)},
							  NULL, true, 1) != SPI_OK_SELECT)
		elog(ERROR, "could not read what depends on metric \"%s\"", entry->metric);
	if (SPI_processed > 0)
		ereport(ERROR,
				(errcode(ERRCODE_DEPENDENT_OBJECTS_STILL_EXIST),
				 errmsg("metric \"%s\" cannot be converted: view %s depends on its table",
						entry->metric,
						SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1)),
				 errhint("Drop the view, convert the metric, and create the view again over the metric's view.")));
}

/*
 * SQL for pg_catalog.aggregate(column) in milliseconds since the epoch, of
 * a time column of type int8 (milliseconds already) or timestamptz.
 */
static char *
aggregate_ms(const char *aggregate, const char *column, bool int8_time)
{
	if (int8_time)
		return psprintf("pg_catalog.%s(%s)", aggregate, column);
	return psprintf("pg_catalog.floor(pg_catalog.date_part('epoch', pg_catalog.%s(%s)) * 1000)::pg_catalog.int8",
					aggregate, column);
}

/*
 * The time range of the table's rows in ms, and how many rows it holds;
 * false when it holds none.  SPI is connected.
 */
static bool
row_time_range(const PromMetricEntry *entry, int64 *min_ms, int64 *max_ms,
			   double *rows)
{
	Oid			type = getBaseType(get_atttype(entry->relid,
											   get_attnum(entry->relid, entry->time_column)));
	const char *column = quote_identifier(entry->time_column);
	char	   *min_expr = aggregate_ms("min", column, type == INT8OID);
	char	   *max_expr = aggregate_ms("max", column, type == INT8OID);
	const char *where = type == INT8OID ? "true" :
		psprintf("pg_catalog.isfinite(%s)", column);
	bool		isnull;

	if (SPI_execute(psprintf("SELECT %s, %s, pg_catalog.count(*)::pg_catalog.float8 FROM %s WHERE %s",
							 min_expr, max_expr,
							 PromQuotedRelationName(entry->relid), where),
					true, 1) != SPI_OK_SELECT)
		elog(ERROR, "could not read the time range of metric \"%s\"", entry->metric);
	*min_ms = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc,
										  1, &isnull));
	if (isnull)
		return false;
	*max_ms = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc,
										  2, &isnull));
	*rows = DatumGetFloat8(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc,
										 3, &isnull));
	return true;
}

/*
 * The write group of a finished series set: each series' labels (without
 * __name__, sorted) and samples or histograms, borrowed from the set.
 */
static PromWriteGroup *
group_of_set(const char *metric, PromSeriesSet *set)
{
	PromWriteGroup *group = palloc0(sizeof(PromWriteGroup));
	PromSeries *const *series;
	int			nseries;
	const char **names = NULL;
	int			nnames = 0;
	int			i;

	series = PromSeriesSetSeries(set, &nseries);
	group->metric = metric;
	group->series = palloc(sizeof(PromWriteSeries *) * Max(nseries, 1));
	for (i = 0; i < nseries; i++)
	{
		PromWriteSeries *ws = palloc0(sizeof(PromWriteSeries));
		PromLabelRef *refs = palloc(sizeof(PromLabelRef) *
									PromSeriesLabelCount(set, series[i]));
		int			nrefs = PromSeriesLabels(set, series[i], refs);
		int64		nsamples = PromSeriesSampleCount(series[i]);
		PromSample *samples = palloc(sizeof(PromSample) * Max(nsamples, 1));
		int			j;

		ws->metric = metric;
		ws->labels = palloc(sizeof(PromWriteLabel) * Max(nrefs, 1));
		for (j = 0; j < nrefs; j++)
		{
			PromWriteLabel *label = &ws->labels[ws->nlabels];

			if (refs[j].value_len == 0 ||
				(refs[j].name_len == 8 && memcmp(refs[j].name, "__name__", 8) == 0))
				continue;
			label->name = pnstrdup(refs[j].name, refs[j].name_len);
			label->value = refs[j].value;
			label->value_len = refs[j].value_len;
			ws->nlabels++;
		}
		qsort(ws->labels, ws->nlabels, sizeof(PromWriteLabel), write_label_cmp);
		names = names == NULL ? palloc(sizeof(char *) * Max(ws->nlabels, 1)) :
			repalloc(names, sizeof(char *) * (nnames + ws->nlabels + 1));
		for (j = 0; j < ws->nlabels; j++)
			names[nnames++] = ws->labels[j].name;

		PromSeriesCopySamples(series[i], samples);
		if (PromSeriesHoldsHistograms(set, series[i]))
		{
			ws->histograms = palloc(sizeof(PromWriteHistogram) * Max(nsamples, 1));
			for (j = 0; j < nsamples; j++)
			{
				ws->histograms[j].timestamp = samples[j].t;
				ws->histograms[j].value = (PromHistogram *) PromSampleHistogram(&samples[j]);
			}
			ws->nhistograms = nsamples;
		}
		else
			PromWriteSeriesSetSamples(ws, samples, nsamples);
		group->series[group->nseries++] = ws;
	}

	/* the distinct label names, sorted */
	if (nnames > 0)
		qsort(names, nnames, sizeof(char *), label_name_cmp);
	group->labels = palloc(sizeof(char *) * Max(nnames, 1));
	for (i = 0; i < nnames; i++)
		if (group->nlabels == 0 || strcmp(group->labels[group->nlabels - 1], names[i]) != 0)
			group->labels[group->nlabels++] = names[i];
	return group;
}

/*
 * Move the rows of one time window [start_ms, end_ms] of the old table
 * (registered as old) into the chunk metric; returns the metric's
 * registration, which grows label columns as the window's series need.
 */
static PromMetricEntry *
move_window(const PromMetricEntry *old, PromMetricEntry *entry,
			const PromStorageEntry *storage, int64 start_ms, int64 end_ms,
			MemoryContext window_context)
{
	MemoryContext caller = MemoryContextSwitchTo(window_context);
	PromSeriesSet *set = PromSeriesSetCreate(window_context);
	PromQuery	query = {0};
	PromWriteGroup *group;

	query.start_ms = start_ms;
	query.end_ms = end_ms;
	PromScanMetric(set, old, NULL, &query, true);
	PromSeriesSetFinish(set);
	group = group_of_set(entry->metric, set);
	MemoryContextSwitchTo(caller);
	if (group->nseries > 0)
	{
		entry = PromWriteGroupEntry(group);
		if (entry == NULL || !PromWriteGroupChunks(group, entry, storage))
			ereport(ERROR,
					(errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
					 errmsg("metric \"%s\" was changed while it was being converted",
							old->metric)));
	}
	PromSeriesSetFree(set);
	MemoryContextReset(window_context);
	return entry;
}

/*
 * Call one of the extension's functions of a metric, by SQL (so that it
 * runs as any call does).  SPI is connected.
 */
static void
call_on_metric(const char *function, const char *metric)
{
	char	   *sql = psprintf("SELECT %s.%s($1)",
							   quote_identifier(get_namespace_name(PromExtensionNamespace())),
							   function);

	if (SPI_execute_with_args(sql, 1, (Oid[]) {TEXTOID},
							  (Datum[]) {CStringGetTextDatum(metric)},
							  NULL, false, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not run %s of metric \"%s\"", function, metric);
}

/* Grant on the metric's new relations what was granted on its table. */
static void
copy_grants(Oid table, const PromStorageEntry *storage)
{
	SPITupleTable *tuptable;
	uint64		ngrants;
	uint64		i;

	if (SPI_execute_with_args("SELECT CASE WHEN a.grantee = 0 THEN 'PUBLIC' "
							  "ELSE pg_catalog.quote_ident(r.rolname) END, a.privilege_type "
							  "FROM pg_catalog.pg_class c, "
							  "LATERAL pg_catalog.aclexplode(c.relacl) a "
							  "LEFT JOIN pg_catalog.pg_roles r ON r.oid = a.grantee "
							  "WHERE c.oid = $1 AND a.grantee <> c.relowner",
							  1, (Oid[]) {OIDOID}, (Datum[]) {ObjectIdGetDatum(table)},
							  NULL, true, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not read the privileges of relation %u", table);
	tuptable = SPI_tuptable;
	ngrants = SPI_processed;
	for (i = 0; i < ngrants; i++)
	{
		char	   *grantee = SPI_getvalue(tuptable->vals[i], tuptable->tupdesc, 1);
		char	   *privilege = SPI_getvalue(tuptable->vals[i], tuptable->tupdesc, 2);

		PromRunDDL(psprintf("GRANT %s ON %s, %s, %s, %s, %s TO %s", privilege,
							PromQuotedRelationName(storage->relation),
							PromQuotedRelationName(storage->series),
							PromQuotedRelationName(storage->chunks),
							PromQuotedRelationName(storage->head),
							PromQuotedRelationName(storage->late), grantee));
	}
}

/*
 * prom_convert_metric(metric) moves a metric in row storage to chunk
 * storage (see the header) and returns its new registered relation.
 */
Datum
prom_convert_metric(PG_FUNCTION_ARGS)
{
	char	   *metric = text_to_cstring(PG_GETARG_TEXT_PP(0));
	PromMetricEntry *old = lock_row_metric(metric);
	PromMetricEntry *entry;
	PromStorageEntry *storage;
	Oid			relid;
	Oid			nspid = get_rel_namespace(old->relid);
	Oid			exemplars = PromExemplarCatalogFind(metric);
	bool		histograms = PromIsHistogramType(getBaseType(
												 get_atttype(old->relid, get_attnum(old->relid, old->value_column))));
	MemoryContext window_context;
	int64		min_ms = 0;
	int64		max_ms = 0;
	double		rows = 0;

	SPI_connect();
	check_no_views(old);
	PromRunDDL(psprintf("ALTER TABLE %s RENAME TO %s",
						PromQuotedRelationName(old->relid),
						quote_identifier(PromCreatedRelationName(metric, "#converted"))));
	call_on_metric("prom_unregister", metric);
	entry = PromStorageCreateMetric(metric, nspid,
									(const char *const *) old->label_names,
									old->nlabels, histograms, false, PG_INT64_MAX);
	storage = PromStorageLookup(metric);
	if (OidIsValid(exemplars) && PromExemplarCatalogLock(metric))
		PromExemplarCatalogStore(metric, exemplars);

	window_context = AllocSetContextCreate(CurrentMemoryContext,
										   "promread convert window",
										   ALLOCSET_DEFAULT_SIZES);
	if (row_time_range(old, &min_ms, &max_ms, &rows))
	{
		/* windows of whole chunk windows, about CONVERT_WINDOW_SAMPLES rows each */
		double		windows = Max(rows / CONVERT_WINDOW_SAMPLES, 1);
		int64		span = ((double) max_ms - (double) min_ms) / windows;
		int64		step = Max(PromFloorDiv(span, PROM_CHUNK_WINDOW_MS), 1) *
			PROM_CHUNK_WINDOW_MS;
		int64		start = PromFloorDiv(min_ms, PROM_CHUNK_WINDOW_MS) * PROM_CHUNK_WINDOW_MS;

		for (;;)
		{
			int64		end = start > PG_INT64_MAX - step ? PG_INT64_MAX : start + step - 1;

			CHECK_FOR_INTERRUPTS();
			entry = move_window(old, entry, storage, start, Min(end, max_ms),
								window_context);
			if (end >= max_ms)
				break;
			start = end + 1;
		}
	}
	copy_grants(old->relid, storage);
	PromRunDDL(psprintf("DROP TABLE %s", PromQuotedRelationName(old->relid)));
	call_on_metric("prom_compact", metric);
	relid = storage->relation;	/* the entry goes with SPI's memory */
	SPI_finish();
	PG_RETURN_OID(relid);
}

/*-------------------------------------------------------------------------
 *
 * remote_write.c
 *	  prom_remote_write: the samples of a Prometheus remote-write request
 *	  stored as rows of the relations registered for their metrics.
 *
 * 1. The request is decoded and checked whole (write_request.c) before
 *    anything is written.  Exemplars and native histograms, which promread
 *    does not store, refuse it (0A000) unless promread.write_unsupported
 *    is "drop" (then a NOTICE counts what was dropped).
 * 2. Its series are grouped by metric.  A metric without a registration
 *    gets a table of its own when promread.write_create_metrics is on:
 *    (ts timestamptz, value float8, one text column per label), created in
 *    promread.write_schema, owned by the writing role and registered as
 *    made by remote write.  The catalog's write lock is taken first and the
 *    registration looked up again, so two writers create it once.
 * 3. A label the registration has no column for is added as a column to a
 *    table that remote write made (its exclusive lock is polled for, not
 *    queued for, so that reads are not held up behind it); on any other
 *    relation it refuses the request (42703) unless
 *    promread.write_unknown_labels is "drop".
 * 4. Each metric's samples are written by write_rows.c: through COPY FROM
 *    into tables, through INSERT into the rest.
 *
 * Everything happens in the caller's transaction, so a request that fails
 * writes nothing.  Prometheus retries a request that failed with a 5xx;
 * rows written twice read as once, because a read keeps the last sample of
 * equal times.  The metadata of metric families is kept in
 * prom_metric_metadata (catalog.c).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/namespace.h"
#include "common/hashfn.h"
#include "executor/spi.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "promread.h"
#include "protocol/protocol.h"
#include "remote_write.h"
#include "storage/lmgr.h"
#include "tcop/utility.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/syscache.h"

PG_FUNCTION_INFO_V1(prom_remote_write);

/* The columns of a table that remote write creates, besides its labels. */
#define CREATED_TIME_COLUMN		"ts"
#define CREATED_VALUE_COLUMN	"value"

/* How many times to try the lock that adding label columns needs, 10 ms apart. */
#define NEW_COLUMN_LOCK_ATTEMPTS	100

/* Labels that get an index (label, ts) in a table remote write creates. */
static const char *const indexed_labels[] = {"instance", "job"};

/* qsort comparator of series by metric name. */
static int
series_metric_cmp(const void *a, const void *b)
{
	return strcmp((*(PromWriteSeries *const *) a)->metric,
				  (*(PromWriteSeries *const *) b)->metric);
}

/* qsort comparator of C strings. */
static int
cstring_cmp(const void *a, const void *b)
{
	return strcmp(*(const char *const *) a, *(const char *const *) b);
}

/* Collect the distinct label names of a group's series, sorted. */
static void
collect_labels(PromWriteGroup *group)
{
	int			total = 0;
	int			i;
	int			j;

	for (i = 0; i < group->nseries; i++)
		total += group->series[i]->nlabels;
	group->labels = palloc(sizeof(char *) * Max(total, 1));
	group->nlabels = 0;
	for (i = 0; i < group->nseries; i++)
		for (j = 0; j < group->series[i]->nlabels; j++)
			group->labels[group->nlabels++] = group->series[i]->labels[j].name;
	qsort(group->labels, group->nlabels, sizeof(char *), cstring_cmp);
	for (i = 0, j = 0; i < group->nlabels; i++)
		if (j == 0 || strcmp(group->labels[j - 1], group->labels[i]) != 0)
			group->labels[j++] = group->labels[i];
	group->nlabels = j;
}

/*
 * Can a label become a column of a table remote write made?  Not when it
 * is named as the table's time or value column, nor when its name does not
 * fit an identifier (63 bytes).
 */
static bool
label_fits_created_table(const char *label)
{
	return strcmp(label, CREATED_TIME_COLUMN) != 0 &&
		strcmp(label, CREATED_VALUE_COLUMN) != 0 &&
		strlen(label) < NAMEDATALEN;
}

/*
 * The name of the table created for a metric: the metric's name, or, past
 * an identifier's 63 bytes, its first 54 bytes and a hash of the whole.
 */
static char *
created_table_name(const char *metric)
{
	size_t		len = strlen(metric);

	if (len < NAMEDATALEN)
		return pstrdup(metric);
	return psprintf("%.54s_%08x", metric,
					hash_bytes((const unsigned char *) metric, (int) len));
}

/* Run a utility statement of remote write through SPI. */
static void
run_ddl(const char *sql)
{
	if (SPI_execute(sql, false, 0) != SPI_OK_UTILITY)
		elog(ERROR, "promread could not run: %s", sql);
}

/*
 * Create, register and return the table of a metric that has no
 * registration, with a column for each of the labels; or return the
 * registration that another writer committed while this one waited for the
 * catalog's lock.
 */
static PromMetricEntry *
create_metric(const char *metric, const char *const *labels, int nlabels)
{
	PromMetricEntry *entry;
	Oid			nspid;
	char	   *table;
	char	   *qualified;
	StringInfoData sql;
	const char **columns;
	int			ncolumns = 0;
	int			i;

	PromCatalogLockForWrite();
	entry = PromCatalogFind(metric);
	if (entry != NULL)
		return entry;

	nspid = get_namespace_oid(promread_write_schema, false);
	table = created_table_name(metric);
	if (OidIsValid(get_relname_relid(table, nspid)))
		ereport(ERROR,
				(errcode(ERRCODE_DUPLICATE_TABLE),
				 errmsg("relation \"%s.%s\" already exists and metric \"%s\" is not registered",
						promread_write_schema, table, metric),
				 errhint("Register the relation with prom_register(), or set promread.write_schema to another schema.")));
	qualified = quote_qualified_identifier(promread_write_schema, table);

	initStringInfo(&sql);
	appendStringInfo(&sql, "CREATE TABLE %s (" CREATED_TIME_COLUMN
					 " pg_catalog.timestamptz NOT NULL, " CREATED_VALUE_COLUMN
					 " pg_catalog.float8 NOT NULL", qualified);
	columns = palloc(sizeof(char *) * Max(nlabels, 1));
	for (i = 0; i < nlabels; i++)
	{
		if (!label_fits_created_table(labels[i]))
			continue;
		columns[ncolumns++] = labels[i];
		appendStringInfo(&sql, ", %s pg_catalog.text COLLATE \"C\"",
						 quote_identifier(labels[i]));
	}
	appendStringInfoChar(&sql, ')');
	run_ddl(sql.data);

	resetStringInfo(&sql);
	appendStringInfo(&sql, "CREATE INDEX ON %s (" CREATED_TIME_COLUMN ")", qualified);
	run_ddl(sql.data);
	for (i = 0; i < (int) lengthof(indexed_labels); i++)
	{
		const char *label = indexed_labels[i];

		if (!bsearch(&label, columns, ncolumns, sizeof(char *), cstring_cmp))
			continue;
		resetStringInfo(&sql);
		appendStringInfo(&sql, "CREATE INDEX ON %s (%s, " CREATED_TIME_COLUMN ")",
						 qualified, quote_identifier(label));
		run_ddl(sql.data);
	}

	PromCatalogStoreCreated(metric, get_relname_relid(table, nspid),
							CREATED_TIME_COLUMN, CREATED_VALUE_COLUMN,
							columns, ncolumns);
	return PromCatalogFind(metric);
}

/*
 * Take the exclusive lock that adding a column needs, without waiting in
 * the lock's queue: a request waiting there would hold up every read that
 * comes after it.  The lock is tried again every 10 ms while reads in
 * progress end; after a second, the request fails with 55P03, which
 * Prometheus retries.
 */
static void
lock_for_new_columns(const PromMetricEntry *entry)
{
	int			attempt;

	for (attempt = 0; !ConditionalLockRelationOid(entry->relid, AccessExclusiveLock);
		 attempt++)
	{
		if (attempt >= NEW_COLUMN_LOCK_ATTEMPTS)
			ereport(ERROR,
					(errcode(ERRCODE_LOCK_NOT_AVAILABLE),
					 errmsg("could not lock the table of metric \"%s\" to add a label column",
							entry->metric),
					 errdetail("Other sessions kept it in use for a second."),
					 errhint("The request can be retried.")));
		CHECK_FOR_INTERRUPTS();
		pg_usleep(10 * 1000L);
	}
}

/*
 * Add a text column for each label that a table remote write made has no
 * column for, and register them; returns the new registration.  The
 * catalog's write lock serializes writers adding labels to one metric.
 */
static PromMetricEntry *
add_label_columns(const PromMetricEntry *entry, const char *const *labels,
				  int nlabels)
{
	PromMetricEntry *current;
	const char **columns;
	int			ncolumns;
	const char *relation;
	int			i;

	PromCatalogLockForWrite();
	current = PromCatalogFind(entry->metric);
	if (current == NULL || current->relid != entry->relid)
		ereport(ERROR,
				(errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
				 errmsg("metric \"%s\" was registered again while remote write was adding labels",
						entry->metric)));
	lock_for_new_columns(current);
	if (!SearchSysCacheExists1(RELOID, ObjectIdGetDatum(current->relid)))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("the relation of metric \"%s\" no longer exists",
						entry->metric)));
	relation = PromQuotedRelationName(current->relid);

	columns = palloc(sizeof(char *) * (current->nlabels + nlabels));
	ncolumns = current->nlabels;
	for (i = 0; i < current->nlabels; i++)
		columns[i] = current->label_columns[i];
	for (i = 0; i < nlabels; i++)
	{
		if (PromCatalogLabelIndex(current, labels[i]) >= 0)
			continue;
		run_ddl(psprintf("ALTER TABLE %s ADD COLUMN IF NOT EXISTS %s pg_catalog.text COLLATE \"C\"",
						 relation, quote_identifier(labels[i])));
		columns[ncolumns++] = labels[i];
	}
	PromCatalogStoreCreated(current->metric, current->relid,
							current->time_column, current->value_column,
							columns, ncolumns);
	return PromCatalogFind(entry->metric);
}

/*
 * The registration of a group's metric, with a column for every label its
 * series carry that can have one: created, extended, or as registered.
 * Labels without a column refuse the request unless they may be dropped.
 */
static PromMetricEntry *
metric_entry(const PromWriteGroup *group)
{
	PromMetricEntry *entry = PromCatalogFind(group->metric);
	const char **missing;
	int			nmissing = 0;
	int			i;

	if (entry == NULL)
	{
		if (!promread_write_create_metrics)
			ereport(ERROR,
					(errcode(ERRCODE_UNDEFINED_TABLE),
					 errmsg("metric \"%s\" is not registered", group->metric),
					 errhint("Register a relation for it with prom_register(), or set promread.write_create_metrics to on.")));
		entry = create_metric(group->metric, group->labels, group->nlabels);
	}

	missing = palloc(sizeof(char *) * Max(group->nlabels, 1));
	for (i = 0; i < group->nlabels; i++)
		if (PromCatalogLabelIndex(entry, group->labels[i]) < 0 &&
			(!entry->created_by_write || label_fits_created_table(group->labels[i])))
			missing[nmissing++] = group->labels[i];
	if (nmissing > 0 && entry->created_by_write)
		entry = add_label_columns(entry, missing, nmissing);

	for (i = 0; i < group->nlabels; i++)
		if (PromCatalogLabelIndex(entry, group->labels[i]) < 0 &&
			promread_write_unknown_labels == PROM_WRITE_ERROR)
			ereport(ERROR,
					(errcode(ERRCODE_UNDEFINED_COLUMN),
					 errmsg("metric \"%s\" has no column for label \"%s\"",
							group->metric, group->labels[i]),
					 errhint("Add the column and register the relation again, or set promread.write_unknown_labels to drop.")));
	return entry;
}

/*
 * prom_remote_write(request bytea) returns void: store the samples of a
 * snappy-compressed WriteRequest, as Prometheus sends it.
 */
Datum
prom_remote_write(PG_FUNCTION_ARGS)
{
	bytea	   *body = PG_GETARG_BYTEA_PP(0);
	MemoryContext context;
	MemoryContext old;
	PromWriteRequest *request;
	PromWriteSeries **sorted;
	int			i;

	PreventCommandIfReadOnly("prom_remote_write()");
	PreventCommandDuringRecovery("prom_remote_write()");

	context = AllocSetContextCreate(CurrentMemoryContext, "promread remote write",
									ALLOCSET_DEFAULT_SIZES);
	old = MemoryContextSwitchTo(context);
	request = PromDecodeWriteRequest(VARDATA_ANY(body), VARSIZE_ANY_EXHDR(body));
	if ((request->nexemplars > 0 || request->nhistograms > 0) &&
		promread_write_unsupported == PROM_WRITE_ERROR)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("remote write request carries %lld exemplars and %lld native histograms, which promread does not store",
						(long long) request->nexemplars,
						(long long) request->nhistograms),
				 errhint("Set promread.write_unsupported to drop to write the float samples without them.")));
	if (request->nexemplars > 0 || request->nhistograms > 0)
		ereport(NOTICE,
				(errmsg("dropped %lld exemplars and %lld native histograms of the remote write request",
						(long long) request->nexemplars,
						(long long) request->nhistograms)));

	sorted = palloc(sizeof(PromWriteSeries *) * Max(request->nseries, 1));
	for (i = 0; i < request->nseries; i++)
		sorted[i] = &request->series[i];
	qsort(sorted, request->nseries, sizeof(PromWriteSeries *), series_metric_cmp);

	SPI_connect();
	for (i = 0; i < request->nseries;)
	{
		PromWriteGroup group;

		group.metric = sorted[i]->metric;
		group.series = &sorted[i];
		group.nseries = 0;
		while (i < request->nseries && strcmp(sorted[i]->metric, group.metric) == 0)
		{
			group.nseries++;
			i++;
		}
		collect_labels(&group);
		PromWriteGroupRows(&group, metric_entry(&group));
	}
	for (i = 0; i < request->nmetadata; i++)
	{
		const PromWriteMetadata *m = &request->metadata[i];

		PromMetadataStore(m->family, m->type, m->help, m->unit);
	}
	SPI_finish();

	MemoryContextSwitchTo(old);
	MemoryContextDelete(context);
	PG_RETURN_VOID();
}

/*-------------------------------------------------------------------------
 *
 * create.c
 *	  Creating metrics: prom_create_metric, the relations of a metric in
 *	  chunk storage and its view, and the daily partitions of its chunks.
 *
 * A metric m in chunk storage, created in schema s, is the tables
 * s."m#series", s."m#chunks" (partitioned by range of min_time, without
 * partitions: PromStorageChunkPartition makes them) and s."m#head", and the
 * view s."m", registered as the metric (docs/chunk-storage.md gives their
 * columns and indexes).  All are owned by the creating role, named as
 * remote write names its tables (PromCreatedRelationName), and made
 * through SPI with quoted names.  The view reads the head's rows and the
 * chunks' samples (prom_chunk_samples, prom_chunk_histograms) joined to
 * the series; its columns are the label columns, ts and value, then the
 * label columns added later: CREATE OR REPLACE VIEW only appends.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/relation.h"
#include "catalog/namespace.h"
#include "catalog/partition.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "storage/lmgr.h"
#include "storage/storage.h"
#include "utils/acl.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/datetime.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/syscache.h"

/* The view's columns besides the labels (those of write_tables.c's tables). */
#define VIEW_TIME_COLUMN	"ts"
#define VIEW_VALUE_COLUMN	"value"

PG_FUNCTION_INFO_V1(prom_create_metric);
PG_FUNCTION_INFO_V1(prom_chunk_partition);

/* The quoted name of a relation in a schema, for SQL text. */
static char *
qualified_name(Oid nspid, const char *name)
{
	return quote_qualified_identifier(get_namespace_name(nspid), name);
}

/*
 * The SQL that creates (or replaces) a metric's view: columns names its
 * columns in order, the time and value columns among them; the view reads
 * the chunks' samples, then the head's rows.
 */
static char *
view_sql(const char *view, const char *series, const char *chunks,
		 const char *head, bool histograms, bool replace,
		 const char *const *columns, int ncolumns)
{
	const char *ext = quote_identifier(get_namespace_name(PromExtensionNamespace()));
	StringInfoData sql;
	int			branch;
	int			i;

	initStringInfo(&sql);
	appendStringInfo(&sql, "CREATE %sVIEW %s AS", replace ? "OR REPLACE " : "",
					 view);
	for (branch = 0; branch < 2; branch++)
	{
		appendStringInfoString(&sql, branch == 0 ? " SELECT " : " UNION ALL SELECT ");
		for (i = 0; i < ncolumns; i++)
		{
			const char *column = quote_identifier(columns[i]);

			if (i > 0)
				appendStringInfoString(&sql, ", ");
			if (strcmp(columns[i], VIEW_TIME_COLUMN) == 0)
				appendStringInfoString(&sql, branch == 0 ? "c.ts" :
									   "pg_catalog.timestamptz 'epoch' OPERATOR(pg_catalog.+) "
									   "(h.t OPERATOR(pg_catalog.*) pg_catalog.interval '1 ms')");
			else if (strcmp(columns[i], VIEW_VALUE_COLUMN) == 0)
				appendStringInfo(&sql, "%s.value", branch == 0 ? "c" : "h");
			else
				appendStringInfo(&sql, "s.%s", column);
			appendStringInfo(&sql, " AS %s", column);
		}
		if (branch == 0)
			appendStringInfo(&sql, " FROM %s AS s JOIN %s AS k"
							 " ON k.series_id OPERATOR(pg_catalog.=) s.series_id"
							 " CROSS JOIN LATERAL %s.%s AS c",
							 series, chunks, ext, histograms ?
							 "prom_chunk_histograms(k.encoding, k.chunk)" :
							 "prom_chunk_samples(k.chunk)");
		else
			appendStringInfo(&sql, " FROM %s AS s JOIN %s AS h"
							 " ON h.series_id OPERATOR(pg_catalog.=) s.series_id",
							 series, head);
	}
	return sql.data;
}

/*
 * Create, register and record the relations of a metric in chunk storage
 * in schema nspid, with the label columns chosen (see the file's header);
 * the caller holds the metric's lock and runs inside SPI.
 */
void
PromStorageCreateRelations(const char *metric, Oid nspid, bool histograms,
						   const PromLabelColumns *chosen, bool for_write)
{
	static const char *const suffixes[4] = {"", "#series", "#chunks", "#head"};
	char	   *names[4];
	char	   *quoted[4];
	const char **columns;
	int			ncolumns = 0;
	StringInfoData sql;
	PromStorageEntry entry;
	int			i;

	for (i = 0; i < 4; i++)
	{
		names[i] = PromCreatedRelationName(metric, suffixes[i]);
		PromCheckNewRelation(metric, nspid, names[i], for_write);
		quoted[i] = qualified_name(nspid, names[i]);
	}

	initStringInfo(&sql);
	appendStringInfo(&sql, "CREATE TABLE %s (series_id pg_catalog.int8"
					 " GENERATED ALWAYS AS IDENTITY PRIMARY KEY,"
					 " labels_hash pg_catalog.int8 NOT NULL", quoted[1]);
	PromAppendLabelColumns(&sql, chosen);
	appendStringInfoChar(&sql, ')');
	PromRunDDL(sql.data);
	resetStringInfo(&sql);
	appendStringInfo(&sql, "CREATE INDEX ON %s (labels_hash)", quoted[1]);
	PromRunDDL(sql.data);
	PromCreateLabelIndexes(quoted[1], chosen, "");

	/* a chunk stays within one of Prometheus's 2-hour windows */
	resetStringInfo(&sql);
	appendStringInfo(&sql, "CREATE TABLE %s (series_id pg_catalog.int8 NOT NULL,"
					 " min_time pg_catalog.int8 NOT NULL,"
					 " max_time pg_catalog.int8 NOT NULL,"
					 " encoding pg_catalog.int2 NOT NULL,"
					 " chunk pg_catalog.bytea NOT NULL,"
					 " CHECK (min_time OPERATOR(pg_catalog.<=) max_time),"
					 " CHECK (pg_catalog.floor(min_time OPERATOR(pg_catalog./) "
					 INT64_FORMAT ".0) OPERATOR(pg_catalog.=)"
					 " pg_catalog.floor(max_time OPERATOR(pg_catalog./) "
					 INT64_FORMAT ".0)))"
					 " PARTITION BY RANGE (min_time)", quoted[2],
					 PROM_CHUNK_WINDOW_MS, PROM_CHUNK_WINDOW_MS);
	PromRunDDL(sql.data);
	resetStringInfo(&sql);
	appendStringInfo(&sql, "CREATE INDEX ON %s (series_id, min_time)", quoted[2]);
	PromRunDDL(sql.data);

	resetStringInfo(&sql);
	appendStringInfo(&sql, "CREATE TABLE %s (series_id pg_catalog.int8 NOT NULL,"
					 " t pg_catalog.int8 NOT NULL, value %s NOT NULL)", quoted[3],
					 histograms ? format_type_be_qualified(PromHistogramTypeOid()) :
					 "pg_catalog.float8");
	PromRunDDL(sql.data);
	resetStringInfo(&sql);
	appendStringInfo(&sql, "CREATE INDEX ON %s (series_id, t)", quoted[3]);
	PromRunDDL(sql.data);

	columns = palloc(sizeof(char *) * (chosen->ncolumns + 3));
	for (i = 0; i < chosen->ncolumns; i++)
		columns[ncolumns++] = chosen->columns[i];
	if (chosen->overflow != NULL)
		columns[ncolumns++] = chosen->overflow;
	columns[ncolumns++] = VIEW_TIME_COLUMN;
	columns[ncolumns++] = VIEW_VALUE_COLUMN;
	PromRunDDL(view_sql(quoted[0], quoted[1], quoted[2], quoted[3], histograms,
						false, columns, ncolumns));

	entry.metric = unconstify(char *, metric);
	entry.relation = get_relname_relid(names[0], nspid);
	entry.series = get_relname_relid(names[1], nspid);
	entry.chunks = get_relname_relid(names[2], nspid);
	entry.head = get_relname_relid(names[3], nspid);
	entry.has_retention = false;
	PromCatalogStoreCreated(metric, entry.relation, VIEW_TIME_COLUMN,
							VIEW_VALUE_COLUMN, chosen->columns, chosen->labels,
							chosen->ncolumns, chosen->overflow);
	PromStorageCatalogStore(&entry);
}

/* Does a chunk metric hold histograms (its head's value a prom_histogram)? */
static bool
holds_histograms(const PromStorageEntry *entry)
{
	AttrNumber	attnum = get_attnum(entry->head, VIEW_VALUE_COLUMN);

	if (attnum == InvalidAttrNumber)
		elog(ERROR, "head table of metric \"%s\" has no value column", entry->metric);
	return get_atttype(entry->head, attnum) == PromHistogramTypeOid();
}

/*
 * Replace a chunk metric's view with one that appends columns of its
 * series table just added (new_columns), under the locks of
 * PromWriteAddLabelColumns; runs inside SPI.
 */
void
PromStorageReplaceView(const PromStorageEntry *entry,
					   const char *const *new_columns, int nnew)
{
	Relation	view = relation_open(entry->relation, AccessExclusiveLock);
	TupleDesc	desc = RelationGetDescr(view);
	const char **columns = palloc(sizeof(char *) * (desc->natts + nnew));
	int			ncolumns = 0;
	int			i;

	for (i = 0; i < desc->natts; i++)
		if (!TupleDescAttr(desc, i)->attisdropped)
			columns[ncolumns++] = pstrdup(NameStr(TupleDescAttr(desc, i)->attname));
	relation_close(view, NoLock);
	for (i = 0; i < nnew; i++)
		columns[ncolumns++] = new_columns[i];
	PromRunDDL(view_sql(PromQuotedRelationName(entry->relation),
						PromQuotedRelationName(entry->series),
						PromQuotedRelationName(entry->chunks),
						PromQuotedRelationName(entry->head),
						holds_histograms(entry), true, columns, ncolumns));
}

/*
 * The partition of a chunk metric's chunks of a name, or InvalidOid when
 * there is none; a relation of that name that is no such partition is
 * refused (42P07).
 */
static Oid
existing_partition(const PromStorageEntry *entry, Oid nspid, const char *name)
{
	Oid			relid = get_relname_relid(name, nspid);

	if (OidIsValid(relid) &&
		(!get_rel_relispartition(relid) ||
		 get_partition_parent(relid, true) != entry->chunks))
		ereport(ERROR,
				(errcode(ERRCODE_DUPLICATE_TABLE),
				 errmsg("relation %s already exists and is not a partition of %s",
						qualified_name(nspid, name),
						PromQuotedRelationName(entry->chunks))));
	return relid;
}

/*
 * The partition of a chunk metric's chunks for the UTC day of time t (ms),
 * "m#chunks_YYYYMMDD" in the schema of m#chunks, holding min_time from the
 * day's start to the next's; created, owned by the current user, when
 * there is none.  A new partition is made alone and then attached, which
 * takes SHARE UPDATE EXCLUSIVE on m#chunks: readers and writers of the
 * chunks go on, and two sessions making partitions of one metric take
 * turns.  Runs inside SPI.
 */
Oid
PromStorageChunkPartition(const PromStorageEntry *entry, int64 t)
{
	Oid			nspid = get_rel_namespace(entry->chunks);
	int64		day;
	int			year;
	int			month;
	int			mday;
	char	   *name;
	char	   *quoted;
	Oid			relid;
	StringInfoData sql;

	(void) PromStorageTimestamp(t);		/* refuses times out of range */
	day = PromFloorDiv(t, PROM_DAY_MS);
	j2date((int) (day + UNIX_EPOCH_JDATE), &year, &month, &mday);
	name = PromCreatedRelationName(entry->metric,
								   psprintf("#chunks_%04d%02d%02d", year, month, mday));
	quoted = qualified_name(nspid, name);
	relid = existing_partition(entry, nspid, name);
	if (OidIsValid(relid))
		return relid;
	if (!pg_class_ownercheck(entry->chunks, GetUserId()))
		aclcheck_error(ACLCHECK_NOT_OWNER, OBJECT_TABLE, get_rel_name(entry->chunks));
	/* look again once the partitions of the metric are ours to make */
	LockRelationOid(entry->chunks, ShareUpdateExclusiveLock);
	relid = existing_partition(entry, nspid, name);
	if (OidIsValid(relid))
		return relid;

	initStringInfo(&sql);
	appendStringInfo(&sql, "CREATE TABLE %s (LIKE %s INCLUDING DEFAULTS"
					 " INCLUDING CONSTRAINTS)", quoted,
					 PromQuotedRelationName(entry->chunks));
	PromRunDDL(sql.data);
	resetStringInfo(&sql);
	appendStringInfo(&sql, "ALTER TABLE %s ATTACH PARTITION %s"
					 " FOR VALUES FROM (" INT64_FORMAT ") TO (" INT64_FORMAT ")",
					 PromQuotedRelationName(entry->chunks), quoted,
					 day * PROM_DAY_MS, (day + 1) * PROM_DAY_MS);
	PromRunDDL(sql.data);
	return get_relname_relid(name, nspid);
}

/* The labels of prom_create_metric: valid label names, once each (22023). */
static const char **
create_labels(ArrayType *array, int *nlabels)
{
	Datum	   *values;
	bool	   *nulls;
	const char **labels;
	int			i;
	int			j;

	deconstruct_array(array, TEXTOID, -1, false, TYPALIGN_INT, &values, &nulls,
					  nlabels);
	labels = palloc(sizeof(char *) * Max(*nlabels, 1));
	for (i = 0; i < *nlabels; i++)
	{
		if (nulls[i])
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("labels must not contain NULL")));
		labels[i] = TextDatumGetCString(values[i]);
		if (!PromIsValidLabelName(labels[i], strlen(labels[i])) ||
			strcmp(labels[i], "__name__") == 0)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("\"%s\" is not a valid label name", labels[i]),
					 errdetail("Label names must match [a-zA-Z_][a-zA-Z0-9_]*, and __name__ is the metric's name.")));
		for (j = 0; j < i; j++)
			if (strcmp(labels[i], labels[j]) == 0)
				ereport(ERROR,
						(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						 errmsg("label \"%s\" is given more than once", labels[i])));
	}
	return labels;
}

/* Raise 22004 for a NULL argument of prom_create_metric. */
static void
check_not_null(FunctionCallInfo fcinfo, int arg, const char *name)
{
	if (PG_ARGISNULL(arg))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("%s must not be NULL", name)));
}

/*
 * prom_create_metric(metric text, labels text[], storage text, value_type
 * regtype) RETURNS regclass: create a metric in the first schema of
 * search_path, in chunk storage (its view is returned) or row storage (its
 * table), with a column for each label.
 */
Datum
prom_create_metric(PG_FUNCTION_ARGS)
{
	char	   *metric;
	const char **labels;
	int			nlabels;
	char	   *storage;
	Oid			value_type;
	bool		chunks;
	Oid			nspid;
	PromMetricEntry *entry;

	check_not_null(fcinfo, 0, "metric");
	check_not_null(fcinfo, 1, "labels");
	check_not_null(fcinfo, 2, "storage");
	check_not_null(fcinfo, 3, "value_type");
	PreventCommandIfReadOnly("prom_create_metric()");
	PreventCommandDuringRecovery("prom_create_metric()");
	metric = text_to_cstring(PG_GETARG_TEXT_PP(0));
	if (!PromIsValidMetricName(metric, strlen(metric)))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_NAME),
				 errmsg("\"%s\" is not a valid Prometheus metric name", metric),
				 errdetail("Metric names must match [a-zA-Z_:][a-zA-Z0-9_:]*.")));
	labels = create_labels(PG_GETARG_ARRAYTYPE_P(1), &nlabels);
	storage = text_to_cstring(PG_GETARG_TEXT_PP(2));
	if (strcmp(storage, "chunks") != 0 && strcmp(storage, "rows") != 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("unrecognized storage \"%s\"", storage),
				 errhint("Storage is \"chunks\" or \"rows\".")));
	chunks = strcmp(storage, "chunks") == 0;
	value_type = PG_GETARG_OID(3);
	if (value_type != FLOAT8OID && value_type != PromHistogramTypeOid())
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("metric values cannot be of type %s", format_type_be(value_type)),
				 errhint("A metric's values are double precision or prom_histogram.")));
	nspid = RangeVarGetCreationNamespace(makeRangeVar(NULL, metric, -1));
	if (isTempNamespace(nspid))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("a metric cannot be created in a temporary schema"),
				 errhint("Put a permanent schema first in search_path.")));

	SPI_connect();
	entry = PromCreateMetric(metric, nspid, labels, nlabels,
							 value_type != FLOAT8OID, chunks, false);
	SPI_finish();
	PG_RETURN_OID(entry->relid);
}

/*
 * prom_chunk_partition(metric text, t timestamptz) RETURNS regclass: the
 * partition of a chunk metric's chunks for the UTC day of t, created when
 * missing (see PromStorageChunkPartition), by the owner of its chunks.
 */
Datum
prom_chunk_partition(PG_FUNCTION_ARGS)
{
	char	   *metric = text_to_cstring(PG_GETARG_TEXT_PP(0));
	TimestampTz ts = PG_GETARG_TIMESTAMPTZ(1);
	PromStorageEntry *entry;
	Oid			relid;

	if (TIMESTAMP_NOT_FINITE(ts))
		ereport(ERROR,
				(errcode(ERRCODE_DATETIME_VALUE_OUT_OF_RANGE),
				 errmsg("timestamp out of range")));
	entry = PromStorageLookup(metric);
	if (entry == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("metric \"%s\" is not in chunk storage", metric),
				 errhint("Create it with prom_create_metric().")));
	SPI_connect();
	relid = PromStorageChunkPartition(entry, PromTimestampToMs(ts));
	SPI_finish();
	PG_RETURN_OID(relid);
}

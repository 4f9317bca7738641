/*-------------------------------------------------------------------------
 *
 * create.c
 *	  Creating the relations of a metric in chunk storage and its view,
 *	  adding label columns to them, and the daily partitions of its chunks.
 *
 * A metric m in chunk storage, created in schema s, is the tables
 * s."m#series", s."m#chunks" (partitioned by range of min_time, without
 * partitions: PromStorageChunkPartition makes them), s."m#head"
 * (partitioned by window: head.c makes its partitions) and s."m#late", and
 * the view s."m", registered as the metric (docs/chunk-storage.md gives their
 * columns and indexes).  All are owned by the creating role, named as
 * remote write names its tables (PromCreatedRelationName), and made
 * through SPI with quoted names.  The view reads the chunks' samples
 * (prom_chunk_samples, prom_chunk_histograms), the head's rows from the
 * watermark on and the late rows, joined to the series; its columns are
 * the label columns, ts and value, then the label columns added later:
 * CREATE OR REPLACE VIEW only appends.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/relation.h"
#include "access/xact.h"
#include "catalog/partition.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "storage/lmgr.h"
#include "storage/storage.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/datetime.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"

/* The view's columns besides the labels (those of write_tables.c's tables). */
#define VIEW_TIME_COLUMN	"ts"
#define VIEW_VALUE_COLUMN	"value"

/* The quoted name of a relation in a schema, for SQL text. */
static char *
qualified_name(Oid nspid, const char *name)
{
	return quote_qualified_identifier(get_namespace_name(nspid), name);
}

/*
 * The SQL that creates (or replaces) a metric's view: columns names its
 * columns in order, the time and value columns among them; the view reads
 * the chunks' samples, then the head's rows from the watermark on (as the
 * reader's snapshot sees it, read once a query: a subquery) and those of
 * its default partition
 * (head_default, a quoted name), then the late rows (late NULL: none).
 */
static char *
view_sql(const char *metric, const char *view, const char *series,
		 const char *chunks, const char *head, const char *head_default,
		 const char *late, bool histograms, bool replace,
		 const char *const *columns, int ncolumns)
{
	const char *ext = quote_identifier(get_namespace_name(PromExtensionNamespace()));
	StringInfoData sql;
	int			branch;
	int			i;

	initStringInfo(&sql);
	appendStringInfo(&sql, "CREATE %sVIEW %s AS", replace ? "OR REPLACE " : "",
					 view);
	for (branch = 0; branch < (late != NULL ? 3 : 2); branch++)
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
							 series, branch == 1 ? head : late);
		if (branch == 1 && late != NULL)
			appendStringInfo(&sql, " WHERE (h.t OPERATOR(pg_catalog.>=) (SELECT %s.prom_head_compacted_before(%s, %s::pg_catalog.regclass))"
							 " OR h.tableoid OPERATOR(pg_catalog.=) %s::pg_catalog.regclass)",
							 ext, quote_literal_cstr(metric), quote_literal_cstr(head),
							 quote_literal_cstr(head_default));
	}
	return sql.data;
}

/*
 * Create, register and record the relations of a metric in chunk storage
 * in schema nspid, with the label columns chosen (see the file's header),
 * its head's partitions back to earliest_ms (PromHeadMakePartitions); the
 * caller holds the metric's lock and runs inside SPI.
 */
static void
create_relations(const char *metric, Oid nspid, bool histograms,
				 const PromLabelColumns *chosen, bool for_write, int64 earliest_ms)
{
	static const char *const suffixes[5] = {"", "#series", "#chunks", "#head", "#late"};
	char	   *names[5];
	char	   *quoted[5];
	const char **columns;
	int			ncolumns = 0;
	StringInfoData sql;
	PromStorageEntry entry;
	int			i;

	for (i = 0; i < 5; i++)
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
	/* remote write caches series ids while this tells it of none changed */
	resetStringInfo(&sql);
	appendStringInfo(&sql, "CREATE TRIGGER %s AFTER UPDATE OR DELETE ON %s"
					 " FOR EACH STATEMENT EXECUTE FUNCTION %s()",
					 PROM_SERIES_TRIGGER_FUNCTION, quoted[1],
					 qualified_name(PromExtensionNamespace(), PROM_SERIES_TRIGGER_FUNCTION));
	PromRunDDL(sql.data);
	resetStringInfo(&sql);
	appendStringInfo(&sql, "ALTER TABLE %s ENABLE ALWAYS TRIGGER %s",
					 quoted[1], PROM_SERIES_TRIGGER_FUNCTION);
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
	/*
	 * by window first: compaction appends a window's chunks at the index's
	 * end, and a series' chunks of a window share one deduplicated key
	 */
	appendStringInfo(&sql, "CREATE INDEX ON %s ((min_time OPERATOR(pg_catalog./) "
					 INT64_FORMAT "), series_id)", quoted[2], PROM_CHUNK_WINDOW_MS);
	PromRunDDL(sql.data);

	/* the head, partitioned by window (head.c), and the late rows */
	for (i = 3; i < 5; i++)
	{
		resetStringInfo(&sql);
		appendStringInfo(&sql, "CREATE TABLE %s (series_id pg_catalog.int8 NOT NULL,"
						 " t pg_catalog.int8 NOT NULL, value %s NOT NULL)%s", quoted[i],
						 histograms ? format_type_be_qualified(PromHistogramTypeOid()) :
						 "pg_catalog.float8", i == 3 ? " PARTITION BY RANGE (t)" : "");
		PromRunDDL(sql.data);
		/*
		 * m#late by series; the head as promread.head_index says (its
		 * partitions inherit the index): by series for reads of a few
		 * series, or by BRIN on t, which remote write's appends in time
		 * order keep tight, for writes without a B-tree insertion a sample
		 */
		resetStringInfo(&sql);
		appendStringInfo(&sql, i == 3 && promread_head_index == PROM_HEAD_INDEX_TIME ?
						 "CREATE INDEX ON %s USING brin (t)" :
						 "CREATE INDEX ON %s (series_id, t)", quoted[i]);
		PromRunDDL(sql.data);
	}
	entry.head = get_relname_relid(names[3], nspid);
	PromHeadCreatePartition(metric, entry.head, 0, true);

	columns = palloc(sizeof(char *) * (chosen->ncolumns + 3));
	for (i = 0; i < chosen->ncolumns; i++)
		columns[ncolumns++] = chosen->columns[i];
	if (chosen->overflow != NULL)
		columns[ncolumns++] = chosen->overflow;
	columns[ncolumns++] = VIEW_TIME_COLUMN;
	columns[ncolumns++] = VIEW_VALUE_COLUMN;
	PromRunDDL(view_sql(metric, quoted[0], quoted[1], quoted[2], quoted[3],
						PromHeadPartitionName(metric, entry.head, 0, true), quoted[4],
						histograms, false, columns, ncolumns));

	entry.metric = unconstify(char *, metric);
	entry.relation = get_relname_relid(names[0], nspid);
	entry.series = get_relname_relid(names[1], nspid);
	entry.chunks = get_relname_relid(names[2], nspid);
	entry.has_retention = false;
	entry.late = get_relname_relid(names[4], nspid);
	entry.compacted_before = PG_INT64_MIN;
	PromCatalogStoreCreated(metric, entry.relation, VIEW_TIME_COLUMN,
							VIEW_VALUE_COLUMN, chosen->columns, chosen->labels,
							chosen->ncolumns, chosen->overflow);
	PromStorageCatalogStore(&entry);
	PromHeadMakePartitions(&entry, PromTimestampToMs(GetCurrentTransactionStartTimestamp()),
						   earliest_ms);
}

/*
 * Create, in schema nspid, a metric in chunk storage with a column for each
 * of the labels, owned by the current user, register it and return its
 * registration; a metric registered already is refused (42710), or, for
 * remote write (for_write), returned as it is (PromCreateMetricStart).
 * Runs inside SPI.
 */
PromMetricEntry *
PromStorageCreateMetric(const char *metric, Oid nspid, const char *const *labels,
						int nlabels, bool histograms, bool for_write, int64 earliest_ms)
{
	PromLabelColumns chosen;
	PromMetricEntry *entry = PromCreateMetricStart(metric, nspid, labels, nlabels,
												   for_write, &chosen);

	if (entry != NULL)
		return entry;
	create_relations(metric, nspid, histograms, &chosen, for_write, earliest_ms);
	return PromCatalogFind(metric);
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
 * Replace a chunk metric's view (arg: its PromStorageEntry) with one that
 * appends the columns just added to its series table, under the locks of
 * PromAddLabelColumns; runs inside SPI.
 */
static void
replace_view(void *arg, const char *const *new_columns, int nnew)
{
	const PromStorageEntry *entry = arg;
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
	PromRunDDL(view_sql(entry->metric, PromQuotedRelationName(entry->relation),
						PromQuotedRelationName(entry->series),
						PromQuotedRelationName(entry->chunks),
						PromQuotedRelationName(entry->head),
						PromHeadPartitionName(entry->metric, entry->head, 0, true),
						OidIsValid(entry->late) ? PromQuotedRelationName(entry->late) : NULL,
						holds_histograms(entry), true, columns, ncolumns));
}

/*
 * Add label columns to a metric in chunk storage (storage, the entry of
 * the metric registered as entry): to its series table, appended to its
 * view, as PromAddLabelColumns adds them to a table of remote write; NULL
 * when the metric went away or was registered again meanwhile.
 */
PromMetricEntry *
PromStorageAddLabelColumns(const PromMetricEntry *entry,
						   const PromStorageEntry *storage,
						   const char *const *labels, int nlabels)
{
	Assert(storage->relation == entry->relid);
	return PromAddLabelColumns(entry, storage->series, labels, nlabels,
							   replace_view, unconstify(PromStorageEntry *, storage));
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
 * there is none.  Making one takes ACCESS EXCLUSIVE on m#chunks until the
 * transaction ends: a query on the view plans with the partitions it sees
 * and, in READ COMMITTED, reads with a snapshot taken after planning, so a
 * partition attached in between, holding chunks whose head rows the same
 * transaction deleted, would be missed by it.  The lock waits for the
 * queries that planned without the partition and holds new ones until the
 * chunks commit (a compaction makes a day's partition once).  Two sessions
 * making partitions of one metric take turns.  Runs inside SPI.
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
	LockRelationOid(entry->chunks, AccessExclusiveLock);
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

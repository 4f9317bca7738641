/*-------------------------------------------------------------------------
 *
 * write_tables.c
 *	  The tables remote write makes for metrics without a registration, and
 *	  the label columns it adds to them (write/remote_write.c's steps 2 and 3).
 *
 * A created table is (ts timestamptz, value float8 or prom_histogram, one
 * text column per label), in promread.write_schema, owned by the writing
 * role, with an index (label, ts) for the labels of indexed_labels, and
 * registered as made by remote write.  A label whose name cannot be a
 * column's gets a column of another name; past
 * promread.write_max_label_columns label columns a table gets a jsonb
 * column of overflow labels instead.  Adding columns polls for the table's
 * exclusive lock rather than queueing for it, so reads are not held up.
 * The naming of columns and relations, the choice of label columns, the
 * start of a metric's creation and the adding of label columns serve the
 * relations of chunk storage too (storage/create.c), and prom_create_metric.
 * A creation by remote write first takes one of four creation slots, so
 * that writers together hold the locks of few new metrics at once.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog/namespace.h"
#include "catalog/objectaddress.h"
#include "catalog/pg_class.h"
#include "common/hashfn.h"
#include "executor/spi.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "promread.h"
#include "protocol/protocol.h"
#include "write_tables.h"
#include "storage/lmgr.h"
#include "tcop/utility.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/syscache.h"

/* The columns of a table that remote write creates, besides its labels. */
#define CREATED_TIME_COLUMN		"ts"
#define CREATED_VALUE_COLUMN	"value"
#define CREATED_OVERFLOW_COLUMN	"__labels"

/* The names of system columns, which no column of a table may take. */
static const char *const system_columns[] = {
	"ctid", "xmin", "cmin", "xmax", "cmax", "tableoid"
};

/* How many times to try the lock that adding label columns needs, 10 ms apart. */
#define NEW_COLUMN_LOCK_ATTEMPTS	100

/* Labels that get an index (label, ts) in a table remote write creates. */
static const char *const indexed_labels[] = {"instance", "job"};

/* Is a label one of indexed_labels? */
static bool
is_indexed_label(const char *label)
{
	for (int i = 0; i < (int) lengthof(indexed_labels); i++)
		if (strcmp(label, indexed_labels[i]) == 0)
			return true;
	return false;
}

/* Columns of a chunk metric's series table, which no label column takes. */
static const char *const series_columns[] = {"series_id", "labels_hash"};

/*
 * Is a column name taken in a table remote write made, or in a chunk
 * metric's series table (relid; InvalidOid while it is being created):
 * by a column of the table, dropped ones included, by a system column,
 * the time, value or overflow column, the series table's own columns, or
 * one of the names given to new columns so far?  The series table's
 * columns are reserved in both layouts, so that a label's column has one
 * name whatever the storage.
 */
static bool
column_name_taken(Oid relid, const char *name, const char *const *taken,
				  int ntaken)
{
	int			i;

	if (OidIsValid(relid) && get_attnum(relid, name) != InvalidAttrNumber)
		return true;
	if (strcmp(name, CREATED_TIME_COLUMN) == 0 ||
		strcmp(name, CREATED_VALUE_COLUMN) == 0 ||
		strcmp(name, CREATED_OVERFLOW_COLUMN) == 0)
		return true;
	for (i = 0; i < (int) lengthof(system_columns); i++)
		if (strcmp(name, system_columns[i]) == 0)
			return true;
	for (i = 0; i < (int) lengthof(series_columns); i++)
		if (strcmp(name, series_columns[i]) == 0)
			return true;
	for (i = 0; i < ntaken; i++)
		if (strcmp(name, taken[i]) == 0)
			return true;
	return false;
}

/*
 * The name of a new column for a label (or for the overflow labels): the
 * label's name when it fits an identifier and is not taken; otherwise its
 * first 40 bytes, a hash of the whole, and a number if that is taken too.
 */
static char *
label_column_name(Oid relid, const char *label, const char *const *taken,
				  int ntaken)
{
	size_t		len = strlen(label);
	uint32		hash = hash_bytes((const unsigned char *) label, (int) len);
	char	   *name;
	int			n;

	if (len < NAMEDATALEN && !column_name_taken(relid, label, taken, ntaken))
		return pstrdup(label);
	name = psprintf("%.40s_%08x", label, hash);
	for (n = 2; column_name_taken(relid, name, taken, ntaken); n++)
		name = psprintf("%.40s_%08x_%d", label, hash, n);
	return name;
}

/*
 * The name of a relation created for a metric: the metric's name and a
 * suffix ("" for its table or view, "#series" and so on for the tables of
 * chunk storage), or, past an identifier's 63 bytes, the metric's first
 * bytes, a hash of the whole name and the suffix.
 */
char *
PromCreatedRelationName(const char *metric, const char *suffix)
{
	size_t		len = strlen(metric);
	size_t		suffix_len = strlen(suffix);

	Assert(suffix_len < 40);
	if (len + suffix_len < NAMEDATALEN)
		return psprintf("%s%s", metric, suffix);
	return psprintf("%.*s_%08x%s", (int) (54 - suffix_len), metric,
					hash_bytes((const unsigned char *) metric, (int) len), suffix);
}

/* Run a utility statement (creating or altering a metric's relations) through SPI. */
void
PromRunDDL(const char *sql)
{
	if (SPI_execute(sql, false, 0) != SPI_OK_UTILITY)
		elog(ERROR, "promread could not run: %s", sql);
}

/*
 * Choose the label columns of a new metric: a column for each label while
 * there is room (promread.write_max_label_columns), then a jsonb column of
 * overflow labels.
 */
static void
choose_label_columns(const char *const *labels, int nlabels,
					 PromLabelColumns *chosen)
{
	int			i;

	chosen->columns = palloc(sizeof(char *) * Max(nlabels, 1));
	chosen->labels = palloc(sizeof(char *) * Max(nlabels, 1));
	chosen->ncolumns = 0;
	chosen->overflow = NULL;
	for (i = 0; i < nlabels; i++)
	{
		if (chosen->ncolumns >= promread_write_max_label_columns)
		{
			chosen->overflow = CREATED_OVERFLOW_COLUMN;
			break;
		}
		chosen->labels[chosen->ncolumns] = labels[i];
		chosen->columns[chosen->ncolumns] =
			label_column_name(InvalidOid, labels[i], chosen->columns,
							  chosen->ncolumns);
		chosen->ncolumns++;
	}
}

/*
 * Append the label columns of a new table: text COLLATE "C", and jsonb for
 * the overflow labels.
 */
void
PromAppendLabelColumns(StringInfo sql, const PromLabelColumns *chosen)
{
	int			i;

	for (i = 0; i < chosen->ncolumns; i++)
		appendStringInfo(sql, ", %s pg_catalog.text COLLATE \"C\"",
						 quote_identifier(chosen->columns[i]));
	if (chosen->overflow != NULL)
		appendStringInfo(sql, ", %s pg_catalog.jsonb",
						 quote_identifier(chosen->overflow));
}

/*
 * Create an index on each label column of indexed_labels of a new table:
 * (label column), followed by more_columns (such as ", ts", or "").
 */
void
PromCreateLabelIndexes(const char *qualified, const PromLabelColumns *chosen,
					   const char *more_columns)
{
	StringInfoData sql;
	int			i;

	initStringInfo(&sql);
	for (i = 0; i < chosen->ncolumns; i++)
	{
		if (!is_indexed_label(chosen->labels[i]))
			continue;
		resetStringInfo(&sql);
		appendStringInfo(&sql, "CREATE INDEX ON %s (%s%s)", qualified,
						 quote_identifier(chosen->columns[i]), more_columns);
		PromRunDDL(sql.data);
	}
}

/* Raise 42P07 for a relation of a new metric that exists already. */
void
PromCheckNewRelation(const char *metric, Oid nspid, const char *name,
					 bool for_write)
{
	if (!OidIsValid(get_relname_relid(name, nspid)))
		return;
	ereport(ERROR,
			(errcode(ERRCODE_DUPLICATE_TABLE),
			 errmsg("relation \"%s.%s\" already exists and metric \"%s\" is not registered",
					get_namespace_name(nspid), name, metric),
			 for_write ?
			 errhint("Register the relation with prom_register(), or set promread.write_schema to another schema.") :
			 errhint("Register the relation with prom_register(), or create the metric in another schema.")));
}

/*
 * Create and register the table of a metric in row storage: (ts, value,
 * label columns), indexed on ts and on (label, ts) for indexed_labels.
 */
static void
create_row_table(const char *metric, Oid nspid, bool histograms,
				 const PromLabelColumns *chosen, bool for_write)
{
	char	   *table = PromCreatedRelationName(metric, "");
	char	   *qualified;
	StringInfoData sql;

	PromCheckNewRelation(metric, nspid, table, for_write);
	qualified = quote_qualified_identifier(get_namespace_name(nspid), table);
	initStringInfo(&sql);
	appendStringInfo(&sql, "CREATE TABLE %s (" CREATED_TIME_COLUMN
					 " pg_catalog.timestamptz NOT NULL, " CREATED_VALUE_COLUMN
					 " %s NOT NULL", qualified,
					 histograms ? format_type_be_qualified(PromHistogramTypeOid()) :
					 "pg_catalog.float8");
	PromAppendLabelColumns(&sql, chosen);
	appendStringInfoChar(&sql, ')');
	PromRunDDL(sql.data);

	resetStringInfo(&sql);
	appendStringInfo(&sql, "CREATE INDEX ON %s (" CREATED_TIME_COLUMN ")", qualified);
	PromRunDDL(sql.data);
	PromCreateLabelIndexes(qualified, chosen, ", " CREATED_TIME_COLUMN);

	PromCatalogStoreCreated(metric, get_relname_relid(table, nspid),
							CREATED_TIME_COLUMN, CREATED_VALUE_COLUMN,
							chosen->columns, chosen->labels, chosen->ncolumns,
							chosen->overflow);
}

/*
 * How many transactions may be creating metrics by remote write at once,
 * cluster-wide: each holds the locks of the relations it made until it
 * commits, in the lock table every session shares (see remote_write.c).
 */
#define CREATION_SLOTS			4

/*
 * A creation slot's lock tag: an advisory lock of no database whose last
 * field no SQL function sets (pg_advisory_lock's tags have 1 or 2 there),
 * so that no role can hold a slot from SQL.
 */
#define CREATION_SLOT_KEY		0x70726f6d	/* "prom" */
#define CREATION_SLOT_KIND		3

/*
 * Hold one of the CREATION_SLOTS slots until this transaction ends, before
 * remote write creates a metric: the one it holds already, or a free one.
 * When every slot is held by other transactions, fail at once with 53400,
 * which PostgREST answers with 500 and Prometheus retries: waiting could
 * be for an open transaction of a user's.  A slot taken in a
 * subtransaction that rolls back is let go with the locks of the relations
 * made in it, and taken again by the next creation.
 */
static void
take_creation_slot(const char *metric)
{
	LOCKTAG		tags[CREATION_SLOTS];
	int			i;

	for (i = 0; i < CREATION_SLOTS; i++)
	{
		SET_LOCKTAG_ADVISORY(tags[i], InvalidOid, CREATION_SLOT_KEY, i,
							 CREATION_SLOT_KIND);
		if (PromLockHeldByMe(&tags[i], ExclusiveLock))
			return;
	}
	for (i = 0; i < CREATION_SLOTS; i++)
		if (LockAcquire(&tags[i], ExclusiveLock, false, true) != LOCKACQUIRE_NOT_AVAIL)
			return;
	ereport(ERROR,
			(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
			 errmsg("remote write cannot create metric \"%s\" now: %d other transactions are creating metrics",
					metric, CREATION_SLOTS),
			 errdetail("At most %d transactions create metrics by remote write at once, since each holds the locks of the relations it made until it commits.",
					   CREATION_SLOTS),
			 errhint("Send the request again.  Through PostgREST it is answered with 500, which Prometheus retries.")));
}

/*
 * Begin creating a metric in schema nspid, with a column for each of the
 * labels (chosen): check that the current user may create relations
 * there, then take the metric's lock (and, for remote write, a creation
 * slot).  Returns NULL when the metric is to be created now, under the
 * lock, or its registration when it is registered already and for_write:
 * another writer of remote write created it while this one waited (for
 * SQL, a registered metric is 42710).
 */
PromMetricEntry *
PromCreateMetricStart(const char *metric, Oid nspid, const char *const *labels,
					  int nlabels, bool for_write, PromLabelColumns *chosen)
{
	PromMetricEntry *entry;

	if (pg_namespace_aclcheck(nspid, GetUserId(), ACL_CREATE) != ACLCHECK_OK)
		aclcheck_error(ACLCHECK_NO_PRIV, OBJECT_SCHEMA, get_namespace_name(nspid));
	PromCatalogLockForWrite(metric);
	entry = PromCatalogFind(metric);
	if (entry != NULL)
	{
		if (!for_write)
			ereport(ERROR,
					(errcode(ERRCODE_DUPLICATE_OBJECT),
					 errmsg("metric \"%s\" is already registered", metric),
					 errhint("Unregister it with prom_unregister() first, or choose another name.")));
		/* another writer created it meanwhile: nothing to change */
		PromCatalogUnlockForWrite(metric);
		return entry;
	}
	if (for_write)
		take_creation_slot(metric);
	choose_label_columns(labels, nlabels, chosen);
	return NULL;
}

/*
 * Create, in schema nspid, the table of a metric in row storage, owned by
 * the current user, register it and return its registration (see
 * PromCreateMetricStart for a metric registered already).  Runs inside SPI.
 */
PromMetricEntry *
PromCreateRowMetric(const char *metric, Oid nspid, const char *const *labels,
					int nlabels, bool histograms, bool for_write)
{
	PromLabelColumns chosen;
	PromMetricEntry *entry = PromCreateMetricStart(metric, nspid, labels, nlabels,
												   for_write, &chosen);

	if (entry != NULL)
		return entry;
	create_row_table(metric, nspid, histograms, &chosen, for_write);
	return PromCatalogFind(metric);
}

/*
 * Create, register and return the table of a metric that has no
 * registration, in promread.write_schema (see PromCreateRowMetric).
 */
PromMetricEntry *
PromWriteCreateMetric(const char *metric, const char *const *labels, int nlabels,
					  bool histograms)
{
	return PromCreateRowMetric(metric, get_namespace_oid(promread_write_schema, false),
							   labels, nlabels, histograms, true);
}

/*
 * Take the exclusive lock that adding a column needs, without waiting in
 * the lock's queue: a request waiting there would hold up every read that
 * comes after it.  The lock is tried again every 10 ms while reads in
 * progress end; after a second, the request fails with 55P03, which
 * Prometheus retries.
 */
static void
lock_for_new_columns(Oid relid, const char *metric)
{
	int			attempt;

	for (attempt = 0; !ConditionalLockRelationOid(relid, AccessExclusiveLock);
		 attempt++)
	{
		if (attempt >= NEW_COLUMN_LOCK_ATTEMPTS)
			ereport(ERROR,
					(errcode(ERRCODE_LOCK_NOT_AVAILABLE),
					 errmsg("could not lock the table of metric \"%s\" to add a label column",
							metric),
					 errdetail("Other sessions kept it in use for a second."),
					 errhint("The request can be retried.")));
		CHECK_FOR_INTERRUPTS();
		pg_usleep(10 * 1000L);
	}
}

/* The columns of a relation, dropped ones included (they count for its limit). */
static int
relation_natts(Oid relid)
{
	HeapTuple	tuple = SearchSysCache1(RELOID, ObjectIdGetDatum(relid));
	int			natts;

	if (!HeapTupleIsValid(tuple))
		elog(ERROR, "cache lookup failed for relation %u", relid);
	natts = ((Form_pg_class) GETSTRUCT(tuple))->relnatts;
	ReleaseSysCache(tuple);
	return natts;
}

/*
 * Add a text column for each label that a metric remote write made has no
 * column for, while it has room for label columns (see the file's header),
 * or else its column of overflow labels; register them, and return the new
 * registration, or NULL when the metric's relation was dropped or the
 * metric registered again meanwhile.  The columns go into table (a chunk
 * metric's series table), or, when it is InvalidOid, the registered
 * relation itself; both are locked as above, and added (when not NULL) is
 * told the new columns before they are registered.  The metric's lock,
 * taken only by the relation's owner, serializes writers adding labels to
 * one metric.
 */
PromMetricEntry *
PromAddLabelColumns(const PromMetricEntry *entry, Oid table,
					const char *const *labels, int nlabels,
					PromNewColumnsFn added, void *arg)
{
	PromMetricEntry *current;
	const char **columns;
	const char **names;
	int			ncolumns;
	const char *overflow;
	const char *relation;
	StringInfoData sql;
	int			room;
	int			i;

	if (SearchSysCacheExists1(RELOID, ObjectIdGetDatum(entry->relid)) &&
		!pg_class_ownercheck(entry->relid, GetUserId()))
		aclcheck_error(ACLCHECK_NOT_OWNER,
					   get_relkind_objtype(get_rel_relkind(entry->relid)),
					   get_rel_name(entry->relid));
	PromCatalogLockForWrite(entry->metric);
	current = PromCatalogFind(entry->metric);
	if (current == NULL || current->relid != entry->relid)
	{
		PromCatalogUnlockForWrite(entry->metric);
		return NULL;
	}
	if (!OidIsValid(table))
		table = current->relid;
	lock_for_new_columns(current->relid, current->metric);
	if (table != current->relid)
		lock_for_new_columns(table, current->metric);
	if (!SearchSysCacheExists1(RELOID, ObjectIdGetDatum(current->relid)) ||
		!SearchSysCacheExists1(RELOID, ObjectIdGetDatum(table)))
	{
		PromCatalogUnlockForWrite(entry->metric);
		return NULL;
	}
	relation = PromQuotedRelationName(table);

	columns = palloc(sizeof(char *) * (current->nlabels + nlabels + 1));
	names = palloc(sizeof(char *) * (current->nlabels + nlabels));
	ncolumns = current->nlabels;
	for (i = 0; i < current->nlabels; i++)
	{
		columns[i] = current->label_columns[i];
		names[i] = current->label_names[i];
	}
	overflow = current->overflow_column;
	/* no new label column once there are overflow labels; one left for them */
	room = overflow != NULL ? 0 :
		Min(promread_write_max_label_columns - current->nlabels,
			MaxHeapAttributeNumber - relation_natts(table) - 1);
	initStringInfo(&sql);
	appendStringInfo(&sql, "ALTER TABLE %s", relation);
	for (i = 0; i < nlabels; i++)
	{
		if (PromCatalogLabelIndex(current, labels[i]) >= 0)
			continue;
		if (ncolumns - current->nlabels >= room)
		{
			if (overflow == NULL)
			{
				/* no label's column takes its name; another column may */
				overflow = get_attnum(table, CREATED_OVERFLOW_COLUMN) ==
					InvalidAttrNumber ? CREATED_OVERFLOW_COLUMN :
					label_column_name(table, CREATED_OVERFLOW_COLUMN,
									  columns + current->nlabels,
									  ncolumns - current->nlabels);
				appendStringInfo(&sql, "%s ADD COLUMN %s pg_catalog.jsonb",
								 ncolumns > current->nlabels ? "," : "",
								 quote_identifier(overflow));
			}
			break;
		}
		names[ncolumns] = labels[i];
		columns[ncolumns] = label_column_name(table, labels[i],
											  columns + current->nlabels,
											  ncolumns - current->nlabels);
		appendStringInfo(&sql, "%s ADD COLUMN %s pg_catalog.text COLLATE \"C\"",
						 ncolumns > current->nlabels ? "," : "",
						 quote_identifier(columns[ncolumns]));
		ncolumns++;
	}
	if (ncolumns == current->nlabels && overflow == current->overflow_column)
		return current;
	PromRunDDL(sql.data);
	if (added != NULL)
	{
		/* the new columns: the labels', then the overflow column */
		if (overflow != current->overflow_column)
			columns[ncolumns] = overflow;
		added(arg, columns + current->nlabels, ncolumns - current->nlabels +
			  (overflow != current->overflow_column ? 1 : 0));
	}
	PromCatalogStoreCreated(current->metric, current->relid,
							current->time_column, current->value_column,
							columns, names, ncolumns, overflow);
	return PromCatalogFind(entry->metric);
}

/* Add label columns to a table remote write made (see PromAddLabelColumns). */
PromMetricEntry *
PromWriteAddLabelColumns(const PromMetricEntry *entry, const char *const *labels,
						 int nlabels)
{
	return PromAddLabelColumns(entry, InvalidOid, labels, nlabels, NULL, NULL);
}

/*-------------------------------------------------------------------------
 *
 * write_tables.c
 *	  The tables remote write makes for metrics without a registration, and
 *	  the label columns it adds to them (remote_write.c's steps 2 and 3).
 *
 * A created table is (ts timestamptz, value float8 or prom_histogram, one
 * text column per label), in promread.write_schema, owned by the writing
 * role, with an index (label, ts) for the labels of indexed_labels, and
 * registered as made by remote write.  A label whose name cannot be a
 * column's gets a column of another name; past
 * promread.write_max_label_columns label columns a table gets a jsonb
 * column of overflow labels instead.  Adding columns polls for the table's
 * exclusive lock rather than queueing for it, so reads are not held up.
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
#include "remote_write.h"
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

/*
 * Is a column name taken in a table remote write made (relid; InvalidOid
 * while it is being created): by a column of the table, dropped ones
 * included, by a system column, the time, value or overflow column, or one
 * of the names given to new columns so far?
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
 * metric's lock, taken only once the user is known to have the right to
 * create tables in promread.write_schema.
 */
PromMetricEntry *
PromWriteCreateMetric(const char *metric, const char *const *labels, int nlabels,
			  bool histograms)
{
	PromMetricEntry *entry;
	Oid			nspid;
	char	   *table;
	char	   *qualified;
	StringInfoData sql;
	const char **columns;
	const char **names;
	int			ncolumns = 0;
	const char *overflow = NULL;
	int			i;

	nspid = get_namespace_oid(promread_write_schema, false);
	if (pg_namespace_aclcheck(nspid, GetUserId(), ACL_CREATE) != ACLCHECK_OK)
		aclcheck_error(ACLCHECK_NO_PRIV, OBJECT_SCHEMA, promread_write_schema);
	PromCatalogLockForWrite(metric);
	entry = PromCatalogFind(metric);
	if (entry != NULL)
	{
		/* another writer created it meanwhile: nothing to change */
		PromCatalogUnlockForWrite(metric);
		return entry;
	}

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
					 " %s NOT NULL", qualified,
					 histograms ? format_type_be_qualified(PromHistogramTypeOid()) :
					 "pg_catalog.float8");
	columns = palloc(sizeof(char *) * Max(nlabels, 1));
	names = palloc(sizeof(char *) * Max(nlabels, 1));
	for (i = 0; i < nlabels; i++)
	{
		if (ncolumns >= promread_write_max_label_columns)
		{
			overflow = CREATED_OVERFLOW_COLUMN;
			break;
		}
		names[ncolumns] = labels[i];
		columns[ncolumns] = label_column_name(InvalidOid, labels[i], columns,
											  ncolumns);
		appendStringInfo(&sql, ", %s pg_catalog.text COLLATE \"C\"",
						 quote_identifier(columns[ncolumns]));
		ncolumns++;
	}
	if (overflow != NULL)
		appendStringInfo(&sql, ", %s pg_catalog.jsonb", quote_identifier(overflow));
	appendStringInfoChar(&sql, ')');
	run_ddl(sql.data);

	resetStringInfo(&sql);
	appendStringInfo(&sql, "CREATE INDEX ON %s (" CREATED_TIME_COLUMN ")", qualified);
	run_ddl(sql.data);
	for (i = 0; i < ncolumns; i++)
	{
		const char *label = names[i];

		if (!is_indexed_label(label))
			continue;
		resetStringInfo(&sql);
		appendStringInfo(&sql, "CREATE INDEX ON %s (%s, " CREATED_TIME_COLUMN ")",
						 qualified, quote_identifier(columns[i]));
		run_ddl(sql.data);
	}

	PromCatalogStoreCreated(metric, get_relname_relid(table, nspid),
							CREATED_TIME_COLUMN, CREATED_VALUE_COLUMN,
							columns, names, ncolumns, overflow);
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
 * Add a text column for each label that a table remote write made has no
 * column for, while it has room for label columns (see the file's header),
 * or else its column of overflow labels; register them, and return the new
 * registration, or NULL when the table was dropped or the metric registered
 * again meanwhile.  The metric's lock, taken only by the table's owner,
 * serializes writers adding labels to one metric.
 */
PromMetricEntry *
PromWriteAddLabelColumns(const PromMetricEntry *entry, const char *const *labels,
				  int nlabels)
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
	lock_for_new_columns(current);
	if (!SearchSysCacheExists1(RELOID, ObjectIdGetDatum(current->relid)))
	{
		PromCatalogUnlockForWrite(entry->metric);
		return NULL;
	}
	relation = PromQuotedRelationName(current->relid);

	columns = palloc(sizeof(char *) * (current->nlabels + nlabels));
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
			MaxHeapAttributeNumber - relation_natts(current->relid) - 1);
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
				overflow = get_attnum(current->relid, CREATED_OVERFLOW_COLUMN) ==
					InvalidAttrNumber ? CREATED_OVERFLOW_COLUMN :
					label_column_name(current->relid, CREATED_OVERFLOW_COLUMN,
									  columns + current->nlabels,
									  ncolumns - current->nlabels);
				appendStringInfo(&sql, "%s ADD COLUMN %s pg_catalog.jsonb",
								 ncolumns > current->nlabels ? "," : "",
								 quote_identifier(overflow));
			}
			break;
		}
		names[ncolumns] = labels[i];
		columns[ncolumns] = label_column_name(current->relid, labels[i],
											  columns + current->nlabels,
											  ncolumns - current->nlabels);
		appendStringInfo(&sql, "%s ADD COLUMN %s pg_catalog.text COLLATE \"C\"",
						 ncolumns > current->nlabels ? "," : "",
						 quote_identifier(columns[ncolumns]));
		ncolumns++;
	}
	if (ncolumns == current->nlabels && overflow == current->overflow_column)
		return current;
	run_ddl(sql.data);
	PromCatalogStoreCreated(current->metric, current->relid,
							current->time_column, current->value_column,
							columns, names, ncolumns, overflow);
	return PromCatalogFind(entry->metric);
}

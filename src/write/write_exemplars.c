/*-------------------------------------------------------------------------
 *
 * write_exemplars.c
 *	  The exemplars of remote write: a table of them beside each metric
 *	  that remote write created, and their writing.
 *
 * 1. The first exemplar of a metric that remote write created makes,
 *    beside the metric's table, in its schema and owned by its owner, the
 *    table of its exemplars, named as the metric's table with "#exemplars"
 *    appended (a name no metric's table can take, '#' being no character
 *    of a metric name): (ts timestamptz, value float8, series jsonb, labels
 *    jsonb), series the labels of the exemplar's series but __name__,
 *    labels the exemplar's own.  prom_exemplar_catalog (prom_exemplars to
 *    read) names it.  It is given the privileges the metric's table has
 *    then, so no role reads the exemplars of a metric whose samples it may
 *    not read; a later GRANT on one is for the owner to repeat on the
 *    other.  It depends on the metric's table (an automatic dependency, as
 *    an index's): DROP TABLE of the metric drops its exemplars too.  Only
 *    the metric table's owner creates it (a writer granted INSERT on
 *    another role's table cannot give that role a table), and only once
 *    (under the metric's lock in the exemplar catalog).  Metrics without
 *    exemplars get no table.
 * 2. Exemplars are dropped, and not counted as written, when their metric
 *    has no exemplar table and may not get one: a metric registered by a
 *    user (prom_register), or one whose writer is not its table's owner or
 *    may no longer create tables in its schema; and when the writer may
 *    not insert into the exemplar table.  Exemplars are an aid to the
 *    samples and never refuse them.
 * 3. Exemplars are written with one INSERT through SPI, as the writing
 *    role, after the metric's samples and in the same subtransaction (a
 *    refused metric keeps none), into a table whose owner remote write
 *    trusts (write_trust.c).  An exemplar equal to one the table holds
 *    (time, value, series and labels) is not inserted again, so that a
 *    request sent twice leaves the same exemplars, as Prometheus keeps one
 *    of equal exemplars; every exemplar of the metric that the table holds
 *    afterwards counts as written.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/relation.h"
#include "access/xact.h"
#include "catalog/dependency.h"
#include "catalog/objectaddress.h"
#include "catalog/pg_class.h"
#include "catalog/pg_type.h"
#include "common/hashfn.h"
#include "executor/spi.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "promread.h"
#include "write_internal.h"
#include "utils/acl.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/json.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/syscache.h"

/* What an exemplar table's name adds to its metric's table's name. */
#define EXEMPLAR_TABLE_SUFFIX	"#exemplars"

/* The columns of an exemplar table. */
#define EXEMPLAR_TIME_COLUMN	"ts"
#define EXEMPLAR_VALUE_COLUMN	"value"

/*
 * The name of the exemplar table of a metric's table: its name and the
 * suffix, or, past an identifier's 63 bytes, its first 40 bytes, a hash of
 * the whole, and the suffix.
 */
static char *
exemplar_table_name(const char *metric_table)
{
	size_t		len = strlen(metric_table);

	if (len + strlen(EXEMPLAR_TABLE_SUFFIX) < NAMEDATALEN)
		return psprintf("%s" EXEMPLAR_TABLE_SUFFIX, metric_table);
	return psprintf("%.40s_%08x" EXEMPLAR_TABLE_SUFFIX, metric_table,
					hash_bytes((const unsigned char *) metric_table, (int) len));
}

/* Run a statement of an exemplar table through SPI. */
static void
run_sql(const char *sql, int expected)
{
	if (SPI_execute(sql, false, 0) != expected)
		elog(ERROR, "promread could not run: %s", sql);
}

/* The privileges of relation $2 but its owner's, named for GRANT and REVOKE. */
#define PRIVILEGES_OF(statement) \
	"SELECT pg_catalog.format(" statement ", a.privilege_type, $1, " \
	"CASE a.grantee WHEN 0 THEN 'PUBLIC' ELSE pg_catalog.quote_ident(r.rolname) END, " \
	"CASE WHEN a.is_grantable THEN ' WITH GRANT OPTION' ELSE '' END) " \
	"FROM pg_catalog.pg_class c, pg_catalog.aclexplode(c.relacl) a " \
	"LEFT JOIN pg_catalog.pg_roles r ON r.oid OPERATOR(pg_catalog.=) a.grantee " \
	"WHERE c.oid OPERATOR(pg_catalog.=) $2 AND a.grantee OPERATOR(pg_catalog.<>) c.relowner"

/*
 * Give the exemplar table (relid; qualified, its quoted name) the
 * privileges of the metric's table: revoke those it was created with (the
 * schema's default privileges), grant those the metric's table has, both
 * but the owner's own.
 */
static void
copy_privileges(Oid metric_relid, const char *qualified, Oid relid)
{
	static const char *const queries[] = {
		PRIVILEGES_OF("'REVOKE %s ON %s FROM %s'"),
		PRIVILEGES_OF("'GRANT %s ON %s TO %s%s'")
	};
	Oid			types[2] = {TEXTOID, OIDOID};
	int			pass;

	for (pass = 0; pass < 2; pass++)
	{
		Datum		args[2] = {CStringGetTextDatum(qualified),
			ObjectIdGetDatum(pass == 0 ? relid : metric_relid)};
		List	   *statements = NIL;
		ListCell   *lc;
		uint64		i;

		/* not read-only: a new snapshot, which sees the table just created */
		if (SPI_execute_with_args(queries[pass], 2, types, args, NULL, false, 0) != SPI_OK_SELECT)
			elog(ERROR, "promread could not read the privileges of relation %u",
				 pass == 0 ? relid : metric_relid);
		for (i = 0; i < SPI_processed; i++)
			statements = lappend(statements,
								 SPI_getvalue(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1));
		foreach(lc, statements)
			run_sql(lfirst(lc), SPI_OK_UTILITY);
	}
}

/*
 * Create, under the metric's lock in the exemplar catalog, the exemplar
 * table of a metric remote write created (see the header) and record it;
 * InvalidOid when the extension's objects predate the exemplar catalog.
 */
static Oid
create_exemplar_table(const PromMetricEntry *entry, Oid nspid)
{
	char	   *table = exemplar_table_name(get_rel_name(entry->relid));
	char	   *schema = get_namespace_name(nspid);
	char	   *qualified = quote_qualified_identifier(schema, table);
	ObjectAddress exemplars;
	ObjectAddress metric_address;
	Oid			relid;

	if (!PromExemplarCatalogLock(entry->metric))
		return InvalidOid;
	relid = PromExemplarCatalogFind(entry->metric);
	if (OidIsValid(relid))
		return relid;			/* another writer made it meanwhile */
	if (OidIsValid(get_relname_relid(table, nspid)))
		ereport(ERROR,
				(errcode(ERRCODE_DUPLICATE_TABLE),
				 errmsg("relation \"%s.%s\" for the exemplars of metric \"%s\" already exists",
						schema, table, entry->metric),
				 errhint("Drop or rename it.")));
	run_sql(psprintf("CREATE TABLE %s (" EXEMPLAR_TIME_COLUMN " pg_catalog.timestamptz NOT NULL, "
					 EXEMPLAR_VALUE_COLUMN " pg_catalog.float8 NOT NULL, "
					 "series pg_catalog.jsonb NOT NULL, labels pg_catalog.jsonb NOT NULL)",
					 qualified), SPI_OK_UTILITY);
	run_sql(psprintf("CREATE INDEX ON %s (" EXEMPLAR_TIME_COLUMN ")", qualified),
			SPI_OK_UTILITY);
	relid = get_relname_relid(table, nspid);
	copy_privileges(entry->relid, qualified, relid);

	/* dropped with the metric's table */
	ObjectAddressSet(exemplars, RelationRelationId, relid);
	ObjectAddressSet(metric_address, RelationRelationId, entry->relid);
	recordDependencyOn(&exemplars, &metric_address, DEPENDENCY_AUTO);
	CommandCounterIncrement();

	PromExemplarCatalogStore(entry->metric, relid);
	return relid;
}

/*
 * The exemplar table of a metric, created now when it has none and may get
 * one (see the header), or InvalidOid.
 */
static Oid
exemplar_table(const PromMetricEntry *entry)
{
	Oid			relid = PromExemplarCatalogFind(entry->metric);
	Oid			nspid;
	HeapTuple	tuple;
	Oid			owner;

	if (OidIsValid(relid) || !entry->created_by_write)
		return relid;
	tuple = SearchSysCache1(RELOID, ObjectIdGetDatum(entry->relid));
	if (!HeapTupleIsValid(tuple))
		return InvalidOid;
	owner = ((Form_pg_class) GETSTRUCT(tuple))->relowner;
	nspid = ((Form_pg_class) GETSTRUCT(tuple))->relnamespace;
	ReleaseSysCache(tuple);
	if (owner != GetUserId() ||
		pg_namespace_aclcheck(nspid, GetUserId(), ACL_CREATE) != ACLCHECK_OK)
		return InvalidOid;
	return create_exemplar_table(entry, nspid);
}

/* Append the labels of a series or an exemplar to out, as a JSON object. */
static void
append_labels_json(StringInfo out, const PromWriteLabel *labels, int nlabels,
				   StringInfo scratch)
{
	int			i;

	appendStringInfoChar(out, '{');
	for (i = 0; i < nlabels; i++)
	{
		if (i > 0)
			appendStringInfoChar(out, ',');
		escape_json(out, labels[i].name);
		appendStringInfoChar(out, ':');
		resetStringInfo(scratch);
		appendBinaryStringInfo(scratch, labels[i].value, labels[i].value_len);
		escape_json(out, scratch->data);
	}
	appendStringInfoChar(out, '}');
}

/* A one-dimensional array of Datums of a type. */
static Datum
make_array(Datum *values, int n, Oid element_type)
{
	int16		typlen;
	bool		typbyval;
	char		typalign;

	get_typlenbyvalalign(element_type, &typlen, &typbyval, &typalign);
	return PointerGetDatum(construct_array(values, n, element_type, typlen,
										   typbyval, typalign));
}

/*
 * Write the exemplars of a group's series into its metric's exemplar table
 * (see the header); returns how many count as written.  SPI is connected.
 */
int64
PromWriteGroupExemplars(const PromWriteGroup *group, const PromMetricEntry *entry)
{
	int64		nexemplars = 0;
	Oid			relid;
	Relation	rel;
	PromMetricEntry trust_entry;
	Datum	   *times;
	Datum	   *values;
	Datum	   *series_labels;
	Datum	   *labels;
	StringInfoData json;
	StringInfoData scratch;
	Oid			types[4] = {TIMESTAMPTZARRAYOID, FLOAT8ARRAYOID, TEXTARRAYOID, TEXTARRAYOID};
	Datum		args[4];
	char	   *table;
	int64		row = 0;
	int			i;
	int			e;

	for (i = 0; i < group->nseries; i++)
		nexemplars += group->series[i]->nexemplars;
	if (nexemplars == 0)
		return 0;
	if (nexemplars > PG_INT32_MAX / (int64) sizeof(Datum))
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("remote write request has too many exemplars of metric \"%s\"",
						entry->metric)));
	relid = exemplar_table(entry);
	if (!OidIsValid(relid) ||
		pg_class_aclcheck(relid, GetUserId(), ACL_INSERT) != ACLCHECK_OK)
		return 0;
	rel = try_relation_open(relid, RowExclusiveLock);
	if (rel == NULL)
		return 0;
	trust_entry = *entry;
	trust_entry.time_column = EXEMPLAR_TIME_COLUMN;
	trust_entry.value_column = EXEMPLAR_VALUE_COLUMN;
	PromCheckWriteTrusted(rel, &trust_entry);

	times = palloc(sizeof(Datum) * nexemplars);
	values = palloc(sizeof(Datum) * nexemplars);
	series_labels = palloc(sizeof(Datum) * nexemplars);
	labels = palloc(sizeof(Datum) * nexemplars);
	initStringInfo(&json);
	initStringInfo(&scratch);
	for (i = 0; i < group->nseries; i++)
	{
		const PromWriteSeries *series = group->series[i];
		Datum		series_json;

		CHECK_FOR_INTERRUPTS();
		if (series->nexemplars == 0)
			continue;
		resetStringInfo(&json);
		append_labels_json(&json, series->labels, series->nlabels, &scratch);
		series_json = PointerGetDatum(cstring_to_text_with_len(json.data, json.len));
		for (e = 0; e < series->nexemplars; e++, row++)
		{
			const PromWriteExemplar *exemplar = &series->exemplars[e];

			times[row] = Int64GetDatum(PromWriteTimestamp(exemplar->timestamp,
														  entry->metric));
			values[row] = Float8GetDatum(exemplar->value);
			series_labels[row] = series_json;
			resetStringInfo(&json);
			append_labels_json(&json, exemplar->labels, exemplar->nlabels, &scratch);
			labels[row] = PointerGetDatum(cstring_to_text_with_len(json.data, json.len));
		}
	}
	args[0] = make_array(times, nexemplars, TIMESTAMPTZOID);
	args[1] = make_array(values, nexemplars, FLOAT8OID);
	args[2] = make_array(series_labels, nexemplars, TEXTOID);
	args[3] = make_array(labels, nexemplars, TEXTOID);

	table = PromQuotedRelationName(relid);
	if (SPI_execute_with_args(psprintf("INSERT INTO %s (" EXEMPLAR_TIME_COLUMN ", "
									   EXEMPLAR_VALUE_COLUMN ", series, labels) "
									   "SELECT DISTINCT u.t, u.v, CAST(u.s AS pg_catalog.jsonb), CAST(u.l AS pg_catalog.jsonb) "
									   "FROM ROWS FROM (pg_catalog.unnest($1), pg_catalog.unnest($2), "
									   "pg_catalog.unnest($3), pg_catalog.unnest($4)) AS u(t, v, s, l) "
									   "WHERE NOT EXISTS (SELECT FROM %s AS e WHERE e." EXEMPLAR_TIME_COLUMN
									   " OPERATOR(pg_catalog.=) u.t AND e." EXEMPLAR_VALUE_COLUMN
									   " OPERATOR(pg_catalog.=) u.v"
									   " AND e.series OPERATOR(pg_catalog.=) CAST(u.s AS pg_catalog.jsonb)"
									   " AND e.labels OPERATOR(pg_catalog.=) CAST(u.l AS pg_catalog.jsonb))",
									   table, table),
							  4, types, args, NULL, false, 0) != SPI_OK_INSERT)
		elog(ERROR, "promread could not insert the exemplars of metric \"%s\"",
			 entry->metric);
	relation_close(rel, NoLock);
	return nexemplars;
}

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
 * 4. Each metric's samples are written as the COPY command writes them,
 *    from a stream of COPY's binary format built here: in batches, with
 *    the caller's INSERT privilege checked, triggers, constraints and
 *    partition routing.  What COPY cannot write (views, foreign tables,
 *    tables under row-level security, whose WITH CHECK policies COPY does
 *    not apply, value columns other than float8, labels of types whose
 *    binary input is not their text) gets one INSERT ... SELECT FROM ROWS
 *    FROM (unnest($1), unnest($2), ...) through SPI instead, the arrays
 *    bound as parameters.  Times become the time column's type (ms since
 *    the Unix epoch for int8); values keep their bits (a stale marker stays
 *    one) and are assigned to the value column's type; label values are
 *    assigned to their columns' types (enum labels must be labels of the
 *    enum).
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
#include "access/relation.h"
#include "access/sysattr.h"
#include "catalog/pg_type.h"
#include "commands/copy.h"
#include "common/hashfn.h"
#include "executor/executor.h"
#include "executor/spi.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "parser/parse_relation.h"
#include "port/pg_bswap.h"
#include "promread.h"
#include "proto/remote.pb-c.h"
#include "storage/lmgr.h"
#include "tcop/utility.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/rls.h"
#include "utils/syscache.h"
#include "utils/timestamp.h"

PG_FUNCTION_INFO_V1(prom_remote_write);

/* The columns of a table that remote write creates, besides its labels. */
#define CREATED_TIME_COLUMN		"ts"
#define CREATED_VALUE_COLUMN	"value"

/* How many times to try the lock that adding label columns needs, 10 ms apart. */
#define NEW_COLUMN_LOCK_ATTEMPTS	100

/* Labels that get an index (label, ts) in a table remote write creates. */
static const char *const indexed_labels[] = {"instance", "job"};

/* The series of one metric in a request, and the labels they carry. */
typedef struct MetricGroup
{
	const char *metric;
	PromWriteSeries **series;
	int			nseries;
	const char **labels;		/* distinct label names, sorted */
	int			nlabels;
} MetricGroup;

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
collect_labels(MetricGroup *group)
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

/* The position of a label among a registration's label columns, or -1. */
static int
entry_label_index(const PromMetricEntry *entry, const char *label)
{
	int			i;

	for (i = 0; i < entry->nlabels; i++)
		if (strcmp(entry->label_columns[i], label) == 0)
			return i;
	return -1;
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
	relation = quote_qualified_identifier(get_namespace_name(get_rel_namespace(current->relid)),
										  get_rel_name(current->relid));

	columns = palloc(sizeof(char *) * (current->nlabels + nlabels));
	ncolumns = current->nlabels;
	for (i = 0; i < current->nlabels; i++)
		columns[i] = current->label_columns[i];
	for (i = 0; i < nlabels; i++)
	{
		if (entry_label_index(current, labels[i]) >= 0)
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
metric_entry(const MetricGroup *group)
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
		if (entry_label_index(entry, group->labels[i]) < 0 &&
			(!entry->created_by_write || label_fits_created_table(group->labels[i])))
			missing[nmissing++] = group->labels[i];
	if (nmissing > 0 && entry->created_by_write)
		entry = add_label_columns(entry, missing, nmissing);

	for (i = 0; i < group->nlabels; i++)
		if (entry_label_index(entry, group->labels[i]) < 0 &&
			promread_write_unknown_labels == PROM_WRITE_ERROR)
			ereport(ERROR,
					(errcode(ERRCODE_UNDEFINED_COLUMN),
					 errmsg("metric \"%s\" has no column for label \"%s\"",
							group->metric, group->labels[i]),
					 errhint("Add the column and register the relation again, or set promread.write_unknown_labels to drop.")));
	return entry;
}

/*
 * Microseconds since the PostgreSQL epoch of a sample's time in ms since
 * the Unix epoch; 22008 outside PostgreSQL's range of timestamps.
 */
static int64
sample_timestamp(int64 ms, const char *metric)
{
	int64		us;

	if (pg_sub_s64_overflow(ms, PROM_EPOCH_DIFF_MS, &us) ||
		pg_mul_s64_overflow(us, 1000, &us) || !IS_VALID_TIMESTAMP(us))
		ereport(ERROR,
				(errcode(ERRCODE_DATETIME_VALUE_OUT_OF_RANGE),
				 errmsg("a sample of metric \"%s\" has a time out of range: %lld ms",
						metric, (long long) ms)));
	return us;
}

/* The base type of a relation's column, which must exist. */
static Oid
column_base_type(Oid relid, const char *column, const char *metric)
{
	AttrNumber	attnum = get_attnum(relid, column);

	if (attnum == InvalidAttrNumber)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_COLUMN),
				 errmsg("the relation of metric \"%s\" has no column \"%s\"",
						metric, column)));
	return getBaseType(get_atttype(relid, attnum));
}

/* The columns of one INSERT: $1 times, $2 values, then label arrays. */
typedef struct InsertColumns
{
	int			nparams;
	int		   *param_of_label; /* per label of the group; -1 without column */
	Datum	  **values;			/* per parameter, one per row */
	bool	  **nulls;
	int64		nrows;
} InsertColumns;

/*
 * Lay out a group's samples as columns: a time and a value per row, and per
 * label with a column, its value (one text per series, shared by the
 * series' rows) or NULL.
 */
static void
fill_columns(const MetricGroup *group, const PromMetricEntry *entry,
			 Oid time_type, InsertColumns *cols)
{
	int64		row = 0;
	int			i;
	int			j;

	cols->param_of_label = palloc(sizeof(int) * Max(group->nlabels, 1));
	cols->nparams = 2;
	for (i = 0; i < group->nlabels; i++)
		cols->param_of_label[i] = entry_label_index(entry, group->labels[i]) >= 0 ?
			cols->nparams++ : -1;
	cols->values = palloc(sizeof(Datum *) * cols->nparams);
	cols->nulls = palloc(sizeof(bool *) * cols->nparams);
	for (j = 0; j < cols->nparams; j++)
	{
		cols->values[j] = palloc_extended(sizeof(Datum) * cols->nrows, MCXT_ALLOC_HUGE);
		cols->nulls[j] = palloc_extended(sizeof(bool) * cols->nrows,
										 MCXT_ALLOC_HUGE | MCXT_ALLOC_ZERO);
	}

	for (i = 0; i < group->nseries; i++)
	{
		const PromWriteSeries *series = group->series[i];
		int64		first = row;
		int			l = 0;
		int			s;

		CHECK_FOR_INTERRUPTS();
		for (s = 0; s < series->nsamples; s++, row++)
		{
			const Prometheus__Sample *sample = series->samples[s];

			cols->values[0][row] =
				Int64GetDatum(time_type == INT8OID ? sample->timestamp :
							  sample_timestamp(sample->timestamp, entry->metric));
			cols->values[1][row] = Float8GetDatum(sample->value);
		}
		/* the series' labels and the group's are both sorted by name */
		for (j = 0; j < group->nlabels; j++)
		{
			int			param = cols->param_of_label[j];
			const PromWriteLabel *label = NULL;

			if (l < series->nlabels &&
				strcmp(series->labels[l].name, group->labels[j]) == 0)
				label = &series->labels[l++];
			if (param < 0)
				continue;
			if (label == NULL)
			{
				memset(cols->nulls[param] + first, true, series->nsamples);
				continue;
			}
			{
				Datum		text = PointerGetDatum(cstring_to_text_with_len(label->value,
																			label->value_len));

				for (s = 0; s < series->nsamples; s++)
					cols->values[param][first + s] = text;
			}
		}
	}
}

/* Bind an array of a column's Datums of a type as parameter $k+1. */
static void
bind_array(const InsertColumns *cols, int k, Oid element_type, Oid *types,
		   Datum *args)
{
	int16		typlen;
	bool		typbyval;
	char		typalign;
	int			dims[1] = {(int) cols->nrows};
	int			lbs[1] = {1};

	get_typlenbyvalalign(element_type, &typlen, &typbyval, &typalign);
	types[k] = get_array_type(element_type);
	args[k] = PointerGetDatum(construct_md_array(cols->values[k], cols->nulls[k],
												 1, dims, lbs, element_type,
												 typlen, typbyval, typalign));
}

/*
 * The INSERT of a group's columns into the metric's relation: INSERT INTO
 * rel (time, value, labels...) SELECT u.t, u.v, u.l3, ... FROM ROWS FROM
 * (unnest($1), unnest($2), ...) AS u(t, v, l3, ...), enum labels cast.
 */
static char *
insert_statement(const MetricGroup *group, const PromMetricEntry *entry,
				 const InsertColumns *cols)
{
	StringInfoData insert;
	StringInfoData select;
	StringInfoData aliases;
	int			i;

	initStringInfo(&insert);
	initStringInfo(&select);
	initStringInfo(&aliases);
	appendStringInfo(&insert, "INSERT INTO %s (%s, %s",
					 quote_qualified_identifier(get_namespace_name(get_rel_namespace(entry->relid)),
												get_rel_name(entry->relid)),
					 quote_identifier(entry->time_column),
					 quote_identifier(entry->value_column));
	appendStringInfoString(&select, ") SELECT u.t, u.v");
	appendStringInfoString(&aliases, ") AS u(t, v");
	for (i = 0; i < group->nlabels; i++)
	{
		int			param = cols->param_of_label[i];
		Oid			type;

		if (param < 0)
			continue;
		type = column_base_type(entry->relid, group->labels[i], entry->metric);
		appendStringInfo(&insert, ", %s", quote_identifier(group->labels[i]));
		if (type_is_enum(type))
			appendStringInfo(&select, ", CAST(u.l%d AS %s)", param,
							 format_type_be_qualified(type));
		else
			appendStringInfo(&select, ", u.l%d", param);
		appendStringInfo(&aliases, ", l%d", param);
	}
	appendStringInfo(&insert, "%s FROM ROWS FROM (", select.data);
	for (i = 0; i < cols->nparams; i++)
		appendStringInfo(&insert, "%spg_catalog.unnest($%d)", i > 0 ? ", " : "", i + 1);
	appendStringInfo(&insert, "%s)", aliases.data);
	return insert.data;
}

/* The COPY stream that copy_source hands to COPY, and how much it read. */
static const StringInfoData *copy_stream;
static int	copy_stream_read;

/* COPY's data source callback: the next bytes of copy_stream. */
static int
copy_source(void *outbuf, int minread, int maxread)
{
	int			n = Min(maxread, copy_stream->len - copy_stream_read);

	memcpy(outbuf, copy_stream->data + copy_stream_read, n);
	copy_stream_read += n;
	return n;
}

/* Append a field of COPY's binary format: its length, then its bytes. */
static inline void
append_field(StringInfo out, const void *data, int len)
{
	uint32		be_len = pg_hton32((uint32) len);

	appendBinaryStringInfoNT(out, (const char *) &be_len, 4);
	appendBinaryStringInfoNT(out, (const char *) data, len);
}

/*
 * Can the group be written by COPY rather than by INSERT?  When the
 * relation is a table (COPY writes rows in batches, which INSERT does not),
 * row-level security does not apply to the caller (COPY FROM cannot check
 * its policies), the value column is float8 and every label column one
 * whose binary input reads the label's text (text, varchar, name, enum).
 */
static bool
copy_applies(const MetricGroup *group, const PromMetricEntry *entry, Relation rel)
{
	char		relkind = rel->rd_rel->relkind;
	int			i;

	if ((relkind != RELKIND_RELATION && relkind != RELKIND_PARTITIONED_TABLE) ||
		check_enable_rls(entry->relid, InvalidOid, false) == RLS_ENABLED ||
		get_atttype(entry->relid, get_attnum(entry->relid, entry->value_column)) != FLOAT8OID)
		return false;
	for (i = 0; i < group->nlabels; i++)
	{
		AttrNumber	attnum = get_attnum(entry->relid, group->labels[i]);
		Oid			type;

		if (entry_label_index(entry, group->labels[i]) < 0)
			continue;
		if (attnum == InvalidAttrNumber)
			return false;
		type = get_atttype(entry->relid, attnum);
		if (type != TEXTOID && type != VARCHAROID && type != NAMEOID && !type_is_enum(type))
			return false;
	}
	return true;
}

/*
 * The group's rows in COPY's binary format: time, value, then each label
 * that has a column (has_column), in the group's order of labels.
 */
static void
copy_rows(const MetricGroup *group, const PromMetricEntry *entry, Oid time_type,
		  const bool *has_column, int ncolumns, StringInfo out)
{
	static const char header[] = "PGCOPY\n\377\r\n\0\0\0\0\0\0\0\0\0";
	uint16		be_ncolumns = pg_hton16((uint16) ncolumns);
	uint16		trailer = 0xFFFF;
	StringInfoData labels;
	int			i;

	initStringInfo(&labels);
	appendBinaryStringInfo(out, header, sizeof(header) - 1);
	for (i = 0; i < group->nseries; i++)
	{
		const PromWriteSeries *series = group->series[i];
		int			l = 0;
		int			j;
		int			s;

		CHECK_FOR_INTERRUPTS();
		/* the series' label fields, once for all its rows */
		resetStringInfo(&labels);
		for (j = 0; j < group->nlabels; j++)
		{
			const PromWriteLabel *label = NULL;
			uint32		null_len = pg_hton32((uint32) -1);

			if (l < series->nlabels && strcmp(series->labels[l].name, group->labels[j]) == 0)
				label = &series->labels[l++];
			if (!has_column[j])
				continue;
			if (label == NULL)
				appendBinaryStringInfo(&labels, (const char *) &null_len, 4);
			else
				append_field(&labels, label->value, label->value_len);
		}
		for (s = 0; s < series->nsamples; s++)
		{
			const Prometheus__Sample *sample = series->samples[s];
			int64		time = time_type == INT8OID ? sample->timestamp :
				sample_timestamp(sample->timestamp, entry->metric);
			uint64		be_time = pg_hton64((uint64) time);
			uint64		be_value;
			uint64		bits;

			memcpy(&bits, &sample->value, sizeof(bits));
			be_value = pg_hton64(bits);
			enlargeStringInfo(out, 2 + 24 + labels.len);
			appendBinaryStringInfoNT(out, (const char *) &be_ncolumns, 2);
			append_field(out, &be_time, 8);
			append_field(out, &be_value, 8);
			appendBinaryStringInfoNT(out, labels.data, labels.len);
		}
	}
	appendBinaryStringInfo(out, (const char *) &trailer, 2);
}

/*
 * Write the group with COPY FROM, as the COPY command would: INSERT
 * privilege on its columns checked first, then rows inserted in batches,
 * with triggers, constraints, indexes and partition routing.
 */
static void
copy_group(const MetricGroup *group, const PromMetricEntry *entry, Relation rel,
		   Oid time_type)
{
	ParseState *pstate = make_parsestate(NULL);
	ParseNamespaceItem *nsitem;
	List	   *attnames;
	bool	   *has_column = palloc(sizeof(bool) * Max(group->nlabels, 1));
	ListCell   *lc;
	StringInfoData stream;
	CopyFromState cstate;
	int			i;

	attnames = list_make2(makeString(entry->time_column), makeString(entry->value_column));
	for (i = 0; i < group->nlabels; i++)
	{
		has_column[i] = entry_label_index(entry, group->labels[i]) >= 0;
		if (has_column[i])
			attnames = lappend(attnames, makeString((char *) group->labels[i]));
	}

	nsitem = addRangeTableEntryForRelation(pstate, rel, RowExclusiveLock, NULL,
										   false, false);
	nsitem->p_rte->requiredPerms = ACL_INSERT;
	foreach(lc, attnames)
		nsitem->p_rte->insertedCols =
			bms_add_member(nsitem->p_rte->insertedCols,
						   get_attnum(entry->relid, strVal(lfirst(lc))) -
						   FirstLowInvalidHeapAttributeNumber);
	ExecCheckRTPerms(pstate->p_rtable, true);

	initStringInfo(&stream);
	copy_rows(group, entry, time_type, has_column, list_length(attnames), &stream);
	copy_stream = &stream;
	copy_stream_read = 0;
	cstate = BeginCopyFrom(pstate, rel, NULL, NULL, false, copy_source, attnames,
						   list_make1(makeDefElem("format", (Node *) makeString("binary"), -1)));
	CopyFrom(cstate);
	EndCopyFrom(cstate);
	copy_stream = NULL;
	free_parsestate(pstate);
	CommandCounterIncrement();
}

/*
 * Insert the group with INSERT ... SELECT FROM ROWS FROM (unnest($1), ...)
 * through SPI: for what COPY cannot write (views, foreign tables, tables
 * under row-level security, values or labels of other types).
 */
static void
insert_group(const MetricGroup *group, const PromMetricEntry *entry, Oid time_type,
			 int64 nrows)
{
	InsertColumns cols = {0};
	Oid		   *types;
	Datum	   *args;
	int			i;

	cols.nrows = nrows;
	fill_columns(group, entry, time_type, &cols);
	types = palloc(sizeof(Oid) * cols.nparams);
	args = palloc(sizeof(Datum) * cols.nparams);
	bind_array(&cols, 0, time_type, types, args);
	bind_array(&cols, 1, FLOAT8OID, types, args);
	for (i = 2; i < cols.nparams; i++)
		bind_array(&cols, i, TEXTOID, types, args);
	if (SPI_execute_with_args(insert_statement(group, entry, &cols), cols.nparams,
							  types, args, NULL, false, 0) != SPI_OK_INSERT)
		elog(ERROR, "promread could not insert the samples of metric \"%s\"",
			 entry->metric);
}

/*
 * Write the samples of a group's series into its registered relation,
 * locked first and checked to still exist, by COPY where it applies.
 */
static void
write_group(const MetricGroup *group, const PromMetricEntry *entry)
{
	Relation	rel;
	Oid			time_type;
	int64		nrows = 0;
	int			i;

	rel = try_relation_open(entry->relid, RowExclusiveLock);
	if (rel == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("the relation of metric \"%s\" no longer exists",
						entry->metric)));
	time_type = column_base_type(entry->relid, entry->time_column, entry->metric);
	if (time_type != TIMESTAMPTZOID && time_type != TIMESTAMPOID && time_type != INT8OID)
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("time column \"%s\" of metric \"%s\" has type %s",
						entry->time_column, entry->metric, format_type_be(time_type)),
				 errhint("Register the metric again.")));
	/* a value column dropped since the registration: 42703 */
	(void) column_base_type(entry->relid, entry->value_column, entry->metric);

	for (i = 0; i < group->nseries; i++)
		nrows += group->series[i]->nsamples;
	if (nrows > PG_INT32_MAX)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("remote write request has too many samples of metric \"%s\"",
						entry->metric)));
	if (nrows > 0)
	{
		if (copy_applies(group, entry, rel))
			copy_group(group, entry, rel, time_type);
		else
			insert_group(group, entry, time_type, nrows);
	}
	relation_close(rel, NoLock);
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
		MetricGroup group;

		group.metric = sorted[i]->metric;
		group.series = &sorted[i];
		group.nseries = 0;
		while (i < request->nseries && strcmp(sorted[i]->metric, group.metric) == 0)
		{
			group.nseries++;
			i++;
		}
		collect_labels(&group);
		write_group(&group, metric_entry(&group));
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

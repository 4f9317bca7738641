/*-------------------------------------------------------------------------
 *
 * write_chunks.c
 *	  Writing the samples of one metric of a remote-write request into a
 *	  metric in chunk storage (docs/chunk-storage.md): each series resolved
 *	  to its row of m#series, its samples appended to m#head.
 *
 * 1. The metric's series and head tables are locked and checked to still
 *    be the ones its registration and storage entry name (another session
 *    may have dropped them or registered the metric again: then nothing is
 *    written, and remote_write.c looks the metric up again).  Writing into
 *    them must not run an untrusted role's code (write_trust.c), and the
 *    writer needs SELECT and INSERT on m#series's columns and INSERT on
 *    m#head's, checked before anything is written (42501), whether its
 *    series are new or not: a role writes into a metric it has the rights
 *    on, as with the relation of a metric in row storage.
 * 2. A series' labels_hash is the xxHash64 of its labels (never __name__,
 *    sorted by name), each as name 0xff value 0xff.  The request's
 *    distinct series (equal label sets sent twice are one), those not
 *    cached (5.), are looked up with one statement, WHERE labels_hash =
 *    ANY($1); a row is a series' when its label columns and its jsonb of
 *    overflow labels hold exactly the series' labels.  Labels that have
 *    neither a column nor an overflow column (promread.write_unknown_labels
 *    = drop) are not the series' stored labels, and count neither in the
 *    hash nor in the comparison.
 * 3. The series not found are added under SHARE ROW EXCLUSIVE on m#series,
 *    which writers of new series take in turn (readers and writers of
 *    known series take weaker locks, which it does not wait for), after
 *    looking them up again with the latest snapshot: a series another
 *    writer committed meanwhile is found then, whatever the transaction's
 *    isolation, so a label set has one row.  INSERT ... RETURNING
 *    series_id gives their ids in the order of the rows inserted.
 * 4. The samples go to m#head as (series_id, t, value) rows, t in ms since
 *    the Unix epoch, by COPY in binary form (write_rows.c's PromWriteCopy);
 *    a time outside PostgreSQL's range of timestamps is refused (22008) as
 *    for row storage, since the metric's view reads t as a timestamptz.
 *    Values keep their bits; native histograms go to a prom_histogram
 *    value column, the float staleness markers that end histogram series
 *    as stale histograms (write_rows.c).  m#chunks is never written here.
 *
 * 5. A backend keeps the ids it resolved between requests (series_cache.c:
 *    once committed, dropped when m#series is truncated, altered, dropped,
 *    or its rows updated or deleted): the distinct series it holds are not
 *    looked up.  It is used only after the privileges above are checked,
 *    and not for a writer under row-level security on m#series.
 * 6. Rows are appended straight to the table they belong in (a window's
 *    partition of m#head, its default partition, or m#late), as COPY
 *    appends a row once it has routed it: table_multi_insert of up to
 *    HEAD_APPEND_ROWS rows, then each row's index entries.  This skips
 *    what COPY does a row and a statement besides (its input format,
 *    routing, a slot made for each row buffered, the partition's indexes
 *    opened again each statement), and is done only where COPY would run
 *    nothing else: a plain table of exactly (series_id, t, value float8),
 *    without triggers (nor statement triggers on m#head), check
 *    constraints, defaults, row-level security, or an index checked later
 *    than its insertion (deferrable unique, exclusion), written with
 *    the caller's INSERT privilege on m#head's (or m#late's) columns.
 *    Everything else, histograms included, goes by COPY in binary form, in
 *    COPYs of at most HEAD_COPY_ROWS: COPY pins the table's tuple
 *    descriptor once for each slot it buffers (up to 1,000), and
 *    PostgreSQL 15's resource owner finds equal pins among many in time
 *    that grows with their number (the slots of an append hold an
 *    unpinned copy of the descriptor).
 * 7. m#head is partitioned by 2-hour window behind a watermark (head.c's
 *    header gives the argument): the partition of each window the rows
 *    touch is locked, in ascending order of OID (ROW EXCLUSIVE), and those
 *    alone, so that a compaction of other windows does not hold the write
 *    up; then the watermark is read with the latest snapshot; rows before it go to
 *    m#late (which the writer needs INSERT on then), the others to m#head.
 *    A metric whose layout was made by hand, without m#late, has all its
 *    rows written to m#head.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <xxhash.h>

#include "access/relation.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/sysattr.h"
#include "catalog/pg_class.h"
#include "catalog/pg_index.h"
#include "catalog/pg_type.h"
#include "executor/executor.h"
#include "executor/spi.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "parser/parse_relation.h"
#include "partitioning/partdesc.h"
#include "promread.h"
#include "remote_write.h"
#include "storage/lmgr.h"
#include "storage/storage.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/fmgrprotos.h"
#include "utils/json.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/rls.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"

/* The columns of m#series and m#head besides the labels. */
#define SERIES_ID_COLUMN		"series_id"
#define SERIES_HASH_COLUMN		"labels_hash"
#define HEAD_TIME_COLUMN		"t"
#define HEAD_VALUE_COLUMN		"value"

/* The most rows of one COPY into m#head (see the header). */
#define HEAD_COPY_ROWS			64

/* The most rows of one table_multi_insert (see the header). */
#define HEAD_APPEND_ROWS		100

/* A distinct series of the request, its stored labels and its row. */
typedef struct ChunkSeries
{
	const PromWriteSeries *series;	/* the first of the request's equal ones */
	uint64		hash;			/* labels_hash */
	char	   *stored;			/* labels_hash's input: the stored labels */
	int			stored_len;
	Datum		overflow;		/* jsonb of its overflow labels */
	bool		has_overflow;	/* overflow is not NULL */
	bool		found;			/* series_id is known */
	bool		cached;			/* ... from series_cache.c */
	int64		series_id;
} ChunkSeries;

/* What a metric's write needs: its tables, columns and distinct series. */
typedef struct ChunkWrite
{
	const PromMetricEntry *entry;
	char	   *series_table;	/* quoted, qualified */
	ChunkSeries *distinct;		/* sorted by hash */
	int			ndistinct;
	int		   *distinct_of;	/* per series of the group: its distinct */
} ChunkWrite;

/*
 * Is a label of a series stored: given a column or kept among the overflow
 * labels (else promread.write_unknown_labels dropped it)?
 */
static inline bool
label_is_stored(const PromMetricEntry *entry, const PromWriteLabel *label)
{
	return entry->overflow_column != NULL ||
		PromCatalogLabelIndex(entry, label->name) >= 0;
}

/*
 * The labels_hash of a series' stored labels: xxHash64 of each, in order of
 * name, as name 0xff value 0xff.
 */
static uint64
labels_hash(const PromMetricEntry *entry, const PromWriteSeries *series,
			StringInfo scratch)
{
	int			i;

	resetStringInfo(scratch);
	for (i = 0; i < series->nlabels; i++)
	{
		const PromWriteLabel *label = &series->labels[i];

		if (!label_is_stored(entry, label))
			continue;
		appendStringInfoString(scratch, label->name);
		appendStringInfoChar(scratch, '\xff');
		appendBinaryStringInfo(scratch, label->value, label->value_len);
		appendStringInfoChar(scratch, '\xff');
	}
	return (uint64) XXH64(scratch->data, scratch->len, 0);
}

/* Have two series the same stored labels? */
static bool
same_stored_labels(const PromMetricEntry *entry, const PromWriteSeries *a,
				   const PromWriteSeries *b)
{
	int			i = 0;
	int			j = 0;

	for (;;)
	{
		while (i < a->nlabels && !label_is_stored(entry, &a->labels[i]))
			i++;
		while (j < b->nlabels && !label_is_stored(entry, &b->labels[j]))
			j++;
		if (i == a->nlabels || j == b->nlabels)
			return i == a->nlabels && j == b->nlabels;
		if (strcmp(a->labels[i].name, b->labels[j].name) != 0 ||
			a->labels[i].value_len != b->labels[j].value_len ||
			memcmp(a->labels[i].value, b->labels[j].value, a->labels[i].value_len) != 0)
			return false;
		i++;
		j++;
	}
}

/* The value of a series' label, or NULL: the series lacks it. */
static const PromWriteLabel *
series_label(const PromWriteSeries *series, const char *name)
{
	int			lo = 0;
	int			hi = series->nlabels - 1;

	/* a series' labels are sorted by name */
	while (lo <= hi)
	{
		int			mid = (lo + hi) / 2;
		int			cmp = strcmp(series->labels[mid].name, name);

		if (cmp == 0)
			return &series->labels[mid];
		if (cmp < 0)
			lo = mid + 1;
		else
			hi = mid - 1;
	}
	return NULL;
}

/* The jsonb of a series' overflow labels (has_overflow false: none). */
static void
overflow_labels(const PromMetricEntry *entry, ChunkSeries *cs, StringInfo scratch)
{
	StringInfoData json;
	int			i;

	cs->has_overflow = false;
	if (entry->overflow_column == NULL)
		return;
	initStringInfo(&json);
	for (i = 0; i < cs->series->nlabels; i++)
	{
		const PromWriteLabel *label = &cs->series->labels[i];

		if (PromCatalogLabelIndex(entry, label->name) >= 0)
			continue;
		appendStringInfoChar(&json, json.len == 0 ? '{' : ',');
		escape_json(&json, label->name);
		appendStringInfoChar(&json, ':');
		resetStringInfo(scratch);
		appendBinaryStringInfo(scratch, label->value, label->value_len);
		escape_json(&json, scratch->data);
	}
	if (json.len == 0)
		return;
	appendStringInfoChar(&json, '}');
	cs->overflow = DirectFunctionCall1(jsonb_in, CStringGetDatum(json.data));
	cs->has_overflow = true;
}

/* qsort comparator of distinct series by hash. */
static int
chunk_series_cmp(const void *a, const void *b)
{
	uint64		ha = ((const ChunkSeries *) a)->hash;
	uint64		hb = ((const ChunkSeries *) b)->hash;

	return ha < hb ? -1 : ha > hb ? 1 : 0;
}

/*
 * The distinct series of a group, sorted by hash, and the distinct one of
 * each of the group's series.
 */
static void
distinct_series(const PromWriteGroup *group, ChunkWrite *w)
{
	StringInfoData scratch;
	ChunkSeries *all = palloc(sizeof(ChunkSeries) * Max(group->nseries, 1));
	uint64	   *hashes = palloc(sizeof(uint64) * Max(group->nseries, 1));
	int			i;

	initStringInfo(&scratch);
	for (i = 0; i < group->nseries; i++)
	{
		CHECK_FOR_INTERRUPTS();
		hashes[i] = labels_hash(w->entry, group->series[i], &scratch);
		all[i].series = group->series[i];
		all[i].hash = hashes[i];
		all[i].stored = palloc(Max(scratch.len, 1));
		memcpy(all[i].stored, scratch.data, scratch.len);
		all[i].stored_len = scratch.len;
		all[i].found = false;
		all[i].cached = false;
		all[i].series_id = 0;
	}
	qsort(all, group->nseries, sizeof(ChunkSeries), chunk_series_cmp);

	w->distinct = palloc(sizeof(ChunkSeries) * Max(group->nseries, 1));
	w->ndistinct = 0;
	for (i = 0; i < group->nseries; i++)
	{
		int			d;

		/* an equal series is among those of equal hash kept so far */
		for (d = w->ndistinct - 1; d >= 0 && w->distinct[d].hash == all[i].hash; d--)
			if (same_stored_labels(w->entry, w->distinct[d].series, all[i].series))
				break;
		if (d >= 0 && w->distinct[d].hash == all[i].hash)
			continue;
		w->distinct[w->ndistinct] = all[i];
		overflow_labels(w->entry, &w->distinct[w->ndistinct], &scratch);
		w->ndistinct++;
	}

	/* each series' distinct one: among those of its hash */
	w->distinct_of = palloc(sizeof(int) * Max(group->nseries, 1));
	for (i = 0; i < group->nseries; i++)
	{
		ChunkSeries key;
		ChunkSeries *match;
		int			d;

		key.hash = hashes[i];
		match = bsearch(&key, w->distinct, w->ndistinct, sizeof(ChunkSeries),
						chunk_series_cmp);
		Assert(match != NULL);
		d = match - w->distinct;
		while (d > 0 && w->distinct[d - 1].hash == key.hash)
			d--;
		while (!same_stored_labels(w->entry, w->distinct[d].series, group->series[i]))
			d++;
		w->distinct_of[i] = d;
	}
}

/*
 * Does a row of m#series (the lookup's: series_id, labels_hash, the label
 * columns in the registration's order, then the overflow labels) hold
 * exactly a series' stored labels?
 */
static bool
row_matches(const ChunkWrite *w, const ChunkSeries *cs, HeapTuple tuple,
			TupleDesc desc)
{
	const PromMetricEntry *entry = w->entry;
	bool		isnull;
	Datum		datum;
	int			k;

	for (k = 0; k < entry->nlabels; k++)
	{
		const PromWriteLabel *label = series_label(cs->series, entry->label_names[k]);
		text	   *value;

		datum = SPI_getbinval(tuple, desc, k + 3, &isnull);
		if (isnull || label == NULL)
		{
			if (isnull != (label == NULL))
				return false;
			continue;
		}
		value = DatumGetTextPP(datum);
		if (VARSIZE_ANY_EXHDR(value) != (Size) label->value_len ||
			memcmp(VARDATA_ANY(value), label->value, label->value_len) != 0)
			return false;
	}
	if (entry->overflow_column == NULL)
		return true;
	datum = SPI_getbinval(tuple, desc, entry->nlabels + 3, &isnull);
	if (isnull || !cs->has_overflow)
		return isnull == !cs->has_overflow;
	return DatumGetBool(DirectFunctionCall2(jsonb_eq, datum, cs->overflow));
}

/* The label columns and the overflow column of m#series, quoted, for SQL. */
static void
append_label_columns(StringInfo sql, const PromMetricEntry *entry, const char *prefix)
{
	int			k;

	for (k = 0; k < entry->nlabels; k++)
		appendStringInfo(sql, ", %s%s", prefix, quote_identifier(entry->label_columns[k]));
	if (entry->overflow_column != NULL)
		appendStringInfo(sql, ", %s%s", prefix, quote_identifier(entry->overflow_column));
}

/*
 * Look up the distinct series not found yet, in one statement: with the
 * statement's own snapshot (latest false), or the latest one.  Returns how
 * many remain not found.
 */
static int
look_up_series(ChunkWrite *w, bool latest)
{
	StringInfoData sql;
	Datum	   *hashes = palloc(sizeof(Datum) * Max(w->ndistinct, 1));
	int			nhashes = 0;
	Oid			type = INT8ARRAYOID;
	Datum		arg;
	SPIPlanPtr	plan;
	uint64		r;
	int			missing = 0;
	int			i;

	for (i = 0; i < w->ndistinct; i++)
		if (!w->distinct[i].found)
			hashes[nhashes++] = Int64GetDatum((int64) w->distinct[i].hash);
	if (nhashes == 0)
		return 0;
	arg = PointerGetDatum(construct_array(hashes, nhashes, INT8OID, 8, FLOAT8PASSBYVAL,
										  TYPALIGN_DOUBLE));

	initStringInfo(&sql);
	appendStringInfoString(&sql, "SELECT " SERIES_ID_COLUMN ", " SERIES_HASH_COLUMN);
	append_label_columns(&sql, w->entry, "");
	appendStringInfo(&sql, " FROM %s WHERE " SERIES_HASH_COLUMN
					 " OPERATOR(pg_catalog.=) ANY ($1)", w->series_table);
	plan = SPI_prepare(sql.data, 1, &type);
	if (plan == NULL)
		elog(ERROR, "promread could not prepare: %s", sql.data);
	if (SPI_execute_snapshot(plan, &arg, NULL,
							 latest ? GetLatestSnapshot() : InvalidSnapshot,
							 InvalidSnapshot, false, false, 0) != SPI_OK_SELECT)
		elog(ERROR, "promread could not look up the series of metric \"%s\"",
			 w->entry->metric);

	for (r = 0; r < SPI_processed; r++)
	{
		HeapTuple	tuple = SPI_tuptable->vals[r];
		TupleDesc	desc = SPI_tuptable->tupdesc;
		bool		isnull;
		ChunkSeries key;
		ChunkSeries *match;
		int			d;

		CHECK_FOR_INTERRUPTS();
		key.hash = (uint64) DatumGetInt64(SPI_getbinval(tuple, desc, 2, &isnull));
		match = bsearch(&key, w->distinct, w->ndistinct, sizeof(ChunkSeries),
						chunk_series_cmp);
		if (match == NULL)
			continue;
		d = match - w->distinct;
		while (d > 0 && w->distinct[d - 1].hash == key.hash)
			d--;
		for (; d < w->ndistinct && w->distinct[d].hash == key.hash; d++)
			if (!w->distinct[d].found && row_matches(w, &w->distinct[d], tuple, desc))
			{
				w->distinct[d].found = true;
				w->distinct[d].series_id = DatumGetInt64(SPI_getbinval(tuple, desc, 1,
																	   &isnull));
				break;
			}
	}
	SPI_freetuptable(SPI_tuptable);
	SPI_freeplan(plan);
	for (i = 0; i < w->ndistinct; i++)
		if (!w->distinct[i].found)
			missing++;
	return missing;
}

/*
 * Insert the distinct series still not found into m#series, with INSERT
 * ... SELECT FROM ROWS FROM (unnest($1), ...) RETURNING series_id: the
 * hashes, a text array per label column and one of jsonb overflow labels.
 */
static void
insert_series(ChunkWrite *w, int nmissing)
{
	const PromMetricEntry *entry = w->entry;
	int			nparams = 1 + entry->nlabels + (entry->overflow_column != NULL ? 1 : 0);
	Datum	  **values = palloc(sizeof(Datum *) * nparams);
	bool	  **nulls = palloc(sizeof(bool *) * nparams);
	Oid		   *types = palloc(sizeof(Oid) * nparams);
	Datum	   *args = palloc(sizeof(Datum) * nparams);
	char	   *argnulls = palloc(nparams + 1);
	int		   *missing = palloc(sizeof(int) * nmissing);
	StringInfoData sql;
	int			dims[1] = {nmissing};
	int			lbs[1] = {1};
	int			n = 0;
	int			p;
	int			i;

	for (p = 0; p < nparams; p++)
	{
		values[p] = palloc(sizeof(Datum) * nmissing);
		nulls[p] = palloc0(sizeof(bool) * nmissing);
		argnulls[p] = ' ';
	}
	argnulls[nparams] = '\0';
	for (i = 0; i < w->ndistinct; i++)
	{
		const ChunkSeries *cs = &w->distinct[i];
		int			k;

		if (cs->found)
			continue;
		values[0][n] = Int64GetDatum((int64) cs->hash);
		for (k = 0; k < entry->nlabels; k++)
		{
			const PromWriteLabel *label = series_label(cs->series, entry->label_names[k]);

			if (label == NULL)
				nulls[1 + k][n] = true;
			else
				values[1 + k][n] = PointerGetDatum(cstring_to_text_with_len(label->value,
																			label->value_len));
		}
		if (entry->overflow_column != NULL)
		{
			values[nparams - 1][n] = cs->overflow;
			nulls[nparams - 1][n] = !cs->has_overflow;
		}
		missing[n++] = i;
	}
	Assert(n == nmissing);

	initStringInfo(&sql);
	appendStringInfo(&sql, "INSERT INTO %s (" SERIES_HASH_COLUMN, w->series_table);
	append_label_columns(&sql, entry, "");
	appendStringInfoString(&sql, ") SELECT u.h");
	for (p = 1; p < nparams; p++)
		appendStringInfo(&sql, ", u.l%d", p);
	appendStringInfoString(&sql, " FROM ROWS FROM (");
	for (p = 0; p < nparams; p++)
		appendStringInfo(&sql, "%spg_catalog.unnest($%d)", p > 0 ? ", " : "", p + 1);
	appendStringInfoString(&sql, ") AS u(h");
	for (p = 1; p < nparams; p++)
		appendStringInfo(&sql, ", l%d", p);
	appendStringInfoString(&sql, ") RETURNING " SERIES_ID_COLUMN);

	for (p = 0; p < nparams; p++)
	{
		Oid			element = p == 0 ? INT8OID :
			(entry->overflow_column != NULL && p == nparams - 1) ? JSONBOID : TEXTOID;
		int16		typlen;
		bool		typbyval;
		char		typalign;

		get_typlenbyvalalign(element, &typlen, &typbyval, &typalign);
		types[p] = get_array_type(element);
		args[p] = PointerGetDatum(construct_md_array(values[p], nulls[p], 1, dims, lbs,
													 element, typlen, typbyval, typalign));
	}
	if (SPI_execute_with_args(sql.data, nparams, types, args, argnulls, false, 0) !=
		SPI_OK_INSERT_RETURNING || SPI_processed != (uint64) nmissing)
		elog(ERROR, "promread could not add the series of metric \"%s\"", entry->metric);
	/* the rows come back in the order they were inserted, unnest's */
	for (i = 0; i < nmissing; i++)
	{
		bool		isnull;

		w->distinct[missing[i]].series_id =
			DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1,
										&isnull));
		w->distinct[missing[i]].found = true;
	}
	SPI_freetuptable(SPI_tuptable);
}

/*
 * Take the ids of the distinct series that series_cache.c holds (use
 * true), or keep those found or added to be cached once committed (use
 * false).
 */
static void
cached_series(ChunkWrite *w, Oid series_relid, bool use)
{
	int			i;

	for (i = 0; i < w->ndistinct; i++)
	{
		ChunkSeries *cs = &w->distinct[i];

		if (use)
			cs->found = cs->cached =
				PromSeriesCacheFind(series_relid, cs->hash, cs->stored, cs->stored_len,
									&cs->series_id);
		else if (!cs->cached)
			PromSeriesCacheRemember(series_relid, cs->hash, cs->stored, cs->stored_len,
									cs->series_id);
	}
}

/*
 * Check, before anything is written, that the writer may read and add
 * series: SELECT and INSERT on the columns of m#series that a write reads
 * and writes (42501 otherwise).
 */
static void
check_series_privileges(Relation rel, const PromMetricEntry *entry)
{
	ParseState *pstate = make_parsestate(NULL);
	ParseNamespaceItem *nsitem;
	Oid			relid = RelationGetRelid(rel);
	List	   *columns = list_make2(makeString(SERIES_ID_COLUMN),
									 makeString(SERIES_HASH_COLUMN));
	ListCell   *lc;
	int			k;

	for (k = 0; k < entry->nlabels; k++)
		columns = lappend(columns, makeString(entry->label_columns[k]));
	if (entry->overflow_column != NULL)
		columns = lappend(columns, makeString(entry->overflow_column));
	nsitem = addRangeTableEntryForRelation(pstate, rel, AccessShareLock, NULL,
										   false, false);
	PromPermissionsOf(nsitem)->requiredPerms = ACL_SELECT | ACL_INSERT;
	foreach(lc, columns)
	{
		AttrNumber	attnum = get_attnum(relid, strVal(lfirst(lc)));

		if (attnum == InvalidAttrNumber)
			ereport(ERROR,
					(errcode(ERRCODE_UNDEFINED_COLUMN),
					 errmsg("the series table of metric \"%s\" has no column \"%s\"",
							entry->metric, strVal(lfirst(lc)))));
		PromPermissionsOf(nsitem)->selectedCols =
			bms_add_member(PromPermissionsOf(nsitem)->selectedCols,
						   attnum - FirstLowInvalidHeapAttributeNumber);
		/* series_id is generated, never inserted */
		if (lc != list_head(columns))
			PromPermissionsOf(nsitem)->insertedCols =
				bms_add_member(PromPermissionsOf(nsitem)->insertedCols,
							   attnum - FirstLowInvalidHeapAttributeNumber);
	}
	PromCheckPermissions(pstate);
	free_parsestate(pstate);
}

/* A copy of a registration, for write_trust.c, naming a table's written columns. */
static PromMetricEntry
trust_entry(const PromMetricEntry *entry, const char *time_column,
			const char *value_column)
{
	PromMetricEntry copy = *entry;

	copy.time_column = (char *) time_column;
	copy.value_column = (char *) value_column;
	return copy;
}

/* A COPY stream into one table, sent every HEAD_COPY_ROWS rows. */
typedef struct HeadCopy
{
	Relation	rel;
	StringInfoData out;
	int			nrows;
} HeadCopy;

/* Send a stream's rows, if any, with a COPY; start it again. */
static void
flush_copy(HeadCopy *copy, List *attnames)
{
	if (copy->nrows == 0)
		return;
	PromCopyAppendTrailer(&copy->out);
	PromWriteCopy(copy->rel, attnames, &copy->out);
	resetStringInfo(&copy->out);
	PromCopyAppendHeader(&copy->out);
	copy->nrows = 0;
}

/*
 * Is a head (locked) partitioned into windows and a default partition
 * alone, the partitions a write touches plain tables?
 */
static bool
only_windows(Relation head_rel, int nwindows, Oid default_partition,
			 const Oid *partitions, int npartitions)
{
	int			i;

	if (head_rel->rd_rel->relkind != RELKIND_PARTITIONED_TABLE ||
		RelationGetPartitionDesc(head_rel, true)->nparts !=
		nwindows + (OidIsValid(default_partition) ? 1 : 0))
		return false;
	for (i = 0; i < npartitions; i++)
		if (get_rel_relkind(partitions[i]) != RELKIND_RELATION)
			return false;
	return true;
}

/* A head's window partitions, for routing rows to them (lock_windows). */
typedef struct HeadRouting
{
	bool		routed;			/* the partitions are windows and the default */
	PromHeadWindow *windows;	/* PromHeadWindows */
	int			nwindows;
	Oid			default_partition;
} HeadRouting;

/*
 * Lock the partitions of m#head the group's rows go to (7. above): each
 * window's, or the default partition for a window without one, in
 * ascending order of OID, and check that writing them is trusted
 * (write_trust.c); then return the watermark, read with the latest
 * snapshot.  The others are not locked: a compaction of their windows
 * goes on.  A head with a partition of its own making (not one window, or
 * itself partitioned: rows could reach it where no window partition was
 * found) has every partition locked and checked, as a table of rows does,
 * and its rows are not routed here (routing->routed false).
 */
static int64
lock_windows(const PromWriteGroup *group, const PromMetricEntry *entry,
			 const PromMetricEntry *trust, bool histograms, Relation head_rel,
			 HeadRouting *routing)
{
	PromHeadWindow *windows;
	int			nwindows;
	Oid			default_partition;
	int64	   *touched = NULL;
	int			ntouched = 0;
	int			capacity = 0;
	Oid		   *partitions;
	int			npartitions = 0;
	int			i;

	PromHeadWindows(head_rel, &windows, &nwindows, &default_partition);
	for (i = 0; i < group->nseries; i++)
	{
		const PromWriteSeries *series = group->series[i];
		int			s;

		for (s = 0; s < PromWriteSeriesRows(series, histograms); s++)
		{
			int64		window = PromFloorDiv(PromWriteSeriesTime(series, s, histograms),
											  PROM_CHUNK_WINDOW_MS);

			/* rows come in time order a series: most repeat the last */
			if (ntouched > 0 && touched[ntouched - 1] == window)
				continue;
			if (ntouched == capacity)
			{
				capacity = Max(capacity * 2, 8);
				touched = touched == NULL ? palloc(sizeof(int64) * capacity) :
					repalloc(touched, sizeof(int64) * capacity);
			}
			touched[ntouched++] = window;
		}
	}
	partitions = palloc(sizeof(Oid) * Max(ntouched, 1));
	for (i = 0; i < ntouched; i++)
	{
		Oid			partition = PromHeadWindowPartition(windows, nwindows, touched[i]);

		if (!OidIsValid(partition))
			partition = default_partition;
		if (OidIsValid(partition))
			partitions[npartitions++] = partition;
	}
	routing->windows = windows;
	routing->nwindows = nwindows;
	routing->default_partition = default_partition;
	routing->routed = only_windows(head_rel, nwindows, default_partition, partitions,
								   npartitions);
	if (!routing->routed)
	{
		PromCheckWriteTrusted(head_rel, trust);
		return PromStorageCompactedBefore(entry->metric, RelationGetRelid(head_rel),
										  GetLatestSnapshot());
	}
	qsort(partitions, npartitions, sizeof(Oid), oid_cmp);
	for (i = 0, ntouched = 0; i < npartitions; i++)
		if (i == 0 || partitions[i] != partitions[i - 1])
		{
			LockRelationOid(partitions[i], RowExclusiveLock);
			partitions[ntouched++] = partitions[i];
		}
	PromCheckWriteTrustedPartitions(head_rel, partitions, ntouched, trust);
	return PromStorageCompactedBefore(entry->metric, RelationGetRelid(head_rel),
										  GetLatestSnapshot());
}

/* Rows appended straight to one table (6. above). */
typedef struct HeadAppend
{
	Oid			relid;
	Relation	rel;			/* NULL: the table's rows go by COPY */
	ResultRelInfo *rri;			/* its indexes opened */
	TupleTableSlot *slots[HEAD_APPEND_ROWS];	/* made as needed */
	int			nslots;
	int			nrows;			/* filled */
} HeadAppend;

/* Where write_head sends rows: tables appended to, and COPY streams. */
typedef struct HeadWriter
{
	EState	   *estate;
	CommandId	cid;
	TupleDesc	desc;			/* (series_id, t, value), unpinned */
	HeadAppend *appends;
	int			nappends;
	HeadCopy	copies[2];		/* m#head, m#late */
	bool		checked[2];		/* the INSERT privilege on them */
	List	   *attnames;
} HeadWriter;

/*
 * Can rows be appended straight to this table (6. above): would COPY run
 * nothing for it but its indexes' insertions?
 */
static bool
appendable(Relation rel)
{
	static const char *const names[3] = {SERIES_ID_COLUMN, HEAD_TIME_COLUMN,
	HEAD_VALUE_COLUMN};
	static const Oid types[3] = {INT8OID, INT8OID, FLOAT8OID};
	TupleDesc	desc = RelationGetDescr(rel);
	List	   *indexes;
	ListCell   *lc;
	bool		ok = true;
	int			i;

	if (rel->rd_rel->relkind != RELKIND_RELATION || rel->trigdesc != NULL ||
		rel->rd_rel->relrowsecurity || desc->natts != 3 ||
		(desc->constr != NULL && (desc->constr->num_check > 0 ||
								  desc->constr->num_defval > 0 ||
								  desc->constr->has_generated_stored)))
		return false;
	for (i = 0; i < 3; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i);

		if (att->attisdropped || att->atttypid != types[i] ||
			strcmp(NameStr(att->attname), names[i]) != 0)
			return false;
	}
	indexes = RelationGetIndexList(rel);
	foreach(lc, indexes)
	{
		HeapTuple	tuple = SearchSysCache1(INDEXRELID, ObjectIdGetDatum(lfirst_oid(lc)));

		if (!HeapTupleIsValid(tuple))
			elog(ERROR, "cache lookup failed for index %u", lfirst_oid(lc));
		if (!((Form_pg_index) GETSTRUCT(tuple))->indimmediate ||
			((Form_pg_index) GETSTRUCT(tuple))->indisexclusion)
			ok = false;
		ReleaseSysCache(tuple);
	}
	list_free(indexes);
	return ok;
}

/*
 * The append of a table (locked by the caller), made on first use: its
 * rel NULL when the table is not appendable.
 */
static HeadAppend *
head_append(HeadWriter *hw, Oid relid)
{
	HeadAppend *a;
	int			i;

	for (i = 0; i < hw->nappends; i++)
		if (hw->appends[i].relid == relid)
			return &hw->appends[i];
	hw->appends = hw->nappends == 0 ? palloc(sizeof(HeadAppend)) :
		repalloc(hw->appends, sizeof(HeadAppend) * (hw->nappends + 1));
	a = &hw->appends[hw->nappends++];
	memset(a, 0, sizeof(HeadAppend));
	a->relid = relid;
	a->rel = table_open(relid, RowExclusiveLock);
	if (!appendable(a->rel))
	{
		table_close(a->rel, NoLock);
		a->rel = NULL;
		return a;
	}
	a->rri = makeNode(ResultRelInfo);
	InitResultRelInfo(a->rri, a->rel, 1, NULL, 0);
	ExecOpenIndices(a->rri, false);
	return a;
}

/* Insert an append's rows, and their index entries. */
static void
flush_append(HeadWriter *hw, HeadAppend *a)
{
	int			i;

	if (a->nrows == 0)
		return;
	table_multi_insert(a->rel, a->slots, a->nrows, hw->cid, 0, NULL);
	for (i = 0; i < a->nrows; i++)
	{
		if (a->rri->ri_NumIndices > 0)
		{
			/* no index is checked later (appendable), so none to recheck */
			list_free(PromInsertIndexTuples(a->rri, a->slots[i], hw->estate));
			ResetPerTupleExprContext(hw->estate);
		}
		ExecClearTuple(a->slots[i]);
	}
	a->nrows = 0;
}

/* Add a row to an append, inserting its rows once it is full. */
static void
append_row(HeadWriter *hw, HeadAppend *a, int64 series_id, int64 ms, float8 value)
{
	TupleTableSlot *slot;

	if (a->nrows == a->nslots)
		a->slots[a->nslots++] = MakeSingleTupleTableSlot(hw->desc,
														 table_slot_callbacks(a->rel));
	slot = a->slots[a->nrows++];
	slot->tts_values[0] = Int64GetDatum(series_id);
	slot->tts_values[1] = Int64GetDatum(ms);
	slot->tts_values[2] = Float8GetDatum(value);
	memset(slot->tts_isnull, 0, sizeof(bool) * 3);
	ExecStoreVirtualTuple(slot);
	if (a->nrows == HEAD_APPEND_ROWS)
		flush_append(hw, a);
}

/*
 * The append a row of m#head (late false) or m#late goes to, or NULL when
 * it goes by COPY: m#late, a head that is a plain table (made before heads
 * were partitioned, or by hand), or the row's window's partition of a
 * routed head.  Checks the INSERT privilege on the table it is written to
 * (m#head, not its partition, as COPY into m#head would) the first time.
 */
static HeadAppend *
row_target(HeadWriter *hw, const HeadRouting *routing, Relation head_rel,
		   Relation late_rel, bool late, int64 window)
{
	HeadAppend *a;
	Oid			relid;

	if (late || head_rel->rd_rel->relkind == RELKIND_RELATION)
		relid = RelationGetRelid(late ? late_rel : head_rel);	/* a plain table */
	else if (routing->routed && head_rel->trigdesc == NULL)
	{
		relid = PromHeadWindowPartition(routing->windows, routing->nwindows, window);
		if (!OidIsValid(relid))
			relid = routing->default_partition;
		if (!OidIsValid(relid))
			return NULL;		/* COPY says that no partition holds it */
	}
	else
		return NULL;
	a = head_append(hw, relid);
	if (a->rel == NULL)
		return NULL;
	if (!hw->checked[late])
	{
		PromCheckInsertPrivileges(late ? late_rel : head_rel, hw->attnames);
		hw->checked[late] = true;
	}
	return a;
}

/*
 * Append the group's rows: series_id, t (ms, checked to be a timestamp
 * PostgreSQL can hold), value; to m#late those before the watermark
 * (late_rel NULL: none), the others to m#head, each window's to its
 * partition (routing, when the head's partitions are windows); straight
 * to each table where it can be done, by COPY in binary form otherwise,
 * in COPYs of at most HEAD_COPY_ROWS rows (6. above).
 */
static void
write_head(const PromWriteGroup *group, const ChunkWrite *w, bool histograms,
		   Relation head_rel, Relation late_rel, int64 compacted_before,
		   const HeadRouting *routing)
{
	uint16		be_ncolumns = pg_hton16(3);
	PromCopyValues values;
	HeadWriter	hw = {0};
	HeadAppend *target = NULL;
	int64		target_window = 0;
	bool		target_late = false;
	bool		have_target = false;
	int			i;

	hw.attnames = list_make3(makeString(SERIES_ID_COLUMN), makeString(HEAD_TIME_COLUMN),
							 makeString(HEAD_VALUE_COLUMN));
	hw.estate = CreateExecutorState();
	hw.cid = GetCurrentCommandId(true);
	hw.desc = CreateTemplateTupleDesc(3);
	TupleDescInitEntry(hw.desc, 1, SERIES_ID_COLUMN, INT8OID, -1, 0);
	TupleDescInitEntry(hw.desc, 2, HEAD_TIME_COLUMN, INT8OID, -1, 0);
	TupleDescInitEntry(hw.desc, 3, HEAD_VALUE_COLUMN, FLOAT8OID, -1, 0);
	PromCopyValuesInit(&values, histograms);
	for (i = 0; i < 2; i++)
	{
		hw.copies[i].rel = i == 0 ? head_rel : late_rel;
		hw.copies[i].nrows = 0;
		initStringInfo(&hw.copies[i].out);
		PromCopyAppendHeader(&hw.copies[i].out);
	}
	for (i = 0; i < group->nseries; i++)
	{
		const PromWriteSeries *series = group->series[i];
		int64		series_id = w->distinct[w->distinct_of[i]].series_id;
		uint64		be_id = pg_hton64((uint64) series_id);
		int			s;

		CHECK_FOR_INTERRUPTS();
		for (s = 0; s < PromWriteSeriesRows(series, histograms); s++)
		{
			int64		ms = PromWriteSeriesTime(series, s, histograms);
			bool		late = late_rel != NULL && ms < compacted_before;
			int64		window = PromFloorDiv(ms, PROM_CHUNK_WINDOW_MS);
			uint64		be_time = pg_hton64((uint64) ms);
			HeadCopy   *copy;

			(void) PromWriteTimestamp(ms, w->entry->metric);
			/* rows come in time order a series: most go where the last went */
			if (!histograms &&
				(!have_target || late != target_late || window != target_window))
			{
				target = row_target(&hw, routing, head_rel, late_rel, late, window);
				target_late = late;
				target_window = window;
				have_target = true;
			}
			if (!histograms && target != NULL)
			{
				append_row(&hw, target, series_id, ms, PromWriteSeriesValue(series, s));
				continue;
			}
			copy = &hw.copies[late];
			enlargeStringInfo(&copy->out, 2 + 24);
			appendBinaryStringInfoNT(&copy->out, (const char *) &be_ncolumns, 2);
			PromCopyAppendField(&copy->out, &be_id, 8);
			PromCopyAppendField(&copy->out, &be_time, 8);
			PromCopyAppendValue(&copy->out, &values, series, s);
			if (++copy->nrows == HEAD_COPY_ROWS)
				flush_copy(copy, hw.attnames);
		}
	}
	for (i = 0; i < hw.nappends; i++)
	{
		HeadAppend *a = &hw.appends[i];
		int			k;

		if (a->rel == NULL)
			continue;
		flush_append(&hw, a);
		for (k = 0; k < a->nslots; k++)
			ExecDropSingleTupleTableSlot(a->slots[k]);
		ExecCloseIndices(a->rri);
		table_close(a->rel, NoLock);
	}
	FreeExecutorState(hw.estate);
	if (hw.nappends > 0)
		CommandCounterIncrement();
	flush_copy(&hw.copies[0], hw.attnames);
	flush_copy(&hw.copies[1], hw.attnames);
}

/*
 * Write the samples, or the histograms, of a group's series into its
 * metric in chunk storage (see the header).  Returns false, having written
 * nothing, when its tables were dropped or the metric registered again
 * while their locks were waited for: the caller looks the metric up again.
 * SPI is connected.
 */
bool
PromWriteGroupChunks(const PromWriteGroup *group, const PromMetricEntry *entry,
					 const PromStorageEntry *storage)
{
	Relation	series_rel;
	Relation	head_rel;
	Relation	late_rel;
	PromStorageEntry *now;
	PromMetricEntry series_trust;
	PromMetricEntry head_trust;
	ChunkWrite	w = {0};
	bool		histograms;
	bool		use_cache;
	int64		nrows;
	int			nmissing;
	int64		compacted_before = PG_INT64_MIN;
	HeadRouting routing = {0};

	series_rel = try_relation_open(storage->series, AccessShareLock);
	if (series_rel == NULL)
		return false;
	head_rel = try_relation_open(storage->head, RowExclusiveLock);
	if (head_rel == NULL)
	{
		relation_close(series_rel, AccessShareLock);
		return false;
	}
	late_rel = OidIsValid(storage->late) ?
		try_relation_open(storage->late, RowExclusiveLock) : NULL;
	now = PromStorageLookup(entry->metric);
	if (!PromWriteSameRegistration(entry, PromCatalogFind(entry->metric)) ||
		now == NULL || now->relation != storage->relation ||
		now->series != storage->series || now->head != storage->head ||
		now->late != storage->late || (OidIsValid(storage->late) && late_rel == NULL))
	{
		if (late_rel != NULL)
			relation_close(late_rel, RowExclusiveLock);
		relation_close(head_rel, RowExclusiveLock);
		relation_close(series_rel, AccessShareLock);
		return false;
	}
	series_trust = trust_entry(entry, SERIES_HASH_COLUMN, SERIES_ID_COLUMN);
	head_trust = trust_entry(entry, HEAD_TIME_COLUMN, HEAD_VALUE_COLUMN);
	histograms = get_atttype(storage->head, get_attnum(storage->head, HEAD_VALUE_COLUMN)) ==
		PromHistogramTypeOid();
	PromCheckWriteTrusted(series_rel, &series_trust);
	if (late_rel != NULL)
	{
		compacted_before = lock_windows(group, entry, &head_trust, histograms, head_rel,
										&routing);
		PromCheckWriteTrusted(late_rel, &head_trust);
	}
	else
		PromCheckWriteTrusted(head_rel, &head_trust);
	check_series_privileges(series_rel, entry);
	if (check_enable_rls(storage->head, InvalidOid, false) == RLS_ENABLED ||
		(late_rel != NULL && check_enable_rls(storage->late, InvalidOid, false) == RLS_ENABLED))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("remote write does not write metric \"%s\" into a head table under row-level security",
						entry->metric),
				 errhint("Apply row-level security to the series table %s instead.",
						 PromQuotedRelationName(storage->series))));

	nrows = PromWriteCheckValueKind(group, entry->metric, HEAD_VALUE_COLUMN, histograms);

	w.entry = entry;
	w.series_table = PromQuotedRelationName(storage->series);
	distinct_series(group, &w);
	use_cache = PromSeriesCacheUsable(series_rel);
	if (use_cache)
		cached_series(&w, storage->series, true);
	nmissing = look_up_series(&w, false);
	if (nmissing > 0)
	{
		/* writers of new series take turns, and look again */
		LockRelationOid(storage->series, ShareRowExclusiveLock);
		nmissing = look_up_series(&w, true);
		if (nmissing > 0)
			insert_series(&w, nmissing);
	}
	if (use_cache)
		cached_series(&w, storage->series, false);

	if (nrows > 0)
		write_head(group, &w, histograms, head_rel, late_rel, compacted_before, &routing);
	if (late_rel != NULL)
		relation_close(late_rel, NoLock);
	relation_close(head_rel, NoLock);
	relation_close(series_rel, NoLock);
	return true;
}

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
 * 6. The head's partitions are locked and the rows appended by
 *    write_head.c.  m#late is locked and checked as 1. says only when
 *    the group has rows before the watermark: most writes have none, and
 *    a lock fewer a metric is room in the lock table every session shares.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <xxhash.h>

#include "access/relation.h"
#include "access/sysattr.h"
#include "catalog/pg_class.h"
#include "catalog/pg_type.h"
#include "executor/executor.h"
#include "executor/spi.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "parser/parse_relation.h"
#include "partitioning/partdesc.h"
#include "promread.h"
#include "write_internal.h"
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

/*
 * Has the group a row before the watermark, one that goes to m#late?
 */
static bool
has_late_rows(const PromWriteGroup *group, bool histograms, int64 compacted_before)
{
	int			i;

	for (i = 0; i < group->nseries; i++)
	{
		const PromWriteSeries *series = group->series[i];
		int			s;

		for (s = 0; s < PromWriteSeriesRows(series, histograms); s++)
			if (PromWriteSeriesTime(series, s, histograms) < compacted_before)
				return true;
	}
	return false;
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
	PromHeadRouting routing = {0};

	series_rel = try_relation_open(storage->series, AccessShareLock);
	if (series_rel == NULL)
		return false;
	head_rel = try_relation_open(storage->head, RowExclusiveLock);
	if (head_rel == NULL)
	{
		relation_close(series_rel, AccessShareLock);
		return false;
	}
	now = PromStorageLookup(entry->metric);
	if (!PromWriteSameRegistration(entry, PromCatalogFind(entry->metric)) ||
		now == NULL || now->relation != storage->relation ||
		now->series != storage->series || now->head != storage->head ||
		now->late != storage->late)
	{
		relation_close(head_rel, RowExclusiveLock);
		relation_close(series_rel, AccessShareLock);
		return false;
	}
	series_trust = trust_entry(entry, SERIES_HASH_COLUMN, SERIES_ID_COLUMN);
	head_trust = trust_entry(entry, HEAD_TIME_COLUMN, HEAD_VALUE_COLUMN);
	histograms = get_atttype(storage->head, get_attnum(storage->head, HEAD_VALUE_COLUMN)) ==
		PromHistogramTypeOid();
	PromCheckWriteTrusted(series_rel, &series_trust);
	late_rel = NULL;
	if (OidIsValid(storage->late))
	{
		compacted_before = PromWriteLockWindows(group, entry, &head_trust, histograms,
												head_rel, &routing);

		/*
		 * m#late is opened (and locked, in the lock table every session
		 * shares) only for a group with rows before the watermark: most
		 * writes have none.
		 */
		if (has_late_rows(group, histograms, compacted_before))
		{
			late_rel = try_relation_open(storage->late, RowExclusiveLock);
			if (late_rel == NULL)
			{
				relation_close(head_rel, RowExclusiveLock);
				relation_close(series_rel, AccessShareLock);
				return false;	/* dropped while its lock was waited for */
			}
			PromCheckWriteTrusted(late_rel, &head_trust);
		}
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
	{
		int64	   *series_ids = palloc(sizeof(int64) * group->nseries);
		int			i;

		for (i = 0; i < group->nseries; i++)
			series_ids[i] = w.distinct[w.distinct_of[i]].series_id;
		PromWriteHead(group, series_ids, entry->metric, histograms, head_rel, late_rel,
					  compacted_before, &routing);
	}
	if (late_rel != NULL)
		relation_close(late_rel, NoLock);
	relation_close(head_rel, NoLock);
	relation_close(series_rel, NoLock);
	return true;
}

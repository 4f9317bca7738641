/*-------------------------------------------------------------------------
 *
 * compact.c
 *	  prom_compact: the head rows of metrics in chunk storage moved into
 *	  Prometheus chunks (docs/chunk-storage.md).
 *
 * 1. A metric's head is compacted by 2-hour windows (multiples of 7,200,000
 *    ms since the Unix epoch), each whole window that ends at or before
 *    now() - promread.compact_after, oldest first.  A window's head rows
 *    are deleted and returned in one statement (DELETE ... RETURNING in a
 *    CTE, sorted by series and time), read through a cursor in batches, and
 *    each series cut into chunks once its rows are read, the chunks
 *    inserted in batches; all in the caller's transaction, so that readers
 *    see each sample once, before or after, and an error or a crash loses
 *    nothing.
 * 2. A series' samples of a window, n of them, are cut into ceil(n / 120)
 *    chunks of sizes that differ by one at most.  Histograms go through
 *    histogram_chunk.c's chunker, which cuts where Prometheus cuts too (a
 *    change of kind or layout, a counter reset, a stale marker), each chunk
 *    of at most ceil(n / ceil(n / 120)) samples.  Values go by their bits,
 *    stale markers and NaN payloads included.
 * 3. Head rows of one series at one millisecond: the one whose value's
 *    bytes are greatest is kept (a float's 64 bits as an unsigned number, a
 *    histogram's stored form compared byte by byte, the longer greater when
 *    one is the other's start), the others are dropped, so that the result
 *    does not depend on the order rows were written in.
 * 4. Late samples: when a series has chunks in a window being compacted
 *    (head rows arrived after the window was compacted), those chunks are
 *    deleted and decoded, merged with the head's samples (a head sample
 *    replaces a chunk's sample of the same millisecond) and cut again.
 *    Every series of a window is looked up so, by the index on (series_id,
 *    min_time).
 * 5. Compactions of one metric wait for each other: each takes SHARE
 *    UPDATE EXCLUSIVE on m#head, which writers (ROW EXCLUSIVE) and readers
 *    do not wait for.  A compaction runs in READ COMMITTED only, where each
 *    statement sees what the compaction before it committed.
 * 6. Each metric is compacted as its owner, in a security-restricted
 *    operation with search_path pg_catalog, pg_temp, as PostgreSQL runs
 *    maintenance (VACUUM, REFRESH MATERIALIZED VIEW): a superuser compacting
 *    every metric runs no code of their owners as itself.
 * 7. Memory: a window's state lives in a context reset per window, a
 *    series' in one reset per series; a window's rows come in batches of
 *    FETCH_ROWS and chunks go in batches of INSERT_CHUNKS.  One series'
 *    samples of one window are held at once.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/xact.h"
#include "catalog/pg_class.h"
#include "catalog/pg_type.h"
#include "common/int.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "storage/lmgr.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/syscache.h"

#include "histogram/histogram.h"
#include "protocol/protocol.h"
#include "storage/storage.h"

PG_FUNCTION_INFO_V1(prom_compact);

/* Head rows fetched from a window's cursor at once. */
#define FETCH_ROWS			10000

/* Chunks inserted by one statement. */
#define INSERT_CHUNKS		1000

/* The compaction of one metric. */
typedef struct Compaction
{
	const PromStorageEntry *entry;	/* the metric */
	bool		histograms;		/* the head's value is a prom_histogram */
	SPIPlanPtr	window_plan;	/* a window's head rows, deleted */
	SPIPlanPtr	probe_plan;		/* a series' chunks of a window, deleted */
	SPIPlanPtr	insert_plan;	/* chunks inserted from arrays */
	int64		partition_day;	/* the day whose partition exists, */
	bool		has_partition;	/* once one is known */
	int64		lo;				/* the window: [lo, hi) */
	int64		hi;
	MemoryContext window_cxt;	/* reset per window */
	MemoryContext series_cxt;	/* reset per series */
	MemoryContext batch_cxt;	/* reset per insert */

	/* the series being read */
	int64		series_id;
	PromSample *samples;
	int			nsamples;
	int			capacity;

	/* the chunks waiting for their insert */
	int			nchunks;
	Datum		ids[INSERT_CHUNKS];
	Datum		min_times[INSERT_CHUNKS];
	Datum		max_times[INSERT_CHUNKS];
	Datum		encodings[INSERT_CHUNKS];
	Datum		data[INSERT_CHUNKS];

	PromHistogramChunker chunker;	/* its buffer in series_cxt */
	uint8	   *xor_buf;		/* room for an XOR chunk */
	int64		written;		/* chunks inserted */
} Compaction;

/*---- Chunks written ----*/

/* Insert the chunks waiting, as one statement. */
static void
insert_chunks(Compaction *c)
{
	MemoryContext old;
	Datum		args[5];

	if (c->nchunks == 0)
		return;
	old = MemoryContextSwitchTo(c->batch_cxt);
	args[0] = PointerGetDatum(construct_array(c->ids, c->nchunks, INT8OID,
											  8, FLOAT8PASSBYVAL, TYPALIGN_DOUBLE));
	args[1] = PointerGetDatum(construct_array(c->min_times, c->nchunks, INT8OID,
											  8, FLOAT8PASSBYVAL, TYPALIGN_DOUBLE));
	args[2] = PointerGetDatum(construct_array(c->max_times, c->nchunks, INT8OID,
											  8, FLOAT8PASSBYVAL, TYPALIGN_DOUBLE));
	args[3] = PointerGetDatum(construct_array(c->encodings, c->nchunks, INT2OID,
											  2, true, TYPALIGN_SHORT));
	args[4] = PointerGetDatum(construct_array(c->data, c->nchunks, BYTEAOID,
											  -1, false, TYPALIGN_INT));
	MemoryContextSwitchTo(old);
	if (SPI_execute_plan(c->insert_plan, args, NULL, false, 0) != SPI_OK_INSERT ||
		SPI_processed != (uint64) c->nchunks)
		elog(ERROR, "could not insert chunks");
	c->written += c->nchunks;
	c->nchunks = 0;
	MemoryContextReset(c->batch_cxt);
}

/*
 * Queue a chunk of the current series for insertion: len bytes of data,
 * copied; its partition made first when missing.
 */
static void
add_chunk(Compaction *c, int encoding, const uint8 *data, Size len,
		  int64 min_t, int64 max_t)
{
	bytea	   *chunk = MemoryContextAlloc(c->batch_cxt, VARHDRSZ + len);

	Assert(PromFloorDiv(min_t, PROM_CHUNK_WINDOW_MS) == PromFloorDiv(max_t, PROM_CHUNK_WINDOW_MS));
	if (!c->has_partition ||
		PromFloorDiv(min_t, PROM_DAY_MS) != c->partition_day)
	{
		(void) PromStorageChunkPartition(c->entry, min_t);
		c->partition_day = PromFloorDiv(min_t, PROM_DAY_MS);
		c->has_partition = true;
	}
	SET_VARSIZE(chunk, VARHDRSZ + len);
	memcpy(VARDATA(chunk), data, len);
	c->ids[c->nchunks] = Int64GetDatum(c->series_id);
	c->min_times[c->nchunks] = Int64GetDatum(min_t);
	c->max_times[c->nchunks] = Int64GetDatum(max_t);
	c->encodings[c->nchunks] = Int16GetDatum(encoding);
	c->data[c->nchunks] = PointerGetDatum(chunk);
	if (++c->nchunks == INSERT_CHUNKS)
		insert_chunks(c);
}

/* Cut a series' samples (n > 0, in time order) into chunks: 2. above. */
static void
cut_series(Compaction *c, const PromSample *samples, int n)
{
	int			nchunks = (n + PROM_CHUNK_SAMPLES - 1) / PROM_CHUNK_SAMPLES;
	int64		min_t;
	int64		max_t;

	if (c->histograms)
	{
		MemoryContext old = MemoryContextSwitchTo(c->series_cxt);
		int			encoding;
		Size		len;

		PromHistogramChunkerStart(&c->chunker, samples, n);
		c->chunker.max_samples = (n + nchunks - 1) / nchunks;
		while (PromHistogramChunkerNext(&c->chunker, &encoding, &len,
										&min_t, &max_t))
		{
			add_chunk(c, encoding, c->chunker.buf, len, min_t, max_t);
			MemoryContextSwitchTo(c->series_cxt);	/* SPI switches away */
		}
		MemoryContextSwitchTo(old);
	}
	else
	{
		int			i;

		for (i = 0; i < nchunks; i++)
		{
			int			size = n / nchunks + (i < n % nchunks ? 1 : 0);
			Size		len = PromEncodeXorChunk(samples, size, c->xor_buf,
												 &min_t, &max_t);

			add_chunk(c, PROM_CHUNK_XOR, c->xor_buf, len, min_t, max_t);
			samples += size;
		}
	}
}

/*---- Late samples ----*/

/* Order samples by time. */
static int
compare_sample_times(const void *a, const void *b)
{
	int64		ta = ((const PromSample *) a)->t;
	int64		tb = ((const PromSample *) b)->t;

	return ta < tb ? -1 : ta > tb;
}

/*
 * Delete the current series' chunks of the window and return their
 * samples in time order (NULL and 0 when it has none); in series_cxt.
 */
static PromSample *
take_stored_samples(Compaction *c, int *nstored)
{
	Datum		args[3];
	SPITupleTable *rows;
	uint64		nrows;
	PromSample *stored = NULL;
	int			n = 0;
	uint64		i;

	args[0] = Int64GetDatum(c->series_id);
	args[1] = Int64GetDatum(c->lo);
	args[2] = Int64GetDatum(c->hi);
	if (SPI_execute_plan(c->probe_plan, args, NULL, false, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not read the chunks of series " INT64_FORMAT,
			 c->series_id);
	rows = SPI_tuptable;
	nrows = SPI_processed;
	for (i = 0; i < nrows; i++)
	{
		MemoryContext old = MemoryContextSwitchTo(c->series_cxt);
		bool		isnull;
		int			encoding = DatumGetInt16(SPI_getbinval(rows->vals[i], rows->tupdesc, 1, &isnull));
		bytea	   *chunk = DatumGetByteaPP(SPI_getbinval(rows->vals[i], rows->tupdesc, 2, &isnull));
		PromSample *decoded;
		int			ndecoded;

		if (c->histograms == (encoding == PROM_CHUNK_XOR))
			ereport(ERROR,
					(errcode(ERRCODE_DATA_CORRUPTED),
					 errmsg("chunk of series " INT64_FORMAT " of metric \"%s\" has encoding %d",
							c->series_id, c->entry->metric, encoding),
					 errdetail("The metric's samples are %s.",
							   c->histograms ? "histograms" : "floats")));
		decoded = PromStorageDecodeChunk(encoding, chunk, &ndecoded);
		stored = stored == NULL ? palloc(sizeof(PromSample) * ndecoded) :
			repalloc(stored, sizeof(PromSample) * (n + ndecoded));
		memcpy(stored + n, decoded, sizeof(PromSample) * ndecoded);
		n += ndecoded;
		MemoryContextSwitchTo(old);
	}
	SPI_freetuptable(rows);
	/* chunks of a series never overlap, but chunks made by hand might */
	for (i = 1; i < (uint64) n; i++)
	{
		if (stored[i].t <= stored[i - 1].t)
		{
			int			kept = 1;
			int			j;

			qsort(stored, n, sizeof(PromSample), compare_sample_times);
			for (j = 1; j < n; j++)
				if (stored[j].t != stored[kept - 1].t)
					stored[kept++] = stored[j];
			n = kept;
			break;
		}
	}
	*nstored = n;
	return stored;
}

/*
 * Merge the head's samples of the current series with stored ones, both in
 * time order: a head sample replaces a stored one of the same millisecond.
 * Returns the merged samples, in series_cxt.
 */
static PromSample *
merge_samples(Compaction *c, const PromSample *stored, int nstored, int *n)
{
	PromSample *merged = MemoryContextAlloc(c->series_cxt, sizeof(PromSample) *
											((Size) nstored + c->nsamples));
	int			i = 0;
	int			j = 0;
	int			k = 0;

	while (i < c->nsamples || j < nstored)
	{
		if (j == nstored || (i < c->nsamples && c->samples[i].t <= stored[j].t))
		{
			/* equal times: the head's sample, and the stored one skipped */
			if (j < nstored && c->samples[i].t == stored[j].t)
				j++;
			merged[k++] = c->samples[i++];
		}
		else
			merged[k++] = stored[j++];
	}
	*n = k;
	return merged;
}

/* Compact the series read so far: merge, cut, insert; then forget it. */
static void
finish_series(Compaction *c)
{
	int			nstored;
	PromSample *stored = take_stored_samples(c, &nstored);

	CHECK_FOR_INTERRUPTS();
	if (nstored == 0)
		cut_series(c, c->samples, c->nsamples);
	else
	{
		int			n;
		PromSample *merged = merge_samples(c, stored, nstored, &n);

		cut_series(c, merged, n);
	}
	c->nsamples = 0;
	MemoryContextReset(c->series_cxt);
	c->chunker.buf = NULL;		/* it was in series_cxt */
}

/*---- Head rows read ----*/

/* Is a value's bytes greater than another's (3. above)? */
static bool
value_greater(Compaction *c, double a, double b)
{
	const PromHistogram *ha;
	const PromHistogram *hb;
	int			cmp;

	if (!c->histograms)
		return wire_double_bits(a) > wire_double_bits(b);
	memcpy(&ha, &a, sizeof(ha));
	memcpy(&hb, &b, sizeof(hb));
	cmp = memcmp(VARDATA(ha), VARDATA(hb),
				 Min(VARSIZE(ha), VARSIZE(hb)) - VARHDRSZ);
	return cmp > 0 || (cmp == 0 && VARSIZE(ha) > VARSIZE(hb));
}

/* Add a head row of the current series, in time order, to its samples. */
static void
add_row(Compaction *c, int64 t, Datum value)
{
	PromSample	sample;

	sample.t = t;
	if (c->histograms)
	{
		MemoryContext old = MemoryContextSwitchTo(c->series_cxt);

		sample.v = PromHistogramSampleValue((PromHistogram *) PG_DETOAST_DATUM_COPY(value));
		MemoryContextSwitchTo(old);
	}
	else
		sample.v = DatumGetFloat8(value);

	if (c->nsamples > 0 && c->samples[c->nsamples - 1].t == t)
	{
		if (value_greater(c, sample.v, c->samples[c->nsamples - 1].v))
			c->samples[c->nsamples - 1] = sample;
		return;
	}
	if (c->nsamples == c->capacity)
	{
		c->capacity *= 2;
		c->samples = repalloc_huge(c->samples, sizeof(PromSample) * c->capacity);
	}
	c->samples[c->nsamples++] = sample;
}

/* Compact one window, [c->lo, c->hi), of the head. */
static void
compact_window(Compaction *c)
{
	Datum		args[2];
	Portal		portal;
	bool		reading = false;

	MemoryContextReset(c->window_cxt);
	c->capacity = 1024;
	c->samples = MemoryContextAllocHuge(c->window_cxt,
										sizeof(PromSample) * c->capacity);
	c->nsamples = 0;
	args[0] = Int64GetDatum(c->lo);
	args[1] = Int64GetDatum(c->hi);
	portal = SPI_cursor_open(NULL, c->window_plan, args, NULL, false);
	for (;;)
	{
		SPITupleTable *rows;
		uint64		nrows;
		uint64		i;

		/* finish_series runs statements: keep the batch and its count */
		SPI_cursor_fetch(portal, true, FETCH_ROWS);
		rows = SPI_tuptable;
		nrows = SPI_processed;
		if (nrows == 0)
		{
			SPI_freetuptable(rows);
			break;
		}
		for (i = 0; i < nrows; i++)
		{
			bool		isnull[3];
			int64		id = DatumGetInt64(SPI_getbinval(rows->vals[i], rows->tupdesc, 1, &isnull[0]));
			int64		t = DatumGetInt64(SPI_getbinval(rows->vals[i], rows->tupdesc, 2, &isnull[1]));
			Datum		value = SPI_getbinval(rows->vals[i], rows->tupdesc, 3, &isnull[2]);

			if (isnull[0] || isnull[1] || isnull[2])
				elog(ERROR, "head of metric \"%s\" holds a NULL", c->entry->metric);
			if (reading && id != c->series_id)
				finish_series(c);
			c->series_id = id;
			reading = true;
			add_row(c, t, value);
		}
		SPI_freetuptable(rows);
		CHECK_FOR_INTERRUPTS();
	}
	SPI_cursor_close(portal);
	if (reading)
		finish_series(c);
	insert_chunks(c);
}

/*---- Metrics ----*/

/* Prepare a statement of the compaction, its arguments of the types given. */
static SPIPlanPtr
prepare(const char *sql, int nargs, Oid *types)
{
	SPIPlanPtr	plan = SPI_prepare(sql, nargs, types);

	if (plan == NULL)
		elog(ERROR, "could not prepare \"%s\": %s", sql,
			 SPI_result_code_string(SPI_result));
	return plan;
}

/* A relation's owner. */
static Oid
relation_owner(Oid relid)
{
	HeapTuple	tuple = SearchSysCache1(RELOID, ObjectIdGetDatum(relid));
	Oid			owner;

	if (!HeapTupleIsValid(tuple))
		elog(ERROR, "cache lookup failed for relation %u", relid);
	owner = ((Form_pg_class) GETSTRUCT(tuple))->relowner;
	ReleaseSysCache(tuple);
	return owner;
}

/*
 * Compact a metric's head within SPI, its retention carried out first;
 * returns the chunks written.
 */
static int64
compact_metric(const PromStorageEntry *entry, int64 now_ms)
{
	Compaction *c = palloc0(sizeof(Compaction));
	char	   *head = PromQuotedRelationName(entry->head);
	char	   *chunks = PromQuotedRelationName(entry->chunks);
	int64		cutoff;
	int64		bound;
	Oid			types[5] = {INT8OID, INT8OID, INT8OID, INT8OID, INT8OID};
	Datum		args[1];
	int64	   *windows;
	uint64		nwindows;
	uint64		i;

	c->entry = entry;
	c->histograms = PromIsHistogramType(get_atttype(entry->head,
													get_attnum(entry->head, "value")));
	c->xor_buf = palloc(PromXorChunkBound(PROM_CHUNK_SAMPLES));
	PromApplyRetention(entry, chunks, head, now_ms);

	/* the windows that end at or before now() - promread.compact_after */
	if (pg_sub_s64_overflow(now_ms, promread_compact_after, &cutoff))
		cutoff = PG_INT64_MIN;
	if (pg_mul_s64_overflow(PromFloorDiv(cutoff, PROM_CHUNK_WINDOW_MS), PROM_CHUNK_WINDOW_MS,
							&bound))
		return 0;
	args[0] = Int64GetDatum(bound);
	if (SPI_execute_with_args(psprintf("SELECT DISTINCT t / %lld - (t %% %lld < 0)::int FROM %s WHERE t < $1 ORDER BY 1",
									   (long long) PROM_CHUNK_WINDOW_MS,
									   (long long) PROM_CHUNK_WINDOW_MS, head),
							  1, types, args, NULL, false, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not list the windows of metric \"%s\"", entry->metric);
	nwindows = SPI_processed;
	if (nwindows == 0)
		return 0;
	windows = palloc(sizeof(int64) * nwindows);
	for (i = 0; i < nwindows; i++)
	{
		bool		isnull;

		windows[i] = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[i],
												 SPI_tuptable->tupdesc, 1, &isnull));
	}
	SPI_freetuptable(SPI_tuptable);

	c->window_plan = prepare(psprintf("WITH d AS (DELETE FROM %s WHERE t >= $1 AND t < $2 RETURNING series_id, t, value) "
									  "SELECT series_id, t, value FROM d ORDER BY series_id, t",
									  head), 2, types);
	c->probe_plan = prepare(psprintf("WITH d AS (DELETE FROM %s WHERE series_id = $1 AND min_time >= $2 AND min_time < $3 RETURNING min_time, encoding, chunk) "
									 "SELECT encoding, chunk FROM d ORDER BY min_time",
									 chunks), 3, types);
	types[0] = types[1] = types[2] = INT8ARRAYOID;
	types[3] = INT2ARRAYOID;
	types[4] = BYTEAARRAYOID;
	c->insert_plan = prepare(psprintf("INSERT INTO %s (series_id, min_time, max_time, encoding, chunk) "
									  "SELECT * FROM unnest($1, $2, $3, $4, $5)",
									  chunks), 5, types);
	c->window_cxt = AllocSetContextCreate(CurrentMemoryContext, "promread compaction window",
										  ALLOCSET_DEFAULT_SIZES);
	c->series_cxt = AllocSetContextCreate(CurrentMemoryContext, "promread compaction series",
										  ALLOCSET_DEFAULT_SIZES);
	c->batch_cxt = AllocSetContextCreate(CurrentMemoryContext, "promread compaction chunks",
										 ALLOCSET_DEFAULT_SIZES);
	for (i = 0; i < nwindows; i++)
	{
		/* the first window of int64's range starts at its start */
		if (pg_mul_s64_overflow(windows[i], PROM_CHUNK_WINDOW_MS, &c->lo))
			c->lo = PG_INT64_MIN;
		c->hi = (windows[i] + 1) * PROM_CHUNK_WINDOW_MS;
		compact_window(c);
	}
	MemoryContextDelete(c->window_cxt);
	MemoryContextDelete(c->series_cxt);
	MemoryContextDelete(c->batch_cxt);
	return c->written;
}

/*
 * Compact a metric as its owner, the owner of its view (6. above), after
 * taking the head's lock; returns the chunks written.
 */
static int64
compact_as_owner(const PromStorageEntry *entry, int64 now_ms)
{
	Oid			save_userid;
	int			save_sec_context;
	int			save_nestlevel;
	int64		written;

	LockRelationOid(entry->head, ShareUpdateExclusiveLock);
	if (!SearchSysCacheExists1(RELOID, ObjectIdGetDatum(entry->head)) ||
		!SearchSysCacheExists1(RELOID, ObjectIdGetDatum(entry->relation)))
		return 0;				/* dropped while we waited */
	GetUserIdAndSecContext(&save_userid, &save_sec_context);
	SetUserIdAndSecContext(relation_owner(entry->relation),
						   save_sec_context | SECURITY_LOCAL_USERID_CHANGE |
						   SECURITY_RESTRICTED_OPERATION);
	save_nestlevel = NewGUCNestLevel();
	(void) set_config_option("search_path", "pg_catalog, pg_temp",
							 PGC_USERSET, PGC_S_SESSION, GUC_ACTION_SAVE,
							 true, 0, false);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	written = compact_metric(entry, now_ms);
	SPI_finish();
	AtEOXact_GUC(false, save_nestlevel);
	SetUserIdAndSecContext(save_userid, save_sec_context);
	return written;
}

/*
 * prom_compact(metric text DEFAULT NULL) RETURNS bigint: compact a metric,
 * or every metric of chunk storage the caller owns; returns the chunks
 * written.
 */
Datum
prom_compact(PG_FUNCTION_ARGS)
{
	char	   *metric = PG_ARGISNULL(0) ? NULL : text_to_cstring(PG_GETARG_TEXT_PP(0));
	int64		now_ms = PromTimestampToMs(GetCurrentTransactionStartTimestamp());
	List	   *entries;
	ListCell   *lc;
	int64		written = 0;

	PreventCommandIfReadOnly("prom_compact()");
	if (IsolationUsesXactSnapshot())
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_TRANSACTION_STATE),
				 errmsg("prom_compact cannot run in a REPEATABLE READ or SERIALIZABLE transaction"),
				 errdetail("Each of its statements must see what a compaction before it committed."),
				 errhint("Call it in a READ COMMITTED transaction.")));
	entries = PromCompactEntries(metric);
	foreach(lc, entries)
	{
		PromStorageEntry *entry = lfirst(lc);

		if (metric != NULL)
			PromCompactCheckOwner(entry);
		else if (!PromCompactOwns(entry))
			continue;
		written += compact_as_owner(entry, now_ms);
	}
	PG_RETURN_INT64(written);
}

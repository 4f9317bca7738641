/*-------------------------------------------------------------------------
 *
 * compact.c
 *	  prom_compact: the head rows of metrics in chunk storage moved into
 *	  Prometheus chunks (docs/chunk-storage.md).
 *
 * 1. A metric's head is compacted by 2-hour windows (multiples of 7,200,000
 *    ms since the Unix epoch), each whole window that ends at or before
 *    now() - promread.compact_after, oldest first.  A window's rows are
 *    read in one statement: its partition of m#head, read and left in place
 *    (head.c: the watermark, moved at the end to the first window not
 *    compacted, hides them, and a later compaction drops the partition
 *    once no snapshot predates the move), and its rows of m#late and of
 *    the head's default partition, deleted and returned (DELETE ...
 *    RETURNING in a CTE: they are few).  The rows are read through a
 *    cursor in batches in the order they lie in (no sort), gathered by
 *    series in a hash table, each series put in time order in C (it
 *    usually is already: remote write appends in time order), then cut
 *    into chunks, series by series in id order, the chunks inserted in
 *    batches; all in the caller's transaction, so that readers see each
 *    sample once, before or after, and an error or a crash loses nothing.
 *    The partitions of the windows compacted are locked first (SHARE, to
 *    the commit), in ascending order of OID, so that a writer either wrote
 *    before (its rows are read) or reads the moved watermark (head.c's
 *    header gives the argument); then, once every metric of the call is
 *    compacted, partitions are made ahead and dropped (PromHeadMaintain),
 *    under a lock held to the commit.
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
 *    The series of a window are looked up so in one statement (series_id =
 *    ANY, by the index on (min_time / 2 h, series_id)).  The default
 *    partition's rows before the watermark (inserted by hand) are
 *    compacted so too.
 * 5. Compactions of one metric wait for each other: each takes SHARE
 *    UPDATE EXCLUSIVE on m#head, which writers (ROW EXCLUSIVE) and readers
 *    do not wait for, then reads the watermark the one before it left.
 *    A compaction runs in READ COMMITTED only, where each statement sees
 *    what the compaction before it committed.
 * 6. Each metric is compacted as its owner, in a security-restricted
 *    operation with search_path pg_catalog, pg_temp, as PostgreSQL runs
 *    maintenance (VACUUM, REFRESH MATERIALIZED VIEW): a superuser compacting
 *    every metric runs no code of their owners as itself.
 * 7. Memory: a window's samples are held at once, in a context reset per
 *    window, ROW_BYTES a float row (histograms: their stored bytes too).
 *    A window that would take more than maintenance_work_mem (as VACUUM and
 *    CREATE INDEX take, compaction being maintenance) is read in passes,
 *    each reading the rows of the series whose id modulo the passes is the
 *    pass's number: the rows of m#late and of the default partition are
 *    counted when the windows are listed, a window partition's estimated
 *    from its size (PromHeadDueWindows).  Each series' hash entry is left
 *    out of the estimate (counting series would take a sort), so a window
 *    of few rows a series goes over it.  The stored chunks of a pass's
 *    series (4.) are held as stored, each series' decoded only while it is
 *    compacted.  A series' decoding, merge and cut live in a context reset
 *    per series; rows come in batches of FETCH_ROWS and chunks go in
 *    batches of INSERT_CHUNKS.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/relation.h"
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

/*
 * A head row's bytes while its window is compacted (a float's sample and the
 * room its array grows into), and the most passes a window is read in (7.).
 */
#define ROW_BYTES			(2 * sizeof(PromSample))
#define MAX_PASSES			1024

/* Chunks inserted by one statement. */
#define INSERT_CHUNKS		1000

/* A series' samples of the window (or pass) being compacted. */
typedef struct SeriesSamples
{
	int64		series_id;		/* the hash key */
	PromSample *samples;		/* its head rows, in the order read */
	int			nsamples;
	int			capacity;
	PromSample *stored;			/* its chunks' samples, in time order */
	int			nstored;
} SeriesSamples;

/* The compaction of one metric. */
typedef struct Compaction
{
	const PromStorageEntry *entry;	/* the metric */
	bool		histograms;		/* the head's value is a prom_histogram */
	SPIPlanPtr	window_plan;	/* a pass's head rows, deleted */
	SPIPlanPtr	probe_plan;		/* the pass's series' chunks, deleted */
	SPIPlanPtr	insert_plan;	/* chunks inserted from arrays */
	int64		partition_day;	/* the day whose partition exists, */
	bool		has_partition;	/* once one is known */
	int64		lo;				/* the window: [lo, hi) */
	int64		hi;
	MemoryContext window_cxt;	/* reset per pass */
	MemoryContext series_cxt;	/* reset per series */
	MemoryContext batch_cxt;	/* reset per insert */

	/* the pass's series, by id, in window_cxt */
	HTAB	   *series;
	SeriesSamples *last;		/* the one of the last row read */
	int64		series_id;		/* the one being cut */
	uint64		stored_next;	/* the next of the pass's stored chunks */

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

/* Order series by id. */
static int
compare_series_ids(const void *a, const void *b)
{
	int64		ia = (*(SeriesSamples *const *) a)->series_id;
	int64		ib = (*(SeriesSamples *const *) b)->series_id;

	return ia < ib ? -1 : ia > ib;
}

/*
 * Sort a series' stored samples by time, one sample a millisecond: chunks
 * of a series never overlap, but chunks made by hand might.
 */
static void
sort_stored(SeriesSamples *s)
{
	int			i;

	for (i = 1; i < s->nstored; i++)
	{
		if (s->stored[i].t <= s->stored[i - 1].t)
		{
			int			kept = 1;
			int			j;

			qsort(s->stored, s->nstored, sizeof(PromSample), compare_sample_times);
			for (j = 1; j < s->nstored; j++)
				if (s->stored[j].t != s->stored[kept - 1].t)
					s->stored[kept++] = s->stored[j];
			s->nstored = kept;
			return;
		}
	}
}

/*
 * Delete the chunks of the window of the pass's series (all, n of them, in
 * id order) and return them, in series order (4. above): one statement a
 * pass, as most windows have no chunks yet.  Each series' are decoded when
 * it is compacted (take_stored_samples), so that the pass holds its chunks
 * as stored, not their samples; the caller frees the rows.
 */
static SPITupleTable *
take_stored_chunks(Compaction *c, SeriesSamples **all, int n)
{
	MemoryContext old = MemoryContextSwitchTo(c->window_cxt);
	Datum	   *ids = palloc(sizeof(Datum) * n);
	Datum		args[3];
	int			k;

	for (k = 0; k < n; k++)
		ids[k] = Int64GetDatum(all[k]->series_id);
	args[0] = PointerGetDatum(construct_array(ids, n, INT8OID, 8, FLOAT8PASSBYVAL,
											  TYPALIGN_DOUBLE));
	args[1] = Int64GetDatum(c->lo);
	args[2] = Int64GetDatum(c->hi);
	MemoryContextSwitchTo(old);
	if (SPI_execute_plan(c->probe_plan, args, NULL, false, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not read the chunks of metric \"%s\"", c->entry->metric);
	c->stored_next = 0;
	return SPI_tuptable;
}

/* The id of a chunk row that take_stored_chunks returned. */
static int64
stored_chunk_series(SPITupleTable *rows, uint64 i)
{
	bool		isnull;

	return DatumGetInt64(SPI_getbinval(rows->vals[i], rows->tupdesc, 1, &isnull));
}

/*
 * Give a series the samples of its stored chunks, the next rows of those
 * take_stored_chunks returned, decoded in series_cxt.  A row of a series
 * before it was not asked for.
 */
static void
take_stored_samples(Compaction *c, SPITupleTable *rows, SeriesSamples *s)
{
	MemoryContext old = MemoryContextSwitchTo(c->series_cxt);

	for (; c->stored_next < rows->numvals; c->stored_next++)
	{
		uint64		i = c->stored_next;
		int64		id = stored_chunk_series(rows, i);
		bool		isnull;
		int			encoding;
		bytea	   *chunk;
		PromSample *decoded;
		int			ndecoded;

		if (id > s->series_id)
			break;
		if (id < s->series_id)
			elog(ERROR, "chunk of series " INT64_FORMAT " was not asked for", id);
		CHECK_FOR_INTERRUPTS();
		encoding = DatumGetInt16(SPI_getbinval(rows->vals[i], rows->tupdesc, 2, &isnull));
		if (c->histograms == (encoding == PROM_CHUNK_XOR))
			ereport(ERROR,
					(errcode(ERRCODE_DATA_CORRUPTED),
					 errmsg("chunk of series " INT64_FORMAT " of metric \"%s\" has encoding %d",
							id, c->entry->metric, encoding),
					 errdetail("The metric's samples are %s.",
							   c->histograms ? "histograms" : "floats")));
		chunk = DatumGetByteaPP(SPI_getbinval(rows->vals[i], rows->tupdesc, 3, &isnull));
		decoded = PromStorageDecodeChunk(encoding, chunk, &ndecoded);
		if (s->stored == NULL)
			s->stored = decoded;
		else
		{
			s->stored = repalloc(s->stored, sizeof(PromSample) * (s->nstored + ndecoded));
			memcpy(s->stored + s->nstored, decoded, sizeof(PromSample) * ndecoded);
			pfree(decoded);
		}
		s->nstored += ndecoded;
	}
	MemoryContextSwitchTo(old);
	if (s->nstored > 0)
		sort_stored(s);
}

/*
 * Merge a series' head samples with its stored ones, both in time order: a
 * head sample replaces a stored one of the same millisecond.  Returns the
 * merged samples, in series_cxt.
 */
static PromSample *
merge_samples(Compaction *c, const SeriesSamples *s, int *n)
{
	PromSample *merged = MemoryContextAlloc(c->series_cxt, sizeof(PromSample) *
											((Size) s->nstored + s->nsamples));
	int			i = 0;
	int			j = 0;
	int			k = 0;

	while (i < s->nsamples || j < s->nstored)
	{
		if (j == s->nstored || (i < s->nsamples && s->samples[i].t <= s->stored[j].t))
		{
			/* equal times: the head's sample, and the stored one skipped */
			if (j < s->nstored && s->samples[i].t == s->stored[j].t)
				j++;
			merged[k++] = s->samples[i++];
		}
		else
			merged[k++] = s->stored[j++];
	}
	*n = k;
	return merged;
}

/*---- Head rows read ----*/

/* Is a value's bytes greater than another's (3. above)? */
static bool
value_greater(bool histograms, double a, double b)
{
	const PromHistogram *ha;
	const PromHistogram *hb;
	int			cmp;

	if (!histograms)
		return wire_double_bits(a) > wire_double_bits(b);
	memcpy(&ha, &a, sizeof(ha));
	memcpy(&hb, &b, sizeof(hb));
	cmp = memcmp(VARDATA(ha), VARDATA(hb),
				 Min(VARSIZE(ha), VARSIZE(hb)) - VARHDRSZ);
	return cmp > 0 || (cmp == 0 && VARSIZE(ha) > VARSIZE(hb));
}

/* Order head samples by time, then by value (arg: are they histograms?). */
static int
compare_head_samples(const void *a, const void *b, void *arg)
{
	const PromSample *sa = a;
	const PromSample *sb = b;
	bool		histograms = *(bool *) arg;

	if (sa->t != sb->t)
		return sa->t < sb->t ? -1 : 1;
	if (value_greater(histograms, sa->v, sb->v))
		return 1;
	return value_greater(histograms, sb->v, sa->v) ? -1 : 0;
}

/*
 * Put a series' head samples, read in the order they were written, in time
 * order, one a millisecond: the greatest value of a millisecond (3. above).
 */
static void
sort_head_samples(Compaction *c, SeriesSamples *s)
{
	int			kept = 1;
	int			i;

	for (i = 1; i < s->nsamples; i++)
		if (s->samples[i].t <= s->samples[i - 1].t)
			break;
	if (i >= s->nsamples)
		return;					/* written in time order: the usual case */
	qsort_arg(s->samples, s->nsamples, sizeof(PromSample), compare_head_samples,
			  &c->histograms);
	for (i = 1; i < s->nsamples; i++)
	{
		if (s->samples[i].t == s->samples[kept - 1].t)
			s->samples[kept - 1] = s->samples[i];	/* sorted: the greater */
		else
			s->samples[kept++] = s->samples[i];
	}
	s->nsamples = kept;
}

/* Compact a series of the pass: sort, merge, cut, insert; then forget it. */
static void
finish_series(Compaction *c, SeriesSamples *s)
{
	CHECK_FOR_INTERRUPTS();
	c->series_id = s->series_id;
	sort_head_samples(c, s);
	if (s->nstored == 0)
		cut_series(c, s->samples, s->nsamples);
	else
	{
		int			n;
		PromSample *merged = merge_samples(c, s, &n);

		cut_series(c, merged, n);
	}
	MemoryContextReset(c->series_cxt);
	c->chunker.buf = NULL;		/* it was in series_cxt */
}

/* Add a head row to its series' samples, in window_cxt. */
static void
add_row(Compaction *c, int64 id, int64 t, Datum value)
{
	SeriesSamples *s = c->last;
	PromSample *sample;

	if (s == NULL || s->series_id != id)
	{
		bool		found;

		s = hash_search(c->series, &id, HASH_ENTER, &found);
		if (!found)
		{
			s->capacity = 2;
			s->samples = MemoryContextAlloc(c->window_cxt,
											sizeof(PromSample) * s->capacity);
			s->nsamples = 0;
			s->stored = NULL;
			s->nstored = 0;
		}
		c->last = s;
	}
	if (s->nsamples == s->capacity)
	{
		s->capacity *= 2;
		s->samples = repalloc_huge(s->samples, sizeof(PromSample) * s->capacity);
	}
	sample = &s->samples[s->nsamples++];
	sample->t = t;
	if (c->histograms)
	{
		MemoryContext old = MemoryContextSwitchTo(c->window_cxt);

		sample->v = PromHistogramSampleValue((PromHistogram *) PG_DETOAST_DATUM_COPY(value));
		MemoryContextSwitchTo(old);
	}
	else
		sample->v = DatumGetFloat8(value);
}

/*
 * Compact one pass of one window, [c->lo, c->hi): the head rows of the
 * series whose id modulo npasses is pass (7. above).
 */
static void
compact_pass(Compaction *c, int npasses, int pass)
{
	HASHCTL		ctl;
	HASH_SEQ_STATUS seq;
	Datum		args[4];
	Portal		portal;
	SeriesSamples **all;
	SeriesSamples *s;
	SPITupleTable *stored;
	long		n;
	long		i;

	MemoryContextReset(c->window_cxt);
	ctl.keysize = sizeof(int64);
	ctl.entrysize = sizeof(SeriesSamples);
	ctl.hcxt = c->window_cxt;
	c->series = hash_create("promread compaction series", 1024, &ctl,
							HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
	c->last = NULL;
	args[0] = Int64GetDatum(c->lo);
	args[1] = Int64GetDatum(c->hi);
	args[2] = Int64GetDatum(npasses);
	args[3] = Int64GetDatum(pass);
	portal = SPI_cursor_open(NULL, c->window_plan, args, NULL, false);
	for (;;)
	{
		SPITupleTable *rows;
		uint64		nrows;
		uint64		r;

		SPI_cursor_fetch(portal, true, FETCH_ROWS);
		rows = SPI_tuptable;
		nrows = SPI_processed;
		if (nrows == 0)
		{
			SPI_freetuptable(rows);
			break;
		}
		for (r = 0; r < nrows; r++)
		{
			bool		isnull[3];
			int64		id = DatumGetInt64(SPI_getbinval(rows->vals[r], rows->tupdesc, 1, &isnull[0]));
			int64		t = DatumGetInt64(SPI_getbinval(rows->vals[r], rows->tupdesc, 2, &isnull[1]));
			Datum		value = SPI_getbinval(rows->vals[r], rows->tupdesc, 3, &isnull[2]);

			if (isnull[0] || isnull[1] || isnull[2])
				elog(ERROR, "head of metric \"%s\" holds a NULL", c->entry->metric);
			add_row(c, id, t, value);
		}
		SPI_freetuptable(rows);
		CHECK_FOR_INTERRUPTS();
	}
	SPI_cursor_close(portal);

	n = hash_get_num_entries(c->series);
	if (n == 0)
		return;
	all = MemoryContextAlloc(c->window_cxt, sizeof(SeriesSamples *) * n);
	i = 0;
	hash_seq_init(&seq, c->series);
	while ((s = hash_seq_search(&seq)) != NULL)
		all[i++] = s;
	qsort(all, n, sizeof(SeriesSamples *), compare_series_ids);
	stored = take_stored_chunks(c, all, n);
	for (i = 0; i < n; i++)
	{
		take_stored_samples(c, stored, all[i]);
		finish_series(c, all[i]);
	}
	if (c->stored_next < stored->numvals)
		elog(ERROR, "chunk of series " INT64_FORMAT " was not asked for",
			 stored_chunk_series(stored, c->stored_next));
	SPI_freetuptable(stored);
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
 * Lock the partitions of the head that the windows before bound (ms) read,
 * from the watermark on, in ascending order of OID, the order writers lock
 * every partition in (SHARE, to the commit: head.c's header); returns the
 * head's window partitions and its default one.
 */
static void
lock_windows(Compaction *c, int64 bound, PromHeadWindow **windows, int *nwindows,
			 Oid *default_partition)
{
	Relation	head_rel = relation_open(c->entry->head, NoLock);
	Oid		   *relids;
	int			n = 0;
	int			i;

	PromHeadWindows(head_rel, windows, nwindows, default_partition);
	relation_close(head_rel, NoLock);
	relids = palloc(sizeof(Oid) * Max(*nwindows, 1));
	for (i = 0; i < *nwindows; i++)
	{
		int64		lo = (*windows)[i].window * PROM_CHUNK_WINDOW_MS;

		if (lo >= c->entry->compacted_before && lo < bound)
			relids[n++] = (*windows)[i].partition;
	}
	qsort(relids, n, sizeof(Oid), oid_cmp);
	for (i = 0; i < n; i++)
		LockRelationOid(relids[i], ShareLock);
}

/*
 * Prepare the statement of a window's rows (1. above): those of m#late and
 * of the default partition, deleted, and those of the window's partition
 * (InvalidOid: none, or below the watermark), read; $1 and $2 the window,
 * $3 the passes and $4 the pass.
 */
static SPIPlanPtr
prepare_window(Compaction *c, Oid partition, Oid default_partition)
{
	Oid			types[4] = {INT8OID, INT8OID, INT8OID, INT8OID};
	StringInfoData sql;
	int			i;

	initStringInfo(&sql);
	for (i = 0; i < 2; i++)
	{
		Oid			relid = i == 0 ? c->entry->late : default_partition;

		if (!OidIsValid(relid))
			continue;
		appendStringInfo(&sql, "%s d%d AS (DELETE FROM %s WHERE t >= $1 AND t < $2"
						 " AND abs(series_id %% $3) = $4 RETURNING series_id, t, value)",
						 i == 0 ? "WITH" : ",", i, PromQuotedRelationName(relid));
	}
	appendStringInfoString(&sql, " SELECT series_id, t, value FROM d0");
	if (OidIsValid(default_partition))
		appendStringInfoString(&sql, " UNION ALL SELECT series_id, t, value FROM d1");
	if (OidIsValid(partition))
		appendStringInfo(&sql, " UNION ALL SELECT series_id, t, value FROM %s"
						 " WHERE abs(series_id %% $3) = $4",
						 PromQuotedRelationName(partition));
	return prepare(sql.data, 4, types);
}

/* The end of the windows a compaction at now_ms compacts (ms). */
static int64
compaction_cutoff(int64 now_ms)
{
	int64		cutoff;

	if (pg_sub_s64_overflow(now_ms, promread_compact_after, &cutoff))
		cutoff = PG_INT64_MIN;
	return cutoff;
}

/*
 * Compact a metric's head within SPI, its retention carried out first;
 * returns the chunks written.  entry is read after the head's lock.
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
	PromHeadWindow *partitions;
	int			npartitions;
	Oid			default_partition;
	PromHeadDueWindow *due;
	int			ndue;
	int			i;
	int			pass;

	if (!OidIsValid(entry->late))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("metric \"%s\" has no table of late samples", entry->metric),
				 errdetail("Its layout was not made by prom_create_metric or remote write.")));
	c->entry = entry;
	c->histograms = PromIsHistogramType(get_atttype(entry->head,
													get_attnum(entry->head, "value")));
	c->xor_buf = palloc(PromXorChunkBound(PROM_CHUNK_SAMPLES));
	PromApplyRetention(entry, chunks, head, now_ms);

	/* the windows that end at or before now() - promread.compact_after */
	cutoff = compaction_cutoff(now_ms);
	if (pg_mul_s64_overflow(PromFloorDiv(cutoff, PROM_CHUNK_WINDOW_MS), PROM_CHUNK_WINDOW_MS,
							&bound))
		return 0;

	/*
	 * The metric's lock, which moving the watermark takes, first: a writer
	 * adding a label column holds it before it locks its windows'
	 * partitions, so taking it after ours would deadlock
	 */
	if (bound > entry->compacted_before)
		PromCatalogLockForWrite(entry->metric);
	lock_windows(c, bound, &partitions, &npartitions, &default_partition);

	due = PromHeadDueWindows(entry, bound, partitions, npartitions, default_partition,
							 &ndue);
	types[0] = INT8ARRAYOID;
	/* the index's keys of [$2, $3): SQL's division truncates toward zero */
	c->probe_plan = prepare(psprintf("WITH d AS (DELETE FROM %s WHERE series_id = ANY ($1) AND min_time >= $2 AND min_time < $3 "
									 "AND (min_time OPERATOR(pg_catalog./) %lld) = ANY (ARRAY[$2 / %lld, ($3 - 1) / %lld]) "
									 "RETURNING series_id, min_time, encoding, chunk) "
									 "SELECT series_id, encoding, chunk FROM d ORDER BY series_id, min_time",
									 chunks, (long long) PROM_CHUNK_WINDOW_MS,
									 (long long) PROM_CHUNK_WINDOW_MS,
									 (long long) PROM_CHUNK_WINDOW_MS), 3, types);
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
	for (i = 0; i < ndue; i++)
	{
		Oid			partition = InvalidOid;
		/* 7. above: histograms are held as stored, floats in PromSamples */
		int64		bytes = due[i].rows * (int64) ROW_BYTES +
			(c->histograms ? due[i].value_bytes : 0);
		int			npasses = (int) Min(bytes / ((int64) maintenance_work_mem * 1024) + 1,
										MAX_PASSES);

		/* the first window of int64's range starts at its start */
		if (pg_mul_s64_overflow(due[i].window, PROM_CHUNK_WINDOW_MS, &c->lo))
			c->lo = PG_INT64_MIN;
		c->hi = (due[i].window + 1) * PROM_CHUNK_WINDOW_MS;
		/* a partition below the watermark holds rows compacted already */
		if (c->lo >= entry->compacted_before)
			partition = PromHeadWindowPartition(partitions, npartitions, due[i].window);
		c->window_plan = prepare_window(c, partition, default_partition);
		for (pass = 0; pass < npasses; pass++)
			compact_pass(c, npasses, pass);
		SPI_freeplan(c->window_plan);
	}
	MemoryContextDelete(c->window_cxt);
	MemoryContextDelete(c->series_cxt);
	MemoryContextDelete(c->batch_cxt);

	/* the rows read of the partitions before bound are in chunks now */
	if (bound > entry->compacted_before)
	{
		PromCatalogLockForWrite(entry->metric);
		if (!PromStorageCatalogSetCompactedBefore(entry->metric, bound))
			elog(ERROR, "metric \"%s\" lost its storage entry", entry->metric);
	}
	return c->written;
}

/*
 * Make and drop a compacted metric's head partitions (PromHeadMaintain),
 * entry as its compaction read it; returns 0.
 */
static int64
maintain_head(const PromStorageEntry *entry, int64 now_ms)
{
	PromHeadMaintain(entry, compaction_cutoff(now_ms), now_ms);
	return 0;
}

/*
 * Run work (compact_metric or maintain_head) on a metric as its owner, the
 * owner of its view (6. above), connected to SPI; returns what work does.
 */
static int64
as_owner(const PromStorageEntry *entry, int64 now_ms,
		 int64 (*work) (const PromStorageEntry *entry, int64 now_ms))
{
	Oid			save_userid;
	int			save_sec_context;
	int			save_nestlevel;
	int64		result;

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
	result = work(entry, now_ms);
	SPI_finish();
	AtEOXact_GUC(false, save_nestlevel);
	SetUserIdAndSecContext(save_userid, save_sec_context);
	return result;
}

/*
 * Compact a metric as its owner after taking the head's lock, adding its
 * entry as read then to *compacted; returns the chunks written.
 */
static int64
compact_as_owner(const PromStorageEntry *entry, int64 now_ms, List **compacted)
{
	PromStorageEntry *fresh;

	LockRelationOid(entry->head, ShareUpdateExclusiveLock);
	if (!SearchSysCacheExists1(RELOID, ObjectIdGetDatum(entry->head)) ||
		!SearchSysCacheExists1(RELOID, ObjectIdGetDatum(entry->relation)))
		return 0;				/* dropped while we waited */
	/* the watermark as the compaction before us left it */
	fresh = PromStorageLookup(entry->metric);
	if (fresh == NULL || fresh->head != entry->head)
		return 0;
	*compacted = lappend(*compacted, fresh);
	return as_owner(fresh, now_ms, compact_metric);
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
	List	   *compacted = NIL;
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
		else if (!PromCompactOwns(entry) || !OidIsValid(entry->late))
			continue;
		written += compact_as_owner(entry, now_ms, &compacted);
	}

	/*
	 * Head partitions are made and dropped last, once every metric is
	 * compacted, so that the lock that takes blocks each metric's readers
	 * and writers for as short a time as the transaction allows.
	 */
	foreach(lc, compacted)
	{
		PromStorageEntry *entry = lfirst(lc);

		/* its view, whose owner makes and drops them, dropped meanwhile */
		LockRelationOid(entry->relation, AccessShareLock);
		if (SearchSysCacheExists1(RELOID, ObjectIdGetDatum(entry->relation)))
			(void) as_owner(entry, now_ms, maintain_head);
	}
	PG_RETURN_INT64(written);
}

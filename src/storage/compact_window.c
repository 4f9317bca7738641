/*-------------------------------------------------------------------------
 *
 * compact_window.c
 *	  A window's head rows turned into chunks (compact.c's essay, 2. to 4.
 *	  and 7.): read through a cursor and gathered by series, each series put
 *	  in time order with one row a millisecond, merged with the chunks it
 *	  already has in the window, cut into chunks of 120 samples at most and
 *	  inserted in batches.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "utils/array.h"
#include "utils/memutils.h"

#include "protocol/protocol.h"
#include "compaction.h"

/* Head rows fetched from a window's cursor at once. */
#define FETCH_ROWS			10000

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
 * series whose id modulo npasses is pass (compact.c's 7.).
 */
void
PromCompactPass(Compaction *c, int npasses, int pass)
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


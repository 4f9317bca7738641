/*-------------------------------------------------------------------------
 *
 * compaction.h
 *	  What compact.c (the metrics compacted, window by window) and
 *	  compact_window.c (a window's rows turned into chunks) share: the
 *	  compaction of one metric.  compact.c's essay describes the whole.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PROMREAD_COMPACTION_H
#define PROMREAD_COMPACTION_H

#include "executor/spi.h"
#include "utils/hsearch.h"

#include "histogram/histogram.h"
#include "storage/storage.h"

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

/*
 * Compact one pass of one window, [c->lo, c->hi): the head rows of the
 * series whose id modulo npasses is pass (compact.c's 7.).
 */
extern void PromCompactPass(Compaction *c, int npasses, int pass);

#endif							/* PROMREAD_COMPACTION_H */

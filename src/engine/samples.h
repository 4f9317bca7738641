/*-------------------------------------------------------------------------
 *
 * samples.h
 *	  A series and its samples: the blocks that hold them, and the runs in
 *	  which readers of a finished set (the encoders, prom_series) read them.
 *
 * 1. A series is a header (PromSeries), its label values, then its first
 *    sample block, the head, all in one allocation.
 * 2. A block holds samples of 12 bytes: a time as a signed 32-bit offset
 *    in ms from the block's base, and the value's 8 bytes.  Every sample
 *    of a block lies within 24.8 days of its base.
 * 3. More blocks are chained as a series grows (samples.c): each has a
 *    base and a link before it.  The series points to its last block; the
 *    last block's link is the first chained block, and every other chained
 *    block's the one after it, so the head needs no link.
 * 4. A series' second block may instead continue its head (continued):
 *    no link and no base of its own, its samples offsets from the head's
 *    base, 8 bytes of header rather than 24.  It is meant to be the last;
 *    should a block have to follow it, it is first given a chained block
 *    of its own (PromSeriesEndContinuation).
 * 5. Readers never walk blocks: PromSampleRunFirst and PromSampleRunNext
 *    give a series' samples as runs, each a block's samples with their
 *    base, in time order once the set is finished.  The prefetch helpers
 *    ask for the series and runs a reader will read next, since a finished
 *    set's series are read in label order, not in the order of their
 *    memory.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PROMREAD_SAMPLES_H
#define PROMREAD_SAMPLES_H

#include "engine.h"

/*
 * Prefetch hints: GCC's and Clang's builtin, nothing with other compilers.
 * A prefetch never faults, so an address past an allocation only wastes
 * the hint.
 */
#if defined(__GNUC__)
#define PromPrefetch(address)			__builtin_prefetch(address)
#define PromPrefetchForWrite(address)	__builtin_prefetch((address), 1)
#else
#define PromPrefetch(address)			((void) (address))
#define PromPrefetchForWrite(address)	((void) (address))
#endif

#define PROM_CACHE_LINE		64

/* A sample as a block stores it: its time's offset from the block's base. */
typedef struct PromStoredSample
{
	int32		dt;
	char		value[sizeof(double)];	/* unaligned, read by memcpy */
} PromStoredSample;

/* A run of samples of one series: see the header comment. */
typedef struct PromSampleBlock
{
	uint32		count;
	uint32		capacity;
	PromStoredSample samples[FLEXIBLE_ARRAY_MEMBER];
} PromSampleBlock;

/* The time of sample i of a block of the given base (modulo 2^64). */
static inline int64
PromBlockTime(const PromSampleBlock *block, int64 base, uint32 i)
{
	return (int64) ((uint64) base + (uint64) (int64) block->samples[i].dt);
}

/* Sample i of a block of the given base. */
static inline PromSample
PromBlockSample(const PromSampleBlock *block, int64 base, uint32 i)
{
	PromSample	sample;

	sample.t = PromBlockTime(block, base, i);
	memcpy(&sample.v, block->samples[i].value, sizeof(double));
	return sample;
}

/* Can a block of this base hold a sample of time t? */
static inline bool
PromBaseHolds(int64 base, int64 t)
{
	return (uint64) t - (uint64) base + (UINT64CONST(1) << 31) <
		(UINT64CONST(1) << 32);
}

/* Store a sample at place i of a block whose base can hold its time. */
static inline void
PromBlockStore(PromSampleBlock *block, int64 base, uint32 i, int64 t, double v)
{
	Assert(PromBaseHolds(base, t));
	block->samples[i].dt = (int32) (uint32) ((uint64) t - (uint64) base);
	memcpy(block->samples[i].value, &v, sizeof(double));
}

/* The base before a block that has one (not a continuation). */
static inline int64 *
PromBlockOwnBase(const PromSampleBlock *block)
{
	return (int64 *) ((char *) unconstify(PromSampleBlock *, block) - sizeof(int64));
}

/* The link before a chained block's base. */
static inline PromSampleBlock **
PromBlockLink(const PromSampleBlock *block)
{
	return (PromSampleBlock **) ((char *) PromBlockOwnBase(block) -
								 sizeof(PromSampleBlock *));
}

/* The block a chained block's link points to. */
static inline PromSampleBlock *
PromBlockLinked(const PromSampleBlock *block)
{
	return *PromBlockLink(block);
}

typedef struct PromLabelValue PromLabelValue;

/*
 * One series: its label values (one per column of its layout read from
 * rows, in the layout's order of such columns, each a distinct value shared
 * by the series that have it; its CONST columns' values are the layout's),
 * its samples in blocks.  Its header is 24 bytes: its layout is named by its
 * number in the set, not by a pointer.
 */
struct PromSeries
{
	PromSampleBlock *tail;		/* its last block */
	int32		nsamples;		/* at most promread.max_samples */
	uint32		message_bytes;	/* its TimeSeries message in a SAMPLES
								 * response: its labels, and its samples
								 * added up as they arrive; from
								 * PROM_MESSAGE_BYTES_MAX on, only that it
								 * is too large for a response */
	uint32		successor;		/* the series that followed it last: 1 +
								 * its place in the set's series while rows
								 * are added (creation order); 0: none */
	uint16		layout;			/* its layout's number in its set */
	uint16		nvalues:13;		/* its label values: its layout's columns
								 * read from rows, kept here so that its
								 * head is found without its layout */
	uint16		rejected:1;		/* its labels fail a matcher decided per
								 * value: it takes no samples (its head
								 * has no room) and is not answered */
	uint16		needs_sort:1;	/* samples out of time order (it is in its
								 * set's list of series to sort) */
	uint16		continued:1;	/* its last block continues its head */
	PromLabelValue *values[FLEXIBLE_ARRAY_MEMBER];
	/* then its head's base and its head, PromSeriesHead */
};

StaticAssertDecl(PROM_MAX_LABELS < (1 << 13),
				 "PromSeries.nvalues cannot count a series' labels");

/*
 * The message size a series counts to: a SAMPLES response holds at most 4 GB
 * uncompressed, and a message at least this large is refused.  Rows add to a
 * series' count between two checks at most a block's room of samples, 22
 * bytes each, so the count stays far from overflowing.
 */
#define PROM_MESSAGE_BYTES_MAX	(PG_UINT32_MAX - (1 << 20))

/* The first of a series' blocks, made with it after its values and base. */
static inline PromSampleBlock *
PromSeriesHead(const PromSeries *series)
{
	return (PromSampleBlock *) ((char *) &series->values[series->nvalues] +
								sizeof(int64));
}

/* The base of a block of a series: its own, or its head's (a continuation). */
static inline int64
PromBlockBase(const PromSeries *series, const PromSampleBlock *block)
{
	if (series->continued && block == series->tail)
		block = PromSeriesHead(series);
	return *PromBlockOwnBase(block);
}

/* The block of a series after the given one; NULL after the last. */
static inline PromSampleBlock *
PromSeriesNextBlock(const PromSeries *series, const PromSampleBlock *block)
{
	if (block == series->tail)
		return NULL;
	if (block == PromSeriesHead(series))
		return series->continued ? series->tail : PromBlockLinked(series->tail);
	return PromBlockLinked(block);
}

/* Is t not after the time of the sample a series took last? */
static inline bool
PromSeriesSampleIsLate(const PromSeries *series, int64 t)
{
	const PromSampleBlock *tail = series->tail;

	return tail->count > 0 &&
		t <= PromBlockTime(tail, PromBlockBase(series, tail), tail->count - 1);
}

/*---- Reading a series' samples ----*/

/* A run of a series' samples: one block's, with their base. */
typedef struct PromSampleRun
{
	const PromSeries *series;
	const PromSampleBlock *block;	/* NULL: past the last run */
	int64		base;
	uint32		count;
} PromSampleRun;

/* Samples a run asks for ahead of the one being read: see below. */
#define PROM_SAMPLES_AHEAD	32

/*
 * Set a run at a block of its series (NULL: past the last), asking for the
 * start of the block after it, which the hardware's prefetcher does not
 * follow across series.
 */
static pg_attribute_always_inline void
PromSampleRunAt(PromSampleRun *run, const PromSampleBlock *block)
{
	run->block = block;
	run->count = 0;
	if (block != NULL)
	{
		const PromSampleBlock *next = PromSeriesNextBlock(run->series, block);
		const char *start = (const char *) next;

		run->base = PromBlockBase(run->series, block);
		run->count = block->count;
		if (next != NULL)
		{
			PromPrefetch(start);
			PromPrefetch(start + PROM_CACHE_LINE);
			PromPrefetch(start + 2 * PROM_CACHE_LINE);
			PromPrefetch(start + 3 * PROM_CACHE_LINE);
		}
	}
}

/* The first run of a series' samples (it may be empty). */
static pg_attribute_always_inline void
PromSampleRunFirst(PromSampleRun *run, const PromSeries *series)
{
	run->series = series;
	PromSampleRunAt(run, PromSeriesHead(series));
}

/* The run after a run; its block is NULL past the last. */
static pg_attribute_always_inline void
PromSampleRunNext(PromSampleRun *run)
{
	PromSampleRunAt(run, PromSeriesNextBlock(run->series, run->block));
}

/*
 * Sample i of a run.  While it is read, the sample PROM_SAMPLES_AHEAD
 * places on is asked for, within the run (past its end lies other memory).
 */
static pg_attribute_always_inline PromSample
PromSampleRunSample(const PromSampleRun *run, uint32 i)
{
	if (i + PROM_SAMPLES_AHEAD < run->count)
		PromPrefetch(&run->block->samples[i + PROM_SAMPLES_AHEAD]);
	return PromBlockSample(run->block, run->base, i);
}

/*
 * Histograms asked for ahead of their reading: how many samples ahead, and
 * how many cache lines of each (the header, the spans and the first
 * buckets: the whole of a histogram of up to 14 buckets in two spans).
 */
#define PROM_HISTOGRAMS_AHEAD			16
#define PROM_HISTOGRAM_PREFETCH_LINES	4

/*
 * Ask for the histogram of a sample, to be read soon.  A series' histograms
 * lie in the set's memory in the order their rows arrived, far apart when
 * series interleave, so that a walk of a series in time order would wait
 * for a cache miss at each one.
 */
static inline void
PromPrefetchHistogram(const PromSample *sample)
{
	const char *h = (const char *) PromSampleHistogram(sample);
	int			line;

	for (line = 0; line < PROM_HISTOGRAM_PREFETCH_LINES; line++)
		PromPrefetch(h + line * PROM_CACHE_LINE);
}

/*
 * A walk PROM_HISTOGRAMS_AHEAD samples ahead of a reader of a series of
 * histograms, over its blocks, asking for each histogram it passes
 * (PromPrefetchHistogram): a series' first blocks are short, so a look
 * ahead within a run alone would miss much of it.
 */
typedef struct PromHistogramsAhead
{
	PromSampleRun run;
	uint32		i;				/* the run's next sample to ask for */
} PromHistogramsAhead;

/* Ask for the next histogram of the walk, if the series has one. */
static inline void
PromHistogramsAheadStep(PromHistogramsAhead *ahead)
{
	PromSample	sample;

	while (ahead->run.block != NULL && ahead->i == ahead->run.count)
	{
		PromSampleRunNext(&ahead->run);
		ahead->i = 0;
	}
	if (ahead->run.block == NULL)
		return;
	sample = PromBlockSample(ahead->run.block, ahead->run.base, ahead->i++);
	PromPrefetchHistogram(&sample);
}

/*
 * Start the walk for a reader at a series' first sample: the first
 * PROM_HISTOGRAMS_AHEAD histograms are asked for; then one per step, as
 * the reader takes one.
 */
static inline void
PromHistogramsAheadStart(PromHistogramsAhead *ahead, const PromSeries *series)
{
	int			n;

	PromSampleRunFirst(&ahead->run, series);
	ahead->i = 0;
	for (n = 0; n < PROM_HISTOGRAMS_AHEAD; n++)
		PromHistogramsAheadStep(ahead);
}

/* The bytes of sample i of a run's value, unaligned. */
static pg_attribute_always_inline const char *
PromSampleRunValueBytes(const PromSampleRun *run, uint32 i)
{
	return run->block->samples[i].value;
}

/*
 * A finished set's series are read in label order, not in the order of
 * their memory, so each would be a few cache misses.  While series i is
 * read, PromPrefetchSeries asks for the series PROM_SERIES_AHEAD places on
 * (its header and what follows it: its head, then its values); its header
 * having arrived by then, for the head of the series PROM_HEAD_AHEAD places
 * on (four lines: a block of ten samples, however it falls across lines);
 * and, that series' header having arrived, for the last block of the series
 * PROM_TAIL_AHEAD places on when it has more than its head.  Inlined into
 * their callers, since a compiler may drop a function that only prefetches.
 */
#define PROM_SERIES_AHEAD	8
#define PROM_HEAD_AHEAD		4
#define PROM_TAIL_AHEAD		2

/* Ask for the four cache lines from an address. */
static pg_attribute_always_inline void
PromPrefetchFourLines(const void *address)
{
	const char *p = (const char *) address;

	PromPrefetch(p);
	PromPrefetch(p + PROM_CACHE_LINE);
	PromPrefetch(p + 2 * PROM_CACHE_LINE);
	PromPrefetch(p + 3 * PROM_CACHE_LINE);
}

static pg_attribute_always_inline void
PromPrefetchSeries(PromSeries *const *series, int i, int nseries)
{
	if (i + PROM_SERIES_AHEAD < nseries)
		PromPrefetchFourLines(series[i + PROM_SERIES_AHEAD]);
	if (i + PROM_HEAD_AHEAD < nseries)
	{
		const PromSeries *ahead = series[i + PROM_HEAD_AHEAD];

		/* the head's base lies before it */
		PromPrefetchFourLines(PromBlockOwnBase(PromSeriesHead(ahead)));
	}
	if (i + PROM_TAIL_AHEAD < nseries)
	{
		const PromSeries *ahead = series[i + PROM_TAIL_AHEAD];

		if (ahead->tail != PromSeriesHead(ahead))
		{
			/* a chained block begins at its link, a continuation at its count */
			const char *start = ahead->continued ? (const char *) ahead->tail :
				(const char *) PromBlockLink(ahead->tail);

			PromPrefetch(start);
			PromPrefetch(start + PROM_CACHE_LINE);
		}
	}
}

#endif							/* PROMREAD_SAMPLES_H */

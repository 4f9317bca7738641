/*-------------------------------------------------------------------------
 *
 * samples.c
 *	  A series' sample blocks: made as the series grows, chained, merged
 *	  with another series', sorted; and copied out.
 *
 * 1. A series is made with its head, a block as large as the series made
 *    before it then is (series_index.c): when each series' rows come
 *    together, series tend to be alike.
 * 2. A full head that is the arena's newest allocation grows in place by
 *    one sample, so that a series whose rows come together is one block
 *    without slack.
 * 3. Otherwise a block is chained, twice as large as the last, up to 1024
 *    samples; but no larger than what remains of the series' share of the
 *    rows its scan's plan expects, so that when series interleave the last
 *    block is not half empty; and past that share an eighth of what the
 *    series holds.  A block also starts anew when a time lies more than
 *    24.8 days from its base.
 * 4. Series that interleave are all made before any has a second row, so
 *    before their share is known: each has a head of four samples, then
 *    the rest of its share in a block that continues the head, without a
 *    link or base of its own (samples.h).
 * 5. Two series of one label set (met apart) are merged by giving one the
 *    other's blocks; a series whose samples did not arrive in time order
 *    is sorted when the set is finished, by a stable merge sort that keeps,
 *    of several samples of one millisecond, the one read last.
 * 6. A series adds up its message's bytes in a SAMPLES response as its
 *    samples arrive (group.c), but for their times' varints, counted per
 *    block when the set is finished (PromSeriesCountTimes).  A series of
 *    histograms counts its message anew, histogram by histogram, only when
 *    a SAMPLES answer asks for the set's bytes (PromSeriesCountHistograms):
 *    what its rows added counted floats, and a chunked answer needs none.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <math.h>

#include "histogram/histogram.h"
#include "miscadmin.h"
#include "series_set.h"
#include "utils/memutils.h"

/* The least block chained past a series' share of its expected rows. */
#define BLOCK_PAST_SHARE_CAPACITY	16

static PromSampleBlock *PromChainBlock(PromSeriesSet *set, PromSeries *series,
									   uint32 capacity, int64 base);
static void PromSeriesEndContinuation(PromSeriesSet *set, PromSeries *series);

/*
 * Make the block that continues a series' head (see PromSampleBlock), with
 * room for the given number of samples: no link, no base.
 */
static PromSampleBlock *
continue_head(PromSeriesSet *set, PromSeries *series, uint32 capacity)
{
	PromSampleBlock *block = arena_alloc(set, offsetof(PromSampleBlock, samples) +
										 sizeof(PromStoredSample) * capacity);

	Assert(series->tail == PromSeriesHead(series));
	init_block(block, capacity);
	series->tail = block;
	series->continued = true;
	if (unlikely(PromPhases.active))
		PromPhases.continuations++;
	return block;
}

/*
 * Make room for a sample of time t of a series whose tail block is full or
 * cannot hold t (more than 24.8 days from its base); a new block's base is
 * t.  A full tail block that can hold t and is the newest allocation of the
 * arena (the series of the rows before, when each series' rows come
 * together) grows in place by one sample, so that such a series' samples
 * are one block without slack, or, where its chunk ends, a small block that
 * grows in place in the next.  Otherwise a new block is chained: twice as
 * large as the tail, or what remains of the series' share of the rows its
 * source expects when that is less or at most twice the doubling (so that a
 * share is not split over two blocks of which the second is small), or,
 * once the series holds its share (the estimate was low for it), an eighth
 * of what it holds (at least BLOCK_PAST_SHARE_CAPACITY), so that a series a
 * little over its share gets a little more room, not as much again.  The
 * rest of a share after the head, when t is within the head's reach, goes
 * into a block that continues the head (series that interleave are all made
 * before any has a second row, so before their share is known: each has a
 * head of BLOCK_FIRST_CAPACITY samples, then such a block).
 */
PromSampleBlock *
PromSeriesGrowSamples(PromSeriesSet *set, PromSeries *series, int64 t)
{
	const PromLayout *layout = series_layout(set, series);
	PromSampleBlock *tail = series->tail;
	int64		base = PromBlockBase(series, tail);
	uint32		capacity = BLOCK_FIRST_CAPACITY;
	bool		rest_of_share = false;

	/* its message's count stops where a response would refuse it */
	series->message_bytes = message_bytes_counted(series->message_bytes);

	if (PromBaseHolds(base, t) &&
		PromArenaIsNewest(set->arena, &tail->samples[tail->capacity]))
	{
		if (PromArenaExtend(set->arena, sizeof(PromStoredSample)))
		{
			tail->capacity++;
			return tail;
		}
		/* its chunk is full: the next block grows in place in turn */
	}
	else
	{
		/* a doubling, but no more than the expected rows call for */
		double		share = ceil(layout->expected_rows / layout->nseries);
		double		rest = share - series->nsamples;

		capacity = Min(tail->capacity * 2, BLOCK_MAX_CAPACITY);
		if (share >= 1 && rest >= 1 && rest <= 2.0 * capacity)
		{
			/*
			 * the rest of its share where that is less than the doubling or
			 * at most twice it (so that the share is one block, not two)
			 */
			capacity = Max((uint32) Min(rest, BLOCK_MAX_CAPACITY),
						   BLOCK_FIRST_CAPACITY);
			rest_of_share = true;
		}
		else if (share >= 1 && rest < 1)
		{
			/* it holds its share: an eighth more */
			capacity = Min(capacity, Max((uint32) series->nsamples / 8,
										 BLOCK_PAST_SHARE_CAPACITY));
		}
	}
	if (rest_of_share && tail == PromSeriesHead(series) &&
		PromBaseHolds(base, t))
		return continue_head(set, series, capacity);
	return PromChainBlock(set, series, capacity, t);
}

/*
 * Make a chained block the last of a series' blocks, linked as samples.h's
 * comment on PromSampleBlock says.
 */
static void
link_block(PromSeries *series, PromSampleBlock *block)
{
	PromSampleBlock *tail = series->tail;

	Assert(!series->continued);
	if (tail == PromSeriesHead(series))
		*PromBlockLink(block) = block;	/* the first chained block, and the
										 * last */
	else
	{
		*PromBlockLink(block) = PromBlockLinked(tail);
		*PromBlockLink(tail) = block;
	}
	series->tail = block;
}

/*
 * Chain an empty block for the given number of samples, based at the given
 * time, to a series' blocks (a block that continues its head is given a
 * chained block of its own first).
 */
static PromSampleBlock *
PromChainBlock(PromSeriesSet *set, PromSeries *series, uint32 capacity,
			   int64 base)
{
	char	   *start;
	PromSampleBlock *block;

	if (series->continued)
		PromSeriesEndContinuation(set, series);
	start = arena_alloc(set, sizeof(PromSampleBlock *) + sizeof(int64) +
						offsetof(PromSampleBlock, samples) +
						sizeof(PromStoredSample) * capacity);
	block = (PromSampleBlock *) (start + sizeof(PromSampleBlock *) +
								 sizeof(int64));
	*PromBlockOwnBase(block) = base;
	init_block(block, capacity);
	link_block(series, block);
	return block;
}

/* Chain to a series a copy of a block of the given base, full. */
static void
chain_copy(PromSeriesSet *set, PromSeries *series,
		   const PromSampleBlock *block, int64 base)
{
	PromSampleBlock *copy = PromChainBlock(set, series, block->count, base);

	memcpy(copy->samples, block->samples,
		   sizeof(PromStoredSample) * block->count);
	copy->count = block->count;
}

/*
 * Give the block that continues a series' head a chained block of its own,
 * with a link and a base (the head's), so that blocks may follow it or its
 * samples be rebased.  Its memory stays unused in the arena: this happens
 * only to a series that outgrows its share, reaches a time beyond its head's
 * base, is merged with another, or has its samples sorted.
 */
static void
PromSeriesEndContinuation(PromSeriesSet *set, PromSeries *series)
{
	const PromSampleBlock *continuation = series->tail;

	Assert(series->continued);
	series->continued = false;
	series->tail = PromSeriesHead(series);
	chain_copy(set, series, continuation, *PromBlockOwnBase(series->tail));
	if (unlikely(PromPhases.active))
		PromPhases.continuations_ended++;
}

/*
 * Give a series the sample blocks of another, after its own: the other's
 * chained blocks, and a copy of its head, which has no link (a block that
 * continues the other's head is given a chained block of its own first).
 */
static void
append_blocks(PromSeriesSet *set, PromSeries *into, PromSeries *from)
{
	const PromSampleBlock *head = PromSeriesHead(from);
	PromSampleBlock *block;

	if (from->continued)
		PromSeriesEndContinuation(set, from);
	chain_copy(set, into, head, *PromBlockOwnBase(head));
	block = PromSeriesNextBlock(from, head);
	while (block != NULL)
	{
		/* read before linking the block changes its link */
		PromSampleBlock *next = PromSeriesNextBlock(from, block);

		link_block(into, block);
		block = next;
	}
}

/*
 * Give a series the samples of another of the same label set, after its own,
 * as one message: the labels once (the message size stops at
 * PROM_MESSAGE_BYTES_MAX, as in PromSeriesGrowSamples), the samples sorted
 * as one when the other's do not all follow its own.  The other keeps
 * nothing to sort.
 */
void
PromMergeSeries(PromSeriesSet *set, PromSeries *into, PromSeries *from)
{
	const PromSampleBlock *head = PromSeriesHead(from);
	bool		in_order = !from->needs_sort &&
		!PromSeriesSampleIsLate(into, PromBlockTime(head, PromBlockBase(from, head), 0));

	into->message_bytes =
		message_bytes_counted(from->message_bytes >= PROM_MESSAGE_BYTES_MAX ?
							  PROM_MESSAGE_BYTES_MAX :
							  (Size) into->message_bytes + from->message_bytes -
							  PromSeriesLabelsSize(set, from));
	append_blocks(set, into, from);
	into->nsamples += from->nsamples;
	from->needs_sort = false;
	if (!in_order)
		PromMarkUnsorted(set, into);
}

/*
 * Note that a series' samples are not in time order, so that finishing the
 * set sorts them (and no others).
 */
void
PromMarkUnsorted(PromSeriesSet *set, PromSeries *series)
{
	if (series->needs_sort)
		return;
	series->needs_sort = true;
	series_array_append(set, &set->unsorted, &set->nunsorted,
				  &set->unsorted_capacity, series);
}

/*
 * Add the bytes of a series' sample times to its message size, when its set
 * is finished (order.c): as it is stored, a sample counts the rest of its
 * field (PromStoreSample, series_set.h), not its time's varint, whose size is one for all the
 * times a block can hold but near the ends of varint sizes (in 1970 and
 * 1971, in 2109) or about time 0: those of such a block count one by one.
 */
void
PromSeriesCountTimes(PromSeries *series)
{
	const PromSampleBlock *block;
	Size		bytes = series->message_bytes;

	for (block = PromSeriesHead(series); block != NULL;
		 block = PromSeriesNextBlock(series, block))
	{
		int64		base = PromBlockBase(series, block);
		uint64		first = (uint64) base - (UINT64CONST(1) << 31);
		uint64		last = (uint64) base + ((UINT64CONST(1) << 31) - 1);
		uint32		j;

		/* times from first to last, not wrapping past 0 nor holding it */
		if (first - 1 < last &&
			wire_varint_size(first) == wire_varint_size(last))
			bytes += (Size) block->count * wire_sample_time_size((int64) first);
		else
			for (j = 0; j < block->count; j++)
				bytes += wire_sample_time_size(PromBlockTime(block, base, j));
	}
	series->message_bytes = message_bytes_counted(bytes);
}

/*
 * Count the message size of a series of histograms anew, when a SAMPLES
 * answer asks for its finished set's bytes (PromSeriesSetResultBytes): its
 * labels, and each histogram as a Histogram field of its TimeSeries.
 */
void
PromSeriesCountHistograms(PromSeriesSet *set, PromSeries *series)
{
	PromSampleRun run;
	PromHistogramsAhead ahead;
	Size		bytes = PromSeriesLabelsSize(set, series);

	PromHistogramsAheadStart(&ahead, series);
	for (PromSampleRunFirst(&run, series); run.block != NULL;
		 PromSampleRunNext(&run))
	{
		uint32		i;

		for (i = 0; i < run.count; i++)
		{
			PromSample	sample = PromSampleRunSample(&run, i);

			PromHistogramsAheadStep(&ahead);
			bytes += wire_len_field_size(PromHistogramMessageSize(PromSampleHistogram(&sample),
																  sample.t));
		}
	}
	set_message_bytes(set, series, bytes);
}

/*
 * Copy a series' samples, in the order of its blocks, to dest as an array of
 * PromSample, which need not be aligned (a serialized aggregate state).
 */
void
PromSeriesCopySamples(const PromSeries *series, void *dest)
{
	const PromSampleBlock *block;
	char	   *p = dest;

	for (block = PromSeriesHead(series); block != NULL;
		 block = PromSeriesNextBlock(series, block))
	{
		int64		base = PromBlockBase(series, block);
		uint32		j;

		for (j = 0; j < block->count; j++)
		{
			PromSample	sample = PromBlockSample(block, base, j);

			memcpy(p, &sample, sizeof(PromSample));
			p += sizeof(PromSample);
		}
	}
	Assert(p == (char *) dest + sizeof(PromSample) * series->nsamples);
}


/* How many samples a series holds (in time order once its set is finished). */
int64
PromSeriesSampleCount(const PromSeries *series)
{
	return series->nsamples;
}

/* Stable merge sort of samples by time; tmp has room for n samples. */
static void
merge_sort_samples(PromSample *samples, PromSample *tmp, int64 n)
{
	int64		width;

	/* insertion sort of runs of 16, then bottom-up merges */
	for (width = 0; width < n; width += 16)
	{
		int64		end = Min(width + 16, n);
		int64		i;

		for (i = width + 1; i < end; i++)
		{
			PromSample s = samples[i];
			int64		j = i;

			while (j > width && samples[j - 1].t > s.t)
			{
				samples[j] = samples[j - 1];
				j--;
			}
			samples[j] = s;
		}
	}
	for (width = 16; width < n; width *= 2)
	{
		int64		lo;

		CHECK_FOR_INTERRUPTS();
		for (lo = 0; lo < n - width; lo += 2 * width)
		{
			int64		mid = lo + width;
			int64		hi = Min(lo + 2 * width, n);
			int64		a = lo,
						b = mid,
						k = lo;

			if (samples[mid - 1].t <= samples[mid].t)
				continue;		/* already in order */
			while (a < mid && b < hi)
				tmp[k++] = samples[b].t < samples[a].t ? samples[b++] : samples[a++];
			while (a < mid)
				tmp[k++] = samples[a++];
			while (b < hi)
				tmp[k++] = samples[b++];
			memcpy(samples + lo, tmp + lo, sizeof(PromSample) * (hi - lo));
		}
	}
}

/*
 * Put a series' samples in time order, keeping of several samples of one
 * millisecond the one read last, and write them back into its blocks.
 */
void
PromSortSamples(PromSeriesSet *set, PromSeries *series)
{
	PromSample *samples;
	PromSample *tmp;
	PromSampleBlock *block;
	int64		n = series->nsamples;
	int64		kept;
	Size		message_bytes;
	int64		i;

	samples = MemoryContextAllocHuge(set->context,
									 sizeof(PromSample) * series->nsamples);
	tmp = MemoryContextAllocHuge(set->context,
								 sizeof(PromSample) * series->nsamples);
	PromSeriesCopySamples(series, samples);
	merge_sort_samples(samples, tmp, n);

	/* the last of each run of equal times wins */
	kept = 0;
	for (i = 0; i < n; i++)
	{
		if (kept > 0 && samples[kept - 1].t == samples[i].t)
			kept--;
		samples[kept++] = samples[i];
	}

	/*
	 * Refill the blocks in order, each based at its first sample's time (a
	 * block that continues the head, which has no base, is given one first);
	 * a block that cannot hold the next time leaves the rest of its room
	 * unused, and where the blocks run out (they held samples further apart)
	 * one more is chained.  Blocks left over become empty.
	 */
	if (series->continued)
		PromSeriesEndContinuation(set, series);
	i = 0;
	for (block = PromSeriesHead(series); block != NULL;
		 block = PromSeriesNextBlock(series, block))
	{
		int64	   *base = PromBlockOwnBase(block);

		block->count = 0;
		if (i < kept)
			*base = samples[i].t;
		while (i < kept && block->count < block->capacity &&
			   PromBaseHolds(*base, samples[i].t))
		{
			PromBlockStore(block, *base, block->count++, samples[i].t,
						   samples[i].v);
			i++;
		}
		if (block == series->tail && i < kept)
			PromChainBlock(set, series, (uint32) (kept - i), samples[i].t);
	}
	/* a series of histograms is counted later (PromSeriesCountHistograms) */
	if (!series_layout(set, series)->histograms)
	{
		message_bytes = PromSeriesLabelsSize(set, series);
		for (i = 0; i < kept; i++)
			message_bytes += WIRE_SAMPLE_FIELD_SIZE(samples[i].t, samples[i].v);
		set_message_bytes(set, series, message_bytes);
	}
	series->nsamples = kept;
	series->needs_sort = false;
	pfree(samples);
	pfree(tmp);
}

/*-------------------------------------------------------------------------
 *
 * series_set.c
 *	  A series set: rows grouped into series, for one query or aggregate.
 *
 * 1. PromSeriesSetCreate makes an empty set, whose memory lives in a
 *    context of its own and in an arena (arena.c) for its series, values
 *    and samples.
 * 2. Each source of rows is described by a layout (PromSeriesSetAddLayout,
 *    layout.c): a metric relation's label columns, or the label names of
 *    the aggregate.
 * 3. Rows are added one by one (PromSeriesSetAdd, group.c): each goes to
 *    the series of its label values, made when first met.
 * 4. PromSeriesSetFinish sorts the series in Prometheus's order, merging
 *    equal label sets (order.c), and puts each series' samples in time
 *    order (samples.c).
 * 5. Readers then take the series in order (PromSeriesSetSeries), their
 *    labels (layout.c) and their samples (samples.h), and the set is freed
 *    with its context.
 * 6. A layout may carry histograms (PromLayoutSetHistograms): each of its
 *    rows' histograms is copied into an arena of the set's own, charged to
 *    promread.max_memory as every arena is, and the sample's value is the
 *    copy's address (PromSampleHistogram).  That arena is one of huge
 *    pages (arena.c): a read's copies are megabytes, each read again far
 *    from the one before it.  It is never rewound, so a copy stays where
 *    it is while its sample moves between series (group.c) or within one
 *    (sorting).  A label set met through a layout of histograms and
 *    through one of floats is refused when the set is finished (order.c):
 *    one series cannot hold both.
 * 7. A set told to keep stored chunks (PromSeriesSetKeepChunks: a
 *    STREAMED_XOR_CHUNKS answer) takes a chunk metric's stored chunks as
 *    they are (PromSeriesSetAddChunk, group.c), not decoded: each is kept
 *    with its series, its bytes copied into the arena of histograms, which
 *    is never rewound.  Finishing the set gives each series its chunks in
 *    time order (group_stored_chunks), through the series merged into it
 *    (order.c tells which in their successor fields, unused by then);
 *    the encoder (chunk_encode.c) sends them beside the series' samples.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "histogram/histogram.h"
#include "miscadmin.h"
#include "series_set.h"
#include "utils/memutils.h"

/* Create an empty set whose memory lives in a child of the given context. */
PromSeriesSet *
PromSeriesSetCreate(MemoryContext context)
{
	MemoryContext setcxt;
	PromSeriesSet *set;

	setcxt = AllocSetContextCreate(context, "promread series",
								   ALLOCSET_SMALL_SIZES);
	set = MemoryContextAllocZero(setcxt, sizeof(PromSeriesSet));
	set->context = setcxt;
	set->row_context = AllocSetContextCreate(setcxt, "promread row",
											 ALLOCSET_SMALL_SIZES);
	set->arena = PromArenaCreate(setcxt);
	set->histogram_arena = PromArenaCreate(setcxt);
	PromArenaUseHugePages(set->histogram_arena);
	set->max_samples = promread_max_samples;
	set->series_capacity = 64;
	set->series = set_alloc_array(set,
								  sizeof(PromSeries *) * set->series_capacity);
	set->layouts_capacity = 4;
	set->layouts = MemoryContextAlloc(setcxt, sizeof(PromLayout *) *
									  set->layouts_capacity);
	set->slot_mask = 127;
	set->slots = set_alloc_array(set, sizeof(SeriesSlot) * (set->slot_mask + 1));
	memset(set->slots, 0, sizeof(SeriesSlot) * (set->slot_mask + 1));
	return set;
}

/*
 * Describe a source of rows of the set: names[i] is the label name of
 * column i, kinds[i] how it is read, types[i] its type (for SCALAR and
 * BINARY columns, whose output function prints the label), const_values[i]
 * the value of a CONST column.  Label names must be distinct.
 */
PromLayout *
PromSeriesSetAddLayout(PromSeriesSet *set, int ncolumns,
					   const char *const *names, const PromLabelKind *kinds,
					   const Oid *types, const char *const *const_values)
{
	PromGroupIndexNewest(set);
	return PromLayoutCreate(set, ncolumns, names, kinds, types, const_values);
}

/*
 * Drop the series that matchers decided per value rejected: they hold no
 * samples, and an answer holds only series with samples.
 */
static void
drop_rejected_series(PromSeriesSet *set)
{
	int			kept = 0;
	int			i;

	for (i = 0; i < set->nseries; i++)
		if (!set->series[i]->rejected)
			set->series[kept++] = set->series[i];
	set->nseries = kept;
}

/*
 * Tell a set to keep the stored chunks of chunk metrics as they are, for a
 * STREAMED_XOR_CHUNKS answer, rather than decode them into samples.
 */
void
PromSeriesSetKeepChunks(PromSeriesSet *set)
{
	set->keep_chunks = true;
}

/* Does a set keep stored chunks as they are? */
bool
PromSeriesSetKeepsChunks(const PromSeriesSet *set)
{
	return set->keep_chunks;
}

/* Order stored chunks of one series by time. */
static int
stored_chunk_cmp(const void *a, const void *b)
{
	int64		ta = ((const PromStoredChunk *) a)->min_t;
	int64		tb = ((const PromStoredChunk *) b)->min_t;

	return (ta > tb) - (ta < tb);
}

/*
 * Put a finished set's stored chunks in the order of its series, each
 * series' in time order: a counting sort by the series that holds each
 * (order.c left its place, from 1, in the successor field of every series,
 * a series merged into another the other's), then a sort of each series'.
 */
static void
group_stored_chunks(PromSeriesSet *set)
{
	PromStoredChunk *sorted;
	int		   *next;
	int			i;
	int			k;

	set->series_chunks = MemoryContextAllocHuge(set->context,
												sizeof(int) * (set->nseries + 1));
	memset(set->series_chunks, 0, sizeof(int) * (set->nseries + 1));
	for (k = 0; k < set->nchunks; k++)
		set->series_chunks[set->chunk_series[k]->successor]++;
	for (i = 0; i < set->nseries; i++)
		set->series_chunks[i + 1] += set->series_chunks[i];
	/* series_chunks[i + 1] is now the end of series i's chunks */
	next = palloc(sizeof(int) * (set->nseries + 1));
	memcpy(next, set->series_chunks, sizeof(int) * (set->nseries + 1));
	sorted = MemoryContextAllocHuge(set->context,
									sizeof(PromStoredChunk) * Max(set->nchunks, 1));
	for (k = 0; k < set->nchunks; k++)
	{
		uint32		place = set->chunk_series[k]->successor;

		Assert(place >= 1 && place <= (uint32) set->nseries);
		sorted[next[place - 1]++] = set->chunks[k];
	}
	pfree(next);
	pfree(set->chunks);
	pfree(set->chunk_series);
	set->chunk_series = NULL;
	set->chunks = sorted;
	for (i = 0; i < set->nseries; i++)
	{
		int			n = set->series_chunks[i + 1] - set->series_chunks[i];

		CHECK_FOR_INTERRUPTS();
		if (n > 1)
			qsort(&sorted[set->series_chunks[i]], n, sizeof(PromStoredChunk),
				  stored_chunk_cmp);
	}
}

/*
 * The stored chunks of series i of a finished set, in time order, and
 * their number (0 unless the set keeps chunks).
 */
const PromStoredChunk *
PromSeriesSetStoredChunks(const PromSeriesSet *set, int i, int *count)
{
	Assert(set->finished);
	if (set->series_chunks == NULL)
	{
		*count = 0;
		return NULL;
	}
	*count = set->series_chunks[i + 1] - set->series_chunks[i];
	return &set->chunks[set->series_chunks[i]];
}

/* Sort the series, merge equal label sets, put samples in time order. */
void
PromSeriesSetFinish(PromSeriesSet *set)
{
	int			i;

	Assert(!set->finished);
	PromGroupPlaceHeldRows(set);
	set->finished = true;
	set->last = NULL;
	/* a newest series of another's keys is merged with it by the sort */
	set->newest_unindexed = false;
	/* the index is for adding rows: its memory goes to the sort */
	set_free_array(set, set->slots, sizeof(SeriesSlot) * (set->slot_mask + 1));
	set->slots = NULL;
	drop_rejected_series(set);
	PromSortSeries(set);
	if (set->nchunks > 0)
		group_stored_chunks(set);
	for (i = 0; i < set->nunsorted; i++)
		if (set->unsorted[i]->needs_sort)
			PromSortSamples(set, set->unsorted[i]);
}

/*
 * Bytes a set holds outside memory contexts: its arena's.  Its context is a
 * child of the one it was created in, and counted with it.
 */
Size
PromSeriesSetArenaBytes(const PromSeriesSet *set)
{
	return PromArenaBytes(set->arena);
}

/*
 * The series of a set not finished yet and their number, in creation order,
 * the rows it holds placed first.
 */
PromSeries *const *
PromSeriesSetSeriesSoFar(PromSeriesSet *set, int *count)
{
	PromGroupPlaceHeldRows(set);
	return PromSeriesSetSeries(set, count);
}

/* Free a set and everything it holds. */
void
PromSeriesSetFree(PromSeriesSet *set)
{
	MemoryContextDelete(set->context);
}

/*
 * The series of a set and their number: in label-set order once the set is
 * finished, in creation order before (PromSeriesSetSeriesSoFar, while it may
 * hold rows).
 */
PromSeries *const *
PromSeriesSetSeries(const PromSeriesSet *set, int *count)
{
	if (set->holding != NULL)
		elog(ERROR, "promread series set read while it holds rows");
	*count = set->nseries;
	return set->series;
}

/*
 * Bytes of a finished set's series as the fields of a SAMPLES QueryResult,
 * added up while finishing, so that the response's length is known before
 * the series are read in their order.  Series of histograms are counted
 * here, on the first call: only a SAMPLES answer needs their sizes, and
 * measuring each histogram costs a pass over its buckets.
 */
Size
PromSeriesSetResultBytes(PromSeriesSet *set)
{
	Assert(set->finished);
	if (set->histograms_uncounted)
	{
		int			i;

		for (i = 0; i < set->nseries; i++)
		{
			CHECK_FOR_INTERRUPTS();
			if (series_layout(set, set->series[i])->histograms)
				PromSeriesCountHistograms(set, set->series[i]);
		}
		set->histograms_uncounted = false;
	}
	return set->result_bytes;
}

/* Does a series of a set hold histograms (rather than floats)? */
bool
PromSeriesHoldsHistograms(const PromSeriesSet *set, const PromSeries *series)
{
	return series_layout(set, series)->histograms;
}

/*
 * Copy a prom_histogram Datum, detoasted, into the set's histogram arena and
 * return the sample value that points to it, for a layout of histograms.
 * The detoasted value, when detoasting made one, is freed at once.
 */
double
PromSeriesSetCopyHistogram(PromSeriesSet *set, Datum value)
{
	MemoryContext oldcxt = MemoryContextSwitchTo(set->row_context);
	struct varlena *detoasted = PG_DETOAST_DATUM(value);
	PromHistogram *copy;

	MemoryContextSwitchTo(oldcxt);
	copy = PromArenaAlloc(set->histogram_arena, VARSIZE(detoasted));
	memcpy(copy, detoasted, VARSIZE(detoasted));
	if ((Pointer) detoasted != DatumGetPointer(value))
		pfree(detoasted);
	return PromHistogramSampleValue(copy);
}

/* Number of rows added to the set (samples before duplicate removal). */
int64
PromSeriesSetSampleCount(const PromSeriesSet *set)
{
	return set->nsamples;
}

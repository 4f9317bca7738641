/*-------------------------------------------------------------------------
 *
 * group.c
 *	  The row path: each row of a scan (or of the aggregate) to its series.
 *
 * An answer holds few series but many rows, so a row must cost little and
 * everything else is done once a series.  A row goes, in order:
 *
 * 1. PromSeriesSetAdd: a row of the series of the row before, recognized by
 *    that series' row image (row_keys.h), whose sample comes later and fits
 *    the series' last block, is stored here and costs nothing more.
 * 2. add_row: its keys are read, borrowed from the tuple, and compared with
 *    the series of the row before (set_row_image then takes this row as
 *    that series' image).
 * 3. When series interleave (rows ordered by time), they come round in the
 *    same order: each series remembers which followed it last, and that
 *    one is tried next (guess_successor).  Guesses that keep failing (rows
 *    of each time in no fixed order) are stopped for a while.
 * 4. A row that follows a run of rows of the newest series most likely
 *    begins a series: it is made without a lookup
 *    (create_series_unindexed) and indexed later, twins merged by the sort.
 * 5. While no guesses are made, rows are held, sixteen at a time, and
 *    placed together (hold_row, place_held_rows), so that the cache misses
 *    of their lookups overlap.
 * 6. Otherwise the row's keys are hashed and looked up in the index
 *    (series_of_keys, series_index.c); a series is made when none matches.
 *    Right after a series was made, the next new one is made at once and
 *    looked up when the row after it comes (index_newest_series), by when
 *    its slot of the index has arrived in the cache.
 * 7. The sample is appended to its series' last block (samples.c grows
 *    them); a sample out of time order marks its series for sorting.  A
 *    series whose labels fail a matcher decided per value (layout.c) has no
 *    room in its head, so its rows leave step 1 for add_row, which drops
 *    them.
 *
 * Samples known to be of one series (a chunk of a shard's answer, a series
 * of another aggregate state) are added as a run (PromSeriesSetAddRun): the
 * first as a row, the others appended to its series at step 7.  A stored
 * chunk kept as it is (PromSeriesSetAddChunk) goes to its series by steps 2
 * and 6, and is kept beside its samples (series_set.c).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "miscadmin.h"
#include "row_keys.h"
#include "utils/memutils.h"

/*
 * The row path begins a page of code (PromSeriesSetAdd), with compilers
 * that can align a function.
 */
#ifdef pg_attribute_aligned
#define PROM_CODE_PAGE_ALIGNED	pg_attribute_aligned(4096)
#else
#define PROM_CODE_PAGE_ALIGNED
#endif

/* Rows of an image's series that it may fail to match before it is given up. */
#define ROW_IMAGE_MISSES	64

/*
 * Keep the row's keys as the image of its series, when its present TEXT
 * keys are short inline values, in increasing places, within ROW_IMAGE_MAX
 * bytes.  A layout whose images keep failing to match rows of their series
 * (a column between its labels that changes on every row, values that are
 * not parts of one tuple) stops keeping them.
 */
static void
set_row_image(PromLayout *layout, const PromSeries *series,
			  const Datum *values, const bool *isnull)
{
	RowImage   *image = &layout->image;
	/* read once: the compiler must assume that the stores change them */
	const uint16 *columns = layout->key_columns;
	int			window_first = layout->window_first;
	int			ntext = layout->ntext;
	int			nkeys = layout->nkeys;
	bool	   *nulls = image->nulls;
	Datum	   *expected = image->expected;
	Datum	   *compared = image->compared;
	int			first_column = -1;
	Datum		first = 0;
	Datum		end = 0;
	Datum		last = 0;
	int			k;

	if (image->series == series && ++image->misses > ROW_IMAGE_MISSES)
		image->kept = false;
	image->series = NULL;
	if (!image->kept)
		return;
	for (k = 0; k < nkeys; k++)
	{
		int			i = columns[k];
		int			c = i - window_first;
		bool		null = isnull[i];
		Datum		datum = values[i];
		const char *value = DatumGetPointer(datum);

		/* a NULL key compares no bits of its Datum */
		nulls[c] = null;
		compared[c] = null ? 0 : ~(Datum) 0;
		if (null)
			expected[c] = 0;
		else if (k >= ntext)
			expected[c] = datum;
		else
		{
			if (!VARATT_IS_SHORT(value) || VARATT_IS_EXTERNAL(value))
				return;
			if (first_column < 0)
			{
				first_column = c;
				first = end = datum;
			}
			else if (datum < end)
				return;
			end = datum + VARSIZE_SHORT(value);
			if (end - first > ROW_IMAGE_MAX)
				return;
			expected[c] = datum - first;
			last = datum;
		}
	}
	/* without a present TEXT key, the first column's Datum is masked off */
	image->first_column = Max(first_column, 0);
	image->last_header = last - first;
	image->len = end - first;
	if (image->len > 0)
		memcpy(image->bytes, DatumGetPointer(first), image->len);
	image->series = series;
}

/*
 * Rows of the newest series, the one of the row before, after which a row of
 * other keys makes its series without a lookup (create_series_unindexed).
 */
#define RUN_ROWS	8

/*
 * Does a row of other keys than the row before's, whose series is not the
 * one guessed to follow, come after a run of rows: the previous row's series
 * the newest, with RUN_ROWS samples or more?  Then it most likely begins a
 * series of its own (each series' rows come together).  Not with matchers
 * decided per value: a series made twice (the sort merges such twins)
 * would decide them twice.
 */
static inline bool
follows_run(const PromSeriesSet *set, const PromLayout *layout,
			const PromSeries *previous)
{
	return previous != NULL && previous == set->series[set->nseries - 1] &&
		previous->nsamples >= RUN_ROWS && layout->nfilters == 0;
}

/*
 * The number of a new series of the current row's keys, made without
 * looking for one in the index, when the row follows a run of rows
 * (follows_run): only its shared values are looked up.  Its series and
 * those made so after it are put in the index when a row is looked up there
 * (PromIndexPendingSeries); until then a row of the keys of an earlier
 * series that follows a run makes another series of these keys, which the
 * sort merges with it.  Such a series comes after RUN_ROWS samples of
 * another, so they are at most one for RUN_ROWS rows: rows that come back
 * to their series in runs take at most the memory of series of RUN_ROWS
 * samples.  Hashing the
 * row's keys, probing the index and putting the series there are spared.
 */
static pg_noinline uint32
create_series_unindexed(PromSeriesSet *set, PromLayout *layout,
						const Datum *values, const bool *isnull, int64 t)
{
	PromSeries *series;

	PromHashSharedKeys(layout);
	PromLookUpSharedValues(set, layout, values);
	series = PromCreateSeries(set, layout, values, t);
	if (layout->image.kept)
		set_row_image(layout, series, values, isnull);
	if (unlikely(PromPhases.active))
		PromPhases.after_runs++;
	return set->nseries;
}

/*
 * The number (1 + place in set->series) of the series of the current row's
 * keys, found in the index or made; apart from PromSeriesSetAdd (see the
 * file header).
 */
static pg_noinline uint32
series_of_keys(PromSeriesSet *set, PromLayout *layout, const Datum *values,
			   const bool *isnull, int64 t)
{
	uint64		hash = PromHashRow(layout, layout->row_hashes);
	PromSeries *previous = set->last;
	bool		index_after_next_row;
	uint32		empty = 0;
	uint32		number = 0;

	if (set->unindexed_from < set->nseries)
		PromIndexPendingSeries(set);

	/*
	 * The probe of the index is a cache miss when the set has many series:
	 * its slot is asked for first, and the shared values are looked up while
	 * it comes.  Right after a series was made, a row of other keys most
	 * likely makes one too: it is made at once, and looked up later
	 * (index_newest_series), when its slot has come; not when the layout
	 * decides matchers per value, which a series made twice would decide
	 * twice.
	 */
	PromPrefetch(home_slot(set, hash));
	PromLookUpSharedValues(set, layout, values);
	index_after_next_row = previous != NULL &&
		previous == set->series[set->nseries - 1] &&
		layout->nfilters == 0;
	if (!index_after_next_row)
	{
		const SeriesSlot *found = PromFindSeries(set, layout, hash, NULL,
												 &empty);

		if (found != NULL)
			number = found->number;
	}
	if (number == 0)
	{
		PromSeries *series = PromCreateSeries(set, layout, values, t);

		number = set->nseries;
		if (index_after_next_row)
		{
			set->newest_unindexed = true;
			set->newest_hash = hash;
		}
		else
			PromIndexSeries(set, set->nseries, hash, empty);
		set->unindexed_from = set->nseries;
		/*
		 * the next row is likely the new series' own when the series of the
		 * row before had rows before it (series whose rows come together),
		 * not when it was new too (series that interleave, met first)
		 */
		if (layout->image.kept && (previous == NULL || previous->nsamples > 1))
			set_row_image(layout, series, values, isnull);
	}
	return number;
}

/*
 * Look up the newest series, made without a lookup (series_of_keys), in the
 * index, now that its slot has had time to come: put it there, or, when the
 * index holds a series of its keys (its rows had come before, then those of
 * another series), give that series its samples and take the newest back.
 * Samples that fit a block are copied out, and the newest's memory goes
 * back to the arena when it is the newest there; more are passed on in their
 * blocks.  Called before a row of another series is placed, the newest being
 * the previous row's, and before a layout is made (PromGroupIndexNewest): so
 * while the newest waits, the arena gives memory to nothing but it, its
 * values and its blocks, which the rewind takes.  Returns the series that
 * now holds the previous row.
 */
static pg_noinline PromSeries *
index_newest_series(PromSeriesSet *set)
{
	PromSeries *newest = set->series[set->nseries - 1];
	PromLayout *layout = series_layout(set, newest);
	PromSeries *before = set->nseries > 1 ? set->series[set->nseries - 2] : NULL;
	const SeriesSlot *found;
	PromSeries *into;
	uint32		empty;

	Assert(set->newest_unindexed && set->last == newest &&
		   set->unindexed_from == set->nseries);
	set->newest_unindexed = false;
	found = PromFindSeries(set, layout, set->newest_hash, newest, &empty);
	if (found == NULL)
	{
		PromIndexSeries(set, set->nseries, set->newest_hash, empty);
		return newest;
	}

	/* nothing may refer to the newest after this */
	into = found->series;
	if (before != NULL && before->successor == (uint32) set->nseries)
		before->successor = found->number;
	if (layout->image.series == newest)
		layout->image.series = into;
	if (newest->needs_sort)
	{
		Assert(set->unsorted[set->nunsorted - 1] == newest);
		set->nunsorted--;
	}
	set->nseries--;
	set->unindexed_from = set->nseries;
	layout->nseries--;
	set->last = into;

	if (newest->nsamples <= BLOCK_MAX_CAPACITY)
	{
		int			n = newest->nsamples;
		PromSample *samples = MemoryContextAlloc(set->context,
												 sizeof(PromSample) * n);
		int			i;

		PromSeriesCopySamples(newest, samples);
		PromArenaRewind(set->arena, newest);
		for (i = 0; i < n; i++)
			PromAppendSample(set, into, PromSeriesSampleIsLate(into, samples[i].t),
						  samples[i].t, samples[i].v);
		pfree(samples);
	}
	else
		PromMergeSeries(set, into, newest);
	return into;
}

/*
 * Failed guesses of the series that follows in a row after which the next
 * rows go to the index without a guess, and how many.
 */
#define SUCCESSOR_MISSES_MAX	16
#define SUCCESSOR_SKIPS			1024

/*
 * The series that followed the previous row's last time, when the current
 * row's keys are its (interleaved series tend to come round in the same
 * order); NULL otherwise.  A right guess asks for the series that followed
 * the guessed one (its header, its values and its first block, after which
 * its own values lie), which the next row is then compared with: one row
 * ahead only, for each step needs the header of the series before.
 *
 * When the guesses keep failing (the rows of each time in no fixed order of
 * series), each costing a cache miss or two for nothing, the rows after
 * SUCCESSOR_MISSES_MAX failures in a row make no guess for SUCCESSOR_SKIPS
 * rows (held ones included: hold_row), then try again.
 */
static inline PromSeries *
guess_successor(PromSeriesSet *set, const PromLayout *layout,
				const PromSeries *previous)
{
	PromSeries *series;

	if (unlikely(set->successor_skips > 0))
	{
		set->successor_skips--;
		return NULL;
	}
	if (previous == NULL || previous->successor == 0)
		return NULL;
	series = set->series[previous->successor - 1];
	if (series->layout == layout->number && keys_equal(layout, series))
	{
		set->successor_misses = 0;
		/* the next row's likely series, while this row is placed */
		if (series->successor != 0)
			PromPrefetchFourLines(set->series[series->successor - 1]);
		return series;
	}
	if (++set->successor_misses == SUCCESSOR_MISSES_MAX)
	{
		set->successor_misses = 0;
		set->successor_skips = SUCCESSOR_SKIPS;
	}
	return NULL;
}

/*
 * Rows held while no guesses are made, to be looked up together: their keys
 * (text keys' bytes copied, for the tuple goes with the row), the keys'
 * hashes and the row's, and samples.
 */
#define HOLD_ROWS	16
#define HOLD_BYTES	4096

typedef struct HeldRow
{
	uint64		hash;
	int64		t;
	double		v;
} HeldRow;

struct HeldRows
{
	int			count;
	HeldRow		rows[HOLD_ROWS];
	RowKey	   *keys;			/* a row of the layout's columns each */
	uint64	   *key_hashes;		/* and their hashes (layout->row_hashes) */
	Size		bytes_used;
	char		bytes[HOLD_BYTES];	/* their text keys' bytes */
	PromSeries *before;			/* the series of the row before them */
};

/*
 * Look up and place the rows a layout holds, in their order; returns the
 * series of the last, the set's previous row's now.  Their probes were asked
 * for as they came; the series at the first slots with their tags are asked
 * for first, then those series' last blocks, so that the misses of all the
 * rows overlap instead of coming one after another, row after row.
 */
static pg_noinline PromSeries *
place_held_rows(PromSeriesSet *set)
{
	PromLayout *layout = set->holding;
	HeldRows   *held = layout->held;
	RowKey	   *current_row = layout->row;
	uint64	   *current_hashes = layout->row_hashes;
	PromSeries *previous = held->before;
	const SeriesSlot *likely[HOLD_ROWS];
	int			j;
	int			k;

	if (set->unindexed_from < set->nseries)
		PromIndexPendingSeries(set);
	for (j = 0; j < held->count; j++)
	{
		uint32		tag = (uint32) (held->rows[j].hash >> 32);
		uint32		slot = tag & set->slot_mask;

		/* the first slot with the row's tag: its likely series' */
		likely[j] = next_tagged_slot(set, tag, &slot);
		if (likely[j] != NULL)
			PromPrefetch(likely[j]->series);
	}
	for (j = 0; j < held->count; j++)
	{
		if (likely[j] != NULL)
		{
			const PromSeries *series = likely[j]->series;
			const PromSampleBlock *tail = series->tail;

			PromPrefetchForWrite(&tail->samples[tail->count]);
			for (k = 0; k < layout->nkeys; k++)
				PromPrefetch(series->values[k]);
		}
	}
	for (j = 0; j < held->count; j++)
	{
		const HeldRow *row = &held->rows[j];
		const SeriesSlot *found;
		PromSeries *series;
		uint32		empty;
		uint32		number;

		/* the held row's keys stand for the current row's for a while */
		layout->row = held->keys + j * layout->ncolumns;
		layout->row_hashes = held->key_hashes + j * layout->ncolumns;
		found = PromFindSeries(set, layout, row->hash, NULL, &empty);
		if (found != NULL)
		{
			series = found->series;
			number = found->number;
		}
		else
		{
			PromLookUpSharedValues(set, layout, NULL);
			series = PromCreateSeries(set, layout, NULL, row->t);
			number = set->nseries;
			PromIndexSeries(set, set->nseries, row->hash, empty);
			set->unindexed_from = set->nseries;
		}
		if (previous != NULL)
			previous->successor = number;
		if (likely(!series->rejected))
			PromAppendSample(set, series, PromSeriesSampleIsLate(series, row->t),
						  row->t, row->v);
		else
			set->nsamples--;
		set->last_t = row->t;
		previous = series;
	}
	layout->row = current_row;
	layout->row_hashes = current_hashes;
	set->last = previous;
	held->count = 0;
	held->bytes_used = 0;
	set->holding = NULL;
	return previous;
}

/*
 * Hold the current row, whose keys are read, for place_held_rows, when no
 * guesses are made and its layout's keys are simple (text, enum, other
 * pass-by-value: a series is made of them without the tuple): tells whether
 * it did.  The rows another layout holds are placed first.
 */
static bool
hold_row(PromSeriesSet *set, PromLayout *layout, PromSeries *previous,
		 int64 t, double v)
{
	HeldRows   *held = layout->held;
	HeldRow    *row;
	RowKey	   *keys;
	Size		need = 0;
	int			k;

	if (set->successor_skips == 0 || !layout->simple_keys)
		return false;
	for (k = 0; k < layout->ntext; k++)
		need += Max(layout->row[layout->key_columns[k]].len, 0);
	if (need > HOLD_BYTES)
		return false;
	if (set->holding != NULL &&
		(set->holding != layout || need > HOLD_BYTES - held->bytes_used))
		previous = place_held_rows(set);
	if (held == NULL)
	{
		held = layout->held = MemoryContextAllocZero(set->context,
													 sizeof(HeldRows));
		held->keys = MemoryContextAlloc(set->context, sizeof(RowKey) *
										HOLD_ROWS * layout->ncolumns);
		held->key_hashes = MemoryContextAlloc(set->context, sizeof(uint64) *
											  HOLD_ROWS * layout->ncolumns);
	}
	if (held->count == 0)
		held->before = previous;

	row = &held->rows[held->count];
	keys = held->keys + held->count * layout->ncolumns;
	for (k = 0; k < layout->nkeys; k++)
	{
		int			i = layout->key_columns[k];

		keys[i] = layout->row[i];
		if (k < layout->ntext && keys[i].len > 0)
		{
			memcpy(held->bytes + held->bytes_used, keys[i].key.bytes,
				   keys[i].len);
			keys[i].key.bytes = held->bytes + held->bytes_used;
			held->bytes_used += keys[i].len;
		}
	}
	/* the keys' hashes go with them, for the values' tables */
	row->hash = PromHashRow(layout,
							held->key_hashes + held->count * layout->ncolumns);
	row->t = t;
	row->v = v;
	PromPrefetch(home_slot(set, row->hash));
	held->count++;
	set->holding = layout;
	set->last = NULL;
	if (held->count == HOLD_ROWS)
		(void) place_held_rows(set);
	return true;
}

/* Free what detoasting the row's keys took, if it took anything. */
static inline void
reset_row_context(PromSeriesSet *set)
{
	if (unlikely(set->row_context_used))
	{
		MemoryContextReset(set->row_context);
		set->row_context_used = false;
	}
}

/* Raise the error of a set that would hold more than its samples' limit. */
static pg_noinline void
sample_limit_exceeded(const PromSeriesSet *set)
{
	ereport(ERROR,
			(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
			 errmsg("query exceeded the sample limit of " INT64_FORMAT " samples",
					set->max_samples),
			 errhint("Select fewer series or a shorter time range, or raise \"promread.max_samples\".")));
}

/*
 * Add a row that the usual row's path did not (PromSeriesSetAdd); matched:
 * its image matched, but its sample did not fit that path.
 */
static pg_noinline void
add_row(PromSeriesSet *set, PromLayout *layout, const Datum *values,
		const bool *isnull, int64 t, double v, bool matched)
{
	PromSeries *previous = set->last;
	PromSeries *series = previous;

	if (unlikely(++set->nsamples > set->max_samples))
		sample_limit_exceeded(set);

	/* is it a row of the series of the row before, by keys? */
	if (!matched)
	{
		if (read_row_keys(set, layout, values, isnull, previous))
		{
			if (layout->image.kept)
				set_row_image(layout, previous, values, isnull);
		}
		else
		{
			if (unlikely(set->newest_unindexed))
				previous = index_newest_series(set);
			series = guess_successor(set, layout, previous);
			if (series == NULL)
			{
				uint32		number;

				if (follows_run(set, layout, previous))
					number = create_series_unindexed(set, layout, values,
													 isnull, t);
				else
				{
					if (hold_row(set, layout, previous, t, v))
					{
						reset_row_context(set);
						return;
					}
					if (set->holding != NULL)
						previous = place_held_rows(set);
					number = series_of_keys(set, layout, values, isnull, t);
				}
				series = set->series[number - 1];
				if (previous != NULL)
					previous->successor = number;
			}
			set->last = series;
		}
		/* the row's keys are read: detoasted ones are not needed now */
		reset_row_context(set);
	}

	if (unlikely(series->rejected))
	{
		/* a filter decided per value rejects its series: no sample */
		set->nsamples--;
		return;
	}
	PromAppendSample(set, series,
				  series == previous ? t <= set->last_t :
				  PromSeriesSampleIsLate(series, t),
				  t, v);
	set->last_t = t;
}

/*
 * Add one row: its label values (in layout order, NULL allowed; values and
 * isnull have room for two columns at least, the width of a row image's
 * window, whose columns that are not keys must not be NULL for the image to
 * match) and its sample.  This is the per-row path: step 1 of the file
 * header.
 * Its callers check for interrupts: the executor between rows, the
 * aggregate's combining of states between samples.
 *
 * The usual row, of the series of the row before by its image, its sample
 * later than that row's and with room in the series' last block, is added
 * here; any other goes to add_row, called last (a jump), so that this path
 * saves registers only once the row's series and room for its sample are
 * checked, and keeps no arguments on the stack.
 *
 * It begins a page of code of its own where the compiler allows it: its
 * speed when series interleave depended on where it lay (bench/RESULTS.md,
 * "Where the code lies"), and there a change elsewhere in the library does
 * not move it.
 */
PROM_CODE_PAGE_ALIGNED void
PromSeriesSetAdd(PromSeriesSet *set, PromLayout *layout,
				 const Datum *values, const bool *isnull, int64 t, double v)
{
	PromSeries *series = set->last;
	bool		matched;

	Assert(!set->finished);
	matched = series != NULL && layout->image.series == series &&
		set->nsamples < set->max_samples &&
		row_matches_image(layout, values, isnull);
	if (likely(matched) && t > set->last_t)
	{
		PromSampleBlock *block = series->tail;
		int64		base = PromBlockBase(series, block);

		if (likely(block->count < block->capacity && PromBaseHolds(base, t)))
		{
			set->nsamples++;
			PromStoreSample(series, block, base, t, v);
			set->last_t = t;
			return;
		}
	}
	add_row(set, layout, values, isnull, t, v, matched);
}

/*
 * Add samples that are all of one series, such as a chunk's: the first as
 * a row (PromSeriesSetAdd, with the labels), the others straight to the
 * series it went to, without their labels being compared again.  A sample
 * not later than the one before marks the series for sorting, as a row's.
 */
void
PromSeriesSetAddRun(PromSeriesSet *set, PromLayout *layout,
					const Datum *values, const bool *isnull,
					const PromSample *samples, int64 nsamples)
{
	PromSeries *series;
	int64		i;

	if (nsamples == 0)
		return;
	PromSeriesSetAdd(set, layout, values, isnull, samples[0].t, samples[0].v);
	if (set->holding != NULL)
		(void) place_held_rows(set);
	series = set->last;
	if (series->rejected)
		return;
	if (nsamples - 1 > set->max_samples - set->nsamples)
		sample_limit_exceeded(set);
	set->nsamples += nsamples - 1;
	for (i = 1; i < nsamples; i++)
	{
		if ((i & 0xFFFF) == 0)
			CHECK_FOR_INTERRUPTS();
		PromAppendSample(set, series, samples[i].t <= set->last_t,
					  samples[i].t, samples[i].v);
		set->last_t = samples[i].t;
	}
}

/*
 * Keep a stored chunk of a series: its bytes are copied into the set's
 * arena of histograms (series_set.c puts the chunks in order when the set
 * is finished).
 */
static void
keep_stored_chunk(PromSeriesSet *set, PromSeries *series,
				  const PromStoredChunk *chunk)
{
	PromStoredChunk *kept;
	char	   *data;

	if (set->nchunks == set->chunks_capacity)
	{
		int			capacity = Max(set->chunks_capacity * 2, 64);

		if (set->chunks == NULL)
		{
			set->chunks = MemoryContextAllocHuge(set->context,
												 sizeof(PromStoredChunk) * capacity);
			set->chunk_series = MemoryContextAllocHuge(set->context,
													   sizeof(PromSeries *) * capacity);
		}
		else
		{
			set->chunks = repalloc_huge(set->chunks,
										sizeof(PromStoredChunk) * capacity);
			set->chunk_series = repalloc_huge(set->chunk_series,
											  sizeof(PromSeries *) * capacity);
		}
		set->chunks_capacity = capacity;
	}
	data = PromArenaAlloc(set->histogram_arena, chunk->len);
	memcpy(data, chunk->data, chunk->len);
	kept = &set->chunks[set->nchunks];
	*kept = *chunk;
	kept->data = data;
	set->chunk_series[set->nchunks++] = series;
}

/*
 * Add a stored chunk, kept as it is (a set that keeps chunks,
 * PromSeriesSetKeepChunks), to the series of its labels: found as a row's
 * (the series of the chunk before, or the index), or made without samples,
 * and put in the index at once, so that the series stays where it is.  The
 * chunk's samples count towards the set's limit.
 */
void
PromSeriesSetAddChunk(PromSeriesSet *set, PromLayout *layout,
					  const Datum *values, const bool *isnull,
					  const PromStoredChunk *chunk)
{
	PromSeries *series;

	Assert(!set->finished && set->keep_chunks);
	if (chunk->nsamples > set->max_samples - set->nsamples)
		sample_limit_exceeded(set);
	PromGroupPlaceHeldRows(set);
	PromGroupIndexNewest(set);
	if (read_row_keys(set, layout, values, isnull, set->last))
		series = set->last;
	else
	{
		/* the call may move the array of series */
		uint32		number = series_of_keys(set, layout, values, isnull,
											chunk->min_t);

		series = set->series[number - 1];
		set->last = series;
		if (set->newest_unindexed)
			series = index_newest_series(set);
	}
	reset_row_context(set);
	set->last = series;
	if (series->rejected)
		return;
	set->nsamples += chunk->nsamples;
	keep_stored_chunk(set, series, chunk);
}

/* Place the rows the set holds, before anything reads its series. */
void
PromGroupPlaceHeldRows(PromSeriesSet *set)
{
	if (set->holding != NULL)
		(void) place_held_rows(set);
}

/*
 * Look the newest series up in the index if it waits to be: before a layout
 * is made, for taking the newest back rewinds the arena to it, which must
 * not take the layout's values.
 */
void
PromGroupIndexNewest(PromSeriesSet *set)
{
	if (set->newest_unindexed)
		(void) index_newest_series(set);
}

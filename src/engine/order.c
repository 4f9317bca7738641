/*-------------------------------------------------------------------------
 *
 * order.c
 *	  Finishing a series set: series in Prometheus's order, equal label sets
 *	  merged.
 *
 * Prometheus orders series by label set, label by label, name then value,
 * bytewise, a set that is a prefix of another first.  Comparing label sets
 * pointer by pointer would chase every series' labels at each of n log n
 * comparisons.  Instead each label set becomes a row of integers, sorted by
 * counting (a stable radix sort, one pass per name, last name first):
 *
 * 1. The label names of all layouts are sorted, with those of the overflow
 *    labels (layout.c); a series' row has one entry per name, in that order.
 * 2. One pass over the series, in the order of their memory, gathers the
 *    distinct values of each name (shared by the series that have them) and
 *    writes each row with the order in which it met them; it also completes
 *    each series' size in a response (its samples' times).
 * 3. Each name's values are sorted bytewise and numbered from 1; a pass over
 *    the rows puts the numbers in.  An absent label's entry is 0 when the
 *    series has no label after it, and greater than every number when it
 *    has one: so comparing rows gives Prometheus's order exactly (the series
 *    lacking a label compares by its next label's name, which is greater).
 * 4. The passes begin at the first name with as many values as series (a
 *    host per series): names after it cannot decide, and no two label sets
 *    are equal then.  A name with one value in every series (the metric
 *    name) decides nothing and gets no pass.
 * 5. Equal rows are equal label sets (series of different layouts, values
 *    that print alike, or series the row path made apart): such neighbours
 *    are merged (samples.c); one that holds no samples, only stored chunks
 *    (series_set.c), is not, and the other stands for both.  Every series
 *    is left its place in the order, from 1, in its successor field (a
 *    series merged into another, that one's), for the stored chunks.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "port/pg_bswap.h"
#include "protocol/protocol.h"
#include "series_set.h"
#include "utils/memutils.h"

/*
 * A value being numbered: the first 12 bytes of its text, big-endian, for
 * sorting; in the low half of lo, its ordinal (the order in which the series
 * met it, from 1), which is how series rows refer to it until it has its
 * number; and the value itself, for texts whose first 12 bytes tie.
 */
typedef struct TextRecord
{
	uint64		hi;				/* bytes 0 to 7 */
	uint64		lo;				/* bytes 8 to 11, then the ordinal */
	const PromLabelValue *value;
} TextRecord;

#define RECORD_ORDINAL(record)	((uint32) (record)->lo)

/*
 * The first 8 bytes from an offset of a text (zeros past its end), as a
 * big-endian number.
 */
static inline uint64
text_prefix(const char *bytes, int len, int offset)
{
	uint64		prefix = 0;

	if (len > offset)
		memcpy(&prefix, bytes + offset, Min(len - offset, 8));
	return pg_ntoh64(prefix);
}

/* Order values bytewise by text; 0 for equal texts. */
static int
compare_text_records(const void *pa, const void *pb)
{
	const TextRecord *a = pa;
	const TextRecord *b = pb;

	if (a->hi != b->hi)
		return a->hi < b->hi ? -1 : 1;
	if ((a->lo >> 32) != (b->lo >> 32))
		return (a->lo >> 32) < (b->lo >> 32) ? -1 : 1;
	return compare_bytes(a->value->text, a->value->text_len,
						 b->value->text, b->value->text_len);
}

/*
 * sort_records(records, n): a quicksort of value records with the comparison
 * inlined (qsort would call it per comparison), interruptible.
 */
#define ST_SORT sort_records
#define ST_ELEMENT_TYPE TextRecord
#define ST_COMPARE(a, b) compare_text_records(a, b)
#define ST_CHECK_FOR_INTERRUPTS
#define ST_SCOPE static
#define ST_DEFINE
#include "lib/sort_template.h"

/* The index of a name in the sorted array of names (it is there). */
static int
find_name(const char **names, const int *lens, int nnames, const char *name,
		  int len)
{
	int			lo = 0;
	int			hi = nnames - 1;

	while (lo < hi)
	{
		int			mid = (lo + hi) / 2;

		if (compare_bytes(names[mid], lens[mid], name, len) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* A label name, to be sorted. */
typedef struct SortedName
{
	const char *name;
	int			len;
} SortedName;

/* qsort comparator of label names, bytewise. */
static int
sorted_name_cmp(const void *a, const void *b)
{
	const SortedName *x = a;
	const SortedName *y = b;

	return compare_bytes(x->name, x->len, y->name, y->len);
}

/*
 * The values of a layout's column of overflow labels that have labels, into
 * an array allocated in CurrentMemoryContext; returns how many.  The column's
 * values are all looked up, so its table holds each of them.
 */
static int
pairs_values(const PromLayout *layout, LabelPairs ***pairs)
{
	const ValueTable *table;
	int			n = 0;
	uint32		slot;

	*pairs = NULL;
	if (layout->pairs_column < 0)
		return 0;
	table = &layout->values[layout->pairs_column];
	Assert(table->interning);
	*pairs = palloc(sizeof(LabelPairs *) * Max(table->count, 1));
	for (slot = 0; slot <= table->mask; slot++)
	{
		const PromLabelValue *value = table->slots[slot].value;

		if (value != NULL && value_pairs(value) != NULL)
			(*pairs)[n++] = (LabelPairs *) value_pairs(value);
	}
	return n;
}

/* The values of one label name, being numbered. */
typedef struct NameValues
{
	TextRecord *records;
	uint32		count;
	Size		capacity;
	uint32		present;		/* series that have the name */
	uint32	   *number_of;		/* a value's number, by ordinal */
	uint32		highest;		/* the highest number */
} NameValues;

/*
 * The series are read in the order of their memory, but each is a few lines
 * apart from the next, and its values of its own lie past its samples: ask
 * for the header of the series SERIES_AHEAD places on, and for the values of
 * the one VALUES_AHEAD places on, whose header has come by then.
 */
#define SERIES_AHEAD	16
#define VALUES_AHEAD	8

static inline void
prefetch_series_values(const PromSeriesSet *set, int i)
{
	if (i + SERIES_AHEAD < set->nseries)
	{
		const char *header = (const char *) set->series[i + SERIES_AHEAD];

		PromPrefetch(header);
		PromPrefetch(header + PROM_CACHE_LINE);
	}
	if (i + VALUES_AHEAD < set->nseries)
	{
		const PromSeries *ahead = set->series[i + VALUES_AHEAD];
		int			k;

		for (k = 0; k < ahead->nvalues; k++)
			PromPrefetch(ahead->values[k]);
	}
}

/*
 * Gather the present values of every label name from the series, each once
 * (a value shared by several series is marked by its ordinal), so that
 * values made without a lookup in their column's table are gathered too;
 * and make each series' row of ordinals, 0 where a label is absent.  This
 * is the one pass over the series, in the order they were made, which is
 * the order of their memory, so their bytes in a response are completed
 * (their samples' times) and added up here too.
 */
static void
gather_values(PromSeriesSet *set, NameValues *names, int nnames,
			  uint32 *rows)
{
	PromLayout *layout;
	int			l;
	int			i;
	int			u;

	/*
	 * Room for a name's values: a CONST column's one, a column's distinct
	 * values, or one per series where the column stopped looking its values
	 * up.
	 */
	for (l = 0; l < set->nlayouts; l++)
	{
		LabelPairs **pairs;
		int			npairs;
		int			j;

		for (layout = set->layouts[l], i = 0; i < layout->ncolumns; i++)
			names[layout->name_index[i]].capacity +=
				layout->kinds[i] == PROM_LABEL_CONST ? 1 :
				layout->values[i].interning ? layout->values[i].count :
				(uint32) set->nseries;
		/* each overflow label's value is one of its own */
		npairs = pairs_values(layout, &pairs);
		for (j = 0; j < npairs; j++)
			for (u = 0; u < pairs[j]->npairs; u++)
				names[pairs[j]->name_index[u]].capacity++;
		if (pairs != NULL)
			pfree(pairs);
	}
	for (u = 0; u < nnames; u++)
		names[u].records = PromArenaAlloc(set->arena, sizeof(TextRecord) *
										  Max(names[u].capacity, 1));

	set->result_bytes = 0;
	for (i = 0; i < set->nseries; i++)
	{
		PromSeries *series = set->series[i];
		const PromLayout *row_layout = series_layout(set, series);
		uint32	   *row = rows + (Size) i * nnames;
		const LabelPairs *pairs = NULL;
		int			pairs_count = 0;
		int			c;

		prefetch_series_values(set, i);
		/* histograms are counted for a SAMPLES answer only, when it asks */
		if (row_layout->histograms)
			set->histograms_uncounted = true;
		else
			PromSeriesCountTimes(series);
		set->result_bytes += series_field_bytes(series);
		memset(row, 0, sizeof(uint32) * nnames);
		for (c = 0; c < row_layout->ncolumns + pairs_count; c++)
		{
			PromLabelValue *value;
			int			name_index;
			NameValues *name;

			if (c < row_layout->ncolumns)
			{
				value = series_value(row_layout, series, c);
				name_index = row_layout->name_index[c];
				/* a value of overflow labels: its labels after the columns */
				if (c == row_layout->pairs_column && value_pairs(value) != NULL)
				{
					pairs = value_pairs(value);
					pairs_count = pairs->npairs;
				}
			}
			else
			{
				value = pairs->values[c - row_layout->ncolumns];
				name_index = pairs->name_index[c - row_layout->ncolumns];
			}
			name = &names[name_index];
			if (!value_is_present(value))
				continue;
			if (value->ordinal == 0)
			{
				TextRecord *record = &name->records[name->count++];

				Assert(name->count <= name->capacity);
				value->ordinal = name->count;
				record->hi = text_prefix(value->text, value->text_len, 0);
				record->lo = (text_prefix(value->text, value->text_len, 8) &
							  ~UINT64CONST(0xFFFFFFFF)) | value->ordinal;
				record->value = value;
			}
			row[name_index] = value->ordinal;
			name->present++;
		}
	}
}

/*
 * Number the values of every name in bytewise order of their text, from 1;
 * equal texts get equal numbers.
 */
static void
number_values(PromSeriesSet *set, NameValues *names, int nnames)
{
	int			u;

	for (u = 0; u < nnames; u++)
	{
		NameValues *name = &names[u];
		uint32		k;

		CHECK_FOR_INTERRUPTS();
		sort_records(name->records, name->count);
		name->number_of = PromArenaAlloc(set->arena,
										 sizeof(uint32) * (name->count + 1));
		name->number_of[0] = 0;
		name->highest = 0;
		for (k = 0; k < name->count; k++)
		{
			if (k == 0 || compare_text_records(&name->records[k - 1],
											   &name->records[k]) != 0)
				name->highest++;
			name->number_of[RECORD_ORDINAL(&name->records[k])] = name->highest;
		}
	}
	series_set_note_peak(set);
	for (u = 0; u < nnames; u++)
		PromArenaFree(set->arena, names[u].records,
					  sizeof(TextRecord) * Max(names[u].capacity, 1));
}

/*
 * Turn the rows of ordinals into rows of numbers, absent labels as the
 * header says, and let the numbers by ordinal go.
 */
static void
number_rows(PromSeriesSet *set, NameValues *names, int nnames, uint32 *rows)
{
	int			i;
	int			u;

	for (i = 0; i < set->nseries; i++)
	{
		uint32	   *row = rows + (Size) i * nnames;
		bool		more = false;

		for (u = nnames - 1; u >= 0; u--)
		{
			if (row[u] != 0)
			{
				row[u] = names[u].number_of[row[u]];
				more = true;
			}
			else if (more)
				row[u] = names[u].highest + 1;
		}
	}
	for (u = 0; u < nnames; u++)
		PromArenaFree(set->arena, names[u].number_of,
					  sizeof(uint32) * (names[u].count + 1));
}

/*
 * Refuse a label set met both through a layout of histograms and through one
 * of floats (two sources of one metric): a series holds samples or
 * histograms, never both, and neither may silently win.
 */
static pg_noinline void
mixed_series(const PromSeriesSet *set, const PromSeries *series)
{
	ereport(ERROR,
			(errcode(ERRCODE_DATATYPE_MISMATCH),
			 errmsg("series %s has both float samples and histograms",
					PromSeriesLabelsText(set, series)),
			 errdetail("Its rows come from a source whose value column is a prom_histogram and from one whose value column is a number."),
			 errhint("Register the histograms under another metric name, or select one of the sources.")));
}

/* Sort the series of a set by label set and merge equal label sets. */
void
PromSortSeries(PromSeriesSet *set)
{
	int			nseries = set->nseries;
	PromLayout *layout;
	const char **names;
	int		   *lens;
	SortedName *sorted_names;
	LabelPairs ***all_pairs;
	int		   *all_npairs;
	NameValues *values;
	int			nnames = 0;
	int			capacity = 0;
	uint32	   *rows;
	uint32	   *order;
	uint32	   *sorted;
	uint32	   *keys;
	uint32	   *counts;
	uint32	   *repeats;
	uint32		max_highest = 0;
	PromSeries **series;
	int			kept;
	int			last_deciding;
	int			first_pass;
	bool		all_distinct = false;
	int			l;
	int			i;
	int			u;

	if (nseries == 0)
		return;

	/* the label names of the set, overflow labels' too, sorted and distinct */
	all_pairs = palloc(sizeof(LabelPairs **) * set->nlayouts);
	all_npairs = palloc(sizeof(int) * set->nlayouts);
	for (l = 0; l < set->nlayouts; l++)
	{
		capacity += set->layouts[l]->ncolumns;
		all_npairs[l] = pairs_values(set->layouts[l], &all_pairs[l]);
		for (i = 0; i < all_npairs[l]; i++)
			capacity += all_pairs[l][i]->npairs;
	}
	sorted_names = palloc(sizeof(SortedName) * Max(capacity, 1));
	for (l = 0; l < set->nlayouts; l++)
	{
		for (layout = set->layouts[l], i = 0; i < layout->ncolumns; i++)
		{
			sorted_names[nnames].name = layout->names[i];
			sorted_names[nnames++].len = layout->name_lens[i];
		}
		for (i = 0; i < all_npairs[l]; i++)
			for (u = 0; u < all_pairs[l][i]->npairs; u++)
			{
				sorted_names[nnames].name = all_pairs[l][i]->names[u];
				sorted_names[nnames++].len = all_pairs[l][i]->name_lens[u];
			}
	}
	qsort(sorted_names, nnames, sizeof(SortedName), sorted_name_cmp);
	names = palloc(sizeof(char *) * Max(capacity, 1));
	lens = palloc(sizeof(int) * Max(capacity, 1));
	for (i = 0, u = 0; i < nnames; i++)
		if (u == 0 || sorted_name_cmp(&sorted_names[i], &sorted_names[i - 1]) != 0)
		{
			names[u] = sorted_names[i].name;
			lens[u++] = sorted_names[i].len;
		}
	nnames = u;
	pfree(sorted_names);

	/* number the values of each name */
	for (l = 0; l < set->nlayouts; l++)
	{
		layout = set->layouts[l];
		layout->name_index = palloc(sizeof(int) * Max(layout->ncolumns, 1));
		for (i = 0; i < layout->ncolumns; i++)
			layout->name_index[i] = find_name(names, lens, nnames,
											  layout->names[i],
											  layout->name_lens[i]);
		for (i = 0; i < all_npairs[l]; i++)
		{
			LabelPairs *pairs = all_pairs[l][i];

			pairs->name_index = palloc(sizeof(int) * Max(pairs->npairs, 1));
			for (u = 0; u < pairs->npairs; u++)
				pairs->name_index[u] = find_name(names, lens, nnames,
												 pairs->names[u],
												 pairs->name_lens[u]);
		}
		if (all_pairs[l] != NULL)
			pfree(all_pairs[l]);
	}
	pfree(all_pairs);
	pfree(all_npairs);
	values = palloc0(sizeof(NameValues) * Max(nnames, 1));
	rows = PromArenaAlloc(set->arena, sizeof(uint32) * nnames * (Size) nseries);
	gather_values(set, values, nnames, rows);
	number_values(set, values, nnames);
	number_rows(set, values, nnames, rows);

	/*
	 * A stable counting sort per name, the last name first.  A pass reads
	 * each series' entry once, into keys[], in the order so far: the rows
	 * are read at random, keys[] twice in order.  The first name with as
	 * many distinct values as there are series (a host per series) gives
	 * every series a value of its own, so the names after it never decide
	 * and are not sorted by, and no two label sets are equal; its numbers
	 * are 1 to nseries, once each, which is the order by it without a pass.
	 */
	last_deciding = nnames - 1;
	for (u = 0; u < nnames; u++)
		if (values[u].highest == (uint32) nseries)
		{
			last_deciding = u;
			all_distinct = true;
			break;
		}
	order = PromArenaAlloc(set->arena, sizeof(uint32) * nseries);
	if (all_distinct)
	{
		for (i = 0; i < nseries; i++)
			order[rows[(Size) i * nnames + last_deciding] - 1] = i;
		first_pass = last_deciding - 1;
	}
	else
	{
		for (i = 0; i < nseries; i++)
			order[i] = i;
		first_pass = last_deciding;
	}
	for (u = 0; u <= first_pass; u++)
		max_highest = Max(max_highest, values[u].highest);
	sorted = PromArenaAlloc(set->arena, sizeof(uint32) * nseries);
	keys = PromArenaAlloc(set->arena, sizeof(uint32) * nseries);
	counts = PromArenaAlloc(set->arena, sizeof(uint32) * ((Size) max_highest + 3));
	series_set_note_peak(set);
	for (u = first_pass; u >= 0; u--)
	{
		uint32		nkeys = values[u].highest + 2;
		uint32		sum = 0;
		uint32	   *swap;
		uint32		k;

		CHECK_FOR_INTERRUPTS();
		if (values[u].highest == 0)
			continue;			/* no series has it: its entries only
								 * repeat what the later names decide */
		if (values[u].highest == 1 && values[u].present == (uint32) nseries)
			continue;			/* one value in every series (a metric
								 * name): the order stays as it is (the
								 * only other way for all entries to be
								 * equal is the case above) */
		memset(counts, 0, sizeof(uint32) * nkeys);
		for (i = 0; i < nseries; i++)
		{
			keys[i] = rows[(Size) order[i] * nnames + u];
			counts[keys[i]]++;
		}
		for (k = 0; k < nkeys; k++)
		{
			uint32		count = counts[k];

			counts[k] = sum;
			sum += count;
		}
		for (i = 0; i < nseries; i++)
			sorted[counts[keys[i]]++] = order[i];
		swap = order;
		order = sorted;
		sorted = swap;
	}

	/*
	 * Equal rows are one label set: mark in sorted[] the series that repeat
	 * the label set before them, and let the rows go before the series are
	 * put in order.
	 */
	repeats = sorted;
	for (i = 0; i < nseries; i++)
		repeats[i] = i > 0 && !all_distinct &&
			memcmp(rows + (Size) order[i - 1] * nnames,
				   rows + (Size) order[i] * nnames,
				   sizeof(uint32) * nnames) == 0;
	PromArenaFree(set->arena, counts, sizeof(uint32) * ((Size) max_highest + 3));
	PromArenaFree(set->arena, keys, sizeof(uint32) * nseries);
	PromArenaFree(set->arena, rows, sizeof(uint32) * nnames * (Size) nseries);

	series = set_alloc_array(set, sizeof(PromSeries *) * nseries);
	kept = 0;
	for (i = 0; i < nseries; i++)
	{
		PromSeries *s = set->series[order[i]];

		if (repeats[i])
		{
			PromSeries *into = series[kept - 1];

			if (series_layout(set, into)->histograms !=
				series_layout(set, s)->histograms)
				mixed_series(set, into);
			/* its place, for its stored chunks (group_stored_chunks) */
			s->successor = kept;
			if (unlikely(PromPhases.active))
				PromPhases.merged++;
			/* a series of stored chunks alone has no samples to merge */
			if (s->nsamples == 0)
			{
				set->result_bytes -= series_field_bytes(s);
				continue;
			}
			if (into->nsamples == 0)
			{
				set->result_bytes -= series_field_bytes(into);
				series[kept - 1] = s;
				continue;
			}
			/* one message (s's blocks are into's now) */
			set->result_bytes -= series_field_bytes(s) + series_field_bytes(into);
			PromMergeSeries(set, into, s);
			set->result_bytes += series_field_bytes(into);
			continue;
		}
		series[kept++] = s;
		s->successor = kept;
	}
	set_free_array(set, set->series, sizeof(PromSeries *) * set->series_capacity);
	set->series = series;
	set->series_capacity = nseries;
	set->nseries = kept;

	PromArenaFree(set->arena, sorted, sizeof(uint32) * nseries);
	PromArenaFree(set->arena, order, sizeof(uint32) * nseries);
	pfree(values);
	pfree(lens);
	pfree(names);
}

/*-------------------------------------------------------------------------
 *
 * group.c
 *	  The series grouping engine: the one place where rows become series.
 *
 * A query answer holds few series but many rows, so everything done per
 * row must be cheap and everything else is done once per series.
 *
 * Rows arrive through a layout: the label columns of one source (a metric
 * relation, or the name/value pairs of the aggregate) with, for each, how to
 * read it.  For a row, the engine reads every label column as a *key*
 * borrowed from the tuple: a pointer and a length into the tuple for text
 * (no copy; detoasted only when compressed or external, into a scratch
 * context reset after the row), the Datum itself for enums and other
 * pass-by-value types.  A NULL and an empty text are the same key, because
 * Prometheus treats both as an absent label.  No output function runs and
 * nothing is allocated on this path.
 *
 * The row's keys are first compared with the series of the previous row:
 * rows of one series usually arrive together, and then that comparison is
 * all the row costs.  When series interleave (rows ordered by time), they
 * tend to come round in the same order, so each series remembers which
 * series followed it last time, and that one is compared next.  Otherwise
 * the keys are hashed (xxHash over values and
 * lengths, absence included) and looked up in an open-addressing index of
 * the set's series; candidates with the same hash are confirmed by a full
 * comparison.  Only when no series matches is a new series created: its
 * keys are copied into the set's arena, its text validated as UTF-8, enum
 * values turned into their labels (from a per-backend cache of the enum's
 * labels, enum_cache.c) and other types printed by their output function,
 * once.
 * The series also records which labels are present, ordered by name, so its
 * label set never has to be built again.
 *
 * Samples are appended to a chain of blocks owned by the series, allocated
 * from the set's arena (arena.c: memory reused between calls, so that its
 * pages are not faulted in again) with doubling capacities (4 samples, then
 * 8, up to 1024):
 * 16 bytes per sample plus a bounded slack, no per-row allocation.  A series
 * notes whether its samples arrived in strictly increasing time; only those
 * that did not are sorted (stably, so the row read last wins among samples
 * of the same millisecond) when the set is finished.
 *
 * Finishing sorts the series once, by label set as Prometheus compares
 * them.  Series of different layouts, or binary-distinct values of a type
 * that print alike, may yield the same label set; equal neighbours after
 * the sort are merged, so a label set is never answered twice.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <xxhash.h>

#include "access/detoast.h"
#include "access/htup_details.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "promread.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"

/* Sample block capacities: the first, and the cap of the doubling. */
#define BLOCK_FIRST_CAPACITY	4
#define BLOCK_MAX_CAPACITY		1024

/* A source of rows: its label columns and how to read them. */
struct PromLayout
{
	int			ncolumns;
	const char **names;
	int		   *name_lens;
	PromLabelKind *kinds;
	int16	   *typlens;
	FmgrInfo   *outfuncs;		/* for SCALAR and BINARY columns */
	const char **const_values;	/* for CONST columns */
	int		   *const_lens;
	uint16	   *name_order;		/* all columns, sorted by name */
	int			nkeys;			/* columns read from rows: all but CONST */
	uint16	   *key_columns;
	uint64		seed;			/* distinguishes layouts in the hash */
	PromSeriesValue *row;		/* the current row's keys */
};

/* A slot of the series index: the hash is kept to skip most candidates. */
typedef struct SeriesSlot
{
	uint64		hash;
	PromSeries *series;
} SeriesSlot;

struct PromSeriesSet
{
	MemoryContext context;		/* owns everything of the set */
	MemoryContext row_context;	/* scratch for one row's detoasted values */
	bool		row_context_used;

	PromArena  *arena;			/* series, label copies, sample blocks */

	PromSeries **series;		/* creation order; sorted when finished */
	int			nseries;
	int			series_capacity;

	SeriesSlot *slots;			/* open-addressing index; NULL series: empty */
	uint32		slot_mask;

	PromSeries *last;			/* series of the previous row */
	char	   *hash_buffer;	/* a row's keys gathered for hashing */
	Size		hash_buffer_size;
	int64		nsamples;
	int			nlayouts;
	bool		finished;
};

static PromSeries *find_series(PromSeriesSet *set, PromLayout *layout,
							   uint64 hash);
static PromSeries *create_series(PromSeriesSet *set, PromLayout *layout,
								 const Datum *values, uint64 hash);
static PromSampleBlock *grow_samples(PromSeriesSet *set, PromSeries *series);
static void sort_samples(PromSeriesSet *set, PromSeries *series);
static int	compare_series(const void *a, const void *b);

/* Create an empty set whose memory lives in a child of the given context. */
PromSeriesSet *
PromSeriesSetCreate(MemoryContext context)
{
	MemoryContext setcxt;
	PromSeriesSet *set;

	setcxt = AllocSetContextCreate(context, "promread series",
								   ALLOCSET_DEFAULT_SIZES);
	set = MemoryContextAllocZero(setcxt, sizeof(PromSeriesSet));
	set->context = setcxt;
	set->row_context = AllocSetContextCreate(setcxt, "promread row",
											 ALLOCSET_SMALL_SIZES);
	set->arena = PromArenaCreate(setcxt);
	set->series_capacity = 64;
	set->series = MemoryContextAlloc(setcxt,
									 sizeof(PromSeries *) * set->series_capacity);
	set->slot_mask = 127;
	set->slots = MemoryContextAllocZero(setcxt,
										sizeof(SeriesSlot) * (set->slot_mask + 1));
	return set;
}

/* Allocate from the set's arena; memory is freed with the set. */
static inline void *
arena_alloc(PromSeriesSet *set, Size size)
{
	return PromArenaAlloc(set->arena, size);
}

/* Is the kind compared by its Datum rather than by bytes? */
static inline bool
kind_is_scalar(PromLabelKind kind)
{
	return kind == PROM_LABEL_ENUM || kind == PROM_LABEL_SCALAR;
}

/*
 * Describe a source of rows.  names[i] is the label name of column i;
 * types[i] its type (for SCALAR and BINARY columns, whose output function
 * prints the label); const_values[i] the value of a CONST column.  Label
 * names must be distinct.
 */
PromLayout *
PromLayoutCreate(PromSeriesSet *set, int ncolumns, const char *const *names,
				 const PromLabelKind *kinds, const Oid *types,
				 const char *const *const_values)
{
	MemoryContext oldcxt = MemoryContextSwitchTo(set->context);
	PromLayout *layout = palloc0(sizeof(PromLayout));
	int			i;

	if (ncolumns > PG_UINT16_MAX)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("a series cannot have more than %d labels",
						PG_UINT16_MAX)));

	layout->ncolumns = ncolumns;
	layout->names = palloc(sizeof(char *) * ncolumns);
	layout->name_lens = palloc(sizeof(int) * ncolumns);
	layout->kinds = palloc(sizeof(PromLabelKind) * ncolumns);
	layout->typlens = palloc0(sizeof(int16) * ncolumns);
	layout->outfuncs = palloc0(sizeof(FmgrInfo) * ncolumns);
	layout->const_values = palloc0(sizeof(char *) * ncolumns);
	layout->const_lens = palloc0(sizeof(int) * ncolumns);
	layout->name_order = palloc(sizeof(uint16) * ncolumns);
	layout->key_columns = palloc(sizeof(uint16) * ncolumns);
	layout->row = palloc0(sizeof(PromSeriesValue) * ncolumns);
	layout->seed = (uint64) (++set->nlayouts) * UINT64CONST(0x9E3779B97F4A7C15);

	for (i = 0; i < ncolumns; i++)
	{
		int			j;

		layout->names[i] = pstrdup(names[i]);
		layout->name_lens[i] = strlen(names[i]);
		layout->kinds[i] = kinds[i];
		if (kinds[i] == PROM_LABEL_SCALAR || kinds[i] == PROM_LABEL_BINARY)
		{
			Oid			outfunc;
			bool		isvarlena;
			bool		byval;

			getTypeOutputInfo(types[i], &outfunc, &isvarlena);
			fmgr_info_cxt(outfunc, &layout->outfuncs[i], set->context);
			get_typlenbyval(types[i], &layout->typlens[i], &byval);
		}
		if (kinds[i] == PROM_LABEL_CONST)
		{
			layout->const_values[i] = pstrdup(const_values[i]);
			layout->const_lens[i] = strlen(const_values[i]);
		}
		else
			layout->key_columns[layout->nkeys++] = i;

		/* insertion sort of the name order; layouts are small */
		for (j = i; j > 0; j--)
		{
			int			other = layout->name_order[j - 1];
			int			cmp;

			cmp = memcmp(names[other], names[i],
						 Min(layout->name_lens[other], layout->name_lens[i]));
			if (cmp == 0)
				cmp = layout->name_lens[other] - layout->name_lens[i];
			if (cmp == 0)
				ereport(ERROR,
						(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						 errmsg("label name \"%s\" appears more than once",
								names[i])));
			if (cmp < 0)
				break;
			layout->name_order[j] = other;
		}
		layout->name_order[j] = i;
	}
	MemoryContextSwitchTo(oldcxt);
	return layout;
}

/* Point at the bytes of a varlena, detoasting only when it must. */
static inline const char *
borrow_varlena(PromSeriesSet *set, Datum datum, int32 *len)
{
	struct varlena *v = (struct varlena *) DatumGetPointer(datum);

	if (unlikely(VARATT_IS_EXTERNAL(v) || VARATT_IS_COMPRESSED(v)))
	{
		MemoryContext oldcxt = MemoryContextSwitchTo(set->row_context);

		v = detoast_attr(v);
		MemoryContextSwitchTo(oldcxt);
		set->row_context_used = true;
	}
	*len = VARSIZE_ANY_EXHDR(v);
	return VARDATA_ANY(v);
}

/* Are two byte strings of the same length equal?  Inline for short keys. */
static inline bool
bytes_equal(const char *a, const char *b, int32 len)
{
	uint64		x;
	uint64		y;

	while (len >= 8)
	{
		memcpy(&x, a, 8);
		memcpy(&y, b, 8);
		if (x != y)
			return false;
		a += 8;
		b += 8;
		len -= 8;
	}
	if (len >= 4)
	{
		uint32		x4;
		uint32		y4;

		memcpy(&x4, a, 4);
		memcpy(&y4, b, 4);
		if (x4 != y4)
			return false;
		a += 4;
		b += 4;
		len -= 4;
	}
	while (len-- > 0)
		if (*a++ != *b++)
			return false;
	return true;
}

/* Does a key equal a series' key of the same column? */
static inline bool
key_equal(PromLabelKind kind, const PromSeriesValue *key,
		  const PromSeriesValue *other)
{
	if (key->key_len != other->key_len)
		return false;
	if (kind_is_scalar(kind))
		return key->key_len < 0 || key->key.scalar == other->key.scalar;
	return bytes_equal(key->key.bytes, other->key.bytes, key->key_len);
}

/*
 * Read the row's label keys into layout->row, borrowing from the tuple, and
 * tell whether they equal those of the given series (false if none).
 */
static inline bool
read_row_keys(PromSeriesSet *set, PromLayout *layout, const Datum *values,
			  const bool *isnull, const PromSeries *previous)
{
	bool		equal = (previous != NULL && previous->layout == layout);
	int			k;

	for (k = 0; k < layout->nkeys; k++)
	{
		int			i = layout->key_columns[k];
		PromLabelKind kind = layout->kinds[i];
		PromSeriesValue *key = &layout->row[i];

		switch (kind)
		{
			case PROM_LABEL_TEXT:
				if (isnull[i])
					key->key_len = 0;
				else
					key->key.bytes = borrow_varlena(set, values[i],
													&key->key_len);
				break;
			case PROM_LABEL_NAME:
				if (isnull[i])
					key->key_len = 0;
				else
				{
					key->key.bytes = NameStr(*DatumGetName(values[i]));
					key->key_len = strnlen(key->key.bytes, NAMEDATALEN);
				}
				break;
			case PROM_LABEL_ENUM:
			case PROM_LABEL_SCALAR:
				key->key_len = isnull[i] ? -1 : 0;
				key->key.scalar = isnull[i] ? (Datum) 0 : values[i];
				break;
			case PROM_LABEL_BINARY:
				if (isnull[i])
					key->key_len = -1;
				else if (layout->typlens[i] == -1)
					key->key.bytes = borrow_varlena(set, values[i],
													&key->key_len);
				else
				{
					key->key.bytes = DatumGetPointer(values[i]);
					key->key_len = layout->typlens[i] > 0 ?
						layout->typlens[i] : (int32) strlen(key->key.bytes);
				}
				break;
			case PROM_LABEL_CONST:
				break;
		}
		if (equal)
			equal = key_equal(kind, key, &previous->values[i]);
	}
	return equal;
}

/* Do a series' keys equal the current row's keys of the same layout? */
static inline bool
keys_equal(const PromLayout *layout, const PromSeriesValue *series_keys)
{
	int			k;

	for (k = 0; k < layout->nkeys; k++)
	{
		int			i = layout->key_columns[k];

		if (!key_equal(layout->kinds[i], &layout->row[i], &series_keys[i]))
			return false;
	}
	return true;
}

/*
 * Hash the current row's keys: their lengths (absence included) and bytes
 * are gathered into one buffer and hashed with one xxHash call.
 */
static uint64
hash_row(PromSeriesSet *set, const PromLayout *layout)
{
	Size		size = 0;
	char	   *p;
	int			k;

	for (k = 0; k < layout->nkeys; k++)
	{
		int			i = layout->key_columns[k];

		size += sizeof(int32);
		if (kind_is_scalar(layout->kinds[i]))
			size += sizeof(Datum);
		else if (layout->row[i].key_len > 0)
			size += layout->row[i].key_len;
	}
	if (size > set->hash_buffer_size)
	{
		set->hash_buffer_size = Max(size, 256);
		set->hash_buffer = set->hash_buffer ?
			repalloc(set->hash_buffer, set->hash_buffer_size) :
			MemoryContextAlloc(set->context, set->hash_buffer_size);
	}
	p = set->hash_buffer;
	for (k = 0; k < layout->nkeys; k++)
	{
		int			i = layout->key_columns[k];
		const PromSeriesValue *key = &layout->row[i];

		memcpy(p, &key->key_len, sizeof(int32));
		p += sizeof(int32);
		if (kind_is_scalar(layout->kinds[i]))
		{
			memcpy(p, &key->key.scalar, sizeof(Datum));
			p += sizeof(Datum);
		}
		else if (key->key_len > 0)
		{
			memcpy(p, key->key.bytes, key->key_len);
			p += key->key_len;
		}
	}
	return XXH3_64bits_withSeed(set->hash_buffer, size, layout->seed);
}

/* Find the series of the current row's keys in the index, or NULL. */
static PromSeries *
find_series(PromSeriesSet *set, PromLayout *layout, uint64 hash)
{
	uint32		slot = (uint32) hash & set->slot_mask;
	PromSeries *candidate;

	while ((candidate = set->slots[slot].series) != NULL)
	{
		if (set->slots[slot].hash == hash && candidate->layout == layout &&
			keys_equal(layout, candidate->values))
			return candidate;
		slot = (slot + 1) & set->slot_mask;
	}
	return NULL;
}

/* Put a series into the index, doubling it when half full. */
static void
index_series(PromSeriesSet *set, PromSeries *series)
{
	uint32		slot;

	if ((uint32) set->nseries * 2 > set->slot_mask)
	{
		uint32		old_size = set->slot_mask + 1;
		SeriesSlot *old_slots = set->slots;
		uint32		i;

		set->slot_mask = old_size * 2 - 1;
		set->slots = MemoryContextAllocHuge(set->context,
											sizeof(SeriesSlot) * old_size * 2);
		memset(set->slots, 0, sizeof(SeriesSlot) * old_size * 2);
		for (i = 0; i < old_size; i++)
			if (old_slots[i].series != NULL)
				index_series(set, old_slots[i].series);
		pfree(old_slots);
	}
	slot = (uint32) series->hash & set->slot_mask;
	while (set->slots[slot].series != NULL)
		slot = (slot + 1) & set->slot_mask;
	set->slots[slot].hash = series->hash;
	set->slots[slot].series = series;
}

/* Copy bytes into the arena, checking that they are valid UTF-8. */
static const char *
copy_label_text(PromSeriesSet *set, const char *label_name,
				const char *bytes, int len)
{
	char	   *copy;

	if (!PromIsValidUtf8(bytes, len))
		ereport(ERROR,
				(errcode(ERRCODE_CHARACTER_NOT_IN_REPERTOIRE),
				 errmsg("value of label \"%s\" is not valid UTF-8",
						label_name)));
	copy = arena_alloc(set, len + 1);
	memcpy(copy, bytes, len);
	copy[len] = '\0';
	return copy;
}

/* The label of an enum value, copied into the set's arena. */
static const char *
enum_label(PromSeriesSet *set, const char *label_name, Oid value, int *len)
{
	const char *label = PromEnumLabel(value, len);

	return copy_label_text(set, label_name, label, *len);
}

/* Print a value with its type's output function, once per series. */
static const char *
print_label(PromSeriesSet *set, PromLayout *layout, int column, Datum value,
			int *len)
{
	MemoryContext oldcxt = MemoryContextSwitchTo(set->row_context);
	char	   *text = OutputFunctionCall(&layout->outfuncs[column], value);

	MemoryContextSwitchTo(oldcxt);
	set->row_context_used = true;
	*len = strlen(text);
	return copy_label_text(set, layout->names[column], text, *len);
}

/* Create a series for the current row's keys: the only copy of them. */
static PromSeries *
create_series(PromSeriesSet *set, PromLayout *layout, const Datum *values,
			  uint64 hash)
{
	PromSeries *series = arena_alloc(set, sizeof(PromSeries));
	int			ncolumns = layout->ncolumns;
	int			i;

	CHECK_FOR_INTERRUPTS();
	memset(series, 0, sizeof(PromSeries));
	series->layout = layout;
	series->hash = hash;
	series->values = arena_alloc(set, sizeof(PromSeriesValue) * ncolumns);
	for (i = 0; i < ncolumns; i++)
	{
		const PromSeriesValue *key = &layout->row[i];
		PromSeriesValue *value = &series->values[i];

		*value = *key;
		value->text = NULL;
		value->text_len = 0;
		switch (layout->kinds[i])
		{
			case PROM_LABEL_TEXT:
			case PROM_LABEL_NAME:
				if (key->key_len > 0)
				{
					value->key.bytes = copy_label_text(set, layout->names[i],
													   key->key.bytes,
													   key->key_len);
					value->text = value->key.bytes;
					value->text_len = key->key_len;
				}
				break;
			case PROM_LABEL_ENUM:
				if (key->key_len == 0)
					value->text = enum_label(set, layout->names[i],
											 DatumGetObjectId(key->key.scalar),
											 &value->text_len);
				break;
			case PROM_LABEL_SCALAR:
				if (key->key_len == 0)
					value->text = print_label(set, layout, i, key->key.scalar,
											  &value->text_len);
				break;
			case PROM_LABEL_BINARY:
				if (key->key_len >= 0)
				{
					char	   *copy = arena_alloc(set, Max(key->key_len, 1));

					memcpy(copy, key->key.bytes, key->key_len);
					value->key.bytes = copy;
					value->text = print_label(set, layout, i, values[i],
											  &value->text_len);
				}
				break;
			case PROM_LABEL_CONST:
				value->text = layout->const_values[i];
				value->text_len = layout->const_lens[i];
				break;
		}
	}

	/* the label set: present labels in name order */
	series->order = arena_alloc(set, sizeof(uint16) * ncolumns);
	for (i = 0; i < ncolumns; i++)
	{
		int			column = layout->name_order[i];

		if (series->values[column].text_len > 0)
			series->order[series->nlabels++] = column;
	}

	if (set->nseries == set->series_capacity)
	{
		set->series_capacity *= 2;
		set->series = repalloc_huge(set->series,
									sizeof(PromSeries *) * set->series_capacity);
	}
	set->series[set->nseries++] = series;
	index_series(set, series);
	return series;
}

/* Give a series a new, larger sample block at the end of its chain. */
static PromSampleBlock *
grow_samples(PromSeriesSet *set, PromSeries *series)
{
	uint32		capacity = BLOCK_FIRST_CAPACITY;
	PromSampleBlock *block;

	if (series->tail != NULL)
		capacity = Min(series->tail->capacity * 2, BLOCK_MAX_CAPACITY);
	block = arena_alloc(set, offsetof(PromSampleBlock, samples) +
						sizeof(PromSample) * capacity);
	block->next = NULL;
	block->count = 0;
	block->capacity = capacity;
	if (series->tail != NULL)
		series->tail->next = block;
	else
		series->head = block;
	series->tail = block;
	return block;
}

/*
 * Add one row: its label values (in layout order, NULL allowed) and its
 * sample.  This is the per-row path; see the file header.
 */
void
PromSeriesSetAdd(PromSeriesSet *set, PromLayout *layout,
				 const Datum *values, const bool *isnull, int64 t, double v)
{
	PromSeries *series = set->last;
	PromSampleBlock *block;

	Assert(!set->finished);
	CHECK_FOR_INTERRUPTS();

	if (unlikely(++set->nsamples > promread_max_samples))
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("query exceeded the sample limit of %d samples",
						promread_max_samples),
				 errhint("Select fewer series or a shorter time range, or raise \"promread.max_samples\".")));

	if (!read_row_keys(set, layout, values, isnull, series))
	{
		PromSeries *previous = series;

		/* interleaved series tend to come round in the same order */
		series = previous != NULL ? previous->successor : NULL;
		if (series == NULL || series->layout != layout ||
			!keys_equal(layout, series->values))
		{
			uint64		hash = hash_row(set, layout);

			series = find_series(set, layout, hash);
			if (series == NULL)
				series = create_series(set, layout, values, hash);
			if (previous != NULL)
				previous->successor = series;
		}
		set->last = series;
	}

	block = series->tail;
	if (unlikely(block == NULL || block->count == block->capacity))
		block = grow_samples(set, series);
	block->samples[block->count].t = t;
	block->samples[block->count].v = v;
	block->count++;
	if (series->nsamples > 0 && t <= series->last_t)
		series->needs_sort = true;
	series->last_t = t;
	series->nsamples++;

	if (unlikely(set->row_context_used))
	{
		MemoryContextReset(set->row_context);
		set->row_context_used = false;
	}
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
static void
sort_samples(PromSeriesSet *set, PromSeries *series)
{
	PromSample *samples;
	PromSample *tmp;
	PromSampleBlock *block;
	int64		n = 0;
	int64		kept;
	int64		i;

	samples = MemoryContextAllocHuge(set->context,
									 sizeof(PromSample) * series->nsamples);
	tmp = MemoryContextAllocHuge(set->context,
								 sizeof(PromSample) * series->nsamples);
	for (block = series->head; block != NULL; block = block->next)
	{
		memcpy(samples + n, block->samples, sizeof(PromSample) * block->count);
		n += block->count;
	}
	Assert(n == series->nsamples);
	merge_sort_samples(samples, tmp, n);

	/* the last of each run of equal times wins */
	kept = 0;
	for (i = 0; i < n; i++)
	{
		if (kept > 0 && samples[kept - 1].t == samples[i].t)
			kept--;
		samples[kept++] = samples[i];
	}

	/* refill the blocks in order; blocks left over become empty */
	i = 0;
	for (block = series->head; block != NULL; block = block->next)
	{
		block->count = Min((int64) block->capacity, kept - i);
		memcpy(block->samples, samples + i, sizeof(PromSample) * block->count);
		i += block->count;
	}
	series->nsamples = kept;
	series->needs_sort = false;
	pfree(samples);
	pfree(tmp);
}

/* Name and value of the i-th label (in name order) of a series. */
void
PromSeriesLabel(const PromSeries *series, int i, const char **name,
				int *name_len, const char **value, int *value_len)
{
	int			column = series->order[i];

	*name = series->layout->names[column];
	*name_len = series->layout->name_lens[column];
	*value = series->values[column].text;
	*value_len = series->values[column].text_len;
}

/* Compare two byte strings as Go compares strings. */
static inline int
compare_bytes(const char *a, int alen, const char *b, int blen)
{
	int			cmp = memcmp(a, b, Min(alen, blen));

	if (cmp != 0)
		return cmp;
	return (alen > blen) - (alen < blen);
}

/* Order series by label set, as Prometheus's labels.Compare does. */
static int
compare_series(const void *pa, const void *pb)
{
	const PromSeries *a = *(PromSeries *const *) pa;
	const PromSeries *b = *(PromSeries *const *) pb;
	int			n = Min(a->nlabels, b->nlabels);
	int			i;

	for (i = 0; i < n; i++)
	{
		int			ca = a->order[i];
		int			cb = b->order[i];
		const PromSeriesValue *va = &a->values[ca];
		const PromSeriesValue *vb = &b->values[cb];
		int			cmp;

		if (a->layout != b->layout || ca != cb)
		{
			cmp = compare_bytes(a->layout->names[ca], a->layout->name_lens[ca],
								b->layout->names[cb], b->layout->name_lens[cb]);
			if (cmp != 0)
				return cmp;
		}
		cmp = compare_bytes(va->text, va->text_len, vb->text, vb->text_len);
		if (cmp != 0)
			return cmp;
	}
	return (a->nlabels > b->nlabels) - (a->nlabels < b->nlabels);
}

/* Sort the series, merge equal label sets, put samples in time order. */
void
PromSeriesSetFinish(PromSeriesSet *set)
{
	int			kept = 0;
	int			i;

	Assert(!set->finished);
	set->finished = true;
	set->last = NULL;

	if (set->nseries > 1)
		qsort(set->series, set->nseries, sizeof(PromSeries *), compare_series);

	for (i = 0; i < set->nseries; i++)
	{
		PromSeries *series = set->series[i];

		if (kept > 0 && compare_series(&set->series[kept - 1], &series) == 0)
		{
			PromSeries *into = set->series[kept - 1];

			into->tail->next = series->head;
			into->tail = series->tail;
			into->nsamples += series->nsamples;
			into->needs_sort = true;
			continue;
		}
		set->series[kept++] = series;
	}
	set->nseries = kept;

	for (i = 0; i < set->nseries; i++)
		if (set->series[i]->needs_sort)
			sort_samples(set, set->series[i]);
}

/* Bytes of memory a set holds. */
Size
PromSeriesSetMemory(const PromSeriesSet *set)
{
	return MemoryContextMemAllocated(set->context, true) +
		PromArenaBytes(set->arena);
}

/* Free a set and everything it holds. */
void
PromSeriesSetFree(PromSeriesSet *set)
{
	MemoryContextDelete(set->context);
}

/*
 * The series of a set and their number: in label-set order once the set is
 * finished, in creation order before.
 */
PromSeries *const *
PromSeriesSetSeries(const PromSeriesSet *set, int *count)
{
	*count = set->nseries;
	return set->series;
}

/* Number of rows added to the set (samples before duplicate removal). */
int64
PromSeriesSetSampleCount(const PromSeriesSet *set)
{
	return set->nsamples;
}

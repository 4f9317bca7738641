/*-------------------------------------------------------------------------
 *
 * series_set.h
 *	  The insides of a series set, shared by the files of the engine that
 *	  turns rows into series.
 *
 * The engine's files, in the order a row meets them (ARCHITECTURE.md tells
 * the design):
 *
 *   series_set.c   the set: made, finished, freed, read; its layouts added
 *   layout.c       layouts (a source's label columns) and the table of
 *                  distinct values of each column
 *   group.c        the row path: a row to its series (row_keys.h holds its
 *                  inline key reading and comparing)
 *   series_index.c hashing keys, the index of series, making a series
 *   samples.c      sample blocks: growing, chaining, merging, sorting
 *   overflow_labels.c  the labels of a column of overflow labels
 *   order.c        finishing: series in Prometheus's order
 *
 * Calls go one way only: series_set.c calls the others, group.c calls
 * series_index.c, layout.c and samples.c, which call no engine file but
 * layout.c (samples.c, for a series' labels' size); layout.c calls
 * overflow_labels.c, which calls none.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PROMREAD_SERIES_SET_H
#define PROMREAD_SERIES_SET_H

#include "engine.h"
#include "phases.h"
#include "protocol/protocol.h"
#include "samples.h"
#include "utils/memutils.h"

/* A key read from a row: bytes, or a Datum for scalar kinds. */
typedef struct RowKey
{
	int32		len;			/* bytes (0 when absent) for text kinds; 0,
								 * or -1 when absent, for scalar kinds and
								 * BINARY */
	union
	{
		const char *bytes;		/* TEXT, NAME, BINARY */
		Datum		scalar;		/* ENUM, SCALAR */
	}			key;
} RowKey;

/*
 * A distinct value of one label column: its label text, and before it, in
 * the same allocation, the key that identifies it where the text does not.
 * A TEXT, NAME or CONST value is identified by its text and has no key; an
 * ENUM value is preceded by its OID (value_enum), a SCALAR value by its
 * Datum (value_scalar), a BINARY value by its bytes (value_binary).  The
 * NULL of an ENUM, SCALAR or BINARY column is the value without a text; a
 * NULL TEXT or NAME key is the empty text, which is absent too.
 */
struct PromLabelValue
{
	int32		text_len;		/* PROM_VALUE_NULL for a NULL key, which has
								 * no text; absent when not above 0 */
	uint32		ordinal;		/* order in which finishing the set met it
								 * among the values of its label name, from
								 * 1; 0 before */
	uint8		verdict;		/* of its layout's matchers decided per
								 * value: VERDICT_* */
	char		text[FLEXIBLE_ARRAY_MEMBER];	/* NUL-terminated */
};

#define PROM_VALUE_NULL		(-1)

/* Whether a value passes its column's matchers decided per value. */
#define VERDICT_UNKNOWN		0
#define VERDICT_PASS		1
#define VERDICT_FAIL		2

/* A matcher a layout decides per distinct value of a column. */
typedef struct LayoutFilter
{
	int			column;
	const PromMatcher *matcher;
} LayoutFilter;

/*
 * The labels of a value of a layout's column of overflow labels (a jsonb
 * object of label names and values), made once per distinct value: the
 * present ones, sorted by name bytewise, each value a TEXT value of its own.
 */
typedef struct LabelPairs
{
	int			npairs;
	const char **names;
	int		   *name_lens;
	char	  **name_parts;		/* as PromLayout's */
	int		   *name_part_lens;
	PromLabelValue **values;
	int		   *name_index;		/* to the set's sorted label names, when
								 * finishing */
	Size		labels_size;	/* bytes of them all as Label fields */
} LabelPairs;

/* The key of a BINARY value: its bytes; and its labels, of overflow labels. */
typedef struct BinaryKey
{
	const char *bytes;
	int32		len;
	const LabelPairs *pairs;	/* a value of overflow labels; else NULL */
} BinaryKey;

/* Is a value a label of its series (not empty, not NULL)? */
static inline bool
value_is_present(const PromLabelValue *value)
{
	return value->text_len > 0;
}

/* The OID an ENUM value is identified by (InvalidOid for its NULL). */
static inline Oid
value_enum(const PromLabelValue *value)
{
	return ((const Oid *) value)[-1];
}

/* The Datum a SCALAR value is identified by (0 for its NULL). */
static inline Datum
value_scalar(const PromLabelValue *value)
{
	return ((const Datum *) value)[-1];
}

/* The key a BINARY value is identified by. */
static inline const BinaryKey *
value_binary(const PromLabelValue *value)
{
	return ((const BinaryKey *) value) - 1;
}

/* The labels of a value of a column of overflow labels (NULL: none). */
static inline const LabelPairs *
value_pairs(const PromLabelValue *value)
{
	return value_binary(value)->pairs;
}

/* Is the kind compared by its Datum rather than by bytes? */
static inline bool
kind_is_scalar(PromLabelKind kind)
{
	return kind == PROM_LABEL_ENUM || kind == PROM_LABEL_SCALAR;
}

/* A slot of a column's table of values; the hash spares most lookups. */
typedef struct ValueSlot
{
	uint64		hash;
	PromLabelValue *value;		/* NULL: empty */
} ValueSlot;

/*
 * The distinct values of one column read from rows: an open-addressing
 * table, given up for a column whose values are nearly all distinct (a host
 * name per series), whose series then get values of their own.  A CONST
 * column has none (its value is the layout's).
 */
typedef struct ValueTable
{
	ValueSlot  *slots;
	uint32		mask;
	uint32		count;
	bool		interning;
} ValueTable;

/* Most bytes of a row image, from its first label's header to its last's end. */
#define ROW_IMAGE_MAX		512

/*
 * Most columns of a row image's window (a layout whose key columns span more
 * keeps no images): its arrays lie in the layout, at fixed offsets.
 */
#define ROW_IMAGE_COLUMNS	32

/*
 * The keys of one row of a series as they lay in the row, over the layout's
 * window of columns (its key columns, at least two): which are NULL; for
 * each column the Datum expected, the bits of the row's Datum that must
 * equal it (none for a NULL key or a column that is not a key) and whether
 * the Datum is taken relative to the first present TEXT key's (a TEXT key's
 * place) or as it is (an ENUM or SCALAR key); and the bytes from the first
 * present TEXT key's varlena header to the end of the last present one, gaps
 * included.  Its arrays lie in it, so that the per-row path reads them at
 * fixed offsets from the layout.  See row_keys.h.
 *
 * What a match relies on: every byte compared lies between the first and
 * the last present TEXT key's bytes, less than ROW_IMAGE_MAX apart and in
 * increasing places, which set_row_image (group.c) checks; and a row's key
 * values are parts of one tuple, or of one allocation laid out as a tuple
 * (a selected series' values, series_map.c), so reading them reads memory
 * of that tuple only.
 */
typedef struct RowImage
{
	const struct PromSeries *series;	/* whose row it is; NULL: none */
	bool		kept;			/* does the layout keep images? */
	uint32		misses;			/* rows of its series it did not match */
	int			first_column;	/* the window's column of the first present
								 * TEXT key; 0 without one */
	int32		last_header;	/* the offset of the last one's header */
	int32		len;			/* of bytes; 0 when no TEXT key is present */
	Datum		expected[ROW_IMAGE_COLUMNS];	/* by column of the window */
	Datum		compared[ROW_IMAGE_COLUMNS];	/* all bits, or none */
	Datum		relative[ROW_IMAGE_COLUMNS];	/* all bits (a TEXT key's
												 * place), or none */
	bool		nulls[ROW_IMAGE_COLUMNS];
	char		bytes[ROW_IMAGE_MAX];
} RowImage;

/* Rows a layout holds to look up together (group.c). */
typedef struct HeldRows HeldRows;

/* A source of rows: its label columns and how to read them. */
struct PromLayout
{
	int			ncolumns;
	const char **names;
	int		   *name_lens;
	char	  **name_parts;		/* the start of each column's Label
								 * messages (wire_put_name_part) */
	int		   *name_part_lens;
	PromLabelKind *kinds;
	int16	   *typlens;
	FmgrInfo   *outfuncs;		/* for SCALAR and BINARY columns */
	uint16	   *name_order;		/* all columns, sorted by name */
	int			nkeys;			/* columns read from rows: all but CONST */
	uint16	   *key_columns;	/* TEXT ones, then ENUM and SCALAR ones, then
								 * NAME and BINARY ones */
	int16	   *key_of;			/* column to its place in key_columns, which
								 * is that of its value in a series; -1 for
								 * CONST */
	PromLabelValue **const_values;	/* column to its value, for CONST */
	Size		const_labels_size;	/* bytes of the CONST labels as Label
									 * fields */
	int			ntext;			/* how many are TEXT */
	int			nscalar;		/* how many are ENUM or SCALAR */
	bool		simple_keys;	/* every key TEXT, ENUM or SCALAR: a row
								 * can be compared by image, and its keys
								 * kept without its tuple (held rows) */
	uint64		seed;			/* distinguishes layouts in the hash */
	uint32		nseries;		/* series made through this layout */
	double		expected_rows;	/* rows its source's plan expects; 0:
								 * unknown */
	RowKey	   *row;			/* the current row's keys, by column */
	uint64	   *row_hashes;		/* and their hashes, once hashed */
	PromLabelValue **row_values;	/* and the shared values they are, once
									 * looked up (NULL: a column whose values
									 * are not looked up) */
	int			window_first;	/* the columns of row images: the key columns,
								 * at least two (one before the first when
								 * that is the last column) */
	int			window_width;
	RowImage	image;			/* a row of the previous row's series, when
								 * its keys are simple */
	ValueTable *values;			/* distinct values, by column */
	int			pairs_column;	/* the BINARY column of overflow labels, whose
								 * values are always looked up; -1: none */
	LayoutFilter *filters;		/* matchers decided per value, by column */
	int			nfilters;
	HeldRows   *held;			/* rows held to be looked up together
								 * (group.c); NULL until some are */
	int		   *name_index;		/* column to the set's sorted label names,
								 * when finishing */
	uint16		number;			/* its place in the set's layouts */
	bool		histograms;		/* its value column is a prom_histogram: its
								 * samples' values are pointers to histograms
								 * (PromSampleHistogram) */
};

/*
 * A slot of the series index: part of the hash, to skip most candidates, and
 * the series, so that finding it does not read the series array too.
 */
typedef struct SeriesSlot
{
	uint32		tag;			/* the hash's high half */
	uint32		number;			/* 1 + position in series; 0: empty */
	PromSeries *series;
} SeriesSlot;

struct PromSeriesSet
{
	MemoryContext context;		/* owns everything of the set */
	MemoryContext row_context;	/* scratch for one row's detoasted values */
	bool		row_context_used;
	PromArena  *arena;			/* series, values, sample blocks */
	PromArena  *histogram_arena;	/* histogram samples' values and
									 * stored chunks' bytes, apart: the
									 * arena above is rewound (group.c),
									 * never this one */

	PromSeries **series;		/* creation order; sorted when finished */
	int			nseries;
	int			series_capacity;

	SeriesSlot *slots;			/* series index; NULL series: empty */
	uint32		slot_mask;
	bool		newest_unindexed;	/* the newest series is not in the index
									 * yet (group.c, index_newest_series) */
	uint64		newest_hash;	/* and the hash of its keys */
	int			unindexed_from; /* the series from this one on were made
								 * without a lookup and are not in the
								 * index yet (PromIndexPendingSeries) */

	uint32		successor_misses;	/* guesses of the series that follows
									 * failed in a row (group.c) */
	uint32		successor_skips;	/* rows to go without a guess */
	PromLayout *holding;		/* the layout holding rows, or NULL */
	PromSeries *last;			/* series of the previous row */
	int64		last_t;			/* and the time of its sample */
	int64		nsamples;
	int64		max_samples;	/* promread.max_samples when it was made */
	PromSeries **unsorted;		/* series whose samples need sorting */
	int			nunsorted;
	int			unsorted_capacity;
	Size		result_bytes;	/* the series as fields of a SAMPLES
								 * QueryResult; set when finished */
	bool		histograms_uncounted;	/* are series of histograms left out
										 * of it (PromSeriesSetResultBytes)? */
	bool		keep_chunks;	/* stored chunks are kept as they are
								 * (PromSeriesSetKeepChunks) */
	PromStoredChunk *chunks;	/* those kept, in arrival order; by series
								 * and time once finished */
	PromSeries **chunk_series;	/* the series of each, until finished */
	int			nchunks;
	int			chunks_capacity;
	int		   *series_chunks;	/* finished: series i's chunks are
								 * chunks[series_chunks[i]] up to
								 * chunks[series_chunks[i + 1]] */
	PromLayout **layouts;		/* by number, in creation order */
	int			nlayouts;
	int			layouts_capacity;
	bool		finished;
};

/* Sample block capacities: the first, and the cap of the doubling. */
#define BLOCK_FIRST_CAPACITY	4
#define BLOCK_MAX_CAPACITY		1024

/*
 * Rows add to a series' 32-bit message size between two calls of
 * PromSeriesGrowSamples, which clamps it, at most a block's room of
 * samples: the margin above PROM_MESSAGE_BYTES_MAX holds them.
 */
StaticAssertDecl((uint64) PROM_MESSAGE_BYTES_MAX +
				 (uint64) BLOCK_MAX_CAPACITY * WIRE_SAMPLE_FIELD_MAX <= PG_UINT32_MAX,
				 "a series' message size could overflow between two clamps");

/* Set up an empty block for the given number of samples. */
static inline void
init_block(PromSampleBlock *block, uint32 capacity)
{
	block->count = 0;
	block->capacity = capacity;
}

/* The layout of a series of the set. */
static inline PromLayout *
series_layout(const PromSeriesSet *set, const PromSeries *series)
{
	return set->layouts[series->layout];
}

/*
 * The value of a column of its layout for a series: its own, or the
 * layout's for a CONST column.
 */
static inline PromLabelValue *
series_value(const PromLayout *layout, const PromSeries *series, int column)
{
	int			key = layout->key_of[column];

	return key >= 0 ? series->values[key] : layout->const_values[column];
}

/* The overflow labels of a series of a layout; NULL when it has none. */
static inline const LabelPairs *
series_pairs(const PromLayout *layout, const PromSeries *series)
{
	int			column = layout->pairs_column;

	if (column < 0)
		return NULL;
	return value_pairs(series->values[layout->key_of[column]]);
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

/* Allocate from the set's arena; memory is freed with the set. */
static inline void *
arena_alloc(PromSeriesSet *set, Size size)
{
	return PromArenaAlloc(set->arena, size);
}

/*
 * Arrays that grow by doubling (the series, the series index, a column's
 * table of values) are allocated in the set's context while they are small,
 * so that the versions they outgrow are freed for reuse (the arena frees
 * only its large allocations, which have chunks of their own), and in the
 * arena once large, whose chunks are kept between calls.
 */
static inline void *
set_alloc_array(PromSeriesSet *set, Size size)
{
	return PromArenaIsLarge(size) ? PromArenaAlloc(set->arena, size) :
		MemoryContextAlloc(set->context, size);
}

/* Give back an array of set_alloc_array's. */
static inline void
set_free_array(PromSeriesSet *set, void *array, Size size)
{
	if (PromArenaIsLarge(size))
		PromArenaFree(set->arena, array, size);
	else
		pfree(array);
}

/*
 * Append a series to an array of series of the set, doubling the array (to
 * at least 16 places) when it is full; the old one goes back.
 */
static inline void
series_array_append(PromSeriesSet *set, PromSeries ***array, int *count,
					int *capacity, PromSeries *series)
{
	if (unlikely(*count == *capacity))
	{
		int			grown_capacity = Max(*capacity * 2, 16);
		PromSeries **grown = set_alloc_array(set, sizeof(PromSeries *) *
											 grown_capacity);

		if (*count > 0)
			memcpy(grown, *array, sizeof(PromSeries *) * *count);
		if (*array != NULL)
			set_free_array(set, *array, sizeof(PromSeries *) * *capacity);
		*array = grown;
		*capacity = grown_capacity;
	}
	(*array)[(*count)++] = series;
}

/* The bytes of a series as a field of a SAMPLES QueryResult. */
static inline Size
series_field_bytes(const PromSeries *series)
{
	return wire_len_field_size(series->message_bytes);
}

/* A message size as a series counts it: at most PROM_MESSAGE_BYTES_MAX. */
static inline uint32
message_bytes_counted(Size bytes)
{
	return (uint32) Min(bytes, PROM_MESSAGE_BYTES_MAX);
}

/* Give a series a new message size, keeping the set's total true. */
static inline void
set_message_bytes(PromSeriesSet *set, PromSeries *series, Size bytes)
{
	set->result_bytes -= series_field_bytes(series);
	series->message_bytes = message_bytes_counted(bytes);
	set->result_bytes += series_field_bytes(series);
}

/*
 * Bytes of a column's value as a Label field numbered 1; 0 when absent; a
 * value of overflow labels', those of its labels.
 */
static inline Size
label_field_size(const PromLayout *layout, int column,
				 const PromLabelValue *value)
{
	if (!value_is_present(value))
		return unlikely(column == layout->pairs_column) && value_pairs(value) != NULL ?
			value_pairs(value)->labels_size : 0;
	return wire_label_field_size(layout->name_part_lens[column], value->text_len);
}

/*
 * Note for promread.report_phases the memory of the context the set was
 * created in (the call's) and of the set: at its peak, while finishing.
 */
static inline void
series_set_note_peak(const PromSeriesSet *set)
{
	PromPhasesMemory(MemoryContextMemAllocated(MemoryContextGetParent(set->context),
											   true) +
					 PromArenaBytes(set->arena));
}

/* The slot of the index where the probe for a hash begins. */
static inline const SeriesSlot *
home_slot(const PromSeriesSet *set, uint64 hash)
{
	return &set->slots[(uint32) (hash >> 32) & set->slot_mask];
}

/*
 * From *slot on, the next slot of the index with the tag (the hash's high
 * half), or NULL; *slot is then that slot, or the empty one that ends the
 * probe.
 */
static inline const SeriesSlot *
next_tagged_slot(const PromSeriesSet *set, uint32 tag, uint32 *slot)
{
	for (; set->slots[*slot].number != 0; *slot = (*slot + 1) & set->slot_mask)
		if (set->slots[*slot].tag == tag)
			return &set->slots[*slot];
	return NULL;
}

/* layout.c */
extern PromLayout *PromLayoutCreate(PromSeriesSet *set, int ncolumns,
									const char *const *names,
									const PromLabelKind *kinds,
									const Oid *types,
									const char *const *const_values);
extern PromLabelValue *PromNewValue(PromSeriesSet *set, PromLayout *layout,
									int column, const Datum *values);
extern void PromLookUpSharedValues(PromSeriesSet *set, PromLayout *layout,
								   const Datum *values);
extern bool PromRowPassesFilters(PromLayout *layout);

/* overflow_labels.c */
extern LabelPairs *PromParseOverflowLabels(PromSeriesSet *set,
										   const PromLayout *layout,
										   Datum datum);
extern bool PromPairsPassFilters(const PromLayout *layout, int column,
								 const PromLabelValue *value);
extern int	PromSeriesLabelsWithPairs(const PromLayout *layout,
									  const PromSeries *series,
									  const LabelPairs *pairs,
									  PromLabelRef *labels);
extern char *PromPutLabelsWithPairs(char *p, const PromLayout *layout,
									const PromSeries *series,
									const LabelPairs *pairs);

/* series_index.c */
extern uint64 PromHashRow(const PromLayout *layout, uint64 *key_hashes);
extern void PromHashSharedKeys(const PromLayout *layout);
extern const SeriesSlot *PromFindSeries(PromSeriesSet *set,
										PromLayout *layout, uint64 hash,
										const PromSeries *like,
										uint32 *empty);
extern void PromIndexSeries(PromSeriesSet *set, uint32 number, uint64 hash,
							uint32 empty);
extern void PromIndexPendingSeries(PromSeriesSet *set);
extern PromSeries *PromCreateSeries(PromSeriesSet *set, PromLayout *layout,
									const Datum *values, int64 t);

/* samples.c */
extern PromSampleBlock *PromSeriesGrowSamples(PromSeriesSet *set,
											  PromSeries *series, int64 t);
extern void PromMergeSeries(PromSeriesSet *set, PromSeries *into,
							PromSeries *from);
extern void PromMarkUnsorted(PromSeriesSet *set, PromSeries *series);
extern void PromSeriesCountTimes(PromSeries *series);
extern void PromSeriesCountHistograms(PromSeriesSet *set, PromSeries *series);
extern void PromSortSamples(PromSeriesSet *set, PromSeries *series);

/* group.c */
extern void PromGroupPlaceHeldRows(PromSeriesSet *set);
extern void PromGroupIndexNewest(PromSeriesSet *set);

/* order.c */
extern void PromSortSeries(PromSeriesSet *set);

/* The row path's sample stores (group.c). */

/* Store a sample in a series' last block, which has room for it. */
static inline void
PromStoreSample(PromSeries *series, PromSampleBlock *block, int64 base, int64 t,
			 double v)
{
	PromBlockStore(block, base, block->count, t, v);

	/*
	 * When series interleave, each row's sample goes to another series'
	 * block, and the hardware's prefetcher, which follows a few streams of
	 * stores, does not follow a thousand: every fifth row of a series would
	 * store into a line not in the cache, a miss whose cost shows as a
	 * slower executor.  So each sample stored asks for the line after its
	 * own, which the series' next rows fill (the address may lie past the
	 * block, which only wastes the request: a prefetch does not fault).
	 */
	PromPrefetchForWrite((char *) &block->samples[block->count] +
						 PROM_CACHE_LINE);
	block->count++;
	series->nsamples++;
	/* its time's bytes are counted when the set is finished */
	series->message_bytes += WIRE_SAMPLE_HEADER_SIZE + wire_sample_value_size(v);
}

/* Append a sample to a series; late: not after the one appended last. */
static inline void
PromAppendSample(PromSeriesSet *set, PromSeries *series, bool late, int64 t,
			  double v)
{
	PromSampleBlock *block = series->tail;
	int64		base = PromBlockBase(series, block);

	if (late && !series->needs_sort)
		PromMarkUnsorted(set, series);
	if (unlikely(block->count == block->capacity || !PromBaseHolds(base, t)))
	{
		block = PromSeriesGrowSamples(set, series, t);
		base = PromBlockBase(series, block);
	}
	PromStoreSample(series, block, base, t, v);
}

#endif							/* PROMREAD_SERIES_SET_H */

/*-------------------------------------------------------------------------
 *
 * group.c
 *	  The series grouping engine: the one place where rows become series.
 *
 * A query answer holds few series but many rows, so everything done per
 * row must be cheap and everything else is done once per series.
 *
 * Rows arrive through a layout: the label columns of one source (a metric
 * relation, or the name/value pairs of the aggregate) with, for each, how
 * to read it.  For a row, the engine reads every label column as a *key*
 * borrowed from the tuple: a pointer and a length into the tuple for text
 * (no copy; detoasted only when compressed or external, into a scratch
 * context reset after the row; a label's usual one-byte header is read
 * first), the Datum itself for enums and other pass-by-value types.  A NULL
 * and an empty text are the same key, because Prometheus treats both as an
 * absent label.  No output function runs and nothing is allocated on this
 * path.
 *
 * The row's keys are first compared with the series of the previous row: rows
 * of one series usually arrive together, and then that comparison is all the
 * row costs.  It is made by *image* when it can: the layout keeps one row of
 * that series as it lay in its tuple, which of its labels are NULL, the bytes
 * from the first present text label's varlena header to the end of the last
 * (the gaps between them included) and the Datums of the enum and other
 * scalar labels.  A row that is NULL where the image is, whose text labels
 * lie as far from the first as in the image, whose bytes from there are the
 * image's and whose scalar Datums are the image's holds the same labels, and
 * its labels are not read one by one.  The places and Datums are compared
 * over the layout's window of columns (its key columns, at least two), two
 * at a time in a vector register, each column's expected Datum, the bits of
 * it that count (none for a NULL key) and whether it is a place, relative to
 * the first TEXT key's, kept in the image: no branch per label.  An image is
 * taken from the row that makes a series after a series of several rows
 * (so not while interleaving series are met first), and from a row that a
 * full comparison finds to belong to the series of the row before, of short
 * inline values only; a layout whose images keep failing to match (a column
 * that changes on every row lies between two labels) stops taking them, and
 * a layout with name or other by-reference labels, or with key columns that
 * span more than ROW_IMAGE_COLUMNS columns (the image's arrays lie in the
 * layout, at offsets that the per-row path reads without a register each),
 * takes none.  The full comparison reads every key (a short value is
 * compared in at most two loads, which may overlap, rather than byte by
 * byte).  When series interleave (rows ordered by time), they
 * tend to come round in the same order, so each series remembers which series
 * followed it last time (by its number, 1 + its place in the set's series, in
 * 4 bytes), and that one is compared next (unless such guesses keep failing,
 * as when the rows of each time come in no fixed order of series: then rows
 * go without a guess for a while).  Otherwise the keys are hashed (an xxHash
 * of each key, absence included, folded in column order; a column's table of
 * values, below, looks the key up by the same hash) and looked up in an
 * open-addressing index of the set's series that keeps half of each hash
 * beside its series' number and address (so that a probe reads no more than
 * the slot and the series); candidates with the same hash are confirmed by a
 * full comparison.  With many series the probe's slot is a cache miss, so it
 * is asked for as soon as the hash is known, and the row's values of the
 * columns whose values are shared between series (below) are looked up while
 * it comes.  Right after a series was made, a row of other keys most likely
 * makes one too (each series' rows come together, or interleaving series are
 * met first), so such a row's series is made at once and looked up only when
 * a row of yet another series comes (settle_newest), its slot long arrived.
 * Should the index hold a series of its keys by then (its rows came before,
 * then another series'), that series takes its samples and the newest is
 * taken back (the image and the successor that pointed to it point to that
 * series, and its memory is rewound when it is the arena's newest).  Hashing,
 * the lookup and making a series are a function of their own, not inlined
 * into the per-row path (nor is growing a series' samples): inlined, they
 * made it nearly twice the code, with a larger frame saved on every row, for
 * work done once a series.  Likewise the usual row (its
 * image matched, its sample after the row before's and with room in its
 * block) is added by PromSeriesSetAdd alone, which calls nothing; every other
 * row by add_row, which it calls last.
 *
 * While no guesses are made, such rows are mostly of series met long before,
 * at random places of memory, and each would wait for its slot, then for its
 * series, then for that series' block, one after another.  So such a row is
 * held instead (hold_row: its keys, their text bytes copied out of the tuple,
 * their hashes, its hash and its sample; its slot asked for), and sixteen
 * held rows are placed together (release_held): the series at the first slots
 * with their tags are asked for, then those series' last blocks and values,
 * then the rows are looked up and placed in their order, their misses
 * overlapping.  Held rows are placed before a row that is not held, when
 * guesses resume, and before anything reads the set (finishing,
 * PromSeriesSetSeriesSoFar).  A layout whose keys are read from the tuple
 * when a series is made (name, other by-reference types) holds no rows.
 *
 * A row of other keys than the row before's that follows a run of at least
 * RUN_ROWS rows of the newest series (each series' rows come together) most
 * likely begins a series too, and its series is made without a lookup: only
 * the keys whose values are shared are hashed, and the index is neither
 * probed nor written (series_after_run).  The series so made go into the
 * index together, only when a row is to be looked up there (index_runs: a
 * row that follows a shorter run, held rows), those whose keys it holds
 * already left out.  A row of a series met before that follows a run thus
 * makes a second series of its keys, which the sort merges with the first
 * when the set is finished; such series are at most one for RUN_ROWS rows,
 * so rows that come back to their series in runs (a run for each partition
 * of a table) take at most the memory of series of RUN_ROWS samples.
 *
 * A series is created when no series matches (or before that is known, as
 * above), and put in the index at the empty slot where its lookup's probe
 * ended.  Each of its label values is looked up in its column's table of
 * distinct values (before the probe, above), and only a value not seen before
 * is copied into the set's arena, validated as UTF-8 and turned into its
 * label text, which the value holds in the same allocation: a text value is
 * its own label text (8 bytes and the text), an enum value's comes from a
 * per-backend cache of the enum's labels (enum_cache.c), another type's from
 * its output function (the key of such a value, an enum's OID in 4 bytes,
 * another type's Datum or bytes, lies before it).  So a label repeated across
 * series (a datacenter, an environment) is stored and converted once, and
 * series point to it; a CONST label (the metric name) is the layout's, and
 * series do not point to it.  A column whose values turn out to be nearly all
 * distinct (a host name per series) stops being looked up, and each new
 * series gets its own value.  A series' labels are its present values (not
 * empty), in the layout's order of names.
 *
 * Samples are appended to a chain of blocks owned by the series, allocated
 * from the set's arena (arena.c: memory reused between calls, so that its
 * pages are not faulted in again): the first block with the series, after its
 * values and without the link that later blocks carry before them
 * (promread.h, PromSampleBlock), as large as the previous new series is by
 * then, growing in place while it is the arena's newest allocation (so when
 * each series' rows come together, a series' samples are one block without
 * slack), then doubling capacities up to 1024 samples, but no more than what
 * remains of the series' share of the rows its scan's plan expects (so when
 * series interleave, the last block is not half empty; and all that remains
 * when it is at most twice the doubling), and past that share an eighth of
 * what the series holds: 12 bytes per sample (a block stores each sample's
 * time as an offset from a base of its own, and starts anew when a time is
 * more than 24.8 days from it) plus a bounded slack, no per-row allocation.
 * Series that interleave are all made before any has a second row, so
 * before their share is known: each gets a first block of four samples and,
 * when the rest of its share fits the next block, that rest in a block that
 * continues the head, its samples offsets from the head's base, with no link
 * or base of its own (8 bytes of header, not 24: a series of 10 samples with
 * four labels, one a value of its own, takes 232 bytes with its place in the
 * set's array of series, not 248).  Such a block is given a chained block of
 * its own, its memory left unused, should another have to follow (the series
 * outgrows its share, or a time is beyond the head's reach) or its samples be
 * sorted.
 * Each sample stored asks for the next line of its block, so that interleaved
 * series, whose stores the hardware does not follow, find it in the cache.  A
 * series notes whether its samples arrived in strictly increasing time (only
 * those that did not are sorted when the set is finished; a row of the series
 * of the row before is compared with that row's time, which the set keeps,
 * rather than with its block's last sample) and adds up the bytes of its
 * message in a SAMPLES response (its labels' when it is made, each sample's
 * but its time's while the sample is at hand, its times' per block when the
 * set is finished; in 32 bits, counting no further than
 * PROM_MESSAGE_BYTES_MAX, which no response holds), so that the response is
 * sized without reading the samples again.  Finishing (order.c) sorts the
 * series once.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <math.h>
/* inlined: a key is hashed per new series, often in a few bytes */
#define XXH_INLINE_ALL
#include <xxhash.h>

#include "access/detoast.h"
#include "miscadmin.h"
#include "series_set.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "wire.h"

/* Sample block capacities: the first, and the cap of the doubling. */
#define BLOCK_FIRST_CAPACITY	4
#define BLOCK_MAX_CAPACITY		1024
#define BLOCK_PAST_SHARE_CAPACITY	16	/* least block past a series' share */

/*
 * Rows add to a series' 32-bit message size between two calls of
 * grow_samples, which clamps it, at most a block's room of samples: the
 * margin above PROM_MESSAGE_BYTES_MAX holds them.
 */
StaticAssertDecl((uint64) PROM_MESSAGE_BYTES_MAX +
				 (uint64) BLOCK_MAX_CAPACITY * WIRE_SAMPLE_FIELD_MAX <= PG_UINT32_MAX,
				 "a series' message size could overflow between two clamps");

/* Initial slots of a column's table of distinct values. */
#define VALUE_TABLE_FIRST		16

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

/* Allocate from the set's arena; memory is freed with the set. */
static inline void *
arena_alloc(PromSeriesSet *set, Size size)
{
	return PromArenaAlloc(set->arena, size);
}

static PromSeries *settle_newest(PromSeriesSet *set);

/* Is the kind compared by its Datum rather than by bytes? */
static inline bool
kind_is_scalar(PromLabelKind kind)
{
	return kind == PROM_LABEL_ENUM || kind == PROM_LABEL_SCALAR;
}

/* Copy a label's bytes and a NUL to copy, checking that they are UTF-8. */
static void
put_label_text(char *copy, const char *label_name, const char *bytes, int len)
{
	if (!PromIsValidUtf8(bytes, len))
		ereport(ERROR,
				(errcode(ERRCODE_CHARACTER_NOT_IN_REPERTOIRE),
				 errmsg("value of label \"%s\" is not valid UTF-8",
						label_name)));
	memcpy(copy, bytes, len);
	copy[len] = '\0';
}

/*
 * Allocate a value of a column of the given kind with its label text,
 * checked as UTF-8 (none when text is NULL: the NULL of an ENUM, SCALAR or
 * BINARY column), and before it its key (an Oid for ENUM, a Datum for
 * SCALAR, a BinaryKey for BINARY, nothing for the kinds identified by their
 * text).
 */
static PromLabelValue *
alloc_value(PromSeriesSet *set, PromLabelKind kind, const char *label_name,
			const char *text, int len, const void *key)
{
	char	   *start;
	Size		key_size = 0;
	PromLabelValue *value;

	if (kind == PROM_LABEL_ENUM)
		key_size = sizeof(Oid);
	else if (kind == PROM_LABEL_SCALAR)
		key_size = sizeof(Datum);
	else if (kind == PROM_LABEL_BINARY)
		key_size = sizeof(BinaryKey);
	start = arena_alloc(set, key_size + offsetof(PromLabelValue, text) +
						(text != NULL ? len + 1 : 0));
	if (key_size > 0)
		memcpy(start, key, key_size);
	value = (PromLabelValue *) (start + key_size);
	value->ordinal = 0;
	if (text == NULL)
		value->text_len = PROM_VALUE_NULL;
	else
	{
		put_label_text(value->text, label_name, text, len);
		value->text_len = len;
	}
	return value;
}

/* Bytes of a column's value as a Label field numbered 1; 0 when absent. */
static inline Size
label_field_size(const PromLayout *layout, int column,
				 const PromLabelValue *value)
{
	if (!value_is_present(value))
		return 0;
	return wire_label_field_size(layout->name_part_lens[column], value->text_len);
}

/*
 * Describe a source of rows.  names[i] is the label name of column i;
 * types[i] its type (for SCALAR and BINARY columns, whose output function
 * prints the label); const_values[i] the value of a CONST column.  Label
 * names must be distinct.  A set has at most PROM_MAX_LAYOUTS layouts, which
 * it numbers in the order they are made (a series names its layout by its
 * number).
 */
PromLayout *
PromLayoutCreate(PromSeriesSet *set, int ncolumns, const char *const *names,
				 const PromLabelKind *kinds, const Oid *types,
				 const char *const *const_values)
{
	MemoryContext oldcxt;
	PromLayout *layout;
	int			i;

	/*
	 * a newest series not looked up yet is settled first: taking it back
	 * rewinds the arena to it, which must not take this layout's values
	 */
	if (set->newest_unindexed)
		(void) settle_newest(set);

	if (ncolumns > PROM_MAX_LABELS)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("a series cannot have more than %d labels",
						PROM_MAX_LABELS)));
	if (set->nlayouts == PROM_MAX_LAYOUTS)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("cannot group series of more than %d label layouts at once",
						PROM_MAX_LAYOUTS),
				 errdetail("A layout is the label columns of a registered metric, or a list of label names given to prom_read_response_agg.")));
	oldcxt = MemoryContextSwitchTo(set->context);
	layout = palloc0(sizeof(PromLayout));

	layout->ncolumns = ncolumns;
	layout->names = palloc(sizeof(char *) * Max(ncolumns, 1));
	layout->name_lens = palloc(sizeof(int) * Max(ncolumns, 1));
	layout->name_parts = palloc(sizeof(char *) * Max(ncolumns, 1));
	layout->name_part_lens = palloc(sizeof(int) * Max(ncolumns, 1));
	layout->kinds = palloc(sizeof(PromLabelKind) * Max(ncolumns, 1));
	layout->typlens = palloc0(sizeof(int16) * Max(ncolumns, 1));
	layout->outfuncs = palloc0(sizeof(FmgrInfo) * Max(ncolumns, 1));
	layout->name_order = palloc(sizeof(uint16) * Max(ncolumns, 1));
	layout->key_columns = palloc(sizeof(uint16) * Max(ncolumns, 1));
	layout->key_of = palloc(sizeof(int16) * Max(ncolumns, 1));
	layout->const_values = palloc0(sizeof(PromLabelValue *) * Max(ncolumns, 1));
	layout->row = palloc0(sizeof(RowKey) * Max(ncolumns, 1));
	layout->row_hashes = palloc0(sizeof(uint64) * Max(ncolumns, 1));
	layout->row_values = palloc0(sizeof(PromLabelValue *) * Max(ncolumns, 1));
	layout->values = palloc0(sizeof(ValueTable) * Max(ncolumns, 1));
	if (set->nlayouts == set->layouts_capacity)
	{
		set->layouts_capacity *= 2;
		set->layouts = repalloc(set->layouts,
								sizeof(PromLayout *) * set->layouts_capacity);
	}
	layout->number = set->nlayouts;
	set->layouts[set->nlayouts++] = layout;
	layout->seed = (uint64) set->nlayouts * UINT64CONST(0x9E3779B97F4A7C15);

	for (i = 0; i < ncolumns; i++)
	{
		ValueTable *table = &layout->values[i];
		int			j;

		layout->names[i] = pstrdup(names[i]);
		layout->name_lens[i] = strlen(names[i]);
		layout->name_part_lens[i] = wire_name_part_size(layout->name_lens[i]);
		layout->name_parts[i] = palloc(layout->name_part_lens[i]);
		(void) wire_put_name_part(layout->name_parts[i], names[i],
								  layout->name_lens[i]);
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
			/* the one value of a constant label, the layout's; no table */
			layout->const_values[i] = alloc_value(set, PROM_LABEL_CONST, names[i],
												  const_values[i],
												  strlen(const_values[i]), NULL);
		}
		else
		{
			table->mask = VALUE_TABLE_FIRST - 1;
			table->slots = set_alloc_array(set, sizeof(ValueSlot) * VALUE_TABLE_FIRST);
			memset(table->slots, 0, sizeof(ValueSlot) * VALUE_TABLE_FIRST);
			table->interning = true;
		}

		/* insertion sort of the name order; layouts are small */
		for (j = i; j > 0; j--)
		{
			int			other = layout->name_order[j - 1];
			int			cmp;

			cmp = compare_bytes(names[other], layout->name_lens[other],
								names[i], layout->name_lens[i]);
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

	/* the columns read from rows: text ones, then scalar ones, then others */
	for (i = 0; i < ncolumns; i++)
		if (kinds[i] == PROM_LABEL_TEXT)
			layout->key_columns[layout->nkeys++] = i;
	layout->ntext = layout->nkeys;
	for (i = 0; i < ncolumns; i++)
		if (kind_is_scalar(kinds[i]))
			layout->key_columns[layout->nkeys++] = i;
	layout->nscalar = layout->nkeys - layout->ntext;
	for (i = 0; i < ncolumns; i++)
		if (kinds[i] == PROM_LABEL_NAME || kinds[i] == PROM_LABEL_BINARY)
			layout->key_columns[layout->nkeys++] = i;
	for (i = 0; i < ncolumns; i++)
		layout->key_of[i] = -1;
	for (i = 0; i < layout->nkeys; i++)
		layout->key_of[layout->key_columns[i]] = i;
	for (i = 0; i < ncolumns; i++)
		if (kinds[i] == PROM_LABEL_CONST)
			layout->const_labels_size +=
				label_field_size(layout, i, layout->const_values[i]);
	/* rows of a layout of the usual kinds are compared by image */
	layout->usual_kinds = layout->nkeys == layout->ntext + layout->nscalar;
	if (layout->nkeys > 0 && layout->usual_kinds)
	{
		RowImage   *image = &layout->image;
		int			first = ncolumns;
		int			last = 0;
		int			width;

		/* the window: the key columns, at least two, within the columns */
		for (i = 0; i < layout->nkeys; i++)
		{
			first = Min(first, layout->key_columns[i]);
			last = Max(last, layout->key_columns[i]);
		}
		width = Max(last - first + 1, 2);
		layout->window_first = Max(Min(first, ncolumns - width), 0);
		layout->window_width = width;
		/*
		 * a window too wide for the image's arrays keeps none; in one that
		 * fits, a column that is not a key compares no bits, and is not NULL,
		 * and a TEXT key's place is relative to the first's, NULL or not
		 */
		image->kept = width <= ROW_IMAGE_COLUMNS;
		if (image->kept)
			for (i = 0; i < layout->ntext; i++)
				image->relative[layout->key_columns[i] - layout->window_first] =
					~(Datum) 0;
	}
	MemoryContextSwitchTo(oldcxt);
	return layout;
}

/* Point at the bytes of a varlena, detoasting only when it must. */
static inline const char *
borrow_varlena(PromSeriesSet *set, Datum datum, int32 *len)
{
	struct varlena *v = (struct varlena *) DatumGetPointer(datum);

	/* the usual label: short, inline, with a one-byte header */
	if (likely(VARATT_IS_SHORT(v) && !VARATT_IS_EXTERNAL(v)))
	{
		*len = VARSIZE_SHORT(v) - VARHDRSZ_SHORT;
		return VARDATA_SHORT(v);
	}
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

/* Load 8, 16 or 4 bytes from any address. */
static inline uint64
load8(const char *p)
{
	uint64		x;

	memcpy(&x, p, 8);
	return x;
}

static inline DatumPair
load16(const char *p)
{
	DatumPair	x;

	memcpy(&x, p, 16);
	return x;
}

static inline uint32
load4(const char *p)
{
	uint32		x;

	memcpy(&x, p, 4);
	return x;
}

/*
 * Are two byte strings of the same length equal?  Short label values are
 * compared with a few loads that may overlap, without a loop over bytes;
 * longer strings (a row image's) 16 bytes a step in a vector register, their
 * differences gathered without a branch each: the first 16 bytes and the
 * last 16, then the steps between (none up to 32 bytes).  Always inlined: GCC would call it from the row path, for a few
 * instructions' work.
 */
static pg_attribute_always_inline bool
bytes_equal(const char *a, const char *b, int32 len)
{
	int32		i;

	if (len > 16)
	{
		DatumPair	difference = (load16(a) ^ load16(b)) |
			(load16(a + len - 16) ^ load16(b + len - 16));

		for (i = 16; i + 16 < len; i += 16)
			difference |= load16(a + i) ^ load16(b + i);
		return (difference[0] | difference[1]) == 0;
	}
	if (len >= 8)
		return load8(a) == load8(b) && load8(a + len - 8) == load8(b + len - 8);
	if (len >= 4)
		return load4(a) == load4(b) && load4(a + len - 4) == load4(b + len - 4);
	if (len > 0)
		return a[0] == b[0] && a[len / 2] == b[len / 2] && a[len - 1] == b[len - 1];
	return true;
}

/* Is a row's key of a column of the given kind a value of that column? */
static pg_attribute_always_inline bool
key_matches(PromLabelKind kind, const RowKey *key, const PromLabelValue *value)
{
	if (kind == PROM_LABEL_TEXT || kind == PROM_LABEL_NAME)
		return key->len == value->text_len &&
			bytes_equal(key->key.bytes, value->text, key->len);
	/* a NULL's Datum is 0, and an ENUM NULL's OID */
	if (kind == PROM_LABEL_ENUM)
		return ((key->len < 0) == (value->text_len < 0)) &
			(key->key.scalar == ObjectIdGetDatum(value_enum(value)));
	if (kind == PROM_LABEL_SCALAR)
		return ((key->len < 0) == (value->text_len < 0)) &
			(key->key.scalar == value_scalar(value));
	if (key->len < 0 || value->text_len < 0)
		return key->len < 0 && value->text_len < 0;
	return key->len == value_binary(value)->len &&
		bytes_equal(key->key.bytes, value_binary(value)->bytes, key->len);
}

/*
 * Read the row's label keys into layout->row, borrowing from the tuple, and
 * tell whether they equal those of the given series (false if none).  The
 * layout lists text columns first and scalar ones next, so that each of the
 * usual kinds is read by a loop of its own, without a switch per column.
 */
static inline bool
read_row_keys(PromSeriesSet *set, PromLayout *layout, const Datum *values,
			  const bool *isnull, const PromSeries *previous)
{
	bool		equal = (previous != NULL && previous->layout == layout->number);
	const uint16 *columns = layout->key_columns;
	RowKey	   *row = layout->row;
	int			ntext = layout->ntext;
	int			scalar_end = ntext + layout->nscalar;
	int			k;

	for (k = 0; k < ntext; k++)
	{
		int			i = columns[k];
		const char *bytes = NULL;
		int32		len = 0;

		if (!isnull[i])
			bytes = borrow_varlena(set, values[i], &len);
		row[i].len = len;
		row[i].key.bytes = bytes;
		if (equal)
			equal = key_matches(PROM_LABEL_TEXT, &row[i], previous->values[k]);
	}
	for (; k < scalar_end; k++)
	{
		int			i = columns[k];
		int32		len = isnull[i] ? -1 : 0;
		Datum		scalar = isnull[i] ? (Datum) 0 : values[i];

		row[i].len = len;
		row[i].key.scalar = scalar;
		if (equal)
			equal = key_matches(layout->kinds[i], &row[i], previous->values[k]);
	}
	for (; k < layout->nkeys; k++)
	{
		int			i = layout->key_columns[k];
		RowKey	   *key = &layout->row[i];

		if (layout->kinds[i] == PROM_LABEL_NAME)
		{
			if (isnull[i])
				key->len = 0;
			else
			{
				key->key.bytes = NameStr(*DatumGetName(values[i]));
				key->len = strnlen(key->key.bytes, NAMEDATALEN);
			}
		}
		else if (isnull[i])
			key->len = -1;		/* BINARY */
		else if (layout->typlens[i] == -1)
			key->key.bytes = borrow_varlena(set, values[i], &key->len);
		else
		{
			key->key.bytes = DatumGetPointer(values[i]);
			key->len = layout->typlens[i] > 0 ?
				layout->typlens[i] : (int32) strlen(key->key.bytes);
		}
		if (equal)
			equal = key_matches(layout->kinds[i], key, previous->values[k]);
	}
	return equal;
}

/*
 * The bits of two of the row's Datums, from column c of the window, that
 * differ from the image's: a TEXT key's place relative to the first present
 * one's, an ENUM or SCALAR key's Datum, nothing of a NULL key or of a column
 * that is not a key.
 */
static inline DatumPair
pair_difference(const RowImage *image, const Datum *window, int c,
				DatumPair first)
{
	DatumPair	row;
	DatumPair	expected;
	DatumPair	compared;
	DatumPair	relative;

	memcpy(&row, window + c, sizeof(DatumPair));
	memcpy(&expected, image->expected + c, sizeof(DatumPair));
	memcpy(&compared, image->compared + c, sizeof(DatumPair));
	memcpy(&relative, image->relative + c, sizeof(DatumPair));
	return ((row - (first & relative)) & compared) ^ expected;
}

/*
 * Does the row hold the labels of the series of the image?  Over the
 * layout's window of columns, its keys must be NULL where the image's are,
 * its ENUM and SCALAR keys the image's Datums and its present TEXT keys as
 * far from the first as in the image: two columns at a time, without a
 * branch per column.  The last one's header must be the image's, so that the
 * image's length ends inside the row's last value; then the bytes from the
 * first one's header to the end of the last must be the image's (equal
 * headers: equal lengths, and so equal values).  Every byte read lies
 * between two bytes of the row's values less than ROW_IMAGE_MAX apart, so
 * on pages that hold them.
 */
static inline bool
row_matches_image(const PromLayout *layout, const Datum *values,
				  const bool *isnull)
{
	const RowImage *image = &layout->image;
	const Datum *window = values + layout->window_first;
	int			width = layout->window_width;
	Datum		first_datum = window[image->first_column];
	DatumPair	first = {first_datum, first_datum};
	DatumPair	difference;
	const char *bytes;
	int			c;

	if (!bytes_equal((const char *) (isnull + layout->window_first),
					 (const char *) image->nulls, width))
		return false;
	/* Datums subtract as integers: the values may not share an object */
	difference = pair_difference(image, window, 0, first) |
		pair_difference(image, window, width - 2, first);
	for (c = 2; c < width - 2; c += 2)
		difference |= pair_difference(image, window, c, first);
	if ((difference[0] | difference[1]) != 0)
		return false;
	if (image->len == 0)
		return true;
	bytes = DatumGetPointer(first_datum);
	return bytes[image->last_header] == image->bytes[image->last_header] &&
		bytes_equal(bytes, image->bytes, image->len);
}

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
keep_row_image(PromLayout *layout, const PromSeries *series,
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

/* Do a series' values equal the current row's keys of the same layout? */
static inline bool
keys_equal(const PromLayout *layout, const PromSeries *series)
{
	int			k;

	for (k = 0; k < layout->nkeys; k++)
	{
		int			i = layout->key_columns[k];

		if (!key_matches(layout->kinds[i], &layout->row[i], series->values[k]))
			return false;
	}
	return true;
}

/* The key a value of a column of the given kind was made of. */
static inline RowKey
value_key(PromLabelKind kind, const PromLabelValue *value)
{
	RowKey		key;

	switch (kind)
	{
		case PROM_LABEL_ENUM:
			key.len = value->text_len < 0 ? -1 : 0;
			key.key.scalar = ObjectIdGetDatum(value_enum(value));
			break;
		case PROM_LABEL_SCALAR:
			key.len = value->text_len < 0 ? -1 : 0;
			key.key.scalar = value_scalar(value);
			break;
		case PROM_LABEL_BINARY:
			key.len = value_binary(value)->len;
			key.key.bytes = value_binary(value)->bytes;
			break;
		default:
			key.len = value->text_len;
			key.key.bytes = value->text;
			break;
	}
	return key;
}

/*
 * Do two series of one layout have the same keys?  Their values are the same
 * value, or equal ones (one made after its column stopped looking values up).
 */
static bool
series_keys_equal(const PromLayout *layout, const PromSeries *a,
				  const PromSeries *b)
{
	int			k;

	for (k = 0; k < layout->nkeys; k++)
	{
		PromLabelKind kind = layout->kinds[layout->key_columns[k]];
		RowKey		key;

		if (a->values[k] == b->values[k])
			continue;
		key = value_key(kind, b->values[k]);
		if (!key_matches(kind, &key, a->values[k]))
			return false;
	}
	return true;
}

/* Hash one key of a column: its bytes, or its Datum; absence included. */
static inline uint64
hash_key(PromLabelKind kind, const RowKey *key)
{
	/* a scalar's absence is its seed, so that a NULL and a 0 hash apart */
	if (kind_is_scalar(kind))
		return XXH3_64bits_withSeed(&key->key.scalar, sizeof(Datum),
									(uint64) (int64) key->len);
	if (key->len <= 0)
		return XXH3_64bits(&key->len, sizeof(int32));
	return XXH3_64bits_withSeed(key->key.bytes, key->len, key->len);
}

/* Fold the hash of the next key, in column order, into a series' hash. */
static inline uint64
fold_key_hash(uint64 hash, uint64 key_hash)
{
	hash = (hash ^ key_hash) * UINT64CONST(0x9E3779B97F4A7C15);
	return hash ^ (hash >> 29);
}

/*
 * Hash the current row's keys: each key is hashed on its own into
 * key_hashes, by column (a column's table of values looks its key up by the
 * same hash: layout->row_hashes, or a held row's), and the hashes are folded
 * in column order, so that the same values in other columns hash apart.
 */
static uint64
hash_row(const PromLayout *layout, uint64 *key_hashes)
{
	uint64		hash = layout->seed;
	int			k;

	for (k = 0; k < layout->nkeys; k++)
	{
		int			i = layout->key_columns[k];

		key_hashes[i] = hash_key(layout->kinds[i], &layout->row[i]);
		hash = fold_key_hash(hash, key_hashes[i]);
	}
	return hash;
}

/*
 * Hash the current row's keys of the columns whose values are looked up
 * into layout->row_hashes, for look_up_shared_values, and no others: a row
 * whose series is made without a lookup (series_after_run) needs no more.
 */
static void
hash_shared_keys(const PromLayout *layout)
{
	int			k;

	for (k = 0; k < layout->nkeys; k++)
	{
		int			i = layout->key_columns[k];

		if (layout->values[i].interning)
			layout->row_hashes[i] = hash_key(layout->kinds[i], &layout->row[i]);
	}
}

/* The hash of a series' keys, as hash_row gives it for a row of them. */
static uint64
hash_series(const PromLayout *layout, const PromSeries *series)
{
	uint64		hash = layout->seed;
	int			k;

	for (k = 0; k < layout->nkeys; k++)
	{
		PromLabelKind kind = layout->kinds[layout->key_columns[k]];
		RowKey		key = value_key(kind, series->values[k]);

		hash = fold_key_hash(hash, hash_key(kind, &key));
	}
	return hash;
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

/*
 * Find the series of the current row's keys (or of the keys of the series
 * like, if not NULL), of the given hash, in the index: its slot (its number
 * and address), or NULL; then *empty is the empty slot that ended the probe,
 * where a new series of these keys goes.
 */
static const SeriesSlot *
find_series(PromSeriesSet *set, PromLayout *layout, uint64 hash,
			const PromSeries *like, uint32 *empty)
{
	uint32		tag = (uint32) (hash >> 32);
	uint32		slot = tag & set->slot_mask;
	const SeriesSlot *found;

	while ((found = next_tagged_slot(set, tag, &slot)) != NULL)
	{
		const PromSeries *candidate = found->series;

		if (candidate->layout == layout->number &&
			(like != NULL ? series_keys_equal(layout, candidate, like) :
			 keys_equal(layout, candidate)))
			return found;
		slot = (slot + 1) & set->slot_mask;
	}
	*empty = slot;
	return NULL;
}

/* Put a slot into the index, probing from its tag. */
static inline void
put_slot(SeriesSlot *slots, uint32 mask, SeriesSlot entry)
{
	uint32		slot = entry.tag & mask;

	while (slots[slot].number != 0)
		slot = (slot + 1) & mask;
	slots[slot] = entry;
}

/*
 * Put a series, by its number (1 + its place in the set's series), into the
 * index, at the empty slot its lookup found, doubling the index first when
 * three quarters full (and probing it anew): the tags make a probe of a
 * taken slot cheap.
 */
static void
index_series(PromSeriesSet *set, uint32 number, uint64 hash, uint32 empty)
{
	SeriesSlot	entry = {(uint32) (hash >> 32), number,
	set->series[number - 1]};

	if ((uint64) set->nseries * 4 > (uint64) (set->slot_mask + 1) * 3)
	{
		uint32		old_size = set->slot_mask + 1;
		SeriesSlot *old_slots = set->slots;
		uint32		i;

		set->slot_mask = old_size * 2 - 1;
		set->slots = set_alloc_array(set, sizeof(SeriesSlot) * old_size * 2);
		memset(set->slots, 0, sizeof(SeriesSlot) * old_size * 2);
		for (i = 0; i < old_size; i++)
			if (old_slots[i].number != 0)
				put_slot(set->slots, set->slot_mask, old_slots[i]);
		set_free_array(set, old_slots, sizeof(SeriesSlot) * old_size);
		put_slot(set->slots, set->slot_mask, entry);
	}
	else
		set->slots[empty] = entry;
}

/*
 * Print a value with its type's output function, once per distinct value,
 * into the row's scratch context.
 */
static const char *
print_label(PromSeriesSet *set, PromLayout *layout, int column, Datum value)
{
	MemoryContext oldcxt = MemoryContextSwitchTo(set->row_context);
	char	   *text = OutputFunctionCall(&layout->outfuncs[column], value);

	MemoryContextSwitchTo(oldcxt);
	set->row_context_used = true;
	return text;
}

/* A new distinct value of a column, for the current row's key. */
static PromLabelValue *
new_value(PromSeriesSet *set, PromLayout *layout, int column,
		  const Datum *values)
{
	PromLabelKind kind = layout->kinds[column];
	const char *name = layout->names[column];
	const RowKey *key = &layout->row[column];
	const char *text = NULL;
	int			len = 0;
	BinaryKey	binary;
	Oid			oid;
	char	   *copy;

	switch (kind)
	{
		case PROM_LABEL_TEXT:
		case PROM_LABEL_NAME:
			/* its text is its key; a NULL's is empty */
			return alloc_value(set, kind, name,
							   key->len > 0 ? key->key.bytes : "", key->len,
							   NULL);
		case PROM_LABEL_ENUM:
			/* a NULL has no text, and InvalidOid for its OID */
			oid = DatumGetObjectId(key->key.scalar);
			if (key->len == 0)
				text = PromEnumLabel(oid, &len);
			return alloc_value(set, kind, name, text, len, &oid);
		case PROM_LABEL_SCALAR:
			/* a NULL has no text */
			if (key->len == 0)
			{
				text = print_label(set, layout, column, key->key.scalar);
				len = strlen(text);
			}
			return alloc_value(set, kind, name, text, len, &key->key.scalar);
		case PROM_LABEL_BINARY:
			binary.bytes = NULL;
			binary.len = key->len;
			if (key->len < 0)
				return alloc_value(set, kind, name, NULL, 0, &binary);
			copy = arena_alloc(set, Max(key->len, 1));
			memcpy(copy, key->key.bytes, key->len);
			binary.bytes = copy;
			text = print_label(set, layout, column, values[column]);
			return alloc_value(set, kind, name, text, strlen(text), &binary);
		case PROM_LABEL_CONST:
			break;
	}
	elog(ERROR, "unexpected label kind %d", (int) kind);
	return NULL;
}

/*
 * Put a new distinct value of a column, for the current row's key, into the
 * column's table at the empty slot where its lookup ended (column_value),
 * and return it.  A column whose values turn out to be nearly all distinct
 * stops being looked up.
 */
static pg_noinline PromLabelValue *
add_column_value(PromSeriesSet *set, PromLayout *layout, int column,
				 const Datum *values, uint32 slot)
{
	ValueTable *table = &layout->values[column];
	PromLabelValue *value = new_value(set, layout, column, values);

	table->slots[slot].hash = layout->row_hashes[column];
	table->slots[slot].value = value;
	if (++table->count >= 1024 && table->count * 4 > (uint32) set->nseries * 3)
	{
		/* a value per series: no use looking */
		table->interning = false;
		set_free_array(set, table->slots, sizeof(ValueSlot) * (table->mask + 1));
		table->slots = NULL;
	}
	else if (table->count * 2 > table->mask)
	{
		uint32		old_size = table->mask + 1;
		ValueSlot  *old_slots = table->slots;
		uint32		i;

		table->mask = old_size * 2 - 1;
		table->slots = set_alloc_array(set, sizeof(ValueSlot) * old_size * 2);
		memset(table->slots, 0, sizeof(ValueSlot) * old_size * 2);
		for (i = 0; i < old_size; i++)
		{
			if (old_slots[i].value == NULL)
				continue;
			slot = (uint32) old_slots[i].hash & table->mask;
			while (table->slots[slot].value != NULL)
				slot = (slot + 1) & table->mask;
			table->slots[slot] = old_slots[i];
		}
		set_free_array(set, old_slots, sizeof(ValueSlot) * old_size);
	}
	return value;
}

/*
 * The distinct value of a column whose values are looked up, of the given
 * kind, that the current row holds: found in the column's table by the key's
 * hash, or made when first seen (its key copied, its label text made once).
 * Inlined with its kind known, so that comparing a candidate takes no branch
 * on the kind.
 */
static pg_attribute_always_inline PromLabelValue *
column_value(PromSeriesSet *set, PromLayout *layout, int column,
			 const Datum *values, PromLabelKind kind)
{
	const ValueTable *table = &layout->values[column];
	const RowKey *key = &layout->row[column];
	uint64		hash = layout->row_hashes[column];
	uint32		slot = (uint32) hash & table->mask;
	PromLabelValue *value;

	Assert(table->interning && kind == layout->kinds[column]);
	while ((value = table->slots[slot].value) != NULL)
	{
		if (table->slots[slot].hash == hash && key_matches(kind, key, value))
			return value;
		slot = (slot + 1) & table->mask;
	}
	return add_column_value(set, layout, column, values, slot);
}

/*
 * Append a series to an array of series in the arena, doubling the array
 * (to at least 16 places) when it is full; the old one goes back.
 */
static void
append_series(PromSeriesSet *set, PromSeries ***array, int *count,
			  int *capacity, PromSeries *series)
{
	if (*count == *capacity)
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

/*
 * Look up the current row's values of the columns whose values are shared
 * between series, into layout->row_values: the values a series of these keys
 * has, found or made (a new one means that no series has these keys).
 */
static void
look_up_shared_values(PromSeriesSet *set, PromLayout *layout,
					  const Datum *values)
{
	int			k;

	/* TEXT keys first (see read_row_keys) */
	for (k = 0; k < layout->nkeys; k++)
	{
		int			i = layout->key_columns[k];
		PromLabelValue *value = NULL;

		if (layout->values[i].interning)
			value = k < layout->ntext ?
				column_value(set, layout, i, values, PROM_LABEL_TEXT) :
				column_value(set, layout, i, values, layout->kinds[i]);
		layout->row_values[i] = value;
	}
}

/* Set up an empty block for the given number of samples. */
static inline void
init_block(PromSampleBlock *block, uint32 capacity)
{
	block->count = 0;
	block->capacity = capacity;
}

/*
 * Create a series for the current row's keys, whose shared values are looked
 * up (layout->row_values): its values of its own, those of the columns whose
 * values are not looked up, are made here.  Its first block, for a sample of
 * time t, is made with it: as large as the series made before it is now
 * (which, when each series' rows come together, is all of that series, and
 * this one often has as many samples).
 */
static PromSeries *
create_series(PromSeriesSet *set, PromLayout *layout, const Datum *values,
			  int64 t)
{
	uint32		capacity = BLOCK_FIRST_CAPACITY;
	Size		labels_size = layout->const_labels_size;
	PromSeries *series;
	int			k;

	CHECK_FOR_INTERRUPTS();
	if (set->nseries > 0)
		capacity = Min(Max((uint32) set->series[set->nseries - 1]->nsamples,
						   BLOCK_FIRST_CAPACITY), BLOCK_MAX_CAPACITY);
	series = arena_alloc(set, offsetof(PromSeries, values) +
						 sizeof(PromLabelValue *) * layout->nkeys +
						 sizeof(int64) + offsetof(PromSampleBlock, samples) +
						 sizeof(PromStoredSample) * capacity);
	memset(series, 0, offsetof(PromSeries, values));
	series->layout = layout->number;
	series->nvalues = layout->nkeys;
	for (k = 0; k < layout->nkeys; k++)
	{
		int			i = layout->key_columns[k];
		PromLabelValue *value = layout->row_values[i] != NULL ?
			layout->row_values[i] : new_value(set, layout, i, values);

		series->values[k] = value;
		/* PromSeriesLabelsSize, added up here */
		labels_size += label_field_size(layout, i, value);
	}
	series->message_bytes = message_bytes_counted(labels_size);
	series->tail = PromSeriesHead(series);
	*PromBlockOwnBase(series->tail) = t;
	init_block(series->tail, capacity);

	append_series(set, &set->series, &set->nseries, &set->series_capacity,
				  series);
	layout->nseries++;
	return series;
}

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
static pg_noinline PromSampleBlock *
grow_samples(PromSeriesSet *set, PromSeries *series, int64 t)
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
 * Make a chained block the last of a series' blocks, linked as promread.h's
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
PromSampleBlock *
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
void
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

/* Is t not after the time of the sample a series took last? */
static inline bool
sample_is_late(const PromSeries *series, int64 t)
{
	const PromSampleBlock *tail = series->tail;

	return tail->count > 0 &&
		t <= PromBlockTime(tail, PromBlockBase(series, tail), tail->count - 1);
}

/*
 * Give a series the samples of another of the same label set, after its own,
 * as one message: the labels once (the message size stops at
 * PROM_MESSAGE_BYTES_MAX, as in grow_samples), the samples sorted as one when
 * the other's do not all follow its own.  The other keeps nothing to sort.
 */
void
PromMergeSeries(PromSeriesSet *set, PromSeries *into, PromSeries *from)
{
	const PromSampleBlock *head = PromSeriesHead(from);
	bool		in_order = !from->needs_sort &&
		!sample_is_late(into, PromBlockTime(head, PromBlockBase(from, head), 0));

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
 * Note how many rows the source of a layout is expected to give (a plan's
 * estimate), so that sample blocks of series that interleave can be sized
 * to what the series will hold instead of doubling past it, and the arena's
 * chunks to the samples (and a sixteenth more for the series).
 */
void
PromLayoutExpectRows(PromSeriesSet *set, PromLayout *layout, double rows)
{
	layout->expected_rows = rows;
	PromArenaExpect(set->arena,
					(Size) Min(rows, (double) MaxAllocHugeSize / 32) *
					sizeof(PromStoredSample) * 17 / 16);
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
	append_series(set, &set->unsorted, &set->nunsorted,
				  &set->unsorted_capacity, series);
}

/*
 * Rows of the newest series, the one of the row before, after which a row of
 * other keys makes its series without a lookup (series_after_run).
 */
#define RUN_ROWS	8

/*
 * Does a row of other keys than the row before's, whose series is not the
 * one guessed to follow, come after a run of rows: the previous row's series
 * the newest, with RUN_ROWS samples or more?  Then it most likely begins a
 * series of its own (each series' rows come together).
 */
static inline bool
follows_run(const PromSeriesSet *set, const PromSeries *previous)
{
	return previous != NULL && previous == set->series[set->nseries - 1] &&
		previous->nsamples >= RUN_ROWS;
}

/*
 * Put the series made after runs of rows (series_after_run) into the index,
 * before anything looks a series up there: those whose keys it holds
 * already are left out, duplicates that the sort merges (their rows came in
 * runs apart, such as one per partition of a table).
 */
static void
index_runs(PromSeriesSet *set)
{
	int			i;

	for (i = set->runs_from; i < set->nseries; i++)
	{
		PromSeries *series = set->series[i];
		PromLayout *layout = series_layout(set, series);
		uint64		hash = hash_series(layout, series);
		uint32		empty;

		if (find_series(set, layout, hash, series, &empty) == NULL)
			index_series(set, i + 1, hash, empty);
	}
	set->runs_from = set->nseries;
}

/*
 * The number of a new series of the current row's keys, made without
 * looking for one in the index, when the row follows a run of rows
 * (follows_run): only its shared values are looked up.  Its series and those
 * made so after it are put in the index when a row is looked up there
 * (index_runs); until then a row of the keys of an earlier series that
 * follows a run makes another series of these keys, which the sort merges
 * with it.  Such a series comes after RUN_ROWS samples of another, so they
 * are at most one for RUN_ROWS rows: rows that come back to their series in
 * runs take at most the memory of series of RUN_ROWS samples.  Hashing the
 * row's keys, probing the index and putting the series there are spared
 * (333 instructions a series of 10 samples: bench/RESULTS.md).
 */
static pg_noinline uint32
series_after_run(PromSeriesSet *set, PromLayout *layout, const Datum *values,
				 const bool *isnull, int64 t)
{
	PromSeries *series;

	hash_shared_keys(layout);
	look_up_shared_values(set, layout, values);
	series = create_series(set, layout, values, t);
	if (layout->image.kept)
		keep_row_image(layout, series, values, isnull);
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
	uint64		hash = hash_row(layout, layout->row_hashes);
	PromSeries *previous = set->last;
	bool		look_later;
	uint32		empty = 0;
	uint32		number = 0;

	if (set->runs_from < set->nseries)
		index_runs(set);

	/*
	 * The probe of the index is a cache miss when the set has many series:
	 * its slot is asked for first, and the shared values are looked up while
	 * it comes.  Right after a series was made, a row of other keys most
	 * likely makes one too: it is made at once, and looked up later
	 * (settle_newest), when its slot has come.
	 */
	__builtin_prefetch(home_slot(set, hash));
	look_up_shared_values(set, layout, values);
	look_later = previous != NULL && previous == set->series[set->nseries - 1];
	if (!look_later)
	{
		const SeriesSlot *found = find_series(set, layout, hash, NULL, &empty);

		if (found != NULL)
			number = found->number;
	}
	if (number == 0)
	{
		PromSeries *series = create_series(set, layout, values, t);

		number = set->nseries;
		if (look_later)
		{
			set->newest_unindexed = true;
			set->newest_hash = hash;
		}
		else
			index_series(set, set->nseries, hash, empty);
		set->runs_from = set->nseries;
		/*
		 * the next row is likely the new series' own when the series of the
		 * row before had rows before it (series whose rows come together),
		 * not when it was new too (series that interleave, met first)
		 */
		if (layout->image.kept && (previous == NULL || previous->nsamples > 1))
			keep_row_image(layout, series, values, isnull);
	}
	return number;
}

static inline void store_sample(PromSeries *series, PromSampleBlock *block,
								int64 base, int64 t, double v);

/* Append a sample to a series; late: not after the one appended last. */
static inline void
append_sample(PromSeriesSet *set, PromSeries *series, bool late, int64 t,
			  double v)
{
	PromSampleBlock *block = series->tail;
	int64		base = PromBlockBase(series, block);

	if (late && !series->needs_sort)
		PromMarkUnsorted(set, series);
	if (unlikely(block->count == block->capacity || !PromBaseHolds(base, t)))
	{
		block = grow_samples(set, series, t);
		base = PromBlockBase(series, block);
	}
	store_sample(series, block, base, t, v);
}

/* Store a sample in a series' last block, which has room for it. */
static inline void
store_sample(PromSeries *series, PromSampleBlock *block, int64 base, int64 t,
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
	__builtin_prefetch((char *) &block->samples[block->count] +
					   PROM_CACHE_LINE, 1);
	block->count++;
	series->nsamples++;
	/* its time's bytes are counted when the set is finished */
	series->message_bytes += WIRE_SAMPLE_HEADER_SIZE + wire_sample_value_size(v);
}

/*
 * Add the bytes of a series' sample times to its message size, when its set
 * is finished (order.c): as it is stored, a sample counts the rest of its
 * field (store_sample), not its time's varint, whose size is one for all the
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
 * Look up the newest series, made without a lookup (series_of_keys), in the
 * index, now that its slot has had time to come: put it there, or, when the
 * index holds a series of its keys (its rows had come before, then those of
 * another series), give that series its samples and take the newest back.
 * Samples that fit a block are copied out, and the newest's memory goes
 * back to the arena when it is the newest there; more are passed on in their
 * blocks.  Called before a row of another series is placed, the newest being
 * the previous row's, and before a layout is made (PromLayoutCreate): so
 * while the newest waits, the arena gives memory to nothing but it, its
 * values and its blocks, which the rewind takes.  Returns the series that
 * now holds the previous row.
 */
static pg_noinline PromSeries *
settle_newest(PromSeriesSet *set)
{
	PromSeries *newest = set->series[set->nseries - 1];
	PromLayout *layout = series_layout(set, newest);
	PromSeries *before = set->nseries > 1 ? set->series[set->nseries - 2] : NULL;
	const SeriesSlot *found;
	PromSeries *into;
	uint32		empty;

	Assert(set->newest_unindexed && set->last == newest &&
		   set->runs_from == set->nseries);
	set->newest_unindexed = false;
	found = find_series(set, layout, set->newest_hash, newest, &empty);
	if (found == NULL)
	{
		index_series(set, set->nseries, set->newest_hash, empty);
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
	set->runs_from = set->nseries;
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
			append_sample(set, into, sample_is_late(into, samples[i].t),
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
release_held(PromSeriesSet *set)
{
	PromLayout *layout = set->holding;
	HeldRows   *held = layout->held;
	RowKey	   *current_row = layout->row;
	uint64	   *current_hashes = layout->row_hashes;
	PromSeries *previous = held->before;
	const SeriesSlot *likely[HOLD_ROWS];
	int			j;
	int			k;

	if (set->runs_from < set->nseries)
		index_runs(set);
	for (j = 0; j < held->count; j++)
	{
		uint32		tag = (uint32) (held->rows[j].hash >> 32);
		uint32		slot = tag & set->slot_mask;

		/* the first slot with the row's tag: its likely series' */
		likely[j] = next_tagged_slot(set, tag, &slot);
		if (likely[j] != NULL)
			__builtin_prefetch(likely[j]->series);
	}
	for (j = 0; j < held->count; j++)
	{
		if (likely[j] != NULL)
		{
			const PromSeries *series = likely[j]->series;
			const PromSampleBlock *tail = series->tail;

			__builtin_prefetch(&tail->samples[tail->count], 1);
			for (k = 0; k < layout->nkeys; k++)
				__builtin_prefetch(series->values[k]);
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
		found = find_series(set, layout, row->hash, NULL, &empty);
		if (found != NULL)
		{
			series = found->series;
			number = found->number;
		}
		else
		{
			look_up_shared_values(set, layout, NULL);
			series = create_series(set, layout, NULL, row->t);
			number = set->nseries;
			index_series(set, set->nseries, row->hash, empty);
			set->runs_from = set->nseries;
		}
		if (previous != NULL)
			previous->successor = number;
		append_sample(set, series, sample_is_late(series, row->t),
					  row->t, row->v);
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
 * Hold the current row, whose keys are read, for release_held, when no
 * guesses are made and its layout's keys are all of kinds read without the
 * tuple when a series is made (text, enum, other pass-by-value): tells
 * whether it did.  The rows of another layout are released first.
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

	if (set->successor_skips == 0 || !layout->usual_kinds)
		return false;
	for (k = 0; k < layout->ntext; k++)
		need += Max(layout->row[layout->key_columns[k]].len, 0);
	if (need > HOLD_BYTES)
		return false;
	if (set->holding != NULL &&
		(set->holding != layout || need > HOLD_BYTES - held->bytes_used))
		previous = release_held(set);
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
	row->hash = hash_row(layout,
						 held->key_hashes + held->count * layout->ncolumns);
	row->t = t;
	row->v = v;
	__builtin_prefetch(home_slot(set, row->hash));
	held->count++;
	set->holding = layout;
	set->last = NULL;
	if (held->count == HOLD_ROWS)
		(void) release_held(set);
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
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("query exceeded the sample limit of " INT64_FORMAT " samples",
						set->max_samples),
				 errhint("Select fewer series or a shorter time range, or raise \"promread.max_samples\".")));

	/* is it a row of the series of the row before, by keys? */
	if (!matched)
	{
		if (read_row_keys(set, layout, values, isnull, previous))
		{
			if (layout->image.kept)
				keep_row_image(layout, previous, values, isnull);
		}
		else
		{
			if (unlikely(set->newest_unindexed))
				previous = settle_newest(set);
			series = guess_successor(set, layout, previous);
			if (series == NULL)
			{
				uint32		number;

				if (follows_run(set, previous))
					number = series_after_run(set, layout, values, isnull, t);
				else
				{
					if (hold_row(set, layout, previous, t, v))
					{
						reset_row_context(set);
						return;
					}
					if (set->holding != NULL)
						previous = release_held(set);
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

	append_sample(set, series,
				  series == previous ? t <= set->last_t :
				  sample_is_late(series, t),
				  t, v);
	set->last_t = t;
}

/*
 * Add one row: its label values (in layout order, NULL allowed; values and
 * isnull have room for two columns at least, the width of a row image's
 * window, whose columns that are not keys must not be NULL for the image to
 * match) and its sample.  This is the per-row path; see the file header.
 * Its callers check for interrupts: the executor between rows, the
 * aggregate's combining of states between samples.
 *
 * The usual row, of the series of the row before by its image, its sample
 * later than that row's and with room in the series' last block, is added
 * here; any other goes to add_row, called last (a jump), so that this path
 * saves registers only once the row's series and room for its sample are
 * checked, and keeps no arguments on the stack.
 *
 * It begins a page of code of its own: the same instructions at other
 * offsets took up to a third longer a row when series interleave (a load of
 * the series' last sample waiting far longer; bench/RESULTS.md), and there
 * a change elsewhere in the library does not move it.
 */
pg_attribute_aligned(4096) void
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
			store_sample(series, block, base, t, v);
			set->last_t = t;
			return;
		}
	}
	add_row(set, layout, values, isnull, t, v, matched);
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

/*
 * The labels of a series, in name order, into labels (room for the columns
 * of its layout): its present ones, those of a value that is not empty;
 * returns their number.
 */
int
PromSeriesLabels(const PromSeriesSet *set, const PromSeries *series,
				 PromLabelRef *labels)
{
	const PromLayout *layout = series_layout(set, series);
	int			n = 0;
	int			i;

	for (i = 0; i < layout->ncolumns; i++)
	{
		int			column = layout->name_order[i];
		const PromLabelValue *value = series_value(layout, series, column);

		if (!value_is_present(value))
			continue;
		labels[n].name = layout->names[column];
		labels[n].name_len = layout->name_lens[column];
		labels[n].value = value->text;
		labels[n].value_len = value->text_len;
		n++;
	}
	return n;
}

/*
 * Bytes of a series' labels as repeated Label fields numbered 1: those of
 * its present values, added up in the layout's order, without gathering
 * them in name order first; its CONST labels' are the layout's.
 */
Size
PromSeriesLabelsSize(const PromSeriesSet *set, const PromSeries *series)
{
	const PromLayout *layout = series_layout(set, series);
	Size		size = layout->const_labels_size;
	int			k;

	for (k = 0; k < layout->nkeys; k++)
		size += label_field_size(layout, layout->key_columns[k],
								 series->values[k]);
	return size;
}

/*
 * Write a series' labels as repeated Label fields numbered 1, in name order
 * (those of its present values), into room for PromSeriesLabelsSize bytes;
 * returns the end.
 */
char *
PromPutSeriesLabels(char *p, const PromSeriesSet *set, const PromSeries *series)
{
	const PromLayout *layout = series_layout(set, series);
	/* read once: the compiler must assume that stores through p change them */
	const uint16 *name_order = layout->name_order;
	char	  **name_parts = layout->name_parts;
	const int  *name_part_lens = layout->name_part_lens;
	int			ncolumns = layout->ncolumns;
	int			i;

	for (i = 0; i < ncolumns; i++)
	{
		int			column = name_order[i];
		const PromLabelValue *value = series_value(layout, series, column);

		if (value_is_present(value))
			p = wire_put_label(p, name_parts[column], name_part_lens[column],
							   value->text, value->text_len);
	}
	return p;
}

/* Sort the series, merge equal label sets, put samples in time order. */
void
PromSeriesSetFinish(PromSeriesSet *set)
{
	int			i;

	Assert(!set->finished);
	if (set->holding != NULL)
		(void) release_held(set);
	set->finished = true;
	set->last = NULL;
	/* a newest series of another's keys is merged with it by the sort */
	set->newest_unindexed = false;
	/* the index is for adding rows: its memory goes to the sort */
	set_free_array(set, set->slots, sizeof(SeriesSlot) * (set->slot_mask + 1));
	set->slots = NULL;
	PromSortSeries(set);
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
 * Note for promread.report_phases the memory of the context the set was
 * created in (the call's) and of the set: at its peak, while finishing.
 */
void
PromSeriesSetNotePeak(const PromSeriesSet *set)
{
	PromPhasesMemory(MemoryContextMemAllocated(MemoryContextGetParent(set->context),
											   true) +
					 PromArenaBytes(set->arena));
}

/*
 * The series of a set not finished yet and their number, in creation order,
 * the rows it holds placed first (release_held).
 */
PromSeries *const *
PromSeriesSetSeriesSoFar(PromSeriesSet *set, int *count)
{
	if (set->holding != NULL)
		(void) release_held(set);
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
 * the series are read in their order.
 */
Size
PromSeriesSetResultBytes(const PromSeriesSet *set)
{
	Assert(set->finished);
	return set->result_bytes;
}

/* Number of rows added to the set (samples before duplicate removal). */
int64
PromSeriesSetSampleCount(const PromSeriesSet *set)
{
	return set->nsamples;
}

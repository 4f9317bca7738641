/*-------------------------------------------------------------------------
 *
 * layout.c
 *	  Layouts: the label columns of a source of rows and how to read them;
 *	  the distinct values of each column; a series' labels as output.
 *
 * 1. A layout describes one source of rows: a metric relation's label
 *    columns and __name__, or a list of label names of the aggregate.
 *    Each column has a kind (PromLabelKindOf): text, name, enum, another
 *    pass-by-value type, another by-reference type, or a constant.
 * 2. The columns read from rows (its keys) are listed text first, then
 *    enum and other scalars, then the rest, so that the row path reads each
 *    group in a loop of its own.  A layout of text and scalar keys only
 *    (simple_keys) gets a window of columns for its row images
 *    (row_keys.h).
 * 3. Each key column has a table of its distinct values.  A series points
 *    to its values; a value is made once, when first seen (PromNewValue):
 *    its key copied where the key is not its text, its label text made
 *    once (an enum's label from enum_cache.c, another type's by its output
 *    function) and checked as UTF-8.  So a label repeated across series (a
 *    datacenter) is stored and converted once.
 * 4. A column whose values are nearly all distinct (a host per series)
 *    stops being looked up: each new series gets a value of its own.
 * 5. Matchers that no index answers (regexes that are not literal sets,
 *    negative matchers) may be decided here, per distinct value, rather than
 *    per row by SQL (PromLayoutAddFilter): a value's verdict is kept with it,
 *    and a series whose values fail is made rejected, taking no samples.
 * 6. A series' labels are its present values (not empty, not NULL) in name
 *    order, written as Label fields from each column's name part, made
 *    once a layout.
 * 7. A layout may have a column of overflow labels (PromLayoutSetOverflow):
 *    a jsonb object of label names and values, the labels of a series that
 *    have no column of their own.  Its key is the jsonb's bytes, which are
 *    the same for the same labels; its values are always looked up, and
 *    each distinct one is parsed once, when first seen, into its labels
 *    sorted by name (overflow_labels.c), which a series' labels then merge
 *    with its columns', and over which the column's filters are decided.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "mb/pg_wchar.h"
#include "series_set.h"
#include "row_keys.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"

/* Initial slots of a column's table of distinct values. */
#define VALUE_TABLE_FIRST		16

/* How the engine should read a label column of the given type. */
PromLabelKind
PromLabelKindOf(Oid type)
{
	Oid			base = getBaseType(type);
	int16		typlen;
	bool		byval;

	if (base == TEXTOID || base == VARCHAROID)
		return PROM_LABEL_TEXT;
	if (base == NAMEOID)
		return PROM_LABEL_NAME;
	if (type_is_enum(base))
		return PROM_LABEL_ENUM;
	get_typlenbyval(base, &typlen, &byval);
	return byval ? PROM_LABEL_SCALAR : PROM_LABEL_BINARY;
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
 * checked as UTF-8 (none when label is NULL: the NULL of an ENUM, SCALAR or
 * BINARY column), and before it its key (an Oid for ENUM, a Datum for
 * SCALAR, a BinaryKey for BINARY, nothing for the kinds identified by their
 * text).
 */
static PromLabelValue *
alloc_value(PromSeriesSet *set, PromLabelKind kind, const char *label_name,
			const char *label, int len, const void *key)
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
						(label != NULL ? len + 1 : 0));
	if (key_size > 0)
		memcpy(start, key, key_size);
	value = (PromLabelValue *) (start + key_size);
	value->ordinal = 0;
	value->verdict = VERDICT_UNKNOWN;
	if (label == NULL)
		value->text_len = PROM_VALUE_NULL;
	else
	{
		put_label_text(value->text, label_name, label, len);
		value->text_len = len;
	}
	return value;
}

/*
 * Describe a source of rows (for PromSeriesSetAddLayout, which says what
 * the arguments are).  A set has at most PROM_MAX_LAYOUTS layouts, which it
 * numbers in the order they are made (a series names its layout by its
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
	layout->pairs_column = -1;

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
	/* rows of a layout of simple keys are compared by image */
	layout->simple_keys = layout->nkeys == layout->ntext + layout->nscalar;
	if (layout->nkeys > 0 && layout->simple_keys)
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
 * Make a BINARY column of a layout, of type jsonb, its column of overflow
 * labels (see the file's header); before any row is added.
 */
void
PromLayoutSetOverflow(PromSeriesSet *set, PromLayout *layout, int column)
{
	Assert(layout->kinds[column] == PROM_LABEL_BINARY && layout->nseries == 0 &&
		   layout->pairs_column < 0);
	layout->pairs_column = column;
}

/*
 * Mark a layout, before its first row, as one whose rows' values are
 * histograms (PromSeriesSetCopyHistogram): its series hold histograms.
 */
void
PromLayoutSetHistograms(PromSeriesSet *set, PromLayout *layout)
{
	Assert(layout->nseries == 0);
	layout->histograms = true;
}

/*
 * A new distinct value of a column of overflow labels, for the current
 * row's key (datum: the row's jsonb): its key copied, and its labels parsed
 * (overflow_labels.c).  It is no label itself: its labels are.
 */
static PromLabelValue *
new_pairs_value(PromSeriesSet *set, PromLayout *layout, int column,
				const RowKey *key, Datum datum)
{
	BinaryKey	binary = {NULL, key->len, NULL};
	char	   *copy;

	if (key->len < 0)
		return alloc_value(set, PROM_LABEL_BINARY, layout->names[column], NULL,
						   0, &binary);
	binary.pairs = PromParseOverflowLabels(set, layout, datum);
	copy = arena_alloc(set, Max(key->len, 1));
	memcpy(copy, key->key.bytes, key->len);
	binary.bytes = copy;
	return alloc_value(set, PROM_LABEL_BINARY, layout->names[column], "", 0,
					   &binary);
}

/*
 * Print a value with its type's output function, once per distinct value,
 * into the row's scratch context.
 */
static const char *
print_label(PromSeriesSet *set, PromLayout *layout, int column, Datum value)
{
	MemoryContext oldcxt = MemoryContextSwitchTo(set->row_context);
	char	   *printed = OutputFunctionCall(&layout->outfuncs[column], value);

	MemoryContextSwitchTo(oldcxt);
	set->row_context_used = true;
	return printed;
}

/*
 * A new distinct value of a column, for the current row's key: its key
 * copied where the key is not its text, its label text made (the enum's
 * label, or the type's output), checked as UTF-8.
 */
PromLabelValue *
PromNewValue(PromSeriesSet *set, PromLayout *layout, int column,
			 const Datum *values)
{
	PromLabelKind kind = layout->kinds[column];
	const char *name = layout->names[column];
	const RowKey *key = &layout->row[column];
	const char *label = NULL;
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
				label = PromEnumLabel(oid, &len);
			return alloc_value(set, kind, name, label, len, &oid);
		case PROM_LABEL_SCALAR:
			/* a NULL has no text */
			if (key->len == 0)
			{
				label = print_label(set, layout, column, key->key.scalar);
				len = strlen(label);
			}
			return alloc_value(set, kind, name, label, len, &key->key.scalar);
		case PROM_LABEL_BINARY:
			if (column == layout->pairs_column)
				return new_pairs_value(set, layout, column, key, values[column]);
			binary.bytes = NULL;
			binary.len = key->len;
			binary.pairs = NULL;
			if (key->len < 0)
				return alloc_value(set, kind, name, NULL, 0, &binary);
			copy = arena_alloc(set, Max(key->len, 1));
			memcpy(copy, key->key.bytes, key->len);
			binary.bytes = copy;
			label = print_label(set, layout, column, values[column]);
			return alloc_value(set, kind, name, label, strlen(label), &binary);
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
	PromLabelValue *value = PromNewValue(set, layout, column, values);

	table->slots[slot].hash = layout->row_hashes[column];
	table->slots[slot].value = value;
	if (++table->count >= 1024 && table->count * 4 > (uint32) set->nseries * 3 &&
		column != layout->pairs_column)
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
 * Look up the current row's values of the columns whose values are shared
 * between series, into layout->row_values: the values a series of these keys
 * has, found or made (a new one means that no series has these keys).
 */
void
PromLookUpSharedValues(PromSeriesSet *set, PromLayout *layout,
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

/*
 * Have the engine decide a matcher per distinct value of a TEXT or NAME
 * column of a layout, rather than SQL per row: series whose value of the
 * column fails it are rejected (they take no samples, and the set does not
 * answer them).  On the column of overflow labels, a matcher is decided on
 * its label among them.  The matcher must live as long as the set.
 */
void
PromLayoutAddFilter(PromSeriesSet *set, PromLayout *layout, int column,
					const PromMatcher *matcher)
{
	Assert(layout->kinds[column] == PROM_LABEL_TEXT ||
		   layout->kinds[column] == PROM_LABEL_NAME ||
		   column == layout->pairs_column);
	if (layout->filters == NULL)
		layout->filters = MemoryContextAlloc(set->context,
											 sizeof(LayoutFilter) *
											 layout->ncolumns * 4);
	else if (layout->nfilters % (layout->ncolumns * 4) == 0)
		layout->filters = repalloc(layout->filters, sizeof(LayoutFilter) *
								   (layout->nfilters + layout->ncolumns * 4));
	layout->filters[layout->nfilters].column = column;
	layout->filters[layout->nfilters].matcher = matcher;
	layout->nfilters++;
}

/* Does a value of a column (its text; absent: "") pass the column's filters? */
static bool
passes_column_filters(const PromLayout *layout, int column, const char *bytes,
					  int len)
{
	int			f;

	for (f = 0; f < layout->nfilters; f++)
	{
		if (layout->filters[f].column != column)
			continue;
		PromPhases.matcher_evaluations++;
		if (!PromMatcherMatches(layout->filters[f].matcher, bytes, len))
			return false;
	}
	return true;
}

/*
 * Do the current row's values pass the layout's filters?  A shared value
 * (looked up: layout->row_values) is decided once and keeps its verdict; a
 * column whose values are not looked up (one per series) is decided on the
 * row's key, once per series.
 */
bool
PromRowPassesFilters(PromLayout *layout)
{
	int			f;

	for (f = 0; f < layout->nfilters; f++)
	{
		int			column = layout->filters[f].column;
		PromLabelValue *value = layout->row_values[column];
		const RowKey *key = &layout->row[column];
		int			earlier;

		/* each column once: its first filter's turn */
		for (earlier = 0; earlier < f; earlier++)
			if (layout->filters[earlier].column == column)
				break;
		if (earlier < f)
			continue;
		if (value == NULL)
		{
			if (!passes_column_filters(layout, column,
									   key->len > 0 ? key->key.bytes : "",
									   Max(key->len, 0)))
				return false;
			continue;
		}
		if (value->verdict == VERDICT_UNKNOWN && column == layout->pairs_column)
			value->verdict = PromPairsPassFilters(layout, column, value) ?
				VERDICT_PASS : VERDICT_FAIL;
		if (value->verdict == VERDICT_UNKNOWN)
			value->verdict = passes_column_filters(layout, column, value->text,
												   Max(value->text_len, 0)) ?
				VERDICT_PASS : VERDICT_FAIL;
		if (value->verdict == VERDICT_FAIL)
			return false;
	}
	return true;
}

/*
 * How many labels a series may have: the columns of its layout and its
 * overflow labels (room for PromSeriesLabels).
 */
int
PromSeriesLabelCount(const PromSeriesSet *set, const PromSeries *series)
{
	const PromLayout *layout = series_layout(set, series);
	const LabelPairs *pairs = series_pairs(layout, series);

	return layout->ncolumns + (pairs != NULL ? pairs->npairs : 0);
}

/*
 * The labels of a series, in name order, into labels (room for
 * PromSeriesLabelCount): its present ones, those of a value that is not
 * empty, and its overflow labels merged in; returns their number.
 */
int
PromSeriesLabels(const PromSeriesSet *set, const PromSeries *series,
				 PromLabelRef *labels)
{
	const PromLayout *layout = series_layout(set, series);
	const LabelPairs *pairs = series_pairs(layout, series);
	int			n = 0;
	int			i;

	if (pairs != NULL)
		return PromSeriesLabelsWithPairs(layout, series, pairs, labels);
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
	const LabelPairs *pairs = series_pairs(layout, series);
	int			i;

	if (pairs != NULL)
		return PromPutLabelsWithPairs(p, layout, series, pairs);
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

/*
 * The labels of a series as Prometheus prints them, {name="value", ...},
 * cut after about 200 bytes: for an error message.
 */
char *
PromSeriesLabelsText(const PromSeriesSet *set, const PromSeries *series)
{
	PromLabelRef *labels = palloc(sizeof(PromLabelRef) *
								  PromSeriesLabelCount(set, series));
	int			n = PromSeriesLabels(set, series, labels);
	StringInfoData text;
	int			i;

	initStringInfo(&text);
	appendStringInfoChar(&text, '{');
	for (i = 0; i < n; i++)
	{
		int			len;
		int			k;

		if (text.len > 200)
		{
			appendStringInfoString(&text, ", ...");
			break;
		}
		if (i > 0)
			appendStringInfoString(&text, ", ");
		appendBinaryStringInfo(&text, labels[i].name, labels[i].name_len);
		appendStringInfoString(&text, "=\"");
		/* values are UTF-8, as the database: cut between characters */
		len = pg_mbcliplen(labels[i].value, labels[i].value_len, 200);
		for (k = 0; k < len; k++)
		{
			char		c = labels[i].value[k];

			if (c == '"' || c == '\\')
				appendStringInfoChar(&text, '\\');
			appendStringInfoChar(&text, c);
		}
		appendStringInfoString(&text, len < labels[i].value_len ? "...\"" : "\"");
	}
	appendStringInfoChar(&text, '}');
	return text.data;
}

/*-------------------------------------------------------------------------
 *
 * row_keys.h
 *	  Reading a row's label keys and comparing them, inlined into the row
 *	  path (group.c) and the series index (series_index.c).
 *
 * 1. A row's label columns are read as keys borrowed from its tuple: a
 *    pointer and a length for text (detoasted only when compressed or
 *    external), the Datum for enums and other pass-by-value types.  A NULL
 *    and an empty text are the same key: both are an absent label.
 * 2. A key is compared with a series' value of its column by bytes or by
 *    Datum; short strings in a few loads that may overlap, longer ones 16
 *    bytes a step.
 * 3. A row of the series of the row before is recognized by its image
 *    (RowImage, series_set.h): one of that series' rows as it lay in its
 *    tuple.  The row's Datums over the layout's window of columns are
 *    compared with the image's two at a time, a text key's place relative
 *    to the first text key's, then the bytes from the first text key's
 *    header to the end of the last; no branch per label.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PROMREAD_ROW_KEYS_H
#define PROMREAD_ROW_KEYS_H

#include "access/detoast.h"
#include "series_set.h"

/*
 * Two Datums compared at once: with GCC and Clang a vector, one SSE2
 * register on x86-64; elsewhere a pair of scalars.
 */
#if defined(__GNUC__)
typedef Datum DatumPair __attribute__((vector_size(2 * sizeof(Datum))));

static inline DatumPair
pair_of(Datum a, Datum b)
{
	DatumPair	pair = {a, b};

	return pair;
}
static inline DatumPair pair_or(DatumPair a, DatumPair b) { return a | b; }
static inline DatumPair pair_xor(DatumPair a, DatumPair b) { return a ^ b; }
static inline DatumPair pair_and(DatumPair a, DatumPair b) { return a & b; }
static inline DatumPair pair_sub(DatumPair a, DatumPair b) { return a - b; }
static inline bool pair_is_zero(DatumPair a) { return (a[0] | a[1]) == 0; }
#else
typedef struct DatumPair
{
	Datum		a;
	Datum		b;
} DatumPair;

static inline DatumPair
pair_of(Datum a, Datum b)
{
	DatumPair	pair;

	pair.a = a;
	pair.b = b;
	return pair;
}
static inline DatumPair pair_or(DatumPair x, DatumPair y) { return pair_of(x.a | y.a, x.b | y.b); }
static inline DatumPair pair_xor(DatumPair x, DatumPair y) { return pair_of(x.a ^ y.a, x.b ^ y.b); }
static inline DatumPair pair_and(DatumPair x, DatumPair y) { return pair_of(x.a & y.a, x.b & y.b); }
static inline DatumPair pair_sub(DatumPair x, DatumPair y) { return pair_of(x.a - y.a, x.b - y.b); }
static inline bool pair_is_zero(DatumPair x) { return (x.a | x.b) == 0; }
#endif

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

StaticAssertDecl(sizeof(DatumPair) == 16, "a DatumPair is 16 bytes");

/*
 * Are two byte strings of the same length equal?  Short label values are
 * compared with a few loads that may overlap, without a loop over bytes;
 * longer strings (a row image's) 16 bytes a step, their differences
 * gathered without a branch each: the first 16 bytes and the last 16, then
 * the steps between (none up to 32 bytes).  Always inlined: a call would
 * cost the row path more than the comparison.
 */
static pg_attribute_always_inline bool
bytes_equal(const char *a, const char *b, int32 len)
{
	int32		i;

	if (len > 16)
	{
		DatumPair	difference = pair_or(pair_xor(load16(a), load16(b)),
										 pair_xor(load16(a + len - 16),
												  load16(b + len - 16)));

		for (i = 16; i + 16 < len; i += 16)
			difference = pair_or(difference,
								 pair_xor(load16(a + i), load16(b + i)));
		return pair_is_zero(difference);
	}
	if (len >= 8)
		return load8(a) == load8(b) && load8(a + len - 8) == load8(b + len - 8);
	if (len >= 4)
		return load4(a) == load4(b) && load4(a + len - 4) == load4(b + len - 4);
	if (len > 0)
		return a[0] == b[0] && a[len / 2] == b[len / 2] && a[len - 1] == b[len - 1];
	return true;
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
	return pair_xor(pair_and(pair_sub(row, pair_and(first, relative)), compared),
					expected);
}

/*
 * The memory a matched image relies on: the row's value whose header lies
 * at the image's last header (the same header byte) ends where the image's
 * bytes end, so that comparing the image's length of bytes from the row's
 * first text key reads the row's own values and nothing past them.
 */
static inline bool
row_image_ends_in_row(const RowImage *image, const char *bytes)
{
	return image->last_header +
		(int32) VARSIZE_SHORT(bytes + image->last_header) == image->len;
}

/*
 * Does the row hold the labels of the series of the image?  Over the
 * layout's window of columns, its keys must be NULL where the image's are,
 * its ENUM and SCALAR keys the image's Datums and its present TEXT keys as
 * far from the first as in the image: two columns at a time, without a
 * branch per column.  The last one's header must be the image's, so that
 * the image's length ends with the row's last value; then the bytes from
 * the first one's header to the end of the last must be the image's (equal
 * headers: equal lengths, and so equal values).
 */
static inline bool
row_matches_image(const PromLayout *layout, const Datum *values,
				  const bool *isnull)
{
	const RowImage *image = &layout->image;
	const Datum *window = values + layout->window_first;
	int			width = layout->window_width;
	Datum		first_datum = window[image->first_column];
	DatumPair	first = pair_of(first_datum, first_datum);
	DatumPair	difference;
	const char *bytes;
	int			c;

	if (!bytes_equal((const char *) (isnull + layout->window_first),
					 (const char *) image->nulls, width))
		return false;
	/* Datums subtract as integers: the values may not share an object */
	difference = pair_or(pair_difference(image, window, 0, first),
						 pair_difference(image, window, width - 2, first));
	for (c = 2; c < width - 2; c += 2)
		difference = pair_or(difference,
							 pair_difference(image, window, c, first));
	if (!pair_is_zero(difference))
		return false;
	if (image->len == 0)
		return true;
	bytes = DatumGetPointer(first_datum);
	if (bytes[image->last_header] != image->bytes[image->last_header])
		return false;
	Assert(row_image_ends_in_row(image, bytes));
	return bytes_equal(bytes, image->bytes, image->len);
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

#endif							/* PROMREAD_ROW_KEYS_H */

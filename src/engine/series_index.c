/*-------------------------------------------------------------------------
 *
 * series_index.c
 *	  Finding the series of a row's keys, and making it when there is none.
 *
 * 1. A row's keys are hashed one by one (xxHash of the bytes, or of the
 *    Datum with the key's absence as seed) and folded in column order from
 *    a seed of the layout's, so that the same values in other columns, or
 *    in another layout, hash apart.  A column's table of values looks the
 *    key up by the same hash.
 * 2. The index is an open-addressing table of the set's series: each slot
 *    holds the hash's high half (its tag), the series' number and its
 *    address, so that a probe reads the slot and, for a matching tag, the
 *    series, and nothing else.  Candidates are confirmed by comparing keys.
 * 3. The index doubles at three quarters full.  Its slots are a cache miss
 *    each when it is large, which the row path hides by asking for a slot
 *    as soon as the hash is known (group.c).
 * 4. A series is made with its values (the shared ones looked up before,
 *    its own made here) and its head block, and its labels' bytes in a
 *    SAMPLES response are added up as it is made.
 * 5. Series made without a lookup (group.c) go into the index together,
 *    when a row is next looked up there; those whose keys the index holds
 *    already stay out, and the sort merges them with their twins.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

/* inlined: a key is hashed per new series, often in a few bytes */
#define XXH_INLINE_ALL
#include <xxhash.h>

#include "miscadmin.h"
#include "row_keys.h"

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
uint64
PromHashRow(const PromLayout *layout, uint64 *key_hashes)
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
 * into layout->row_hashes, for PromLookUpSharedValues, and no others: a row
 * whose series is made without a lookup (create_series_unindexed, group.c)
 * needs no more.
 */
void
PromHashSharedKeys(const PromLayout *layout)
{
	int			k;

	for (k = 0; k < layout->nkeys; k++)
	{
		int			i = layout->key_columns[k];

		if (layout->values[i].interning)
			layout->row_hashes[i] = hash_key(layout->kinds[i], &layout->row[i]);
	}
}

/* The hash of a series' keys, as PromHashRow gives it for a row of them. */
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

/*
 * Find the series of the current row's keys (or of the keys of the series
 * like, if not NULL), of the given hash, in the index: its slot (its number
 * and address), or NULL; then *empty is the empty slot that ended the probe,
 * where a new series of these keys goes.
 */
const SeriesSlot *
PromFindSeries(PromSeriesSet *set, PromLayout *layout, uint64 hash,
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
void
PromIndexSeries(PromSeriesSet *set, uint32 number, uint64 hash, uint32 empty)
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
 * Put the series made without a lookup (create_series_unindexed, group.c)
 * into the index, before anything looks a series up there: those whose
 * keys it holds already are left out, duplicates that the sort merges
 * (their rows came in runs apart, such as one per partition of a table).
 */
void
PromIndexPendingSeries(PromSeriesSet *set)
{
	int			i;

	for (i = set->unindexed_from; i < set->nseries; i++)
	{
		PromSeries *series = set->series[i];
		PromLayout *layout = series_layout(set, series);
		uint64		hash = hash_series(layout, series);
		uint32		empty;

		if (PromFindSeries(set, layout, hash, series, &empty) == NULL)
			PromIndexSeries(set, i + 1, hash, empty);
	}
	set->unindexed_from = set->nseries;
}

/*
 * Create a series for the current row's keys, whose shared values are looked
 * up (layout->row_values, PromLookUpSharedValues): its values of its own,
 * those of the columns whose values are not looked up, are made here.  Its
 * first block, for a sample of time t, is made with it: as large as the
 * series made before it is now (which, when each series' rows come
 * together, is all of that series, and this one often has as many samples);
 * none for a series its layout's filters reject.
 */
PromSeries *
PromCreateSeries(PromSeriesSet *set, PromLayout *layout, const Datum *values,
				 int64 t)
{
	uint32		capacity = BLOCK_FIRST_CAPACITY;
	Size		labels_size = layout->const_labels_size;
	PromSeries *series;
	int			k;

	bool		rejected;

	CHECK_FOR_INTERRUPTS();
	if (set->nseries > 0)
		capacity = Min(Max((uint32) set->series[set->nseries - 1]->nsamples,
						   BLOCK_FIRST_CAPACITY), BLOCK_MAX_CAPACITY);
	/* a series its layout's filters reject takes no samples */
	rejected = layout->nfilters > 0 && !PromRowPassesFilters(layout);
	if (rejected)
		capacity = 0;
	series = arena_alloc(set, offsetof(PromSeries, values) +
						 sizeof(PromLabelValue *) * layout->nkeys +
						 sizeof(int64) + offsetof(PromSampleBlock, samples) +
						 sizeof(PromStoredSample) * capacity);
	memset(series, 0, offsetof(PromSeries, values));
	series->layout = layout->number;
	series->nvalues = layout->nkeys;
	series->rejected = rejected;
	for (k = 0; k < layout->nkeys; k++)
	{
		int			i = layout->key_columns[k];
		PromLabelValue *value = layout->row_values[i] != NULL ?
			layout->row_values[i] : PromNewValue(set, layout, i, values);

		series->values[k] = value;
		/* PromSeriesLabelsSize, added up here */
		labels_size += label_field_size(layout, i, value);
	}
	series->message_bytes = message_bytes_counted(labels_size);
	series->tail = PromSeriesHead(series);
	*PromBlockOwnBase(series->tail) = t;
	init_block(series->tail, capacity);

	series_array_append(set, &set->series, &set->nseries,
						&set->series_capacity, series);
	layout->nseries++;
	return series;
}

/*-------------------------------------------------------------------------
 *
 * series_map.c
 *	  The series a read of a metric in chunk storage selected (scan_chunks.c,
 *	  step 3): a map from series id to label values, filled from the series
 *	  statement's rows and read once a chunk or head row.
 *
 * The series and their copied label values go in an arena, so that
 * promread.max_memory bounds them as it bounds the series set; once every
 * series is in, an open-addressing hash of them is made in the arena too.
 * A lookup tries the previous lookup's series first: a series' chunks
 * mostly come together (compaction writes a window's chunks series by
 * series).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "engine/engine.h"
#include "scan_internal.h"
#include "utils/array.h"
#include "utils/datum.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"

/*
 * A label value of the series being added, detoasted (NULL: stored in its
 * Datum), and its place in the series' allocation.
 */
typedef struct SeriesMapValue
{
	Pointer		value;
	Size		offset;
	Size		size;
} SeriesMapValue;

/*
 * The series a read selected, by id: the series, then an open-addressing
 * hash of them, all in an arena (promread.max_memory bounds it).
 */
struct SeriesMap
{
	PromArena  *arena;
	MemoryContext context;		/* the arena's, deleted with the map */
	int			nlabels;
	int16	   *typlen;			/* of each label column */
	bool	   *typbyval;
	SeriesMapValue *copies;		/* PromSeriesMapAdd's, one a column */
	PromSelectedSeries **series;
	int64		count;
	int64		capacity;
	PromSelectedSeries **slots;		/* the hash, a power of two of them */
	uint64		mask;
	int			shift;			/* 64 - log2(slots) */
	const PromSelectedSeries *last; /* the previous lookup's */
};

/* The map's slot of a series id: Fibonacci hashing of the id. */
static inline uint64
series_slot(const SeriesMap *map, int64 id)
{
	return ((uint64) id * UINT64CONST(0x9E3779B97F4A7C15)) >> map->shift;
}

/* An empty map of the scan's series, its arena in a context of its own. */
SeriesMap *
PromSeriesMapCreate(const MetricScan *scan)
{
	MemoryContext context = AllocSetContextCreate(CurrentMemoryContext,
												  "promread selected series",
												  ALLOCSET_SMALL_SIZES);
	SeriesMap  *map = MemoryContextAllocZero(context, sizeof(SeriesMap));
	int			i;

	map->context = context;
	map->arena = PromArenaCreate(context);
	map->nlabels = scan->nlabels;
	map->typlen = MemoryContextAlloc(context, sizeof(int16) * Max(scan->nlabels, 1));
	map->typbyval = MemoryContextAlloc(context, sizeof(bool) * Max(scan->nlabels, 1));
	map->copies = MemoryContextAlloc(context, sizeof(SeriesMapValue) * Max(scan->nlabels, 1));
	for (i = 0; i < scan->nlabels; i++)
		get_typlenbyval(scan->labels[i].type, &map->typlen[i], &map->typbyval[i]);
	return map;
}

/*
 * Add a series to the map: its id and its label values, copied (detoasted)
 * into the arena.  Its values array has a slot more than the label columns,
 * NULL, where a layout's constant __name__ would be.
 *
 * The series, its arrays and its values' bytes are one allocation, the
 * values in column order as in a tuple (a short varlena unpadded, any other
 * value MAXALIGNed, padding zeroed): the row path's image of a series
 * (group.c) spans its values' bytes as it spans a tuple's.
 */
void
PromSeriesMapAdd(SeriesMap *map, int64 id, const Datum *values, const bool *isnull)
{
	int			n = map->nlabels;
	SeriesMapValue *copies = map->copies;
	Size		header = MAXALIGN(sizeof(PromSelectedSeries) +
								  (sizeof(Datum) + sizeof(bool)) * (n + 1));
	Size		size = header;
	PromSelectedSeries *series;
	int			i;

	if (map->count == map->capacity)
	{
		int64		capacity = Max(64, map->capacity * 2);
		PromSelectedSeries **grown = PromArenaAlloc(map->arena,
												sizeof(PromSelectedSeries *) * capacity);

		if (map->count > 0)
		{
			memcpy(grown, map->series, sizeof(PromSelectedSeries *) * map->count);
			PromArenaFree(map->arena, map->series,
						  sizeof(PromSelectedSeries *) * map->capacity);
		}
		map->series = grown;
		map->capacity = capacity;
	}
	/* detoast the values copied by reference, and place them */
	for (i = 0; i < n; i++)
	{
		SeriesMapValue *copy = &copies[i];

		copy->value = NULL;
		if (isnull[i] || map->typbyval[i])
			continue;
		copy->value = map->typlen[i] == -1 ?
			(Pointer) PG_DETOAST_DATUM_PACKED(values[i]) :
			DatumGetPointer(values[i]);
		if (map->typlen[i] != -1 || !VARATT_IS_SHORT(copy->value))
			size = MAXALIGN(size);
		copy->offset = size;
		copy->size = datumGetSize(PointerGetDatum(copy->value), false, map->typlen[i]);
		size += copy->size;
	}
	series = PromArenaAlloc(map->arena, size);
	memset((char *) series + header, 0, size - header);
	series->id = id;
	series->values = (Datum *) (series + 1);
	series->isnull = (bool *) (series->values + n + 1);
	for (i = 0; i < n; i++)
	{
		SeriesMapValue *copy = &copies[i];

		series->isnull[i] = isnull[i];
		if (copy->value == NULL)
			series->values[i] = isnull[i] ? (Datum) 0 : values[i];
		else
		{
			char	   *bytes = (char *) series + copy->offset;

			memcpy(bytes, copy->value, copy->size);
			series->values[i] = PointerGetDatum(bytes);
			if (copy->value != DatumGetPointer(values[i]))
				pfree(copy->value);
		}
	}
	series->values[n] = (Datum) 0;
	series->isnull[n] = true;
	map->series[map->count++] = series;
}

/* Make the map's hash once every series is in. */
void
PromSeriesMapIndex(SeriesMap *map)
{
	uint64		nslots = 2;
	int64		i;

	map->shift = 63;
	while (nslots < (uint64) map->count * 2)
	{
		nslots *= 2;
		map->shift--;
	}
	map->mask = nslots - 1;
	map->slots = PromArenaAlloc(map->arena, sizeof(PromSelectedSeries *) * nslots);
	memset(map->slots, 0, sizeof(PromSelectedSeries *) * nslots);
	for (i = 0; i < map->count; i++)
	{
		uint64		slot = series_slot(map, map->series[i]->id);

		while (map->slots[slot] != NULL)
			slot = (slot + 1) & map->mask;
		map->slots[slot] = map->series[i];
	}
}

/*
 * The series of an id, NULL when the series statement did not select it:
 * the previous lookup's series first, as a series' rows mostly come
 * together, then the hash.
 */
const PromSelectedSeries *
PromSeriesMapFind(SeriesMap *map, int64 id)
{
	uint64		slot;

	if (map->last != NULL && map->last->id == id)
		return map->last;
	for (slot = series_slot(map, id); map->slots[slot] != NULL;
		 slot = (slot + 1) & map->mask)
		if (map->slots[slot]->id == id)
			return map->last = map->slots[slot];
	return NULL;
}

/* Free the map and its arena. */
void
PromSeriesMapFree(SeriesMap *map)
{
	MemoryContextDelete(map->context);
}

/* How many series the map holds. */
int64
PromSeriesMapCount(const SeriesMap *map)
{
	return map->count;
}

/* The ids of the map's series, an int8[] Datum. */
Datum
PromSeriesMapIds(const SeriesMap *map)
{
	Datum	   *ids = palloc(sizeof(Datum) * Max(map->count, 1));
	int64		i;

	for (i = 0; i < map->count; i++)
		ids[i] = Int64GetDatum(map->series[i]->id);
	return PointerGetDatum(construct_array(ids, (int) map->count, INT8OID,
										   sizeof(int64), true, TYPALIGN_DOUBLE));
}

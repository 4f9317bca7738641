/*-------------------------------------------------------------------------
 *
 * enum_cache.c
 *	  The labels of enum types, cached per backend.
 *
 * Enum label columns are compared by value; the label of a value is
 * needed once per new series, and matchers on an enum column are evaluated
 * over all labels of its type.  An enum can have hundreds of thousands of
 * labels (one per host, say), too many to look up one by one in the
 * syscache on every call, so the labels of a type are read from pg_enum
 * once, in one index scan, and kept by value: in an array indexed by value
 * when the type's values are dense (those of one CREATE TYPE are
 * consecutive even OIDs), so that values met in the order of the type look
 * their labels up in the order of memory; otherwise in a hash table.  Any change
 * to pg_enum invalidates the cache; it is rebuilt on the next lookup, never
 * in the middle of one, so a caller may use what a lookup returned until it
 * makes the next one.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "catalog/pg_enum.h"
#include "common/hashfn.h"
#include "engine.h"
#include "miscadmin.h"
#include "utils/fmgroids.h"
#include "utils/inval.h"
#include "utils/memutils.h"
#include "utils/syscache.h"

/* A label and its length. */
typedef struct LabelAt
{
	const char *label;			/* NULL: no value here */
	int			len;
} LabelAt;

/* One enum value and its label, in the hash table. */
typedef struct EnumLabelEntry
{
	Oid			value;			/* hash key */
	char		status;			/* for simplehash */
	LabelAt		at;
} EnumLabelEntry;

#define SH_PREFIX		enumlabels
#define SH_ELEMENT_TYPE	EnumLabelEntry
#define SH_KEY_TYPE		Oid
#define SH_KEY			value
#define SH_HASH_KEY(tb, key)	murmurhash32(key)
#define SH_EQUAL(tb, a, b)		((a) == (b))
#define SH_SCOPE		static inline
#define SH_DECLARE
#define SH_DEFINE
#include "lib/simplehash.h"

/* A cached type: its labels, and the array of a dense type. */
typedef struct CachedType
{
	PromEnumLabels labels;
	Oid			first;			/* lowest value */
	uint32		range;			/* entries of at: 0 when not dense */
	LabelAt    *at;				/* by value minus first */
} CachedType;

/* A type whose values span at most this many per label is dense. */
#define DENSE_SPAN	4

static MemoryContext cache_context = NULL;
static enumlabels_hash *labels_by_value = NULL;	/* of types not dense */
static List *types = NIL;		/* of CachedType */
static CachedType *last_type = NULL;	/* the type of the last lookup */
static bool cache_valid = false;

/* Any change to pg_enum makes the cache stale. */
static void
invalidate(Datum arg, int cacheid, uint32 hashvalue)
{
	cache_valid = false;
}

/* Make sure the cache exists and is not stale. */
static void
prepare_cache(void)
{
	if (cache_context == NULL)
	{
		cache_context = AllocSetContextCreate(TopMemoryContext,
											  "promread enum labels",
											  ALLOCSET_DEFAULT_SIZES);
		CacheRegisterSyscacheCallback(ENUMOID, invalidate, (Datum) 0);
	}
	if (!cache_valid)
	{
		MemoryContextReset(cache_context);
		labels_by_value = enumlabels_create(cache_context, 1024, NULL);
		types = NIL;
		last_type = NULL;
		cache_valid = true;
	}
}

/* Index the labels of a type by value: an array when dense, else the hash. */
static void
index_type(CachedType *cached)
{
	PromEnumLabels *labels = &cached->labels;
	Oid			last = InvalidOid;
	int			i;

	cached->first = InvalidOid;
	for (i = 0; i < labels->nlabels; i++)
	{
		if (i == 0 || labels->values[i] < cached->first)
			cached->first = labels->values[i];
		last = Max(last, labels->values[i]);
	}
	if (labels->nlabels > 0 &&
		(uint64) last - cached->first < (uint64) labels->nlabels * DENSE_SPAN)
	{
		cached->range = last - cached->first + 1;
		cached->at = palloc0_array(LabelAt, cached->range);
		for (i = 0; i < labels->nlabels; i++)
		{
			LabelAt    *at = &cached->at[labels->values[i] - cached->first];

			at->label = labels->labels[i];
			at->len = labels->lens[i];
		}
		return;
	}
	for (i = 0; i < labels->nlabels; i++)
	{
		bool		found;
		EnumLabelEntry *entry = enumlabels_insert(labels_by_value,
												  labels->values[i], &found);

		entry->at.label = labels->labels[i];
		entry->at.len = labels->lens[i];
	}
}

/* Read every label of an enum type into the cache. */
static CachedType *
load_type(Oid type)
{
	MemoryContext oldcxt = MemoryContextSwitchTo(cache_context);
	CachedType *cached = palloc0(sizeof(CachedType));
	PromEnumLabels *labels = &cached->labels;
	Relation	rel;
	ScanKeyData key;
	SysScanDesc scan;
	HeapTuple	tuple;
	int			capacity = 64;

	labels->type = type;
	labels->values = palloc(sizeof(Oid) * capacity);
	labels->labels = palloc(sizeof(char *) * capacity);
	labels->lens = palloc(sizeof(int) * capacity);

	rel = table_open(EnumRelationId, AccessShareLock);
	ScanKeyInit(&key, Anum_pg_enum_enumtypid, BTEqualStrategyNumber, F_OIDEQ,
				ObjectIdGetDatum(type));
	scan = systable_beginscan(rel, EnumTypIdLabelIndexId, true, NULL, 1, &key);
	while (HeapTupleIsValid(tuple = systable_getnext(scan)))
	{
		Form_pg_enum en = (Form_pg_enum) GETSTRUCT(tuple);

		CHECK_FOR_INTERRUPTS();
		if (labels->nlabels == capacity)
		{
			capacity *= 2;
			labels->values = repalloc(labels->values, sizeof(Oid) * capacity);
			labels->labels = repalloc(labels->labels, sizeof(char *) * capacity);
			labels->lens = repalloc(labels->lens, sizeof(int) * capacity);
		}
		labels->values[labels->nlabels] = en->oid;
		labels->labels[labels->nlabels] = pstrdup(NameStr(en->enumlabel));
		labels->lens[labels->nlabels] = strlen(NameStr(en->enumlabel));
		labels->nlabels++;
	}
	systable_endscan(scan);
	table_close(rel, AccessShareLock);

	index_type(cached);
	types = lappend(types, cached);
	MemoryContextSwitchTo(oldcxt);
	return cached;
}

/*
 * All labels of an enum type, in no particular order.  Valid until the next
 * call of a function of this file.
 */
const PromEnumLabels *
PromEnumLabelsOf(Oid type)
{
	ListCell   *lc;

	prepare_cache();
	foreach(lc, types)
	{
		CachedType *cached = lfirst(lc);

		if (cached->labels.type == type)
			return &cached->labels;
	}
	return &load_type(type)->labels;
}

/* The label of a value in the array of a dense type, or NULL. */
static inline const LabelAt *
label_at(const CachedType *cached, Oid value)
{
	uint32		offset = value - cached->first;

	if (cached->range == 0 || offset >= cached->range ||
		cached->at[offset].label == NULL)
		return NULL;
	return &cached->at[offset];
}

/* Look a value up in the cache: NULL when its type is not loaded. */
static const LabelAt *
find_label(Oid value)
{
	EnumLabelEntry *entry;
	ListCell   *lc;
	const LabelAt *at;

	if (last_type != NULL && (at = label_at(last_type, value)) != NULL)
		return at;
	foreach(lc, types)
	{
		CachedType *cached = lfirst(lc);

		if ((at = label_at(cached, value)) != NULL)
		{
			last_type = cached;
			return at;
		}
	}
	entry = enumlabels_lookup(labels_by_value, value);
	return entry != NULL ? &entry->at : NULL;
}

/*
 * The label of an enum value (NUL-terminated) and its length.  Valid until
 * the next call of a function of this file.
 */
const char *
PromEnumLabel(Oid value, int *len)
{
	const LabelAt *at;

	prepare_cache();
	at = find_label(value);
	if (at == NULL)
	{
		HeapTuple	tuple = SearchSysCache1(ENUMOID, ObjectIdGetDatum(value));
		Oid			type;

		if (!HeapTupleIsValid(tuple))
			elog(ERROR, "cache lookup failed for enum value %u", value);
		type = ((Form_pg_enum) GETSTRUCT(tuple))->enumtypid;
		ReleaseSysCache(tuple);
		/* a lookup may have processed an invalidation */
		prepare_cache();
		load_type(type);
		at = find_label(value);
		if (at == NULL)
			elog(ERROR, "enum value %u is missing from its type %u", value, type);
	}
	*len = at->len;
	return at->label;
}

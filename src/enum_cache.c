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
 * once, in one index scan, and kept in a hash table by value.  Any change
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
#include "miscadmin.h"
#include "promread.h"
#include "utils/fmgroids.h"
#include "utils/inval.h"
#include "utils/memutils.h"
#include "utils/syscache.h"

/* One enum value and its label. */
typedef struct EnumLabelEntry
{
	Oid			value;			/* hash key */
	char		status;			/* for simplehash */
	const char *label;
	int			len;
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

static MemoryContext cache_context = NULL;
static enumlabels_hash *labels_by_value = NULL;
static List *types = NIL;		/* of PromEnumLabels */
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
		cache_valid = true;
	}
}

/* Read every label of an enum type into the cache. */
static PromEnumLabels *
load_type(Oid type)
{
	MemoryContext oldcxt = MemoryContextSwitchTo(cache_context);
	PromEnumLabels *labels = palloc0(sizeof(PromEnumLabels));
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
		EnumLabelEntry *entry;
		bool		found;

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
		entry = enumlabels_insert(labels_by_value, en->oid, &found);
		entry->label = labels->labels[labels->nlabels];
		entry->len = labels->lens[labels->nlabels];
		labels->nlabels++;
	}
	systable_endscan(scan);
	table_close(rel, AccessShareLock);

	types = lappend(types, labels);
	MemoryContextSwitchTo(oldcxt);
	return labels;
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
		PromEnumLabels *labels = lfirst(lc);

		if (labels->type == type)
			return labels;
	}
	return load_type(type);
}

/*
 * The label of an enum value (NUL-terminated) and its length.  Valid until
 * the next call of a function of this file.
 */
const char *
PromEnumLabel(Oid value, int *len)
{
	EnumLabelEntry *entry;

	prepare_cache();
	entry = enumlabels_lookup(labels_by_value, value);
	if (entry == NULL)
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
		entry = enumlabels_lookup(labels_by_value, value);
		if (entry == NULL)
			elog(ERROR, "enum value %u is missing from its type %u", value, type);
	}
	*len = entry->len;
	return entry->label;
}

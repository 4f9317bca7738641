/*-------------------------------------------------------------------------
 *
 * series_cache.c
 *	  A backend's cache of the series ids remote write resolved in metrics
 *	  in chunk storage (write_chunks.c): per m#series relation, a series'
 *	  stored labels (as labels_hash hashes them) to its series_id, so that
 *	  a request whose series are all known reads nothing of m#series.
 *
 * 1. An id enters the cache only once the transaction that learned it
 *    (found it, or added its row) has committed: until then it waits in a
 *    list of pending ids, tagged with the subtransaction that learned it.
 *    A subtransaction's abort drops its pending ids (and those of its
 *    children), the transaction's abort or PREPARE all of them: a series
 *    added by a write that rolled back is never cached.
 * 2. A relcache invalidation of a series relation (TRUNCATE, DROP, ALTER,
 *    a rewrite, GRANT and REVOKE, row-level security changed) drops its
 *    cached and pending ids; one of every relation drops all.  Rows of
 *    m#series are deleted by no part of promread (compaction and retention
 *    delete head rows and chunks): for an UPDATE or DELETE by hand, the
 *    table's statement trigger prom_series_changed invalidates its
 *    relcache entry, and a table without that trigger, enabled ALWAYS, is
 *    not cached (PromSeriesCacheUsable).  A writer takes pending
 *    invalidations before using the cache, and does not use it in a
 *    transaction whose snapshot could predate one, nor for a series table
 *    with children, whose changes tell it nothing.
 * 3. The cache never decides who may write: write_chunks.c checks the
 *    writer's privileges on m#series and m#head every request, before the
 *    cache is read, and does not use it for a writer under row-level
 *    security on m#series (its lookup must see only the rows its policies
 *    let it see).  A writer with SELECT on m#series and no policy in the
 *    way reads every row of it, so an id cached from another role's write
 *    tells it nothing it could not read.
 * 4. At most promread.write_series_cache ids are cached (0: none); the
 *    least recently used goes first.  As many are pending at most, the
 *    latest learned: a transaction that writes more series caches the
 *    last of them, as the cache would keep them.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog/pg_inherits.h"
#include "catalog/pg_trigger.h"
#include "commands/trigger.h"
#include "lib/ilist.h"
#include "promread.h"
#include "write_internal.h"
#include "utils/hsearch.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/rls.h"

PG_FUNCTION_INFO_V1(prom_series_changed);

/* A cached id: its series relation and labels_hash, its stored labels. */
typedef struct CachedSeriesKey
{
	Oid			relid;
	uint64		hash;
} CachedSeriesKey;

typedef struct CachedSeries
{
	CachedSeriesKey key;
	int64		series_id;
	char	   *labels;			/* in cache_context */
	int			len;
	dlist_node	lru;			/* most recently used first */
} CachedSeries;

/* An id learned by the transaction, not known committed yet. */
typedef struct PendingSeries
{
	dlist_node	node;
	CachedSeriesKey key;
	int64		series_id;
	SubTransactionId subid;
	int			len;
	char		labels[FLEXIBLE_ARRAY_MEMBER];
} PendingSeries;

/* How many ids of a relation are cached. */
typedef struct CachedRelation
{
	Oid			relid;
	int			nids;
} CachedRelation;

static MemoryContext cache_context = NULL;
static HTAB *cache = NULL;
static HTAB *relations = NULL;	/* of the ids cached */
static dlist_head lru = DLIST_STATIC_INIT(lru);
static dlist_head pending = DLIST_STATIC_INIT(pending);
static int	npending = 0;

/* Drop a cached id. */
static void
forget_cached(CachedSeries *entry)
{
	CachedRelation *rel = hash_search(relations, &entry->key.relid, HASH_FIND, NULL);

	Assert(rel != NULL && rel->nids > 0);
	if (--rel->nids == 0)
		hash_search(relations, &entry->key.relid, HASH_REMOVE, NULL);
	dlist_delete(&entry->lru);
	pfree(entry->labels);
	hash_search(cache, &entry->key, HASH_REMOVE, NULL);
}

/* Drop the pending ids for which drop says so. */
static void
forget_pending(bool (*drop) (const PendingSeries *p, Datum arg), Datum arg)
{
	dlist_mutable_iter iter;

	dlist_foreach_modify(iter, &pending)
	{
		PendingSeries *p = dlist_container(PendingSeries, node, iter.cur);

		if (drop(p, arg))
		{
			dlist_delete(&p->node);
			npending--;
			pfree(p);
		}
	}
}

/* forget_pending's test of every pending id. */
static bool
pending_any(const PendingSeries *p, Datum arg)
{
	return true;
}

/* forget_pending's test of the pending ids of a relation (arg). */
static bool
pending_of_relation(const PendingSeries *p, Datum arg)
{
	return p->key.relid == DatumGetObjectId(arg);
}

/* forget_pending's test of those of a subtransaction (arg) and its children. */
static bool
pending_of_subtransaction(const PendingSeries *p, Datum arg)
{
	/* ids of its children were assigned after its own */
	return p->subid >= (SubTransactionId) DatumGetUInt32(arg);
}

/*
 * A relation's relcache entry was invalidated (relid invalid: every
 * relation's): drop its ids, cached and pending.
 */
static void
series_relation_changed(Datum arg, Oid relid)
{
	HASH_SEQ_STATUS status;
	CachedSeries *entry;

	if (cache == NULL)
		return;
	if (!OidIsValid(relid))
		forget_pending(pending_any, (Datum) 0);
	else
		forget_pending(pending_of_relation, ObjectIdGetDatum(relid));
	/* most invalidations are of relations with no id cached */
	if (OidIsValid(relid) && hash_search(relations, &relid, HASH_FIND, NULL) == NULL)
		return;
	hash_seq_init(&status, cache);
	while ((entry = hash_seq_search(&status)) != NULL)
		if (!OidIsValid(relid) || entry->key.relid == relid)
			forget_cached(entry);
}

/* Cache an id, evicting the least recently used beyond the limit. */
static void
cache_id(const CachedSeriesKey *key, int64 series_id, const char *labels, int len)
{
	CachedSeries *entry;
	CachedRelation *rel;
	char	   *copy;
	bool		found;

	/* an id cached already takes no room of another */
	if (hash_search(cache, key, HASH_FIND, NULL) == NULL)
		while (hash_get_num_entries(cache) >= promread_write_series_cache &&
			   !dlist_is_empty(&lru))
			forget_cached(dlist_container(CachedSeries, lru, dlist_tail_node(&lru)));
	if (promread_write_series_cache <= 0)
		return;
	/* called once committed: out of memory, the id is not cached */
	copy = MemoryContextAllocExtended(cache_context, Max(len, 1), MCXT_ALLOC_NO_OOM);
	if (copy == NULL)
		return;
	entry = hash_search(cache, key, HASH_ENTER_NULL, &found);
	if (entry == NULL)
	{
		pfree(copy);
		return;
	}
	if (found)
	{
		dlist_delete(&entry->lru);
		pfree(entry->labels);
	}
	else
	{
		rel = hash_search(relations, &key->relid, HASH_ENTER_NULL, &found);
		if (rel == NULL)
		{
			hash_search(cache, key, HASH_REMOVE, NULL);
			pfree(copy);
			return;
		}
		rel->nids = found ? rel->nids + 1 : 1;
	}
	entry->series_id = series_id;
	entry->labels = copy;
	memcpy(entry->labels, labels, len);
	entry->len = len;
	dlist_push_head(&lru, &entry->lru);
}

/* At the end of the transaction: cache its ids once committed, else drop them. */
static void
series_xact_end(XactEvent event, void *arg)
{
	dlist_mutable_iter iter;

	if (event != XACT_EVENT_COMMIT)
	{
		if (event == XACT_EVENT_ABORT || event == XACT_EVENT_PREPARE ||
			event == XACT_EVENT_PARALLEL_ABORT)
			forget_pending(pending_any, (Datum) 0);
		return;
	}
	dlist_foreach_modify(iter, &pending)
	{
		PendingSeries *p = dlist_container(PendingSeries, node, iter.cur);

		cache_id(&p->key, p->series_id, p->labels, p->len);
		dlist_delete(&p->node);
		pfree(p);
	}
	npending = 0;
}

/* A subtransaction rolled back: drop the ids it and its children learned. */
static void
series_subxact_end(SubXactEvent event, SubTransactionId mySubid,
				   SubTransactionId parentSubid, void *arg)
{
	if (event == SUBXACT_EVENT_ABORT_SUB)
		forget_pending(pending_of_subtransaction, UInt32GetDatum(mySubid));
}

/* The cache and its callbacks, made on first use. */
static void
cache_init(void)
{
	static bool callbacks = false;
	HASHCTL		ctl;
	HTAB	   *ids;

	if (cache != NULL)
		return;
	if (cache_context == NULL)
		cache_context = AllocSetContextCreate(TopMemoryContext, "promread series ids",
											  ALLOCSET_DEFAULT_SIZES);
	/* made whole before it is used: an error leaves no half of it */
	ctl.keysize = sizeof(CachedSeriesKey);
	ctl.entrysize = sizeof(CachedSeries);
	ctl.hcxt = cache_context;
	ids = hash_create("promread series ids", 1024, &ctl,
					  HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
	ctl.keysize = sizeof(Oid);
	ctl.entrysize = sizeof(CachedRelation);
	relations = hash_create("promread series relations", 64, &ctl,
							HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
	if (!callbacks)
	{
		CacheRegisterRelcacheCallback(series_relation_changed, (Datum) 0);
		RegisterXactCallback(series_xact_end, NULL);
		RegisterSubXactCallback(series_subxact_end, NULL);
		callbacks = true;
	}
	cache = ids;
}

/* Is a trigger prom_series_changed firing, always, after UPDATE and DELETE statements? */
static bool
is_series_trigger(const Trigger *trigger)
{
	char	   *name;
	bool		ours;

	if (trigger->tgenabled != TRIGGER_FIRES_ALWAYS ||
		!TRIGGER_FOR_AFTER(trigger->tgtype) || TRIGGER_FOR_ROW(trigger->tgtype) ||
		!TRIGGER_FOR_UPDATE(trigger->tgtype) || !TRIGGER_FOR_DELETE(trigger->tgtype) ||
		trigger->tgqual != NULL || trigger->tgnattr != 0)
		return false;
	/* the name first: the extension's schema is read from pg_extension */
	name = get_func_name(trigger->tgfoid);
	ours = name != NULL && strcmp(name, PROM_SERIES_TRIGGER_FUNCTION) == 0 &&
		get_func_namespace(trigger->tgfoid) == PromExtensionNamespace();
	if (name != NULL)
		pfree(name);
	return ours;
}

/*
 * May a write into a metric use the cache for its series relation, opened
 * and locked: the cache is on, the relation has the trigger that tells of
 * its rows updated or deleted, and the writer is not under its row-level
 * security?  Takes pending invalidations first.
 */
bool
PromSeriesCacheUsable(Relation series_rel)
{
	TriggerDesc *triggers = series_rel->trigdesc;
	int			i;

	if (promread_write_series_cache <= 0 || triggers == NULL ||
		check_enable_rls(RelationGetRelid(series_rel), InvalidOid, false) == RLS_ENABLED)
		return false;
	/*
	 * A transaction snapshot may still see a row that a transaction
	 * committed since deleted, whose invalidation this backend has taken:
	 * its id would be cached with nothing left to drop it.  A child table's
	 * rows are read through m#series, but its DELETE or TRUNCATE tells
	 * m#series nothing.
	 */
	if (IsolationUsesXactSnapshot() ||
		series_rel->rd_rel->relkind != RELKIND_RELATION ||
		(series_rel->rd_rel->relhassubclass &&
		 find_inheritance_children(RelationGetRelid(series_rel), NoLock) != NIL))
		return false;
	for (i = 0; i < triggers->numtriggers; i++)
		if (is_series_trigger(&triggers->triggers[i]))
		{
			cache_init();
			AcceptInvalidationMessages();
			return true;
		}
	return false;
}

/*
 * The cached id of a series of a relation, by its labels_hash and stored
 * labels (labels_hash's input): false when none is cached.
 */
bool
PromSeriesCacheFind(Oid relid, uint64 hash, const char *labels, int len,
					int64 *series_id)
{
	CachedSeriesKey key;
	CachedSeries *entry;

	if (cache == NULL)
		return false;
	memset(&key, 0, sizeof(key));
	key.relid = relid;
	key.hash = hash;
	entry = hash_search(cache, &key, HASH_FIND, NULL);
	if (entry == NULL || entry->len != len || memcmp(entry->labels, labels, len) != 0)
		return false;
	dlist_move_head(&lru, &entry->lru);
	*series_id = entry->series_id;
	return true;
}

/*
 * Keep the id of a series of a relation, found or added by the current
 * transaction, to be cached when it commits (see the header).
 */
void
PromSeriesCacheRemember(Oid relid, uint64 hash, const char *labels, int len,
						int64 series_id)
{
	PendingSeries *p;

	if (promread_write_series_cache <= 0)
		return;
	cache_init();
	/* no more than the cache holds: the oldest would be evicted at commit */
	while (npending >= promread_write_series_cache)
	{
		PendingSeries *oldest = dlist_container(PendingSeries, node,
												dlist_pop_head_node(&pending));

		npending--;
		pfree(oldest);
	}
	p = MemoryContextAlloc(cache_context, offsetof(PendingSeries, labels) + len);
	memset(&p->key, 0, sizeof(p->key));
	p->key.relid = relid;
	p->key.hash = hash;
	p->series_id = series_id;
	p->subid = GetCurrentSubTransactionId();
	p->len = len;
	memcpy(p->labels, labels, len);
	dlist_push_tail(&pending, &p->node);
	npending++;
}

/*
 * The statement trigger of m#series after UPDATE and DELETE: every
 * backend's cached ids of the table are dropped once the statement's
 * transaction commits.
 */
Datum
prom_series_changed(PG_FUNCTION_ARGS)
{
	TriggerData *trigdata = (TriggerData *) fcinfo->context;

	if (!CALLED_AS_TRIGGER(fcinfo))
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("prom_series_changed() must be called as a trigger")));
	CacheInvalidateRelcache(trigdata->tg_relation);
	return PointerGetDatum(NULL);
}

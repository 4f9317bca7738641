/*-------------------------------------------------------------------------
 *
 * scan_plans.c
 *	  The prepared statements of scans (scan.c, shards.c): a per-backend
 *	  cache of plans by statement text and parameter types, the statement's
 *	  parameters for the executor, and the plans each statement asks for
 *	  (custom or generic) whatever plan_cache_mode says.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <xxhash.h>

#include "executor/spi.h"
#include "scan_internal.h"
#include "utils/guc.h"
#include "utils/memutils.h"

/* Cached plans beyond this many are all dropped and planned afresh. */
#define PLAN_CACHE_MAX	1024

/* A cached plan, keyed by a hash of its statement text and types. */
typedef struct PlanCacheEntry
{
	uint64		hash;			/* hash key */
	char	   *key;			/* statement text and parameter types */
	SPIPlanPtr	plan;
} PlanCacheEntry;

static HTAB *plan_cache = NULL;

/*
 * Get the cached plan of a statement, preparing it on first use.  The plan
 * is prepared and kept before its entry is made, so that an error while
 * preparing (a column re-typed, a lock wait cancelled) leaves no entry
 * behind; nothing between making the entry and filling it can fail.
 */
SPIPlanPtr
PromScanCachedPlan(const ScanStatement *stmt)
{
	StringInfoData key;
	PlanCacheEntry *entry;
	SPIPlanPtr	plan;
	char	   *kept_key;
	uint64		hash;
	bool		found;
	int			i;

	if (plan_cache == NULL)
	{
		HASHCTL		ctl;

		ctl.keysize = sizeof(uint64);
		ctl.entrysize = sizeof(PlanCacheEntry);
		ctl.hcxt = TopMemoryContext;
		plan_cache = hash_create("promread plans", 64, &ctl,
								 HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
	}

	initStringInfo(&key);
	appendStringInfoString(&key, stmt->sql.data);
	for (i = 0; i < stmt->nparams; i++)
		appendStringInfo(&key, " %u", stmt->param_types[i]);
	appendStringInfo(&key, " planned %d", (int) stmt->planning);
	hash = XXH3_64bits(key.data, key.len);

	entry = hash_search(plan_cache, &hash, HASH_FIND, NULL);
	if (entry != NULL && strcmp(entry->key, key.data) == 0)
		return entry->plan;

	plan = SPI_prepare_cursor(stmt->sql.data, stmt->nparams,
							  (Oid *) stmt->param_types,
							  CURSOR_OPT_PARALLEL_OK |
							  (stmt->planning == SCAN_PLAN_PER_CALL ?
							   CURSOR_OPT_CUSTOM_PLAN : CURSOR_OPT_GENERIC_PLAN));
	if (plan == NULL)
		elog(ERROR, "could not prepare promread scan: %s",
			 SPI_result_code_string(SPI_result));
	if (SPI_keepplan(plan) != 0)
		elog(ERROR, "could not keep promread scan plan");
	kept_key = MemoryContextStrdup(TopMemoryContext, key.data);

	if (entry == NULL && hash_get_num_entries(plan_cache) >= PLAN_CACHE_MAX)
	{
		HASH_SEQ_STATUS status;

		hash_seq_init(&status, plan_cache);
		while ((entry = hash_seq_search(&status)) != NULL)
		{
			SPI_freeplan(entry->plan);
			pfree(entry->key);
			hash_search(plan_cache, &entry->hash, HASH_REMOVE, NULL);
		}
	}

	entry = hash_search(plan_cache, &hash, HASH_ENTER, &found);
	if (found)
	{
		/* a hash collision: the newer statement takes the slot */
		SPI_freeplan(entry->plan);
		pfree(entry->key);
	}
	entry->key = kept_key;
	entry->plan = plan;
	return plan;
}

/* The parameters of a statement, for the executor. */
ParamListInfo
PromScanStatementParams(const ScanStatement *stmt)
{
	ParamListInfo params = makeParamList(stmt->nparams);
	int			i;

	params->numParams = stmt->nparams;
	for (i = 0; i < stmt->nparams; i++)
	{
		params->params[i].value = stmt->param_values[i];
		params->params[i].isnull = false;
		params->params[i].pflags = PARAM_FLAG_CONST;
		params->params[i].ptype = stmt->param_types[i];
	}
	return params;
}

/*
 * Plan promread's statements as they ask, whatever plan_cache_mode says,
 * until AtEOXact_GUC(true, the level returned).  A custom plan is made for
 * each call's values: a generic plan would not prune partitions by the
 * matchers' values, nor use a regex's prefix.  Statements on promread's
 * own tables whose plan costs more to make than to run are planned once
 * (scan_chunks.c): the series statement of equality matchers from the
 * statistics, and the chunk and head statements of a few series by their
 * indexes, sequential scans off while the plan is made, since it outlives
 * the statistics (a head partition planned empty fills before it is
 * analyzed).
 */
int
PromScanUsePlans(ScanPlanning planning)
{
	int			nest = NewGUCNestLevel();

	(void) set_config_option("plan_cache_mode",
							 planning == SCAN_PLAN_PER_CALL ?
							 "force_custom_plan" : "force_generic_plan",
							 PGC_USERSET, PGC_S_SESSION, GUC_ACTION_SAVE,
							 true, 0, false);
	if (planning == SCAN_PLAN_ONCE_BY_INDEX)
		(void) set_config_option("enable_seqscan", "off",
								 PGC_USERSET, PGC_S_SESSION, GUC_ACTION_SAVE,
								 true, 0, false);
	return nest;
}

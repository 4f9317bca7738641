/*-------------------------------------------------------------------------
 *
 * shards.c
 *	  Reading a metric whose partitions are shards: each shard groups its
 *	  own rows and sends back series.
 *
 * A metric partitioned over postgres_fdw foreign tables would otherwise
 * move every selected row to the coordinator, where postgres_fdw converts
 * it column by column.  When promread is installed on a shard and listed
 * in its foreign server's "extensions" option, postgres_fdw ships
 * promread's aggregates with a partition's scan, so the coordinator asks
 * each partition for
 *
 *	  SELECT <partition oid>, prom_chunked_response_agg(<time>, <value>,
 *			 '<label>'::text, <label column>, ...)
 *	  FROM ONLY <partition> WHERE <the row statement's predicates>
 *
 * and the shard runs promread's engine over its rows and answers with its
 * series as frames of XOR chunks, a few bytes a sample.
 *
 * 1. When: promread.shard_grouping is on, the relation is partitioned (or
 *    is itself a foreign table), it has label columns, and at least one of
 *    the partitions the read reaches is a foreign table whose server lists
 *    promread.  Reading partitions by name must give what reading the
 *    relation gives, so rows are read instead where it would not: when
 *    the relation or a partition has row-level security (a partition's
 *    own policies apply only when it is read by name), or the caller may
 *    not read a partition by name.  Rows are read too when a matcher is on
 *    an enum or other non-text label, whose predicate postgres_fdw does
 *    not send: the shards could not aggregate.
 * 2. What the shards are sent: the row statement's predicates, in which a
 *    regex that is not a literal set is a call of promread's
 *    prom_regex_match (PromShardRegexFunction), which a shard evaluates once a
 *    run of equal values (its rows of a series come together) rather than
 *    once a row, with its literal prefix as a range on a "C" column so that
 *    the shard's index serves it.
 * 3. Which partitions: those of the plan of the row statement (scan.c) for
 *    the call's values, so that partitions pruned by the matchers or the
 *    time range are not asked.  One SELECT per partition, joined by UNION
 *    ALL, so that async_capable servers work at once.  A partition that is
 *    local, or on a server that does not list promread, is aggregated on
 *    the coordinator: correct, and as costly as reading its rows.
 * 4. Each answer is untrusted input: every frame's length and CRC, the
 *    protobuf, each chunk, the label names (those of the metric's label
 *    columns, each once) and the values (valid UTF-8 without NUL bytes)
 *    are checked, and an error names the partition; samples outside the
 *    query's time range, which a shard is not asked for, are dropped, as
 *    Prometheus's remote-read client drops them.  Its series go into the
 *    set through a layout of the label columns read as text, __name__ the
 *    metric's: a lookup a chunk, its samples then appended to the series
 *    found.
 *    A series that several shards answer (time partitions) is merged by
 *    the set, and its samples sorted by time at the end, as rows are.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "histogram/histogram.h"

#include "access/htup_details.h"
#include "catalog/pg_class.h"
#include "catalog/pg_inherits.h"
#include "catalog/pg_type.h"
#include "commands/defrem.h"
#include "engine/engine.h"
#include "executor/spi.h"
#include "foreign/foreign.h"
#include "miscadmin.h"
#include "promread.h"
#include "protocol/protocol.h"
#include "scan_internal.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/plancache.h"
#include "utils/syscache.h"
#include "utils/varlena.h"

/* Receives the partitions' answers and adds their series to the set. */
typedef struct ShardReceiver
{
	DestReceiver pub;
	PromSeriesSet *set;
	PromLayout *layout;			/* label columns as text, then __name__ */
	const MetricScan *scan;
	Datum	   *values;			/* a series' label values, as text */
	bool	   *isnull;
	MemoryContext frame_context;	/* an answer's frame being read */
	List	   *partitions;		/* the partitions asked, by OID */
	const char *partition;		/* the name of the one being read */
	int64		start_ms;		/* the query's time range, in ms */
	int64		end_ms;
} ShardReceiver;

/* Does a foreign server list promread in its "extensions" option? */
static bool
server_lists_promread(Oid serverid)
{
	ForeignServer *server = GetForeignServer(serverid);
	ListCell   *lc;

	foreach(lc, server->options)
	{
		DefElem    *option = lfirst(lc);
		List	   *names;
		ListCell   *name;

		if (strcmp(option->defname, "extensions") != 0)
			continue;
		if (!SplitIdentifierString(pstrdup(defGetString(option)), ',', &names))
			return false;
		foreach(name, names)
			if (strcmp(lfirst(name), "promread") == 0)
				return true;
	}
	return false;
}

/* Does a relation have row-level security enabled? */
static bool
has_row_security(Oid relid)
{
	HeapTuple	tuple = SearchSysCache1(RELOID, ObjectIdGetDatum(relid));
	bool		enabled;

	if (!HeapTupleIsValid(tuple))
		elog(ERROR, "cache lookup failed for relation %u", relid);
	enabled = ((Form_pg_class) GETSTRUCT(tuple))->relrowsecurity;
	ReleaseSysCache(tuple);
	return enabled;
}

/* promread's schema-qualified function name. */
static char *
promread_function(const char *name)
{
	return psprintf("%s.%s",
					quote_identifier(get_namespace_name(PromExtensionNamespace())),
					name);
}

/*
 * The function that regex matchers become in predicates sent to the
 * relation's foreign servers (prom_regex_match, qualified), when
 * promread.shard_grouping is on and every foreign table among the relation
 * and its partitions is on a server that lists promread; else NULL.
 */
const char *
PromShardRegexFunction(Oid relid)
{
	ListCell   *lc;

	if (!promread_shard_grouping)
		return NULL;
	foreach(lc, find_all_inheritors(relid, NoLock, NULL))
		if (get_rel_relkind(lfirst_oid(lc)) == RELKIND_FOREIGN_TABLE &&
			!server_lists_promread(GetForeignTable(lfirst_oid(lc))->serverid))
			return NULL;
	return promread_function("prom_regex_match");
}

/*
 * The partitions that the row statement's plan for the call's values
 * reads (its range table's relations that are not partitioned tables),
 * in the plan's order.
 */
static List *
planned_partitions(const MetricScan *scan)
{
	SPIPlanPtr	plan = PromScanCachedPlan(&scan->stmt);
	CachedPlanSource *source = linitial(SPI_plan_get_plan_sources(plan));
	int			nest = PromScanUsePlans(SCAN_PLAN_PER_CALL);
	CachedPlan *cplan = GetCachedPlan(source, PromScanStatementParams(&scan->stmt),
									  NULL, NULL);
	PlannedStmt *planned = linitial_node(PlannedStmt, cplan->stmt_list);
	List	   *partitions = NIL;
	ListCell   *lc;

	AtEOXact_GUC(true, nest);
	foreach(lc, planned->rtable)
	{
		RangeTblEntry *rte = lfirst(lc);

		if (rte->rtekind == RTE_RELATION &&
			rte->relkind != RELKIND_PARTITIONED_TABLE)
			partitions = list_append_unique_oid(partitions, rte->relid);
	}
	ReleaseCachedPlan(cplan, NULL);
	return partitions;
}

/*
 * Decide whether the scan's partitions group their own rows (see the file
 * header), and if so build the statement that asks them: false when rows
 * are read instead.
 */
bool
PromShardScanPrepare(const MetricScan *scan, ScanStatement *stmt,
					 List **partitions)
{
	Oid			relid = scan->entry->relid;
	char		relkind = get_rel_relkind(relid);
	const char *function;
	bool		any_ships = false;
	List	   *asked;
	ListCell   *lc;
	int			i;

	if (!promread_shard_grouping || scan->nlabels == 0 || scan->local_predicates ||
		scan->overflow >= 0 ||
		(relkind != RELKIND_PARTITIONED_TABLE && relkind != RELKIND_FOREIGN_TABLE) ||
		has_row_security(relid))
		return false;

	asked = relkind == RELKIND_FOREIGN_TABLE ? list_make1_oid(relid) :
		planned_partitions(scan);
	foreach(lc, asked)
	{
		Oid			partition = lfirst_oid(lc);

		if (has_row_security(partition) ||
			pg_class_aclcheck(partition, GetUserId(), ACL_SELECT) != ACLCHECK_OK)
			return false;
		if (get_rel_relkind(partition) == RELKIND_FOREIGN_TABLE &&
			server_lists_promread(GetForeignTable(partition)->serverid))
			any_ships = true;
	}
	if (!any_ships)
		return false;
	if (PromIsHistogramType(scan->value_column.basetype))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("metric \"%s\" holds histograms, which are not read through shards yet",
						scan->entry->metric),
				 errdetail("Its relation has foreign partitions on servers that list promread, whose answers would carry histogram chunks."),
				 errhint("Remove promread from the servers' extensions option to read the partitions' rows instead.")));
	/* a relation with foreign partitions has every matcher in its WHERE */
	Assert(scan->filters == NIL && scan->decisions == NIL);

	function = promread_function("prom_chunked_response_agg");
	initStringInfo(&stmt->sql);
	stmt->planning = SCAN_PLAN_PER_CALL;
	foreach(lc, asked)
	{
		if (foreach_current_index(lc) > 0)
			appendStringInfoString(&stmt->sql, " UNION ALL ");
		appendStringInfo(&stmt->sql, "SELECT %u::pg_catalog.oid, %s(%s, %s",
						 lfirst_oid(lc), function,
						 quote_identifier(scan->time_column.name),
						 scan->value_expression);
		for (i = 0; i < scan->nlabels; i++)
			appendStringInfo(&stmt->sql, ", %s::pg_catalog.text, %s",
							 quote_literal_cstr(scan->labels[i].label),
							 quote_identifier(scan->labels[i].name));
		appendStringInfo(&stmt->sql, ") FROM ONLY %s WHERE%s",
						 PromQuotedRelationName(lfirst_oid(lc)),
						 scan->stmt.sql.data + scan->predicates);
	}
	stmt->nparams = scan->stmt.nparams;
	memcpy(stmt->param_types, scan->stmt.param_types,
		   sizeof(Oid) * stmt->nparams);
	memcpy(stmt->param_values, scan->stmt.param_values,
		   sizeof(Datum) * stmt->nparams);
	*partitions = asked;
	return true;
}

/*
 * Set the receiver's label values from a series' labels: each must name a
 * label column, once, with a valid UTF-8 value; the other columns are
 * absent.
 */
static void
set_series_labels(ShardReceiver *receiver, const Prometheus__ChunkedSeries *series,
				  int64 frame)
{
	const MetricScan *scan = receiver->scan;
	size_t		i;
	int			column;

	for (column = 0; column < scan->nlabels; column++)
		receiver->isnull[column] = true;
	for (i = 0; i < series->n_labels; i++)
	{
		const Prometheus__Label *label = series->labels[i];
		const char *name = wire_bytes(label->name);
		const char *value = wire_bytes(label->value);

		for (column = 0; column < scan->nlabels; column++)
			if (strlen(scan->labels[column].label) == label->name.len &&
				memcmp(scan->labels[column].label, name, label->name.len) == 0)
				break;
		/* the shard's own name is not printed: it may not be UTF-8 */
		if (column == scan->nlabels)
			PromStreamError(psprintf("Frame %lld has a label that is not a label column.",
									 (long long) frame));
		if (!receiver->isnull[column])
			PromStreamError(psprintf("Frame %lld has label \"%s\" twice.",
									 (long long) frame, scan->labels[column].label));
		if (!PromIsValidUtf8(value, label->value.len))
			PromStreamError(psprintf("Frame %lld has a value of label \"%s\" that is not valid UTF-8.",
									(long long) frame, scan->labels[column].label));
		if (memchr(value, '\0', label->value.len) != NULL)
			PromStreamError(psprintf("Frame %lld has a value of label \"%s\" that holds a NUL byte.",
									 (long long) frame, scan->labels[column].label));
		receiver->values[column] =
			PointerGetDatum(cstring_to_text_with_len(value, label->value.len));
		receiver->isnull[column] = false;
	}
}

/*
 * Add one series of a partition's answer to the set: its labels set the
 * receiver's values (in the frame's context), each chunk's samples in the
 * query's range are added as a run of that series.
 */
static void
add_series(void *arg, int64 query_index,
		   const Prometheus__ChunkedSeries *series, int64 frame)
{
	ShardReceiver *receiver = arg;
	size_t		k;

	if (query_index != 0)
		PromStreamError(psprintf("Frame %lld answers query %lld; a partition answers query 0.",
								(long long) frame, (long long) query_index));
	set_series_labels(receiver, series, frame);
	for (k = 0; k < series->n_chunks; k++)
	{
		const Prometheus__Chunk *chunk = series->chunks[k];
		int			nsamples;
		PromSample *samples = PromDecodeChunk(chunk->type, wire_bytes(chunk->data),
											  chunk->data.len, frame, k,
											  &nsamples);

		nsamples = PromKeepSamplesInRange(samples, nsamples, receiver->start_ms,
										  receiver->end_ms);
		PromSeriesSetAddRun(receiver->set, receiver->layout, receiver->values,
							receiver->isnull, samples, nsamples);
		pfree(samples);
	}
}

/* Name the partition whose answer is being read in an error's context. */
static void
answer_error_context(void *arg)
{
	ShardReceiver *receiver = arg;

	errcontext("answer of partition %s of metric \"%s\"",
			   receiver->partition, receiver->scan->entry->metric);
}

/* Add one partition's answer (partition oid, frames) to the set. */
static bool
shard_receive(TupleTableSlot *slot, DestReceiver *self)
{
	ShardReceiver *receiver = (ShardReceiver *) self;
	ErrorContextCallback callback;
	bytea	   *answer;

	slot_getallattrs(slot);
	if (slot->tts_isnull[0] ||
		!list_member_oid(receiver->partitions, DatumGetObjectId(slot->tts_values[0])))
		PromStreamError(psprintf("An answer for metric \"%s\" names no partition that was asked.",
								 receiver->scan->entry->metric));
	if (slot->tts_isnull[1])
		return true;
	receiver->partition = PromQuotedRelationName(DatumGetObjectId(slot->tts_values[0]));
	callback.callback = answer_error_context;
	callback.arg = receiver;
	callback.previous = error_context_stack;
	error_context_stack = &callback;
	answer = DatumGetByteaPP(slot->tts_values[1]);
	PromForEachChunkedSeries(VARDATA_ANY(answer), VARSIZE_ANY_EXHDR(answer),
							 add_series, receiver, receiver->frame_context);
	error_context_stack = callback.previous;
	return true;
}

/* Check that the rows are (oid, bytea), as the statement asks. */
static void
shard_startup(DestReceiver *self, int operation, TupleDesc typeinfo)
{
	ShardReceiver *receiver = (ShardReceiver *) self;

	if (typeinfo->natts != 2 || TupleDescAttr(typeinfo, 0)->atttypid != OIDOID ||
		TupleDescAttr(typeinfo, 1)->atttypid != BYTEAOID)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("answers of the shards of metric \"%s\" are not series",
						receiver->scan->entry->metric)));
}

/* Nothing to do at the end of the answers. */
static void
shard_shutdown(DestReceiver *self)
{
}

static void
shard_destroy(DestReceiver *self)
{
}

/*
 * A receiver of the answers of the partitions asked (PromShardScanPrepare) that
 * adds their series to the set, through a layout of the scan's label
 * columns as text and __name__, with their samples in the query's range.
 */
DestReceiver *
PromShardReceiverCreate(PromSeriesSet *set, const MetricScan *scan,
						const PromQuery *query, List *partitions)
{
	ShardReceiver *receiver = palloc0(sizeof(ShardReceiver));
	int			nlabels = scan->nlabels;
	const char **names = palloc(sizeof(char *) * (nlabels + 1));
	PromLabelKind *kinds = palloc(sizeof(PromLabelKind) * (nlabels + 1));
	Oid		   *types = palloc(sizeof(Oid) * (nlabels + 1));
	const char **const_values = palloc0(sizeof(char *) * (nlabels + 1));
	int			i;

	for (i = 0; i < nlabels; i++)
	{
		names[i] = scan->labels[i].label;
		kinds[i] = PROM_LABEL_TEXT;
		types[i] = TEXTOID;
	}
	names[nlabels] = "__name__";
	kinds[nlabels] = PROM_LABEL_CONST;
	types[nlabels] = TEXTOID;
	const_values[nlabels] = scan->entry->metric;

	receiver->pub.receiveSlot = shard_receive;
	receiver->pub.rStartup = shard_startup;
	receiver->pub.rShutdown = shard_shutdown;
	receiver->pub.rDestroy = shard_destroy;
	receiver->pub.mydest = DestNone;
	receiver->set = set;
	receiver->scan = scan;
	receiver->partitions = partitions;
	receiver->start_ms = query->start_ms;
	receiver->end_ms = query->end_ms;
	receiver->layout = PromSeriesSetAddLayout(set, nlabels + 1, names, kinds,
											  types, const_values);
	/* room for two columns at least: PromSeriesSetAdd reads as many */
	receiver->values = palloc0(sizeof(Datum) * Max(nlabels + 1, 2));
	receiver->isnull = palloc0(sizeof(bool) * Max(nlabels + 1, 2));
	receiver->frame_context = AllocSetContextCreate(CurrentMemoryContext,
													"promread shard answer",
													ALLOCSET_DEFAULT_SIZES);
	return &receiver->pub;
}

/*-------------------------------------------------------------------------
 *
 * remote_write.c
 *	  prom_remote_write: the samples of a Prometheus remote-write request
 *	  stored in the relations registered for their metrics, or in the
 *	  tables of metrics in chunk storage.
 *
 * 1. The request is decoded and checked whole (write_request.c) before
 *    anything is written: remote write 1.0 (prometheus.WriteRequest), or
 *    2.0 (io.prometheus.write.v2.Request) when the content_type argument
 *    names it, resolved into the same PromWriteRequest, so that everything
 *    below is shared by both versions; another proto is PT415 (HTTP 415).
 *    Every answer carries the X-Prometheus-Remote-Write-*-Written counts
 *    2.0 asks for, and X-Promread-Start-Timestamps-Dropped: start
 *    timestamps are not stored (the specification lets a receiver ignore
 *    them), but counted, in a NOTICE too.
 * 2. Its series are grouped by metric.  A metric's value column is float8
 *    or prom_histogram: a metric takes float samples or native histograms,
 *    never both (a group of both, or of the kind its value column does not
 *    hold, is refused with 22023, one metric's refusal as below), but for
 *    the float staleness markers that end histogram series (write_rows.c).
 *    A metric without a registration is created when
 *    promread.write_create_metrics is on, in chunk storage or as a table
 *    of rows as promread.write_storage says (the table: ts timestamptz,
 *    value float8 or prom_histogram as its samples are, one text column per
 *    label), in promread.write_schema, owned by the writing role and
 *    registered as made by remote write (write_tables.c; and, with its
 *    first exemplar, the table of its exemplars beside it:
 *    write_exemplars.c).  The
 *    metric's lock in the catalog is taken first (by a role that may
 *    create the table only) and the registration looked up again, so two
 *    writers create it once.  A metric's relations are locked until the
 *    transaction ends (in chunk storage about thirty, some eighty locks),
 *    in the lock table every session shares, so a request that needs more new metrics than
 *    promread.write_max_new_metrics creates that many, writes none of its
 *    samples, and is answered with a WARNING and response.status 503
 *    (create_installment): the transaction commits what it created, and
 *    Prometheus sends the request again, until every metric exists and the
 *    request is written whole.  A first write of a Prometheus that scrapes
 *    hundreds of metrics so takes a few tries rather than the lock table.
 *    And at most four transactions create metrics at once (write_tables.c's
 *    creation slots): another fails at once with 53400, a 500, and is sent
 *    again, so that many senders together do not fill the table either.
 * 3. A label the registration has no column for is added as a column to a
 *    table that remote write made (write_tables.c: its exclusive lock is
 *    polled for, not queued for, so that reads are not held up behind
 *    it); on any other
 *    relation it refuses the request (42703) unless
 *    promread.write_unknown_labels is "drop".  Label names are data: a
 *    label whose name cannot be a column's (a system column's name, the
 *    time or value column's, 64 bytes or more, a name taken) gets a column
 *    of another name, and the catalog keeps which label each column holds.
 *    Past promread.write_max_label_columns label columns (or the room that
 *    PostgreSQL's 1,600 columns leave), a table gets a jsonb column of
 *    overflow labels instead, which then keeps every label new to it: so
 *    a label is kept in one place only, and no valid name is refused.
 * 4. Each metric's samples are written by write_chunks.c into a metric in
 *    chunk storage (docs/chunk-storage.md: its series resolved in m#series,
 *    its samples appended to m#head), or by write_rows.c into any other
 *    relation: through COPY FROM into tables, through INSERT into the
 *    rest; its exemplars by
 *    write_exemplars.c, into the metric's exemplar table if it has one.  A
 *    relation dropped (or a metric registered again) by another session
 *    after the metric was looked up is not an error: the metric is looked
 *    up again, and its table created again when remote write may create
 *    it; only when that keeps happening does the request fail, with 40001.
 *
 * Failures and what Prometheus makes of them.  Prometheus retries a request
 * answered with a 5xx and drops one answered with a 4xx (other than 429),
 * every metric of it.  So the question for each failure is whether a retry
 * may succeed, and whether it is one metric's or the request's:
 *
 * - A retry may succeed when the server's state is at fault: a relation
 *   that another session dropped or registered again (handled here, as in
 *   step 4), a lock or statement timeout, a deadlock, a serialization
 *   failure, a cancel, resources, the system (classes 40, 53, 55, 57, 58,
 *   XX, and anything not named below).  The request fails whole with that
 *   SQLSTATE, which PostgREST answers with a 5xx (never with 42P01, a 404):
 *   nothing of it is written, and Prometheus sends it again.  A request
 *   written twice reads as once (a read keeps the last sample of equal
 *   times).
 * - A retry can never succeed when one metric's samples or configuration
 *   are at fault: a data exception (class 22: a time out of range, a label
 *   value that does not fit its column or enum), an integrity constraint
 *   (23), a privilege or a registration (42: no INSERT, a table of an
 *   untrusted owner, no registration while promread.write_create_metrics
 *   is off, a label without a column), a view's check option (44), a
 *   limit (54), a trigger's RAISE (P0).  That metric is refused and the
 *   others are written: the function returns, so its transaction commits,
 *   with one WARNING that names the refused metrics and their errors and
 *   response.status set to 400, which PostgREST answers with.  Prometheus
 *   drops the request, whose other metrics are stored, as its own receiver
 *   does with samples it cannot append.
 *
 * Refusing one metric must not keep what it half wrote (a COPY that failed
 * on its thousandth row), so metrics are written in subtransactions.  One
 * subtransaction a request is the common case: a subtransaction a metric
 * would give each transaction hundreds of subtransaction ids, past the 64
 * that other sessions' snapshots can track cheaply.  When a metric is
 * refused, its subtransaction is rolled back, the metrics before it are
 * written again in one, and the rest continue in another: 1 + 2 refusals
 * subtransactions, and at most twice the work.  Each subtransaction owns
 * its SPI connection (connected and finished inside it), so that an error
 * leaves no connection for the subtransaction of a caller to clean up.
 *
 * Metadata of metric families is kept in prom_metric_metadata (metadata.c)
 * for the families whose metrics the writing role may write; the rest is
 * counted in a NOTICE.  The families are taken in order of name, as the
 * metrics are, so that two writers take the locks of names in one order.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog/namespace.h"
#include "catalog/objectaddress.h"
#include "catalog/pg_class.h"
#include "common/hashfn.h"
#include "executor/spi.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "promread.h"
#include "protocol/protocol.h"
#include "write_internal.h"
#include "storage/lmgr.h"
#include "storage/storage.h"
#include "tcop/utility.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/syscache.h"

PG_FUNCTION_INFO_V1(prom_remote_write);

/* How many times to look a metric up while its relation is dropped under the write. */
#define LOOKUP_ATTEMPTS			10

/* qsort comparator of series by metric name. */
static int
series_metric_cmp(const void *a, const void *b)
{
	return strcmp((*(PromWriteSeries *const *) a)->metric,
				  (*(PromWriteSeries *const *) b)->metric);
}

/* qsort comparator of metadata by family name. */
static int
metadata_family_cmp(const void *a, const void *b)
{
	return strcmp(((const PromWriteMetadata *) a)->family,
				  ((const PromWriteMetadata *) b)->family);
}

/* qsort comparator of C strings. */
static int
cstring_cmp(const void *a, const void *b)
{
	return strcmp(*(const char *const *) a, *(const char *const *) b);
}

/* Collect the distinct label names of a group's series, sorted. */
static void
collect_labels(PromWriteGroup *group)
{
	int			total = 0;
	int			i;
	int			j;

	for (i = 0; i < group->nseries; i++)
		total += group->series[i]->nlabels;
	group->labels = palloc(sizeof(char *) * Max(total, 1));
	group->nlabels = 0;
	for (i = 0; i < group->nseries; i++)
		for (j = 0; j < group->series[i]->nlabels; j++)
			group->labels[group->nlabels++] = group->series[i]->labels[j].name;
	qsort(group->labels, group->nlabels, sizeof(char *), cstring_cmp);
	for (i = 0, j = 0; i < group->nlabels; i++)
		if (j == 0 || strcmp(group->labels[j - 1], group->labels[i]) != 0)
			group->labels[j++] = group->labels[i];
	group->nlabels = j;
}

/* The time of a group's first sample or histogram (PG_INT64_MAX: none). */
static int64
group_earliest_ms(const PromWriteGroup *group)
{
	int64		earliest = PG_INT64_MAX;
	int			i;
	int			j;

	for (i = 0; i < group->nseries; i++)
	{
		const PromWriteSeries *series = group->series[i];

		for (j = 0; j < series->nsamples; j++)
			earliest = Min(earliest, series->samples[j]->timestamp);
		for (j = 0; j < series->nhistograms; j++)
			earliest = Min(earliest, series->histograms[j].timestamp);
	}
	return earliest;
}

/*
 * The registration of a group's metric, with a place for every label its
 * series carry where it can have one: created, extended, or as registered;
 * or NULL when its table went away while columns were added to it.  Labels
 * without a column refuse the request unless they may be dropped or are
 * kept as overflow labels.
 */
PromMetricEntry *
PromWriteGroupEntry(const PromWriteGroup *group)
{
	PromMetricEntry *entry = PromCatalogFind(group->metric);
	const char **missing;
	int			nmissing = 0;
	int			i;

	if (entry == NULL)
	{
		if (!promread_write_create_metrics)
			ereport(ERROR,
					(errcode(ERRCODE_UNDEFINED_TABLE),
					 errmsg("metric \"%s\" is not registered", group->metric),
					 errhint("Register a relation for it with prom_register(), or set promread.write_create_metrics to on.")));
		if (promread_write_storage == PROM_WRITE_STORAGE_CHUNKS)
			entry = PromStorageCreateMetric(group->metric,
											get_namespace_oid(promread_write_schema, false),
											group->labels, group->nlabels,
											PromWriteGroupValues(group, true) > 0, true,
											group_earliest_ms(group));
		else
			entry = PromWriteCreateMetric(group->metric, group->labels, group->nlabels,
										  PromWriteGroupValues(group, true) > 0);
	}

	missing = palloc(sizeof(char *) * Max(group->nlabels, 1));
	for (i = 0; i < group->nlabels; i++)
		if (PromCatalogLabelIndex(entry, group->labels[i]) < 0)
			missing[nmissing++] = group->labels[i];
	if (nmissing > 0 && entry->created_by_write && entry->overflow_column == NULL)
	{
		PromStorageEntry *storage = PromStorageLookup(entry->metric);

		/* a metric in chunk storage takes them in its series table */
		entry = storage != NULL && storage->relation == entry->relid ?
			PromStorageAddLabelColumns(entry, storage, missing, nmissing) :
			PromWriteAddLabelColumns(entry, missing, nmissing);
		if (entry == NULL)
			return NULL;
	}

	for (i = 0; i < group->nlabels; i++)
		if (PromCatalogLabelIndex(entry, group->labels[i]) < 0 &&
			entry->overflow_column == NULL &&
			promread_write_unknown_labels == PROM_WRITE_ERROR)
			ereport(ERROR,
					(errcode(ERRCODE_UNDEFINED_COLUMN),
					 errmsg("metric \"%s\" has no column for label \"%s\"",
							group->metric, group->labels[i]),
					 errhint("Add the column and register the relation again, or set promread.write_unknown_labels to drop.")));
	return entry;
}

/*
 * Refuse a group of both float samples and histograms (22023), unless its
 * float samples are staleness markers (write_rows.c): a metric's value
 * column holds one kind.
 */
static void
check_value_kinds(const PromWriteGroup *group)
{
	if (PromWriteGroupValues(group, false) > 0 &&
		PromWriteGroupValues(group, true) > 0 &&
		!PromWriteGroupSamplesStale(group))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("remote write request has both float samples and native histograms of metric \"%s\"",
						group->metric),
				 errdetail("A metric's value column holds either float8 or prom_histogram values.")));
}

/*
 * Create a group's metric, writing nothing (create_installment); returns 0,
 * the exemplars stored, as write_metric does.
 */
static int64
create_metric(const PromWriteGroup *group)
{
	check_value_kinds(group);
	(void) PromWriteGroupEntry(group);
	return 0;
}

/*
 * Write the samples and exemplars of a group into its metric's relations,
 * returning how many exemplars were stored.  A group of both float
 * samples and histograms is refused (22023) before anything is created,
 * unless its float samples are staleness markers (write_rows.c).
 * When the metric's relation was dropped, or the metric registered again,
 * between looking the metric up and locking its relation, the metric is
 * looked up again (and its table created again, when remote write may
 * create it), a few times before the request fails with 40001, which
 * Prometheus retries.
 */
static int64
write_metric(const PromWriteGroup *group)
{
	int			attempt;

	check_value_kinds(group);
	for (attempt = 1;; attempt++)
	{
		PromMetricEntry *entry = PromWriteGroupEntry(group);
		PromStorageEntry *storage = entry != NULL ? PromStorageLookup(entry->metric) : NULL;

		if (entry != NULL &&
			(storage != NULL && storage->relation == entry->relid ?
			 PromWriteGroupChunks(group, entry, storage) :
			 PromWriteGroupRows(group, entry)))
			return PromWriteGroupExemplars(group, entry);
		if (attempt >= LOOKUP_ATTEMPTS)
			ereport(ERROR,
					(errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
					 errmsg("the relation of metric \"%s\" changed while remote write wrote into it",
							group->metric),
					 errdetail("It was dropped or registered again %d times.", attempt),
					 errhint("The request can be retried.")));
		CHECK_FOR_INTERRUPTS();
	}
}

/*
 * Is a failure with this SQLSTATE one metric's, which no retry can undo:
 * its samples' or its configuration's (see the header)?
 */
static bool
refuses_metric(int sqlerrcode)
{
	switch (ERRCODE_TO_CATEGORY(sqlerrcode))
	{
		case ERRCODE_DATA_EXCEPTION:
		case ERRCODE_INTEGRITY_CONSTRAINT_VIOLATION:
		case ERRCODE_SYNTAX_ERROR_OR_ACCESS_RULE_VIOLATION:
		case ERRCODE_WITH_CHECK_OPTION_VIOLATION:
		case ERRCODE_PROGRAM_LIMIT_EXCEEDED:
		case ERRCODE_PLPGSQL_ERROR:
			return true;
		default:
			return false;
	}
}

/*
 * Write groups[lo, hi) with write (write_metric, or create_metric), but
 * those already refused, in one subtransaction with an SPI connection of
 * its own, keeping in exemplars[] how many exemplars of each were stored.
 * Returns hi when every one was written.
 * When one failed with an error that refuses its metric, the
 * subtransaction is rolled back, the error kept in refusals[] at the
 * group's index, and that index returned.  Any other error is thrown, the
 * subtransaction rolled back.
 */
static int
write_in_subtransaction(const PromWriteGroup *groups, ErrorData **refusals,
						int64 *exemplars, int lo, int hi,
						int64 (*write) (const PromWriteGroup *group))
{
	MemoryContext context = CurrentMemoryContext;
	ResourceOwner owner = CurrentResourceOwner;
	volatile int current = lo;
	ErrorData  *volatile edata = NULL;

	BeginInternalSubTransaction(NULL);
	MemoryContextSwitchTo(context);
	PG_TRY();
	{
		SPI_connect();
		for (; current < hi; current++)
			if (refusals[current] == NULL)
				exemplars[current] = write(&groups[current]);
		SPI_finish();
		ReleaseCurrentSubTransaction();
	}
	PG_CATCH();
	{
		MemoryContextSwitchTo(context);
		edata = CopyErrorData();
		FlushErrorState();
		RollbackAndReleaseCurrentSubTransaction();
	}
	PG_END_TRY();
	MemoryContextSwitchTo(context);
	CurrentResourceOwner = owner;

	if (edata == NULL)
		return hi;
	if (current >= hi || !refuses_metric(edata->sqlerrcode))
		ReThrowError(edata);
	refusals[current] = edata;
	return current;
}

/*
 * Write every group that can be written, refusing those whose write fails
 * for good (refusals[] then holds their errors; exemplars[] the exemplars
 * stored of the others); returns how many were refused.  A refusal rolls back the groups written before it in the same
 * subtransaction, which are written again in one of their own.
 */
static int
write_groups(const PromWriteGroup *groups, ErrorData **refusals, int64 *exemplars,
			 int ngroups)
{
	int			nrefused = 0;
	int			start = 0;

	while (start < ngroups)
	{
		int			refused = write_in_subtransaction(groups, refusals, exemplars,
													  start, ngroups, write_metric);

		if (refused == ngroups)
			break;
		nrefused++;
		while (refused > start &&
			   write_in_subtransaction(groups, refusals, exemplars, start,
									   refused, write_metric) != refused)
			nrefused++;
		start = refused + 1;
	}
	return nrefused;
}

/*
 * How many calls of prom_remote_write are in progress: more than one when a
 * trigger fired by a write calls it.
 */
static int	write_depth = 0;

/*
 * When the request needs more new metrics than
 * promread.write_max_new_metrics, create that many (in the order of their
 * names, each in a subtransaction of its own) and say so: true then, and
 * nothing else of the request is written (see the header).  A metric whose
 * creation is refused is left for the write that follows the last
 * installment to refuse; when none could be created, that write follows at
 * once.  A call from a trigger (write_depth above 1) creates them all: no
 * one would send its samples again.
 */
static bool
create_installment(const PromWriteGroup *groups, ErrorData **refusals,
				   int64 *exemplars, int ngroups)
{
	int			nmissing = 0;
	int			created = 0;
	int			i;

	if (!promread_write_create_metrics || write_depth > 1)
		return false;
	for (i = 0; i < ngroups; i++)
		if (PromCatalogFind(groups[i].metric) == NULL)
			nmissing++;
	if (nmissing <= promread_write_max_new_metrics)
		return false;
	for (i = 0; i < ngroups && created < promread_write_max_new_metrics; i++)
	{
		CHECK_FOR_INTERRUPTS();
		if (PromCatalogFind(groups[i].metric) != NULL)
			continue;
		if (write_in_subtransaction(groups, refusals, exemplars, i, i + 1,
									create_metric) == i + 1)
			created++;
		else
		{
			FreeErrorData(refusals[i]);
			refusals[i] = NULL;
		}
	}
	if (created == 0)
		return false;

	(void) set_config_option("response.status", "503", PGC_USERSET, PGC_S_SESSION,
							 GUC_ACTION_LOCAL, true, 0, false);
	ereport(WARNING,
			(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
			 errmsg("remote write created %d of the %d metrics the request needs, and wrote none of its samples",
					created, nmissing),
			 errdetail("One remote write creates at most promread.write_max_new_metrics (%d) metrics, each of which holds some eighty locks until it commits.",
					   promread_write_max_new_metrics),
			 errhint("Send the request again.  Through PostgREST it is answered with 503, which Prometheus retries.")));
	return true;
}

/* How many refused metrics the WARNING of refusals names one by one. */
#define REFUSALS_NAMED			5

/*
 * Say which metrics were refused and why, in one WARNING, and, in the
 * outermost call, have PostgREST answer 400: Prometheus drops the request
 * without retrying it, its other metrics being written.  (A call from a
 * trigger writes samples that the user's code made, not the request's.)
 */
static void
report_refusals(const PromWriteGroup *groups, ErrorData **refusals, int ngroups,
				int nrefused)
{
	StringInfoData detail;
	int64		nseries = 0;
	int64		nsamples = 0;
	int64		nhistograms = 0;
	int			first_code = 0;
	int			named = 0;
	int			i;

	initStringInfo(&detail);
	for (i = 0; i < ngroups; i++)
	{
		const ErrorData *edata = refusals[i];

		if (edata == NULL)
			continue;
		nseries += groups[i].nseries;
		nsamples += PromWriteGroupValues(&groups[i], false);
		nhistograms += PromWriteGroupValues(&groups[i], true);
		if (first_code == 0)
			first_code = edata->sqlerrcode;
		if (named < REFUSALS_NAMED)
			appendStringInfo(&detail, "%sMetric \"%s\", SQLSTATE %s: %s.%s%s",
							 named > 0 ? "\n" : "", groups[i].metric,
							 unpack_sql_state(edata->sqlerrcode), edata->message,
							 edata->detail != NULL ? " " : "",
							 edata->detail != NULL ? edata->detail : "");
		named++;
	}
	if (nrefused > REFUSALS_NAMED)
		appendStringInfo(&detail, "\nAnd %d more.", nrefused - REFUSALS_NAMED);

	if (write_depth == 1)
		(void) set_config_option("response.status", "400", PGC_USERSET, PGC_S_SESSION,
								 GUC_ACTION_LOCAL, true, 0, false);
	ereport(WARNING,
			(errcode(first_code),
			 nhistograms > 0 ?
			 errmsg("remote write refused %d of the %d metrics of the request (%lld series, %lld samples, %lld histograms)",
					nrefused, ngroups, (long long) nseries, (long long) nsamples,
					(long long) nhistograms) :
			 errmsg("remote write refused %d of the %d metrics of the request (%lld series, %lld samples)",
					nrefused, ngroups, (long long) nseries, (long long) nsamples),
			 errdetail_internal("%s", detail.data),
			 errhint("The other metrics were written.  Through PostgREST the request is answered with 400, which Prometheus does not retry.")));
}

/*
 * Answer the counts remote write 2.0 requires in X-Prometheus-Remote-Write-
 * Samples-Written, -Histograms-Written and -Exemplars-Written, through
 * PostgREST's response.headers: the samples, histograms and stored
 * exemplars of the metrics written (refused metrics not counted); and in
 * X-Promread-Start-Timestamps-Dropped the start timestamps, which promread
 * does not store.  A 1.0 client ignores them.  Set by the outermost call,
 * as response.status is: a call from a trigger does not answer the request.
 */
static void
set_written_headers(int64 nsamples, int64 nhistograms, int64 nexemplars,
					int64 nstart_timestamps)
{
	char	   *json = psprintf("[{\"X-Prometheus-Remote-Write-Samples-Written\": \"%lld\"}, "
							   "{\"X-Prometheus-Remote-Write-Histograms-Written\": \"%lld\"}, "
							   "{\"X-Prometheus-Remote-Write-Exemplars-Written\": \"%lld\"}, "
							   "{\"X-Promread-Start-Timestamps-Dropped\": \"%lld\"}]",
							   (long long) nsamples, (long long) nhistograms,
							   (long long) nexemplars, (long long) nstart_timestamps);

	(void) set_config_option("response.headers", json, PGC_USERSET, PGC_S_SESSION,
							 GUC_ACTION_LOCAL, true, 0, false);
}

/*
 * Is a request of this Content-Type remote write 2.0?  NULL, a type without
 * a proto parameter and proto=prometheus.WriteRequest are 1.0,
 * proto=io.prometheus.write.v2.Request is 2.0; any other proto is refused
 * with PT415, which PostgREST answers with 415 Unsupported Media Type, as
 * the specification asks.
 */
static bool
content_type_is_v2(const char *content_type)
{
	const char *p;
	const char *end;
	size_t		len;

	if (content_type == NULL || (p = strstr(content_type, "proto=")) == NULL)
		return false;
	p += strlen("proto=");
	end = p + strcspn(p, "; \t");
	len = end - p;
	if (len == strlen("prometheus.WriteRequest") &&
		strncmp(p, "prometheus.WriteRequest", len) == 0)
		return false;
	if (len == strlen("io.prometheus.write.v2.Request") &&
		strncmp(p, "io.prometheus.write.v2.Request", len) == 0)
		return true;
	ereport(ERROR,
			(errcode(MAKE_SQLSTATE('P', 'T', '4', '1', '5')),
			 errmsg("remote write request of unsupported content type \"%s\"",
					content_type),
			 errhint("promread reads proto=prometheus.WriteRequest (1.0) and proto=io.prometheus.write.v2.Request (2.0).")));
	return false;				/* keep the compiler quiet */
}

/*
 * Store the samples of a snappy-compressed WriteRequest (1.0) or Request
 * (2.0), as Prometheus sends it: the work of prom_remote_write.
 */
static void
write_request(bytea *body, bool v2)
{
	MemoryContext context;
	MemoryContext old;
	PromWriteRequest *request;
	PromWriteSeries **sorted;
	PromWriteGroup *groups;
	int			ngroups = 0;
	ErrorData **refusals;
	int			nrefused;
	int			nmetadata_refused = 0;
	int64	   *exemplars;
	int64		nsamples_written = 0;
	int64		nhistograms_written = 0;
	int64		nexemplars_written = 0;
	int			i;

	PreventCommandIfReadOnly("prom_remote_write()");
	PreventCommandDuringRecovery("prom_remote_write()");

	context = AllocSetContextCreate(CurrentMemoryContext, "promread remote write",
									ALLOCSET_DEFAULT_SIZES);
	old = MemoryContextSwitchTo(context);
	request = v2 ?
		PromDecodeWriteRequestV2(VARDATA_ANY(body), VARSIZE_ANY_EXHDR(body)) :
		PromDecodeWriteRequest(VARDATA_ANY(body), VARSIZE_ANY_EXHDR(body));
	if (request->nstart_timestamps > 0)
		ereport(NOTICE,
				(errmsg("dropped %lld start timestamps of the remote write request",
						(long long) request->nstart_timestamps),
				 errdetail("promread does not store start timestamps; the samples were written without them.")));
	if (request->nexemplars_invalid > 0)
		ereport(NOTICE,
				(errmsg("dropped %lld invalid exemplars of the remote write request",
						(long long) request->nexemplars_invalid),
				 errdetail("An exemplar's labels must have valid, distinct names and at most 128 UTF-8 characters of names and values together.")));

	sorted = palloc(sizeof(PromWriteSeries *) * Max(request->nseries, 1));
	for (i = 0; i < request->nseries; i++)
		sorted[i] = &request->series[i];
	qsort(sorted, request->nseries, sizeof(PromWriteSeries *), series_metric_cmp);

	groups = palloc(sizeof(PromWriteGroup) * Max(request->nseries, 1));
	for (i = 0; i < request->nseries; ngroups++)
	{
		PromWriteGroup *group = &groups[ngroups];

		group->metric = sorted[i]->metric;
		group->series = &sorted[i];
		group->nseries = 0;
		while (i < request->nseries && strcmp(sorted[i]->metric, group->metric) == 0)
		{
			group->nseries++;
			i++;
		}
		collect_labels(group);
	}
	refusals = palloc0(sizeof(ErrorData *) * Max(ngroups, 1));
	exemplars = palloc0(sizeof(int64) * Max(ngroups, 1));
	if (create_installment(groups, refusals, exemplars, ngroups))
	{
		set_written_headers(0, 0, 0, 0);
		MemoryContextSwitchTo(old);
		MemoryContextDelete(context);
		return;
	}
	nrefused = write_groups(groups, refusals, exemplars, ngroups);
	if (nrefused > 0)
		report_refusals(groups, refusals, ngroups, nrefused);
	for (i = 0; i < ngroups; i++)
		if (refusals[i] == NULL)
		{
			nsamples_written += PromWriteGroupValues(&groups[i], false);
			nhistograms_written += PromWriteGroupValues(&groups[i], true);
			nexemplars_written += exemplars[i];
		}
	if (write_depth == 1)
		set_written_headers(nsamples_written, nhistograms_written,
							nexemplars_written, request->nstart_timestamps);

	SPI_connect();
	qsort(request->metadata, request->nmetadata, sizeof(PromWriteMetadata),
		  metadata_family_cmp);
	for (i = 0; i < request->nmetadata; i++)
	{
		const PromWriteMetadata *m = &request->metadata[i];

		CHECK_FOR_INTERRUPTS();
		if (!PromMetadataStore(m->family, m->type, m->help, m->unit))
			nmetadata_refused++;
	}
	SPI_finish();
	if (nmetadata_refused > 0)
		ereport(NOTICE,
				(errmsg_plural("metadata of %d metric family of the remote write request was not stored",
							   "metadata of %d metric families of the remote write request was not stored",
							   nmetadata_refused, nmetadata_refused),
				 errdetail("A role writes the metadata of a family only when a metric of the family is registered and the role may insert into the relation of every such metric.")));

	MemoryContextSwitchTo(old);
	MemoryContextDelete(context);
}

/*
 * prom_remote_write(request bytea, content_type text DEFAULT NULL) returns
 * void: store the samples of a snappy-compressed remote-write request, as
 * Prometheus sends it, of the version content_type names (NULL: 1.0).  Not
 * STRICT, for the default; a NULL request is NULL.  A trigger that it fires
 * may call it again; the outermost call answers the request.
 */
Datum
prom_remote_write(PG_FUNCTION_ARGS)
{
	bytea	   *body;
	bool		v2;

	if (PG_ARGISNULL(0))
		PG_RETURN_NULL();
	body = PG_GETARG_BYTEA_PP(0);
	v2 = content_type_is_v2(PG_NARGS() > 1 && !PG_ARGISNULL(1) ?
							text_to_cstring(PG_GETARG_TEXT_PP(1)) : NULL);

	write_depth++;
	PG_TRY();
	{
		write_request(body, v2);
	}
	PG_FINALLY();
	{
		write_depth--;
	}
	PG_END_TRY();
	PG_RETURN_VOID();
}

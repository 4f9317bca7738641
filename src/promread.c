/*-------------------------------------------------------------------------
 *
 * promread.c
 *	  Module initialization and settings of promread.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <limits.h>

#include "fmgr.h"
#include "promread.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "scan/scan.h"
#include "storage/storage.h"
#include "utils/varlena.h"

PG_MODULE_MAGIC;

/*---- GUC variables ----*/

int			promread_max_samples = 50000000;
int			promread_max_request_bytes = 32 * 1024 * 1024;
int			promread_max_frame_bytes = 50000000;
bool		promread_report_phases = false;
bool		promread_shard_grouping = true;
int			promread_keep_memory = 4 * 1024;
int			promread_max_memory = 1024 * 1024;
bool		promread_write_create_metrics = true;
char	   *promread_write_schema = NULL;
int			promread_write_unknown_labels = PROM_WRITE_ERROR;
char	   *promread_write_trusted_owners = NULL;
int			promread_write_max_label_columns = 400;
int			promread_write_storage = PROM_WRITE_STORAGE_CHUNKS;
int			promread_head_index = PROM_HEAD_INDEX_SERIES;
int			promread_max_histogram_buckets = 10000;
int			promread_compact_after = 3600 * 1000;
int			promread_write_series_cache = 65536;
int			promread_write_max_new_metrics = 32;

/* Values of promread.write_unknown_labels. */
static const struct config_enum_entry write_refusal_options[] = {
	{"error", PROM_WRITE_ERROR, false},
	{"drop", PROM_WRITE_DROP, false},
	{NULL, 0, false}
};

/* Values of promread.write_storage. */
static const struct config_enum_entry write_storage_options[] = {
	{"chunks", PROM_WRITE_STORAGE_CHUNKS, false},
	{"rows", PROM_WRITE_STORAGE_ROWS, false},
	{NULL, 0, false}
};

/* Values of promread.head_index. */
static const struct config_enum_entry head_index_options[] = {
	{"series", PROM_HEAD_INDEX_SERIES, false},
	{"time", PROM_HEAD_INDEX_TIME, false},
	{NULL, 0, false}
};

void		_PG_init(void);

/* promread.write_trusted_owners must be a list of role names. */
static bool
check_trusted_owners(char **newval, void **extra, GucSource source)
{
	char	   *copy = pstrdup(*newval);
	List	   *names;
	bool		ok = SplitIdentifierString(copy, ',', &names);

	if (!ok)
		GUC_check_errdetail("List syntax is invalid.");
	list_free(names);
	pfree(copy);
	return ok;
}

/* Define the settings and install the executor hook. */
void
_PG_init(void)
{
	DefineCustomIntVariable("promread.max_samples",
							"Maximum number of samples one query may read.",
							"Counts the rows in range that carry a sample; a query passing it fails.",
							&promread_max_samples,
							50000000, 1, INT_MAX,
							PGC_USERSET, 0,
							NULL, NULL, NULL);
	DefineCustomIntVariable("promread.max_request_bytes",
							"Maximum decompressed size of a remote read or remote write request.",
							"A request whose snappy block announces more is refused before it is decompressed.",
							&promread_max_request_bytes,
							32 * 1024 * 1024, 1, MaxAllocSize,
							PGC_USERSET, GUC_UNIT_BYTE,
							NULL, NULL, NULL);
	DefineCustomIntVariable("promread.max_frame_bytes",
							"Largest message of a frame of a chunked remote read response.",
							"A STREAMED_XOR_CHUNKS frame holds one whole series; a series whose frame's message would be larger is refused. The default is Prometheus's default chunked_read_limit, the largest message its client accepts.",
							&promread_max_frame_bytes,
							50000000, 1, MaxAllocSize,
							PGC_USERSET, GUC_UNIT_BYTE,
							NULL, NULL, NULL);
	DefineCustomIntVariable("promread.keep_memory",
							"Working memory a backend keeps between calls for reuse.",
							"Series sets allocate in chunks of up to 256 kB; up to this much is kept when a call ends, so the next call does not fault fresh pages in; the rest is given back.",
							&promread_keep_memory,
							4 * 1024, 0, MAX_KILOBYTES,
							PGC_USERSET, GUC_UNIT_KB,
							NULL, NULL, NULL);
	DefineCustomIntVariable("promread.max_memory",
							"Maximum working memory of promread's reads in a backend.",
							"The series sets of the reads in progress and the messages being decoded may hold at most this much; a call that needs more fails.",
							&promread_max_memory,
							1024 * 1024, 1024, MAX_KILOBYTES,
							PGC_USERSET, GUC_UNIT_KB,
							NULL, NULL, NULL);
	DefineCustomIntVariable("promread.max_histogram_buckets",
							"Most buckets, spans and custom bucket bounds of one native histogram.",
							"A prom_histogram value, from text, binary input or remote write, with more buckets (of both signs together), more spans, or more custom bucket bounds than this is refused.",
							&promread_max_histogram_buckets,
							10000, 1, 10000000,
							PGC_USERSET, 0,
							NULL, NULL, NULL);
	DefineCustomBoolVariable("promread.shard_grouping",
							 "Lets a metric's postgres_fdw partitions group their own rows.",
							 "A partition on a server whose extensions option lists promread answers with its series instead of its rows.",
							 &promread_shard_grouping,
							 true,
							 PGC_USERSET, 0,
							 NULL, NULL, NULL);
	DefineCustomBoolVariable("promread.report_phases",
							 "Reports the time and memory of each phase of a call.",
							 "prom_remote_read and prom_series end with a NOTICE giving the time of decode, plan, scan, group, sort, encode and compress, and the rows, series, samples, bytes and peak memory.",
							 &promread_report_phases,
							 false,
							 PGC_SUSET, 0,
							 NULL, NULL, NULL);
	DefineCustomBoolVariable("promread.write_create_metrics",
							 "Creates a table for each metric that remote write sends and no relation is registered for.",
							 "The table is created in promread.write_schema, owned by the writing role, and registered.",
							 &promread_write_create_metrics,
							 true,
							 PGC_USERSET, 0,
							 NULL, NULL, NULL);
	DefineCustomStringVariable("promread.write_schema",
							   "Schema in which remote write creates the tables of new metrics.",
							   NULL,
							   &promread_write_schema,
							   "public",
							   PGC_USERSET, 0,
							   NULL, NULL, NULL);
	DefineCustomEnumVariable("promread.write_unknown_labels",
							 "What remote write does with a label that a registered relation has no column for.",
							 "error refuses the request; drop writes the samples without the label.  Tables that remote write created get a new column instead.",
							 &promread_write_unknown_labels,
							 PROM_WRITE_ERROR, write_refusal_options,
							 PGC_USERSET, 0,
							 NULL, NULL, NULL);
	DefineCustomIntVariable("promread.write_max_label_columns",
							"Most label columns remote write gives a table it created.",
							"Labels past them, and every label new to a table once one was, are kept in the table's jsonb column of overflow labels.",
							&promread_write_max_label_columns,
							400, 0, 1000,
							PGC_USERSET, 0,
							NULL, NULL, NULL);
	DefineCustomEnumVariable("promread.write_storage",
							 "How remote write stores the metrics it creates.",
							 "chunks: Prometheus chunks, a series table and a head of recent samples behind a view (docs/chunk-storage.md); rows: a table of one row per sample.  Metrics that exist keep their storage.",
							 &promread_write_storage,
							 PROM_WRITE_STORAGE_CHUNKS, write_storage_options,
							 PGC_USERSET, 0,
							 NULL, NULL, NULL);
	DefineCustomEnumVariable("promread.head_index",
							 "How the head of a metric in chunk storage created from now on is indexed.",
							 "series: a B-tree on (series_id, t), a read of a few series over recent samples reads their rows alone; time: BRIN on t, an append takes no B-tree insertion and a read of recent samples reads every series' rows of its range.  Metrics that exist keep their index (docs/chunk-storage.md says how to change it).",
							 &promread_head_index,
							 PROM_HEAD_INDEX_SERIES, head_index_options,
							 PGC_USERSET, 0,
							 NULL, NULL, NULL);
	DefineCustomStringVariable("promread.write_trusted_owners",
							   "Roles whose relations remote write writes into even when that runs their code.",
							   "A comma-separated list of role names.  Remote write refuses a relation owned by another role, not a superuser nor listed here, when writing into it would run that role's triggers, rules, policies or expressions as the writer.",
							   &promread_write_trusted_owners,
							   "",
							   PGC_SUSET, GUC_LIST_INPUT,
							   check_trusted_owners, NULL, NULL);
	DefineCustomIntVariable("promread.compact_after",
							"How long prom_compact leaves samples in the head of a metric in chunk storage.",
							"prom_compact compacts the 2-hour windows that end at or before now() minus this.",
							&promread_compact_after,
							3600 * 1000, 0, INT_MAX,
							PGC_USERSET, GUC_UNIT_MS,
							NULL, NULL, NULL);
	DefineCustomIntVariable("promread.write_series_cache",
							"Most series ids a backend keeps between remote writes into metrics in chunk storage.",
							"A request whose series are all kept looks none up in the series table; 0 turns the cache off.",
							&promread_write_series_cache,
							65536, 0, INT_MAX / 2,
							PGC_USERSET, 0,
							NULL, NULL, NULL);
	DefineCustomIntVariable("promread.write_max_new_metrics",
							"Most metrics one remote write creates.",
							"A request that needs more creates that many, writes none of its samples and is answered with 503, so that Prometheus sends it again: each metric created holds some eighty locks until the transaction ends.",
							&promread_write_max_new_metrics,
							32, 1, 64,
							PGC_USERSET, 0,
							NULL, NULL, NULL);
	MarkGUCPrefixReserved("promread");
	PromScanInit();
	PromStorageInit();
}

/*-------------------------------------------------------------------------
 *
 * promread.h
 *	  What the files of promread share: the settings, matchers and queries,
 *	  the metric catalog, time conversions.
 *
 * A query (a PromQL selector or one query of a remote-read request) is a
 * time range and a list of label matchers (matcher.c, protocol/selector.c).  The
 * __name__ matchers pick entries of the metric catalog (catalog.c); each
 * picked relation is read through the executor with the other matchers as
 * SQL predicates (scan.c, query.c).  Every row goes into a series set,
 * which groups rows into series (series_set.c and the files it names); the
 * finished set is sorted, and the SQL functions turn it into rows or into a
 * response.  ARCHITECTURE.md is the map.
 *
 * Each folder of src/ declares what the others may call in one public
 * header: engine/engine.h (series sets, arenas, enum labels),
 * regex/prom_regex.h (RE2 to ARE), scan/scan.h (reading a metric
 * relation), protocol/protocol.h (decoding requests, encoding answers),
 * histogram/histogram.h (native histograms), storage/storage.h (chunk
 * storage), write/write.h (remote write).  write_request.h holds a decoded
 * write request's types, write_tables.h the making of a metric's tables.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PROMREAD_H
#define PROMREAD_H

#include "postgres.h"

#include "compat.h"
#include "datatype/timestamp.h"
#include "fmgr.h"
#include "access/htup.h"
#include "nodes/pg_list.h"
#include "storage/lockdefs.h"
#include "regex/prom_regex.h"
#include "utils/hsearch.h"
#include "utils/relcache.h"
#include "utils/snapshot.h"

/*---- GUC variables (promread.c) ----*/

extern int	promread_max_samples;
extern int	promread_max_request_bytes;
extern int	promread_max_frame_bytes;
extern bool promread_report_phases;
extern bool promread_shard_grouping;
extern int	promread_keep_memory;
extern int	promread_max_memory;
extern bool promread_write_create_metrics;
extern char *promread_write_schema;
extern int	promread_write_unknown_labels;
extern char *promread_write_trusted_owners;
extern int	promread_write_max_label_columns;
extern int	promread_write_storage;
extern int	promread_head_index;
extern int	promread_max_histogram_buckets;
extern int	promread_compact_after;
extern int	promread_write_series_cache;
extern int	promread_write_max_new_metrics;

/* What remote write does with a label that has no column. */
typedef enum PromWriteRefusal
{
	PROM_WRITE_ERROR,			/* refuse the request */
	PROM_WRITE_DROP				/* write the rest */
} PromWriteRefusal;

/* How remote write stores the metrics it creates (promread.write_storage). */
typedef enum PromWriteStorage
{
	PROM_WRITE_STORAGE_CHUNKS,	/* chunk storage: docs/chunk-storage.md */
	PROM_WRITE_STORAGE_ROWS		/* a table of one row per sample */
} PromWriteStorage;

/* How a new chunk metric's head is indexed (promread.head_index). */
typedef enum PromHeadIndex
{
	PROM_HEAD_INDEX_SERIES,		/* B-tree on (series_id, t) */
	PROM_HEAD_INDEX_TIME		/* BRIN on t */
} PromHeadIndex;

/*---- Matchers (matcher.c, protocol/selector.c) ----*/

/* Matcher types; the numbers are those of Prometheus's LabelMatcher.Type. */
typedef enum PromMatchType
{
	PROM_MATCH_EQ = 0,
	PROM_MATCH_NEQ = 1,
	PROM_MATCH_RE = 2,
	PROM_MATCH_NRE = 3
} PromMatchType;

/* One label matcher, with its regex compiled when it has one. */
typedef struct PromMatcher
{
	PromMatchType type;
	char	   *name;			/* label name, NUL-terminated */
	char	   *value;			/* matcher value, NUL-terminated */
	int			value_len;
	PromRegex  *regex;			/* for RE and NRE */
	bool		matches_empty;	/* does a missing label ("") match? */
} PromMatcher;

/* The most matchers in a query: of a remote-read request or a selector. */
#define PROM_MAX_MATCHERS	1000

/* One query: a time range in ms since the Unix epoch, both inclusive. */
typedef struct PromQuery
{
	int64		start_ms;
	int64		end_ms;
	int			nmatchers;
	PromMatcher *matchers;
} PromQuery;

/* in matcher.c */
extern const char *PromMatchTypeOperator(PromMatchType type);
extern void PromMatcherInit(PromMatcher *matcher, PromMatchType type,
							const char *name, const char *value, int value_len);
extern bool PromMatcherMatches(const PromMatcher *matcher,
							   const char *value, int len);
extern bool PromIsValidLabelName(const char *name, int len);
extern bool PromIsValidMetricName(const char *name, int len);
extern bool PromIsValidUtf8(const char *s, int len);

/* in protocol/selector.c */
extern void PromParseSelector(const char *selector, PromQuery *query);

/*---- Metric catalog (catalog.c) ----*/

/* One registered metric, as stored in the catalog table. */
typedef struct PromMetricEntry
{
	char	   *metric;
	Oid			relid;
	char	   *time_column;
	char	   *value_column;
	int			nlabels;
	char	  **label_columns;
	char	  **label_names;	/* the label each of label_columns holds */
	char	   *overflow_column;	/* jsonb of the labels without a column of
									 * their own; NULL when none */
	bool		created_by_write;	/* remote write created the relation */
} PromMetricEntry;

extern List *PromCatalogLookup(const PromQuery *query, bool *named);
/* Run before a metric's chunk-storage entry is forgotten (catalog.c). */
typedef void (*PromForgetStorageFunction) (const char *metric);
extern PromForgetStorageFunction PromForgetStorageHook;
extern PromMetricEntry *PromCatalogFind(const char *metric);
extern char *PromQuotedRelationName(Oid relid);
extern Oid	PromExtensionNamespace(void);
extern Oid	PromExtensionTypeOid(const char *name);
extern int	PromCatalogLabelIndex(const PromMetricEntry *entry, const char *label);
extern void PromCatalogLockForWrite(const char *metric);
extern void PromCatalogUnlockForWrite(const char *metric);
extern void PromCatalogStoreCreated(const char *metric, Oid relid,
									const char *time_column,
									const char *value_column,
									const char *const *columns,
									const char *const *labels, int nlabels,
									const char *overflow_column);
extern Relation PromCatalogOpenTable(const char *table, const char *index,
									 LOCKMODE lockmode, Oid *indexid);
extern Relation PromCatalogOpenOptional(const char *table, const char *index,
										LOCKMODE lockmode, Oid *indexid);
extern void PromCatalogLockName(Relation rel, const char *name);
extern bool PromCatalogLockRow(Relation rel, HeapTuple tuple, Snapshot snapshot);
extern void PromCatalogStoreRow(Relation rel, Oid indexid, const char *key_text,
								Datum *values, bool *isnull,
								bool (*may_replace) (Relation rel, HeapTuple old));

/*
 * Writers of the extension's tables open them with a lock that conflicts
 * with no reader and no other writer, and take, until their transaction
 * ends, the lock of the name whose row they change (PromCatalogLockName):
 * two writers of one name take turns, writers of others do not wait.
 */
#define PROM_CATALOG_WRITE_LOCK	RowExclusiveLock

/*
 * The function of the statement trigger on a chunk metric's m#series that
 * tells remote write's series cache of rows changed (series_cache.c), and
 * the trigger's name.
 */
#define PROM_SERIES_TRIGGER_FUNCTION	"prom_series_changed"

/* in metadata.c */
extern bool PromMetadataStore(const char *family, const char *type,
							  const char *help, const char *unit);
extern Oid	PromExemplarCatalogFind(const char *metric);
extern bool PromExemplarCatalogLock(const char *metric);
extern void PromExemplarCatalogStore(const char *metric, Oid relid);

/* in register_columns.c: the columns prom_register registers */
struct ArrayType;
typedef struct PromRegisteredColumns
{
	char	   *time_column;
	char	   *value_column;
	const char **labels;
	int			nlabels;
} PromRegisteredColumns;

extern void PromChooseRegisteredColumns(Relation rel, Name time_name,
										Name value_name, struct ArrayType *label_names,
										Oid histogram_type,
										PromRegisteredColumns *chosen);

/*---- Queries (query.c) ----*/

struct PromSeriesSet;
struct PromStorageEntry;
extern const struct PromStorageEntry *PromMetricStorage(const PromMetricEntry *entry);
extern void PromQueryFromSelector(text *selector, TimestampTz start_time,
								  TimestampTz end_time, PromQuery *query);
extern struct PromSeriesSet *PromRunQuery(const PromQuery *query,
										  MemoryContext context,
										  bool keep_chunks);

/*---- Time conversions ----*/

/* Milliseconds between the PostgreSQL epoch (2000) and the Unix epoch. */
#define PROM_EPOCH_DIFF_MS \
	((int64) (POSTGRES_EPOCH_JDATE - UNIX_EPOCH_JDATE) * (USECS_PER_DAY / 1000))

/*
 * Convert a PostgreSQL timestamp to ms since the Unix epoch, rounding down
 * (sub-millisecond digits are truncated, as Prometheus truncates them).
 */
static inline int64
PromTimestampToMs(int64 pg_timestamp)
{
	int64		ms = pg_timestamp / 1000;

	if (pg_timestamp % 1000 < 0)
		ms--;
	return ms + PROM_EPOCH_DIFF_MS;
}

/* A timestamptz argument in ms since the Unix epoch; infinities clamp. */
static inline int64
PromTimestamptzArgToMs(int64 ts)
{
	if (TIMESTAMP_IS_NOBEGIN(ts))
		return PG_INT64_MIN;
	if (TIMESTAMP_IS_NOEND(ts))
		return PG_INT64_MAX;
	return PromTimestampToMs(ts);
}

/* Convert ms since the Unix epoch to a PostgreSQL timestamp (no checks). */
static inline int64
PromMsToTimestamp(int64 ms)
{
	return (ms - PROM_EPOCH_DIFF_MS) * 1000;
}

#endif							/* PROMREAD_H */

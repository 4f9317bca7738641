/*-------------------------------------------------------------------------
 *
 * promread.h
 *	  Shared declarations of the promread extension: matchers, the metric
 *	  catalog, the executor scan and the series grouping engine.
 *
 * A query (a PromQL selector or one query of a remote-read request) is a
 * time range and a list of label matchers (matcher.c, selector.c).  The
 * __name__ matchers pick entries of the metric catalog (catalog.c); each
 * picked relation is read through the executor with the other matchers as
 * SQL predicates (scan.c, query.c).  Every row goes into a series set,
 * which groups rows into series (series_set.c and the files it names); the
 * finished set is sorted, and the SQL functions turn it into rows or into a
 * response.  ARCHITECTURE.md is the map.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PROMREAD_H
#define PROMREAD_H

#include "postgres.h"

#include "access/htup_details.h"
#include "datatype/timestamp.h"
#include "fmgr.h"
#include "nodes/pg_list.h"
#include "regex/prom_regex.h"
#include "utils/hsearch.h"

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
extern int	promread_write_unsupported;

/* What remote write does with what it cannot store. */
typedef enum PromWriteRefusal
{
	PROM_WRITE_ERROR,			/* refuse the request */
	PROM_WRITE_DROP				/* write the rest */
} PromWriteRefusal;

/*---- Matchers (matcher.c, selector.c) ----*/

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

/* One query: a time range in ms since the Unix epoch, both inclusive. */
typedef struct PromQuery
{
	int64		start_ms;
	int64		end_ms;
	int			nmatchers;
	PromMatcher *matchers;
} PromQuery;

extern const char *PromMatchTypeOperator(PromMatchType type);
extern void PromMatcherInit(PromMatcher *matcher, PromMatchType type,
							const char *name, const char *value, int value_len);
extern bool PromMatcherMatches(const PromMatcher *matcher,
							   const char *value, int len);
extern void PromParseSelector(const char *selector, PromQuery *query);
extern bool PromIsValidLabelName(const char *name, int len);
extern bool PromIsValidMetricName(const char *name, int len);
extern bool PromIsValidUtf8(const char *s, int len);

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
	bool		created_by_write;	/* remote write created the relation */
} PromMetricEntry;

extern List *PromCatalogLookup(const PromQuery *query, bool *named);
extern PromMetricEntry *PromCatalogFind(const char *metric);
extern char *PromQuotedRelationName(Oid relid);
extern Oid	PromExtensionNamespace(void);
extern int	PromCatalogLabelIndex(const PromMetricEntry *entry, const char *label);
extern void PromCatalogLockForWrite(void);
extern void PromCatalogStoreCreated(const char *metric, Oid relid,
									const char *time_column,
									const char *value_column,
									const char *const *labels, int nlabels);
extern void PromMetadataStore(const char *family, const char *type,
							  const char *help, const char *unit);

/*---- Arenas (arena.c) ----*/

typedef struct PromArena PromArena;

extern PromArena *PromArenaCreate(MemoryContext context);
extern void PromArenaExpect(PromArena *arena, Size bytes);
extern void *PromArenaAlloc(PromArena *arena, Size size);
extern bool PromArenaIsNewest(const PromArena *arena, const void *end);
extern bool PromArenaExtend(PromArena *arena, Size size);
extern bool PromArenaRewind(PromArena *arena, void *start);
extern void PromArenaFree(PromArena *arena, void *pointer, Size size);
extern bool PromArenaIsLarge(Size size);
extern Size PromArenaBytes(const PromArena *arena);

/*---- Enum labels (enum_cache.c) ----*/

/* The labels of one enum type. */
typedef struct PromEnumLabels
{
	Oid			type;
	int			nlabels;
	Oid		   *values;
	const char **labels;
	int		   *lens;
} PromEnumLabels;

extern const PromEnumLabels *PromEnumLabelsOf(Oid type);
extern const char *PromEnumLabel(Oid value, int *len);

/*---- Series sets (series_set.c, layout.c, group.c; samples.h) ----*/

/* A sample: its time in ms since the Unix epoch, its value. */
typedef struct PromSample
{
	int64		t;
	double		v;
} PromSample;

/* How the engine reads, compares and prints one label column. */
typedef enum PromLabelKind
{
	PROM_LABEL_TEXT,			/* text, varchar and their domains: bytes */
	PROM_LABEL_NAME,			/* name: NUL-padded bytes */
	PROM_LABEL_ENUM,			/* enum: compared by OID, printed once */
	PROM_LABEL_SCALAR,			/* other pass-by-value type: the Datum */
	PROM_LABEL_BINARY,			/* other by-reference type: its bytes */
	PROM_LABEL_CONST			/* a label with the same value on every row */
} PromLabelKind;

typedef struct PromSeriesSet PromSeriesSet;
typedef struct PromLayout PromLayout;
typedef struct PromSeries PromSeries;

/* The most labels a series has: a relation's columns and __name__. */
#define PROM_MAX_LABELS		(MaxTupleAttributeNumber + 1)

/* The most layouts a set has: a series names its layout in 16 bits. */
#define PROM_MAX_LAYOUTS	PG_UINT16_MAX

/* A label of a series as Prometheus sees it: name and value. */
typedef struct PromLabelRef
{
	const char *name;
	const char *value;
	int			name_len;
	int			value_len;
} PromLabelRef;

extern PromLabelKind PromLabelKindOf(Oid type);
extern PromSeriesSet *PromSeriesSetCreate(MemoryContext context);
extern PromLayout *PromSeriesSetAddLayout(PromSeriesSet *set, int ncolumns,
										  const char *const *names,
										  const PromLabelKind *kinds,
										  const Oid *types,
										  const char *const *const_values);
extern void PromLayoutExpectRows(PromSeriesSet *set, PromLayout *layout,
								 double rows);
extern void PromLayoutAddFilter(PromSeriesSet *set, PromLayout *layout,
								int column, const PromMatcher *matcher);
extern void PromSeriesSetAdd(PromSeriesSet *set, PromLayout *layout,
							 const Datum *values, const bool *isnull,
							 int64 t, double v);
extern void PromSeriesSetAddRun(PromSeriesSet *set, PromLayout *layout,
								const Datum *values, const bool *isnull,
								const PromSample *samples, int64 nsamples);
extern void PromSeriesSetFinish(PromSeriesSet *set);
extern void PromSeriesSetFree(PromSeriesSet *set);
extern Size PromSeriesSetArenaBytes(const PromSeriesSet *set);
extern PromSeries *const *PromSeriesSetSeriesSoFar(PromSeriesSet *set,
													int *count);
extern PromSeries *const *PromSeriesSetSeries(const PromSeriesSet *set,
											  int *count);
extern int64 PromSeriesSetSampleCount(const PromSeriesSet *set);
extern Size PromSeriesSetResultBytes(const PromSeriesSet *set);
extern int64 PromSeriesSampleCount(const PromSeries *series);
extern int	PromSeriesLabels(const PromSeriesSet *set, const PromSeries *series,
							 PromLabelRef *labels);
extern Size PromSeriesLabelsSize(const PromSeriesSet *set,
								 const PromSeries *series);
extern char *PromPutSeriesLabels(char *p, const PromSeriesSet *set,
								 const PromSeries *series);
extern void PromSeriesCopySamples(const PromSeries *series, void *dest);

/*---- Query execution (scan.c, label_values.c, query.c) ----*/

extern void PromScanInit(void);
extern void PromScanBeginCall(void);
extern void PromScanMetric(PromSeriesSet *set, const PromMetricEntry *entry,
						   const PromQuery *query, bool named);
extern List *PromExplainMetric(const PromMetricEntry *entry,
							   const PromQuery *query, bool named,
							   bool analyze);
extern Datum *PromReadLabelValues(Oid relid, const char *column,
								  const PromRegex *narrowing, int *nvalues);
extern bool PromLabelValuesWorthReading(Oid relid, AttrNumber attnum);
extern void PromQueryFromSelector(text *selector, TimestampTz start_time,
								  TimestampTz end_time, PromQuery *query);
extern PromSeriesSet *PromRunQuery(const PromQuery *query,
								   MemoryContext context);

/*---- Remote read (request.c, response.c, chunks.c, remote_read.c) ----*/

/* Response types; the numbers are those of ReadRequest.ResponseType. */
typedef enum PromResponseType
{
	PROM_RESPONSE_SAMPLES = 0,
	PROM_RESPONSE_STREAMED_XOR_CHUNKS = 1
} PromResponseType;

/* A decoded remote-read request. */
typedef struct PromReadRequest
{
	int			nqueries;
	PromQuery  *queries;
	PromResponseType response_type;
} PromReadRequest;

extern PromReadRequest *PromDecodeReadRequest(const char *body, Size len);
extern const char *PromResponseTypeName(int type);
extern void PromSetResponseHeaders(const char *headers_json);

/* Responses are written with the buffers of wire.h. */
struct PromSnappyWriter;
extern void PromWriteSamplesResult(struct PromSnappyWriter *writer,
								   const PromSeriesSet *set, bool last);
/* STREAMED_XOR_CHUNKS frames (chunks.c; read back by chunk_decode.h). */
struct PromBuffer;
extern void PromAppendChunkedResult(struct PromBuffer *buf,
									const PromSeriesSet *set,
									int64 query_index);
extern uint32 PromCrc32c(const char *data, Size len);

/*---- Remote write (write_request.c, remote_write.c, write_rows.c) ----*/

/* A label of a written series, its value borrowed from the request. */
typedef struct PromWriteLabel
{
	const char *name;			/* NUL-terminated */
	const char *value;			/* not NUL-terminated, never empty */
	int			value_len;
} PromWriteLabel;

/* A written series: its metric, other labels (sorted by name), samples. */
struct Prometheus__Sample;
typedef struct PromWriteSeries
{
	const char *metric;
	int			nlabels;
	PromWriteLabel *labels;
	int			nsamples;
	struct Prometheus__Sample **samples;
} PromWriteSeries;

/* The metadata of a metric family. */
typedef struct PromWriteMetadata
{
	const char *family;
	const char *type;			/* "counter", "gauge", ... */
	const char *help;
	const char *unit;
} PromWriteMetadata;

/* A decoded remote-write request. */
typedef struct PromWriteRequest
{
	int			nseries;
	PromWriteSeries *series;
	int			nmetadata;
	PromWriteMetadata *metadata;
	int64		nexemplars;
	int64		nhistograms;
} PromWriteRequest;

/* The series of one metric in a request, and the labels they carry. */
typedef struct PromWriteGroup
{
	const char *metric;
	PromWriteSeries **series;
	int			nseries;
	const char **labels;		/* distinct label names, sorted */
	int			nlabels;
} PromWriteGroup;

extern PromWriteRequest *PromDecodeWriteRequest(const char *body, Size len);
extern void PromWriteGroupRows(const PromWriteGroup *group,
							   const PromMetricEntry *entry);

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

/*-------------------------------------------------------------------------
 *
 * promread.h
 *	  Shared declarations of the promread extension: matchers, the metric
 *	  catalog, the executor scan and the series grouping engine.
 *
 * The pieces fit together like this.  A query (a PromQL selector or one
 * query of a remote-read request) is a time range and a list of label
 * matchers (matcher.c, selector.c).  The __name__ matchers pick entries of
 * the metric catalog (catalog.c); each picked relation is read through the
 * executor with the other matchers turned into SQL predicates (scan.c,
 * query.c).  Every row goes straight into a SeriesSet (group.c), which
 * groups rows into series without copying per row.  The finished set is
 * sorted, and the SQL entry points turn it into rows or into a response.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PROMREAD_H
#define PROMREAD_H

#include "postgres.h"

#include <time.h>

#include "access/htup_details.h"
#include "datatype/timestamp.h"
#include "fmgr.h"
#include "nodes/pg_list.h"
#include "prom_regex.h"
#include "utils/hsearch.h"

/*---- GUC variables (promread.c) ----*/

extern int	promread_max_samples;
extern int	promread_max_request_bytes;
extern int	promread_max_frame_bytes;
extern bool promread_report_phases;
extern int	promread_keep_memory;
extern int	promread_max_memory;

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
} PromMetricEntry;

extern List *PromCatalogLookup(const PromQuery *query, bool *named);

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

/*---- Series grouping engine (group.c) ----*/

/* Samples are (time, value) pairs; time in ms since the Unix epoch. */
typedef struct PromSample
{
	int64		t;
	double		v;
} PromSample;

/*
 * A sample as a block stores it, in 12 bytes rather than 16: its time as a
 * signed offset in ms from the block's base, its value's bytes (unaligned,
 * read by memcpy).
 */
typedef struct PromStoredSample
{
	int32		dt;
	char		value[sizeof(double)];
} PromStoredSample;

/*
 * A run of samples of one series; a series owns a chain of them.  A block
 * points at its count: what it may have of its own lies before that.  Every
 * sample of a block lies within an int32 of milliseconds (24.8 days) of its
 * base, counted modulo 2^64 so that no time overflows.
 *
 * A series' first block, its head, is made with it (PromSeriesHead), its
 * base before it.  The others are chained as it grows, each with its base
 * and, before that, a link (PromBlockLinked).  The series points to its last
 * block; the last block's link is the first chained block, and every other
 * chained block's the one after it.  So the head needs no link: most series
 * have only their head, and each saves a pointer.
 *
 * A series' second block may instead continue its head (PromSeries.continued):
 * without a link or a base, its samples offsets from the head's base, 8
 * bytes of header rather than 24.  It is made for the rest of a series'
 * share of the rows its source expects (group.c), so it is meant to be the
 * last; should a block have to follow it, or its samples be rebased, it is
 * first given a chained block of its own (PromSeriesEndContinuation).  So a
 * block's base is read through the series (PromBlockBase), and
 * PromSeriesNextBlock walks the blocks in order.
 */
typedef struct PromSampleBlock
{
	uint32		count;
	uint32		capacity;
	PromStoredSample samples[FLEXIBLE_ARRAY_MEMBER];
} PromSampleBlock;

/* The time of sample i of a block of the given base. */
static inline int64
PromBlockTime(const PromSampleBlock *block, int64 base, uint32 i)
{
	return (int64) ((uint64) base + (uint64) (int64) block->samples[i].dt);
}

/* Sample i of a block of the given base. */
static inline PromSample
PromBlockSample(const PromSampleBlock *block, int64 base, uint32 i)
{
	PromSample	sample;

	sample.t = PromBlockTime(block, base, i);
	memcpy(&sample.v, block->samples[i].value, sizeof(double));
	return sample;
}

/* Can a block of this base hold a sample of time t? */
static inline bool
PromBaseHolds(int64 base, int64 t)
{
	return (uint64) t - (uint64) base + (UINT64CONST(1) << 31) <
		(UINT64CONST(1) << 32);
}

/* Store a sample at place i of a block whose base can hold its time. */
static inline void
PromBlockStore(PromSampleBlock *block, int64 base, uint32 i, int64 t, double v)
{
	Assert(PromBaseHolds(base, t));
	block->samples[i].dt = (int32) (uint32) ((uint64) t - (uint64) base);
	memcpy(block->samples[i].value, &v, sizeof(double));
}

/* The base before a block that has one (not a continuation). */
static inline int64 *
PromBlockOwnBase(const PromSampleBlock *block)
{
	return (int64 *) ((char *) unconstify(PromSampleBlock *, block) - sizeof(int64));
}

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

typedef struct PromLayout PromLayout;
typedef struct PromLabelValue PromLabelValue;

/* The most labels a series has: a relation's columns and __name__. */
#define PROM_MAX_LABELS		(MaxTupleAttributeNumber + 1)

/* A label of a series as Prometheus sees it: name and value. */
typedef struct PromLabelRef
{
	const char *name;
	const char *value;
	int			name_len;
	int			value_len;
} PromLabelRef;

/*
 * One series: its label values (one per column of its layout read from
 * rows, in the layout's order of such columns, each a distinct value shared
 * by the series that have it; its CONST columns' values are the layout's),
 * its samples in blocks.  Its header is 24 bytes: its layout is named by its
 * number in the set (series_layout, series_set.h), not by a pointer.
 */
typedef struct PromSeries
{
	PromSampleBlock *tail;		/* its last block */
	int32		nsamples;		/* at most promread.max_samples */
	uint32		message_bytes;	/* its TimeSeries message in a SAMPLES
								 * response: its labels, and its samples
								 * added up as they arrive; from
								 * PROM_MESSAGE_BYTES_MAX on, only that it
								 * is too large for a response */
	uint32		successor;		/* the series that followed it last: 1 +
								 * its place in the set's series while rows
								 * are added (creation order); 0: none */
	uint16		layout;			/* its layout's number in its set */
	uint16		nvalues:14;		/* its label values: its layout's columns
								 * read from rows, kept here so that its
								 * first block is found without its layout */
	uint16		needs_sort:1;	/* samples out of time order (it is in its
								 * set's list of series to sort) */
	uint16		continued:1;	/* its last block continues its head (see
								 * PromSampleBlock) */
	PromLabelValue *values[FLEXIBLE_ARRAY_MEMBER];
	/* then its first block, PromSeriesHead */
} PromSeries;

StaticAssertDecl(PROM_MAX_LABELS < (1 << 14),
				 "PromSeries.nvalues cannot count a series' labels");

/* The most layouts a set has: PromSeries.layout numbers them. */
#define PROM_MAX_LAYOUTS	PG_UINT16_MAX

/*
 * The message size a series counts to: a SAMPLES response holds at most 4 GB
 * uncompressed, and a message at least this large is refused.  Rows add to a
 * series' count between two checks at most 1024 samples (a block's room),
 * 22 bytes each, so the count stays far from overflowing.
 */
#define PROM_MESSAGE_BYTES_MAX	(PG_UINT32_MAX - (1 << 20))

/* The first of a series' blocks, made with it after its values and base. */
static inline PromSampleBlock *
PromSeriesHead(const PromSeries *series)
{
	return (PromSampleBlock *) ((char *) &series->values[series->nvalues] +
								sizeof(int64));
}

/* The base of a block of a series: its own, or its head's (a continuation). */
static inline int64
PromBlockBase(const PromSeries *series, const PromSampleBlock *block)
{
	if (series->continued && block == series->tail)
		block = PromSeriesHead(series);
	return *PromBlockOwnBase(block);
}

/* The link before a chained block's base (see PromSampleBlock). */
static inline PromSampleBlock **
PromBlockLink(const PromSampleBlock *block)
{
	return (PromSampleBlock **) ((char *) PromBlockOwnBase(block) -
								 sizeof(PromSampleBlock *));
}

/* The block a chained block's link points to. */
static inline PromSampleBlock *
PromBlockLinked(const PromSampleBlock *block)
{
	return *PromBlockLink(block);
}

/* The block of a series after the given one; NULL after the last. */
static inline PromSampleBlock *
PromSeriesNextBlock(const PromSeries *series, const PromSampleBlock *block)
{
	if (block == series->tail)
		return NULL;
	if (block == PromSeriesHead(series))
		return series->continued ? series->tail : PromBlockLinked(series->tail);
	return PromBlockLinked(block);
}

/*
 * A finished set's series are read in label order, not in the order of their
 * memory, so each would be a few cache misses.  While series i is read,
 * PromPrefetchSeries asks for the series PROM_SERIES_AHEAD places on (its
 * header and what was allocated after it: its first sample block, then its
 * new label values); its header having arrived by then, for the first sample
 * block of the series PROM_BLOCK_AHEAD places on (four lines: a block of ten
 * samples, however it falls across lines; with three, a series whose block
 * ended just past the third line paid a miss, and series of one size all
 * fell alike); and, that series' header having arrived, for the last block
 * of the series PROM_NEXT_BLOCK_AHEAD places on when it has more than its
 * head (series that interleave have a second and last block elsewhere).
 * GCC takes a function that only prefetches for one without effects and
 * drops its calls unless it is inlined first, hence always_inline; and it
 * drops a loop that only prefetches, hence the lines one by one.
 */
#define PROM_SERIES_AHEAD	8
#define PROM_BLOCK_AHEAD	4
#define PROM_NEXT_BLOCK_AHEAD	2
#define PROM_CACHE_LINE		64

/* Ask for the four cache lines from an address. */
static pg_attribute_always_inline void
PromPrefetchFourLines(const void *address)
{
	const char *p = (const char *) address;

	__builtin_prefetch(p);
	__builtin_prefetch(p + PROM_CACHE_LINE);
	__builtin_prefetch(p + 2 * PROM_CACHE_LINE);
	__builtin_prefetch(p + 3 * PROM_CACHE_LINE);
}

static pg_attribute_always_inline void
PromPrefetchSeries(PromSeries *const *series, int i, int nseries)
{
	if (i + PROM_SERIES_AHEAD < nseries)
		PromPrefetchFourLines(series[i + PROM_SERIES_AHEAD]);
	if (i + PROM_BLOCK_AHEAD < nseries)
	{
		const PromSeries *ahead = series[i + PROM_BLOCK_AHEAD];

		/* the head's base lies before it */
		PromPrefetchFourLines(PromBlockOwnBase(PromSeriesHead(ahead)));
	}
	if (i + PROM_NEXT_BLOCK_AHEAD < nseries)
	{
		const PromSeries *ahead = series[i + PROM_NEXT_BLOCK_AHEAD];

		if (ahead->tail != PromSeriesHead(ahead))
		{
			/* a chained block begins at its link, a continuation at its count */
			const char *start = ahead->continued ? (const char *) ahead->tail :
				(const char *) PromBlockLink(ahead->tail);

			__builtin_prefetch(start);
			__builtin_prefetch(start + PROM_CACHE_LINE);
		}
	}
}

/*
 * The samples of a block are read in order, but the hardware's prefetcher
 * does not run ahead of them far enough: while sample i is read, the one
 * PROM_SAMPLES_AHEAD places on is asked for, within the block (past its end
 * is another series' memory).  The start of the next block is asked for when
 * a block is begun.
 */
#define PROM_SAMPLES_AHEAD	32

static pg_attribute_always_inline void
PromPrefetchSamples(const PromStoredSample *samples, uint32 i, uint32 count)
{
	if (i + PROM_SAMPLES_AHEAD < count)
		__builtin_prefetch(&samples[i + PROM_SAMPLES_AHEAD]);
}

static pg_attribute_always_inline void
PromPrefetchNextBlock(const PromSeries *series, const PromSampleBlock *block)
{
	const PromSampleBlock *next = PromSeriesNextBlock(series, block);

	if (next != NULL)
		PromPrefetchFourLines(next);
}

typedef struct PromSeriesSet PromSeriesSet;

extern PromSeriesSet *PromSeriesSetCreate(MemoryContext context);
extern PromLayout *PromLayoutCreate(PromSeriesSet *set, int ncolumns,
									const char *const *names,
									const PromLabelKind *kinds,
									const Oid *types,
									const char *const *const_values);
extern void PromLayoutExpectRows(PromSeriesSet *set, PromLayout *layout,
								 double rows);
extern void PromSeriesSetAdd(PromSeriesSet *set, PromLayout *layout,
							 const Datum *values, const bool *isnull,
							 int64 t, double v);
extern void PromSeriesSetFinish(PromSeriesSet *set);
extern void PromSeriesSetFree(PromSeriesSet *set);
extern Size PromSeriesSetArenaBytes(const PromSeriesSet *set);
extern PromSeries *const *PromSeriesSetSeriesSoFar(PromSeriesSet *set,
													int *count);
extern PromSeries *const *PromSeriesSetSeries(const PromSeriesSet *set,
											  int *count);
extern int64 PromSeriesSetSampleCount(const PromSeriesSet *set);
extern Size PromSeriesSetResultBytes(const PromSeriesSet *set);
extern int	PromSeriesLabels(const PromSeriesSet *set, const PromSeries *series,
							 PromLabelRef *labels);
extern Size PromSeriesLabelsSize(const PromSeriesSet *set,
								 const PromSeries *series);
extern char *PromPutSeriesLabels(char *p, const PromSeriesSet *set,
								 const PromSeries *series);
extern void PromSeriesCopySamples(const PromSeries *series, void *dest);

/*---- Query execution (scan.c, query.c) ----*/

extern void PromScanInit(void);
extern void PromScanBeginCall(void);
extern void PromScanMetric(PromSeriesSet *set, const PromMetricEntry *entry,
						   const PromQuery *query, bool named);
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
/* STREAMED_XOR_CHUNKS frames, and their decoding (chunks.c). */
struct PromBuffer;
extern void PromAppendChunkedResult(struct PromBuffer *buf,
									const PromSeriesSet *set,
									int64 query_index);
extern uint32 PromCrc32c(const char *data, Size len);
extern const char *PromXorChunkDecode(const char *data, Size len,
									  PromSample **samples, int *nsamples);

/*---- Phase reports (phases.c) ----*/

typedef enum PromPhase
{
	PROM_PHASE_DECODE,
	PROM_PHASE_PLAN,
	PROM_PHASE_SCAN,			/* the executor alone */
	PROM_PHASE_GROUP,			/* what grouping adds to the executor */
	PROM_PHASE_SORT,
	PROM_PHASE_ENCODE,
	PROM_PHASE_COMPRESS,
	PROM_NPHASES
} PromPhase;

/* The report of the current call. */
typedef struct PromPhaseReport
{
	bool		active;
	uint64		start_ns;
	uint64		start_ticks;
	uint64		ticks[PROM_NPHASES];
	int64		rows;
	int64		series;
	int64		samples;
	int64		bytes;
	int64		compressed;
	Size		memory;
	int64		continuations;	/* blocks made to continue their head */
	int64		continuations_ended;	/* of those, given a chained block */
	int64		after_runs;		/* series made after a run of rows,
								 * without a lookup */
	int64		merged;			/* series merged into one of the same
								 * label set by the sort */
} PromPhaseReport;

extern PromPhaseReport PromPhases;

extern void PromPhasesStart(void);
extern void PromPhasesMemory(Size bytes);
extern void PromPhasesScanned(uint64 with_grouping, uint64 alone);
extern void PromPhasesFinish(void);

/*
 * A cheap timestamp in ticks: the time-stamp counter, else nanoseconds.  The
 * counter is read between fences, after the instructions before it have
 * completed and before those after it begin, so that a phase's
 * instructions are counted in it and not in the next.
 */
static inline uint64
PromTicks(void)
{
#if defined(__x86_64__) && defined(__GNUC__)
	uint64		ticks;

	__builtin_ia32_lfence();
	ticks = __builtin_ia32_rdtsc();
	__builtin_ia32_lfence();
	return ticks;
#else
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64) ts.tv_sec * 1000000000 + ts.tv_nsec;
#endif
}

/* Start timing a phase; 0 when no report is being made. */
static inline uint64
PromPhaseBegin(void)
{
	return unlikely(PromPhases.active) ? PromTicks() : 0;
}

/* Add the time since PromPhaseBegin to a phase. */
static inline void
PromPhaseEnd(PromPhase phase, uint64 begin)
{
	if (unlikely(PromPhases.active))
		PromPhases.ticks[phase] += PromTicks() - begin;
}

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

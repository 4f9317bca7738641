/*-------------------------------------------------------------------------
 *
 * remote_write.h
 *	  Remote write's types: a decoded write request (decoded by
 *	  protocol/write_request.c), the series of one metric (grouped by
 *	  remote_write.c, written by write_rows.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef PROMREAD_REMOTE_WRITE_H
#define PROMREAD_REMOTE_WRITE_H

#include "promread.h"
#include "fmgr.h"
#include "histogram/histogram.h"
#include "lib/stringinfo.h"
#include "nodes/pg_list.h"
#include "port/pg_bswap.h"
#include "utils/relcache.h"

/* A label of a written series, its value borrowed from the request. */
typedef struct PromWriteLabel
{
	const char *name;			/* NUL-terminated */
	const char *value;			/* not NUL-terminated, never empty */
	int			value_len;
} PromWriteLabel;

/* A native histogram sample: its time (ms) and the checked value. */
typedef struct PromWriteHistogram
{
	int64		timestamp;
	PromHistogram *value;
} PromWriteHistogram;

/*
 * An exemplar of a series: time (ms), value, and its own labels as the
 * request gave them (names and values borrowed, neither NUL-terminated).
 */
typedef struct PromWriteExemplar
{
	int64		timestamp;
	double		value;
	int			nlabels;
	PromWriteLabel *labels;		/* name NUL-terminated, as a series' */
} PromWriteExemplar;

/*
 * A written series: its metric, other labels (sorted by name), float
 * samples, native histograms and the exemplars kept of those it carried.
 */
struct Prometheus__Sample;
typedef struct PromWriteSeries
{
	const char *metric;
	int			nlabels;
	PromWriteLabel *labels;
	int			nsamples;
	struct Prometheus__Sample **samples;
	int			nhistograms;
	PromWriteHistogram *histograms;
	int			nexemplars;
	PromWriteExemplar *exemplars;
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
	int64		nexemplars_invalid;	/* exemplars dropped as Prometheus would */
	int64		nstart_timestamps;	/* start timestamps dropped (2.0) */
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

/* How many samples a group's series carry. */
static inline int64
PromWriteGroupSamples(const PromWriteGroup *group)
{
	int64		nsamples = 0;
	int			i;

	for (i = 0; i < group->nseries; i++)
		nsamples += group->series[i]->nsamples;
	return nsamples;
}

/* How many native histograms a group's series carry. */
static inline int64
PromWriteGroupHistograms(const PromWriteGroup *group)
{
	int64		nhistograms = 0;
	int			i;

	for (i = 0; i < group->nseries; i++)
		nhistograms += group->series[i]->nhistograms;
	return nhistograms;
}

/*
 * The rows a series gives: its float samples, or its histograms and then
 * its float samples, staleness markers all, as stale histograms.
 */
static inline int
PromWriteSeriesRows(const PromWriteSeries *series, bool histograms)
{
	return histograms ? series->nhistograms + series->nsamples : series->nsamples;
}

/* Start a stream of COPY's binary format: its signature, flags, extension. */
static inline void
PromCopyAppendHeader(StringInfo out)
{
	static const char header[] = "PGCOPY\n\377\r\n\0\0\0\0\0\0\0\0\0";

	appendBinaryStringInfo(out, header, sizeof(header) - 1);
}

/* Append a field of COPY's binary format: its length, then its bytes. */
static inline void
PromCopyAppendField(StringInfo out, const void *data, int len)
{
	uint32		be_len = pg_hton32((uint32) len);

	appendBinaryStringInfoNT(out, (const char *) &be_len, 4);
	appendBinaryStringInfoNT(out, (const char *) data, len);
}

/* End a stream of COPY's binary format. */
static inline void
PromCopyAppendTrailer(StringInfo out)
{
	uint16		trailer = 0xFFFF;

	appendBinaryStringInfo(out, (const char *) &trailer, 2);
}

/* How the values of a metric's rows are written in COPY's binary format. */
typedef struct PromCopyValues
{
	bool		histograms;		/* prom_histogram values */
	FmgrInfo	send;			/* prom_histogram's send function */
	PromHistogram *stale;		/* a float staleness marker as a histogram */
} PromCopyValues;

/* in write_tables.c: the label columns of a new metric's relations */
typedef struct PromLabelColumns
{
	const char **columns;		/* their names */
	const char **labels;		/* the label each holds */
	int			ncolumns;
	const char *overflow;		/* the jsonb column of other labels, or NULL */
} PromLabelColumns;

extern char *PromCreatedRelationName(const char *metric, const char *suffix);
extern void PromRunDDL(const char *sql);
extern void PromAppendLabelColumns(StringInfo sql, const PromLabelColumns *chosen);
extern void PromCreateLabelIndexes(const char *qualified,
								   const PromLabelColumns *chosen,
								   const char *more_columns);
extern void PromCheckNewRelation(const char *metric, Oid nspid,
								 const char *name, bool for_write);
extern PromMetricEntry *PromCreateMetricStart(const char *metric, Oid nspid,
											  const char *const *labels,
											  int nlabels, bool for_write,
											  PromLabelColumns *chosen);
extern PromMetricEntry *PromCreateRowMetric(const char *metric, Oid nspid,
											const char *const *labels,
											int nlabels, bool histograms,
											bool for_write);
extern PromMetricEntry *PromWriteCreateMetric(const char *metric,
											  const char *const *labels,
											  int nlabels, bool histograms);
/* Told the columns just added to a metric's table (PromAddLabelColumns). */
typedef void (*PromNewColumnsFn) (void *arg, const char *const *columns,
								  int ncolumns);
extern PromMetricEntry *PromAddLabelColumns(const PromMetricEntry *entry,
											Oid table,
											const char *const *labels,
											int nlabels, PromNewColumnsFn added,
											void *arg);
extern PromMetricEntry *PromWriteAddLabelColumns(const PromMetricEntry *entry,
												 const char *const *labels,
												 int nlabels);

/* in write_rows.c */
extern bool PromWriteGroupRows(const PromWriteGroup *group,
							   const PromMetricEntry *entry);
extern bool PromWriteGroupSamplesStale(const PromWriteGroup *group);
extern int64 PromWriteTimestamp(int64 ms, const char *metric);
extern bool PromWriteSameRegistration(const PromMetricEntry *before,
									  const PromMetricEntry *now);
extern int64 PromWriteCheckValueKind(const PromWriteGroup *group, const char *metric,
									 const char *value_column, bool histograms);
extern int64 PromWriteSeriesTime(const PromWriteSeries *series, int s,
								 bool histograms);
extern double PromWriteSeriesValue(const PromWriteSeries *series, int s);
extern void PromCopyValuesInit(PromCopyValues *values, bool histograms);
extern void PromCopyAppendValue(StringInfo out, PromCopyValues *values,
								const PromWriteSeries *series, int s);
extern void PromWriteCopy(Relation rel, List *attnames, const StringInfoData *stream);
extern void PromCheckInsertPrivileges(Relation rel, List *attnames);

/*---- Chunk storage's tables (write_chunks.c, write_head.c) ----*/

/* The columns of m#series and m#head besides the labels. */
#define SERIES_ID_COLUMN		"series_id"
#define SERIES_HASH_COLUMN		"labels_hash"
#define HEAD_TIME_COLUMN		"t"
#define HEAD_VALUE_COLUMN		"value"

/* A head's window partitions, for routing rows to them (write_head.c). */
typedef struct PromHeadRouting
{
	bool		routed;			/* the partitions are windows and the default */
	struct PromHeadWindow *windows; /* PromHeadWindows */
	int			nwindows;
	Oid			default_partition;
} PromHeadRouting;

extern int64 PromWriteLockWindows(const PromWriteGroup *group, const PromMetricEntry *entry,
								  const PromMetricEntry *trust, bool histograms,
								  Relation head_rel, PromHeadRouting *routing);
extern void PromWriteHead(const PromWriteGroup *group, const int64 *series_ids,
						  const char *metric, bool histograms, Relation head_rel,
						  Relation late_rel, int64 compacted_before,
						  const PromHeadRouting *routing);

/* in remote_write.c */
extern PromMetricEntry *PromWriteGroupEntry(const PromWriteGroup *group);

/* in write_chunks.c */
struct PromStorageEntry;
extern bool PromWriteGroupChunks(const PromWriteGroup *group,
								 const PromMetricEntry *entry,
								 const struct PromStorageEntry *storage);

/* in write_exemplars.c */
extern int64 PromWriteGroupExemplars(const PromWriteGroup *group,
									 const PromMetricEntry *entry);

/* in write_trust.c */
extern void PromCheckWriteTrusted(Relation rel, const PromMetricEntry *entry);
extern void PromCheckWriteTrustedPartitions(Relation rel, const Oid *partitions,
											int npartitions,
											const PromMetricEntry *entry);

/* in series_cache.c */
extern bool PromSeriesCacheUsable(Relation series_rel);
extern bool PromSeriesCacheFind(Oid relid, uint64 hash, const char *labels, int len,
								int64 *series_id);
extern void PromSeriesCacheRemember(Oid relid, uint64 hash, const char *labels, int len,
									int64 series_id);

#endif							/* PROMREAD_REMOTE_WRITE_H */

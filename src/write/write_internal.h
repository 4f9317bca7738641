/*-------------------------------------------------------------------------
 *
 * write_internal.h
 *	  What the files of remote write's folder share: a group's rows in
 *	  COPY's binary format, writing rows (write_rows.c), chunk storage's
 *	  head (write_chunks.c, write_head.c), exemplars, whose code a writer
 *	  may run (write_trust.c) and the series ids a backend keeps
 *	  (series_cache.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef PROMREAD_WRITE_INTERNAL_H
#define PROMREAD_WRITE_INTERNAL_H

#include "write.h"
#include "write_tables.h"
#include "fmgr.h"
#include "lib/stringinfo.h"
#include "nodes/pg_list.h"
#include "port/pg_bswap.h"
#include "utils/relcache.h"

/*
 * How many values a group's series carry: native histograms when
 * histograms is true, float samples otherwise.
 */
static inline int64
PromWriteGroupValues(const PromWriteGroup *group, bool histograms)
{
	int64		nvalues = 0;
	int			i;

	for (i = 0; i < group->nseries; i++)
		nvalues += histograms ? group->series[i]->nhistograms : group->series[i]->nsamples;
	return nvalues;
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

#endif							/* PROMREAD_WRITE_INTERNAL_H */

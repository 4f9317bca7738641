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
#include "utils/relcache.h"

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

/* in write_rows.c */
extern bool PromWriteGroupRows(const PromWriteGroup *group,
							   const PromMetricEntry *entry);

/* in write_trust.c */
extern void PromCheckWriteTrusted(Relation rel, const PromMetricEntry *entry);

#endif							/* PROMREAD_REMOTE_WRITE_H */

/*-------------------------------------------------------------------------
 *
 * write_request.h
 *	  A decoded remote-write request (decoded by protocol/write_request.c)
 *	  and the series of one metric in it (grouped and written by write/).
 *
 *-------------------------------------------------------------------------
 */
#ifndef PROMREAD_WRITE_REQUEST_H
#define PROMREAD_WRITE_REQUEST_H

#include "promread.h"
#include "histogram/histogram.h"

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

#endif							/* PROMREAD_WRITE_REQUEST_H */

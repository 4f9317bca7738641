/*-------------------------------------------------------------------------
 *
 * write_request.c
 *	  Remote-write requests: decoding and checking the WriteRequest that
 *	  Prometheus sends.
 *
 * A request is refused whole, before anything is written, when any part of
 * it is bad, with the SQLSTATE classes of reads: 22P03 when it does not
 * decode, 22021 for text that is not valid UTF-8 (or holds a NUL, which
 * PostgreSQL's text cannot), 22023 for invalid values (a series without a
 * metric name, an invalid metric or label name, a label named twice, a
 * metadata type out of range).  Every one of them is a class-22 code,
 * which PostgREST answers with 400: Prometheus drops a request answered
 * with a 4xx rather than retrying it for ever.  So is a request over
 * promread.max_request_bytes, refused before it is decompressed.
 *
 * Labels with an empty value are absent, as in Prometheus.  Label values are
 * borrowed from the decompressed request, which lives as long as the call.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "miscadmin.h"
#include "protocol.h"

/* Raise 22021 unless text of a request is valid UTF-8 without NUL bytes. */
static void
check_text(const char *s, size_t len, const char *what, int series)
{
	if (!PromIsValidUtf8(s, len) || memchr(s, '\0', len) != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_CHARACTER_NOT_IN_REPERTOIRE),
				 series >= 0 ?
				 errmsg("%s of series %d of the remote write request is not valid UTF-8",
						what, series) :
				 errmsg("%s of the remote write request is not valid UTF-8", what),
				 errdetail("Text must be valid UTF-8 without NUL bytes.")));
}

/* Raise 22023 for an invalid value of series i. */
static pg_attribute_noreturn() void
invalid_series(int i, const char *message, const char *detail)
{
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("series %d of the remote write request %s", i, message),
			 detail ? errdetail("%s", detail) : 0));
}

/* qsort comparator of labels by name. */
static int
label_name_cmp(const void *a, const void *b)
{
	return strcmp(((const PromWriteLabel *) a)->name,
				  ((const PromWriteLabel *) b)->name);
}

/* Check and convert series i of a request. */
static void
decode_series(const Prometheus__TimeSeries *msg, int i, PromWriteSeries *series)
{
	size_t		j;

	series->metric = NULL;
	series->nlabels = 0;
	series->labels = palloc(sizeof(PromWriteLabel) * Max(msg->n_labels, 1));
	for (j = 0; j < msg->n_labels; j++)
	{
		const Prometheus__Label *label = msg->labels[j];
		const char *name = wire_bytes(label->name);
		const char *value = wire_bytes(label->value);

		check_text(name, label->name.len, "a label name", i);
		check_text(value, label->value.len, "a label value", i);
		if (label->name.len == 8 && memcmp(name, "__name__", 8) == 0)
		{
			if (series->metric != NULL)
				invalid_series(i, "has the label \"__name__\" twice", NULL);
			if (!PromIsValidMetricName(value, label->value.len))
				invalid_series(i, "has an invalid metric name",
							   psprintf("\"%.*s\" does not match [a-zA-Z_:][a-zA-Z0-9_:]*.",
										(int) Min(label->value.len, 200), value));
			series->metric = pnstrdup(value, label->value.len);
			continue;
		}
		if (!PromIsValidLabelName(name, label->name.len))
			invalid_series(i, "has an invalid label name",
						   psprintf("\"%.*s\" does not match [a-zA-Z_][a-zA-Z0-9_]*.",
									(int) Min(label->name.len, 200), name));
		if (label->value.len == 0)
			continue;			/* an empty value is an absent label */
		series->labels[series->nlabels].name = pnstrdup(name, label->name.len);
		series->labels[series->nlabels].value = value;
		series->labels[series->nlabels].value_len = label->value.len;
		series->nlabels++;
	}
	if (series->metric == NULL)
		invalid_series(i, "has no metric name",
					   "Every series needs a non-empty label \"__name__\".");
	qsort(series->labels, series->nlabels, sizeof(PromWriteLabel), label_name_cmp);
	for (j = 1; j < (size_t) series->nlabels; j++)
		if (strcmp(series->labels[j - 1].name, series->labels[j].name) == 0)
			invalid_series(i, psprintf("has the label \"%s\" twice",
									   series->labels[j].name), NULL);
	series->nsamples = msg->n_samples;
	series->samples = msg->samples;
}

/* The name of a metadata type, as Prometheus's text formats write it. */
static const char *
metadata_type_name(int type)
{
	static const char *const names[] = {
		"unknown", "counter", "gauge", "histogram", "gaugehistogram",
		"summary", "info", "stateset"
	};

	if (type < 0 || type >= (int) lengthof(names))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("metadata of the remote write request has unrecognized type %d",
						type)));
	return names[type];
}

/* A NUL-terminated copy of checked metadata text. */
static const char *
metadata_text(ProtobufCBinaryData field, const char *what)
{
	check_text(wire_bytes(field), field.len, what, -1);
	return pnstrdup(wire_bytes(field), field.len);
}

/*
 * Decompress, decode and check a snappy-compressed WriteRequest, within
 * promread.max_request_bytes; allocated in a child of CurrentMemoryContext
 * whose bytes count toward promread.max_memory while it lives.  A request
 * that does not decode within it is 22023, as one over
 * promread.max_request_bytes is: retrying it cannot help, so the endpoint
 * answers 400 and Prometheus drops it instead of retrying forever.
 */
PromWriteRequest *
PromDecodeWriteRequest(const char *body, Size len)
{
	PromDecodeBudget *budget = PromDecodeBudgetCreate("remote write request");
	MemoryContext oldcxt = MemoryContextSwitchTo(budget->context);
	PromWriteRequest *request = palloc0(sizeof(PromWriteRequest));
	Prometheus__WriteRequest *msg;
	size_t		i;

	budget->sqlstate = ERRCODE_INVALID_PARAMETER_VALUE;
	msg = (Prometheus__WriteRequest *)
		PromUnpackRequest(body, len, &prometheus__write_request__descriptor,
						  "remote write request", ERRCODE_INVALID_PARAMETER_VALUE,
						  budget);

	PromDecodeBudgetCheck(budget, sizeof(PromWriteSeries) * msg->n_timeseries);
	request->nseries = msg->n_timeseries;
	request->series = palloc_extended(sizeof(PromWriteSeries) * Max(msg->n_timeseries, 1),
									  MCXT_ALLOC_HUGE);
	for (i = 0; i < msg->n_timeseries; i++)
	{
		const Prometheus__TimeSeries *ts = msg->timeseries[i];

		CHECK_FOR_INTERRUPTS();
		decode_series(ts, i, &request->series[i]);
		request->nexemplars += ts->n_exemplars;
		request->nhistograms += ts->n_histograms;
		PromDecodeBudgetCheck(budget, 0);
	}

	PromDecodeBudgetCheck(budget, sizeof(PromWriteMetadata) * msg->n_metadata);
	request->nmetadata = msg->n_metadata;
	request->metadata = palloc_extended(sizeof(PromWriteMetadata) * Max(msg->n_metadata, 1),
										MCXT_ALLOC_HUGE);
	for (i = 0; i < msg->n_metadata; i++)
	{
		const Prometheus__MetricMetadata *m = msg->metadata[i];
		PromWriteMetadata *out = &request->metadata[i];

		out->type = metadata_type_name(m->type);
		out->family = metadata_text(m->metric_family_name, "a metric family name");
		if (!PromIsValidMetricName(out->family, strlen(out->family)))
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("metadata of the remote write request has an invalid metric family name"),
					 errdetail("\"%.200s\" does not match [a-zA-Z_:][a-zA-Z0-9_:]*.",
							   out->family)));
		out->help = metadata_text(m->help, "a metric help text");
		out->unit = metadata_text(m->unit, "a metric unit");
		PromDecodeBudgetCheck(budget, 0);
	}
	PromDecodeBudgetHold(budget);
	MemoryContextSwitchTo(oldcxt);
	return request;
}

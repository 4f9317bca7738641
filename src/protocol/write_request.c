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
 * Native histograms become prom_histogram values, field for field: an
 * integer histogram (count_int, or no count at all, as prompb's
 * IsFloatHistogram decides) takes deltas and an integer zero count, a
 * float one (count_float) counts and a float zero count; one that carries
 * the other kind's fields is refused (22023), and so is one that
 * PromHistogramCheck finds invalid (spans that do not add up to the
 * buckets, a schema out of range).  Before a value is allocated, its sizes
 * are checked against promread.max_histogram_buckets and it is charged to
 * the decoding budget, so a request of millions of buckets fails cleanly
 * (22023) rather than exhausting memory.
 *
 * Exemplars are kept with their labels, except those that Prometheus's own
 * receiver would drop without failing the request: labels named twice,
 * invalid label names, or label names and values longer than 128 UTF-8
 * characters together (OpenMetrics' limit, exemplar.ExemplarMaxLabelSetLength).
 * They are counted in request->nexemplars_invalid.  Start timestamps (2.0's
 * Sample.start_timestamp and Histogram.start_timestamp, and the
 * created_timestamp of senders before Prometheus 3.8) are counted in
 * request->nstart_timestamps: promread does not store them.
 *
 * What a check found of a piece of text is kept in its TextState, so that
 * a 2.0 symbol is checked once however many references share it (else a
 * request of one 16 MB symbol and millions of references to it would scan
 * terabytes); a symbol that no reference uses is not checked at all.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "miscadmin.h"
#include "protocol.h"

/* The longest label set, in characters, that Prometheus keeps with an exemplar. */
#define EXEMPLAR_MAX_LABEL_SET_LENGTH	128

/*
 * What the checks found of a piece of text: a 2.0 symbol's is shared by
 * every reference to it, a 1.0 field's is its own.  A failed check that
 * refuses the request is not kept, as the request is gone.
 */
typedef struct TextState
{
	uint8		known;			/* TEXT_* bits */
	uint8		nchars;			/* with TEXT_COUNTED: its UTF-8 characters,
								 * at most EXEMPLAR_MAX_LABEL_SET_LENGTH + 1 */
} TextState;

#define TEXT_VALID			0x01	/* valid UTF-8 without NUL bytes */
#define TEXT_NAME_CHECKED	0x02	/* PromIsValidLabelName asked */
#define TEXT_NAME_VALID		0x04	/* ... and it said yes */
#define TEXT_METRIC_VALID	0x08	/* a valid metric name */
#define TEXT_COUNTED		0x10	/* nchars is set */

/* A piece of text of a request and what is known of it. */
typedef struct WireText
{
	const char *bytes;
	size_t		len;
	TextState  *state;
} WireText;

/* The WireText of a field, whose state is state. */
static inline WireText
wire_text(ProtobufCBinaryData field, TextState *state)
{
	WireText	t = {wire_bytes(field), field.len, state};

	return t;
}

/*
 * Raise 22021 unless text of a request is valid UTF-8 without NUL bytes;
 * series is the series it belongs to, or -1.  Checked once per state.
 */
static void
check_text(const WireText *t, const char *what, int series)
{
	if (t->state->known & TEXT_VALID)
		return;
	if (!PromIsValidUtf8(t->bytes, t->len) || memchr(t->bytes, '\0', t->len) != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_CHARACTER_NOT_IN_REPERTOIRE),
				 series >= 0 ?
				 errmsg("%s of series %d of the remote write request is not valid UTF-8",
						what, series) :
				 errmsg("%s of the remote write request is not valid UTF-8", what),
				 errdetail("Text must be valid UTF-8 without NUL bytes.")));
	t->state->known |= TEXT_VALID;
}

/* Is checked text a valid label name?  Asked once per state. */
static bool
is_label_name(const WireText *t)
{
	if (!(t->state->known & TEXT_NAME_CHECKED))
		t->state->known |= TEXT_NAME_CHECKED |
			(PromIsValidLabelName(t->bytes, t->len) ? TEXT_NAME_VALID : 0);
	return (t->state->known & TEXT_NAME_VALID) != 0;
}

/*
 * Is checked text a valid metric name?  Only a yes is kept: a no refuses
 * the request.
 */
static bool
is_metric_name(const WireText *t)
{
	if (!(t->state->known & TEXT_METRIC_VALID) &&
		PromIsValidMetricName(t->bytes, t->len))
		t->state->known |= TEXT_METRIC_VALID;
	return (t->state->known & TEXT_METRIC_VALID) != 0;
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

/*
 * The UTF-8 characters of valid UTF-8 text (its bytes but continuation
 * bytes), counted once per state and only up to one over the longest label
 * set of an exemplar: as many as any longer text, for that limit.
 */
static int
utf8_chars(const WireText *t)
{
	if (!(t->state->known & TEXT_COUNTED))
	{
		int			n = 0;
		size_t		i;

		for (i = 0; i < t->len && n <= EXEMPLAR_MAX_LABEL_SET_LENGTH; i++)
			n += ((unsigned char) t->bytes[i] & 0xC0) != 0x80;
		t->state->nchars = n;
		t->state->known |= TEXT_COUNTED;
	}
	return t->state->nchars;
}

/*
 * Check and convert an exemplar of series i: its npairs label pairs laid
 * out as decode_series takes them.  Text that is not UTF-8 refuses the
 * request, as a series' labels do (22021); an exemplar that Prometheus
 * would drop (see the header) returns false.  A pair's text is checked
 * before the length, so that an exemplar too long to keep whose text is
 * not UTF-8 still refuses the request; that costs a symbol one scan, and
 * counting its characters stops past the limit.
 */
static bool
decode_exemplar(const WireText *pairs, size_t npairs, double value,
				int64 timestamp, int i, PromWriteExemplar *out)
{
	int			length = 0;
	size_t		j;
	size_t		k;

	out->timestamp = timestamp;
	out->value = value;
	out->nlabels = 0;
	out->labels = palloc(sizeof(PromWriteLabel) * Max(npairs, 1));
	for (j = 0; j < npairs; j++)
	{
		const WireText *name = &pairs[2 * j];
		const WireText *label_value = &pairs[2 * j + 1];

		check_text(name, "an exemplar label name", i);
		check_text(label_value, "an exemplar label value", i);
		length += utf8_chars(name) + utf8_chars(label_value);
		if (length > EXEMPLAR_MAX_LABEL_SET_LENGTH || !is_label_name(name))
			return false;
		for (k = 0; k < j; k++)
			if (pairs[2 * k].len == name->len &&
				memcmp(pairs[2 * k].bytes, name->bytes, name->len) == 0)
				return false;
		out->labels[out->nlabels].name = pnstrdup(name->bytes, name->len);
		out->labels[out->nlabels].value = label_value->bytes;
		out->labels[out->nlabels].value_len = label_value->len;
		out->nlabels++;
	}
	return true;
}

/* Where a histogram is in the request, for the errors about it. */
typedef struct HistogramPlace
{
	int			series;
	int			histogram;
} HistogramPlace;

/* Error context callback: name the histogram being checked. */
static void
histogram_error_context(void *arg)
{
	HistogramPlace *place = arg;

	errcontext("histogram %d of series %d of the remote write request",
			   place->histogram, place->series);
}

/* Raise 22023 for histogram j of series i. */
static pg_attribute_noreturn() void
invalid_histogram(int i, int j, const char *message)
{
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("histogram %d of series %d of the remote write request %s",
					j, i, message)));
}

/* Copy a message's spans into a value's. */
static void
copy_spans(Prometheus__BucketSpan *const *from, size_t n, PromBucketSpan *to)
{
	size_t		k;

	for (k = 0; k < n; k++)
	{
		to[k].offset = from[k]->offset;
		to[k].length = from[k]->length;
	}
}

/*
 * Convert and check histogram j of series i into a prom_histogram value,
 * charged to the budget before it is allocated (see the header).
 */
static PromHistogram *
decode_histogram(const Prometheus__Histogram *msg, int i, int j,
				 PromDecodeBudget *budget)
{
	bool		is_float = msg->count_case == PROMETHEUS__HISTOGRAM__COUNT_COUNT_FLOAT;
	size_t		npositive = is_float ? msg->n_positive_counts : msg->n_positive_deltas;
	size_t		nnegative = is_float ? msg->n_negative_counts : msg->n_negative_deltas;
	PromHistogram *h;
	HistogramPlace place = {i, j};
	ErrorContextCallback context;
	size_t		k;

	if (is_float ?
		(msg->n_positive_deltas > 0 || msg->n_negative_deltas > 0 ||
		 msg->zero_count_case == PROMETHEUS__HISTOGRAM__ZERO_COUNT_ZERO_COUNT_INT) :
		(msg->n_positive_counts > 0 || msg->n_negative_counts > 0 ||
		 msg->zero_count_case == PROMETHEUS__HISTOGRAM__ZERO_COUNT_ZERO_COUNT_FLOAT))
		invalid_histogram(i, j, is_float ?
						  "is a float histogram with integer deltas or zero count" :
						  "is an integer histogram with float counts or zero count");
	if (msg->schema != PROM_SCHEMA_CUSTOM &&
		(msg->schema < PROM_SCHEMA_MIN || msg->schema > PROM_SCHEMA_MAX))
		invalid_histogram(i, j, psprintf("has schema %d, neither from %d to %d nor %d",
										 msg->schema, PROM_SCHEMA_MIN,
										 PROM_SCHEMA_MAX, PROM_SCHEMA_CUSTOM));
	if ((int) msg->reset_hint < PROM_RESET_UNKNOWN || (int) msg->reset_hint > PROM_RESET_GAUGE)
		invalid_histogram(i, j, psprintf("has counter reset hint %d, not one of 0 to 3",
										 (int) msg->reset_hint));
	if (msg->n_positive_spans > PG_UINT32_MAX || msg->n_negative_spans > PG_UINT32_MAX ||
		npositive > PG_UINT32_MAX || nnegative > PG_UINT32_MAX ||
		msg->n_custom_values > PG_UINT32_MAX)
		invalid_histogram(i, j, "has too many buckets");

	context.callback = histogram_error_context;
	context.arg = &place;
	context.previous = error_context_stack;
	error_context_stack = &context;
	PromHistogramCheckSizes(msg->n_positive_spans, msg->n_negative_spans,
							npositive, nnegative, msg->n_custom_values);
	PromDecodeBudgetCheck(budget, PromHistogramSize(msg->n_positive_spans,
													msg->n_negative_spans,
													npositive, nnegative,
													msg->n_custom_values));
	h = PromHistogramAllocate(msg->n_positive_spans, msg->n_negative_spans,
							  npositive, nnegative, msg->n_custom_values);
	h->kind = is_float ? PROM_HISTOGRAM_FLOAT : PROM_HISTOGRAM_INTEGER;
	h->reset_hint = msg->reset_hint;
	h->schema = msg->schema;
	h->zero_threshold = msg->zero_threshold;
	h->sum = msg->sum;
	if (is_float)
	{
		h->count.value = msg->count_float;
		h->zero_count.value = msg->zero_count_case == PROMETHEUS__HISTOGRAM__ZERO_COUNT__NOT_SET ?
			0 : msg->zero_count_float;
		for (k = 0; k < npositive; k++)
			PromHistogramPositiveBuckets(h)[k].count = msg->positive_counts[k];
		for (k = 0; k < nnegative; k++)
			PromHistogramNegativeBuckets(h)[k].count = msg->negative_counts[k];
	}
	else
	{
		h->count.integer = msg->count_case == PROMETHEUS__HISTOGRAM__COUNT__NOT_SET ?
			0 : msg->count_int;
		h->zero_count.integer = msg->zero_count_case == PROMETHEUS__HISTOGRAM__ZERO_COUNT__NOT_SET ?
			0 : msg->zero_count_int;
		for (k = 0; k < npositive; k++)
			PromHistogramPositiveBuckets(h)[k].delta = msg->positive_deltas[k];
		for (k = 0; k < nnegative; k++)
			PromHistogramNegativeBuckets(h)[k].delta = msg->negative_deltas[k];
	}
	copy_spans(msg->positive_spans, msg->n_positive_spans, PromHistogramPositiveSpans(h));
	copy_spans(msg->negative_spans, msg->n_negative_spans, PromHistogramNegativeSpans(h));
	if (msg->n_custom_values > 0)
		memcpy(PromHistogramCustomValues(h), msg->custom_values,
			   sizeof(double) * msg->n_custom_values);

	PromHistogramCheck(h);
	error_context_stack = context.previous;
	return h;
}

/*
 * Convert the histograms of series i, whose messages are msgs[0, n), and
 * count their start timestamps.
 */
static void
decode_histograms(Prometheus__Histogram *const *msgs, size_t n, int i,
				  PromWriteSeries *series, PromWriteRequest *request,
				  PromDecodeBudget *budget)
{
	size_t		j;

	PromDecodeBudgetCheck(budget, sizeof(PromWriteHistogram) * n);
	series->nhistograms = n;
	series->histograms = palloc_extended(sizeof(PromWriteHistogram) * Max(n, 1),
										 MCXT_ALLOC_HUGE);
	for (j = 0; j < n; j++)
	{
		CHECK_FOR_INTERRUPTS();
		series->histograms[j].timestamp = msgs[j]->timestamp;
		series->histograms[j].value = decode_histogram(msgs[j], i, j, budget);
		request->nstart_timestamps += msgs[j]->start_timestamp != 0;
	}
}

/* Count the start timestamps of a series' samples (2.0 only sets them). */
static void
count_start_timestamps(Prometheus__Sample *const *samples, size_t n,
					   PromWriteRequest *request)
{
	size_t		j;

	for (j = 0; j < n; j++)
		request->nstart_timestamps += samples[j]->start_timestamp != 0;
}

/*
 * Check and convert the labels of series i of a request: npairs pairs of a
 * name and a value, pairs[2k] and pairs[2k + 1], as 1.0's Label messages
 * and 2.0's symbol references both resolve to.
 */
static void
decode_series(const WireText *pairs, size_t npairs, int i,
			  PromWriteSeries *series)
{
	size_t		j;

	series->metric = NULL;
	series->nlabels = 0;
	series->labels = palloc(sizeof(PromWriteLabel) * Max(npairs, 1));
	for (j = 0; j < npairs; j++)
	{
		const WireText *name = &pairs[2 * j];
		const WireText *value = &pairs[2 * j + 1];

		check_text(name, "a label name", i);
		check_text(value, "a label value", i);
		if (name->len == 8 && memcmp(name->bytes, "__name__", 8) == 0)
		{
			if (series->metric != NULL)
				invalid_series(i, "has the label \"__name__\" twice", NULL);
			if (!is_metric_name(value))
				invalid_series(i, "has an invalid metric name",
							   psprintf("\"%.*s\" does not match [a-zA-Z_:][a-zA-Z0-9_:]*.",
										(int) Min(value->len, 200), value->bytes));
			series->metric = pnstrdup(value->bytes, value->len);
			continue;
		}
		if (!is_label_name(name))
			invalid_series(i, "has an invalid label name",
						   psprintf("\"%.*s\" does not match [a-zA-Z_][a-zA-Z0-9_]*.",
									(int) Min(name->len, 200), name->bytes));
		if (value->len == 0)
			continue;			/* an empty value is an absent label */
		series->labels[series->nlabels].name = pnstrdup(name->bytes, name->len);
		series->labels[series->nlabels].value = value->bytes;
		series->labels[series->nlabels].value_len = value->len;
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
}

/*
 * Lay out n 1.0 labels as name and value pairs in pairs, each text with a
 * state of its own in states, nothing known of it.
 */
static void
label_pairs(Prometheus__Label *const *labels, size_t n, WireText *pairs,
			TextState *states)
{
	size_t		j;

	memset(states, 0, sizeof(TextState) * 2 * n);
	for (j = 0; j < n; j++)
	{
		pairs[2 * j] = wire_text(labels[j]->name, &states[2 * j]);
		pairs[2 * j + 1] = wire_text(labels[j]->value, &states[2 * j + 1]);
	}
}

/*
 * Check and convert series i of a 1.0 request, its labels laid out as name
 * and value pairs in pairs, with their states in states (room for the
 * request's longest series).
 */
static void
decode_series_v1(const Prometheus__TimeSeries *msg, int i, PromWriteSeries *series,
				 WireText *pairs, TextState *states, PromWriteRequest *request,
				 PromDecodeBudget *budget)
{
	size_t		j;

	label_pairs(msg->labels, msg->n_labels, pairs, states);
	decode_series(pairs, msg->n_labels, i, series);
	series->nsamples = msg->n_samples;
	series->samples = msg->samples;
	count_start_timestamps(msg->samples, msg->n_samples, request);
	decode_histograms(msg->histograms, msg->n_histograms, i, series, request, budget);

	PromDecodeBudgetCheck(budget, sizeof(PromWriteExemplar) * msg->n_exemplars);
	series->nexemplars = 0;
	series->exemplars = palloc_extended(sizeof(PromWriteExemplar) * Max(msg->n_exemplars, 1),
										MCXT_ALLOC_HUGE);
	for (j = 0; j < msg->n_exemplars; j++)
	{
		const Prometheus__Exemplar *e = msg->exemplars[j];

		label_pairs(e->labels, e->n_labels, pairs, states);
		if (decode_exemplar(pairs, e->n_labels, e->value, e->timestamp, i,
							&series->exemplars[series->nexemplars]))
			series->nexemplars++;
		else
			request->nexemplars_invalid++;
		PromDecodeBudgetCheck(budget, 0);
	}
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
metadata_text(WireText t, const char *what)
{
	check_text(&t, what, -1);
	return pnstrdup(t.bytes, t.len);
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
	WireText   *pairs;
	TextState  *states;
	size_t		maxlabels = 0;
	size_t		i;

	budget->sqlstate = ERRCODE_INVALID_PARAMETER_VALUE;
	msg = (Prometheus__WriteRequest *)
		PromUnpackRequest(body, len, &prometheus__write_request__descriptor,
						  "remote write request", ERRCODE_INVALID_PARAMETER_VALUE,
						  budget);

	for (i = 0; i < msg->n_timeseries; i++)
	{
		const Prometheus__TimeSeries *ts = msg->timeseries[i];
		size_t		j;

		maxlabels = Max(maxlabels, ts->n_labels);
		for (j = 0; j < ts->n_exemplars; j++)
			maxlabels = Max(maxlabels, ts->exemplars[j]->n_labels);
	}
	PromDecodeBudgetCheck(budget, sizeof(PromWriteSeries) * msg->n_timeseries +
						  (sizeof(WireText) + sizeof(TextState)) * 2 * maxlabels);
	request->nseries = msg->n_timeseries;
	request->series = palloc_extended(sizeof(PromWriteSeries) * Max(msg->n_timeseries, 1),
									  MCXT_ALLOC_HUGE);
	pairs = palloc_extended(sizeof(WireText) * 2 * Max(maxlabels, 1), MCXT_ALLOC_HUGE);
	states = palloc_extended(sizeof(TextState) * 2 * Max(maxlabels, 1), MCXT_ALLOC_HUGE);
	for (i = 0; i < msg->n_timeseries; i++)
	{
		const Prometheus__TimeSeries *ts = msg->timeseries[i];

		CHECK_FOR_INTERRUPTS();
		decode_series_v1(ts, i, &request->series[i], pairs, states, request, budget);
		PromDecodeBudgetCheck(budget, 0);
	}
	pfree(pairs);
	pfree(states);

	PromDecodeBudgetCheck(budget, sizeof(PromWriteMetadata) * msg->n_metadata);
	request->nmetadata = msg->n_metadata;
	request->metadata = palloc_extended(sizeof(PromWriteMetadata) * Max(msg->n_metadata, 1),
										MCXT_ALLOC_HUGE);
	for (i = 0; i < msg->n_metadata; i++)
	{
		const Prometheus__MetricMetadata *m = msg->metadata[i];
		PromWriteMetadata *out = &request->metadata[i];
		TextState	fresh[3] = {{0}};

		out->type = metadata_type_name(m->type);
		out->family = metadata_text(wire_text(m->metric_family_name, &fresh[0]),
									"a metric family name");
		if (!PromIsValidMetricName(out->family, strlen(out->family)))
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("metadata of the remote write request has an invalid metric family name"),
					 errdetail("\"%.200s\" does not match [a-zA-Z_:][a-zA-Z0-9_:]*.",
							   out->family)));
		out->help = metadata_text(wire_text(m->help, &fresh[1]), "a metric help text");
		out->unit = metadata_text(wire_text(m->unit, &fresh[2]), "a metric unit");
		PromDecodeBudgetCheck(budget, 0);
	}
	PromDecodeBudgetHold(budget);
	MemoryContextSwitchTo(oldcxt);
	return request;
}

/*
 * Remote write 2.0 (io.prometheus.write.v2.Request, spec 2.0-rc.4).  Its
 * strings are in a symbols table, the first of which must be "", and
 * labels, help texts and units are references into it.  Each series is
 * resolved to the labels a 1.0 series carries and checked by the same
 * decode_series; its samples and histograms are 1.0's messages, which
 * remote.proto declares with 2.0's start timestamps, so that grouping,
 * creation, refusals and writing are shared with 1.0.  Besides 1.0's
 * checks, a request is refused with 22023 for a symbol reference out of
 * range, an odd labels_refs list (of a series or an exemplar), a first
 * symbol that is not "", and a series with both samples and histograms.
 *
 * A series borrows its label values from the symbols, as a 1.0 series does
 * from its own Label messages, and writing copies them for each series.
 * In 1.0 they add up to at most the request; here a symbol referred to by
 * every series counts once in the request but once a series when written.
 * So the values the series borrow are charged to the budget, as the copies
 * writing makes: one 16 MB symbol in millions of series is refused (22023)
 * rather than exhausting memory.
 */

/* Raise 22023 for an invalid 2.0 request. */
static pg_attribute_noreturn() void
invalid_request(const char *message)
{
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("remote write 2.0 request %s", message)));
}

/*
 * Symbol ref of series i, with its state in states (one per symbol), or a
 * 22023 error if it is out of range.
 */
static WireText
symbol(const Io__Prometheus__Write__V2__Request *msg, TextState *states,
	   uint32 ref, int i)
{
	if (ref >= msg->n_symbols)
		invalid_series(i, psprintf("refers to symbol %u of %zu", ref, msg->n_symbols),
					   "A symbol reference must be an index into the request's symbols.");
	return wire_text(msg->symbols[ref], &states[ref]);
}

/* Metadata of series i of a 2.0 request, whose metric is metric. */
static void
decode_metadata_v2(const Io__Prometheus__Write__V2__Request *msg, TextState *states,
				   const Io__Prometheus__Write__V2__Metadata *m, int i,
				   const char *metric, PromWriteMetadata *out)
{
	out->family = metric;
	out->type = metadata_type_name(m->type);
	out->help = metadata_text(symbol(msg, states, m->help_ref, i), "a metric help text");
	out->unit = metadata_text(symbol(msg, states, m->unit_ref, i), "a metric unit");
}

/*
 * Decompress, decode and check a snappy-compressed 2.0 Request into the
 * PromWriteRequest a 1.0 request gives, within the same budget and with
 * the same SQLSTATEs as PromDecodeWriteRequest.
 */
PromWriteRequest *
PromDecodeWriteRequestV2(const char *body, Size len)
{
	PromDecodeBudget *budget = PromDecodeBudgetCreate("remote write request");
	MemoryContext oldcxt = MemoryContextSwitchTo(budget->context);
	PromWriteRequest *request = palloc0(sizeof(PromWriteRequest));
	Io__Prometheus__Write__V2__Request *msg;
	WireText   *pairs;
	TextState  *states;
	size_t		maxrefs = 0;
	Size		borrowed = 0;
	size_t		i;

	budget->sqlstate = ERRCODE_INVALID_PARAMETER_VALUE;
	msg = (Io__Prometheus__Write__V2__Request *)
		PromUnpackRequest(body, len, &io__prometheus__write__v2__request__descriptor,
						  "remote write request", ERRCODE_INVALID_PARAMETER_VALUE,
						  budget);

	if (msg->n_symbols > 0 && msg->symbols[0].len != 0)
		invalid_request("has a first symbol that is not \"\"");
	for (i = 0; i < msg->n_timeseries; i++)
	{
		const Io__Prometheus__Write__V2__TimeSeries *ts = msg->timeseries[i];
		size_t		j;

		maxrefs = Max(maxrefs, ts->n_labels_refs);
		for (j = 0; j < ts->n_exemplars; j++)
			maxrefs = Max(maxrefs, ts->exemplars[j]->n_labels_refs);
	}

	PromDecodeBudgetCheck(budget, sizeof(PromWriteSeries) * msg->n_timeseries +
						  sizeof(PromWriteMetadata) * msg->n_timeseries +
						  sizeof(WireText) * maxrefs +
						  sizeof(TextState) * msg->n_symbols);
	request->nseries = msg->n_timeseries;
	request->series = palloc_extended(sizeof(PromWriteSeries) * Max(msg->n_timeseries, 1),
									  MCXT_ALLOC_HUGE);
	request->metadata = palloc_extended(sizeof(PromWriteMetadata) * Max(msg->n_timeseries, 1),
										MCXT_ALLOC_HUGE);
	pairs = palloc_extended(sizeof(WireText) * Max(maxrefs, 1), MCXT_ALLOC_HUGE);
	states = palloc_extended(sizeof(TextState) * Max(msg->n_symbols, 1),
							 MCXT_ALLOC_HUGE | MCXT_ALLOC_ZERO);
	for (i = 0; i < msg->n_timeseries; i++)
	{
		const Io__Prometheus__Write__V2__TimeSeries *ts = msg->timeseries[i];
		PromWriteSeries *series = &request->series[i];
		size_t		j;

		CHECK_FOR_INTERRUPTS();
		if (ts->n_labels_refs % 2 != 0)
			invalid_series(i, "has an odd number of label references",
						   "labels_refs holds pairs of a name and a value.");
		for (j = 0; j < ts->n_labels_refs; j++)
			pairs[j] = symbol(msg, states, ts->labels_refs[j], i);
		decode_series(pairs, ts->n_labels_refs / 2, i, series);
		for (j = 0; j < (size_t) series->nlabels; j++)
			borrowed += series->labels[j].value_len;
		if (ts->n_samples > 0 && ts->n_histograms > 0)
			invalid_series(i, "has both samples and histograms",
						   "A series of remote write 2.0 holds either samples or histograms.");
		series->nsamples = ts->n_samples;
		series->samples = ts->samples;
		count_start_timestamps(ts->samples, ts->n_samples, request);
		request->nstart_timestamps += ts->created_timestamp != 0;
		decode_histograms(ts->histograms, ts->n_histograms, i, series, request, budget);

		PromDecodeBudgetCheck(budget, sizeof(PromWriteExemplar) * ts->n_exemplars);
		series->nexemplars = 0;
		series->exemplars = palloc_extended(sizeof(PromWriteExemplar) * Max(ts->n_exemplars, 1),
											MCXT_ALLOC_HUGE);
		for (j = 0; j < ts->n_exemplars; j++)
		{
			const Io__Prometheus__Write__V2__Exemplar *e = ts->exemplars[j];
			size_t		k;

			if (e->n_labels_refs % 2 != 0)
				invalid_series(i, "has an exemplar with an odd number of label references", NULL);
			for (k = 0; k < e->n_labels_refs; k++)
				pairs[k] = symbol(msg, states, e->labels_refs[k], i);
			if (decode_exemplar(pairs, e->n_labels_refs / 2, e->value, e->timestamp, i,
								&series->exemplars[series->nexemplars]))
				series->nexemplars++;
			else
				request->nexemplars_invalid++;
			PromDecodeBudgetCheck(budget, 0);
		}

		/* metadata only when the series carries some */
		if (ts->metadata != NULL &&
			(ts->metadata->type != 0 || ts->metadata->help_ref != 0 ||
			 ts->metadata->unit_ref != 0))
			decode_metadata_v2(msg, states, ts->metadata, i, series->metric,
							   &request->metadata[request->nmetadata++]);
		PromDecodeBudgetCheck(budget, borrowed);
	}
	pfree(pairs);
	pfree(states);
	PromDecodeBudgetHold(budget);
	MemoryContextSwitchTo(oldcxt);
	return request;
}

/*
 * Give a series float samples as a decoded request would carry them
 * (prom_convert_metric writes a metric's rows as remote write writes them).
 */
void
PromWriteSeriesSetSamples(PromWriteSeries *series, const PromSample *samples, int n)
{
	Prometheus__Sample *cells = palloc(sizeof(Prometheus__Sample) * Max(n, 1));
	int			i;

	series->samples = palloc(sizeof(Prometheus__Sample *) * Max(n, 1));
	for (i = 0; i < n; i++)
	{
		prometheus__sample__init(&cells[i]);
		cells[i].timestamp = samples[i].t;
		cells[i].value = samples[i].v;
		series->samples[i] = &cells[i];
	}
	series->nsamples = n;
}

/*-------------------------------------------------------------------------
 *
 * agg.c
 *	  prom_read_response_agg(ts, value, VARIADIC labels "any"): a
 *	  ReadResponse built from any query; prom_chunked_response_agg: the
 *	  same series as a STREAMED_XOR_CHUNKS answer, which is also what a
 *	  shard sends its coordinator (shards.c).
 *
 * The time is a timestamptz, a timestamp (read as UTC) or a bigint of ms
 * since the Unix epoch, as the engine reads a metric's time column.  The
 * value is a double precision, or a prom_histogram (an overload of its
 * own): then every series of the answer holds histograms, each copied into
 * the state's series set as a scan copies them.
 *
 * The labels are name/value pairs, and may end with a jsonb of overflow
 * labels (a created table's overflow column: overflow_labels.c), read as
 * the engine reads that column.  Their value types are fixed by the
 * call, so each pair position is read as the engine reads a label column:
 * text borrowed from the row, enums by value, other types by their binary
 * value and printed once per series.  The names usually stay the same from
 * row to row; the names of the previous row's layout are compared first,
 * then those of the layouts whose names hash alike (a hash table of
 * layouts by an xxHash of their names), and a new layout is made only for
 * names not seen before.
 *
 * For parallel aggregation a state is serialized as its series' label sets
 * and samples (histograms as their bytes, after a magic of their own); deserializing and combining add them to a set through
 * all-text layouts (a series of more labels than a call has arguments keeps
 * the rest as overflow labels), and the set's final sort merges equal label
 * sets that came through different layouts.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <xxhash.h>

#include "catalog/pg_type.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "promread.h"
#include "utils/builtins.h"
#include "utils/json.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"
#include "protocol/protocol.h"
#include "engine/engine.h"
#include "histogram/histogram.h"

PG_FUNCTION_INFO_V1(prom_read_response_agg_transfn);
PG_FUNCTION_INFO_V1(prom_read_response_agg_finalfn);
PG_FUNCTION_INFO_V1(prom_read_response_agg_combinefn);
PG_FUNCTION_INFO_V1(prom_read_response_agg_serialfn);
PG_FUNCTION_INFO_V1(prom_read_response_agg_deserialfn);
PG_FUNCTION_INFO_V1(prom_chunked_response_agg_finalfn);

/* First bytes of a serialized state: of floats, of histograms. */
#define STATE_MAGIC		"PRA1"
#define STATE_MAGIC_HISTOGRAMS	"PRH1"

/* Arguments before the label pairs: state, ts, value. */
#define FIRST_LABEL_ARG	3

/* A layout and the label names that identify it. */
typedef struct AggLayout
{
	PromLayout *layout;
	int			nlabels;
	char	  **names;
	int		   *name_lens;
	bool		all_text;		/* made for deserialized or combined series */
	struct AggLayout *next;		/* the next layout whose names hash alike */
} AggLayout;

/* The layouts whose names have one hash: an entry of AggState.layouts. */
typedef struct LayoutBucket
{
	uint64		hash;			/* the key (names_hash) */
	AggLayout  *first;
} LayoutBucket;

/* The aggregate's state. */
typedef struct AggState
{
	MemoryContext context;		/* the aggregate's context */
	PromSeriesSet *set;
	HTAB	   *layouts;		/* LayoutBucket by the hash of names */
	AggLayout  *last;			/* layout of the previous row */
	bool		time_is_ms;		/* the time is a bigint of ms, not a timestamp */
	bool		histograms;		/* the values are prom_histogram values */
	int			nlabels;		/* label pairs per row */
	bool		overflow;		/* then a jsonb of overflow labels */
	PromLabelKind *kinds;		/* per pair, from the value's type */
	Oid		   *types;
	Oid		   *name_types;
	Datum	   *values;			/* scratch: the row's label values */
	bool	   *isnull;
} AggState;

/* A new, empty state in the aggregate's context. */
static AggState *
state_create(MemoryContext aggcxt)
{
	AggState   *state = MemoryContextAllocZero(aggcxt, sizeof(AggState));
	HASHCTL		ctl;

	state->context = aggcxt;
	state->set = PromSeriesSetCreate(aggcxt);
	ctl.keysize = sizeof(uint64);
	ctl.entrysize = sizeof(LayoutBucket);
	ctl.hcxt = aggcxt;
	state->layouts = hash_create("promread aggregate layouts", 16, &ctl,
								 HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
	return state;
}

/* Learn the label pairs' types from the call, once per state. */
static void
state_init_types(AggState *state, FunctionCallInfo fcinfo)
{
	int			npairargs = PG_NARGS() - FIRST_LABEL_ARG;
	int			i;

	if (get_fn_expr_variadic(fcinfo->flinfo))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("prom_read_response_agg does not accept a VARIADIC array"),
				 errhint("Pass the label names and values as separate arguments.")));
	state->overflow = npairargs % 2 != 0 &&
		getBaseType(get_fn_expr_argtype(fcinfo->flinfo, PG_NARGS() - 1)) == JSONBOID;
	if (npairargs % 2 != 0 && !state->overflow)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("labels must be pairs of names and values"),
				 errdetail("%d label arguments were given.", npairargs),
				 errhint("Only a jsonb of overflow labels may follow the pairs.")));

	state->time_is_ms = get_fn_expr_argtype(fcinfo->flinfo, 1) == INT8OID;
	state->histograms =
		PromIsHistogramType(getBaseType(get_fn_expr_argtype(fcinfo->flinfo, 2)));
	state->nlabels = npairargs / 2;
	/* one more column for the overflow labels, which come last */
	state->kinds = MemoryContextAlloc(state->context,
									  sizeof(PromLabelKind) * (state->nlabels + 1));
	state->types = MemoryContextAlloc(state->context,
									  sizeof(Oid) * (state->nlabels + 1));
	state->name_types = MemoryContextAlloc(state->context,
										   sizeof(Oid) * Max(state->nlabels, 1));
	/* room for two columns at least: PromSeriesSetAdd reads as many */
	state->values = MemoryContextAllocZero(state->context,
										   sizeof(Datum) * Max(state->nlabels + 1, 2));
	state->isnull = MemoryContextAllocZero(state->context,
										   sizeof(bool) * Max(state->nlabels + 1, 2));
	state->kinds[state->nlabels] = PROM_LABEL_BINARY;
	state->types[state->nlabels] = JSONBOID;
	for (i = 0; i < state->nlabels; i++)
	{
		Oid			name_type = get_fn_expr_argtype(fcinfo->flinfo,
													FIRST_LABEL_ARG + 2 * i);
		Oid			value_type = get_fn_expr_argtype(fcinfo->flinfo,
													 FIRST_LABEL_ARG + 2 * i + 1);

		if (!OidIsValid(name_type) || !OidIsValid(value_type))
			elog(ERROR, "could not determine the types of the label arguments");
		name_type = getBaseType(name_type);
		if (name_type != TEXTOID && name_type != VARCHAROID &&
			name_type != NAMEOID && name_type != UNKNOWNOID)
			ereport(ERROR,
					(errcode(ERRCODE_DATATYPE_MISMATCH),
					 errmsg("label name argument %d has type %s", i + 1,
							format_type_be(name_type)),
					 errhint("Label names must be text.")));
		state->name_types[i] = name_type;
		state->types[i] = getBaseType(value_type);
		state->kinds[i] = PromLabelKindOf(value_type);
	}
}

/* Read one label name argument of the row, borrowing it. */
static const char *
label_name_arg(AggState *state, FunctionCallInfo fcinfo, int i, int *len)
{
	Datum		d;

	if (PG_ARGISNULL(FIRST_LABEL_ARG + 2 * i))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("label name must not be NULL")));
	d = PG_GETARG_DATUM(FIRST_LABEL_ARG + 2 * i);
	switch (state->name_types[i])
	{
		case NAMEOID:
			*len = strnlen(NameStr(*DatumGetName(d)), NAMEDATALEN);
			return NameStr(*DatumGetName(d));
		case UNKNOWNOID:
			*len = strlen(DatumGetCString(d));
			return DatumGetCString(d);
		default:
			{
				text	   *t = DatumGetTextPP(d);

				*len = VARSIZE_ANY_EXHDR(t);
				return VARDATA_ANY(t);
			}
	}
}

/* Does a layout have exactly these names? */
static bool
layout_has_names(const AggLayout *layout, int nlabels, const char **names,
				 const int *lens, bool all_text)
{
	int			i;

	if (layout->nlabels != nlabels || layout->all_text != all_text)
		return false;
	for (i = 0; i < nlabels; i++)
		if (layout->name_lens[i] != lens[i] ||
			memcmp(layout->names[i], names[i], lens[i]) != 0)
			return false;
	return true;
}

/* A hash of a list of label names and of whether its layout is all_text. */
static uint64
names_hash(int nlabels, const char **names, const int *lens, bool all_text)
{
	uint64		hash = (uint64) nlabels * 2 + all_text;
	int			i;

	for (i = 0; i < nlabels; i++)
		hash = XXH3_64bits_withSeed(names[i], lens[i], hash);
	return hash;
}

/*
 * The layout of these label names: the previous row's, a known one, or a
 * new one.  all_text layouts read every value as text; with overflow, the
 * last column, named "" (which no label is), is a jsonb of overflow labels.
 */
static AggLayout *
find_layout(AggState *state, int nlabels, const char **names, const int *lens,
			const PromLabelKind *kinds, const Oid *types, bool all_text,
			bool overflow)
{
	MemoryContext oldcxt;
	AggLayout  *layout;
	LayoutBucket *bucket;
	uint64		hash;
	char	  **cnames;
	bool		found;
	int			i;

	if (state->last != NULL &&
		layout_has_names(state->last, nlabels, names, lens, all_text))
		return state->last;
	hash = names_hash(nlabels, names, lens, all_text);
	bucket = hash_search(state->layouts, &hash, HASH_ENTER, &found);
	if (!found)
		bucket->first = NULL;
	for (layout = bucket->first; layout != NULL; layout = layout->next)
		if (layout_has_names(layout, nlabels, names, lens, all_text))
			return state->last = layout;

	oldcxt = MemoryContextSwitchTo(state->context);
	cnames = palloc(sizeof(char *) * Max(nlabels, 1));
	for (i = 0; i < nlabels; i++)
	{
		cnames[i] = pnstrdup(names[i], lens[i]);
		if (overflow && i == nlabels - 1)
			continue;
		if (strlen(cnames[i]) != (size_t) lens[i] ||
			!PromIsValidLabelName(cnames[i], lens[i]))
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_NAME),
					 errmsg("\"%s\" is not a valid Prometheus label name", cnames[i]),
					 errdetail("Label names must match [a-zA-Z_][a-zA-Z0-9_]*.")));
	}
	layout = palloc(sizeof(AggLayout));
	layout->nlabels = nlabels;
	layout->names = cnames;
	layout->name_lens = palloc(sizeof(int) * Max(nlabels, 1));
	memcpy(layout->name_lens, lens, sizeof(int) * nlabels);
	layout->all_text = all_text;
	layout->layout = PromSeriesSetAddLayout(state->set, nlabels,
											(const char *const *) cnames,
											kinds, types, NULL);
	if (overflow)
		PromLayoutSetOverflow(state->set, layout->layout, nlabels - 1);
	if (state->histograms)
		PromLayoutSetHistograms(state->set, layout->layout);
	layout->next = bucket->first;
	bucket->first = layout;
	MemoryContextSwitchTo(oldcxt);
	return state->last = layout;
}

/* Transition: add one row's sample to its series. */
Datum
prom_read_response_agg_transfn(PG_FUNCTION_ARGS)
{
	MemoryContext aggcxt;
	AggState   *state;
	const char *names[FUNC_MAX_ARGS / 2 + 1];
	int			lens[FUNC_MAX_ARGS / 2 + 1];
	AggLayout  *layout;
	int64		t;
	int			i;

	if (!AggCheckCallContext(fcinfo, &aggcxt))
		elog(ERROR, "prom_read_response_agg_transfn called in non-aggregate context");
	if (PG_ARGISNULL(0))
	{
		state = state_create(aggcxt);
		state_init_types(state, fcinfo);
	}
	else
		state = (AggState *) PG_GETARG_POINTER(0);

	/* a NULL or infinite time, or a NULL value, carries no sample */
	if (PG_ARGISNULL(1) || PG_ARGISNULL(2))
		PG_RETURN_POINTER(state);
	if (state->time_is_ms)
		t = PG_GETARG_INT64(1);
	else if (TIMESTAMP_NOT_FINITE(PG_GETARG_TIMESTAMPTZ(1)))
		PG_RETURN_POINTER(state);
	else
		t = PromTimestampToMs(PG_GETARG_TIMESTAMPTZ(1));

	for (i = 0; i < state->nlabels; i++)
	{
		names[i] = label_name_arg(state, fcinfo, i, &lens[i]);
		state->isnull[i] = PG_ARGISNULL(FIRST_LABEL_ARG + 2 * i + 1);
		state->values[i] = state->isnull[i] ? (Datum) 0 :
			PG_GETARG_DATUM(FIRST_LABEL_ARG + 2 * i + 1);
	}
	if (state->overflow)
	{
		names[i] = "";
		lens[i] = 0;
		state->isnull[i] = PG_ARGISNULL(PG_NARGS() - 1);
		state->values[i] = state->isnull[i] ? (Datum) 0 :
			PG_GETARG_DATUM(PG_NARGS() - 1);
	}
	layout = find_layout(state, state->nlabels + state->overflow, names, lens,
						 state->kinds, state->types, false, state->overflow);
	PromSeriesSetAdd(state->set, layout->layout, state->values, state->isnull,
					 t, state->histograms ?
					 PromSeriesSetCopyHistogram(state->set, PG_GETARG_DATUM(2)) :
					 PG_GETARG_FLOAT8(2));
	PG_RETURN_POINTER(state);
}

/* The labels past the first of a series as a jsonb of overflow labels. */
static Datum
overflow_jsonb(int nlabels, const PromLabelRef *labels, int first)
{
	StringInfoData json;
	int			i;

	initStringInfo(&json);
	for (i = first; i < nlabels; i++)
	{
		appendStringInfoChar(&json, i == first ? '{' : ',');
		escape_json(&json, pnstrdup(labels[i].name, labels[i].name_len));
		appendStringInfoChar(&json, ':');
		escape_json(&json, pnstrdup(labels[i].value, labels[i].value_len));
	}
	appendStringInfoChar(&json, '}');
	return DirectFunctionCall1(jsonb_in, CStringGetDatum(json.data));
}

/*
 * Add a series given by its label texts and samples to a state, through an
 * all-text layout of its label names: of its first FUNC_MAX_ARGS - 1 and
 * a jsonb of the rest as overflow labels when it has more.
 */
static void
add_text_series(AggState *state, int nlabels, const PromLabelRef *labels,
				const PromSample *samples, int64 nsamples)
{
	PromLabelKind kinds[FUNC_MAX_ARGS] = {0};
	Oid			types[FUNC_MAX_ARGS] = {0};
	const char *names[FUNC_MAX_ARGS] = {0};
	int			name_lens[FUNC_MAX_ARGS] = {0};
	Datum		datums[FUNC_MAX_ARGS] = {0};
	bool		isnull[FUNC_MAX_ARGS] = {0};
	bool		overflow = nlabels > FUNC_MAX_ARGS;
	int			ncolumns = overflow ? FUNC_MAX_ARGS - 1 : nlabels;
	AggLayout  *layout;
	int64		i;

	for (i = 0; i < ncolumns; i++)
	{
		kinds[i] = PROM_LABEL_TEXT;
		types[i] = TEXTOID;
		isnull[i] = false;
		names[i] = labels[i].name;
		name_lens[i] = labels[i].name_len;
		datums[i] = PointerGetDatum(cstring_to_text_with_len(labels[i].value,
															 labels[i].value_len));
	}
	if (overflow)
	{
		kinds[ncolumns] = PROM_LABEL_BINARY;
		types[ncolumns] = JSONBOID;
		names[ncolumns] = "";
		datums[ncolumns] = overflow_jsonb(nlabels, labels, ncolumns);
	}
	layout = find_layout(state, ncolumns + overflow, names, name_lens, kinds,
						 types, true, overflow);
	PromSeriesSetAddRun(state->set, layout->layout, datums, isnull, samples,
						nsamples);
	for (i = 0; i < ncolumns + overflow; i++)
		pfree(DatumGetPointer(datums[i]));
}

/* The samples of a series of a set, in a palloc'd array. */
static PromSample *
series_samples(const PromSeries *series)
{
	PromSample *samples = palloc_extended(sizeof(PromSample) *
										  Max(PromSeriesSampleCount(series), 1),
										  MCXT_ALLOC_HUGE);

	PromSeriesCopySamples(series, samples);
	return samples;
}

/* Add every series of another state's set to a state. */
static void
merge_state(AggState *into, const AggState *from)
{
	int			nseries;
	PromSeries *const *series = PromSeriesSetSeriesSoFar(from->set, &nseries);
	int			i;

	for (i = 0; i < nseries; i++)
	{
		PromLabelRef *labels = palloc(sizeof(PromLabelRef) *
									  PromSeriesLabelCount(from->set, series[i]));
		int			n = PromSeriesLabels(from->set, series[i], labels);
		PromSample *samples = series_samples(series[i]);
		int64		nsamples = PromSeriesSampleCount(series[i]);
		int64		j;

		/* the state's own copies, as its rows' */
		for (j = 0; j < nsamples && into->histograms; j++)
			samples[j].v = PromSeriesSetCopyHistogram(into->set,
													  PointerGetDatum(PromSampleHistogram(&samples[j])));
		add_text_series(into, n, labels, samples, nsamples);
		pfree(samples);
		pfree(labels);
	}
}

/* Combine: add the second state's series to the first. */
Datum
prom_read_response_agg_combinefn(PG_FUNCTION_ARGS)
{
	MemoryContext aggcxt;
	AggState   *into;

	if (!AggCheckCallContext(fcinfo, &aggcxt))
		elog(ERROR, "prom_read_response_agg_combinefn called in non-aggregate context");
	if (PG_ARGISNULL(1))
		PG_RETURN_DATUM(PG_GETARG_DATUM(0));
	if (PG_ARGISNULL(0))
	{
		into = state_create(aggcxt);
		into->histograms = ((AggState *) PG_GETARG_POINTER(1))->histograms;
	}
	else
		into = (AggState *) PG_GETARG_POINTER(0);
	merge_state(into, (AggState *) PG_GETARG_POINTER(1));
	PG_RETURN_POINTER(into);
}

/* The finished series set of a final function's state. */
static PromSeriesSet *
final_set(FunctionCallInfo fcinfo)
{
	PromSeriesSet *set;

	if (PG_ARGISNULL(0))
		set = PromSeriesSetCreate(CurrentMemoryContext);
	else
		set = ((AggState *) PG_GETARG_POINTER(0))->set;
	PromSeriesSetFinish(set);
	return set;
}

/* Final: a compressed ReadResponse with one QueryResult. */
Datum
prom_read_response_agg_finalfn(PG_FUNCTION_ARGS)
{
	PromSeriesSet *set = final_set(fcinfo);
	PromSnappyWriter response;

	PromSnappyWriterInit(&response);
	PromWriteSamplesResult(&response, set, true);
	PG_RETURN_BYTEA_P(PromSnappyWriterFinish(&response));
}

/*
 * Final of prom_chunked_response_agg: the frames of a STREAMED_XOR_CHUNKS
 * answer to one query (index 0).  At most half of a bytea's 1 GB, so that
 * its text form (hex, as postgres_fdw and clients move it) fits too.
 */
Datum
prom_chunked_response_agg_finalfn(PG_FUNCTION_ARGS)
{
	PromSeriesSet *set = final_set(fcinfo);
	PromBuffer	frames;
	bytea	   *result;

	PromBufferInit(&frames, 1024);
	(void) PromBufferReserve(&frames, VARHDRSZ);
	PromAppendChunkedResult(&frames, set, 0);
	if (frames.len > MaxAllocSize / 2)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("prom_chunked_response_agg answer is too large"),
				 errdetail("The answer has %zu bytes; it may have at most %zu.",
						   frames.len - VARHDRSZ, (Size) MaxAllocSize / 2 - VARHDRSZ),
				 errhint("Select fewer series or a shorter time range.")));
	result = (bytea *) frames.data;
	SET_VARSIZE(result, frames.len);
	PG_RETURN_BYTEA_P(result);
}

/* Append bytes to a serialized state. */
static inline char *
put_bytes(char *p, const void *data, Size len)
{
	memcpy(p, data, len);
	return p + len;
}

/*
 * Bytes of the histograms of a series of histograms, beyond the 16 bytes a
 * sample counts: a serialized state holds the histograms' own.
 */
static Size
histograms_bytes(const PromSeries *series)
{
	PromSample *samples = series_samples(series);
	int64		n = PromSeriesSampleCount(series);
	Size		size = 0;
	int64		i;

	for (i = 0; i < n; i++)
		size += VARSIZE(PromSampleHistogram(&samples[i])) - sizeof(double);
	pfree(samples);
	return size;
}

/* Append a series' histograms to a serialized state: times and bytes. */
static char *
put_histograms(char *p, const PromSeries *series)
{
	PromSample *samples = series_samples(series);
	int64		n = PromSeriesSampleCount(series);
	int64		i;

	for (i = 0; i < n; i++)
	{
		const PromHistogram *h = PromSampleHistogram(&samples[i]);

		p = put_bytes(p, &samples[i].t, sizeof(int64));
		p = put_bytes(p, h, VARSIZE(h));
	}
	pfree(samples);
	return p;
}

/*
 * Serialize: "PRA1", uint32 series count, then per series a uint32 label
 * count, each label as uint32 length + name and uint32 length + value, an
 * int64 sample count and the samples as (int64 time, float8 value).  A
 * state of histograms begins "PRH1" and has each sample as an int64 time
 * and the histogram's bytes (its varlena, whose header gives its length).
 */
Datum
prom_read_response_agg_serialfn(PG_FUNCTION_ARGS)
{
	AggState   *state = (AggState *) PG_GETARG_POINTER(0);
	int			nseries;
	PromSeries *const *series = PromSeriesSetSeriesSoFar(state->set, &nseries);
	PromLabelRef *labels;
	int			room = PROM_MAX_LABELS;
	Size		size = VARHDRSZ + 4 + sizeof(uint32);
	bytea	   *result;
	char	   *p;
	int			i;

	/* room for the labels of every series, overflow labels included */
	for (i = 0; i < nseries; i++)
		room = Max(room, PromSeriesLabelCount(state->set, series[i]));
	labels = palloc(sizeof(PromLabelRef) * room);
	for (i = 0; i < nseries; i++)
	{
		int			n = PromSeriesLabels(state->set, series[i], labels);
		int			j;

		size += sizeof(uint32) + sizeof(int64) +
			sizeof(PromSample) * PromSeriesSampleCount(series[i]);
		if (state->histograms)
			size += histograms_bytes(series[i]);
		for (j = 0; j < n; j++)
			size += 2 * sizeof(uint32) + labels[j].name_len + labels[j].value_len;
	}
	if (size > MaxAllocSize)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("prom_read_response_agg state is too large to pass between parallel workers")));

	result = palloc(size);
	SET_VARSIZE(result, size);
	p = put_bytes(VARDATA(result),
				  state->histograms ? STATE_MAGIC_HISTOGRAMS : STATE_MAGIC, 4);
	p = put_bytes(p, &(uint32) {nseries}, sizeof(uint32));
	for (i = 0; i < nseries; i++)
	{
		int64		nsamples = PromSeriesSampleCount(series[i]);
		int			n = PromSeriesLabels(state->set, series[i], labels);
		int			j;

		p = put_bytes(p, &(uint32) {n}, sizeof(uint32));
		for (j = 0; j < n; j++)
		{
			p = put_bytes(p, &(uint32) {labels[j].name_len}, sizeof(uint32));
			p = put_bytes(p, labels[j].name, labels[j].name_len);
			p = put_bytes(p, &(uint32) {labels[j].value_len}, sizeof(uint32));
			p = put_bytes(p, labels[j].value, labels[j].value_len);
		}
		p = put_bytes(p, &nsamples, sizeof(int64));
		if (state->histograms)
			p = put_histograms(p, series[i]);
		else
		{
			PromSeriesCopySamples(series[i], p);
			p += sizeof(PromSample) * nsamples;
		}
	}
	Assert(p == (char *) result + size);
	PG_RETURN_BYTEA_P(result);
}

/* Reading a serialized state, never past its end. */
typedef struct StateReader
{
	const char *p;
	const char *end;
} StateReader;

/* Take len bytes of a serialized state, or reject it as malformed. */
static const char *
take(StateReader *reader, uint64 len)
{
	const char *p = reader->p;

	if (len > (uint64) (reader->end - reader->p))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_BINARY_REPRESENTATION),
				 errmsg("invalid prom_read_response_agg state"),
				 errdetail("The state is truncated or its lengths are wrong.")));
	reader->p += len;
	return p;
}

/* Take a uint32 of a serialized state. */
static uint32
take_uint32(StateReader *reader)
{
	uint32		value;

	memcpy(&value, take(reader, sizeof(uint32)), sizeof(uint32));
	return value;
}

/*
 * Take a series' nsamples histograms of a serialized state, each checked
 * (its length, then as the type checks its input) and copied into the
 * state's set; returns its samples, whose values point to the copies.
 */
static PromSample *
take_histograms(StateReader *reader, AggState *state, int64 nsamples)
{
	PromSample *samples = palloc(sizeof(PromSample) * Max(nsamples, 1));
	int64		i;

	for (i = 0; i < nsamples; i++)
	{
		PromHistogram header;
		PromHistogram *h;
		uint32		size;

		memcpy(&samples[i].t, take(reader, sizeof(int64)), sizeof(int64));
		if (reader->end - reader->p < (ptrdiff_t) PROM_HISTOGRAM_HEADER_SIZE)
			take(reader, PG_UINT64_MAX);	/* rejects the state */
		memcpy(&header, reader->p, PROM_HISTOGRAM_HEADER_SIZE);
		size = VARSIZE(&header);
		if (size < PROM_HISTOGRAM_HEADER_SIZE)
			take(reader, PG_UINT64_MAX);
		h = palloc(size);
		memcpy(h, take(reader, size), size);
		PromHistogramCheck(h);
		samples[i].v = PromSeriesSetCopyHistogram(state->set, PointerGetDatum(h));
		pfree(h);
	}
	return samples;
}

/* Deserialize: rebuild a state from its series, checking every length. */
Datum
prom_read_response_agg_deserialfn(PG_FUNCTION_ARGS)
{
	bytea	   *data = PG_GETARG_BYTEA_PP(0);
	MemoryContext aggcxt;
	MemoryContext seriescxt;
	StateReader reader;
	AggState   *state;
	const char *magic;
	uint32		nseries;
	uint32		i;

	if (!AggCheckCallContext(fcinfo, &aggcxt))
		elog(ERROR, "prom_read_response_agg_deserialfn called in non-aggregate context");
	reader.p = VARDATA_ANY(data);
	reader.end = reader.p + VARSIZE_ANY_EXHDR(data);
	magic = take(&reader, 4);
	if (memcmp(magic, STATE_MAGIC, 4) != 0 &&
		memcmp(magic, STATE_MAGIC_HISTOGRAMS, 4) != 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_BINARY_REPRESENTATION),
				 errmsg("invalid prom_read_response_agg state"),
				 errdetail("The state does not start with \"%s\" or \"%s\".",
						   STATE_MAGIC, STATE_MAGIC_HISTOGRAMS)));

	state = state_create(aggcxt);
	state->histograms = memcmp(magic, STATE_MAGIC_HISTOGRAMS, 4) == 0;
	seriescxt = AllocSetContextCreate(CurrentMemoryContext, "promread state",
									  ALLOCSET_DEFAULT_SIZES);
	nseries = take_uint32(&reader);
	for (i = 0; i < nseries; i++)
	{
		MemoryContext oldcxt = MemoryContextSwitchTo(seriescxt);
		uint32		nlabels = take_uint32(&reader);
		PromLabelRef *labels;
		int64		nsamples;
		const char *sample_bytes;
		PromSample *samples;
		uint32		j;

		/* a label takes 8 bytes at least */
		if (nlabels > (uint32) ((reader.end - reader.p) / 8))
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_BINARY_REPRESENTATION),
					 errmsg("invalid prom_read_response_agg state"),
					 errdetail("A series has %u labels.", nlabels)));
		labels = palloc(sizeof(PromLabelRef) * Max(nlabels, 1));
		for (j = 0; j < nlabels; j++)
		{
			labels[j].name_len = take_uint32(&reader);
			labels[j].name = take(&reader, (uint32) labels[j].name_len);
			labels[j].value_len = take_uint32(&reader);
			labels[j].value = take(&reader, (uint32) labels[j].value_len);
		}
		memcpy(&nsamples, take(&reader, sizeof(int64)), sizeof(int64));
		if (nsamples < 0 || nsamples > (int64) (MaxAllocSize / sizeof(PromSample)))
			take(&reader, PG_UINT64_MAX);	/* rejects the state */
		if (state->histograms)
			samples = take_histograms(&reader, state, nsamples);
		else
		{
			sample_bytes = take(&reader, sizeof(PromSample) * nsamples);
			samples = palloc(sizeof(PromSample) * Max(nsamples, 1));
			memcpy(samples, sample_bytes, sizeof(PromSample) * nsamples);
		}
		add_text_series(state, nlabels, labels, samples, nsamples);
		MemoryContextSwitchTo(oldcxt);
		MemoryContextReset(seriescxt);
	}
	if (reader.p != reader.end)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_BINARY_REPRESENTATION),
				 errmsg("invalid prom_read_response_agg state"),
				 errdetail("The state has bytes after its last series.")));
	MemoryContextDelete(seriescxt);
	PG_RETURN_POINTER(state);
}

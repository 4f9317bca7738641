/*-------------------------------------------------------------------------
 *
 * prom_series.c
 *	  prom_series(selector, start_time, end_time): the series of a PromQL
 *	  selector as rows of (labels jsonb, ts timestamptz[], value float8[],
 *	  histograms prom_histogram[]): a series of floats has its values and
 *	  NULL histograms, a series of native histograms NULL values and its
 *	  histograms.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "engine/engine.h"
#include "funcapi.h"
#include "histogram/histogram.h"
#include "phases.h"
#include "promread.h"
#include "protocol/protocol.h"
#include "scan/scan.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/jsonb.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

PG_FUNCTION_INFO_V1(prom_series);

/* A one-dimensional array of n 8-byte elements, to be filled by the caller. */
static ArrayType *
new_array8(Oid elemtype, int64 n, char **data)
{
	Size		size = ARR_OVERHEAD_NONULLS(1) + (Size) n * 8;
	ArrayType  *array;

	if (!AllocSizeIsValid(size))
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("series has too many samples for an array: %lld",
						(long long) n)));
	array = palloc(size);
	SET_VARSIZE(array, size);
	array->ndim = 1;
	array->dataoffset = 0;
	array->elemtype = elemtype;
	ARR_DIMS(array)[0] = n;
	ARR_LBOUND(array)[0] = 1;
	*data = (char *) array + ARR_OVERHEAD_NONULLS(1);
	return array;
}

/* A sample time as timestamptz; bigint time columns can exceed its range. */
static inline int64
timestamp_of_ms(int64 ms)
{
	if (unlikely(ms < PromTimestampToMs(MIN_TIMESTAMP) ||
				 ms >= PromTimestampToMs(END_TIMESTAMP)))
		ereport(ERROR,
				(errcode(ERRCODE_DATETIME_VALUE_OUT_OF_RANGE),
				 errmsg("sample time %lld ms is out of range for timestamptz",
						(long long) ms)));
	return PromMsToTimestamp(ms);
}

/*
 * The histograms of a series that holds them, as a prom_histogram[] whose
 * elements are copied from the set.
 */
static ArrayType *
histogram_array(const PromSeries *series)
{
	int64		n = PromSeriesSampleCount(series);
	PromSample *samples;
	Datum	   *elems;
	Oid			type = PromHistogramTypeOid();
	int16		typlen;
	bool		typbyval;
	char		typalign;
	int64		i;

	if ((Size) n > MaxArraySize)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("series has too many samples for an array: %lld",
						(long long) n)));
	samples = palloc_extended(sizeof(PromSample) * Max(n, 1), MCXT_ALLOC_HUGE);
	elems = palloc_extended(sizeof(Datum) * Max(n, 1), MCXT_ALLOC_HUGE);
	PromSeriesCopySamples(series, samples);
	for (i = 0; i < n; i++)
		elems[i] = PointerGetDatum(PromSampleHistogram(&samples[i]));
	get_typlenbyvalalign(type, &typlen, &typbyval, &typalign);
	return construct_array(elems, (int) n, type, typlen, typbyval, typalign);
}

/* qsort comparator of labels in jsonb's order of keys. */
static int
jsonb_key_cmp(const void *a, const void *b)
{
	const PromLabelRef *x = a;
	const PromLabelRef *y = b;

	if (x->name_len != y->name_len)
		return x->name_len < y->name_len ? -1 : 1;
	return memcmp(x->name, y->name, x->name_len);
}

/*
 * The labels of a series as a jsonb object, written directly in jsonb's
 * binary format rather than through pushJsonbValue, which costs more than
 * everything else of a small series: a container header (pair count and the
 * object flag), one JEntry per key then one per value (string type, the
 * length, or the end offset with JENTRY_HAS_OFF on every JB_OFFSET_STRIDE'th
 * entry), then the keys' and the values' bytes.  Keys are in jsonb's order:
 * shorter first, then bytewise.
 */
static Jsonb *
labels_jsonb(const PromSeriesSet *set, const PromSeries *series)
{
	PromLabelRef *labels = palloc(sizeof(PromLabelRef) *
								  PromSeriesLabelCount(set, series));
	int			n = PromSeriesLabels(set, series, labels);
	Size		size = VARHDRSZ + sizeof(uint32) + sizeof(JEntry) * 2 * n;
	uint32		offset = 0;
	Jsonb	   *jsonb;
	JEntry	   *entries;
	char	   *data;
	int			i;

	/* jsonb's key order: an insertion sort, labels are few (but overflow) */
	if (n > 32)
		qsort(labels, n, sizeof(PromLabelRef), jsonb_key_cmp);
	for (i = 1; i < n && n <= 32; i++)
	{
		PromLabelRef label = labels[i];
		int			j;

		for (j = i; j > 0; j--)
		{
			const PromLabelRef *other = &labels[j - 1];

			if (other->name_len < label.name_len ||
				(other->name_len == label.name_len &&
				 memcmp(other->name, label.name, label.name_len) < 0))
				break;
			labels[j] = *other;
		}
		labels[j] = label;
	}
	for (i = 0; i < n; i++)
		size += labels[i].name_len + labels[i].value_len;
	if (size - VARHDRSZ > JENTRY_OFFLENMASK)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("labels of a series are too large for jsonb")));

	jsonb = palloc(size);
	SET_VARSIZE(jsonb, size);
	jsonb->root.header = n | JB_FOBJECT;
	entries = jsonb->root.children;
	data = (char *) (entries + 2 * n);
	for (i = 0; i < 2 * n; i++)
	{
		const PromLabelRef *label = &labels[i % n];
		const char *bytes = i < n ? label->name : label->value;
		int			len = i < n ? label->name_len : label->value_len;

		wire_put_bytes(data + offset, bytes, len);
		offset += len;
		entries[i] = JENTRY_ISSTRING |
			(i % JB_OFFSET_STRIDE == 0 ? (offset | JENTRY_HAS_OFF) : (uint32) len);
	}
	pfree(labels);
	return jsonb;
}

/*
 * prom_series(selector text, start_time timestamptz, end_time timestamptz)
 * returns one row per series: labels, sample times and values.
 */
Datum
prom_series(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	MemoryContext callcxt;
	MemoryContext rowcxt;
	MemoryContext oldcxt;
	PromQuery	query;
	PromSeriesSet *set;
	PromSeries *const *series;
	int			nseries;
	uint64		begin;
	int			i;

#if PG_VERSION_NUM >= 160000
	InitMaterializedSRF(fcinfo, 0);
#else
	InitMaterializedSRF(fcinfo, 0);
#endif
	PromPhasesStart();
	PromScanBeginCall();
	callcxt = AllocSetContextCreate(CurrentMemoryContext, "prom_series",
									ALLOCSET_DEFAULT_SIZES);
	oldcxt = MemoryContextSwitchTo(callcxt);

	PromQueryFromSelector(PG_GETARG_TEXT_PP(0), PG_GETARG_TIMESTAMPTZ(1),
						  PG_GETARG_TIMESTAMPTZ(2), &query);

	set = PromRunQuery(&query, callcxt, false);
	series = PromSeriesSetSeries(set, &nseries);
	PromPhasesMemory(MemoryContextMemAllocated(callcxt, true) +
					 PromSeriesSetArenaBytes(set));
	/* each row is built in a context of its own, reset once it is stored */
	rowcxt = AllocSetContextCreate(callcxt, "prom_series row",
								   ALLOCSET_DEFAULT_SIZES);
	MemoryContextSwitchTo(rowcxt);
	begin = PromPhaseBegin();
	for (i = 0; i < nseries; i++)
	{
		PromSampleRun run;
		Datum		values[4];
		bool		nulls[4] = {false, false, false, true};
		char	   *ts_data;
		char	   *value_data = NULL;
		ArrayType  *ts_array;
		ArrayType  *value_array = NULL;
		bool		histograms = PromSeriesHoldsHistograms(set, series[i]);
		int64		k = 0;

		PromPrefetchSeries(series, i, nseries);
		ts_array = new_array8(TIMESTAMPTZOID, series[i]->nsamples, &ts_data);
		if (!histograms)
			value_array = new_array8(FLOAT8OID, series[i]->nsamples, &value_data);
		for (PromSampleRunFirst(&run, series[i]); run.block != NULL;
			 PromSampleRunNext(&run))
		{
			uint32		j;

			for (j = 0; j < run.count; j++, k++)
			{
				PromSample	sample = PromSampleRunSample(&run, j);
				int64		ts = timestamp_of_ms(sample.t);

				memcpy(ts_data + k * 8, &ts, 8);
				if (!histograms)
					memcpy(value_data + k * 8, PromSampleRunValueBytes(&run, j), 8);
			}
		}
		values[0] = JsonbPGetDatum(labels_jsonb(set, series[i]));
		values[1] = PointerGetDatum(ts_array);
		/* values for a series of floats, histograms for one of histograms */
		values[2] = PointerGetDatum(value_array);
		nulls[2] = histograms;
		if (histograms)
		{
			values[3] = PointerGetDatum(histogram_array(series[i]));
			nulls[3] = false;
		}
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
		MemoryContextReset(rowcxt);
	}

	PromPhaseEnd(PROM_PHASE_ENCODE, begin);
	MemoryContextSwitchTo(oldcxt);
	MemoryContextDelete(callcxt);
	PromPhasesFinish();
	return (Datum) 0;
}

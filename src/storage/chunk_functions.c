/*-------------------------------------------------------------------------
 *
 * chunk_functions.c
 *	  SQL functions that read a stored chunk (docs/chunk-storage.md):
 *	  prom_chunk_samples, prom_chunk_histograms and prom_chunk_sample_count.
 *
 * A chunk's bytes are Prometheus's (tsdb/docs/format/chunks.md), as
 * chunk_decode.c decodes them from remote read answers: the input is
 * untrusted, and bytes that are not a valid chunk raise 22P03, never read
 * past their end.  Times are ms since the Unix epoch, turned into
 * timestamptz exactly.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "funcapi.h"
#include "histogram/histogram.h"
#include "protocol/protocol.h"
#include "storage/storage.h"

PG_FUNCTION_INFO_V1(prom_chunk_samples);
PG_FUNCTION_INFO_V1(prom_chunk_histograms);
PG_FUNCTION_INFO_V1(prom_chunk_sample_count);

/* The name of a chunk encoding, for messages. */
static const char *
encoding_name(int encoding)
{
	switch (encoding)
	{
		case PROM_CHUNK_XOR:
			return "XOR";
		case PROM_CHUNK_HISTOGRAM:
			return "histogram";
		case PROM_CHUNK_FLOAT_HISTOGRAM:
			return "float histogram";
	}
	return "unrecognized";
}

/* Report bytes that are not a valid chunk of an encoding (22P03). */
static pg_attribute_noreturn() void
invalid_chunk(int encoding, const char *reason)
{
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_BINARY_REPRESENTATION),
			 errmsg("invalid %s chunk", encoding_name(encoding)),
			 errdetail("The chunk is not valid: %s.", reason)));
}

/*
 * A sample's time as a timestamptz, exact to the millisecond; a time past
 * timestamptz's range is refused (22008).
 */
TimestampTz
PromStorageTimestamp(int64 ms)
{
	TimestampTz ts;

	/* the bounds keep the conversion from overflowing int64 */
	if (ms < PG_INT64_MIN / 1000 + PROM_EPOCH_DIFF_MS ||
		ms > PG_INT64_MAX / 1000 ||
		!IS_VALID_TIMESTAMP(ts = PromMsToTimestamp(ms)))
		ereport(ERROR,
				(errcode(ERRCODE_DATETIME_VALUE_OUT_OF_RANGE),
				 errmsg("timestamp out of range"),
				 errdetail("A sample's time is %lld ms since the Unix epoch.",
						   (long long) ms)));
	return ts;
}

/*
 * Decode a chunk of an encoding (XOR, histogram or float histogram) into
 * its samples, or raise 22P03: a histogram chunk's values point to their
 * histograms (PromSampleHistogram).
 */
PromSample *
PromStorageDecodeChunk(int encoding, const bytea *chunk, int *nsamples)
{
	PromSample *samples = NULL;
	const char *reason;

	switch (encoding)
	{
		case PROM_CHUNK_XOR:
			reason = PromXorChunkDecode(VARDATA_ANY(chunk), VARSIZE_ANY_EXHDR(chunk),
										&samples, nsamples);
			break;
		case PROM_CHUNK_HISTOGRAM:
		case PROM_CHUNK_FLOAT_HISTOGRAM:
			reason = PromHistogramChunkDecode(VARDATA_ANY(chunk),
											  VARSIZE_ANY_EXHDR(chunk),
											  encoding == PROM_CHUNK_FLOAT_HISTOGRAM,
											  &samples, nsamples);
			break;
		default:
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("unrecognized chunk encoding %d", encoding),
					 errdetail("Chunk encodings are 1 (XOR), 2 (histogram) and 3 (float histogram).")));
	}
	if (reason != NULL)
		invalid_chunk(encoding, reason);
	return samples;
}

/*
 * prom_chunk_samples(chunk bytea) RETURNS TABLE (ts timestamptz, value
 * float8): the samples of an XOR chunk, in its order.
 */
Datum
prom_chunk_samples(PG_FUNCTION_ARGS)
{
	bytea	   *chunk = PG_GETARG_BYTEA_PP(0);
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	PromSample *samples;
	int			nsamples;
	int			i;

	InitMaterializedSRF(fcinfo, 0);
	samples = PromStorageDecodeChunk(PROM_CHUNK_XOR, chunk, &nsamples);
	for (i = 0; i < nsamples; i++)
	{
		Datum		values[2];
		bool		isnull[2] = {false, false};

		values[0] = TimestampTzGetDatum(PromStorageTimestamp(samples[i].t));
		values[1] = Float8GetDatum(samples[i].v);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, isnull);
	}
	PG_RETURN_NULL();
}

/*
 * Check a histogram decoded from a chunk as the type's input checks one:
 * one that breaks Prometheus's rules (22023) makes the chunk invalid
 * (22P03), so that every value of the type is a valid histogram.
 */
static void
check_decoded_histogram(const PromHistogram *h, int encoding)
{
	MemoryContext context = CurrentMemoryContext;

	PG_TRY();
	{
		PromHistogramCheck(h);
	}
	PG_CATCH();
	{
		ErrorData  *edata;

		MemoryContextSwitchTo(context);
		edata = CopyErrorData();
		if (edata->sqlerrcode != ERRCODE_INVALID_PARAMETER_VALUE)
			PG_RE_THROW();
		FlushErrorState();
		invalid_chunk(encoding, edata->message);
	}
	PG_END_TRY();
}

/*
 * prom_chunk_histograms(encoding smallint, chunk bytea) RETURNS TABLE (ts
 * timestamptz, value prom_histogram): the samples of a histogram (2) or
 * float histogram (3) chunk, each histogram checked (see above).  A stale
 * marker is a histogram whose sum is the stale NaN, as remote read sends
 * it.
 */
Datum
prom_chunk_histograms(PG_FUNCTION_ARGS)
{
	int			encoding = PG_GETARG_INT16(0);
	bytea	   *chunk = PG_GETARG_BYTEA_PP(1);
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	PromSample *samples;
	int			nsamples;
	int			i;

	if (encoding != PROM_CHUNK_HISTOGRAM && encoding != PROM_CHUNK_FLOAT_HISTOGRAM)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("chunk encoding %d is not a histogram encoding", encoding),
				 errdetail("Histogram chunks have encoding 2 (histogram) or 3 (float histogram)."),
				 errhint("Read XOR chunks (1) with prom_chunk_samples().")));
	InitMaterializedSRF(fcinfo, 0);
	samples = PromStorageDecodeChunk(encoding, chunk, &nsamples);
	for (i = 0; i < nsamples; i++)
	{
		PromHistogram *h = unconstify(PromHistogram *, PromSampleHistogram(&samples[i]));
		Datum		values[2];
		bool		isnull[2] = {false, false};

		check_decoded_histogram(h, encoding);
		values[0] = TimestampTzGetDatum(PromStorageTimestamp(samples[i].t));
		values[1] = PointerGetDatum(h);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, isnull);
	}
	PG_RETURN_NULL();
}

/*
 * The number of samples of a chunk of any encoding: its first two bytes,
 * big-endian (tsdb/docs/format/chunks.md); 22P03 if it has fewer.
 */
static int
chunk_sample_count(const bytea *chunk)
{
	const uint8 *bytes = (const uint8 *) VARDATA_ANY(chunk);

	if (VARSIZE_ANY_EXHDR(chunk) < 2)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_BINARY_REPRESENTATION),
				 errmsg("invalid chunk"),
				 errdetail("The chunk is shorter than its 2-byte sample count.")));
	return (bytes[0] << 8) | bytes[1];
}

/* prom_chunk_sample_count(chunk bytea) RETURNS integer */
Datum
prom_chunk_sample_count(PG_FUNCTION_ARGS)
{
	/* only the first two bytes of a TOASTed chunk are fetched */
	PG_RETURN_INT32(chunk_sample_count(PG_GETARG_BYTEA_P_SLICE(0, 0, 2)));
}

/*-------------------------------------------------------------------------
 *
 * chunk_functions.c
 *	  SQL functions that read a stored chunk (docs/chunk-storage.md):
 *	  prom_chunk_samples, prom_chunk_histograms and prom_chunk_sample_count.
 *
 * A chunk's bytes are Prometheus's (tsdb/docs/format/chunks.md), decoded
 * by stored_chunks.c: bytes that are not a valid chunk raise 22P03, and
 * times are exact to the millisecond.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "funcapi.h"
#include "storage/storage.h"

PG_FUNCTION_INFO_V1(prom_chunk_samples);
PG_FUNCTION_INFO_V1(prom_chunk_histograms);
PG_FUNCTION_INFO_V1(prom_chunk_sample_count);

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
 * prom_chunk_histograms(encoding smallint, chunk bytea) RETURNS TABLE (ts
 * timestamptz, value prom_histogram): the samples of a histogram (2) or
 * float histogram (3) chunk, each histogram checked (PromStorageDecodeChunk).
 * A stale marker is a histogram whose sum is the stale NaN, as remote read
 * sends it.
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
		Datum		values[2];
		bool		isnull[2] = {false, false};

		values[0] = TimestampTzGetDatum(PromStorageTimestamp(samples[i].t));
		values[1] = PointerGetDatum(PromSampleHistogram(&samples[i]));
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

/*-------------------------------------------------------------------------
 *
 * stored_chunks.c
 *	  Decoding the chunks chunk storage keeps (docs/chunk-storage.md), for
 *	  its SQL functions (chunk_functions.c) and its readers and compaction.
 *
 * A chunk's bytes are Prometheus's (tsdb/docs/format/chunks.md), decoded
 * by protocol/chunk_decode.c as it decodes remote read answers: the input
 * is untrusted and never read past its end, and bytes that are not a
 * valid chunk raise 22P03.  Times are ms since the Unix epoch, turned into
 * timestamptz exactly.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "histogram/histogram.h"
#include "protocol/protocol.h"
#include "storage/storage.h"

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
 * Decode a chunk of an encoding (XOR, histogram or float histogram) into
 * a palloc'd array of its samples, or raise 22P03: a histogram chunk's
 * values point to their histograms (PromSampleHistogram), each checked.
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
	if (encoding != PROM_CHUNK_XOR)
		for (int i = 0; i < *nsamples; i++)
			check_decoded_histogram(PromSampleHistogram(&samples[i]), encoding);
	return samples;
}

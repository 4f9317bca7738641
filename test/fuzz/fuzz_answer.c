/*
 * fuzz_answer.c
 *	  libFuzzer target: a STREAMED_XOR_CHUNKS stream, as a shard answers its
 *	  coordinator (src/scan/shards.c) and as prom_read_response_json reads
 *	  responses, through PromForEachChunkedSeries and PromDecodeChunk
 *	  (src/protocol/chunk_decode.c): frame lengths and CRCs, protobuf-c's unpacking,
 *	  query indexes, and the XOR decoder.
 *
 * Inputs of even length have their frames' CRCs made right first, so that
 * mutations reach protobuf-c and the XOR decoder.
 *
 * An ERROR is a clean rejection when its SQLSTATE is one chunk_decode.c
 * documents: 22P03 (undecodable) and 0A000 (a chunk encoding other than
 * XOR).  Anything else, a sanitizer report, or memory outliving the input
 * is a bug.
 */
#include "postgres.h"

#include <stdint.h>

#include "pg_shim.h"
#include "promread.h"
#include "protocol/protocol.h"
#include "utils/memutils.h"

static const char *const allowed[] = {"22P03", "0A000", NULL};

/*
 * Decode every chunk of a series and read each sample, so that the
 * sanitizers see an array shorter than the count it came with.
 */
static void
decode_series(void *arg, int64 query_index,
			  const Prometheus__ChunkedSeries *series, int64 frame)
{
	uint64	   *times = arg;
	size_t		k;

	for (k = 0; k < series->n_chunks; k++)
	{
		const Prometheus__Chunk *chunk = series->chunks[k];
		int			nsamples;
		PromSample *samples = PromDecodeChunk(chunk->type, wire_bytes(chunk->data),
											  chunk->data.len, frame, k,
											  &nsamples);

		for (int i = 0; i < nsamples; i++)
			*times += (uint64) samples[i].t;
		pfree(samples);
	}
}

/*
 * A copy of an input whose frames' CRCs are made right, so that mutations
 * reach protobuf-c and the XOR decoder rather than stop at a CRC: each
 * frame's length is read as the decoder reads it, and the walk stops where
 * the decoder would.
 */
static uint8_t *
with_right_crcs(const uint8_t *data, size_t size)
{
	uint8_t    *copy = palloc(Max(size, 1));
	size_t		pos = 0;

	memcpy(copy, data, size);
	while (pos < size)
	{
		uint64		len = 0;
		int			shift = 0;
		uint32		crc;

		while (pos < size && shift < 64)
		{
			uint8_t		byte = copy[pos++];

			len |= (uint64) (byte & 0x7f) << shift;
			shift += 7;
			if (byte < 0x80)
				break;
		}
		if (size - pos < 4 || len > size - pos - 4)
			break;
		crc = PromCrc32c((const char *) copy + pos + 4, len);

		copy[pos] = crc >> 24;
		copy[pos + 1] = crc >> 16;
		copy[pos + 2] = crc >> 8;
		copy[pos + 3] = crc;
		pos += 4 + len;
	}
	return copy;
}

/*
 * Read one input as a stream, each frame in a context of its own: an input
 * of odd length as it is (its CRCs are checked), one of even length with
 * its CRCs made right (the shim takes one ERROR per input, so each input is
 * decoded once).
 */
static void
decode(const uint8_t *data, size_t size)
{
	uint64		times = 0;
	MemoryContext frames = AllocSetContextCreate(CurrentMemoryContext, "frames",
												 ALLOCSET_DEFAULT_SIZES);
	const uint8_t *input = size % 2 == 0 ? with_right_crcs(data, size) : data;

	PromForEachChunkedSeries((const char *) input, size, decode_series,
							 &times, frames);
	MemoryContextDelete(frames);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	shim_begin_input();
	SHIM_RUN(decode(data, size));
	shim_end_input(allowed);
	return 0;
}

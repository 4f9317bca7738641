/*-------------------------------------------------------------------------
 *
 * chunk_decode.c
 *	  Reading STREAMED_XOR_CHUNKS streams (chunk_encode.c writes them): for
 *	  prom_read_response_json, and for the answers shards send their
 *	  coordinator (shards.c).
 *
 * The input is untrusted: every frame's length and CRC-32C is checked
 * before its message is unpacked, every varint and every bit of a chunk
 * before it is read, and nothing is read past the end of the input.  A
 * frame's message is a ChunkedReadResponse { chunked_series = 1,
 * query_index = 2 }; a chunk's data is Prometheus's XOR encoding (see
 * chunk_encode.c).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "miscadmin.h"
#include "protocol.h"
#include "utils/memutils.h"

/* The highest query index a stream may carry. */
#define MAX_QUERY_INDEX		100000

/* Report a stream, or a part of one, that cannot be decoded (22P03). */
void
PromStreamError(const char *detail)
{
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_BINARY_REPRESENTATION),
			 errmsg("could not decode remote read response"),
			 errdetail_internal("%s", detail)));
}

/*
 * Read the frame at *pos: check its length and CRC and set its message.
 * Returns NULL, or why the frame is not valid (a sentence).
 */
const char *
PromReadFrame(const char *data, Size len, Size *pos, int64 frame,
			  const char **message, Size *message_len)
{
	uint64		size = 0;
	Size		p = *pos;
	uint32		crc;
	uint32		actual;
	int			i;

	for (i = 0;; i++)
	{
		uint8		byte;

		if (p >= len)
			return psprintf("Frame %lld is truncated inside its length.",
							(long long) frame);
		byte = (uint8) data[p++];
		if (i == 9 && byte > 1)
			return psprintf("Frame %lld has an invalid length: a varint overflowing 64 bits.",
							(long long) frame);
		size |= (uint64) (byte & 0x7f) << (7 * i);
		if (byte < 0x80)
			break;
	}
	if (len - p < 4)
		return psprintf("Frame %lld is truncated inside its CRC.",
						(long long) frame);
	if (size > len - p - 4)
		return psprintf("Frame %lld is truncated: its length is %llu bytes, but %zu bytes follow its CRC.",
						(long long) frame, (unsigned long long) size,
						len - p - 4);
	crc = ((uint32) (uint8) data[p] << 24) | ((uint32) (uint8) data[p + 1] << 16) |
		((uint32) (uint8) data[p + 2] << 8) | (uint32) (uint8) data[p + 3];
	p += 4;
	actual = PromCrc32c(data + p, size);
	if (crc != actual)
		return psprintf("Frame %lld has CRC-32C %08X, but its %llu bytes have CRC-32C %08X.",
						(long long) frame, crc, (unsigned long long) size,
						actual);
	*message = data + p;
	*message_len = size;
	*pos = p + size;
	return NULL;
}

/* A bitstream being read, most significant bit first. */
typedef struct XorReader
{
	const uint8 *p;
	const uint8 *end;
	uint64		acc;			/* unread bits in the low nacc bits */
	int			nacc;			/* fewer than 8 between calls */
} XorReader;

/* Read n (at most 32) bits; false when the stream ends first. */
static inline bool
get_bits(XorReader *r, int n, uint64 *bits)
{
	Assert(n >= 0 && n <= 32);
	while (r->nacc < n)
	{
		if (r->p >= r->end)
			return false;
		r->acc = (r->acc << 8) | *r->p++;
		r->nacc += 8;
	}
	r->nacc -= n;
	*bits = (r->acc >> r->nacc) & ((UINT64CONST(1) << n) - 1);
	return true;
}

/* Read n (at most 64) bits; false when the stream ends first. */
static inline bool
get_bits64(XorReader *r, int n, uint64 *bits)
{
	uint64		high;
	uint64		low;

	if (n <= 32)
		return get_bits(r, n, bits);
	if (!get_bits(r, n - 32, &high) || !get_bits(r, 32, &low))
		return false;
	*bits = (high << 32) | low;
	return true;
}

/* Read a uvarint of whole bytes; returns why it cannot, or NULL. */
static const char *
get_uvarint(XorReader *r, uint64 *value)
{
	uint64		result = 0;
	int			i;

	for (i = 0; i < 10; i++)
	{
		uint64		byte;

		if (!get_bits(r, 8, &byte))
			return "it ends inside a varint";
		if (byte < 0x80)
		{
			if (i == 9 && byte > 1)
				break;
			*value = result | (byte << (7 * i));
			return NULL;
		}
		result |= (byte & 0x7f) << (7 * i);
	}
	return "a varint overflows 64 bits";
}

/*
 * Decode an XOR chunk into a palloc'd array of its samples.  Returns NULL,
 * or the reason the data is not a valid chunk (a phrase such as "it ends
 * inside a varint"): the data is untrusted and never read past its end.
 * Bits after the last sample (padding) are ignored, as Prometheus does.
 */
static const char *
xor_chunk_decode(const void *data, Size len, PromSample **samples,
				   int *nsamples)
{
	const uint8 *bytes = data;
	XorReader	r;
	PromSample *out;
	int			count;
	int			n;
	uint64		t = 0;
	uint64		delta = 0;
	uint64		bits = 0;
	int			leading = 0;
	int			trailing = 0;
	const char *reason;

	if (len < 2)
		return "it is shorter than its 2-byte sample count";
	count = (bytes[0] << 8) | bytes[1];
	/* a sample after the first takes two bits at least */
	if (count > 1 && (Size) (count - 1) > 4 * (len - 2))
		return "it is shorter than its sample count says";
	out = palloc(sizeof(PromSample) * Max(count, 1));
	r.p = bytes + 2;
	r.end = bytes + len;
	r.acc = 0;
	r.nacc = 0;

	for (n = 0; n < count; n++)
	{
		uint64		word;

		if (n == 0)
		{
			if ((reason = get_uvarint(&r, &word)) != NULL)
				return reason;
			t = (word >> 1) ^ (0 - (word & 1));		/* zigzag */
			if (!get_bits64(&r, 64, &bits))
				return "it ends before its last sample";
			out[n].t = (int64) t;
			memcpy(&out[n].v, &bits, sizeof(bits));
			continue;
		}
		if (n == 1)
		{
			if ((reason = get_uvarint(&r, &delta)) != NULL)
				return reason;
		}
		else
		{
			int			prefix = 0;
			int			size = 0;
			int			i;

			/* up to four bits: 0, 10, 110, 1110 or 1111 */
			for (i = 0; i < 4; i++)
			{
				if (!get_bits(&r, 1, &word))
					return "it ends before its last sample";
				if (word == 0)
					break;
				prefix++;
			}
			if (prefix == 1)
				size = 14;
			else if (prefix == 2)
				size = 17;
			else if (prefix == 3)
				size = 20;
			else if (prefix == 4)
				size = 64;
			if (size > 0)
			{
				if (!get_bits64(&r, size, &word))
					return "it ends before its last sample";
				/* the buckets hold -(2^(size-1) - 1) .. 2^(size-1) */
				if (size < 64 && word > (UINT64CONST(1) << (size - 1)))
					word -= UINT64CONST(1) << size;
				delta += word;
			}
		}
		t += delta;

		/* the value: '0' unchanged, '10' same window, '11' new window */
		if (!get_bits(&r, 1, &word))
			return "it ends before its last sample";
		if (word != 0)
		{
			if (!get_bits(&r, 1, &word))
				return "it ends before its last sample";
			if (word != 0)
			{
				uint64		lead;
				uint64		sigbits;

				if (!get_bits(&r, 5, &lead) || !get_bits(&r, 6, &sigbits))
					return "it ends before its last sample";
				if (sigbits == 0)
					sigbits = 64;
				if (lead + sigbits > 64)
					return "a value's meaningful bits overflow 64 bits";
				leading = (int) lead;
				trailing = 64 - (int) lead - (int) sigbits;
			}
			if (!get_bits64(&r, 64 - leading - trailing, &word))
				return "it ends before its last sample";
			bits ^= word << trailing;
		}
		out[n].t = (int64) t;
		memcpy(&out[n].v, &bits, sizeof(bits));
	}
	*samples = out;
	*nsamples = count;
	return NULL;
}

/*
 * Decode a Chunk message's data into a palloc'd array of its samples, or
 * raise an error naming the chunk (its index in frame number frame): an
 * encoding other than XOR is 0A000, data that is not a valid chunk 22P03.
 */
PromSample *
PromDecodeChunk(int encoding, const void *data, Size len, int64 frame,
				size_t index, int *nsamples)
{
	PromSample *samples;
	const char *reason;

	if (encoding != PROMETHEUS__CHUNK__ENCODING__XOR)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("could not decode remote read response"),
				 errdetail("Chunk %zu of frame %lld has encoding %d; only XOR chunks (1) are decoded.",
						   index, (long long) frame, encoding)));
	reason = xor_chunk_decode(data, len, &samples, nsamples);
	if (reason != NULL)
		PromStreamError(psprintf("Chunk %zu of frame %lld is not a valid XOR chunk: %s.",
							  index, (long long) frame, reason));
	return samples;
}

/*
 * Call fn for each series of each frame of a stream, in order, with the
 * frame's query index and number.  A frame's message is unpacked within a
 * decoding budget (what promread.max_memory leaves, 53200 past it), and
 * fn called in frame_context, both reset once fn has seen the frame's
 * series; or, when frame_context is NULL, in the current memory context,
 * where the messages stay.  An invalid frame, or a query index out of
 * 0..MAX_QUERY_INDEX, raises 22P03.
 */
void
PromForEachChunkedSeries(const char *data, Size len, PromChunkedSeriesFn fn,
						 void *arg, MemoryContext frame_context)
{
	PromDecodeBudget *budget = PromDecodeBudgetCreate("remote read response");
	Size		pos = 0;
	int64		frame;

	for (frame = 0; pos < len; frame++)
	{
		Prometheus__ChunkedReadResponse *msg;
		const char *message;
		Size		message_len;
		const char *reason;
		size_t		i;
		MemoryContext oldcxt = CurrentMemoryContext;

		CHECK_FOR_INTERRUPTS();
		reason = PromReadFrame(data, len, &pos, frame, &message, &message_len);
		if (reason != NULL)
			PromStreamError(reason);
		msg = prometheus__chunked_read_response__unpack(&budget->allocator,
														message_len,
														(const uint8_t *) message);
		if (msg == NULL)
		{
			PromDecodeBudgetCheck(budget, 0);
			PromStreamError(psprintf("Frame %lld is not a valid protobuf ChunkedReadResponse.",
									 (long long) frame));
		}
		PromDecodeBudgetHold(budget);
		if (msg->query_index < 0 || msg->query_index > MAX_QUERY_INDEX)
			PromStreamError(psprintf("Frame %lld has query index %lld; query indexes go from 0 to %d.",
									 (long long) frame, (long long) msg->query_index,
									 MAX_QUERY_INDEX));
		if (frame_context != NULL)
			MemoryContextSwitchTo(frame_context);
		for (i = 0; i < msg->n_chunked_series; i++)
			fn(arg, msg->query_index, msg->chunked_series[i], frame);
		MemoryContextSwitchTo(oldcxt);
		if (frame_context != NULL)
		{
			MemoryContextReset(frame_context);
			MemoryContextReset(budget->context);
			budget->limit = PromMemoryAvailable();
		}
	}
	if (frame_context != NULL)
	{
		MemoryContextDelete(budget->context);
		pfree(budget);
	}
}

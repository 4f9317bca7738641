/*-------------------------------------------------------------------------
 *
 * chunk_decode.c
 *	  Reading STREAMED_XOR_CHUNKS streams (chunk_encode.c writes them): for
 *	  prom_read_response_json, and for the answers shards send their
 *	  coordinator (shards.c); and the chunks they carry, also as chunk
 *	  storage keeps them (storage/chunk_functions.c).
 *
 * The input is untrusted: every frame's length and CRC-32C is checked
 * before its message is unpacked, every varint and every bit of a chunk
 * before it is read, and nothing is read past the end of the input.  A
 * frame's message is a ChunkedReadResponse { chunked_series = 1,
 * query_index = 2 }; a chunk's data is Prometheus's XOR encoding (see
 * chunk_encode.c), or, for prom_read_response_json, its histogram chunks'
 * (histogram_chunk.c).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <math.h>

#include "histogram/histogram.h"
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
 * Read a float given as its XOR with the one before, whose bits are *bits:
 * '0' unchanged, '10' its meaningful bits in the window before, '11' a new
 * window (5 bits of leading zeros, 6 of meaningful bits, 0 meaning 64),
 * then those bits.  Returns why it cannot, or NULL.
 */
static const char *
get_xor(XorReader *r, uint64 *bits, int *leading, int *trailing)
{
	uint64		word;

	if (!get_bits(r, 1, &word))
		return "it ends before its last sample";
	if (word == 0)
		return NULL;
	if (!get_bits(r, 1, &word))
		return "it ends before its last sample";
	if (word != 0)
	{
		uint64		lead;
		uint64		sigbits;

		if (!get_bits(r, 5, &lead) || !get_bits(r, 6, &sigbits))
			return "it ends before its last sample";
		if (sigbits == 0)
			sigbits = 64;
		if (lead + sigbits > 64)
			return "a value's meaningful bits overflow 64 bits";
		*leading = (int) lead;
		*trailing = 64 - (int) lead - (int) sigbits;
	}
	if (!get_bits64(r, 64 - *leading - *trailing, &word))
		return "it ends before its last sample";
	*bits ^= word << *trailing;
	return NULL;
}

/*
 * Decode an XOR chunk into *samples, an array of *capacity samples that is
 * reused when the chunk's samples fit, else allocated (repalloc'd when not
 * NULL) in CurrentMemoryContext, and *capacity set: a reader of many chunks
 * allocates once.  Returns NULL, or the reason the data is not a valid
 * chunk (a phrase such as "it ends inside a varint"): the data is
 * untrusted and never read past its end.  Bits after the last sample
 * (padding) are ignored, as Prometheus does.
 */
const char *
PromXorChunkDecodeInto(const void *data, Size len, PromSample **samples,
					   int *capacity, int *nsamples)
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
	if (*samples == NULL || *capacity < count)
	{
		Size		size = sizeof(PromSample) * Max(count, 1);

		*samples = *samples == NULL ? palloc(size) : repalloc(*samples, size);
		*capacity = Max(count, 1);
	}
	out = *samples;
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

		if ((reason = get_xor(&r, &bits, &leading, &trailing)) != NULL)
			return reason;
		out[n].t = (int64) t;
		memcpy(&out[n].v, &bits, sizeof(bits));
	}
	*nsamples = count;
	return NULL;
}

/*
 * Decode an XOR chunk into a palloc'd array of its samples, as
 * PromXorChunkDecodeInto does.
 */
const char *
PromXorChunkDecode(const void *data, Size len, PromSample **samples,
				   int *nsamples)
{
	int			capacity = 0;

	*samples = NULL;
	return PromXorChunkDecodeInto(data, len, samples, &capacity, nsamples);
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
	reason = PromXorChunkDecode(data, len, &samples, nsamples);
	if (reason != NULL)
		PromStreamError(psprintf("Chunk %zu of frame %lld is not a valid XOR chunk: %s.",
							  index, (long long) frame, reason));
	return samples;
}

/*---- Histogram chunks (histogram_chunk.c writes them) ----*/

/* The bucket sizes of varbit numbers, by the number of ones before their 0. */
static const int varbit_sizes[8] = {0, 3, 6, 9, 12, 18, 25, 56};

/*
 * Read a varbit number (see histogram_chunk.c): its bits, sign-extended
 * when signed.  Returns why it cannot, or NULL.
 */
static const char *
get_varbit(XorReader *r, bool is_signed, uint64 *value)
{
	uint64		bit;
	uint64		bits;
	int			ones = 0;
	int			size;

	while (ones < 8)
	{
		if (!get_bits(r, 1, &bit))
			return "it ends inside a number";
		if (bit == 0)
			break;
		ones++;
	}
	size = ones == 8 ? 64 : varbit_sizes[ones];
	if (size == 0)
	{
		*value = 0;
		return NULL;
	}
	if (!get_bits64(r, size, &bits))
		return "it ends inside a number";
	/* signed buckets hold -(2^(size-1) - 1) .. 2^(size-1) */
	if (is_signed && size < 64 && bits > (UINT64CONST(1) << (size - 1)))
		bits -= UINT64CONST(1) << size;
	*value = bits;
	return NULL;
}

/* Bits of a chunk's data not read yet. */
static inline uint64
bits_left(const XorReader *r)
{
	return (uint64) (r->end - r->p) * 8 + r->nacc;
}

/* A chunk's layout, as its first histogram's header and spans hold it. */
typedef struct ChunkLayout
{
	int64		schema;
	double		zero_threshold;
	uint64		nspans[2];		/* positive, negative */
	PromBucketSpan *spans[2];
	uint64		nbuckets[2];
	uint64		ncustom;
	double	   *custom;
} ChunkLayout;

/* Read one sign's spans.  Returns why it cannot, or NULL. */
static const char *
get_spans(XorReader *r, ChunkLayout *layout, int sign)
{
	uint64		n;
	uint64		i;
	const char *reason;

	if ((reason = get_varbit(r, false, &n)) != NULL)
		return reason;
	/* a span takes two bits at least */
	if (n > bits_left(r) / 2 || n > PG_UINT32_MAX)
		return "it has more spans than bits";
	layout->nspans[sign] = n;
	layout->spans[sign] = palloc(sizeof(PromBucketSpan) * Max(n, 1));
	layout->nbuckets[sign] = 0;
	for (i = 0; i < n; i++)
	{
		uint64		length;
		uint64		offset;

		if ((reason = get_varbit(r, false, &length)) != NULL ||
			(reason = get_varbit(r, true, &offset)) != NULL)
			return reason;
		if (length > PG_UINT32_MAX || (int64) offset < PG_INT32_MIN ||
			(int64) offset > PG_INT32_MAX)
			return "a span's length or offset overflows 32 bits";
		layout->spans[sign][i].length = (uint32) length;
		layout->spans[sign][i].offset = (int32) (int64) offset;
		layout->nbuckets[sign] += length;
		/* a bucket of the first sample takes a bit at least */
		if (layout->nbuckets[sign] > bits_left(r) ||
			layout->nbuckets[sign] > PG_UINT32_MAX)
			return "it has more buckets than bits";
	}
	return NULL;
}

/* Read a chunk's layout.  Returns why it cannot, or NULL. */
static const char *
get_layout(XorReader *r, ChunkLayout *layout)
{
	uint64		word;
	uint64		i;
	const char *reason;

	if (!get_bits(r, 8, &word))
		return "it ends inside its layout";
	if (word == 255)
	{
		if (!get_bits64(r, 64, &word))
			return "it ends inside its layout";
		memcpy(&layout->zero_threshold, &word, sizeof(double));
	}
	else
		layout->zero_threshold = word == 0 ? 0 : ldexp(0.5, (int) word - 243);
	if ((reason = get_varbit(r, true, &word)) != NULL)
		return reason;
	layout->schema = (int64) word;
	if (layout->schema != PROM_SCHEMA_CUSTOM &&
		(layout->schema < PROM_SCHEMA_MIN || layout->schema > PROM_SCHEMA_MAX))
		return "its schema is out of range";
	if ((reason = get_spans(r, layout, 0)) != NULL ||
		(reason = get_spans(r, layout, 1)) != NULL)
		return reason;
	layout->ncustom = 0;
	layout->custom = NULL;
	if (layout->schema != PROM_SCHEMA_CUSTOM)
		return NULL;
	if ((reason = get_varbit(r, false, &layout->ncustom)) != NULL)
		return reason;
	if (layout->ncustom > bits_left(r) || layout->ncustom > PG_UINT32_MAX)
		return "it has more custom bounds than bits";
	layout->custom = palloc(sizeof(double) * Max(layout->ncustom, 1));
	for (i = 0; i < layout->ncustom; i++)
	{
		/* a thousandth of a number plus one, or a 0 bit and 64 bits */
		if ((reason = get_varbit(r, false, &word)) != NULL)
			return reason;
		if (word != 0)
			layout->custom[i] = (double) (word - 1) / 1000;
		else if (!get_bits64(r, 64, &word))
			return "it ends inside its layout";
		else
			memcpy(&layout->custom[i], &word, sizeof(double));
	}
	return NULL;
}

/*
 * Count more bytes of a chunk's decoding in *held, refused (53200) past what
 * promread.max_memory leaves: a chunk's histograms may be many times its
 * bytes.  What is left is what the chunks decoded before leave when their
 * keeper charges them (prom_read_response_json), so that the bound is one
 * over all of them.
 */
static void
hold(Size *held, Size more)
{
	*held += more;
	if (*held > PromMemoryAvailable())
		ereport(ERROR,
				(errcode(ERRCODE_OUT_OF_MEMORY),
				 errmsg("a histogram chunk's histograms would exceed promread.max_memory (%dkB)",
						promread_max_memory)));
}

/* A new histogram of a chunk's layout (none for a stale marker). */
static PromHistogram *
layout_histogram(const ChunkLayout *layout, bool is_float, bool stale)
{
	PromHistogram *h;

	if (stale)
	{
		h = PromHistogramAllocate(0, 0, 0, 0, 0);
		h->kind = is_float ? PROM_HISTOGRAM_FLOAT : PROM_HISTOGRAM_INTEGER;
		return h;
	}
	h = PromHistogramAllocate(layout->nspans[0], layout->nspans[1],
							  layout->nbuckets[0], layout->nbuckets[1],
							  layout->ncustom);
	h->schema = (int16) layout->schema;
	h->zero_threshold = layout->zero_threshold;
	memcpy(PromHistogramPositiveSpans(h), layout->spans[0],
		   sizeof(PromBucketSpan) * layout->nspans[0]);
	memcpy(PromHistogramNegativeSpans(h), layout->spans[1],
		   sizeof(PromBucketSpan) * layout->nspans[1]);
	if (layout->ncustom > 0)
		memcpy(PromHistogramCustomValues(h), layout->custom,
			   sizeof(double) * layout->ncustom);
	h->kind = is_float ? PROM_HISTOGRAM_FLOAT : PROM_HISTOGRAM_INTEGER;
	return h;
}

/*
 * Decode a HISTOGRAM or FLOAT_HISTOGRAM chunk into a palloc'd array of its
 * samples, each value pointing to a palloc'd histogram (PromSampleHistogram).
 * Returns NULL, or why the data is not a valid chunk; untrusted, never read
 * past its end, and its histograms refused (53200) past what
 * promread.max_memory leaves: a caller that keeps the histograms of many
 * chunks charges them as it goes (PromDecodeBudgetCharge), so that each
 * chunk gets what those before it left.  As Prometheus's readers do, the
 * first sample's hint is the chunk's counter-reset bits, a later one's
 * unknown (gauge in a gauge chunk), and a stale marker's sum ends its
 * sample: it is a histogram of that sum alone.
 */
const char *
PromHistogramChunkDecode(const void *data, Size len, bool is_float,
						 PromSample **samples, int *nsamples)
{
	static const uint8 first_hints[4] = {
		PROM_RESET_UNKNOWN, PROM_RESET_NO, PROM_RESET_YES, PROM_RESET_GAUGE
	};
	const uint8 *bytes = data;
	XorReader	r;
	ChunkLayout layout;
	PromSample *out;
	int			count;
	int			n;
	uint8		header;
	uint64		t = 0;
	uint64		t_delta = 0;
	uint64		nvalues;
	/* by place: count, zero count, sum, then the buckets */
	uint64	   *bits;
	int		   *leading;
	int		   *trailing;
	uint64	   *deltas;
	uint64	   *changes;
	uint64		count_delta = 0;
	uint64		zero_delta = 0;
	Size		held = 0;		/* bytes of this chunk's histograms */
	const char *reason;

	if (len < 3)
		return "it is shorter than its 3-byte header";
	count = (bytes[0] << 8) | bytes[1];
	header = bytes[2] >> 6;
	r.p = bytes + 3;
	r.end = bytes + len;
	r.acc = 0;
	r.nacc = 0;
	if ((reason = get_layout(&r, &layout)) != NULL)
		return reason;
	/* a sample takes 4 bits at least, the first 64 */
	if (count > 0 && (uint64) (count - 1) * 4 + 64 > bits_left(&r))
		return "it is shorter than its sample count says";
	nvalues = 3 + layout.nbuckets[0] + layout.nbuckets[1];
	hold(&held, nvalues * (3 * sizeof(uint64) + 2 * sizeof(int)) +
		 sizeof(PromSample) * (Size) Max(count, 1));
	bits = palloc0(sizeof(uint64) * nvalues);
	leading = palloc0(sizeof(int) * nvalues);
	trailing = palloc0(sizeof(int) * nvalues);
	deltas = palloc0(sizeof(uint64) * nvalues);
	changes = palloc0(sizeof(uint64) * nvalues);
	out = palloc(sizeof(PromSample) * Max(count, 1));

	for (n = 0; n < count; n++)
	{
		uint64		word;
		PromHistogram *h;
		PromHistogramBucket *buckets;
		uint64		i;
		bool		stale;

		CHECK_FOR_INTERRUPTS();
		if ((reason = get_varbit(&r, true, &word)) != NULL)
			return reason;
		if (n == 0)
			t = word;
		else
		{
			t_delta += word;
			t += t_delta;
		}
		if (is_float)
		{
			for (i = 0; i < 3; i++)
				if (n == 0 ? !get_bits64(&r, 64, &bits[i]) :
					(reason = get_xor(&r, &bits[i], &leading[i], &trailing[i])) != NULL)
					return reason != NULL ? reason : "it ends before its last sample";
		}
		else
		{
			uint64		counts[2];

			for (i = 0; i < 2; i++)
				if ((reason = get_varbit(&r, n > 0, &counts[i])) != NULL)
					return reason;
			if (n == 0)
			{
				bits[0] = counts[0];
				bits[1] = counts[1];
				if (!get_bits64(&r, 64, &bits[2]))
					return "it ends before its last sample";
			}
			else
			{
				count_delta += counts[0];
				zero_delta += counts[1];
				bits[0] += count_delta;
				bits[1] += zero_delta;
				if ((reason = get_xor(&r, &bits[2], &leading[2], &trailing[2])) != NULL)
					return reason;
			}
		}
		stale = bits[2] == UINT64CONST(0x7ff0000000000002);
		/* a bucket takes a bit at least: none is made for bits not there */
		if (!stale && nvalues - 3 > bits_left(&r))
			return "it ends before its last sample";
		hold(&held, stale ? PROM_HISTOGRAM_HEADER_SIZE :
			 PromHistogramSize(layout.nspans[0], layout.nspans[1],
							   layout.nbuckets[0], layout.nbuckets[1],
							   layout.ncustom));
		h = layout_histogram(&layout, is_float, stale);
		h->reset_hint = n == 0 ? first_hints[header] :
			header == 3 ? PROM_RESET_GAUGE : PROM_RESET_UNKNOWN;
		memcpy(&h->sum, &bits[2], sizeof(double));
		out[n].t = (int64) t;
		out[n].v = PromHistogramSampleValue(h);
		if (stale)
			continue;
		memcpy(&h->count, &bits[0], sizeof(uint64));
		memcpy(&h->zero_count, &bits[1], sizeof(uint64));
		buckets = PromHistogramPositiveBuckets(h);	/* the negative follow */
		for (i = 3; i < nvalues; i++)
		{
			if (is_float)
			{
				if (n == 0 ? !get_bits64(&r, 64, &bits[i]) :
					(reason = get_xor(&r, &bits[i], &leading[i], &trailing[i])) != NULL)
					return reason != NULL ? reason : "it ends before its last sample";
				memcpy(&buckets[i - 3].count, &bits[i], sizeof(double));
				continue;
			}
			if ((reason = get_varbit(&r, true, &word)) != NULL)
				return reason;
			if (n == 0)
				deltas[i] = word;
			else
			{
				changes[i] += word;
				deltas[i] += changes[i];
			}
			buckets[i - 3].delta = (int64) deltas[i];
		}
	}
	*samples = out;
	*nsamples = count;
	return NULL;
}

/*
 * Decode a HISTOGRAM or FLOAT_HISTOGRAM Chunk's data as PromDecodeChunk
 * decodes an XOR chunk's, each sample's value pointing to a histogram
 * (PromSampleHistogram); an error names the chunk.
 */
PromSample *
PromDecodeHistogramChunk(int encoding, const void *data, Size len,
						 int64 frame, size_t index, int *nsamples)
{
	PromSample *samples;
	const char *reason;

	Assert(encoding == PROMETHEUS__CHUNK__ENCODING__HISTOGRAM ||
		   encoding == PROMETHEUS__CHUNK__ENCODING__FLOAT_HISTOGRAM);
	reason = PromHistogramChunkDecode(data, len,
									  encoding == PROMETHEUS__CHUNK__ENCODING__FLOAT_HISTOGRAM,
									  &samples, nsamples);
	if (reason != NULL)
		PromStreamError(psprintf("Chunk %zu of frame %lld is not a valid %s chunk: %s.",
								 index, (long long) frame,
								 encoding == PROMETHEUS__CHUNK__ENCODING__HISTOGRAM ?
								 "HISTOGRAM" : "FLOAT_HISTOGRAM", reason));
	return samples;
}

/*
 * Call fn for each series of each frame of a stream, in order, with the
 * frame's query index and number.  A frame's message is unpacked within a
 * decoding budget (what promread.max_memory leaves, 53200 past it, less
 * what fn charged), and fn called in frame_context, both reset once fn has
 * seen the frame's series; or, when frame_context is NULL, in the current
 * memory context, where the messages stay.  An invalid frame, or a query
 * index out of 0..MAX_QUERY_INDEX, raises 22P03.
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
		/* fn may have charged memory since the budget's limit was set */
		budget->limit = PromMemoryAvailable() + budget->held;
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
		}
	}
	if (frame_context != NULL)
	{
		MemoryContextDelete(budget->context);
		pfree(budget);
	}
}

/*
 * fuzz_answer.c
 *	  libFuzzer target: a STREAMED_XOR_CHUNKS stream, as a shard answers its
 *	  coordinator (src/scan/shards.c) and as prom_read_response_json reads
 *	  responses, through PromForEachChunkedSeries, PromDecodeChunk and
 *	  PromDecodeHistogramChunk (src/protocol/chunk_decode.c): frame lengths
 *	  and CRCs, protobuf-c's unpacking, query indexes, the XOR decoder, and
 *	  the decoder of HISTOGRAM and FLOAT_HISTOGRAM chunks, each decoded
 *	  histogram read to its last byte.
 *
 * Inputs of even length have their frames' CRCs made right first, so that
 * mutations reach protobuf-c and the XOR decoder; those of odd length are
 * read as they are.  An input whose length is 3 modulo 4 is instead the
 * recipe of a valid stream: samples (times by deltas of deltas, many at a
 * bucket edge; values by bit pattern) and a label value are taken from its
 * bytes, encoded by the XOR encoder below (written from the protocol's
 * description, not from chunk_encode.c) into a framed ChunkedReadResponse, and
 * decoded: the stream must be accepted and give back every time and every
 * value's bits exactly.
 *
 * An ERROR is a clean rejection when its SQLSTATE is one chunk_decode.c
 * documents: 22P03 (undecodable), 0A000 (a chunk encoding other than XOR
 * or histogram) and 53200 (past promread.max_memory).  Anything else, a sanitizer report,
 * memory outliving the input or past promread.max_memory (pg_shim.c), or a
 * valid stream decoded to other samples is a bug.
 */
#include "postgres.h"

#include <stdint.h>

#include "pg_shim.h"
#include "histogram/histogram.h"
#include "promread.h"
#include "protocol/protocol.h"
#include "utils/memutils.h"

static const char *const allowed[] = {"22P03", "0A000", "53200", NULL};
static const char *const none_allowed[] = {NULL};

/*
 * Read every byte of a decoded histogram, so that the sanitizers see one
 * shorter than its counts say; and free it.
 */
static uint64
read_histogram(const PromSample *sample)
{
	const PromHistogram *h = PromSampleHistogram(sample);
	const unsigned char *bytes = (const unsigned char *) h;
	uint64		sum = 0;

	if (VARSIZE(h) != PromHistogramSize(h->npositive_spans, h->nnegative_spans,
										h->npositive_buckets, h->nnegative_buckets,
										h->ncustom_values))
		shim_fail("a decoded histogram's size does not match its counts");
	for (Size i = 0; i < VARSIZE(h); i++)
		sum += bytes[i];
	pfree(unconstify(PromHistogram *, h));
	return sum;
}

/*
 * Decode every chunk of a series and read each sample (each histogram), so
 * that the sanitizers see an array shorter than the count it came with.
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
		bool		histograms = chunk->type == PROMETHEUS__CHUNK__ENCODING__HISTOGRAM ||
			chunk->type == PROMETHEUS__CHUNK__ENCODING__FLOAT_HISTOGRAM;
		int			nsamples;
		PromSample *samples = histograms ?
			PromDecodeHistogramChunk(chunk->type, wire_bytes(chunk->data),
									 chunk->data.len, frame, k, &nsamples) :
			PromDecodeChunk(chunk->type, wire_bytes(chunk->data),
							chunk->data.len, frame, k, &nsamples);

		for (int i = 0; i < nsamples; i++)
		{
			*times += (uint64) samples[i].t;
			if (histograms)
				*times += read_histogram(&samples[i]);
		}
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

/*---- Round trips of valid streams ----*/

/* The most samples of a round trip's chunk. */
#define MAX_ROUND_TRIP_SAMPLES	4000

/* Deltas of deltas at and around the XOR buckets' edges. */
static const int64 edge_dods[] = {
	0, 1, -1, 8191, -8191, 8192, -8192, 8193, -8193,
	65535, -65535, 65536, -65536, 65537, -65537,
	524287, -524287, 524288, -524288, 524289, -524289,
	PG_INT64_MAX, PG_INT64_MIN
};

/* Value bits worth having: zeros, NaNs, infinities, subnormals. */
static const uint64 special_bits[] = {
	UINT64CONST(0), UINT64CONST(0x8000000000000000),
	UINT64CONST(0x7FF0000000000002), UINT64CONST(0x7FF8000000000001),
	UINT64CONST(0x7FF0000000000000), UINT64CONST(0xFFF0000000000000),
	UINT64CONST(0x0000000000000001), UINT64CONST(0xFFFFFFFFFFFFFFFF),
	UINT64CONST(0x3FF0000000000000), UINT64CONST(0x3FB999999999999A)
};

/* The input's bytes, read front to back; zeros past the end. */
typedef struct Recipe
{
	const uint8_t *p;
	const uint8_t *end;
} Recipe;

static uint64
take(Recipe *r, int nbytes)
{
	uint64		v = 0;

	for (int i = 0; i < nbytes; i++)
		v = (v << 8) | (r->p < r->end ? *r->p++ : 0);
	return v;
}

/* Sign-extend the low nbits of v. */
static int64
sign_extend(uint64 v, int nbits)
{
	uint64		m = UINT64CONST(1) << (nbits - 1);

	v &= (nbits == 64) ? ~UINT64CONST(0) : (m << 1) - 1;
	return (int64) ((v ^ m) - m);
}

/*
 * Samples from a recipe: a first time, then per sample a control byte that
 * picks the next delta of delta (the same delta, a small one, an edge, 2,
 * 3 or 8 bytes) and the next value (the same, some bits flipped, 8 bytes,
 * a special one).  Times wrap around as uint64, as the encoding does.
 */
static int
recipe_samples(Recipe *r, PromSample *out)
{
	int			n = 0;
	uint64		t = take(r, 8);
	uint64		delta = 0;
	uint64		bits = take(r, 8);

	while (r->p < r->end && n < MAX_ROUND_TRIP_SAMPLES)
	{
		uint8		c = (uint8) take(r, 1);
		int64		dod = 0;

		if (n > 0)
		{
			switch (c & 7)
			{
				case 0:
					break;
				case 1:
					dod = sign_extend(take(r, 1), 8);
					break;
				case 2:
				case 3:
					dod = edge_dods[take(r, 1) % lengthof(edge_dods)];
					break;
				case 4:
					dod = sign_extend(take(r, 2), 16);
					break;
				case 5:
					dod = sign_extend(take(r, 3), 20);
					break;
				default:
					dod = (int64) take(r, 8);
					break;
			}
			/* the second sample's delta is its own, not a dod */
			delta = (n == 1) ? (uint64) dod * 1000 : delta + (uint64) dod;
			t += delta;
			switch ((c >> 3) & 3)
			{
				case 0:
					break;
				case 1:
					bits ^= take(r, 1) << (take(r, 1) % 57);
					break;
				case 2:
					bits = take(r, 8);
					break;
				default:
					bits = special_bits[take(r, 1) % lengthof(special_bits)];
					break;
			}
		}
		out[n].t = (int64) t;
		memcpy(&out[n].v, &bits, sizeof(bits));
		n++;
	}
	return n;
}

/* A bitstream written most significant bit first into zeroed memory. */
typedef struct BitWriter
{
	uint8_t    *buf;
	size_t		nbits;
} BitWriter;

static void
put_bits(BitWriter *w, uint64 v, int n)
{
	for (int i = n - 1; i >= 0; i--)
	{
		if ((v >> i) & 1)
			w->buf[w->nbits >> 3] |= 0x80 >> (w->nbits & 7);
		w->nbits++;
	}
}

static void
put_uvarint(BitWriter *w, uint64 v)
{
	while (v >= 0x80)
	{
		put_bits(w, (v & 0x7F) | 0x80, 8);
		v >>= 7;
	}
	put_bits(w, v, 8);
}

/*
 * The XOR chunk of samples, as the protocol describes it: a 2-byte count;
 * the first time as a zigzag varint and its value's 64 bits; the second
 * time as a uvarint delta; then deltas of deltas in buckets of 0, 14, 17,
 * 20 or 64 bits; each value XORed with the one before, in the window of
 * the last leading and trailing zeros when it fits, else a new one.
 */
static uint8_t *
encode_xor(const PromSample *samples, int n, size_t *len)
{
	BitWriter	w = {palloc0(20 * (Size) n + 16), 0};
	uint64		prev_t = 0;
	uint64		prev_delta = 0;
	uint64		prev_v = 0;
	int			lead = -1;
	int			trail = 0;

	put_bits(&w, (uint64) n, 16);
	for (int i = 0; i < n; i++)
	{
		uint64		t = (uint64) samples[i].t;
		uint64		v;
		uint64		x;

		memcpy(&v, &samples[i].v, sizeof(v));
		if (i == 0)
		{
			put_uvarint(&w, (t << 1) ^ (uint64) ((int64) t >> 63));
			put_bits(&w, v, 64);
			prev_t = t;
			prev_v = v;
			continue;
		}
		if (i == 1)
			put_uvarint(&w, t - prev_t);
		else
		{
			int64		dod = (int64) ((t - prev_t) - prev_delta);

			if (dod == 0)
				put_bits(&w, 0, 1);
			else if (dod >= -8191 && dod <= 8192)
			{
				put_bits(&w, 0x2, 2);
				put_bits(&w, (uint64) dod, 14);
			}
			else if (dod >= -65535 && dod <= 65536)
			{
				put_bits(&w, 0x6, 3);
				put_bits(&w, (uint64) dod, 17);
			}
			else if (dod >= -524287 && dod <= 524288)
			{
				put_bits(&w, 0xE, 4);
				put_bits(&w, (uint64) dod, 20);
			}
			else
			{
				put_bits(&w, 0xF, 4);
				put_bits(&w, (uint64) dod, 64);
			}
		}
		prev_delta = t - prev_t;
		x = v ^ prev_v;
		if (x == 0)
			put_bits(&w, 0, 1);
		else
		{
			int			nl = Min(__builtin_clzll(x), 31);
			int			nt = __builtin_ctzll(x);

			put_bits(&w, 1, 1);
			if (lead >= 0 && nl >= lead && nt >= trail)
			{
				put_bits(&w, 0, 1);
				put_bits(&w, x >> trail, 64 - lead - trail);
			}
			else
			{
				lead = nl;
				trail = nt;
				put_bits(&w, 1, 1);
				put_bits(&w, (uint64) lead, 5);
				put_bits(&w, (uint64) (64 - lead - trail) & 63, 6);
				put_bits(&w, x >> trail, 64 - lead - trail);
			}
		}
		prev_t = t;
		prev_v = v;
	}
	*len = (w.nbits + 7) / 8;
	return w.buf;
}

/* What a round trip expects back. */
typedef struct RoundTrip
{
	const PromSample *samples;
	int			nsamples;
	ProtobufCBinaryData value;	/* of its one label */
	int			nseries;		/* series seen */
} RoundTrip;

/* Compare a decoded series with what was encoded, bit for bit. */
static void
check_series(void *arg, int64 query_index,
			 const Prometheus__ChunkedSeries *series, int64 frame)
{
	RoundTrip  *trip = arg;
	const Prometheus__Chunk *chunk;
	PromSample *samples;
	int			nsamples;

	trip->nseries++;
	if (query_index != 7 || series->n_labels != 1 || series->n_chunks != 1)
		shim_fail("round trip: query index %lld, %zu labels, %zu chunks",
				  (long long) query_index, series->n_labels, series->n_chunks);
	if (series->labels[0]->value.len != trip->value.len ||
		memcmp(wire_bytes(series->labels[0]->value), wire_bytes(trip->value),
			   trip->value.len) != 0)
		shim_fail("round trip: the label value differs");
	chunk = series->chunks[0];
	samples = PromDecodeChunk(chunk->type, wire_bytes(chunk->data),
							  chunk->data.len, frame, 0, &nsamples);
	if (nsamples != trip->nsamples)
		shim_fail("round trip: %d samples decoded, %d encoded", nsamples,
				  trip->nsamples);
	for (int i = 0; i < nsamples; i++)
		if (samples[i].t != trip->samples[i].t ||
			memcmp(&samples[i].v, &trip->samples[i].v, sizeof(double)) != 0)
			shim_fail("round trip: sample %d decoded as (%lld, %016llx), encoded as (%lld, %016llx)",
					  i, (long long) samples[i].t,
					  *(const unsigned long long *) &samples[i].v,
					  (long long) trip->samples[i].t,
					  *(const unsigned long long *) &trip->samples[i].v);
}

/*
 * Encode the samples and label value of a recipe as a framed
 * ChunkedReadResponse (query index 7) and decode it, comparing what comes
 * back.
 */
static void
round_trip(const uint8_t *data, size_t size)
{
	Recipe		r = {data, data + size};
	PromSample *samples = palloc(sizeof(PromSample) * MAX_ROUND_TRIP_SAMPLES);
	RoundTrip	trip = {samples, 0, {0, NULL}, 0};
	Prometheus__Label label = PROMETHEUS__LABEL__INIT;
	Prometheus__Label *labels[1] = {&label};
	Prometheus__Chunk chunk = PROMETHEUS__CHUNK__INIT;
	Prometheus__Chunk *chunks[1] = {&chunk};
	Prometheus__ChunkedSeries series = PROMETHEUS__CHUNKED_SERIES__INIT;
	Prometheus__ChunkedSeries *all[1] = {&series};
	Prometheus__ChunkedReadResponse msg = PROMETHEUS__CHUNKED_READ_RESPONSE__INIT;
	size_t		value_len = take(&r, 1) % 16;
	size_t		msg_len;
	uint8_t    *frame;
	size_t		header = 0;
	uint32		crc;

	trip.value.len = Min(value_len, (size_t) (r.end - r.p));
	trip.value.data = (uint8_t *) r.p;
	r.p += trip.value.len;
	trip.nsamples = recipe_samples(&r, samples);
	if (trip.nsamples == 0)
		return;

	label.name.data = (uint8_t *) "host";
	label.name.len = 4;
	label.value = trip.value;
	chunk.type = PROMETHEUS__CHUNK__ENCODING__XOR;
	chunk.data.data = encode_xor(samples, trip.nsamples, &chunk.data.len);
	series.n_labels = 1;
	series.labels = labels;
	series.n_chunks = 1;
	series.chunks = chunks;
	msg.n_chunked_series = 1;
	msg.chunked_series = all;
	msg.query_index = 7;

	msg_len = prometheus__chunked_read_response__get_packed_size(&msg);
	frame = palloc(msg_len + 14);
	for (size_t v = msg_len; ; v >>= 7)
	{
		frame[header++] = (v & 0x7F) | (v >= 0x80 ? 0x80 : 0);
		if (v < 0x80)
			break;
	}
	prometheus__chunked_read_response__pack(&msg, frame + header + 4);
	crc = PromCrc32c((const char *) frame + header + 4, msg_len);
	frame[header] = crc >> 24;
	frame[header + 1] = crc >> 16;
	frame[header + 2] = crc >> 8;
	frame[header + 3] = crc;

	PromForEachChunkedSeries((const char *) frame, header + 4 + msg_len,
							 check_series, &trip, NULL);
	if (trip.nseries != 1)
		shim_fail("round trip: %d series decoded", trip.nseries);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	shim_begin_input();
	if (size % 4 == 3)
	{
		SHIM_RUN(round_trip(data, size));
		shim_end_input(none_allowed);
	}
	else
	{
		SHIM_RUN(decode(data, size));
		shim_end_input(allowed);
	}
	return 0;
}

/*-------------------------------------------------------------------------
 *
 * chunk_encode.c
 *	  STREAMED_XOR_CHUNKS responses: series written as frames of XOR chunks,
 *	  straight from series sets, with the stored chunks of chunk metrics as
 *	  they are; and the XOR chunk encoder that compaction uses too.
 *
 * 1. A chunked answer is a stream of frames, each uvarint(message length),
 *    the CRC-32C of the message (big-endian), then a ChunkedReadResponse {
 *    chunked_series = 1, query_index = 2 } holding one ChunkedSeries {
 *    labels = 1, chunks = 2 }.  Queries are answered in order, a query's
 *    series in the set's order; nothing is compressed further.
 * 2. A series' samples are cut into chunks of 120 (the last shorter), each
 *    with the times of its first and last sample.  A chunk's data is
 *    Prometheus's XOR encoding (tsdb/chunkenc): a 2-byte sample count, then
 *    bits, most significant first: the first time as a zigzag varint and
 *    value's 64 bits, the second time's delta as a uvarint, later times as
 *    deltas of deltas in five buckets; values XORed with the previous one,
 *    written inside the previous window of leading and trailing zeros or
 *    with a new one.  Times wrap as Go's int64 arithmetic does, so any time
 *    encodes exactly; values go by their bits, NaN payloads included.  One
 *    encoder writes them, from a series set's runs here and from arrays of
 *    samples for others (PromEncodeXorChunk: compaction).
 * 3. Every series is exactly one frame, whatever its size.  Prometheus's
 *    own server cuts a long series into several frames of the same labels,
 *    but its remote-read client (2.55 and later, storage/remote/codec.go)
 *    reads only chunked_series[0] of each frame and makes a series of each
 *    frame without joining them: a series in two frames would be two
 *    series with one label set.  The client refuses a frame whose message
 *    is larger than its chunked_read_limit (ChunkedReader, 50,000,000 bytes
 *    by default), so a series whose frame's message would pass
 *    promread.max_frame_bytes (that default) is refused (54000) as soon as
 *    its chunks pass it, rather than sent and rejected by the client.
 * 4. A series' chunks are encoded into a scratch area while the size of its
 *    frame is kept; once complete the frame is written in one pass into the
 *    answer, its CRC computed by PostgreSQL's CRC-32C.  No message objects,
 *    no allocation per sample.
 * 5. A series that holds histograms is cut into histogram chunks instead
 *    (histogram_chunk.c), in the same frames.
 * 6. A series of a chunk metric brings its stored chunks (a set that keeps
 *    chunks, series_set.c), sent as they are, whole, as Prometheus's own
 *    server sends its chunks: samples outside the query's range included,
 *    which the client drops.  Its samples, the head's, are cut into chunks
 *    between them, all in time order; chunks that overlap another stored
 *    chunk or head samples are decoded, merged (a head sample replaces a
 *    chunk's sample of its millisecond) and cut again (add_stored_chunks).
 *    Nothing is done per sample of a chunk sent as it is.
 * 7. chunk_decode.c reads such streams back.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "engine/engine.h"
#include "lib/stringinfo.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "port/pg_bitutils.h"
#include "protocol.h"
#include "storage/storage.h"
#include "bitstream.h"
#include "utils/memutils.h"

/* Field numbers. */
#define CHUNKED_SERIES_FIELD	1	/* ChunkedReadResponse.chunked_series */
#define QUERY_INDEX_FIELD		2	/* ChunkedReadResponse.query_index */
#define CHUNKS_FIELD			2	/* ChunkedSeries.chunks */
#define CHUNK_MIN_TIME_FIELD	1
#define CHUNK_MAX_TIME_FIELD	2
#define CHUNK_TYPE_FIELD		3
#define CHUNK_DATA_FIELD		4

/* Chunk.Encoding XOR. */
#define CHUNK_ENCODING_XOR		1

/* Samples per chunk, as Prometheus cuts them. */
#define XOR_CHUNK_SAMPLES		PROM_CHUNK_SAMPLES

/* Bound on the bytes of one encoded chunk of 120 samples. */
#define XOR_CHUNK_MAX_BYTES		PromXorChunkBound(XOR_CHUNK_SAMPLES)

/* Room the writer of a chunk needs (bitstream.h). */
#define XOR_CHUNK_ROOM			(XOR_CHUNK_MAX_BYTES + BITSTREAM_SLACK)

/*---- The XOR encoder ----*/

/* Write a uvarint as whole bytes of the bitstream. */
static inline void
put_uvarint(XorWriter *w, uint64 value)
{
	while (value >= 0x80)
	{
		put_bits(w, (value & 0x7f) | 0x80, 8);
		value >>= 7;
	}
	put_bits(w, value, 8);
}

/* Write a delta of deltas in the smallest of the five buckets. */
static inline void
put_dod(XorWriter *w, int64 dod)
{
	uint64		bits = (uint64) dod;

	if (dod == 0)
		put_bits(w, 0, 1);
	else if (dod >= -8191 && dod <= 8192)
		put_bits(w, (UINT64CONST(0x2) << 14) | (bits & 0x3fff), 16);
	else if (dod >= -65535 && dod <= 65536)
		put_bits(w, (UINT64CONST(0x6) << 17) | (bits & 0x1ffff), 20);
	else if (dod >= -524287 && dod <= 524288)
		put_bits(w, (UINT64CONST(0xe) << 20) | (bits & 0xfffff), 24);
	else
	{
		put_bits(w, 0xf, 4);
		put_bits64(w, bits, 64);
	}
}

/* An XOR chunk being written: the state of its last sample. */
typedef struct XorChunkWriter
{
	XorWriter	w;
	uint8	   *out;			/* the chunk's first byte */
	int			n;				/* samples written */
	int64		min_t;
	int64		prev_t;
	uint64		prev_delta;
	uint64		prev_bits;
	uint8		leading;
	uint8		trailing;
} XorChunkWriter;

/* Start an XOR chunk at out, which has room for PromXorChunkBound bytes. */
static inline void
xor_chunk_start(XorChunkWriter *c, uint8 *out)
{
	c->out = out;
	c->w.p = out + 2;
	c->w.acc = 0;
	c->w.nacc = 0;
	c->n = 0;
	c->min_t = 0;
	c->prev_t = 0;
	c->prev_delta = 0;
	c->prev_bits = 0;
	c->leading = XOR_NO_WINDOW;
	c->trailing = 0;
}

/*
 * Append a sample, later than the chunk's last, to an XOR chunk: inlined
 * into each loop, so that the chunk's state stays in registers.
 */
static pg_attribute_always_inline void
xor_chunk_append(XorChunkWriter *c, int64 t, double v)
{
	uint64		bits = wire_double_bits(v);

	if (c->n == 0)
	{
		uint64		ut = (uint64) t;

		/* zigzag varint of the time, then the value's bits */
		put_uvarint(&c->w, (ut << 1) ^ (t < 0 ? ~UINT64CONST(0) : 0));
		put_bits64(&c->w, bits, 64);
		c->min_t = t;
	}
	else
	{
		uint64		delta = (uint64) t - (uint64) c->prev_t;

		if (c->n == 1)
			put_uvarint(&c->w, delta);
		else
			put_dod(&c->w, (int64) (delta - c->prev_delta));
		put_xor(&c->w, bits ^ c->prev_bits, &c->leading, &c->trailing);
		c->prev_delta = delta;
	}
	c->prev_t = t;
	c->prev_bits = bits;
	c->n++;
}

/*
 * Finish an XOR chunk of at least one sample: its sample count written,
 * returns its length and the times of its first and last samples.
 */
static inline Size
xor_chunk_finish(XorChunkWriter *c, int64 *min_t, int64 *max_t)
{
	Assert(c->n > 0 && c->n <= PG_UINT16_MAX);
	*min_t = c->min_t;
	*max_t = c->prev_t;
	c->out[0] = (uint8) (c->n >> 8);
	c->out[1] = (uint8) c->n;
	return finish_bits(&c->w) - c->out;
}

/*
 * Encode n samples (1 to 65535, in time order) as one XOR chunk into out,
 * which has room for PromXorChunkBound(n) bytes; returns its length and
 * the times of its first and last samples.
 */
Size
PromEncodeXorChunk(const PromSample *samples, int n, uint8 *out,
				   int64 *min_t, int64 *max_t)
{
	XorChunkWriter c;
	int			i;

	xor_chunk_start(&c, out);
	for (i = 0; i < n; i++)
		xor_chunk_append(&c, samples[i].t, samples[i].v);
	return xor_chunk_finish(&c, min_t, max_t);
}

/* A position in a series' samples: a run, and a sample of it. */
typedef struct SampleCursor
{
	PromSampleRun run;
	uint32		index;
} SampleCursor;

/* Set a cursor at a series' first sample. */
static inline void
cursor_start(SampleCursor *cursor, const PromSeries *series)
{
	PromSampleRunFirst(&cursor->run, series);
	cursor->index = 0;
}

/* Are there samples left?  Skips empty runs. */
static inline bool
cursor_has_more(SampleCursor *cursor)
{
	while (cursor->run.block != NULL && cursor->index >= cursor->run.count)
	{
		PromSampleRunNext(&cursor->run);
		cursor->index = 0;
	}
	return cursor->run.block != NULL;
}

/*
 * Encode the next samples of a series (at most 120) as an XOR chunk into
 * out, which has room for XOR_CHUNK_ROOM; returns its length and the
 * times of its first and last samples.  There must be a sample left.
 */
static Size
encode_chunk(SampleCursor *cursor, uint8 *out, int64 *min_t, int64 *max_t)
{
	XorChunkWriter c;

	xor_chunk_start(&c, out);
	while (c.n < XOR_CHUNK_SAMPLES && cursor_has_more(cursor))
	{
		PromSample	sample = PromSampleRunSample(&cursor->run, cursor->index++);

		xor_chunk_append(&c, sample.t, sample.v);
	}
	return xor_chunk_finish(&c, min_t, max_t);
}

/*---- Frames ----*/

/* A chunk encoded into the scratch area, waiting for its series' frame. */
typedef struct ChunkRef
{
	int			encoding;		/* Chunk.Encoding */
	int64		min_t;
	int64		max_t;
	const char *stored;			/* a stored chunk's data, or NULL */
	Size		offset;			/* else of its data in the scratch area */
	Size		len;			/* bytes of data */
	Size		message_size;	/* bytes of its Chunk message */
} ChunkRef;

/* The chunks of the series being encoded, for its frame. */
typedef struct FrameScratch
{
	uint8	   *data;
	Size		used;
	Size		capacity;
	ChunkRef   *chunks;
	int			nchunks;
	int			chunks_capacity;
} FrameScratch;

/* Bytes of a Chunk message. */
static inline Size
chunk_message_size(const ChunkRef *chunk)
{
	return (chunk->min_t != 0 ? 1 + wire_varint_size((uint64) chunk->min_t) : 0) +
		(chunk->max_t != 0 ? 1 + wire_varint_size((uint64) chunk->max_t) : 0) +
		2 + wire_len_field_size(chunk->len);
}

/*
 * Bytes of a whole frame whose ChunkedSeries has series_size bytes, and of
 * its message.
 */
static inline Size
frame_size(Size series_size, int64 query_index, Size *message_size)
{
	Size		size = wire_len_field_size(series_size);

	if (query_index != 0)
		size += 1 + wire_varint_size((uint64) query_index);
	*message_size = size;
	return wire_varint_size(size) + 4 + size;
}

/*
 * Make room in the scratch area for one more chunk of at most room bytes.
 */
static ChunkRef *
scratch_next_chunk(FrameScratch *scratch, Size room)
{
	if (scratch->capacity - scratch->used < room)
	{
		scratch->capacity = Max(scratch->capacity * 2,
								scratch->used + room);
		scratch->data = repalloc_huge(scratch->data, scratch->capacity);
	}
	if (scratch->nchunks == scratch->chunks_capacity)
	{
		scratch->chunks_capacity *= 2;
		scratch->chunks = repalloc_huge(scratch->chunks,
										sizeof(ChunkRef) * scratch->chunks_capacity);
	}
	return &scratch->chunks[scratch->nchunks++];
}

/*
 * Write one frame: a series' labels and the chunks of the scratch area,
 * whose ChunkedSeries message has series_size bytes.  Empties the scratch.
 */
static void
write_frame(PromBuffer *buf, const PromSeriesSet *set, const PromSeries *series,
			Size series_size, int64 query_index, FrameScratch *scratch)
{
	Size		message_size;
	Size		total = frame_size(series_size, query_index, &message_size);
	char	   *start = PromBufferReserve(buf, total);
	char	   *p;
	char	   *message;
	uint32		crc;
	int			i;

	p = wire_put_varint(start, message_size);
	message = p + 4;
	p = wire_put_len_header(message, CHUNKED_SERIES_FIELD, series_size);
	p = PromPutSeriesLabels(p, set, series);
	for (i = 0; i < scratch->nchunks; i++)
	{
		const ChunkRef *chunk = &scratch->chunks[i];

		p = wire_put_len_header(p, CHUNKS_FIELD, chunk->message_size);
		if (chunk->min_t != 0)
		{
			*p++ = (char) WIRE_TAG(CHUNK_MIN_TIME_FIELD, WIRE_VARINT);
			p = wire_put_varint(p, (uint64) chunk->min_t);
		}
		if (chunk->max_t != 0)
		{
			*p++ = (char) WIRE_TAG(CHUNK_MAX_TIME_FIELD, WIRE_VARINT);
			p = wire_put_varint(p, (uint64) chunk->max_t);
		}
		*p++ = (char) WIRE_TAG(CHUNK_TYPE_FIELD, WIRE_VARINT);
		*p++ = (char) chunk->encoding;
		p = wire_put_len_header(p, CHUNK_DATA_FIELD, chunk->len);
		memcpy(p, chunk->stored != NULL ? chunk->stored :
			   (const char *) scratch->data + chunk->offset, chunk->len);
		p += chunk->len;
	}
	if (query_index != 0)
	{
		*p++ = (char) WIRE_TAG(QUERY_INDEX_FIELD, WIRE_VARINT);
		p = wire_put_varint(p, (uint64) query_index);
	}
	Assert(p == start + total);
	Assert(p == message + message_size);

	crc = PromCrc32c(message, message_size);
	message[-4] = (char) (crc >> 24);
	message[-3] = (char) (crc >> 16);
	message[-2] = (char) (crc >> 8);
	message[-1] = (char) crc;

	scratch->used = 0;
	scratch->nchunks = 0;
}

/* Refuse a series whose frame's message would pass promread.max_frame_bytes. */
static pg_noinline void
frame_limit_exceeded(const PromSeriesSet *set, const PromSeries *series,
					 Size message_size)
{
	ereport(ERROR,
			(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
			 errmsg("series is too large for one STREAMED_XOR_CHUNKS frame"),
			 errdetail("The frame of series %s has a message of at least %zu bytes; \"promread.max_frame_bytes\" allows %d, and a series is never cut over several frames.",
					   PromSeriesLabelsText(set, series), message_size,
					   promread_max_frame_bytes),
			 errhint("Query a shorter time range, or raise chunked_read_limit in Prometheus's remote_read configuration and \"promread.max_frame_bytes\" to the same size.")));
}

/*
 * Count a chunk of the scratch area, whose data is written, into its
 * series' ChunkedSeries of series_size bytes so far; returns the new size,
 * refusing a series whose frame would pass promread.max_frame_bytes.
 */
static Size
count_chunk(const PromSeriesSet *set, const PromSeries *series,
			Size series_size, int64 query_index, FrameScratch *scratch,
			ChunkRef *chunk)
{
	Size		message_size;

	if (chunk->stored == NULL)
		scratch->used += chunk->len;
	chunk->message_size = chunk_message_size(chunk);
	series_size += wire_len_field_size(chunk->message_size);
	(void) frame_size(series_size, query_index, &message_size);
	if (message_size > (Size) promread_max_frame_bytes)
		frame_limit_exceeded(set, series, message_size);
	return series_size;
}

/*
 * The next chunk of the scratch area, an XOR chunk encoded at read time
 * into the room after the data written so far: the caller encodes it and
 * sets its length and times.
 */
static ChunkRef *
next_xor_chunk(FrameScratch *scratch)
{
	ChunkRef   *chunk = scratch_next_chunk(scratch, XOR_CHUNK_ROOM);

	CHECK_FOR_INTERRUPTS();
	chunk->encoding = CHUNK_ENCODING_XOR;
	chunk->stored = NULL;
	chunk->offset = scratch->used;
	return chunk;
}

/*
 * Encode a series of floats, which has samples, as XOR chunks in the
 * scratch area; returns the size of its ChunkedSeries.
 */
static Size
add_xor_chunks(const PromSeriesSet *set, const PromSeries *series,
			   Size series_size, int64 query_index, FrameScratch *scratch)
{
	SampleCursor cursor;

	cursor_start(&cursor, series);
	while (cursor_has_more(&cursor))
	{
		ChunkRef   *chunk = next_xor_chunk(scratch);

		chunk->len = encode_chunk(&cursor, scratch->data + scratch->used,
								  &chunk->min_t, &chunk->max_t);
		Assert(chunk->len <= XOR_CHUNK_MAX_BYTES);
		series_size = count_chunk(set, series, series_size, query_index,
								  scratch, chunk);
	}
	return series_size;
}

/*
 * Cut n histogram samples (n > 0, in time order) into histogram chunks
 * (histogram_chunk.c) in the scratch area; returns the size of the series'
 * ChunkedSeries.
 */
static Size
add_histogram_sample_chunks(const PromSeriesSet *set, const PromSeries *series,
							const PromSample *samples, int64 n,
							Size series_size, int64 query_index,
							FrameScratch *scratch, PromHistogramChunker *chunker)
{
	int			encoding;
	Size		len;
	int64		min_t;
	int64		max_t;

	PromHistogramChunkerStart(chunker, samples, n);
	while (PromHistogramChunkerNext(chunker, &encoding, &len, &min_t, &max_t))
	{
		ChunkRef   *chunk = scratch_next_chunk(scratch, len);

		CHECK_FOR_INTERRUPTS();
		chunk->encoding = encoding;
		chunk->stored = NULL;
		chunk->offset = scratch->used;
		chunk->len = len;
		chunk->min_t = min_t;
		chunk->max_t = max_t;
		memcpy(scratch->data + scratch->used, chunker->buf, len);
		series_size = count_chunk(set, series, series_size, query_index,
								  scratch, chunk);
	}
	return series_size;
}

/*
 * Encode a series of histograms, which has samples, as histogram chunks
 * in the scratch area; returns the size of its ChunkedSeries.
 */
static Size
add_histogram_chunks(const PromSeriesSet *set, const PromSeries *series,
					 Size series_size, int64 query_index,
					 FrameScratch *scratch, PromHistogramChunker *chunker)
{
	PromSample *samples = palloc_extended(sizeof(PromSample) *
										  PromSeriesSampleCount(series),
										  MCXT_ALLOC_HUGE);

	PromSeriesCopySamples(series, samples);
	series_size = add_histogram_sample_chunks(set, series, samples,
											  PromSeriesSampleCount(series),
											  series_size, query_index,
											  scratch, chunker);
	pfree(samples);
	return series_size;
}

/*---- Stored chunks ----*/

/*
 * What the encoder of one query's series keeps between them: the scratch
 * area of a frame, the chunker of histograms, and for the stored chunks of
 * chunk metrics a buffer and a context to decode them in.
 */
typedef struct ChunkedWriter
{
	FrameScratch scratch;
	PromHistogramChunker chunker;
	PromSample *decoded;		/* an XOR chunk's samples, reused */
	int			decoded_capacity;
	MemoryContext merge_context;	/* a merge's samples, reset after each */
} ChunkedWriter;

/*
 * Cut n samples (n >= 0, in time order) of a series into chunks in the
 * scratch area: XOR chunks of 120 samples (the last shorter), or histogram
 * chunks; returns the size of its ChunkedSeries.
 */
static Size
add_sample_chunks(const PromSeriesSet *set, const PromSeries *series,
				  const PromSample *samples, int64 n, Size series_size,
				  int64 query_index, ChunkedWriter *writer)
{
	FrameScratch *scratch = &writer->scratch;
	int64		i;

	if (n == 0)
		return series_size;
	if (PromSeriesHoldsHistograms(set, series))
		return add_histogram_sample_chunks(set, series, samples, n,
										   series_size, query_index, scratch,
										   &writer->chunker);
	for (i = 0; i < n; i += XOR_CHUNK_SAMPLES)
	{
		ChunkRef   *chunk = next_xor_chunk(scratch);

		chunk->len = PromEncodeXorChunk(samples + i,
										(int) Min(n - i, XOR_CHUNK_SAMPLES),
										scratch->data + scratch->used,
										&chunk->min_t, &chunk->max_t);
		series_size = count_chunk(set, series, series_size, query_index,
								  scratch, chunk);
	}
	return series_size;
}

/*
 * Add a stored chunk to the scratch area's list as it is: its data stays
 * where the set keeps it until the frame is written.
 */
static Size
add_stored_chunk(const PromSeriesSet *set, const PromSeries *series,
				 const PromStoredChunk *stored, Size series_size,
				 int64 query_index, FrameScratch *scratch)
{
	ChunkRef   *chunk = scratch_next_chunk(scratch, 0);

	chunk->encoding = stored->encoding;
	chunk->min_t = stored->min_t;
	chunk->max_t = stored->max_t;
	chunk->stored = stored->data;
	chunk->offset = 0;
	chunk->len = stored->len;
	return count_chunk(set, series, series_size, query_index, scratch, chunk);
}

/*
 * Merge two runs of samples in time order into out, which has room for both:
 * of two samples of one millisecond, b's is kept.  Returns the count.
 */
static int64
merge_samples(const PromSample *a, int64 na, const PromSample *b, int64 nb,
			  PromSample *out)
{
	int64		i = 0;
	int64		j = 0;
	int64		n = 0;

	while (i < na || j < nb)
	{
		if (j == nb || (i < na && a[i].t < b[j].t))
			out[n++] = a[i++];
		else
		{
			if (i < na && a[i].t == b[j].t)
				i++;
			out[n++] = b[j++];
		}
	}
	return n;
}

/*
 * Decode stored chunks of a series (in time order) whose times overlap
 * each other's or head samples', merge them with those head samples (a head
 * sample replaces a chunk's sample of the same millisecond, as compaction
 * does; of two chunks, the later one's), and cut the result into chunks
 * again.  A chunk that does not decode is an error (XX001).
 */
static Size
add_merged_chunks(const PromSeriesSet *set, const PromSeries *series,
				  const PromStoredChunk *stored, int nstored,
				  const PromSample *head, int64 nhead, Size series_size,
				  int64 query_index, ChunkedWriter *writer)
{
	MemoryContext oldcxt = MemoryContextSwitchTo(writer->merge_context);
	int64		total = nhead;
	PromSample *merged;
	PromSample *other;
	int64		n = 0;
	int			k;

	for (k = 0; k < nstored; k++)
		total += stored[k].nsamples;
	merged = palloc_extended(sizeof(PromSample) * total, MCXT_ALLOC_HUGE);
	other = palloc_extended(sizeof(PromSample) * total, MCXT_ALLOC_HUGE);
	for (k = 0; k < nstored; k++)
	{
		PromSample *samples;
		PromSample *swap;
		const char *reason;
		int			count;

		if (stored[k].encoding == PROM_CHUNK_XOR)
		{
			/* the buffer is the writer's, kept from merge to merge */
			MemoryContextSwitchTo(oldcxt);
			reason = PromXorChunkDecodeInto(stored[k].data, stored[k].len,
											&writer->decoded,
											&writer->decoded_capacity, &count);
			MemoryContextSwitchTo(writer->merge_context);
			samples = writer->decoded;
		}
		else
			reason = PromHistogramChunkDecode(stored[k].data, stored[k].len,
											  stored[k].encoding == PROM_CHUNK_FLOAT_HISTOGRAM,
											  &samples, &count);
		if (reason != NULL || count > stored[k].nsamples)
			ereport(ERROR,
					(errcode(ERRCODE_DATA_CORRUPTED),
					 errmsg("invalid stored chunk of series %s",
							PromSeriesLabelsText(set, series)),
					 errdetail("The chunk from %lld ms is not valid: %s.",
							   (long long) stored[k].min_t,
							   reason != NULL ? reason :
							   "it holds more samples than its header says")));
		n = merge_samples(merged, n, samples, count, other);
		swap = merged;
		merged = other;
		other = swap;
	}
	n = merge_samples(merged, n, head, nhead, other);
	MemoryContextSwitchTo(oldcxt);
	series_size = add_sample_chunks(set, series, other, n, series_size,
									query_index, writer);
	MemoryContextReset(writer->merge_context);
	return series_size;
}

/*
 * Add a series' stored chunks (in time order) and its samples, the head's,
 * to the scratch area, all in time order: a stored chunk as it is, whole,
 * its samples outside the query's range included (as Prometheus's server
 * sends its chunks: the client drops them); the head samples between them
 * cut into chunks; stored chunks whose times overlap each other's or head
 * samples' merged (add_merged_chunks).  Work per chunk, and per head sample:
 * none per sample of a chunk sent as it is.
 */
static Size
add_stored_chunks(const PromSeriesSet *set, const PromSeries *series,
				  const PromStoredChunk *stored, int nstored,
				  Size series_size, int64 query_index, ChunkedWriter *writer)
{
	int64		nhead = PromSeriesSampleCount(series);
	PromSample *head = NULL;
	int64		h = 0;
	int			c = 0;

	if (nhead > 0)
	{
		head = palloc_extended(sizeof(PromSample) * nhead, MCXT_ALLOC_HUGE);
		PromSeriesCopySamples(series, head);
	}
	if (writer->merge_context == NULL)
		writer->merge_context = AllocSetContextCreate(CurrentMemoryContext,
													  "promread chunk merge",
													  ALLOCSET_DEFAULT_SIZES);
	while (c < nstored)
	{
		int			first = c;
		int64		end_t = stored[c].max_t;
		int64		from;
		int64		to;

		CHECK_FOR_INTERRUPTS();
		/* the chunks whose times overlap, one after another */
		for (c++; c < nstored && stored[c].min_t <= end_t; c++)
			end_t = Max(end_t, stored[c].max_t);
		/* the head samples before them, then those among them */
		for (from = h; from < nhead && head[from].t < stored[first].min_t; from++)
			;
		series_size = add_sample_chunks(set, series, head + h, from - h,
										series_size, query_index, writer);
		for (to = from; to < nhead && head[to].t <= end_t; to++)
			;
		if (c - first == 1 && to == from)
			series_size = add_stored_chunk(set, series, &stored[first],
										   series_size, query_index,
										   &writer->scratch);
		else
			series_size = add_merged_chunks(set, series, stored + first,
											c - first, head + from, to - from,
											series_size, query_index, writer);
		h = to;
	}
	series_size = add_sample_chunks(set, series, head + h, nhead - h,
									series_size, query_index, writer);
	if (head != NULL)
		pfree(head);
	return series_size;
}

/*
 * Append the frames answering one query, whose position in the request is
 * query_index, from its finished series set: one frame per series, in the
 * set's order, a series too large for one frame refused (see 3. above).
 */
void
PromAppendChunkedResult(PromBuffer *buf, const PromSeriesSet *set,
						int64 query_index)
{
	int			nseries;
	PromSeries *const *series = PromSeriesSetSeries(set, &nseries);
	ChunkedWriter writer;
	FrameScratch *scratch = &writer.scratch;
	int			i;

	memset(&writer, 0, sizeof(writer));
	scratch->capacity = 4 * XOR_CHUNK_ROOM;
	scratch->data = palloc(scratch->capacity);
	scratch->chunks_capacity = 64;
	scratch->chunks = palloc(sizeof(ChunkRef) * scratch->chunks_capacity);

	for (i = 0; i < nseries; i++)
	{
		const PromStoredChunk *stored;
		int			nstored;
		Size		series_size;

		PromPrefetchSeries(series, i, nseries);
		stored = PromSeriesSetStoredChunks(set, i, &nstored);
		if (PromSeriesSampleCount(series[i]) == 0 && nstored == 0)
			continue;			/* no frame without a chunk */
		series_size = PromSeriesLabelsSize(set, series[i]);
		if (nstored > 0)
			series_size = add_stored_chunks(set, series[i], stored, nstored,
											series_size, query_index, &writer);
		else if (PromSeriesHoldsHistograms(set, series[i]))
			series_size = add_histogram_chunks(set, series[i], series_size,
											   query_index, scratch,
											   &writer.chunker);
		else
			series_size = add_xor_chunks(set, series[i], series_size,
										 query_index, scratch);
		write_frame(buf, set, series[i], series_size, query_index, scratch);
	}
	if (writer.chunker.buf != NULL)
		pfree(writer.chunker.buf);
	if (writer.decoded != NULL)
		pfree(writer.decoded);
	if (writer.merge_context != NULL)
		MemoryContextDelete(writer.merge_context);
	pfree(scratch->data);
	pfree(scratch->chunks);
}

/*-------------------------------------------------------------------------
 *
 * snappy_writer.c
 *	  A snappy-compressed message written from producers of its parts, with
 *	  no copy of it held uncompressed and no room kept for the worst case.
 *
 * Snappy compresses a message in independent fragments of 64 kB, so one
 * call of snappy per fragment, with each call's own length prefix left
 * out, gives byte for byte what one snappy_compress() of the whole message
 * gives.  For each fragment the writer calls snappy through its C++ Source
 * and Sink (snappy_stream.cpp): snappy pulls the fragment from the part's
 * producer, a piece of at most PROM_SNAPPY_PIECE bytes at a time, and
 * gathers it in working memory of its own; it compresses into the output
 * when the output has room for the worst case, and otherwise into scratch
 * memory of its own, from which the writer copies what it took.  Snappy
 * allocates that working memory on every call whichever interface is used,
 * so the writer keeps no stage of a fragment and no room for snappy's bound
 * of its compressed size (more than the fragment, several times what labels
 * and samples compress to).  The output grows to what the rest of
 * the message should take at the compression ratio so far, and a
 * sixteenth.
 *
 * A part is produced while snappy runs, so the producer and every callback
 * here must not throw a PostgreSQL error across snappy's C++ frames: memory
 * is asked for without failing, a failure is noted, snappy is fed zeros to
 * the end of its fragment, and the error is raised once it has returned.
 * Interrupts are checked between fragments.
 *
 * A message of several parts (one QueryResult per query of a request) is
 * written part by part, and each part's memory (its series set) goes after
 * it is written: what a part leaves of a fragment it does not fill is kept
 * among the pieces, and the next part's fragment begins with it.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "miscadmin.h"
#include "phases.h"
#include "protocol.h"
#include "snappy_stream.h"
#include "utils/memutils.h"

#include <snappy-c.h>

/* Bytes of snappy's fragments. */
#define SNAPPY_FRAGMENT_SIZE	65536

/* Most bytes of the snappy length prefix (a varint of a uint32). */
#define SNAPPY_PREFIX_MAX	5

/* Bytes before the compressed elements in the output: header, prefix room. */
#define OUT_HEADER	(VARHDRSZ + SNAPPY_PREFIX_MAX)

/* What snappy is fed after a failure, to the end of its fragment. */
static const char zeros[PROM_SNAPPY_PIECE];

/* Start a snappy-compressed message in the current memory context. */
void
PromSnappyWriterInit(PromSnappyWriter *writer)
{
	memset(writer, 0, sizeof(PromSnappyWriter));
	writer->context = CurrentMemoryContext;
	writer->out_size = OUT_HEADER;
	writer->out = palloc(writer->out_size);
	writer->out_len = OUT_HEADER;
}

/* Bytes produced and not yet compressed. */
static inline Size
piece_bytes(const PromSnappyWriter *writer)
{
	return writer->piece_end - writer->piece_start;
}

/*
 * Reallocate a buffer of the writer to size bytes (at most MaxAllocSize);
 * false, the buffer as it was, when the memory could not be had.  It does
 * not throw, so that it may run inside snappy.
 */
static bool
resize_buffer(char **buffer, Size *buffer_size, Size size)
{
	char	   *resized = PromReallocNoOOM(*buffer, *buffer_size, size);

	if (resized == NULL)
		return false;
	*buffer = resized;
	*buffer_size = size;
	return true;
}

/*
 * Give the pieces room for size bytes, keeping the bytes not yet compressed
 * at their start; false when the memory could not be had.  It does not
 * throw.
 */
static bool
grow_piece(PromSnappyWriter *writer, Size size)
{
	Size		kept = piece_bytes(writer);

	memmove(writer->piece, writer->piece + writer->piece_start, kept);
	writer->piece_start = 0;
	writer->piece_end = kept;
	if (size <= writer->piece_size)
		return true;
	return size <= MaxAllocSize &&
		resize_buffer(&writer->piece, &writer->piece_size, size);
}

/*
 * Produce the next piece after the bytes not yet compressed, at most room
 * bytes (the room of the pieces unless an item needs more); false when the
 * memory for an item could not be had.  It does not throw.
 */
static bool
produce_piece(PromSnappyWriter *writer, Size room)
{
	PromProducer *producer = writer->producer;
	uint64		begin = PromPhaseBegin();

	for (;;)
	{
		Size		need = 0;
		Size		n = producer->produce(producer,
										  writer->piece + writer->piece_end,
										  room, &need);

		if (n > 0)
		{
			Assert(n <= producer->remaining);
			producer->remaining -= n;
			writer->piece_end += n;
			break;
		}
		/* an item that fits comes out: a producer that gives none is stuck */
		if (need <= room || !grow_piece(writer, writer->piece_end + need))
			return false;
		room = need;
	}
	if (begin != 0)
		writer->produce_ticks += PromTicks() - begin;
	return true;
}

/* Source: the next bytes of the fragment, produced when none are left. */
static const char *
peek_input(void *arg, size_t *len)
{
	PromSnappyWriter *writer = arg;

	if (!writer->failed && piece_bytes(writer) == 0)
	{
		writer->piece_start = writer->piece_end = 0;
		/* the fragment's length counts only bytes still to come */
		if (writer->producer == NULL || writer->producer->remaining == 0 ||
			!produce_piece(writer, writer->piece_size))
			writer->failed = true;
	}
	if (writer->failed)
	{
		*len = sizeof(zeros);
		return zeros;
	}
	*len = piece_bytes(writer);
	return writer->piece + writer->piece_start;
}

/* Source: n bytes of what peek_input gave were taken. */
static void
skip_input(void *arg, size_t n)
{
	PromSnappyWriter *writer = arg;

	if (!writer->failed)
		writer->piece_start += n;
}

/* Sink: the output's room for len more bytes, if it has it, else scratch. */
static char *
output_room(void *arg, size_t len, char *scratch)
{
	PromSnappyWriter *writer = arg;

	if (writer->out_size - writer->out_len >= len)
		return writer->out + writer->out_len;
	return scratch;
}

/*
 * Grow the output for n more bytes: to what the rest of the message should
 * take at the compression ratio so far, and a sixteenth; false when the
 * memory could not be had.  It does not throw.
 */
static bool
grow_output(PromSnappyWriter *writer, Size n)
{
	Size		need = writer->out_len + n;
	double		ratio = (double) (need - OUT_HEADER) / Max(writer->total, 1);
	double		rest = (double) (writer->expected - Min(writer->expected,
														writer->total)) * ratio;
	Size		size = need + (Size) Min(rest + rest / 16, (double) MaxAllocSize);

	return resize_buffer(&writer->out, &writer->out_size,
						 Min(size, MaxAllocSize));
}

/* Sink: n compressed bytes, in the output's room or in snappy's scratch. */
static void
append_output(void *arg, const char *bytes, size_t n)
{
	PromSnappyWriter *writer = arg;

	if (writer->failed)
		return;
	if (bytes != writer->out + writer->out_len)
	{
		if (n > writer->out_size - writer->out_len && !grow_output(writer, n))
		{
			writer->failed = true;
			return;
		}
		memcpy(writer->out + writer->out_len, bytes, n);
	}
	writer->out_len += n;
}

/* Raise the failure to get memory for the message, outside snappy. */
static void out_of_memory(void) pg_attribute_noreturn();

static void
out_of_memory(void)
{
	ereport(ERROR,
			(errcode(ERRCODE_OUT_OF_MEMORY),
			 errmsg("out of memory"),
			 errdetail("Failed while compressing a remote read response.")));
}

/* Refuse a response past what a snappy block and a bytea hold. */
void
PromResponseTooLarge(void)
{
	ereport(ERROR,
			(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
			 errmsg("remote read response is too large"),
			 errdetail("A response holds at most 1 GB compressed and 4 GB uncompressed.")));
}

/* Compress the next len bytes of the message as one fragment. */
static void
compress_fragment(PromSnappyWriter *writer, Size len)
{
	PromSnappyStream stream = {
		peek_input, skip_input, output_room, append_output, writer
	};
	bool		compressed;
	uint64		begin;

	if (writer->total + len > UINT32_MAX ||
		writer->out_len + snappy_max_compressed_length(len) > MaxAllocSize)
		PromResponseTooLarge();
	writer->total += len;
	writer->produce_ticks = 0;
	begin = PromPhaseBegin();
	compressed = PromSnappyCompressFragment(&stream, len);
	/* the producer's time is encoding, not compression */
	PromPhaseEnd(PROM_PHASE_COMPRESS, begin + writer->produce_ticks);
	if (!compressed || writer->failed)
		out_of_memory();
}

/*
 * Keep what the producer has not given of a part too short to fill its
 * last fragment, with what is left from before, for the next part.
 */
static void
keep_rest(PromSnappyWriter *writer)
{
	PromProducer *producer = writer->producer;

	if (!grow_piece(writer, piece_bytes(writer) + producer->remaining))
		out_of_memory();
	while (producer->remaining > 0)
		if (!produce_piece(writer, writer->piece_size - writer->piece_end))
			out_of_memory();
}

/*
 * Write a part of the message from its producer: the fragments it fills
 * are compressed, and what it leaves is kept for the next part, or, when it
 * is the last part, compressed as the message's last fragment.  The
 * producer is done with when this returns.
 */
void
PromSnappyWriterWrite(PromSnappyWriter *writer, PromProducer *producer,
					  bool last)
{
	if (writer->piece == NULL)
	{
		writer->piece_size = PROM_SNAPPY_PIECE;
		writer->piece = MemoryContextAlloc(writer->context, writer->piece_size);
	}
	writer->producer = producer;
	writer->expected = writer->total + piece_bytes(writer) + producer->remaining;
	for (;;)
	{
		uint64		available = piece_bytes(writer) + producer->remaining;

		if (available == 0)
			break;
		if (available < SNAPPY_FRAGMENT_SIZE && !last)
		{
			keep_rest(writer);
			break;
		}
		CHECK_FOR_INTERRUPTS();
		compress_fragment(writer, Min(available, SNAPPY_FRAGMENT_SIZE));
	}
	writer->producer = NULL;
}

/* Bytes of memory the writer holds: its output and its pieces. */
Size
PromSnappyWriterBytes(const PromSnappyWriter *writer)
{
	return writer->out_size + writer->piece_size;
}

/* Finish the message: the bytea of one snappy block. */
bytea *
PromSnappyWriterFinish(PromSnappyWriter *writer)
{
	char	   *elements = writer->out + OUT_HEADER;
	Size		elements_len = writer->out_len - OUT_HEADER;
	int			prefix_len = wire_varint_size(writer->total);

	Assert(piece_bytes(writer) == 0);
	memmove(writer->out + VARHDRSZ + prefix_len, elements, elements_len);
	wire_put_varint(writer->out + VARHDRSZ, writer->total);
	SET_VARSIZE(writer->out, VARHDRSZ + prefix_len + elements_len);
	if (writer->piece != NULL)
		pfree(writer->piece);
	return (bytea *) writer->out;
}

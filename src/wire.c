/*-------------------------------------------------------------------------
 *
 * wire.c
 *	  The output buffer of encoded responses, and snappy block compression
 *	  with PostgreSQL errors and size limits.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <snappy-c.h>

#include "promread.h"
#include "utils/memutils.h"
#include "wire.h"

/* protobuf-c allocates from the current memory context. */
static void *
protobuf_alloc(void *allocator_data, size_t size)
{
	return palloc_extended(Max(size, 1), MCXT_ALLOC_HUGE);
}

/* Memory is freed with the context instead. */
static void
protobuf_free(void *allocator_data, void *pointer)
{
}

ProtobufCAllocator PromProtobufAllocator = {protobuf_alloc, protobuf_free, NULL};

/* Start an empty buffer with room for capacity bytes. */
void
PromBufferInit(PromBuffer *buf, Size capacity)
{
	buf->capacity = Max(capacity, 64);
	buf->data = palloc_extended(buf->capacity, MCXT_ALLOC_HUGE);
	buf->len = 0;
}

/* Make room for len more bytes and return where they go. */
char *
PromBufferReserve(PromBuffer *buf, Size len)
{
	char	   *p;

	if (len > MaxAllocHugeSize - buf->len)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("remote read response is too large")));
	if (buf->len + len > buf->capacity)
	{
		Size		capacity = Max(buf->capacity * 2, buf->len + len);

		buf->capacity = Min(capacity, MaxAllocHugeSize);
		buf->data = repalloc_huge(buf->data, buf->capacity);
	}
	p = buf->data + buf->len;
	buf->len += len;
	return p;
}

/*
 * Snappy compresses a message in independent 64 KB fragments.  The writer
 * compresses its stage in exactly those fragments, so its output is byte for
 * byte what one snappy_compress() of the whole message gives, however the
 * message was written in pieces.
 */
#define SNAPPY_FRAGMENT_SIZE	65536

/* Bytes of the stage: a whole fragment and a piece straddling the next. */
#define SNAPPY_STAGE_SIZE	(SNAPPY_FRAGMENT_SIZE + PROM_SNAPPY_PIECE)

/* Most bytes of the snappy length prefix (a varint of a uint32). */
#define SNAPPY_PREFIX_MAX	5

/* Bytes before the compressed elements in the output: header, prefix room. */
#define OUT_HEADER	(VARHDRSZ + SNAPPY_PREFIX_MAX)

/*
 * Start a snappy-compressed message in the current memory context.  The
 * stage and the output are sized when bytes come, to what is announced of
 * the message.
 */
void
PromSnappyWriterInit(PromSnappyWriter *writer)
{
	writer->context = CurrentMemoryContext;
	writer->stage_size = 0;
	writer->stage = NULL;
	writer->stage_len = 0;
	writer->out_size = OUT_HEADER;
	writer->out = palloc(writer->out_size);
	writer->out_len = OUT_HEADER;
	writer->total = 0;
	writer->expected = 0;
}

/*
 * Make room in the output for max_len more bytes.  When the message's length
 * was announced, the output grows to what the rest of it should take at the
 * compression ratio so far, plus a sixteenth; otherwise it doubles.  Snappy's
 * bound for the worst case, 17% more than the input, is several times what
 * labels and samples compress to: reserving it would hold memory that is
 * never written.
 */
static void
grow_output(PromSnappyWriter *writer, Size max_len)
{
	Size		need = writer->out_len + max_len;
	Size		size = writer->out_size * 2;

	if (writer->total > 0 && writer->expected > writer->total)
	{
		double		ratio = (double) (writer->out_len - OUT_HEADER) / writer->total;
		double		rest = (double) (writer->expected - writer->total) * ratio;

		/* rest counts the fragment at hand: max_len only bounds it */
		size = writer->out_len + (Size) (rest + rest / 16);
	}
	writer->out_size = Min(Max(size, need), MaxAllocSize);
	writer->out = repalloc(writer->out, writer->out_size);
}

/* Compress len staged bytes from data as one fragment; append its elements. */
static void
compress_fragment(PromSnappyWriter *writer, const char *data, Size len)
{
	size_t		max_len = snappy_max_compressed_length(len);
	size_t		compressed_len = max_len;
	int			prefix_len = wire_varint_size(len);
	char		overwritten[SNAPPY_PREFIX_MAX];
	char	   *dest;
	uint64		begin;

	if (writer->total + len > UINT32_MAX ||
		writer->out_len + max_len > MaxAllocSize)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("remote read response is too large"),
				 errdetail("A response holds at most 1 GB compressed and 4 GB uncompressed.")));
	if (writer->out_len + max_len > writer->out_size)
		grow_output(writer, max_len);
	writer->total += len;

	/*
	 * Snappy writes the fragment's own length prefix before its elements:
	 * it goes over the last bytes of the output (or of its header), which
	 * are kept aside and put back, so that the elements land in place.
	 */
	dest = writer->out + writer->out_len - prefix_len;
	memcpy(overwritten, dest, prefix_len);
	begin = PromPhaseBegin();
	if (snappy_compress(data, len, dest, &compressed_len) != SNAPPY_OK)
		elog(ERROR, "snappy compression failed");
	PromPhaseEnd(PROM_PHASE_COMPRESS, begin);
	memcpy(dest, overwritten, prefix_len);
	writer->out_len += compressed_len - prefix_len;
}

/*
 * Compress the stage's whole fragments (and, when finishing, the last
 * partial one) and keep the rest staged; then make sure the stage has room
 * for at least room more bytes.
 */
static void
flush_stage(PromSnappyWriter *writer, Size room, bool finishing)
{
	Size		done = 0;

	while (writer->stage_len - done >= SNAPPY_FRAGMENT_SIZE)
	{
		compress_fragment(writer, writer->stage + done, SNAPPY_FRAGMENT_SIZE);
		done += SNAPPY_FRAGMENT_SIZE;
	}
	if (finishing && writer->stage_len > done)
	{
		compress_fragment(writer, writer->stage + done,
						  writer->stage_len - done);
		done = writer->stage_len;
	}
	writer->stage_len -= done;
	memmove(writer->stage, writer->stage + done, writer->stage_len);
	if (room > writer->stage_size - writer->stage_len)
	{
		uint64		announced = writer->expected - Min(writer->expected, writer->total);
		Size		size = SNAPPY_STAGE_SIZE;

		/* no larger than the rest of an announced message */
		if (announced > 0)
			size = Min(size, announced);
		writer->stage_size = Max(size, writer->stage_len + room);
		writer->stage = writer->stage == NULL ?
			MemoryContextAllocHuge(writer->context, writer->stage_size) :
			repalloc_huge(writer->stage, writer->stage_size);
	}
}

/* Make room for room more staged bytes (PromSnappyWriterRoom's slow path). */
void
PromSnappyWriterFlush(PromSnappyWriter *writer, Size room)
{
	flush_stage(writer, room, false);
}

/*
 * Announce len more uncompressed bytes to come, so that the output grows
 * to the size the message should compress to, not by doubling.
 */
void
PromSnappyWriterExpect(PromSnappyWriter *writer, Size len)
{
	writer->expected = writer->total + writer->stage_len + len;
}

/* Finish the message: the bytea of one snappy block. */
bytea *
PromSnappyWriterFinish(PromSnappyWriter *writer)
{
	char	   *elements;
	Size		elements_len;
	int			prefix_len;

	flush_stage(writer, 0, true);
	elements = writer->out + OUT_HEADER;
	elements_len = writer->out_len - OUT_HEADER;
	prefix_len = wire_varint_size(writer->total);
	memmove(writer->out + VARHDRSZ + prefix_len, elements, elements_len);
	wire_put_varint(writer->out + VARHDRSZ, writer->total);
	SET_VARSIZE(writer->out, VARHDRSZ + prefix_len + elements_len);
	if (writer->stage != NULL)
		pfree(writer->stage);
	return (bytea *) writer->out;
}

/* Compress into a bytea holding one snappy block. */
bytea *
PromSnappyCompress(const char *data, Size len)
{
	size_t		max_len = snappy_max_compressed_length(len);
	size_t		compressed_len = max_len;
	bytea	   *result;

	if (max_len > MaxAllocSize - VARHDRSZ)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("remote read response is too large"),
				 errdetail("The encoded response has %zu bytes; a bytea holds at most 1 GB.",
						   len)));
	result = palloc(VARHDRSZ + max_len);
	if (snappy_compress(data, len, VARDATA(result), &compressed_len) != SNAPPY_OK)
		elog(ERROR, "snappy compression failed");
	SET_VARSIZE(result, VARHDRSZ + compressed_len);
	return result;
}

/*
 * Decompress one snappy block after checking the length it announces
 * against the limit, so that a small input cannot claim a huge output.
 * "what" names the data in messages; limit_setting, if not NULL, is the
 * setting that raises the limit.
 */
char *
PromSnappyDecompress(const char *data, Size len, Size limit,
					 const char *what, const char *limit_setting,
					 Size *result_len)
{
	size_t		uncompressed_len;
	char	   *result;

	if (snappy_uncompressed_length(data, len, &uncompressed_len) != SNAPPY_OK)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_BINARY_REPRESENTATION),
				 errmsg("could not decompress %s", what),
				 errdetail("The data is not a snappy block.")));
	if (uncompressed_len > limit)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("%s is too large", what),
				 errdetail("It decompresses to %zu bytes; the limit is %zu bytes.",
						   uncompressed_len, limit),
				 limit_setting ?
				 errhint("Raise \"%s\" to accept it.", limit_setting) : 0));
	result = palloc_extended(Max(uncompressed_len, 1), MCXT_ALLOC_HUGE);
	if (snappy_uncompress(data, len, result, &uncompressed_len) != SNAPPY_OK)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_BINARY_REPRESENTATION),
				 errmsg("could not decompress %s", what),
				 errdetail("The snappy block is corrupt or truncated.")));
	*result_len = uncompressed_len;
	return result;
}

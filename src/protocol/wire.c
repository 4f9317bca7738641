/*-------------------------------------------------------------------------
 *
 * wire.c
 *	  The output buffer of encoded responses, and snappy block compression
 *	  of whole buffers with PostgreSQL errors and size limits (messages
 *	  compressed as they are written: snappy_writer.c), and the CRC-32C of
 *	  STREAMED_XOR_CHUNKS frames.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <snappy-c.h>

#include "port/pg_crc32c.h"
#include "protocol.h"
#include "utils/memutils.h"

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

/* Compress into a bytea holding one snappy block; "what" names the data. */
bytea *
PromSnappyCompress(const char *data, Size len, const char *what)
{
	size_t		max_len = snappy_max_compressed_length(len);
	size_t		compressed_len = max_len;
	bytea	   *result;

	if (max_len > MaxAllocSize - VARHDRSZ)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("%s is too large", what),
				 errdetail("It has %zu bytes encoded; a bytea holds at most 1 GB.",
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
 * setting that raises the limit, and limit_sqlstate the error's SQLSTATE
 * when the data passes it.
 */
char *
PromSnappyDecompress(const char *data, Size len, Size limit,
					 const char *what, const char *limit_setting,
					 int limit_sqlstate, Size *result_len)
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
				(errcode(limit_sqlstate),
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

/* The CRC-32C (Castagnoli) of some bytes, as frames carry it. */
uint32
PromCrc32c(const char *data, Size len)
{
	pg_crc32c	crc;

	INIT_CRC32C(crc);
	COMP_CRC32C(crc, data, len);
	FIN_CRC32C(crc);
	return crc;
}

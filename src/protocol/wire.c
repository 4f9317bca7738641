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

/*
 * Decoding budgets.  protobuf-c allocates a struct for each sub-message and
 * an array for each repeated field before promread sees any of them, so
 * that a few megabytes of empty sub-messages would unpack to gigabytes.  A
 * budget's allocator allocates in a memory context of its own and refuses
 * (protobuf-c then fails cleanly) an allocation that would take the
 * context past the budget's limit: what promread.max_memory leaves when
 * the decoding begins.  The context's allocated bytes, blocks and chunk
 * headers included, are what is counted.
 */

/* Block sizes of a budget's context: a refused block overshoots little. */
#define BUDGET_MAX_BLOCK	(256 * 1024)

/* Allocate for protobuf-c within the budget; NULL once it is spent. */
static void *
budget_alloc(void *allocator_data, size_t size)
{
	PromDecodeBudget *budget = allocator_data;

	if (budget->refused ||
		size > budget->limit ||
		budget->context->mem_allocated > budget->limit - size)
	{
		if (!budget->refused)
			budget->refused_size = size;
		budget->refused = true;
		return NULL;
	}
	return MemoryContextAllocExtended(budget->context, Max(size, 1),
									  MCXT_ALLOC_HUGE | MCXT_ALLOC_NO_OOM);
}

/* Memory is freed with the budget's context instead. */
static void
budget_free(void *allocator_data, void *pointer)
{
}

/* Give back what a budget charged to promread.max_memory. */
static void
budget_release(void *arg)
{
	PromDecodeBudget *budget = arg;

	PromMemoryUncharge(budget->held);
	budget->held = 0;
	budget->registered = false;
}

/*
 * A budget, allocated in CurrentMemoryContext, for decoding the data "what"
 * names: its context is a child of the current one.
 */
PromDecodeBudget *
PromDecodeBudgetCreate(const char *what)
{
	PromDecodeBudget *budget = palloc(sizeof(PromDecodeBudget));

	budget->allocator.alloc = budget_alloc;
	budget->allocator.free = budget_free;
	budget->allocator.allocator_data = budget;
	budget->context = AllocSetContextCreate(CurrentMemoryContext,
											"promread decode",
											ALLOCSET_DEFAULT_MINSIZE,
											ALLOCSET_DEFAULT_INITSIZE,
											BUDGET_MAX_BLOCK);
	budget->limit = PromMemoryAvailable();
	budget->refused = false;
	budget->refused_size = 0;
	budget->what = what;
	budget->sqlstate = ERRCODE_OUT_OF_MEMORY;
	budget->held = 0;
	budget->registered = false;
	budget->release.func = budget_release;
	budget->release.arg = budget;
	return budget;
}

/* Raise the error of a budget that the decoding would pass. */
static void
budget_exceeded(PromDecodeBudget *budget, Size more)
{
	Size		need = Max(more, budget->refused_size);

	ereport(ERROR,
			(errcode(budget->sqlstate),
			 errmsg("promread's working memory would exceed promread.max_memory (%dkB)",
					promread_max_memory),
			 need > 0 ?
			 errdetail("Decoding the %s takes more than the %zu bytes left: it holds %zu bytes and needs %zu more.",
					   budget->what, budget->limit,
					   (Size) budget->context->mem_allocated, need) :
			 errdetail("Decoding the %s takes more than the %zu bytes left: it holds %zu bytes.",
					   budget->what, budget->limit,
					   (Size) budget->context->mem_allocated),
			 errhint("Send a smaller %s, or raise promread.max_memory.",
					 budget->what)));
}

/*
 * Check that more bytes fit in the budget, beyond what its context holds,
 * or raise the budget's error (53200 unless the caller chose another); also
 * raises it when protobuf-c was refused memory.
 */
void
PromDecodeBudgetCheck(PromDecodeBudget *budget, Size more)
{
	if (budget->refused || more > budget->limit ||
		budget->context->mem_allocated > budget->limit - more)
		budget_exceeded(budget, more);
}

/*
 * Unpack a snappy-compressed request (a message of the descriptor's type)
 * within a budget: decompressed, it may take at most
 * promread.max_request_bytes (else limit_sqlstate); the decompressed bytes
 * are freed once unpacked, as protobuf-c copies what it keeps.  Bytes that
 * are no such message are 22P03; a message refused memory raises the
 * budget's error.
 */
ProtobufCMessage *
PromUnpackRequest(const char *body, Size len,
				  const ProtobufCMessageDescriptor *descriptor,
				  const char *what, int limit_sqlstate, PromDecodeBudget *budget)
{
	ProtobufCMessage *msg;
	char	   *data;
	Size		data_len;

	data = PromSnappyDecompress(body, len, promread_max_request_bytes, what,
								"promread.max_request_bytes", limit_sqlstate,
								budget, &data_len);
	msg = protobuf_c_message_unpack(descriptor, &budget->allocator, data_len,
									(const uint8_t *) data);
	pfree(data);
	if (msg == NULL)
	{
		PromDecodeBudgetCheck(budget, 0);
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_BINARY_REPRESENTATION),
				 errmsg("could not decode %s", what),
				 errdetail("The data is not a valid protobuf %s.",
						   descriptor->short_name)));
	}
	return msg;
}

/*
 * Charge what the budget's context holds to promread.max_memory until the
 * context is reset or deleted, so that the reads that follow count it, and
 * recompute the budget's limit from what is left.
 */
void
PromDecodeBudgetHold(PromDecodeBudget *budget)
{
	Size		allocated = budget->context->mem_allocated;

	if (!budget->registered)
	{
		MemoryContextRegisterResetCallback(budget->context, &budget->release);
		budget->registered = true;
	}
	if (allocated > budget->held)
	{
		PromMemoryCharge(allocated - budget->held);
		budget->held = allocated;
	}
	budget->limit = PromMemoryAvailable() + budget->held;
}

/*
 * Check that what the budget's context holds, and more bytes, fit in what
 * promread.max_memory leaves now besides what the budget has charged, or
 * raise the budget's error; then charge what the context holds
 * (PromDecodeBudgetHold).  For a decoding that allocates in the context
 * itself, item by item, all of it counted: other memory charged since the
 * last call (a stream's frames) leaves it less.
 */
void
PromDecodeBudgetCharge(PromDecodeBudget *budget, Size more)
{
	budget->limit = PromMemoryAvailable() + budget->held;
	PromDecodeBudgetCheck(budget, more);
	PromDecodeBudgetHold(budget);
}

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
 * when the data passes it.  With a budget, the output is allocated in its
 * context, once it is known to fit.
 */
char *
PromSnappyDecompress(const char *data, Size len, Size limit,
					 const char *what, const char *limit_setting,
					 int limit_sqlstate, PromDecodeBudget *budget,
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
				(errcode(limit_sqlstate),
				 errmsg("%s is too large", what),
				 errdetail("It decompresses to %zu bytes; the limit is %zu bytes.",
						   uncompressed_len, limit),
				 limit_setting ?
				 errhint("Raise \"%s\" to accept it.", limit_setting) : 0));
	if (budget != NULL)
	{
		PromDecodeBudgetCheck(budget, uncompressed_len);
		result = MemoryContextAllocHuge(budget->context, Max(uncompressed_len, 1));
	}
	else
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

/*
 * pg_shim.c
 *	  The PostgreSQL backend symbols that promread's request decoder and
 *	  selector parser link against, provided outside a server for the fuzz
 *	  targets.  See README.md for what is real and what is stubbed.
 *
 * Real (behaving as PostgreSQL's, written here):
 *	- memory contexts: palloc and friends, with PostgreSQL's size checks
 *	  (ERROR "invalid memory alloc request size" beyond MaxAllocSize, or
 *	  MaxAllocHugeSize for MCXT_ALLOC_HUGE).  Every chunk is its own
 *	  malloc() so that AddressSanitizer sees each one's bounds; a context
 *	  keeps its chunks in a list and frees them (and its children) when it
 *	  is deleted or reset.  The chunk's context pointer is stored just
 *	  before it, as PostgreSQL requires.
 *	- ereport/elog: the error's level, SQLSTATE and messages are recorded
 *	  (messages are formatted with the arguments given, so a bad format or
 *	  argument is seen by the sanitizers) and an ERROR longjmps to
 *	  PG_exception_stack.  Levels below ERROR are formatted and dropped;
 *	  FATAL and PANIC abort.
 *	- StringInfo, psprintf, pstrdup, pnstrdup, List's lappend,
 *	  cstring_to_text_with_len, text_to_cstring, check_stack_depth (with
 *	  PostgreSQL's default max_stack_depth of 2 MB, raising 54001).
 *	- pg_utf_mblen, pg_utf8_islegal, unicode_to_utf8 come from PostgreSQL's
 *	  own libpgcommon.a (wchar.o); pg_vsnprintf, pg_qsort, pg_strcasecmp
 *	  from libpgport.a.
 *
 * Stubbed (never reached by the code under test, or outside its boundary):
 *	- RE_compile_and_execute (PostgreSQL's regex engine): prom_regex.c calls
 *	  it only in PromRegexMatch, to match a value against the translated
 *	  ARE, which neither the decoder nor the selector parser does; the
 *	  translation itself (PromRegexCompile) is what is under test.  The stub
 *	  "succeeds" (returns true).
 *	- deconstruct_array, pg_detoast_datum, pg_detoast_datum_packed,
 *	  pg_detoast_datum_copy: used by the SQL-callable functions of read_request.c
 *	  and prom_regex.c only (prom_read_request, prom_regex_translate,
 *	  prom_regex_match), which take Datums from the executor; they abort if
 *	  ever called.
 *	- CacheRegisterSyscacheCallback, GetSysCacheOid, PromExtensionNamespace:
 *	  used by histogram.c's PromHistogramTypeOid only, which the decoders
 *	  never call (histogram.c is linked for PromHistogramAllocate and
 *	  PromHistogramCheck); they abort if ever called.  So does
 *	  PromExtensionTypeOid, of histogram.c's PromIsHistogramType.
 *	- GetDatabaseEncoding: PG_UTF8 (promread requires a UTF8 database).
 *	- The GUC variables, at their defaults from src/promread.c.
 *	- CHECK_FOR_INTERRUPTS: no interrupt is ever pending.
 */
#include "postgres.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "lib/stringinfo.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "nodes/memnodes.h"
#include "nodes/pg_list.h"
#include "promread.h"
#include "regex/regex.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/inval.h"
#include "utils/memutils.h"
#include "utils/syscache.h"

#include "pg_shim.h"

/* the shim formats with the C library's functions, not port.h's */
#undef vsnprintf
#undef snprintf
#undef fprintf
#undef vfprintf
#undef printf

/*---- GUC variables and globals of other promread files ----*/

/* src/promread.c's defaults */
int			promread_max_samples = 50000000;
int			promread_max_request_bytes = 32 * 1024 * 1024;
int			promread_max_frame_bytes = 50000000;
bool		promread_report_phases = false;
int			promread_keep_memory = 4 * 1024;
int			promread_max_histogram_buckets = 10000;

/*
 * promread.max_memory, far lower than its default and its minimum (1 MB)
 * so that inputs of a few kB reach it: what a decoder allocates beyond it,
 * plus shim_memory_margin, fails the input (see shim_alloc), which catches
 * memory that grows with an input faster than the decoding budget counts.
 */
int			promread_max_memory = 256;
Size		shim_memory_margin = 256 * 1024;

/*
 * The scratch context of a regex's translation (prom_regex.c) is not
 * counted: Go's limits on a regex's size bound it, not promread.max_memory.
 */
#define SHIM_UNCOUNTED_CONTEXT	"prom_regex translation"

/*---- Backend globals ----*/

volatile sig_atomic_t InterruptPending = false;
sigjmp_buf *PG_exception_stack = NULL;
ErrorContextCallback *error_context_stack = NULL;
MemoryContext CurrentMemoryContext = NULL;
MemoryContext TopMemoryContext = NULL;
MemoryContext ErrorContext = NULL;
bool		shim_verbose = false;

void
ProcessInterrupts(void)
{
}

/*---- Failing an input ----*/

void
shim_fail(const char *fmt,...)
{
	va_list		ap;

	fprintf(stderr, "==pg_shim== ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n");
	abort();
}

void
ExceptionalCondition(const char *conditionName, const char *errorType,
					 const char *fileName, int lineNumber)
{
	shim_fail("%s(\"%s\", File: \"%s\", Line: %d)", errorType ? errorType : "TRAP",
			  conditionName ? conditionName : "?", fileName ? fileName : "?",
			  lineNumber);
}

/*---- Memory contexts ----*/

typedef struct ShimChunk ShimChunk;

typedef struct ShimContext
{
	MemoryContextData header;	/* what PostgreSQL's inline code may look at */
	ShimChunk  *chunks;			/* doubly linked, newest first */
	Size		nchunks;
	Size		bytes;
} ShimContext;

/* Before every chunk; the context pointer immediately precedes the chunk. */
struct ShimChunk
{
	ShimChunk  *prev;
	ShimChunk  *next;
	Size		size;
	MemoryContext context;
	bool		counted;		/* in shim_live_bytes */
};

StaticAssertDecl(sizeof(ShimChunk) % MAXIMUM_ALIGNOF == 0,
				 "chunk header must keep chunks aligned");

#define CHUNK_OF(pointer)	((ShimChunk *) ((char *) (pointer) - sizeof(ShimChunk)))
#define POINTER_OF(chunk)	((void *) ((char *) (chunk) + sizeof(ShimChunk)))

static Size shim_live_chunks;	/* chunks of all contexts */
static Size shim_live_bytes;	/* and their bytes */
static Size shim_charged;		/* bytes charged to promread.max_memory */
static Size shim_live_contexts;

static const MemoryContextMethods shim_methods;	/* never called: all zero */

static MemoryContext
shim_context_create(MemoryContext parent, const char *name)
{
	ShimContext *cxt = calloc(1, sizeof(ShimContext));

	if (cxt == NULL)
		shim_fail("out of memory creating a context");
	cxt->header.type = T_AllocSetContext;
	cxt->header.isReset = true;
	cxt->header.methods = &shim_methods;
	cxt->header.parent = parent;
	cxt->header.name = name;
	if (parent)
	{
		cxt->header.nextchild = parent->firstchild;
		if (parent->firstchild)
			parent->firstchild->prevchild = &cxt->header;
		parent->firstchild = &cxt->header;
	}
	shim_live_contexts++;
	return &cxt->header;
}

static void
shim_context_free_chunks(MemoryContext context)
{
	ShimContext *cxt = (ShimContext *) context;
	MemoryContextCallback *cb;

	/* reset callbacks run first, as in PostgreSQL: they may use the chunks */
	while ((cb = context->reset_cbs) != NULL)
	{
		context->reset_cbs = cb->next;
		cb->func(cb->arg);
	}
	while (cxt->chunks)
	{
		ShimChunk  *chunk = cxt->chunks;

		cxt->chunks = chunk->next;
		if (chunk->counted)
			shim_live_bytes -= chunk->size;
		free(chunk);
		shim_live_chunks--;
	}
	cxt->nchunks = 0;
	cxt->bytes = 0;
	context->mem_allocated = 0;
	context->isReset = true;
}

void
MemoryContextRegisterResetCallback(MemoryContext context,
								   MemoryContextCallback *cb)
{
	cb->next = context->reset_cbs;
	context->reset_cbs = cb;
	context->isReset = false;
}

/*---- promread's count of working memory (src/engine/arena.c) ----*/

Size
PromMemoryAvailable(void)
{
	Size		limit = (Size) promread_max_memory * 1024;

	return shim_charged < limit ? limit - shim_charged : 0;
}

void
PromMemoryCharge(Size bytes)
{
	shim_charged += bytes;
}

void
PromMemoryUncharge(Size bytes)
{
	if (bytes > shim_charged)
		shim_fail("%zu bytes uncharged, but only %zu charged", bytes, shim_charged);
	shim_charged -= bytes;
}

void
MemoryContextDelete(MemoryContext context)
{
	if (context == NULL)
		shim_fail("MemoryContextDelete(NULL)");
	if (context == CurrentMemoryContext)
		shim_fail("deleting the current memory context \"%s\"", context->name);
	while (context->firstchild)
		MemoryContextDelete(context->firstchild);
	shim_context_free_chunks(context);
	if (context->parent)
	{
		if (context->prevchild)
			context->prevchild->nextchild = context->nextchild;
		else
			context->parent->firstchild = context->nextchild;
		if (context->nextchild)
			context->nextchild->prevchild = context->prevchild;
	}
	shim_live_contexts--;
	free(context);
}

void
MemoryContextDeleteChildren(MemoryContext context)
{
	while (context->firstchild)
		MemoryContextDelete(context->firstchild);
}

void
MemoryContextReset(MemoryContext context)
{
	MemoryContextDeleteChildren(context);
	shim_context_free_chunks(context);
}

void
MemoryContextResetOnly(MemoryContext context)
{
	shim_context_free_chunks(context);
}

MemoryContext
AllocSetContextCreateInternal(MemoryContext parent, const char *name,
							  Size minContextSize, Size initBlockSize,
							  Size maxBlockSize)
{
	return shim_context_create(parent, name);
}

MemoryContext
GenerationContextCreate(MemoryContext parent, const char *name,
						Size minContextSize, Size initBlockSize,
						Size maxBlockSize)
{
	return shim_context_create(parent, name);
}

MemoryContext
SlabContextCreate(MemoryContext parent, const char *name, Size blockSize,
				  Size chunkSize)
{
	return shim_context_create(parent, name);
}

void
MemoryContextSetParent(MemoryContext context, MemoryContext new_parent)
{
	shim_fail("MemoryContextSetParent is not provided by the shim");
}

void
MemoryContextSetIdentifier(MemoryContext context, const char *id)
{
	context->ident = id;
}

Size
MemoryContextMemAllocated(MemoryContext context, bool recurse)
{
	Size		total = context->mem_allocated;

	if (recurse)
		for (MemoryContext child = context->firstchild; child; child = child->nextchild)
			total += MemoryContextMemAllocated(child, true);
	return total;
}

static void *
shim_alloc(MemoryContext context, Size size, int flags)
{
	ShimContext *cxt = (ShimContext *) context;
	ShimChunk  *chunk;

	if (context == NULL)
		shim_fail("palloc with no current memory context");
	if (((flags & MCXT_ALLOC_HUGE) != 0 && !AllocHugeSizeIsValid(size)) ||
		((flags & MCXT_ALLOC_HUGE) == 0 && !AllocSizeIsValid(size)))
		elog(ERROR, "invalid memory alloc request size %zu", size);
	chunk = malloc(sizeof(ShimChunk) + size);
	if (chunk == NULL)
	{
		if (flags & MCXT_ALLOC_NO_OOM)
			return NULL;
		ereport(ERROR,
				(errcode(ERRCODE_OUT_OF_MEMORY),
				 errmsg("out of memory"),
				 errdetail("Failed on request of size %zu in memory context \"%s\".",
						   size, context->name)));
	}
	chunk->prev = NULL;
	chunk->next = cxt->chunks;
	if (cxt->chunks)
		cxt->chunks->prev = chunk;
	cxt->chunks = chunk;
	chunk->size = size;
	chunk->context = context;
	cxt->nchunks++;
	cxt->bytes += size;
	context->mem_allocated += size;
	context->isReset = false;
	shim_live_chunks++;
	chunk->counted = strcmp(context->name, SHIM_UNCOUNTED_CONTEXT) != 0;
	if (chunk->counted)
		shim_live_bytes += size;
	if (chunk->counted &&
		shim_live_bytes > (Size) promread_max_memory * 1024 + shim_memory_margin)
		shim_fail("memory past promread.max_memory (%d kB) plus %zu kB: %zu bytes live after allocating %zu in context \"%s\"",
				  promread_max_memory, shim_memory_margin / 1024,
				  shim_live_bytes, size, context->name);
	if (flags & MCXT_ALLOC_ZERO)
		memset(POINTER_OF(chunk), 0, size);
	return POINTER_OF(chunk);
}

static void
shim_unlink(ShimChunk *chunk)
{
	ShimContext *cxt = (ShimContext *) chunk->context;

	if (chunk->prev)
		chunk->prev->next = chunk->next;
	else
		cxt->chunks = chunk->next;
	if (chunk->next)
		chunk->next->prev = chunk->prev;
	cxt->nchunks--;
	cxt->bytes -= chunk->size;
	chunk->context->mem_allocated -= chunk->size;
	shim_live_chunks--;
	if (chunk->counted)
		shim_live_bytes -= chunk->size;
}

void *
MemoryContextAlloc(MemoryContext context, Size size)
{
	return shim_alloc(context, size, 0);
}

void *
MemoryContextAllocZero(MemoryContext context, Size size)
{
	return shim_alloc(context, size, MCXT_ALLOC_ZERO);
}

void *
MemoryContextAllocZeroAligned(MemoryContext context, Size size)
{
	return shim_alloc(context, size, MCXT_ALLOC_ZERO);
}

void *
MemoryContextAllocExtended(MemoryContext context, Size size, int flags)
{
	return shim_alloc(context, size, flags);
}

void *
MemoryContextAllocHuge(MemoryContext context, Size size)
{
	return shim_alloc(context, size, MCXT_ALLOC_HUGE);
}

void *
palloc(Size size)
{
	return shim_alloc(CurrentMemoryContext, size, 0);
}

void *
palloc0(Size size)
{
	return shim_alloc(CurrentMemoryContext, size, MCXT_ALLOC_ZERO);
}

void *
palloc_extended(Size size, int flags)
{
	return shim_alloc(CurrentMemoryContext, size, flags);
}

void
pfree(void *pointer)
{
	ShimChunk  *chunk = CHUNK_OF(pointer);

	shim_unlink(chunk);
	free(chunk);
}

static void *
shim_realloc(void *pointer, Size size, int flags)
{
	ShimChunk  *old = CHUNK_OF(pointer);
	void	   *result;

	/*
	 * A new chunk and a copy (not realloc), so that AddressSanitizer reports
	 * any use of the old pointer, which PostgreSQL's allocator could have
	 * moved too.
	 */
	result = shim_alloc(old->context, size, flags);
	memcpy(result, pointer, Min(size, old->size));
	pfree(pointer);
	return result;
}

void *
repalloc(void *pointer, Size size)
{
	return shim_realloc(pointer, size, 0);
}

void *
repalloc_huge(void *pointer, Size size)
{
	return shim_realloc(pointer, size, MCXT_ALLOC_HUGE);
}

Size
GetMemoryChunkSpace(void *pointer)
{
	return CHUNK_OF(pointer)->size;
}

char *
MemoryContextStrdup(MemoryContext context, const char *string)
{
	Size		len = strlen(string) + 1;
	char	   *result = shim_alloc(context, len, 0);

	memcpy(result, string, len);
	return result;
}

char *
pstrdup(const char *in)
{
	return MemoryContextStrdup(CurrentMemoryContext, in);
}

char *
pnstrdup(const char *in, Size len)
{
	char	   *out;

	len = strnlen(in, len);
	out = palloc(len + 1);
	memcpy(out, in, len);
	out[len] = '\0';
	return out;
}

/* psprintf, as src/common/psprintf.c: ERROR beyond MaxAllocSize */
char *
psprintf(const char *fmt,...)
{
	va_list		ap;
	int			len;
	char	   *result;

	va_start(ap, fmt);
	len = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (len < 0)
		elog(ERROR, "vsnprintf failed: %m");
	result = palloc((Size) len + 1);
	va_start(ap, fmt);
	vsnprintf(result, (Size) len + 1, fmt, ap);
	va_end(ap);
	return result;
}

/*---- StringInfo, as src/common/stringinfo.c in the backend ----*/

StringInfo
makeStringInfo(void)
{
	StringInfo	res = palloc(sizeof(StringInfoData));

	initStringInfo(res);
	return res;
}

void
initStringInfo(StringInfo str)
{
	int			size = 1024;

	str->data = palloc(size);
	str->maxlen = size;
	resetStringInfo(str);
}

void
resetStringInfo(StringInfo str)
{
	str->data[0] = '\0';
	str->len = 0;
	str->cursor = 0;
}

void
enlargeStringInfo(StringInfo str, int needed)
{
	int			newlen;

	if (needed < 0)
		elog(ERROR, "invalid string enlargement request size: %d", needed);
	if (((Size) needed) >= (MaxAllocSize - (Size) str->len))
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("out of memory"),
				 errdetail("Cannot enlarge string buffer containing %d bytes by %d more bytes.",
						   str->len, needed)));
	needed += str->len + 1;
	if (needed <= str->maxlen)
		return;
	newlen = 2 * str->maxlen;
	while (needed > newlen)
		newlen = 2 * newlen;
	if (newlen > (int) MaxAllocSize)
		newlen = (int) MaxAllocSize;
	str->data = repalloc(str->data, newlen);
	str->maxlen = newlen;
}

int
appendStringInfoVA(StringInfo str, const char *fmt, va_list args)
{
	int			avail = str->maxlen - str->len;
	int			nprinted;

	nprinted = vsnprintf(str->data + str->len, (size_t) avail, fmt, args);
	if (nprinted < 0)
		elog(ERROR, "vsnprintf failed");
	if (nprinted < avail)
	{
		str->len += nprinted;
		return 0;
	}
	str->data[str->len] = '\0';
	return nprinted + 1;		/* the space needed */
}

void
appendStringInfo(StringInfo str, const char *fmt,...)
{
	for (;;)
	{
		va_list		args;
		int			needed;

		va_start(args, fmt);
		needed = appendStringInfoVA(str, fmt, args);
		va_end(args);
		if (needed == 0)
			break;
		enlargeStringInfo(str, needed);
	}
}

void
appendBinaryStringInfo(StringInfo str, const char *data, int datalen)
{
	enlargeStringInfo(str, datalen);
	memcpy(str->data + str->len, data, datalen);
	str->len += datalen;
	str->data[str->len] = '\0';
}

void
appendBinaryStringInfoNT(StringInfo str, const char *data, int datalen)
{
	enlargeStringInfo(str, datalen);
	memcpy(str->data + str->len, data, datalen);
	str->len += datalen;
}

void
appendStringInfoString(StringInfo str, const char *s)
{
	appendBinaryStringInfo(str, s, strlen(s));
}

void
appendStringInfoChar(StringInfo str, char ch)
{
	if (str->len + 1 >= str->maxlen)
		enlargeStringInfo(str, 1);
	str->data[str->len] = ch;
	str->len++;
	str->data[str->len] = '\0';
}

void
appendStringInfoSpaces(StringInfo str, int count)
{
	if (count > 0)
	{
		enlargeStringInfo(str, count);
		while (--count >= 0)
			str->data[str->len++] = ' ';
		str->data[str->len] = '\0';
	}
}

/*---- List ----*/

List *
lappend(List *list, void *datum)
{
	if (list == NIL)
	{
		list = palloc(offsetof(List, initial_elements) + 4 * sizeof(ListCell));
		list->type = T_List;
		list->length = 0;
		list->max_length = 4;
		list->elements = list->initial_elements;
	}
	else if (list->length >= list->max_length)
	{
		int			new_max = list->max_length * 2;

		if (list->elements == list->initial_elements)
		{
			ListCell   *cells = palloc(sizeof(ListCell) * new_max);

			memcpy(cells, list->elements, sizeof(ListCell) * list->length);
			list->elements = cells;
		}
		else
			list->elements = repalloc(list->elements, sizeof(ListCell) * new_max);
		list->max_length = new_max;
	}
	list->elements[list->length++].ptr_value = datum;
	return list;
}

void
list_free(List *list)
{
	if (list == NIL)
		return;
	if (list->elements != list->initial_elements)
		pfree(list->elements);
	pfree(list);
}

/*---- text ----*/

text *
cstring_to_text_with_len(const char *s, int len)
{
	text	   *result = (text *) palloc(len + VARHDRSZ);

	SET_VARSIZE(result, len + VARHDRSZ);
	memcpy(VARDATA(result), s, len);
	return result;
}

text *
cstring_to_text(const char *s)
{
	return cstring_to_text_with_len(s, strlen(s));
}

char *
text_to_cstring(const text *t)
{
	/* plain 4-byte-header or short varlenas only: nothing here is toasted */
	if (VARATT_IS_EXTENDED(t) && !VARATT_IS_SHORT(t))
		shim_fail("text_to_cstring of a toasted value");
	return pnstrdup(VARDATA_ANY(t), VARSIZE_ANY_EXHDR(t));
}

/*---- Encoding ----*/

int
GetDatabaseEncoding(void)
{
	return PG_UTF8;
}

const char *
GetDatabaseEncodingName(void)
{
	return "UTF8";
}

/*---- Stack depth, as PostgreSQL's default max_stack_depth = 2MB ----*/

static char *shim_stack_base;

#define SHIM_MAX_STACK_DEPTH	(2048L * 1024L)

bool
stack_is_too_deep(void)
{
	char		here;
	long		depth = (long) (shim_stack_base - &here);

	if (depth < 0)
		depth = -depth;
	return shim_stack_base != NULL && depth > SHIM_MAX_STACK_DEPTH;
}

void
check_stack_depth(void)
{
	if (stack_is_too_deep())
		ereport(ERROR,
				(errcode(ERRCODE_STATEMENT_TOO_COMPLEX),
				 errmsg("stack depth limit exceeded"),
				 errhint("Increase the configuration parameter \"max_stack_depth\" (currently %ldkB).",
						 SHIM_MAX_STACK_DEPTH / 1024)));
}

/*---- Stubs outside the boundary (see the header comment) ----*/

bool
RE_compile_and_execute(text *text_re, char *dat, int dat_len,
					   int cflags, Oid collation,
					   int nmatch, regmatch_t *pmatch)
{
	/* the ARE is not compiled here: PostgreSQL's regex engine is not linked */
	return true;
}

void
deconstruct_array(ArrayType *array, Oid elmtype, int elmlen, bool elmbyval,
				  char elmalign, Datum **elemsp, bool **nullsp, int *nelemsp)
{
	shim_fail("deconstruct_array is outside the fuzzed code");
}

struct varlena *
pg_detoast_datum(struct varlena *datum)
{
	shim_fail("pg_detoast_datum is outside the fuzzed code");
}

struct varlena *
pg_detoast_datum_packed(struct varlena *datum)
{
	shim_fail("pg_detoast_datum_packed is outside the fuzzed code");
}

struct varlena *
pg_detoast_datum_copy(struct varlena *datum)
{
	shim_fail("pg_detoast_datum_copy is outside the fuzzed code");
}

/* histogram.c's PromHistogramTypeOid: the catalogs are outside the boundary */
void
CacheRegisterSyscacheCallback(int cacheid, SyscacheCallbackFunction func, Datum arg)
{
	shim_fail("CacheRegisterSyscacheCallback is outside the fuzzed code");
}

Oid
GetSysCacheOid(int cacheId, AttrNumber oidcol, Datum key1, Datum key2,
			   Datum key3, Datum key4)
{
	shim_fail("GetSysCacheOid is outside the fuzzed code");
}

Oid
PromExtensionNamespace(void)
{
	shim_fail("PromExtensionNamespace is outside the fuzzed code");
}

Oid
PromExtensionTypeOid(const char *name)
{
	shim_fail("PromExtensionTypeOid is outside the fuzzed code");
}

/*---- ereport / elog ----*/

typedef struct ShimError
{
	int			elevel;
	int			sqlerrcode;
	const char *filename;
	int			lineno;
	char		message[1024];
	char		detail[1024];
	char		hint[1024];
} ShimError;

static ShimError shim_current;	/* being built by errstart ... errfinish */
static ShimError shim_last;		/* the last ERROR of this input */
static bool shim_have_error;
static bool shim_in_error;		/* between errstart and errfinish */

bool
message_level_is_interesting(int elevel)
{
	return true;				/* format every message: the sanitizers see it */
}

bool
errstart(int elevel, const char *domain)
{
	/*
	 * An ERROR raised while the arguments of another ereport are evaluated
	 * simply replaces it, as in PostgreSQL.
	 */
	memset(&shim_current, 0, sizeof(shim_current));
	shim_current.elevel = elevel;
	shim_current.sqlerrcode = elevel >= ERROR ? ERRCODE_INTERNAL_ERROR :
		ERRCODE_SUCCESSFUL_COMPLETION;
	shim_in_error = true;
	return true;
}

bool
errstart_cold(int elevel, const char *domain)
{
	return errstart(elevel, domain);
}

static void
shim_unpack_sqlstate(int sqlerrcode, char *buf)
{
	for (int i = 0; i < 5; i++)
	{
		buf[i] = PGUNSIXBIT(sqlerrcode);
		sqlerrcode >>= 6;
	}
	buf[5] = '\0';
}

void
errfinish(const char *filename, int lineno, const char *funcname)
{
	char		state[6];

	shim_in_error = false;
	shim_current.filename = filename;
	shim_current.lineno = lineno;
	if (shim_current.elevel < ERROR)
		return;
	shim_unpack_sqlstate(shim_current.sqlerrcode, state);
	if (shim_current.elevel >= FATAL)
		shim_fail("FATAL or PANIC: %s: %s (%s:%d)", state, shim_current.message,
				  filename, lineno);
	shim_last = shim_current;
	shim_have_error = true;
	if (shim_verbose)
		fprintf(stderr, "ERROR %s: %s [%s] [%s] (%s:%d)\n", state,
				shim_current.message, shim_current.detail, shim_current.hint,
				filename, lineno);
	if (PG_exception_stack == NULL)
		shim_fail("ERROR with no PG_exception_stack: %s: %s", state,
				  shim_current.message);
	siglongjmp(*PG_exception_stack, 1);
}

int
errcode(int sqlerrcode)
{
	shim_current.sqlerrcode = sqlerrcode;
	return 0;
}

#define SHIM_FORMAT(field, fmt) \
	do { \
		va_list		ap_; \
		va_start(ap_, fmt); \
		vsnprintf(shim_current.field, sizeof(shim_current.field), fmt, ap_); \
		va_end(ap_); \
	} while (0)

int
errmsg(const char *fmt,...)
{
	SHIM_FORMAT(message, fmt);
	return 0;
}

int
errmsg_internal(const char *fmt,...)
{
	SHIM_FORMAT(message, fmt);
	return 0;
}

int
errdetail(const char *fmt,...)
{
	SHIM_FORMAT(detail, fmt);
	return 0;
}

int
errdetail_internal(const char *fmt,...)
{
	SHIM_FORMAT(detail, fmt);
	return 0;
}

int
errdetail_log(const char *fmt,...)
{
	SHIM_FORMAT(detail, fmt);
	return 0;
}

int
errhint(const char *fmt,...)
{
	SHIM_FORMAT(hint, fmt);
	return 0;
}

int
set_errcontext_domain(const char *domain)
{
	return 0;
}

int
errcontext_msg(const char *fmt,...)
{
	char		buf[1024];
	va_list		ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	return 0;
}

int
errposition(int cursorpos)
{
	return 0;
}

/*---- The harness side ----*/

static MemoryContext shim_input_context;

void
shim_begin_input(void)
{
	char		here;

	if (TopMemoryContext == NULL)
	{
		TopMemoryContext = shim_context_create(NULL, "TopMemoryContext");
		ErrorContext = shim_context_create(TopMemoryContext, "ErrorContext");
		shim_verbose = getenv("FUZZ_VERBOSE") != NULL;
	}
	/* the harness's frame is the base, as PostgresMain's is in a backend */
	shim_stack_base = &here;
	shim_have_error = false;
	shim_in_error = false;
	/* an ERROR of the last input left its callbacks, as a backend's does */
	error_context_stack = NULL;
	memset(&shim_last, 0, sizeof(shim_last));
	shim_input_context = shim_context_create(TopMemoryContext, "fuzz input");
	CurrentMemoryContext = shim_input_context;
}

void
shim_caught_error(void)
{
	if (!shim_have_error)
		shim_fail("longjmp without an ERROR");
	/* PG_CATCH code runs in the context of the PG_TRY */
	CurrentMemoryContext = shim_input_context;
}

const char *
shim_error_sqlstate(void)
{
	static char state[6];

	if (!shim_have_error)
		return "00000";
	shim_unpack_sqlstate(shim_last.sqlerrcode, state);
	return state;
}

const char *
shim_error_message(void)
{
	return shim_have_error ? shim_last.message : "";
}

void
shim_end_input(const char *const *allowed)
{
	if (shim_have_error)
	{
		const char *state = shim_error_sqlstate();
		bool		ok = false;

		for (int i = 0; allowed[i]; i++)
			if (strcmp(allowed[i], state) == 0)
				ok = true;
		if (!ok)
			shim_fail("ERROR with an unexpected SQLSTATE %s: %s [%s] (%s:%d)",
					  state, shim_last.message, shim_last.detail,
					  shim_last.filename, shim_last.lineno);
	}
	CurrentMemoryContext = TopMemoryContext;
	MemoryContextDelete(shim_input_context);
	shim_input_context = NULL;
	shim_stack_base = NULL;

	/*
	 * Everything the code allocated belongs to the input's context (or a
	 * child of it): anything left in TopMemoryContext or ErrorContext, or
	 * any other context, would grow with every input.
	 */
	if (shim_live_chunks != 0 || shim_live_contexts != 2 ||
		TopMemoryContext->firstchild != ErrorContext ||
		ErrorContext->nextchild != NULL)
		shim_fail("memory outlives the input: %zu chunks, %zu contexts",
				  shim_live_chunks, shim_live_contexts);
	if (shim_charged != 0)
		shim_fail("%zu bytes stay charged to promread.max_memory after the input",
				  shim_charged);
}

/*-------------------------------------------------------------------------
 *
 * arena.c
 *	  The bump allocator of series sets, over memory reused between calls.
 *
 * A series set allocates its series, label copies, sample blocks and
 * large working arrays from an arena: chunks carved front to back, with no
 * per-allocation header and nothing freed before the set is, but for the
 * newest allocations, which can be taken back (PromArenaRewind), and large
 * ones: a large request gets a chunk of its own, rounded up to 16 kB (so
 * that an array just over 64 kB does not hold a whole ordinary chunk), which
 * goes back when it is freed.
 *
 * Ordinary chunks are sized to what the arena is told to expect (the rows a
 * scan's plan estimates, as samples), at most 256 kB, so that an answer of
 * 10,000 samples does not hold a quarter of a megabyte; without an
 * expectation, or past it (the series themselves, the sort's arrays), a new
 * chunk is an eighth of what the arena holds, at most 64 kB, so that the
 * last chunk's unused end stays small.  Sizes are multiples of 16 kB.
 *
 * The chunks of a finished call are kept, up to promread.keep_memory, and
 * handed to the next calls: fresh memory costs a page fault per 4 kB page on
 * first touch, which for a million samples is as much as grouping them.  A
 * fresh chunk's pages are faulted in at once, by one madvise call
 * (MADV_POPULATE_WRITE, Linux 5.14), which costs about half as much as
 * faulting them one by one as they are first written.  An arena of huge
 * pages (PromArenaUseHugePages: a set's copies of native histograms,
 * megabytes of fresh memory read in the order their rows arrived, far from
 * the next of their series) grows its ordinary chunks by doubling, up to
 * 8 MB, and asks for transparent huge pages (MADV_HUGEPAGE) for the 2 MB
 * pages that lie whole inside a chunk: a fault and a TLB entry per 2 MB
 * instead of per 4 kB.  Where the system does not give them (Linux's
 * transparent_hugepage set to never, other systems), these calls do
 * nothing and pages fault in as they are written.  The
 * pool keeps ordinary chunks in a list per size, so that taking one costs no
 * search, and large ones in a list of their own, searched for the best fit.
 * An arena belongs to a memory context and gives its chunks back when that
 * context is reset or deleted, so an error in the middle of a call loses
 * nothing.
 *
 * Every chunk, in use or kept, is allocated in one memory context of the
 * backend, "promread arena", so that pg_backend_memory_contexts shows what
 * promread holds.  The chunks in use are bounded by promread.max_memory: a
 * chunk that would pass it is refused with SQLSTATE 53200.  Decoded
 * messages (wire.c's decoding budget) are charged to the same count while
 * they are held.  Chunks beyond
 * what is kept go back to the C library, which is asked to return free
 * memory to the system at the end of a transaction whose reads gave back a
 * lot of it, their answers included (glibc keeps freed blocks of a size it
 * has seen freed before in its heap otherwise).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <sys/mman.h>

#include "access/xact.h"
#include "engine.h"
#include "utils/memutils.h"

/* Bytes of the largest ordinary chunk, header included. */
#define ARENA_CHUNK_SIZE	(256 * 1024)

/* Bytes of the largest ordinary chunk taken past what is expected. */
#define ARENA_UNEXPECTED_CHUNK_SIZE	(64 * 1024)

/* Huge pages, and the largest chunk of an arena that uses them. */
#define HUGE_PAGE_SIZE		(2 * 1024 * 1024)
#define ARENA_HUGE_CHUNK_SIZE	(4 * HUGE_PAGE_SIZE)

/* Chunk sizes are multiples of this. */
#define ARENA_GRANULE		(16 * 1024)

/* Sizes of ordinary chunks, in granules: 1 to ARENA_SIZES. */
#define ARENA_SIZES			(ARENA_CHUNK_SIZE / ARENA_GRANULE)

/* A chunk of an arena; its memory follows the header. */
typedef struct ArenaChunk
{
	struct ArenaChunk *next;
	Size		size;			/* bytes of the chunk, header included */
} ArenaChunk;

#define CHUNK_HEADER	MAXALIGN(sizeof(ArenaChunk))

/* Allocations larger than this get a chunk of their own. */
#define LARGE_ALLOCATION	((ARENA_CHUNK_SIZE - CHUNK_HEADER) / 4)

struct PromArena
{
	ArenaChunk *chunks;			/* the arena's chunks, newest first */
	char	   *carved;			/* the start of the newest ordinary chunk's
								 * memory */
	char	   *next;			/* and its free space */
	Size		left;
	Size		bytes;			/* bytes of all chunks */
	Size		used;			/* bytes handed out from ordinary chunks */
	Size		expected_used;	/* what used is expected to reach */
	bool		huge_pages;		/* PromArenaUseHugePages */
	MemoryContextCallback release;
};

/*
 * Chunks kept for the next calls of this backend: ordinary ones by size
 * (pool[k] holds those of k granules), large ones in pool[0].
 */
static ArenaChunk *pool[ARENA_SIZES + 1];
static Size pool_bytes = 0;

/* The context of every chunk, and the bytes of chunks in use by arenas. */
static MemoryContext arena_context = NULL;
static Size in_use_bytes = 0;

/*
 * Bytes given back to the C library by one arena after which it is asked to
 * return free memory to the system when the transaction ends.
 */
#define TRIM_AFTER_BYTES	(4 * 1024 * 1024)
static bool trim_at_transaction_end = false;

/* At the end of a transaction, return free memory to the system if asked. */
static void
trim_after_transaction(XactEvent event, void *arg)
{
	if (!trim_at_transaction_end ||
		(event != XACT_EVENT_COMMIT && event != XACT_EVENT_ABORT &&
		 event != XACT_EVENT_PARALLEL_COMMIT &&
		 event != XACT_EVENT_PARALLEL_ABORT))
		return;
	trim_at_transaction_end = false;
#ifdef __GLIBC__
	malloc_trim(0);
#endif
}

/* The pool's list for a chunk size. */
static inline ArenaChunk **
pool_list(Size size)
{
	return &pool[size <= ARENA_CHUNK_SIZE ? size / ARENA_GRANULE : 0];
}

/*
 * Give a list of chunks of an arena back to the pool, or, beyond
 * promread.keep_memory, to the C library; returns the bytes of the latter.
 */
static Size
release_chunks(ArenaChunk *chunk)
{
	Size		freed = 0;

	while (chunk != NULL)
	{
		ArenaChunk *next = chunk->next;

		in_use_bytes -= chunk->size;
		if (pool_bytes + chunk->size <= (Size) promread_keep_memory * 1024)
		{
			ArenaChunk **list = pool_list(chunk->size);

			chunk->next = *list;
			*list = chunk;
			pool_bytes += chunk->size;
		}
		else
		{
			freed += chunk->size;
			pfree(chunk);
		}
		chunk = next;
	}
	return freed;
}

/* Give an arena's chunks back when its memory context goes. */
static void
arena_release(void *arg)
{
	PromArena  *arena = (PromArena *) arg;

	if (release_chunks(arena->chunks) >= TRIM_AFTER_BYTES)
		trim_at_transaction_end = true;
	arena->chunks = NULL;
	arena->carved = arena->next = NULL;
	arena->left = 0;
	arena->bytes = 0;
}

/* An empty arena whose chunks are released with the context. */
PromArena *
PromArenaCreate(MemoryContext context)
{
	PromArena  *arena = MemoryContextAllocZero(context, sizeof(PromArena));

	arena->release.func = arena_release;
	arena->release.arg = arena;
	MemoryContextRegisterResetCallback(context, &arena->release);
	return arena;
}

/*
 * Let the arena's chunks grow large, onto huge pages (see the header
 * comment): for an arena that may take megabytes, read out of order.
 */
void
PromArenaUseHugePages(PromArena *arena)
{
	arena->huge_pages = true;
}

/*
 * Tell the arena that about this many more bytes will be allocated from its
 * ordinary chunks, so that they are sized to it.
 */
void
PromArenaExpect(PromArena *arena, Size bytes)
{
	arena->expected_used = Max(arena->expected_used, arena->used) + bytes;
}

/*
 * Take a chunk of the pool from a list, unlinking it; NULL if the list is
 * empty.
 */
static ArenaChunk *
pop_chunk(ArenaChunk **link)
{
	ArenaChunk *chunk = *link;

	if (chunk != NULL)
	{
		*link = chunk->next;
		pool_bytes -= chunk->size;
	}
	return chunk;
}

/*
 * A chunk of the pool of at least the given size, the smallest there is, and
 * for an ordinary size at most twice it, for a large one at most an eighth
 * more; NULL if none.  An ordinary size looks in the lists of its size and
 * the larger ones; a large size walks the large chunks.  A larger ordinary
 * chunk than asked for is held by the pool anyway, and fresh memory costs
 * page faults, so up to twice the size is taken.  A large chunk's excess
 * would be megabytes held by the call, and fresh pages cost little next to
 * the work that needs arrays that large, so up to an eighth more.
 */
static ArenaChunk *
pooled_chunk(Size size)
{
	ArenaChunk **best = NULL;
	ArenaChunk **link;
	Size		k;

	if (size <= ARENA_CHUNK_SIZE)
	{
		for (k = size / ARENA_GRANULE; k <= Min(2 * size / ARENA_GRANULE, ARENA_SIZES); k++)
			if (pool[k] != NULL)
				return pop_chunk(&pool[k]);
		return NULL;
	}
	for (link = &pool[0]; *link != NULL; link = &(*link)->next)
	{
		if ((*link)->size >= size && (*link)->size <= size + size / 8 &&
			(best == NULL || (*link)->size < (*best)->size))
		{
			best = link;
			if ((*link)->size == size)
				break;
		}
	}
	return best != NULL ? pop_chunk(best) : NULL;
}

/* Fault in the whole 4 kB pages from start to end at once, if they are any. */
static void
populate(uintptr_t start, uintptr_t end)
{
#ifdef MADV_POPULATE_WRITE
	uintptr_t	from = TYPEALIGN((uintptr_t) 4096, start);
	uintptr_t	to = TYPEALIGN_DOWN((uintptr_t) 4096, end);

	if (to > from)
		(void) madvise((void *) from, to - from, MADV_POPULATE_WRITE);
#endif
}

/*
 * Fault in the pages of a fresh chunk at once (see the header comment); for
 * an arena of huge pages, ask for them for the 2 MB pages lying whole inside
 * the chunk, which fault in as they are first written (one fault each, and
 * none for those a read leaves unused), and fault in the rest at once.
 */
static void
prefault(void *chunk, Size size, bool huge_pages)
{
	uintptr_t	start = (uintptr_t) chunk;
	uintptr_t	end = start + size;

#ifdef MADV_HUGEPAGE
	if (huge_pages)
	{
		uintptr_t	from = TYPEALIGN((uintptr_t) HUGE_PAGE_SIZE, start);
		uintptr_t	to = TYPEALIGN_DOWN((uintptr_t) HUGE_PAGE_SIZE, end);

		if (to > from && madvise((void *) from, to - from, MADV_HUGEPAGE) == 0)
		{
			populate(start, from);
			populate(to, end);
			return;
		}
	}
#endif
	populate(start, end);
}

/* A chunk of at least the given size, a multiple of ARENA_GRANULE. */
static ArenaChunk *
take_chunk(PromArena *arena, Size size)
{
	ArenaChunk *chunk;

	size = TYPEALIGN(ARENA_GRANULE, size);
	if (in_use_bytes + size > (Size) promread_max_memory * 1024)
		ereport(ERROR,
				(errcode(ERRCODE_OUT_OF_MEMORY),
				 errmsg("promread's working memory would exceed promread.max_memory (%dkB)",
						promread_max_memory),
				 errdetail("The reads in progress hold %zu bytes and need %zu more.",
						   in_use_bytes, size),
				 errhint("Select fewer series or a shorter time range, or raise promread.max_memory.")));
	chunk = pooled_chunk(size);
	if (chunk == NULL)
	{
		if (arena_context == NULL)
		{
			arena_context = AllocSetContextCreate(TopMemoryContext,
												  "promread arena",
												  ALLOCSET_SMALL_SIZES);
			RegisterXactCallback(trim_after_transaction, NULL);
		}
		chunk = MemoryContextAllocHuge(arena_context, size);
		prefault(chunk, size, arena->huge_pages);
		chunk->size = size;
	}
	chunk->next = arena->chunks;
	arena->chunks = chunk;
	arena->bytes += chunk->size;
	in_use_bytes += chunk->size;
	return chunk;
}

/*
 * Bytes of the next ordinary chunk for an allocation of the given size: for
 * an arena of huge pages, what the arena holds, at most
 * ARENA_HUGE_CHUNK_SIZE; else what is still expected, at most
 * ARENA_CHUNK_SIZE; else an eighth of what the arena holds, at most
 * ARENA_UNEXPECTED_CHUNK_SIZE.
 */
static Size
ordinary_chunk_size(const PromArena *arena, Size size)
{
	if (arena->huge_pages)
		return Min(Max(arena->bytes, size) + CHUNK_HEADER, ARENA_HUGE_CHUNK_SIZE);
	if (arena->expected_used > arena->used)
		return Min(Max(arena->expected_used - arena->used, size) + CHUNK_HEADER,
				   ARENA_CHUNK_SIZE);
	return Min(Max(arena->bytes / 8, size) + CHUNK_HEADER,
			   ARENA_UNEXPECTED_CHUNK_SIZE);
}

/*
 * Allocate MAXALIGNed memory that lives as long as the arena.  The size is
 * not rounded up: the allocation ends where asked, so that it can be grown
 * in place by any number of bytes, and the next allocation begins at the
 * next MAXALIGNed address.
 */
void *
PromArenaAlloc(PromArena *arena, Size size)
{
	Size		pad = TYPEALIGN(MAXIMUM_ALIGNOF, (uintptr_t) arena->next) -
		(uintptr_t) arena->next;
	void	   *result;

	if (PromArenaIsLarge(size))
	{
		/* a large request gets a chunk of its own */
		if (size > MaxAllocHugeSize)
			elog(ERROR, "invalid promread allocation of %zu bytes", size);
		return (char *) take_chunk(arena, CHUNK_HEADER + size) + CHUNK_HEADER;
	}
	if (pad + size > arena->left)
	{
		ArenaChunk *chunk = take_chunk(arena, ordinary_chunk_size(arena, size));

		arena->carved = arena->next = (char *) chunk + CHUNK_HEADER;
		arena->left = chunk->size - CHUNK_HEADER;
		pad = 0;
	}
	result = arena->next + pad;
	arena->next += pad + size;
	arena->left -= pad + size;
	arena->used += pad + size;
	return result;
}

/* Is end the end of the arena's newest allocation? */
bool
PromArenaIsNewest(const PromArena *arena, const void *end)
{
	return (const char *) end == arena->next;
}

/*
 * Grow the newest allocation by size bytes in place, if its chunk has room;
 * tells whether it did.
 */
bool
PromArenaExtend(PromArena *arena, Size size)
{
	if (size > arena->left)
		return false;
	arena->next += size;
	arena->left -= size;
	arena->used += size;
	return true;
}

/*
 * Give back everything allocated from start on, if that is all in the newest
 * ordinary chunk (the allocation at start and those after it, made last);
 * tells whether it did.
 */
bool
PromArenaRewind(PromArena *arena, void *start)
{
	char	   *from = start;

	if (arena->carved == NULL || from < arena->carved || from > arena->next)
		return false;
	arena->left += arena->next - from;
	arena->used -= arena->next - from;
	arena->next = from;
	return true;
}

/*
 * Give back an allocation of the given size.  A large one has a chunk of its
 * own, which goes back to the pool (or the system) at once, so that tables
 * replaced by larger ones and temporary arrays do not add up; a small one
 * stays until the arena is released.
 */
void
PromArenaFree(PromArena *arena, void *pointer, Size size)
{
	ArenaChunk *chunk = (ArenaChunk *) ((char *) pointer - CHUNK_HEADER);
	ArenaChunk **link;

	if (!PromArenaIsLarge(size))
		return;
	for (link = &arena->chunks; *link != chunk; link = &(*link)->next)
		if (*link == NULL)
			elog(ERROR, "promread freed memory that its arena does not hold");
	*link = chunk->next;
	arena->bytes -= chunk->size;
	chunk->next = NULL;
	(void) release_chunks(chunk);
}

/*
 * Does an allocation of this size get a chunk of its own (which goes back
 * when it is freed)?
 */
bool
PromArenaIsLarge(Size size)
{
	return size > LARGE_ALLOCATION;
}

/* Bytes of memory the arena holds. */
Size
PromArenaBytes(const PromArena *arena)
{
	return arena->bytes;
}

/*
 * Bytes promread.max_memory leaves to a new allocation: what the arenas and
 * the decoded messages in use do not hold.
 */
Size
PromMemoryAvailable(void)
{
	Size		limit = (Size) promread_max_memory * 1024;

	return in_use_bytes < limit ? limit - in_use_bytes : 0;
}

/* Count bytes held outside arenas (decoded messages) as in use. */
void
PromMemoryCharge(Size bytes)
{
	in_use_bytes += bytes;
}

/* Stop counting bytes charged by PromMemoryCharge. */
void
PromMemoryUncharge(Size bytes)
{
	Assert(in_use_bytes >= bytes);
	in_use_bytes -= bytes;
}

/*-------------------------------------------------------------------------
 *
 * arena.c
 *	  The bump allocator of series sets, over memory reused between calls.
 *
 * A series set allocates its series, label copies, sample blocks and
 * large working arrays from an arena: 256 kB chunks carved front to back,
 * with no per-allocation header and nothing freed before the set is (a
 * large request gets a chunk of its own, rounded up to 16 kB, so that an
 * array just over 64 kB does not hold a whole 256 kB).  The chunks
 * of a finished call are kept, up to promread.keep_memory, and handed to the
 * next calls: fresh memory costs a page fault per 4 kB page on first touch,
 * which for a million samples is as much as grouping them.  An arena
 * belongs to a memory context and gives its chunks back when that context is
 * reset or deleted, so an error in the middle of a call loses nothing.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "promread.h"
#include "utils/memutils.h"

/* Bytes of an ordinary chunk, header included. */
#define ARENA_CHUNK_SIZE	(256 * 1024)

/* Chunk sizes are multiples of this. */
#define ARENA_GRANULE		(16 * 1024)

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
	char	   *next;			/* free space of the newest pooled chunk */
	Size		left;
	Size		bytes;			/* bytes of all chunks */
	MemoryContextCallback release;
};

/* Chunks kept for the next calls of this backend. */
static ArenaChunk *pool = NULL;
static Size pool_bytes = 0;

/* Give a list of chunks back to the pool, or to the system. */
static void
release_chunks(ArenaChunk *chunk)
{
	while (chunk != NULL)
	{
		ArenaChunk *next = chunk->next;

		if (pool_bytes + chunk->size <= (Size) promread_keep_memory * 1024)
		{
			chunk->next = pool;
			pool = chunk;
			pool_bytes += chunk->size;
		}
		else
			free(chunk);
		chunk = next;
	}
}

/* Give an arena's chunks back when its memory context goes. */
static void
arena_release(void *arg)
{
	PromArena  *arena = (PromArena *) arg;

	release_chunks(arena->chunks);
	arena->chunks = NULL;
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
 * A chunk of at least the given size, a multiple of ARENA_GRANULE: the
 * smallest fitting one of the pool, unless it is more than twice as large,
 * else a new one.  The search stops at the first chunk of exactly the size,
 * so that taking an ordinary chunk does not walk the whole pool (hundreds
 * of chunks, each header on a page of its own).
 */
static ArenaChunk *
take_chunk(PromArena *arena, Size size)
{
	ArenaChunk **best = NULL;
	ArenaChunk **link;
	ArenaChunk *chunk;

	size = TYPEALIGN(ARENA_GRANULE, size);
	for (link = &pool; *link != NULL; link = &(*link)->next)
	{
		if ((*link)->size >= size && (*link)->size <= 2 * size &&
			(best == NULL || (*link)->size < (*best)->size))
		{
			best = link;
			if ((*link)->size == size)
				break;
		}
	}
	if (best != NULL)
	{
		chunk = *best;
		*best = chunk->next;
		pool_bytes -= chunk->size;
	}
	else
	{
		chunk = malloc(size);
		if (chunk == NULL)
			ereport(ERROR,
					(errcode(ERRCODE_OUT_OF_MEMORY),
					 errmsg("out of memory"),
					 errdetail("Failed on request of size %zu in promread.", size)));
		chunk->size = size;
	}
	chunk->next = arena->chunks;
	arena->chunks = chunk;
	arena->bytes += chunk->size;
	return chunk;
}

/* Allocate MAXALIGNed memory that lives as long as the arena. */
void *
PromArenaAlloc(PromArena *arena, Size size)
{
	void	   *result;

	size = MAXALIGN(size);
	if (size > LARGE_ALLOCATION)
	{
		/* a large request gets a chunk of its own */
		if (size > MaxAllocHugeSize)
			elog(ERROR, "invalid promread allocation of %zu bytes", size);
		return (char *) take_chunk(arena, CHUNK_HEADER + size) + CHUNK_HEADER;
	}
	if (size > arena->left)
	{
		ArenaChunk *chunk = take_chunk(arena, ARENA_CHUNK_SIZE);

		arena->next = (char *) chunk + CHUNK_HEADER;
		arena->left = chunk->size - CHUNK_HEADER;
	}
	result = arena->next;
	arena->next += size;
	arena->left -= size;
	return result;
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

	if (MAXALIGN(size) <= LARGE_ALLOCATION)
		return;
	for (link = &arena->chunks; *link != chunk; link = &(*link)->next)
		if (*link == NULL)
			elog(ERROR, "promread freed memory that its arena does not hold");
	*link = chunk->next;
	arena->bytes -= chunk->size;
	chunk->next = NULL;
	release_chunks(chunk);
}

/* Bytes of memory the arena holds. */
Size
PromArenaBytes(const PromArena *arena)
{
	return arena->bytes;
}

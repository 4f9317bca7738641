/*
 * snappy_mutator.c
 *	  libFuzzer custom mutator of the targets whose input is a snappy block
 *	  (fuzz_request, fuzz_write): an input that is a valid snappy block is
 *	  decompressed, the protobuf inside mutated with libFuzzer's own
 *	  mutations, and compressed again.  One mutation in eight works on the
 *	  compressed bytes instead, for the snappy paths.
 */
#include "postgres.h"

#include <stdint.h>
#include <stdlib.h>

#include <snappy-c.h>

extern size_t LLVMFuzzerMutate(uint8_t *data, size_t size, size_t max_size);
size_t		LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max_size,
									unsigned int seed);

/* The most uncompressed bytes the mutator works on. */
#define MUTATE_MAX	(1024 * 1024)

size_t
LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max_size,
						unsigned int seed)
{
	size_t		ulen;
	size_t		cap;
	size_t		newlen;
	size_t		clen;
	char	   *plain;
	char	   *packed;

	if (seed % 8 == 0 ||
		snappy_uncompressed_length((const char *) data, size, &ulen) != SNAPPY_OK ||
		ulen > MUTATE_MAX)
		return LLVMFuzzerMutate(data, size, max_size);
	cap = Min(ulen * 2 + 256, MUTATE_MAX);
	plain = malloc(Max(cap, ulen) + 1);
	if (snappy_uncompress((const char *) data, size, plain, &ulen) != SNAPPY_OK)
	{
		free(plain);
		return LLVMFuzzerMutate(data, size, max_size);
	}
	newlen = LLVMFuzzerMutate((uint8_t *) plain, ulen, Max(cap, ulen));
	clen = snappy_max_compressed_length(newlen);
	packed = malloc(clen);
	if (snappy_compress(plain, newlen, packed, &clen) != SNAPPY_OK || clen > max_size)
	{
		free(plain);
		free(packed);
		return LLVMFuzzerMutate(data, size, max_size);
	}
	memcpy(data, packed, clen);
	free(plain);
	free(packed);
	return clen;
}

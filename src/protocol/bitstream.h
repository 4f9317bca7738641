/*-------------------------------------------------------------------------
 *
 * bitstream.h
 *	  Writing the bitstreams of Prometheus's chunks (tsdb/chunkenc): bits
 *	  most significant first, and the XOR of a float with the one before,
 *	  as XOR chunks (chunk_encode.c) and histogram chunks
 *	  (histogram_chunk.c) write them.
 *
 * The writer writes into memory its caller made room for; it never checks.
 * Each write is one 8-byte store (the pending bits, the new ones, then
 * zeros), so the room must reach BITSTREAM_SLACK bytes past the stream's
 * end: what lies past the bits written is scratch, which later writes and
 * finish_bits overwrite.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PROMREAD_BITSTREAM_H
#define PROMREAD_BITSTREAM_H

#include "port/pg_bitutils.h"
#include "port/pg_bswap.h"

/* No window of leading and trailing zeros yet. */
#define XOR_NO_WINDOW			0xff

/* Bytes a writer may store past the end of its stream. */
#define BITSTREAM_SLACK			8

/* A bitstream being written, most significant bit first. */
typedef struct XorWriter
{
	uint8	   *p;				/* where the next whole byte goes */
	uint64		acc;			/* pending bits in the low nacc bits */
	int			nacc;			/* fewer than 8 between calls */
} XorWriter;

/*
 * Write the n (at most 56) low bits of bits: the pending bits and the new
 * ones, at most 63, go out as one big-endian 8-byte store, aligned to the
 * top, and the whole bytes among them are passed; the rest stay pending.
 */
static inline void
put_bits(XorWriter *w, uint64 bits, int n)
{
	uint64		out;

	Assert(n >= 0 && n <= 56);
	w->acc = (w->acc << n) | (bits & ((UINT64CONST(1) << n) - 1));
	w->nacc += n;
	/* two shifts, so that none is by 64 when nothing is pending */
	out = pg_hton64((w->acc << (63 - w->nacc)) << 1);
	memcpy(w->p, &out, sizeof(out));
	w->p += w->nacc >> 3;
	w->nacc &= 7;
}

/* Write the n (at most 64) low bits of bits. */
static inline void
put_bits64(XorWriter *w, uint64 bits, int n)
{
	if (n > 32)
	{
		put_bits(w, bits >> 32, n - 32);
		n = 32;
	}
	put_bits(w, bits, n);
}

/* Pad the last byte with zeros; returns the end of the stream. */
static inline uint8 *
finish_bits(XorWriter *w)
{
	if (w->nacc > 0)
		*w->p++ = (uint8) (w->acc << (8 - w->nacc));
	w->nacc = 0;
	return w->p;
}

/* Write a value as its XOR x with the previous one. */
static inline void
put_xor(XorWriter *w, uint64 x, uint8 *leading, uint8 *trailing)
{
	int			lead;
	int			trail;

	if (x == 0)
	{
		put_bits(w, 0, 1);
		return;
	}
	lead = 63 - pg_leftmost_one_pos64(x);
	trail = pg_rightmost_one_pos64(x);
	if (lead > 31)
		lead = 31;				/* it must fit in 5 bits */

	if (*leading != XOR_NO_WINDOW && lead >= *leading && trail >= *trailing)
	{
		/* '10', then the bits inside the previous window */
		put_bits(w, 0x2, 2);
		put_bits64(w, x >> *trailing, 64 - *leading - *trailing);
	}
	else
	{
		int			sigbits = 64 - lead - trail;

		/* '11', leading zeros, meaningful bits (64 is written as 0) */
		*leading = (uint8) lead;
		*trailing = (uint8) trail;
		put_bits(w, (UINT64CONST(0x3) << 11) | ((uint64) lead << 6) |
				 (uint64) (sigbits & 0x3f), 13);
		put_bits64(w, x >> trail, sigbits);
	}
}

#endif							/* PROMREAD_BITSTREAM_H */

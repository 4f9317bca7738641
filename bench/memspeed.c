/*
 * memspeed: what this machine's memory gives one core, the bounds against
 * which promread's passes over a large answer are judged (bench/RESULTS.md,
 * "What the machine's memory gives one core").
 *
 *   cc -O2 -o /tmp/memspeed bench/memspeed.c && /tmp/memspeed
 *
 * Over a buffer far larger than the caches (256 MB) it measures, each the
 * median of five runs:
 *   - reading it in order, a load per 64-byte line (what a pass over the
 *     series in the order of their memory costs at least);
 *   - writing it in order, a store per line (making series);
 *   - loads of random lines, each address depending on the one before (one
 *     cache miss at a time: the latency);
 *   - loads of random lines, sixteen independent chains at once (misses
 *     overlapped as far as the core's fill buffers allow: the encoder's and
 *     the probes' best case).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define BUFFER_BYTES	((size_t) 256 << 20)
#define LINE			64
#define NLINES			(BUFFER_BYTES / LINE)
#define RUNS			5
#define CHAINS			16
#define RANDOM_LOADS	((size_t) 1 << 22)

/* Seconds on the monotonic clock. */
static double
now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* The median of RUNS doubles (sorts them). */
static double
median(double *x)
{
	int			i,
				j;

	for (i = 1; i < RUNS; i++)
		for (j = i; j > 0 && x[j - 1] > x[j]; j--)
		{
			double		t = x[j];

			x[j] = x[j - 1];
			x[j - 1] = t;
		}
	return x[RUNS / 2];
}

/* A random permutation cycle over the lines: next[line] is the line after. */
static void
link_lines(uint64_t *buffer)
{
	size_t	   *order = malloc(sizeof(size_t) * NLINES);
	size_t		i;
	uint64_t	state = 88172645463325252ULL;

	for (i = 0; i < NLINES; i++)
		order[i] = i;
	for (i = NLINES - 1; i > 0; i--)
	{
		size_t		j;
		size_t		t;

		state ^= state << 13;
		state ^= state >> 7;
		state ^= state << 17;
		j = state % (i + 1);
		t = order[i];
		order[i] = order[j];
		order[j] = t;
	}
	for (i = 0; i < NLINES; i++)
		buffer[order[i] * (LINE / 8)] = order[(i + 1) % NLINES];
	free(order);
}

int
main(void)
{
	uint64_t   *buffer = aligned_alloc(LINE, BUFFER_BYTES);
	double		read_s[RUNS],
				write_s[RUNS],
				chain_s[RUNS],
				chains_s[RUNS];
	volatile uint64_t sink = 0;
	int			run;

	memset(buffer, 1, BUFFER_BYTES);
	for (run = 0; run < RUNS; run++)
	{
		double		t0 = now();
		uint64_t	sum = 0;
		size_t		i;

		for (i = 0; i < NLINES; i++)
			sum += buffer[i * (LINE / 8)];
		read_s[run] = now() - t0;
		sink += sum;

		t0 = now();
		for (i = 0; i < NLINES; i++)
			buffer[i * (LINE / 8)] = i;
		write_s[run] = now() - t0;
	}

	link_lines(buffer);
	for (run = 0; run < RUNS; run++)
	{
		uint64_t	line = (uint64_t) run;
		uint64_t	lines[CHAINS];
		double		t0 = now();
		size_t		i;
		int			c;

		for (i = 0; i < RANDOM_LOADS; i++)
			line = buffer[line * (LINE / 8)];
		chain_s[run] = now() - t0;
		sink += line;

		for (c = 0; c < CHAINS; c++)
			lines[c] = (uint64_t) c * (NLINES / CHAINS);
		t0 = now();
		for (i = 0; i < RANDOM_LOADS / CHAINS; i++)
			for (c = 0; c < CHAINS; c++)
				lines[c] = buffer[lines[c] * (LINE / 8)];
		chains_s[run] = now() - t0;
		for (c = 0; c < CHAINS; c++)
			sink += lines[c];
	}

	printf("read in order: %.1f GB/s\n", BUFFER_BYTES / median(read_s) / 1e9);
	printf("write in order: %.1f GB/s\n", BUFFER_BYTES / median(write_s) / 1e9);
	printf("random line, one miss at a time: %.1f ns a load\n",
		   median(chain_s) / RANDOM_LOADS * 1e9);
	printf("random lines, %d misses at once: %.1f ns a load (%.1f GB/s)\n",
		   CHAINS, median(chains_s) / RANDOM_LOADS * 1e9,
		   RANDOM_LOADS * (double) LINE / median(chains_s) / 1e9);
	return sink == 42;
}

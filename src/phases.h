/*-------------------------------------------------------------------------
 *
 * phases.h
 *	  promread.report_phases: timing the phases of a call (phases.c).
 *
 * Each SQL entry point starts a report (PromPhasesStart), brackets each
 * phase with PromPhaseBegin and PromPhaseEnd, adds counts to PromPhases,
 * and ends it (PromPhasesFinish), which raises the NOTICE.  With the
 * setting off, every probe is one untaken branch.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PROMREAD_PHASES_H
#define PROMREAD_PHASES_H

#include "postgres.h"

#include <time.h>

typedef enum PromPhase
{
	PROM_PHASE_DECODE,
	PROM_PHASE_PLAN,
	PROM_PHASE_SCAN,			/* the executor alone */
	PROM_PHASE_GROUP,			/* what grouping adds to the executor */
	PROM_PHASE_SORT,
	PROM_PHASE_ENCODE,
	PROM_PHASE_COMPRESS,
	PROM_NPHASES
} PromPhase;

/* The report of the current call. */
typedef struct PromPhaseReport
{
	bool		active;
	uint64		start_ns;
	uint64		start_ticks;
	uint64		ticks[PROM_NPHASES];
	int64		rows;
	int64		series;
	int64		samples;
	int64		bytes;
	int64		compressed;
	Size		memory;
	int64		continuations;	/* blocks made to continue their head */
	int64		continuations_ended;	/* of those, given a chained block */
	int64		after_runs;		/* series made after a run of rows,
								 * without a lookup */
	int64		merged;			/* series merged into one of the same
								 * label set by the sort */
	int64		matcher_evaluations;	/* matchers evaluated on a label
										 * value (decided per value) */
} PromPhaseReport;

extern PromPhaseReport PromPhases;

extern void PromPhasesStart(void);
extern void PromPhasesMemory(Size bytes);
extern void PromPhasesScanned(uint64 with_grouping, uint64 alone);
extern void PromPhasesFinish(void);

/*
 * A cheap timestamp in ticks: the time-stamp counter on x86-64 with GCC or
 * Clang, else nanoseconds of the monotonic clock.  The counter is read
 * between fences, after the instructions before it have completed and
 * before those after it begin, so that a phase's instructions are counted
 * in it and not in the next.
 */
static inline uint64
PromTicks(void)
{
#if defined(__x86_64__) && defined(__GNUC__)
	uint64		ticks;

	__builtin_ia32_lfence();
	ticks = __builtin_ia32_rdtsc();
	__builtin_ia32_lfence();
	return ticks;
#else
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64) ts.tv_sec * 1000000000 + ts.tv_nsec;
#endif
}

/* Start timing a phase; 0 when no report is being made. */
static inline uint64
PromPhaseBegin(void)
{
	return unlikely(PromPhases.active) ? PromTicks() : 0;
}

/* Add the time since PromPhaseBegin to a phase. */
static inline void
PromPhaseEnd(PromPhase phase, uint64 begin)
{
	if (unlikely(PromPhases.active))
		PromPhases.ticks[phase] += PromTicks() - begin;
}

#endif							/* PROMREAD_PHASES_H */

/*-------------------------------------------------------------------------
 *
 * phases.c
 *	  promread.report_phases: where a call's time and memory went.
 *
 * With the setting on, each call of prom_remote_read or prom_series ends
 * with a NOTICE giving the time of each phase (decode, plan, scan, group,
 * sort, encode, compress, in ms), how many rows, series, samples and bytes
 * it handled, its peak working memory, how many sample blocks were made to
 * continue their series' head (samples.c) and how many of those were given
 * a chained block of their own later, and how many series were made after
 * a run of rows without a lookup (group.c) and how many merged into another
 * of their label set when sorted (order.c), and how many times a matcher
 * was evaluated on a label value (layout.c: matchers decided per distinct
 * value).  With it off, every probe is one untaken branch.
 *
 * Phases are timed with the CPU's time-stamp counter where there is one
 * (converted to time against the wall clock over the whole call), else with
 * the monotonic clock.  Snappy pulls each 64 kB fragment from the encoder
 * while it compresses, so compression is snappy's time less the encoder's
 * inside it, and encode time the writing time less compression.  Scanning
 * and grouping interleave row by row, and the processor overlaps the two:
 * so each scan is run a second time, reading its rows without grouping them
 * (scan_exec.c), and that run's time is the scan phase's, the rest of the first
 * run's the group phase's.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <time.h>

#include "lib/stringinfo.h"
#include "phases.h"
#include "promread.h"

PromPhaseReport PromPhases;

/* Nanoseconds of the monotonic clock. */
static uint64
clock_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64) ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Start a report for this call, when promread.report_phases is on. */
void
PromPhasesStart(void)
{
	memset(&PromPhases, 0, sizeof(PromPhases));
	PromPhases.active = promread_report_phases;
	if (PromPhases.active)
	{
		PromPhases.start_ns = clock_ns();
		PromPhases.start_ticks = PromTicks();
	}
}

/*
 * Split the time of a scan that grouped its rows between the scan and group
 * phases, given the time of the same scan without grouping.
 */
void
PromPhasesScanned(uint64 with_grouping, uint64 alone)
{
	uint64		scan = Min(alone, with_grouping);

	PromPhases.ticks[PROM_PHASE_SCAN] += scan;
	PromPhases.ticks[PROM_PHASE_GROUP] += with_grouping - scan;
}

/* Note a peak of working memory. */
void
PromPhasesMemory(Size bytes)
{
	PromPhases.memory = Max(PromPhases.memory, bytes);
}

/* Emit the report of this call as a NOTICE. */
void
PromPhasesFinish(void)
{
	static const char *const names[PROM_NPHASES] = {
		"decode", "plan", "scan", "group", "sort", "encode", "compress"
	};
	double		ms_per_tick;
	uint64		elapsed_ticks;
	StringInfoData report;
	int			i;

	if (!PromPhases.active)
		return;
	PromPhases.active = false;

	elapsed_ticks = PromTicks() - PromPhases.start_ticks;
	ms_per_tick = elapsed_ticks == 0 ? 0 :
		(double) (clock_ns() - PromPhases.start_ns) / elapsed_ticks / 1e6;
	/* compression happens in pieces while encoding */
	PromPhases.ticks[PROM_PHASE_ENCODE] -=
		Min(PromPhases.ticks[PROM_PHASE_ENCODE], PromPhases.ticks[PROM_PHASE_COMPRESS]);

	initStringInfo(&report);
	appendStringInfoString(&report, "promread phases:");
	for (i = 0; i < PROM_NPHASES; i++)
		appendStringInfo(&report, " %s=%.3f", names[i],
						 PromPhases.ticks[i] * ms_per_tick);
	appendStringInfo(&report,
					 " rows=" INT64_FORMAT " series=" INT64_FORMAT
					 " samples=" INT64_FORMAT " bytes=" INT64_FORMAT
					 " compressed=" INT64_FORMAT " memory=%zu"
					 " continuations=" INT64_FORMAT
					 " continuations_ended=" INT64_FORMAT
					 " after_runs=" INT64_FORMAT " merged=" INT64_FORMAT
					 " matcher_evaluations=" INT64_FORMAT,
					 PromPhases.rows, PromPhases.series, PromPhases.samples,
					 PromPhases.bytes, PromPhases.compressed, PromPhases.memory,
					 PromPhases.continuations, PromPhases.continuations_ended,
					 PromPhases.after_runs, PromPhases.merged,
					 PromPhases.matcher_evaluations);
	ereport(NOTICE, (errmsg_internal("%s", report.data)));
	pfree(report.data);
}

/*
 * pg_shim.h
 *	  The harness side of pg_shim.c: the PostgreSQL backend symbols that
 *	  promread's decoding and parsing code needs, provided outside a server.
 *
 * Each fuzz input runs in its own memory context (a child of
 * TopMemoryContext, deleted after the input) between shim_begin_input()
 * and shim_end_input().  An ereport(ERROR) records its SQLSTATE and message
 * and longjmps to the sigjmp_buf the harness put in PG_exception_stack, as
 * PG_TRY does: an ERROR is a clean rejection of the input.  shim_end_input()
 * aborts (which libFuzzer reports as a crash) when the SQLSTATE is not one
 * of those the caller allows, or when memory outlives the input.
 */
#ifndef PG_SHIM_H
#define PG_SHIM_H

#include "postgres.h"

#include <setjmp.h>

/* Start an input: a fresh memory context, no error, the stack base. */
extern void shim_begin_input(void);

/* An ERROR was raised (the longjmp came back): remember it. */
extern void shim_caught_error(void);

/*
 * End an input: check any error against allowed (SQLSTATEs, NULL-terminated),
 * delete the input's memory and check that nothing outlives it.
 */
extern void shim_end_input(const char *const *allowed);

/* The last error: its SQLSTATE ("00000" when none) and message. */
extern const char *shim_error_sqlstate(void);
extern const char *shim_error_message(void);

/*
 * The bytes an input's memory may pass promread.max_memory (256 kB in the
 * shim) by, in all contexts but a regex translation's: 256 kB unless a
 * target sets it (a request's matcher may hold a regex's literal set, up to
 * 1 MB, before its budget is checked).
 */
extern Size shim_memory_margin;

/* Print errors as they are caught (FUZZ_VERBOSE=1 in the environment). */
extern bool shim_verbose;

/* Fail the input with a message (an invariant does not hold). */
extern void shim_fail(const char *fmt,...) pg_attribute_printf(1, 2) pg_attribute_noreturn();

/*
 * Run stmt with ERROR caught, as PG_TRY/PG_CATCH would.  Variables that
 * stmt assigns and the code after reads must be volatile.
 */
#define SHIM_RUN(stmt) \
	do { \
		sigjmp_buf	shim_jb_; \
		if (sigsetjmp(shim_jb_, 0) == 0) \
		{ \
			PG_exception_stack = &shim_jb_; \
			stmt; \
		} \
		else \
			shim_caught_error(); \
		PG_exception_stack = NULL; \
	} while (0)

#endif							/* PG_SHIM_H */

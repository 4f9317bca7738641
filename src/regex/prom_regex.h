/*-------------------------------------------------------------------------
 *
 * prom_regex.h
 *	  Prometheus (RE2) regular expressions, translated to PostgreSQL AREs.
 *
 * Prometheus matches label values against RE2 patterns, fully anchored and
 * with "." matching a newline: ^(?s:re)$.  PostgreSQL's advanced regular
 * expressions (AREs) differ in syntax and in a few meanings, so a pattern is
 * parsed as RE2 and rewritten as an ARE that accepts exactly the same set of
 * strings; a construct that cannot be rewritten exactly is rejected.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PROM_REGEX_H
#define PROM_REGEX_H

#include "postgres.h"

#include "compat.h"

/*
 * A compiled Prometheus regex matcher value.
 *
 * "anchored" depends on no locale or collation setting (no ARE character
 * classes, case-insensitivity or \y), although promread matches it with
 * COLLATE "C" anyway; it is valid for PostgreSQL's default regex flags
 * (REG_ADVANCED, not newline-sensitive) in a UTF8 database.
 */
typedef struct PromRegex
{
	text	   *anchored;		/* ARE accepting exactly the RE2 pattern's
								 * strings, anchored at both ends */
	bool		is_literal_set; /* the pattern matches a small finite set of
								 * strings: the literals */
	int			nliterals;		/* when is_literal_set: the literals (at
								 * least one, sorted bytewise, without
								 * duplicates) */
	char	  **literals;		/* NUL-terminated copies, "" possible, never
								 * containing NUL */
	int		   *literal_lens;
	char	   *prefix;			/* what every string it matches begins with
								 * (NUL-terminated, "" possible) */
	int			prefix_len;
	text	   *like;			/* a LIKE pattern accepting exactly the same
								 * strings, when the pattern is characters
								 * and "."s (alone, .* or .+); else NULL */
	bool		matches_empty;	/* does "" match the pattern? */
} PromRegex;

/*
 * Parse an RE2 pattern (valid UTF-8, not NUL-terminated) and translate it.
 * Raises ERRCODE_INVALID_REGULAR_EXPRESSION for a pattern RE2 rejects and for
 * one that has no exact ARE equivalent.  Allocates in CurrentMemoryContext.
 */
extern PromRegex *PromRegexCompile(const char *pattern, int len);

/* Does the value (not NUL-terminated) match, with Prometheus's anchoring? */
extern bool PromRegexMatch(const PromRegex *re, const char *value, int len);

/*
 * The least string greater than every string that begins with the regex's
 * literal prefix, bytewise; NULL when there is none.
 */
extern text *PromRegexPrefixUpperBound(const PromRegex *re);

/*
 * Value of a hexadecimal digit, or -1: for the \x escapes that RE2 patterns
 * and PromQL strings share.
 */
static inline int
PromHexDigit(int32 c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

#endif							/* PROM_REGEX_H */

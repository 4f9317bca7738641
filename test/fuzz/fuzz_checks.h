/*
 * fuzz_checks.h
 *	  Invariants of a parsed query that both fuzz targets check on every
 *	  input that is accepted: what the rest of promread (scan.c, catalog.c)
 *	  relies on.  A violation aborts, which libFuzzer reports as a crash.
 */
#ifndef FUZZ_CHECKS_H
#define FUZZ_CHECKS_H

#include "postgres.h"

#include "promread.h"
#include "pg_shim.h"

static void
fuzz_check_regex(const PromMatcher *m)
{
	const PromRegex *re = m->regex;
	const char *are;
	int			len;

	if (re == NULL)
		shim_fail("regex matcher without a regex");
	if (re->anchored == NULL)
		shim_fail("regex without its ARE");
	are = VARDATA_ANY(re->anchored);
	len = VARSIZE_ANY_EXHDR(re->anchored);
	if (len < 6 || memcmp(are, "^(?:", 4) != 0 || memcmp(are + len - 2, ")$", 2) != 0)
		shim_fail("ARE not anchored as ^(?:...)$: \"%.*s\"", len, are);
	if (memchr(are, '\0', len) != NULL)
		shim_fail("ARE holds a NUL byte");
	if (!PromIsValidUtf8(are, len))
		shim_fail("ARE is not valid UTF-8");
	if (re->is_literal_set)
	{
		bool		has_empty = false;

		if (re->nliterals < 1)
			shim_fail("empty literal set");
		for (int i = 0; i < re->nliterals; i++)
		{
			if (re->literals[i] == NULL ||
				(int) strlen(re->literals[i]) != re->literal_lens[i])
				shim_fail("literal %d: length or NUL", i);
			if (i > 0 && strcmp(re->literals[i - 1], re->literals[i]) >= 0)
				shim_fail("literals not sorted and unique at %d", i);
			if (!PromIsValidUtf8(re->literals[i], re->literal_lens[i]))
				shim_fail("literal %d is not valid UTF-8", i);
			if (re->literal_lens[i] == 0)
				has_empty = true;
		}
		if (has_empty != re->matches_empty)
			shim_fail("literal set %s \"\" but matches_empty is %d",
					  has_empty ? "holds" : "lacks", re->matches_empty);
	}
}

static void
fuzz_check_query(const PromQuery *q)
{
	if (q->nmatchers < 0 || (q->nmatchers > 0 && q->matchers == NULL))
		shim_fail("bad matcher count %d", q->nmatchers);
	for (int i = 0; i < q->nmatchers; i++)
	{
		const PromMatcher *m = &q->matchers[i];

		if (m->type < PROM_MATCH_EQ || m->type > PROM_MATCH_NRE)
			shim_fail("matcher %d: type %d", i, (int) m->type);
		if (m->name == NULL || m->value == NULL || m->value_len < 0)
			shim_fail("matcher %d: no name or value", i);
		if (m->value[m->value_len] != '\0')
			shim_fail("matcher %d: value not NUL-terminated", i);
		if (!PromIsValidUtf8(m->name, strlen(m->name)) ||
			!PromIsValidUtf8(m->value, m->value_len))
			shim_fail("matcher %d: not valid UTF-8", i);
		if ((m->type == PROM_MATCH_RE || m->type == PROM_MATCH_NRE) != (m->regex != NULL))
			shim_fail("matcher %d: regex present for the wrong type", i);
		if (m->regex)
			fuzz_check_regex(m);
		/* "" (a missing label) matches exactly when matches_empty says so */
		if (PromMatcherMatches(m, "", 0) != m->matches_empty)
			shim_fail("matcher %d (%s %s \"%s\"): matches_empty is %d",
					  i, m->name, PromMatchTypeOperator(m->type), m->value,
					  m->matches_empty);
	}
}

#endif							/* FUZZ_CHECKS_H */

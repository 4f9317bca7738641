/*-------------------------------------------------------------------------
 *
 * prom_regex.c
 *	  Prometheus (Go RE2) regular expressions, translated to PostgreSQL AREs.
 *
 * Prometheus compiles a regex matcher with Go's regexp (Perl flags) as
 * ^(?s:pattern)$: it must match the whole value, and "." matches a
 * newline.  promread evaluates matchers as PostgreSQL AREs, so each pattern
 * is rewritten as an ARE accepting exactly the same strings:
 *
 * 1. Parse.  A recursive-descent parser follows Go 1.19's regexp/syntax,
 *    corner cases included (an unparsable "{" is a literal; "**", "\8" and
 *    "(?<name>re)" are errors; counted repetitions at most 1000, nesting
 *    included).  Everything Go rejects is an invalid regular expression.
 *    Classes become sorted sets of code points; under (?i) each item is
 *    case-folded before the class is negated, as Go does.
 * 2. Reject what cannot be exact: Unicode classes (\pL) and case folding of
 *    non-ASCII letters would need Unicode tables.  They are reported once
 *    the whole pattern has parsed, so a later syntax error wins.
 * 3. Simplify.  A NUL or a surrogate never occurs in a text value, so it
 *    matches nothing (a|\x00 is a); repetitions of empty-width assertions are
 *    reduced (ARE cannot quantify them) and nested x*, x+, x? merged.
 * 4. Emit an ARE that depends on no locale: letters and digits as
 *    themselves, every other character as \uXXXX or \UXXXXXXXX; classes as
 *    explicit code-point ranges (or their complement); case folding already
 *    expanded; "." as ".", (?-s). as [^\u000a]; (?m)^ and $ and \b as
 *    lookaround (ARE's \y follows the collation); repetitions over ARE's 255
 *    split exactly; laziness dropped (it does not change whether an anchored
 *    match exists).  The result is anchored as ^(?:...)$.
 *
 * Go's limits on the size and depth of the parse tree are imitated on our
 * own tree, so the verdict can differ from Go's for patterns near them.
 * The parser also counts its nodes and stops at more than the size limit
 * (a tree that large takes gigabytes), even where an x{0} would have shrunk
 * the size back under it.  The module assumes a UTF8 database, where
 * PostgreSQL's regex engine works on code points, like Go's.
 *
 * The steps live in files of their own (regex_internal.h): regex_parse.c
 * parses (steps 1 and 2), on the errors, characters, code-point sets and
 * tree nodes of regex_chars.c; regex_analyze.c checks Go's limits and finds
 * literal sets, prefixes and, in the simplified tree, the LIKE pattern of a
 * regex made of characters and "."s; regex_emit.c simplifies and emits
 * (steps 3 and 4).  This file holds the entry points: compiling, matching, and the
 * SQL functions.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_collation.h"
#include "lib/stringinfo.h"
#include "mb/pg_wchar.h"
#include "regex/regex.h"
#include "utils/builtins.h"
#include "utils/memutils.h"
#include "regex_internal.h"

/* ---------------------------------------------------------------------
 * Entry points
 * ---------------------------------------------------------------------
 */

/*
 * Parse an RE2 pattern (valid UTF-8, not NUL-terminated) and translate it.
 */
PromRegex *
PromRegexCompile(const char *pattern, int len)
{
	MemoryContext resultcxt = CurrentMemoryContext;
	MemoryContext workcxt;
	MemoryContext oldcxt;
	RxParser	ps;
	RxNode	   *root;
	PromRegex  *re;
	StringInfoData buf;

	if (GetDatabaseEncoding() != PG_UTF8)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("regular expression matchers require a UTF8 database"),
				 errdetail("The database encoding is %s.",
						   GetDatabaseEncodingName())));

	re = palloc0(sizeof(PromRegex));

	workcxt = AllocSetContextCreate(CurrentMemoryContext,
									"prom_regex translation",
									ALLOCSET_DEFAULT_SIZES);
	oldcxt = MemoryContextSwitchTo(workcxt);

	memset(&ps, 0, sizeof(ps));
	ps.pattern = pattern;
	ps.patstr = pnstrdup(pattern, len);
	ps.p = pattern;
	ps.end = pattern + len;
	ps.flags = RXF_DOTNL;		/* Prometheus compiles ^(?s:pattern)$ */

	root = PromRxParseAlternation(&ps);
	if (ps.p < ps.end)
		PromRxInvalid(&ps, "Unexpected \")\".");
	if (PromRxTreeSize(root) > RX_MAX_SIZE)
		PromRxInvalid(&ps, "The expression is too large.");
	if (PromRxTreeHeight(root) > RX_MAX_HEIGHT)
		PromRxInvalid(&ps, "The expression nests too deeply.");

	if (ps.untrans_detail != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_REGULAR_EXPRESSION),
				 errmsg("regular expression \"%s\" cannot be translated for PostgreSQL",
						ps.patstr),
				 errdetail_internal("%s", ps.untrans_detail),
				 errhint("%s", ps.untrans_hint)));

	re->matches_empty = PromRxMatchesEmpty(root);
	PromRxFindLiteralSet(root, re, resultcxt);
	PromRxFindPrefix(root, re, resultcxt);
	root = PromRxSimplify(root);
	PromRxFindLike(root, re, resultcxt);

	initStringInfo(&buf);
	appendStringInfoString(&buf, "^(?:");
	PromRxEmitNode(&buf, root, PREC_ALT);
	appendStringInfoString(&buf, ")$");

	MemoryContextSwitchTo(oldcxt);
	re->anchored = cstring_to_text_with_len(buf.data, buf.len);
	MemoryContextDelete(workcxt);
	return re;
}

/*
 * Does the value (not NUL-terminated) match, with Prometheus's anchoring?
 */
bool
PromRegexMatch(const PromRegex *re, const char *value, int len)
{
	if (re->is_literal_set)
	{
		int			i;

		for (i = 0; i < re->nliterals; i++)
			if (re->literal_lens[i] == len &&
				memcmp(re->literals[i], value, len) == 0)
				return true;
		return false;
	}
	if (len == 0)
		return re->matches_empty;
	return RE_compile_and_execute(re->anchored, unconstify(char *, value),
								  len, REG_ADVANCED, C_COLLATION_OID,
								  0, NULL);
}

/*
 * The least string greater than every string that begins with the regex's
 * literal prefix (bytewise, as under the "C" collation): the prefix with
 * its last character replaced by the next code point (UTF-8 orders like
 * code points), or, for U+10FFFF, the same for the prefix without it; NULL
 * when there is none.
 */
text *
PromRegexPrefixUpperBound(const PromRegex *re)
{
	int			len = re->prefix_len;

	while (len > 0)
	{
		int			start = len - 1;
		pg_wchar	c;
		unsigned char utf8[8];

		while (start > 0 && (re->prefix[start] & 0xC0) == 0x80)
			start--;
		c = utf8_to_unicode((const unsigned char *) re->prefix + start) + 1;
		if (c >= 0xD800 && c <= 0xDFFF)
			c = 0xE000;
		if (c <= 0x10FFFF)
		{
			StringInfoData buf;

			initStringInfo(&buf);
			appendBinaryStringInfo(&buf, re->prefix, start);
			memset(utf8, 0, sizeof(utf8));
			unicode_to_utf8(c, utf8);
			appendStringInfoString(&buf, (char *) utf8);
			return cstring_to_text_with_len(buf.data, buf.len);
		}
		len = start;
	}
	return NULL;
}

PG_FUNCTION_INFO_V1(prom_regex_translate);
PG_FUNCTION_INFO_V1(prom_regex_match);

/*
 * prom_regex_translate(pattern text) returns text
 *
 * The ARE promread evaluates for a Prometheus regex matcher.
 */
Datum
prom_regex_translate(PG_FUNCTION_ARGS)
{
	text	   *pattern = PG_GETARG_TEXT_PP(0);
	PromRegex  *re;

	re = PromRegexCompile(VARDATA_ANY(pattern), VARSIZE_ANY_EXHDR(pattern));
	PG_RETURN_TEXT_P(re->anchored);
}

/*
 * A compiled pattern kept between calls of prom_regex_match, with the last
 * value it decided: rows of one series come together, so a shard that
 * evaluates the matcher row by row runs the regex once a run of rows.  It
 * lives in a memory context of its own, deleted when the pattern changes.
 */
typedef struct CachedRegex
{
	MemoryContext context;		/* holds all of this */
	text	   *pattern;
	PromRegex  *regex;
	char	   *last_value;		/* NULL before the first value */
	int			last_len;
	int			capacity;		/* of last_value */
	bool		last_verdict;
} CachedRegex;

/*
 * prom_regex_match(pattern text, value text) returns boolean
 *
 * Does a label value match a Prometheus regex matcher value, as promread
 * decides it (anchored; by its literals when it is a literal set)?  The
 * last pattern's translation, and its verdict on the last value, are kept
 * for the next call.
 */
Datum
prom_regex_match(PG_FUNCTION_ARGS)
{
	text	   *pattern = PG_GETARG_TEXT_PP(0);
	text	   *value = PG_GETARG_TEXT_PP(1);
	const char *bytes = VARDATA_ANY(value);
	int			len = VARSIZE_ANY_EXHDR(value);
	CachedRegex *cached = fcinfo->flinfo->fn_extra;

	if (cached == NULL || VARSIZE_ANY_EXHDR(cached->pattern) != VARSIZE_ANY_EXHDR(pattern) ||
		memcmp(VARDATA_ANY(cached->pattern), VARDATA_ANY(pattern),
			   VARSIZE_ANY_EXHDR(pattern)) != 0)
	{
		MemoryContext context;
		MemoryContext oldcxt;

		if (cached != NULL)
		{
			fcinfo->flinfo->fn_extra = NULL;
			MemoryContextDelete(cached->context);
		}
		context = AllocSetContextCreate(fcinfo->flinfo->fn_mcxt,
										"prom_regex_match pattern",
										ALLOCSET_DEFAULT_SIZES);
		oldcxt = MemoryContextSwitchTo(context);
		cached = palloc0(sizeof(CachedRegex));
		cached->context = context;
		cached->regex = PromRegexCompile(VARDATA_ANY(pattern),
										 VARSIZE_ANY_EXHDR(pattern));
		cached->pattern = (text *) pg_detoast_datum_copy((struct varlena *) pattern);
		fcinfo->flinfo->fn_extra = cached;
		MemoryContextSwitchTo(oldcxt);
	}
	if (cached->last_value != NULL && cached->last_len == len &&
		memcmp(cached->last_value, bytes, len) == 0)
		PG_RETURN_BOOL(cached->last_verdict);

	cached->last_verdict = PromRegexMatch(cached->regex, bytes, len);
	if (cached->last_value == NULL || len > cached->capacity)
	{
		if (cached->last_value != NULL)
			pfree(cached->last_value);
		cached->capacity = Max(len, 64);
		cached->last_value = MemoryContextAlloc(cached->context,
												cached->capacity);
	}
	memcpy(cached->last_value, bytes, len);
	cached->last_len = len;
	PG_RETURN_BOOL(cached->last_verdict);
}

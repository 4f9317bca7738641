/*-------------------------------------------------------------------------
 *
 * matcher.c
 *	  Prometheus label matchers and the rules for names.
 *
 * A matcher compares a label's value with its own: =, !=, =~ or !~, where
 * a missing label has the value "" and regexes are fully anchored RE2
 * (prom_regex.c).  Matchers are evaluated here on single strings (metric
 * names, enum labels, the empty string); scan.c turns them into SQL
 * predicates for the rows.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "mb/pg_wchar.h"
#include "promread.h"

/* The PromQL spelling of a matcher type. */
const char *
PromMatchTypeOperator(PromMatchType type)
{
	switch (type)
	{
		case PROM_MATCH_EQ:
			return "=";
		case PROM_MATCH_NEQ:
			return "!=";
		case PROM_MATCH_RE:
			return "=~";
		case PROM_MATCH_NRE:
			return "!~";
	}
	return "?";
}

/*
 * Is the string valid UTF-8?  Unlike PostgreSQL's own check this accepts
 * NUL, which is valid UTF-8 and may appear in Prometheus strings.  An ASCII
 * string of 8 bytes or more, what labels mostly are, is recognized by its
 * 8-byte words, the last one ending at its end (a label value is checked
 * once, when a series is the first to have it); other strings are checked
 * character by character.
 */
bool
PromIsValidUtf8(const char *s, int len)
{
	const unsigned char *p = (const unsigned char *) s;
	const unsigned char *end = p + len;

	if (len >= 8)
	{
		uint64		bits = 0;
		uint64		word;
		int			i;

		for (i = 0; i + 8 < len; i += 8)
		{
			memcpy(&word, s + i, 8);
			bits |= word;
		}
		memcpy(&word, s + len - 8, 8);
		if (((bits | word) & UINT64CONST(0x8080808080808080)) == 0)
			return true;
	}
	while (p < end)
	{
		int			charlen;

		if (*p < 0x80)
		{
			p++;
			continue;
		}
		charlen = pg_utf_mblen(p);
		if (charlen > end - p || !pg_utf8_islegal(p, charlen))
			return false;
		p += charlen;
	}
	return true;
}

/* Check that matcher text is valid UTF-8, as Prometheus requires. */
static void
check_utf8(const char *what, const char *s, int len)
{
	if (!PromIsValidUtf8(s, len))
		ereport(ERROR,
				(errcode(ERRCODE_CHARACTER_NOT_IN_REPERTOIRE),
				 errmsg("label matcher %s is not valid UTF-8", what)));
}

/*
 * Fill in a matcher: copy its name and value, compile its regex and note
 * whether a missing label matches.  The value need not be NUL-terminated.
 */
void
PromMatcherInit(PromMatcher *matcher, PromMatchType type, const char *name,
				const char *value, int value_len)
{
	check_utf8("name", name, strlen(name));
	check_utf8("value", value, value_len);

	matcher->type = type;
	matcher->name = pstrdup(name);
	matcher->value = palloc(value_len + 1);
	memcpy(matcher->value, value, value_len);
	matcher->value[value_len] = '\0';
	matcher->value_len = value_len;
	matcher->regex = NULL;

	switch (type)
	{
		case PROM_MATCH_EQ:
			matcher->matches_empty = (value_len == 0);
			break;
		case PROM_MATCH_NEQ:
			matcher->matches_empty = (value_len != 0);
			break;
		case PROM_MATCH_RE:
		case PROM_MATCH_NRE:
			matcher->regex = PromRegexCompile(value, value_len);
			matcher->matches_empty = matcher->regex->matches_empty;
			if (type == PROM_MATCH_NRE)
				matcher->matches_empty = !matcher->matches_empty;
			break;
		default:
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("unrecognized label matcher type %d", (int) type)));
	}
}

/* Does a label value (not NUL-terminated; "" when missing) match? */
bool
PromMatcherMatches(const PromMatcher *matcher, const char *value, int len)
{
	bool		equal;

	switch (matcher->type)
	{
		case PROM_MATCH_EQ:
		case PROM_MATCH_NEQ:
			equal = (len == matcher->value_len &&
					 memcmp(value, matcher->value, len) == 0);
			return (matcher->type == PROM_MATCH_EQ) == equal;
		case PROM_MATCH_RE:
			return PromRegexMatch(matcher->regex, value, len);
		case PROM_MATCH_NRE:
			return !PromRegexMatch(matcher->regex, value, len);
	}
	return false;
}

/* Is the string [a-zA-Z_][a-zA-Z0-9_]*, with ':' too when allowed? */
static bool
name_is_valid(const char *name, int len, bool colon_allowed)
{
	int			i;

	if (len == 0 || (name[0] >= '0' && name[0] <= '9'))
		return false;
	for (i = 0; i < len; i++)
	{
		char		c = name[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
			  (c >= '0' && c <= '9') || c == '_' || (c == ':' && colon_allowed)))
			return false;
	}
	return true;
}

/* Is the string a valid label name, [a-zA-Z_][a-zA-Z0-9_]*? */
bool
PromIsValidLabelName(const char *name, int len)
{
	return name_is_valid(name, len, false);
}

/* Is the string a valid metric name, [a-zA-Z_:][a-zA-Z0-9_:]*? */
bool
PromIsValidMetricName(const char *name, int len)
{
	return name_is_valid(name, len, true);
}

/*-------------------------------------------------------------------------
 *
 * selector.c
 *	  Parser of PromQL series selectors: metric{label="value", ...}.
 *
 * The grammar is PromQL's vector selector without ranges or modifiers:
 * an optional metric name, then optional braces holding matchers separated
 * by commas (a trailing comma allowed).  Strings are PromQL's: double or
 * single quotes with Go escapes, or backquotes with none.  As in PromQL, a
 * metric name may not also be given by a __name__ matcher, and at least one
 * matcher must not match the empty string.
 *
 * A selector comes from any role, as a request does from the network, and
 * its regex matchers keep literal sets of up to megabytes: it holds at most
 * PROM_MAX_MATCHERS matchers, as a remote-read query does, and is parsed
 * within a decoding budget, so that what it keeps counts toward
 * promread.max_memory while it lives (53200 past it).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "lib/stringinfo.h"
#include "mb/pg_wchar.h"
#include "promread.h"
#include "protocol/wire.h"
#include "regex/prom_regex.h"

/* Parser state: the whole selector and the current position. */
typedef struct SelectorParser
{
	const char *input;
	const char *p;
} SelectorParser;

/* Report a syntax error at the current position. */
static void pg_attribute_noreturn()
syntax_error(SelectorParser *parser, const char *what)
{
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("invalid series selector \"%s\"", parser->input),
			 errdetail("%s at character %d.", what,
					   (int) (parser->p - parser->input) + 1),
			 errhint("A series selector looks like metric_name{label=\"value\", other=~\"regex\"}.")));
}

/* Skip white space. */
static void
skip_space(SelectorParser *parser)
{
	while (*parser->p == ' ' || *parser->p == '\t' ||
		   *parser->p == '\n' || *parser->p == '\r')
		parser->p++;
}

/* Read an identifier; ':' is allowed in metric names only. */
static char *
parse_identifier(SelectorParser *parser, bool colon_allowed)
{
	const char *start = parser->p;

	while ((*parser->p >= 'a' && *parser->p <= 'z') ||
		   (*parser->p >= 'A' && *parser->p <= 'Z') ||
		   (*parser->p >= '0' && *parser->p <= '9') ||
		   *parser->p == '_' || (*parser->p == ':' && colon_allowed))
	{
		if (parser->p == start && *parser->p >= '0' && *parser->p <= '9')
			break;
		parser->p++;
	}
	if (parser->p == start)
		syntax_error(parser, colon_allowed ? "Expected a metric name" :
					 "Expected a label name");
	return pnstrdup(start, parser->p - start);
}

/* Read a numeric escape of n digits in the given base, after its letter. */
static uint32
parse_numeric_escape(SelectorParser *parser, int ndigits, int base,
					 uint32 max)
{
	uint32		value = 0;
	int			i;

	for (i = 0; i < ndigits; i++)
	{
		int			digit = PromHexDigit((unsigned char) *parser->p);

		if (digit < 0 || digit >= base)
			syntax_error(parser, "Invalid character in escape sequence");
		value = value * base + digit;
		parser->p++;
	}
	if (value > max || (value >= 0xD800 && value < 0xE000))
		syntax_error(parser, "Escape sequence is an invalid Unicode code point");
	return value;
}

/* Read one escape sequence of a quoted string into buf. */
static void
parse_escape(SelectorParser *parser, char quote, StringInfo buf)
{
	char		c = *parser->p++;
	unsigned char utf8[8];

	switch (c)
	{
		case 'a':
			appendStringInfoChar(buf, '\a');
			return;
		case 'b':
			appendStringInfoChar(buf, '\b');
			return;
		case 'f':
			appendStringInfoChar(buf, '\f');
			return;
		case 'n':
			appendStringInfoChar(buf, '\n');
			return;
		case 'r':
			appendStringInfoChar(buf, '\r');
			return;
		case 't':
			appendStringInfoChar(buf, '\t');
			return;
		case 'v':
			appendStringInfoChar(buf, '\v');
			return;
		case '\\':
			appendStringInfoChar(buf, '\\');
			return;
		case '0':
		case '1':
		case '2':
		case '3':
		case '4':
		case '5':
		case '6':
		case '7':
			parser->p--;
			appendStringInfoChar(buf, (char) parse_numeric_escape(parser, 3, 8, 255));
			return;
		case 'x':
			appendStringInfoChar(buf, (char) parse_numeric_escape(parser, 2, 16, 255));
			return;
		case 'u':
		case 'U':
			unicode_to_utf8(parse_numeric_escape(parser, c == 'u' ? 4 : 8, 16,
												 0x10FFFF), utf8);
			appendBinaryStringInfo(buf, (char *) utf8, pg_utf_mblen(utf8));
			return;
		case '\0':
			parser->p--;
			syntax_error(parser, "Escape sequence not terminated");
		default:
			if (c == quote)
			{
				appendStringInfoChar(buf, c);
				return;
			}
			parser->p--;
			syntax_error(parser, "Unrecognized escape sequence");
	}
}

/* Read a quoted string; its value may contain any byte. */
static void
parse_string(SelectorParser *parser, StringInfo buf)
{
	char		quote = *parser->p;

	if (quote != '"' && quote != '\'' && quote != '`')
		syntax_error(parser, "Expected a quoted string");
	parser->p++;
	for (;;)
	{
		char		c = *parser->p;

		if (c == '\0' || (c == '\n' && quote != '`'))
			syntax_error(parser, "Unterminated quoted string");
		parser->p++;
		if (c == quote)
			return;
		if (c == '\\' && quote != '`')
			parse_escape(parser, quote, buf);
		else
			appendStringInfoChar(buf, c);
	}
}

/* Read a matcher operator. */
static PromMatchType
parse_operator(SelectorParser *parser)
{
	if (parser->p[0] == '=' && parser->p[1] == '~')
	{
		parser->p += 2;
		return PROM_MATCH_RE;
	}
	if (parser->p[0] == '!' && parser->p[1] == '~')
	{
		parser->p += 2;
		return PROM_MATCH_NRE;
	}
	if (parser->p[0] == '!' && parser->p[1] == '=')
	{
		parser->p += 2;
		return PROM_MATCH_NEQ;
	}
	if (parser->p[0] == '=' && parser->p[1] != '=')
	{
		parser->p += 1;
		return PROM_MATCH_EQ;
	}
	syntax_error(parser, "Expected one of =, !=, =~, !~");
}

/*
 * Parse a series selector into query->matchers, allocated in a child of
 * CurrentMemoryContext charged to promread.max_memory while it lives.  The
 * metric name, when given, becomes the first matcher (__name__ = name).
 */
void
PromParseSelector(const char *selector, PromQuery *query)
{
	SelectorParser parser = {selector, selector};
	PromDecodeBudget *budget = PromDecodeBudgetCreate("series selector");
	MemoryContext oldcxt = MemoryContextSwitchTo(budget->context);
	List	   *matchers = NIL;
	bool		has_name = false;
	bool		has_nonempty = false;
	ListCell   *lc;
	int			i;

	skip_space(&parser);
	if (*parser.p != '{')
	{
		char	   *metric = parse_identifier(&parser, true);
		PromMatcher *m = palloc(sizeof(PromMatcher));

		PromMatcherInit(m, PROM_MATCH_EQ, "__name__", metric, strlen(metric));
		matchers = lappend(matchers, m);
		has_name = true;
		skip_space(&parser);
	}
	if (*parser.p == '{')
	{
		parser.p++;
		skip_space(&parser);
		while (*parser.p != '}')
		{
			char	   *name;
			PromMatchType type;
			StringInfoData value;
			PromMatcher *m;

			if (list_length(matchers) == PROM_MAX_MATCHERS)
				ereport(ERROR,
						(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
						 errmsg("series selector has too many matchers"),
						 errdetail("The limit is %d matchers, the metric name included.",
								   PROM_MAX_MATCHERS)));
			name = parse_identifier(&parser, false);
			m = palloc(sizeof(PromMatcher));
			skip_space(&parser);
			type = parse_operator(&parser);
			skip_space(&parser);
			initStringInfo(&value);
			parse_string(&parser, &value);
			if (has_name && strcmp(name, "__name__") == 0)
				syntax_error(&parser, "The metric name must not be set twice");
			PromMatcherInit(m, type, name, value.data, value.len);
			pfree(value.data);
			PromDecodeBudgetCheck(budget, 0);
			matchers = lappend(matchers, m);

			skip_space(&parser);
			if (*parser.p == ',')
			{
				parser.p++;
				skip_space(&parser);
			}
			else if (*parser.p != '}')
				syntax_error(&parser, "Expected \",\" or \"}\"");
		}
		parser.p++;
		skip_space(&parser);
	}
	if (*parser.p != '\0')
		syntax_error(&parser, "Unexpected character");

	foreach(lc, matchers)
		if (!((PromMatcher *) lfirst(lc))->matches_empty)
			has_nonempty = true;
	if (!has_nonempty)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("invalid series selector \"%s\"", selector),
				 errdetail("A vector selector must contain at least one matcher that does not match the empty string."),
				 errhint("Add the metric name or a matcher such as label=\"value\" or label=~\".+\".")));

	query->nmatchers = list_length(matchers);
	query->matchers = palloc(sizeof(PromMatcher) * query->nmatchers);
	i = 0;
	foreach(lc, matchers)
		query->matchers[i++] = *(PromMatcher *) lfirst(lc);
	PromDecodeBudgetHold(budget);
	MemoryContextSwitchTo(oldcxt);
}

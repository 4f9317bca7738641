/*-------------------------------------------------------------------------
 *
 * regex_emit.c
 *	  Simplifying a parsed regex and writing it as a PostgreSQL ARE that
 *	  depends on no locale (prom_regex.c, steps 3 and 4).
 *
 * Impossible characters (NUL, surrogates) are removed, repeats bounded by
 * ARE's limit of 255 rewritten, and classes written as ranges of code
 * points; the precedence argument says when a group is needed.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "miscadmin.h"
#include "regex_internal.h"

/* ---------------------------------------------------------------------
 * Simplification
 * ---------------------------------------------------------------------
 */

/* Does the node only ever match empty strings (assertions)? */
static bool
zero_width(RxNode *n)
{
	int			i;

	switch (n->op)
	{
		case RX_CHAR:
		case RX_CLASS:
		case RX_ANYCHAR:
			return false;
		default:
			for (i = 0; i < n->nsubs; i++)
				if (!zero_width(n->subs[i]))
					return false;
			return true;
	}
}

/*
 * Make the repetition x{min,max} of a simplified, non-empty-width node.
 * A repetition of x*, x+ or x? collapses into one exact repetition of x:
 * (x*){a,b} is x*, (x+){a,b} is x{a,}, (x?){a,b} is x{0,b} (b >= 1 here).
 * Besides being shorter, this keeps PostgreSQL from building huge automata
 * for patterns like (.*){1000}.
 */
static RxNode *
rx_simplify_repeat(RxNode *s, int min, int max)
{
	RxNode	   *r;

	if (s->op == RX_STAR || s->op == RX_PLUS || s->op == RX_QUEST ||
		s->op == RX_REPEAT)
	{
		if (s->min == 0 && s->max == -1)
			return s;
		if (s->min == 1 && s->max == -1)
			return rx_simplify_repeat(s->subs[0], min, -1);
		if (s->min == 0 && s->max == 1)
			return rx_simplify_repeat(s->subs[0], 0, max);
	}
	r = PromRxNodeNew1(RX_REPEAT, s);
	r->min = min;
	r->max = max;
	return r;
}

/*
 * Rewrite the tree into an equivalent one that is easy to emit: captures
 * dropped, characters that cannot occur in text turned into RX_NOMATCH and
 * that propagated, repetitions of empty-width nodes reduced, classes of
 * everything turned into RX_ANYCHAR.
 */
RxNode *
PromRxSimplify(RxNode *n)
{
	RxList		subs = {0, 0, NULL};
	RxNode	   *s;
	int			i;

	check_stack_depth();
	CHECK_FOR_INTERRUPTS();
	switch (n->op)
	{
		case RX_CHAR:
			return PromRxImpossibleChar(n->ch) ? PromRxNodeNew(RX_NOMATCH) : n;
		case RX_CLASS:
			{
				RxClass		cls = {0, 0, NULL};

				for (i = 0; i < n->nranges; i++)
				{
					int32		lo = n->ranges[2 * i];
					int32		hi = n->ranges[2 * i + 1];

					if (lo == 0)
						lo = 1;
					if (lo <= 0xDFFF && hi >= 0xD800)
					{
						PromRxClassAdd(&cls, lo, 0xD7FF);
						PromRxClassAdd(&cls, 0xE000, hi);
					}
					else
						PromRxClassAdd(&cls, lo, hi);
				}
				if (cls.n == 0)
					return PromRxNodeNew(RX_NOMATCH);
				if (cls.n == 2 && cls.r[0] == 1 && cls.r[1] == 0xD7FF &&
					cls.r[2] == 0xE000 && cls.r[3] == RX_MAX_RUNE)
					return PromRxNodeNew(RX_ANYCHAR);
				if (cls.n == 1 && cls.r[0] == cls.r[1])
				{
					s = PromRxNodeNew(RX_CHAR);
					s->ch = cls.r[0];
					return s;
				}
				return PromRxNodeClass(&cls);
			}
		case RX_CAPTURE:
			return PromRxSimplify(n->subs[0]);
		case RX_CONCAT:
			for (i = 0; i < n->nsubs; i++)
			{
				s = PromRxSimplify(n->subs[i]);
				if (s->op == RX_NOMATCH)
					return s;
				if (s->op != RX_EMPTY)
					PromRxListPush(&subs, s);
			}
			return PromRxNodeCollect(RX_CONCAT, &subs);
		case RX_ALT:
			for (i = 0; i < n->nsubs; i++)
			{
				s = PromRxSimplify(n->subs[i]);
				if (s->op != RX_NOMATCH)
					PromRxListPush(&subs, s);
			}
			return PromRxNodeCollect(RX_ALT, &subs);
		case RX_STAR:
		case RX_PLUS:
		case RX_QUEST:
		case RX_REPEAT:
			if (n->max == 0)
				return PromRxNodeNew(RX_EMPTY);
			s = PromRxSimplify(n->subs[0]);
			if (s->op == RX_NOMATCH || zero_width(s))
			{
				/* x{0,...} is empty; x{n,...} is x once (or nothing) */
				if (n->min == 0)
					return PromRxNodeNew(RX_EMPTY);
				return s;
			}
			if (n->min == 1 && n->max == 1)
				return s;
			return rx_simplify_repeat(s, n->min, n->max);
		default:
			return n;
	}
}


/* ---------------------------------------------------------------------
 * ARE emission
 * ---------------------------------------------------------------------
 */

/* Append a character: letters and digits as such, the rest as \u or \U. */
static void
emit_char(StringInfo buf, int32 c)
{
	if (PromRxIsAlnum(c))
		appendStringInfoChar(buf, (char) c);
	else if (c <= 0xFFFF)
		appendStringInfo(buf, "\\u%04x", (unsigned int) c);
	else
		appendStringInfo(buf, "\\U%08x", (unsigned int) c);
}

/* Append ranges inside a bracket expression. */
static void
emit_ranges(StringInfo buf, const int32 *r, int n)
{
	int			i;

	for (i = 0; i < n; i++)
	{
		emit_char(buf, r[2 * i]);
		if (r[2 * i + 1] == r[2 * i])
			continue;
		if (r[2 * i + 1] > r[2 * i] + 1)
			appendStringInfoChar(buf, '-');
		emit_char(buf, r[2 * i + 1]);
	}
}

/*
 * Append a class (clean, without NUL and surrogates, neither empty nor
 * everything) as a bracket expression: its ranges, or "^" and the ranges of
 * its complement among the possible characters, whichever is shorter.
 */
static void
emit_class(StringInfo buf, RxNode *n)
{
	RxClass		comp = {0, 0, NULL};
	int32		next = 1;
	int			i;

	for (i = 0; i < n->nranges; i++)
	{
		int32		lo = n->ranges[2 * i];

		if (next < 0xD800 && lo > 0xD800)
		{
			PromRxClassAdd(&comp, next, 0xD7FF);
			next = 0xE000;
		}
		if (next == 0xD800)
			next = 0xE000;
		PromRxClassAdd(&comp, next, lo - 1);
		next = n->ranges[2 * i + 1] + 1;
	}
	if (next < 0xD800)
	{
		PromRxClassAdd(&comp, next, 0xD7FF);
		next = 0xE000;
	}
	if (next == 0xD800)
		next = 0xE000;
	PromRxClassAdd(&comp, next, RX_MAX_RUNE);

	appendStringInfoChar(buf, '[');
	if (comp.n < n->nranges)
	{
		appendStringInfoChar(buf, '^');
		emit_ranges(buf, comp.r, comp.n);
	}
	else
		emit_ranges(buf, n->ranges, n->nranges);
	appendStringInfoChar(buf, ']');
}

/* Append one quantifier {min,max} in ARE syntax (counts within DUPMAX). */
static void
emit_quantifier(StringInfo buf, int min, int max)
{
	if (min == 0 && max == -1)
		appendStringInfoChar(buf, '*');
	else if (min == 1 && max == -1)
		appendStringInfoChar(buf, '+');
	else if (min == 0 && max == 1)
		appendStringInfoChar(buf, '?');
	else if (min == 1 && max == 1)
		return;
	else if (min == max)
		appendStringInfo(buf, "{%d}", min);
	else if (max == -1)
		appendStringInfo(buf, "{%d,}", min);
	else
		appendStringInfo(buf, "{%d,%d}", min, max);
}


/*
 * Append a repetition, split into several quantified copies of its operand
 * when a count exceeds ARE's limit: x{n,m} is x{a1,b1}x{a2,b2}... with the
 * a's adding up to n and the b's to m, each at most DUPMAX.
 */
static void
emit_repeat(StringInfo buf, RxNode *n, int prec)
{
	StringInfoData sub;
	int			min = n->min;
	int			max = n->max;

	initStringInfo(&sub);
	PromRxEmitNode(&sub, n->subs[0], PREC_ATOM);

	/* a quantified atom is not an atom */
	if (prec == PREC_ATOM)
		appendStringInfoString(buf, "(?:");
	for (;;)
	{
		int			a = Min(min, ARE_DUPMAX);
		int			b;

		CHECK_FOR_INTERRUPTS();
		if (max == -1)
			b = (min == a) ? -1 : a;	/* the last piece is x{a,} */
		else
			b = Min(a + (max - min), ARE_DUPMAX);
		appendBinaryStringInfo(buf, sub.data, sub.len);
		emit_quantifier(buf, a, b);
		min -= a;
		if (b == -1)
			break;
		if (max != -1)
		{
			max -= b;
			if (max == 0)
				break;
		}
	}
	if (prec == PREC_ATOM)
		appendStringInfoChar(buf, ')');
	pfree(sub.data);
}

/*
 * Append the ARE for a simplified node.  prec tells what the context
 * accepts: PREC_ATOM wraps anything but an atom in (?:).
 */
void
PromRxEmitNode(StringInfo buf, RxNode *n, int prec)
{
	int			i;

	check_stack_depth();
	CHECK_FOR_INTERRUPTS();
	switch (n->op)
	{
		case RX_NOMATCH:
			/* a constraint that always fails */
			appendStringInfoString(buf, "(?!)");
			break;
		case RX_EMPTY:
			if (prec == PREC_ATOM)
				appendStringInfoString(buf, "(?:)");
			break;
		case RX_CHAR:
			emit_char(buf, n->ch);
			break;
		case RX_CLASS:
			emit_class(buf, n);
			break;
		case RX_ANYCHAR:
			appendStringInfoChar(buf, '.');
			break;
		case RX_BOT:
			appendStringInfoChar(buf, '^');
			break;
		case RX_EOT:
			appendStringInfoChar(buf, '$');
			break;
		case RX_BOL:
			appendStringInfoString(buf, "(?:^|(?<=\\u000a))");
			break;
		case RX_EOL:
			appendStringInfoString(buf, "(?:$|(?=\\u000a))");
			break;
		case RX_WORDB:
			appendStringInfoString(buf,
								   "(?:(?<=" ARE_WORD ")(?!" ARE_WORD ")"
								   "|(?<!" ARE_WORD ")(?=" ARE_WORD "))");
			break;
		case RX_NWORDB:
			appendStringInfoString(buf,
								   "(?:(?<=" ARE_WORD ")(?=" ARE_WORD ")"
								   "|(?<!" ARE_WORD ")(?!" ARE_WORD "))");
			break;
		case RX_CAPTURE:
			PromRxEmitNode(buf, n->subs[0], prec);
			break;
		case RX_CONCAT:
			if (prec == PREC_ATOM)
				appendStringInfoString(buf, "(?:");
			for (i = 0; i < n->nsubs; i++)
				PromRxEmitNode(buf, n->subs[i], PREC_CONCAT);
			if (prec == PREC_ATOM)
				appendStringInfoChar(buf, ')');
			break;
		case RX_ALT:
			if (prec != PREC_ALT)
				appendStringInfoString(buf, "(?:");
			for (i = 0; i < n->nsubs; i++)
			{
				if (i > 0)
					appendStringInfoChar(buf, '|');
				PromRxEmitNode(buf, n->subs[i], PREC_ALT);
			}
			if (prec != PREC_ALT)
				appendStringInfoChar(buf, ')');
			break;
		case RX_STAR:
		case RX_PLUS:
		case RX_QUEST:
		case RX_REPEAT:
			emit_repeat(buf, n, prec);
			break;
	}
}

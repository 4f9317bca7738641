/*-------------------------------------------------------------------------
 *
 * regex_chars.c
 *	  The regex translator's ground: errors, UTF-8 decoding, case folding,
 *	  sets of code points, and the nodes of the parse tree.
 *
 * Errors carry the pattern and where in it the problem is.  A set of code
 * points is a sorted list of disjoint ranges; folding adds each range's
 * case variants as Go's simple folding does (Kelvin and long s included).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "regex/regex.h"
#include "regex_internal.h"

/* ---------------------------------------------------------------------
 * Errors
 * ---------------------------------------------------------------------
 */

/* Report a pattern that Go rejects. */
void
PromRxInvalid(RxParser *ps, const char *detail)
{
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_REGULAR_EXPRESSION),
			 errmsg("invalid regular expression \"%s\"", ps->patstr),
			 errdetail_internal("%s", detail)));
}

/* Report a pattern that Go rejects, quoting the offending text [from, to). */
void
PromRxInvalidAt(RxParser *ps, const char *what, const char *from, const char *to)
{
	PromRxInvalid(ps, psprintf("%s \"%.*s\".", what, (int) (to - from), from));
}

/*
 * Note a construct without exact ARE equivalent.  Only the first one is kept;
 * it is reported once the whole pattern has been parsed.
 */
void
PromRxUntranslatable(RxParser *ps, char *detail, const char *hint)
{
	if (ps->untrans_detail == NULL)
	{
		ps->untrans_detail = detail;
		ps->untrans_hint = pstrdup(hint);
	}
}


/* ---------------------------------------------------------------------
 * UTF-8 and character helpers
 * ---------------------------------------------------------------------
 */

/*
 * Decode one UTF-8 character at s (before end) into *r.  Returns its length
 * in bytes, 0 at the end of the input, or -1 for invalid UTF-8 (overlong
 * forms, surrogates, code points above U+10FFFF, truncation), as Go's
 * utf8.DecodeRuneInString would flag it.
 */
int
PromRxDecode(const char *s, const char *end, int32 *r)
{
	const unsigned char *u = (const unsigned char *) s;
	int			len;
	int32		c;
	int32		minval;
	int			i;

	if (s >= end)
		return 0;
	if (u[0] < 0x80)
	{
		*r = u[0];
		return 1;
	}
	if (u[0] >= 0xC2 && u[0] <= 0xDF)
	{
		len = 2;
		c = u[0] & 0x1F;
		minval = 0x80;
	}
	else if (u[0] >= 0xE0 && u[0] <= 0xEF)
	{
		len = 3;
		c = u[0] & 0x0F;
		minval = 0x800;
	}
	else if (u[0] >= 0xF0 && u[0] <= 0xF4)
	{
		len = 4;
		c = u[0] & 0x07;
		minval = 0x10000;
	}
	else
		return -1;
	if (end - s < len)
		return -1;
	for (i = 1; i < len; i++)
	{
		if ((u[i] & 0xC0) != 0x80)
			return -1;
		c = (c << 6) | (u[i] & 0x3F);
	}
	if (c < minval || c > RX_MAX_RUNE || (c >= 0xD800 && c <= 0xDFFF))
		return -1;
	*r = c;
	return len;
}

/* Decode the character at the cursor and advance; false at the end. */
bool
PromRxNext(RxParser *ps, int32 *r)
{
	int			n = PromRxDecode(ps->p, ps->end, r);

	if (n < 0)
		PromRxInvalid(ps, "The pattern is not valid UTF-8.");
	if (n == 0)
		return false;
	ps->p += n;
	return true;
}

/* Fail unless [s, end) is valid UTF-8. */
void
PromRxCheckUtf8(RxParser *ps, const char *s, const char *end)
{
	int32		r;
	int			n;

	while ((n = PromRxDecode(s, end, &r)) > 0)
		s += n;
	if (n < 0)
		PromRxInvalid(ps, "The pattern is not valid UTF-8.");
}

/* ASCII letter or digit, as Go's isalnum. */
bool
PromRxIsAlnum(int32 c)
{
	return (c >= '0' && c <= '9') || (c >= 'A' && c <= 'Z') ||
		(c >= 'a' && c <= 'z');
}

/*
 * The code points Go's case folding (unicode.SimpleFold orbits) makes
 * equivalent to c, for c ASCII or one of the two non-ASCII characters that
 * fold with ASCII letters.  Returns the count, written to out[0..2].
 */
static int
rx_fold_orbit(int32 c, int32 *out)
{
	int32		u;

	if (c == RX_KELVIN)
		c = 'k';
	else if (c == RX_LONG_S)
		c = 's';
	if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z')))
	{
		out[0] = c;
		return 1;
	}
	u = c & ~0x20;
	out[0] = u;
	out[1] = u | 0x20;
	if (u == 'K')
	{
		out[2] = RX_KELVIN;
		return 3;
	}
	if (u == 'S')
	{
		out[2] = RX_LONG_S;
		return 3;
	}
	return 2;
}

/* Does code point c have case variants, as far as Go is concerned? */
static bool
rx_has_fold(int32 c)
{
	if (c < RX_MIN_FOLD || c > RX_MAX_FOLD)
		return false;
	if (c < 0x80)
		return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z');
	return true;				/* unknown without tables: assume so */
}

/* Can this code point never occur in a PostgreSQL text value? */
bool
PromRxImpossibleChar(int32 c)
{
	return c == 0 || (c >= 0xD800 && c <= 0xDFFF);
}

/* Describe a code point for a message: "é" (U+00E9). */
static char *
rx_describe_char(int32 c)
{
	unsigned char buf[8];

	if (c < 0x20 || (c >= 0x7F && c < 0xA0) || PromRxImpossibleChar(c))
		return psprintf("U+%04X", (unsigned int) c);
	memset(buf, 0, sizeof(buf));
	unicode_to_utf8((pg_wchar) c, buf);
	return psprintf("\"%s\" (U+%04X)", (char *) buf, (unsigned int) c);
}


/* ---------------------------------------------------------------------
 * Code-point sets
 * ---------------------------------------------------------------------
 */

/* Append the range [lo, hi] to a class (not kept sorted). */
void
PromRxClassAdd(RxClass *cls, int32 lo, int32 hi)
{
	if (lo > hi)
		return;
	if (cls->n == cls->cap)
	{
		cls->cap = cls->cap ? cls->cap * 2 : 8;
		if (cls->r)
			cls->r = repalloc(cls->r, sizeof(int32) * 2 * cls->cap);
		else
			cls->r = palloc(sizeof(int32) * 2 * cls->cap);
	}
	cls->r[2 * cls->n] = lo;
	cls->r[2 * cls->n + 1] = hi;
	cls->n++;
}

/* qsort comparator for range pairs: by lo. */
static int
rx_range_cmp(const void *a, const void *b)
{
	int32		la = ((const int32 *) a)[0];
	int32		lb = ((const int32 *) b)[0];

	return (la > lb) - (la < lb);
}

/* Sort the ranges and merge overlapping or adjacent ones. */
void
PromRxClassClean(RxClass *cls)
{
	int			w = 0;
	int			i;

	if (cls->n <= 1)
		return;
	qsort(cls->r, cls->n, sizeof(int32) * 2, rx_range_cmp);
	for (i = 1; i < cls->n; i++)
	{
		int32		lo = cls->r[2 * i];
		int32		hi = cls->r[2 * i + 1];

		if (lo <= cls->r[2 * w + 1] + 1)
		{
			if (hi > cls->r[2 * w + 1])
				cls->r[2 * w + 1] = hi;
		}
		else
		{
			w++;
			cls->r[2 * w] = lo;
			cls->r[2 * w + 1] = hi;
		}
	}
	cls->n = w + 1;
}

/* Replace a clean class by its complement in [0, U+10FFFF]. */
void
PromRxClassNegate(RxClass *cls)
{
	RxClass		out = {0, 0, NULL};
	int32		next = 0;
	int			i;

	for (i = 0; i < cls->n; i++)
	{
		PromRxClassAdd(&out, next, cls->r[2 * i] - 1);
		next = cls->r[2 * i + 1] + 1;
	}
	PromRxClassAdd(&out, next, RX_MAX_RUNE);
	if (cls->r)
		pfree(cls->r);
	*cls = out;
}

/*
 * Append [lo, hi] and all its case variants (Go's appendFoldedRange).  Case
 * variants of non-ASCII characters are unknown to us, except for the two
 * that fold with ASCII letters; other ranges reaching into the folding part
 * of Unicode are noted as untranslatable.
 */
static void
class_add_folded(RxParser *ps, RxClass *cls, int32 lo, int32 hi)
{
	int32		c;

	if ((lo <= RX_MIN_FOLD && hi >= RX_MAX_FOLD) ||
		hi < RX_MIN_FOLD || lo > RX_MAX_FOLD)
	{
		/* Go: folding cannot add anything */
		PromRxClassAdd(cls, lo, hi);
		return;
	}
	if (lo < RX_MIN_FOLD)
	{
		PromRxClassAdd(cls, lo, RX_MIN_FOLD - 1);
		lo = RX_MIN_FOLD;
	}
	if (hi > RX_MAX_FOLD)
	{
		PromRxClassAdd(cls, RX_MAX_FOLD + 1, hi);
		hi = RX_MAX_FOLD;
	}
	PromRxClassAdd(cls, lo, hi);
	if (hi >= 0x80 &&
		!(lo == hi && (lo == RX_KELVIN || lo == RX_LONG_S)))
	{
		int32		bad = Max(lo, 0x80);

		PromRxUntranslatable(ps,
							 psprintf("Case-insensitive matching of non-ASCII characters such as %s needs Unicode case-folding tables, which are not available.",
								   rx_describe_char(bad)),
							 "List the case variants of non-ASCII characters explicitly, as in [\\x{E9}\\x{C9}], and apply (?i) only to the ASCII parts of the pattern.");
		return;
	}
	for (c = lo; c <= hi; c++)
	{
		int32		orb[3];
		int			n = rx_fold_orbit(c, orb);
		int			i;

		for (i = 0; i < n; i++)
			PromRxClassAdd(cls, orb[i], orb[i]);
	}
}

/* Append a range, folded under (?i). */
void
PromRxClassAddRange(RxParser *ps, RxClass *cls, int32 lo, int32 hi)
{
	if (ps->flags & RXF_FOLD)
		class_add_folded(ps, cls, lo, hi);
	else
		PromRxClassAdd(cls, lo, hi);
}

/*
 * Append a named (Perl or POSIX) class, possibly negated.  Under (?i) the
 * class is folded first and negated afterwards, as Go's appendGroup does.
 */
void
PromRxClassAddGroup(RxParser *ps, RxClass *cls, const int32 *ranges, int n,
				bool negate)
{
	RxClass		tmp = {0, 0, NULL};
	int			i;

	for (i = 0; i < n; i++)
		PromRxClassAddRange(ps, &tmp, ranges[2 * i], ranges[2 * i + 1]);
	PromRxClassClean(&tmp);
	if (negate)
		PromRxClassNegate(&tmp);
	for (i = 0; i < tmp.n; i++)
		PromRxClassAdd(cls, tmp.r[2 * i], tmp.r[2 * i + 1]);
}


/* ---------------------------------------------------------------------
 * Parse tree
 * ---------------------------------------------------------------------
 */

/* Make a node. */
RxNode *
PromRxNodeNew(RxOp op)
{
	RxNode	   *n = palloc0(sizeof(RxNode));

	n->op = op;
	return n;
}

/* Make a node with one child. */
RxNode *
PromRxNodeNew1(RxOp op, RxNode *sub)
{
	RxNode	   *n = PromRxNodeNew(op);

	n->nsubs = 1;
	n->subs = palloc(sizeof(RxNode *));
	n->subs[0] = sub;
	return n;
}

/* Make a class node from a clean class. */
RxNode *
PromRxNodeClass(RxClass *cls)
{
	RxNode	   *n = PromRxNodeNew(RX_CLASS);

	n->nranges = cls->n;
	n->ranges = cls->r;
	return n;
}

/* Append a node to a list. */
void
PromRxListPush(RxList *l, RxNode *n)
{
	if (l->n == l->cap)
	{
		l->cap = l->cap ? l->cap * 2 : 8;
		if (l->v)
			l->v = repalloc(l->v, sizeof(RxNode *) * l->cap);
		else
			l->v = palloc(sizeof(RxNode *) * l->cap);
	}
	l->v[l->n++] = n;
}

/*
 * Build a concatenation or alternation of the list, flattening children of
 * the same kind as Go does; a single element stands for itself.
 */
RxNode *
PromRxNodeCollect(RxOp op, RxList *l)
{
	RxList		flat = {0, 0, NULL};
	RxNode	   *n;
	int			i;
	int			j;

	if (l->n == 0)
		return PromRxNodeNew(op == RX_CONCAT ? RX_EMPTY : RX_NOMATCH);
	if (l->n == 1)
		return l->v[0];
	for (i = 0; i < l->n; i++)
	{
		if (l->v[i]->op == op)
			for (j = 0; j < l->v[i]->nsubs; j++)
				PromRxListPush(&flat, l->v[i]->subs[j]);
		else
			PromRxListPush(&flat, l->v[i]);
	}
	n = PromRxNodeNew(op);
	n->nsubs = flat.n;
	n->subs = flat.v;
	return n;
}

/*
 * Make the node for a literal character under the current flags.  Under
 * (?i) an ASCII letter (or KELVIN SIGN, LONG S) becomes the class of its
 * case variants.
 */
RxNode *
PromRxNodeLiteral(RxParser *ps, int32 c)
{
	RxNode	   *n;

	if ((ps->flags & RXF_FOLD) && rx_has_fold(c))
	{
		RxClass		cls = {0, 0, NULL};

		class_add_folded(ps, &cls, c, c);
		PromRxClassClean(&cls);
		return PromRxNodeClass(&cls);
	}
	n = PromRxNodeNew(RX_CHAR);
	n->ch = c;
	return n;
}

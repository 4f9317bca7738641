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
 * own tree, so the verdict can differ from Go's for patterns near them.  The
 * module assumes a UTF8 database, where PostgreSQL's regex engine works on
 * code points, like Go's.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_collation.h"
#include "fmgr.h"
#include "lib/stringinfo.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "regex/regex.h"
#include "utils/builtins.h"
#include "utils/memutils.h"

#include "prom_regex.h"

/* Code point limits. */
#define RX_MAX_RUNE		0x10FFFF
#define RX_MIN_FOLD		0x0041	/* smallest code point with case variants */
#define RX_MAX_FOLD		0x1E943 /* largest (Unicode 13, as in Go 1.19) */
#define RX_KELVIN		0x212A	/* folds with K and k */
#define RX_LONG_S		0x017F	/* folds with S and s */

/* Go's limits: repeat counts, tree height, compiled program size. */
#define RX_MAX_REPEAT	1000
#define RX_MAX_HEIGHT	1000
#define RX_MAX_SIZE		((128 << 20) / 40)

/* ARE's limit on a repetition count (DUPMAX). */
#define ARE_DUPMAX		255

/* Parser flags (the subset of Go's that the pattern can change). */
#define RXF_FOLD		0x01	/* (?i) */
#define RXF_MULTILINE	0x02	/* (?m), i.e. Go's OneLine cleared */
#define RXF_DOTNL		0x04	/* (?s) */
#define RXF_NONGREEDY	0x08	/* (?U), irrelevant to us */
#define RXF_ALL			0x0F

typedef enum RxOp
{
	RX_NOMATCH,					/* matches nothing */
	RX_EMPTY,					/* matches the empty string */
	RX_CHAR,					/* one code point, unaffected by folding */
	RX_CLASS,					/* a set of code points */
	RX_ANYCHAR,					/* any character */
	RX_BOT,						/* beginning of text: \A, ^ */
	RX_EOT,						/* end of text: \z, $ */
	RX_BOL,						/* beginning of line: (?m)^ */
	RX_EOL,						/* end of line: (?m)$ */
	RX_WORDB,					/* \b */
	RX_NWORDB,					/* \B */
	RX_CAPTURE,					/* capturing group, transparent */
	RX_CONCAT,
	RX_ALT,
	RX_STAR,					/* x* */
	RX_PLUS,					/* x+ */
	RX_QUEST,					/* x? */
	RX_REPEAT					/* x{min,max}, max -1 for no limit */
} RxOp;

typedef struct RxNode
{
	RxOp		op;
	int32		ch;				/* RX_CHAR */
	int			nranges;		/* RX_CLASS: number of [lo,hi] pairs */
	int32	   *ranges;			/* RX_CLASS: sorted, disjoint, non-adjacent */
	int			min;			/* repetitions */
	int			max;
	int			nsubs;
	struct RxNode **subs;
} RxNode;

/* A growable set of code-point ranges, as pairs lo,hi. */
typedef struct RxClass
{
	int			n;				/* number of pairs */
	int			cap;
	int32	   *r;
} RxClass;

/* A growable list of nodes. */
typedef struct RxList
{
	int			n;
	int			cap;
	RxNode	  **v;
} RxList;

typedef struct RxParser
{
	const char *pattern;		/* the whole pattern */
	const char *patstr;			/* NUL-terminated copy, for messages */
	const char *p;				/* cursor */
	const char *end;
	int			flags;			/* current RXF_* flags */
	/* first construct found that has no exact ARE equivalent */
	char	   *untrans_detail;
	char	   *untrans_hint;
} RxParser;

/* Emission precedence contexts. */
#define PREC_ALT	0			/* anything goes */
#define PREC_CONCAT 1			/* an alternation needs (?:) */
#define PREC_ATOM	2			/* only an atom: operand of a quantifier */

/* The ASCII word characters [0-9A-Za-z_], for \b and \B. */
#define ARE_WORD	"[0-9A-Z\\u005fa-z]"

static const int32 cls_digit[] = {'0', '9'};
static const int32 cls_space[] = {'\t', '\n', '\f', '\r', ' ', ' '};
static const int32 cls_word[] = {'0', '9', 'A', 'Z', '_', '_', 'a', 'z'};
static const int32 cls_alnum[] = {'0', '9', 'A', 'Z', 'a', 'z'};
static const int32 cls_alpha[] = {'A', 'Z', 'a', 'z'};
static const int32 cls_ascii[] = {0x00, 0x7F};
static const int32 cls_blank[] = {'\t', '\t', ' ', ' '};
static const int32 cls_cntrl[] = {0x00, 0x1F, 0x7F, 0x7F};
static const int32 cls_graph[] = {'!', '~'};
static const int32 cls_lower[] = {'a', 'z'};
static const int32 cls_print[] = {' ', '~'};
static const int32 cls_punct[] = {'!', '/', ':', '@', '[', '`', '{', '~'};
static const int32 cls_pspace[] = {'\t', '\r', ' ', ' '};
static const int32 cls_upper[] = {'A', 'Z'};
static const int32 cls_xdigit[] = {'0', '9', 'A', 'F', 'a', 'f'};

typedef struct RxNamedClass
{
	const char *name;
	const int32 *ranges;
	int			nranges;
} RxNamedClass;

#define NC(name, arr) {name, arr, lengthof(arr) / 2}

/* POSIX classes usable as [[:name:]] and [[:^name:]] (ASCII only in Go). */
static const RxNamedClass posix_classes[] = {
	NC("alnum", cls_alnum), NC("alpha", cls_alpha), NC("ascii", cls_ascii),
	NC("blank", cls_blank), NC("cntrl", cls_cntrl), NC("digit", cls_digit),
	NC("graph", cls_graph), NC("lower", cls_lower), NC("print", cls_print),
	NC("punct", cls_punct), NC("space", cls_pspace), NC("upper", cls_upper),
	NC("word", cls_word), NC("xdigit", cls_xdigit)
};

/*
 * Names Go 1.19 accepts in \p{Name}: unicode.Categories and unicode.Scripts
 * (Unicode 13.0.0), sorted.  "Any" is handled separately.
 */
static const char *const unicode_class_names[] = {
	"Adlam", "Ahom", "Anatolian_Hieroglyphs", "Arabic", "Armenian", "Avestan",
	"Balinese", "Bamum", "Bassa_Vah", "Batak", "Bengali", "Bhaiksuki",
	"Bopomofo", "Brahmi", "Braille", "Buginese", "Buhid", "C",
	"Canadian_Aboriginal", "Carian", "Caucasian_Albanian", "Cc", "Cf",
	"Chakma", "Cham", "Cherokee", "Chorasmian", "Co", "Common", "Coptic", "Cs",
	"Cuneiform", "Cypriot", "Cyrillic", "Deseret", "Devanagari",
	"Dives_Akuru", "Dogra", "Duployan", "Egyptian_Hieroglyphs", "Elbasan",
	"Elymaic", "Ethiopic", "Georgian", "Glagolitic", "Gothic", "Grantha",
	"Greek", "Gujarati", "Gunjala_Gondi", "Gurmukhi", "Han", "Hangul",
	"Hanifi_Rohingya", "Hanunoo", "Hatran", "Hebrew", "Hiragana",
	"Imperial_Aramaic", "Inherited", "Inscriptional_Pahlavi",
	"Inscriptional_Parthian", "Javanese", "Kaithi", "Kannada", "Katakana",
	"Kayah_Li", "Kharoshthi", "Khitan_Small_Script", "Khmer", "Khojki",
	"Khudawadi", "L", "Lao", "Latin", "Lepcha", "Limbu", "Linear_A",
	"Linear_B", "Lisu", "Ll", "Lm", "Lo", "Lt", "Lu", "Lycian", "Lydian", "M",
	"Mahajani", "Makasar", "Malayalam", "Mandaic", "Manichaean", "Marchen",
	"Masaram_Gondi", "Mc", "Me", "Medefaidrin", "Meetei_Mayek",
	"Mende_Kikakui", "Meroitic_Cursive", "Meroitic_Hieroglyphs", "Miao", "Mn",
	"Modi", "Mongolian", "Mro", "Multani", "Myanmar", "N", "Nabataean",
	"Nandinagari", "Nd", "New_Tai_Lue", "Newa", "Nko", "Nl", "No", "Nushu",
	"Nyiakeng_Puachue_Hmong", "Ogham", "Ol_Chiki", "Old_Hungarian",
	"Old_Italic", "Old_North_Arabian", "Old_Permic", "Old_Persian",
	"Old_Sogdian", "Old_South_Arabian", "Old_Turkic", "Oriya", "Osage",
	"Osmanya", "P", "Pahawh_Hmong", "Palmyrene", "Pau_Cin_Hau", "Pc", "Pd",
	"Pe", "Pf", "Phags_Pa", "Phoenician", "Pi", "Po", "Ps", "Psalter_Pahlavi",
	"Rejang", "Runic", "S", "Samaritan", "Saurashtra", "Sc", "Sharada",
	"Shavian", "Siddham", "SignWriting", "Sinhala", "Sk", "Sm", "So",
	"Sogdian", "Sora_Sompeng", "Soyombo", "Sundanese", "Syloti_Nagri",
	"Syriac", "Tagalog", "Tagbanwa", "Tai_Le", "Tai_Tham", "Tai_Viet",
	"Takri", "Tamil", "Tangut", "Telugu", "Thaana", "Thai", "Tibetan",
	"Tifinagh", "Tirhuta", "Ugaritic", "Vai", "Wancho", "Warang_Citi",
	"Yezidi", "Yi", "Z", "Zanabazar_Square", "Zl", "Zp", "Zs"
};

static RxNode *parse_alternation(RxParser *ps);
static void rx_invalid(RxParser *ps, const char *detail) pg_attribute_noreturn();
static void rx_invalid_at(RxParser *ps, const char *what, const char *from,
						  const char *to) pg_attribute_noreturn();


/* ---------------------------------------------------------------------
 * Errors
 * ---------------------------------------------------------------------
 */

/* Report a pattern that Go rejects. */
static void
rx_invalid(RxParser *ps, const char *detail)
{
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_REGULAR_EXPRESSION),
			 errmsg("invalid regular expression \"%s\"", ps->patstr),
			 errdetail_internal("%s", detail)));
}

/* Report a pattern that Go rejects, quoting the offending text [from, to). */
static void
rx_invalid_at(RxParser *ps, const char *what, const char *from, const char *to)
{
	rx_invalid(ps, psprintf("%s \"%.*s\".", what, (int) (to - from), from));
}

/*
 * Note a construct without exact ARE equivalent.  Only the first one is kept;
 * it is reported once the whole pattern has been parsed.
 */
static void
rx_untranslatable(RxParser *ps, char *detail, const char *hint)
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
static int
rx_decode(const char *s, const char *end, int32 *r)
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
static bool
rx_next(RxParser *ps, int32 *r)
{
	int			n = rx_decode(ps->p, ps->end, r);

	if (n < 0)
		rx_invalid(ps, "The pattern is not valid UTF-8.");
	if (n == 0)
		return false;
	ps->p += n;
	return true;
}

/* Fail unless [s, end) is valid UTF-8. */
static void
rx_check_utf8(RxParser *ps, const char *s, const char *end)
{
	int32		r;
	int			n;

	while ((n = rx_decode(s, end, &r)) > 0)
		s += n;
	if (n < 0)
		rx_invalid(ps, "The pattern is not valid UTF-8.");
}

/* ASCII letter or digit, as Go's isalnum. */
static inline bool
rx_isalnum(int32 c)
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
static inline bool
rx_impossible_char(int32 c)
{
	return c == 0 || (c >= 0xD800 && c <= 0xDFFF);
}

/* Describe a code point for a message: "é" (U+00E9). */
static char *
rx_describe_char(int32 c)
{
	unsigned char buf[8];

	if (c < 0x20 || (c >= 0x7F && c < 0xA0) || rx_impossible_char(c))
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
static void
class_add(RxClass *cls, int32 lo, int32 hi)
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
static void
class_clean(RxClass *cls)
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
static void
class_negate(RxClass *cls)
{
	RxClass		out = {0, 0, NULL};
	int32		next = 0;
	int			i;

	for (i = 0; i < cls->n; i++)
	{
		class_add(&out, next, cls->r[2 * i] - 1);
		next = cls->r[2 * i + 1] + 1;
	}
	class_add(&out, next, RX_MAX_RUNE);
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
		class_add(cls, lo, hi);
		return;
	}
	if (lo < RX_MIN_FOLD)
	{
		class_add(cls, lo, RX_MIN_FOLD - 1);
		lo = RX_MIN_FOLD;
	}
	if (hi > RX_MAX_FOLD)
	{
		class_add(cls, RX_MAX_FOLD + 1, hi);
		hi = RX_MAX_FOLD;
	}
	class_add(cls, lo, hi);
	if (hi >= 0x80 &&
		!(lo == hi && (lo == RX_KELVIN || lo == RX_LONG_S)))
	{
		int32		bad = Max(lo, 0x80);

		rx_untranslatable(ps,
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
			class_add(cls, orb[i], orb[i]);
	}
}

/* Append a range, folded under (?i). */
static void
class_add_range(RxParser *ps, RxClass *cls, int32 lo, int32 hi)
{
	if (ps->flags & RXF_FOLD)
		class_add_folded(ps, cls, lo, hi);
	else
		class_add(cls, lo, hi);
}

/*
 * Append a named (Perl or POSIX) class, possibly negated.  Under (?i) the
 * class is folded first and negated afterwards, as Go's appendGroup does.
 */
static void
class_add_group(RxParser *ps, RxClass *cls, const int32 *ranges, int n,
				bool negate)
{
	RxClass		tmp = {0, 0, NULL};
	int			i;

	for (i = 0; i < n; i++)
		class_add_range(ps, &tmp, ranges[2 * i], ranges[2 * i + 1]);
	class_clean(&tmp);
	if (negate)
		class_negate(&tmp);
	for (i = 0; i < tmp.n; i++)
		class_add(cls, tmp.r[2 * i], tmp.r[2 * i + 1]);
}


/* ---------------------------------------------------------------------
 * Parse tree
 * ---------------------------------------------------------------------
 */

/* Make a node. */
static RxNode *
node_new(RxOp op)
{
	RxNode	   *n = palloc0(sizeof(RxNode));

	n->op = op;
	return n;
}

/* Make a node with one child. */
static RxNode *
node_new1(RxOp op, RxNode *sub)
{
	RxNode	   *n = node_new(op);

	n->nsubs = 1;
	n->subs = palloc(sizeof(RxNode *));
	n->subs[0] = sub;
	return n;
}

/* Make a class node from a clean class. */
static RxNode *
node_class(RxClass *cls)
{
	RxNode	   *n = node_new(RX_CLASS);

	n->nranges = cls->n;
	n->ranges = cls->r;
	return n;
}

/* Append a node to a list. */
static void
rx_list_push(RxList *l, RxNode *n)
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
static RxNode *
node_collect(RxOp op, RxList *l)
{
	RxList		flat = {0, 0, NULL};
	RxNode	   *n;
	int			i;
	int			j;

	if (l->n == 0)
		return node_new(op == RX_CONCAT ? RX_EMPTY : RX_NOMATCH);
	if (l->n == 1)
		return l->v[0];
	for (i = 0; i < l->n; i++)
	{
		if (l->v[i]->op == op)
			for (j = 0; j < l->v[i]->nsubs; j++)
				rx_list_push(&flat, l->v[i]->subs[j]);
		else
			rx_list_push(&flat, l->v[i]);
	}
	n = node_new(op);
	n->nsubs = flat.n;
	n->subs = flat.v;
	return n;
}

/*
 * Make the node for a literal character under the current flags.  Under
 * (?i) an ASCII letter (or KELVIN SIGN, LONG S) becomes the class of its
 * case variants.
 */
static RxNode *
node_literal(RxParser *ps, int32 c)
{
	RxNode	   *n;

	if ((ps->flags & RXF_FOLD) && rx_has_fold(c))
	{
		RxClass		cls = {0, 0, NULL};

		class_add_folded(ps, &cls, c, c);
		class_clean(&cls);
		return node_class(&cls);
	}
	n = node_new(RX_CHAR);
	n->ch = c;
	return n;
}


/* ---------------------------------------------------------------------
 * Parser
 * ---------------------------------------------------------------------
 */

/*
 * Parse a decimal number at *s for a counted repetition, as Go's parseInt:
 * no leading zeros, a value that does not fit yields -1.  Returns false if
 * there is no number.
 */
static bool
rx_parse_int(const char **s, const char *end, int *val)
{
	const char *t = *s;
	int			n = 0;

	if (t >= end || *t < '0' || *t > '9')
		return false;
	if (end - t >= 2 && t[0] == '0' && t[1] >= '0' && t[1] <= '9')
		return false;
	while (t < end && *t >= '0' && *t <= '9')
	{
		if (n >= 100000000)
			n = -1;
		else if (n >= 0)
			n = n * 10 + (*t - '0');
		t++;
	}
	*s = t;
	*val = n;
	return true;
}

/*
 * Parse {n}, {n,} or {n,m} at the cursor.  On success, returns true and
 * sets *min, *max (-1 for no limit) and *after; a number too big to parse
 * gives *min = -1.  Returns false if the text is not of that form, in which
 * case Go takes the "{" literally.
 */
static bool
parse_braces(RxParser *ps, int *min, int *max, const char **after)
{
	const char *s = ps->p + 1;
	const char *end = ps->end;

	if (!rx_parse_int(&s, end, min))
		return false;
	if (s >= end)
		return false;
	if (*s != ',')
		*max = *min;
	else
	{
		s++;
		if (s >= end)
			return false;
		if (*s == '}')
			*max = -1;
		else
		{
			if (!rx_parse_int(&s, end, max))
				return false;
			if (*max < 0)
				*min = -1;
		}
	}
	if (s >= end || *s != '}')
		return false;
	*after = s + 1;
	return true;
}

/*
 * Parse an escape that stands for one character (the cursor is at the
 * backslash): \a \f \t \n \r \v, octal, \xHH, \x{H...}, or an escaped
 * ASCII punctuation character.
 */
static int32
parse_escape(RxParser *ps)
{
	const char *start = ps->p;
	int32		c;
	int32		r;
	int			i;

	ps->p++;
	if (!rx_next(ps, &c))
		rx_invalid(ps, "Trailing backslash at end of expression.");

	if (c < 0x80 && !rx_isalnum(c))
		return c;				/* escaped punctuation is itself */

	switch (c)
	{
		case '1':
		case '2':
		case '3':
		case '4':
		case '5':
		case '6':
		case '7':
			/* a lone non-zero digit would be a backreference */
			if (ps->p >= ps->end || *ps->p < '0' || *ps->p > '7')
				break;
			/* FALLTHROUGH */
		case '0':
			r = c - '0';
			for (i = 1; i < 3; i++)
			{
				if (ps->p >= ps->end || *ps->p < '0' || *ps->p > '7')
					break;
				r = r * 8 + (*ps->p - '0');
				ps->p++;
			}
			return r;
		case 'x':
			{
				int32		d;
				int			x;
				int			y;

				if (!rx_next(ps, &d))
					break;
				if (d == '{')
				{
					int			nhex = 0;

					r = 0;
					for (;;)
					{
						int			v;

						if (!rx_next(ps, &d))
							goto bad;
						if (d == '}')
							break;
						v = PromHexDigit(d);
						if (v < 0)
							goto bad;
						r = r * 16 + v;
						if (r > RX_MAX_RUNE)
							goto bad;
						nhex++;
					}
					if (nhex == 0)
						break;
					return r;
				}
				x = PromHexDigit(d);
				y = rx_next(ps, &d) ? PromHexDigit(d) : -1;
				if (x < 0 || y < 0)
					break;
				return x * 16 + y;
			}
		case 'a':
			return '\a';
		case 'f':
			return '\f';
		case 'n':
			return '\n';
		case 'r':
			return '\r';
		case 't':
			return '\t';
		case 'v':
			return '\v';
		default:
			break;
	}
bad:
	rx_invalid_at(ps, "Invalid escape sequence", start, ps->p);
}

/*
 * At \p or \P (cursor at the backslash): parse a Unicode class and add it
 * to cls.  Go validates the name; only "Any" can be translated.
 */
static void
parse_unicode_class(RxParser *ps, RxClass *cls)
{
	const char *start = ps->p;
	bool		negate = (ps->p[1] == 'P');
	const char *name;
	const char *name_end;
	const char *seq_end;
	int32		c;
	bool		found = false;
	int			i;

	ps->p += 2;
	if (ps->p < ps->end && *ps->p == '{')
	{
		const char *close = memchr(ps->p, '}', ps->end - ps->p);

		if (close == NULL)
		{
			rx_check_utf8(ps, start, ps->end);
			rx_invalid_at(ps, "Unterminated Unicode character class", start,
						  ps->end);
		}
		name = ps->p + 1;
		name_end = close;
		seq_end = close + 1;
		rx_check_utf8(ps, name, name_end);
	}
	else
	{
		/* one-letter name (possibly none at the end of the pattern) */
		name = ps->p;
		rx_next(ps, &c);
		name_end = ps->p;
		seq_end = ps->p;
	}
	ps->p = seq_end;

	if (name < name_end && *name == '^')
	{
		negate = !negate;
		name++;
	}
	if (name_end - name == 3 && memcmp(name, "Any", 3) == 0)
	{
		/* any character; folding cannot change that */
		if (!negate)
			class_add(cls, 0, RX_MAX_RUNE);
		return;
	}
	for (i = 0; i < (int) lengthof(unicode_class_names); i++)
	{
		const char *n = unicode_class_names[i];

		if (strlen(n) == (size_t) (name_end - name) &&
			memcmp(n, name, name_end - name) == 0)
		{
			found = true;
			break;
		}
	}
	if (!found)
		rx_invalid_at(ps, "Unknown Unicode character class", start, seq_end);

	rx_untranslatable(ps,
					  psprintf("Unicode character class \"%.*s\" is not supported.",
							   (int) (seq_end - start), start),
					  "List the characters or code point ranges explicitly in a bracket expression, as in [\\x{391}-\\x{3C9}].");
}

/*
 * At a backslash: if a Perl class escape (\d \D \s \S \w \W) follows, add it
 * to cls, advance and return true.
 */
static bool
parse_perl_class(RxParser *ps, RxClass *cls)
{
	const int32 *ranges;
	int			n;

	if (ps->end - ps->p < 2 || ps->p[0] != '\\')
		return false;
	switch (ps->p[1])
	{
		case 'd':
		case 'D':
			ranges = cls_digit;
			n = lengthof(cls_digit) / 2;
			break;
		case 's':
		case 'S':
			ranges = cls_space;
			n = lengthof(cls_space) / 2;
			break;
		case 'w':
		case 'W':
			ranges = cls_word;
			n = lengthof(cls_word) / 2;
			break;
		default:
			return false;
	}
	class_add_group(ps, cls, ranges, n, ps->p[1] < 'a');
	ps->p += 2;
	return true;
}

/*
 * Inside brackets, at "[:": if a POSIX class name follows, add it and
 * return true.  Like Go, "[:" without a later ":]" is not a class; with one,
 * the name must be known.
 */
static bool
parse_posix_class(RxParser *ps, RxClass *cls)
{
	const char *s = ps->p;
	const char *close = NULL;
	const char *t;
	const char *name;
	bool		negate = false;
	int			i;

	for (t = s + 2; t + 1 < ps->end; t++)
	{
		if (t[0] == ':' && t[1] == ']')
		{
			close = t;
			break;
		}
	}
	if (close == NULL)
		return false;
	name = s + 2;
	if (name < close && *name == '^')
	{
		negate = true;
		name++;
	}
	for (i = 0; i < (int) lengthof(posix_classes); i++)
	{
		const RxNamedClass *nc = &posix_classes[i];

		if (strlen(nc->name) == (size_t) (close - name) &&
			memcmp(nc->name, name, close - name) == 0)
		{
			class_add_group(ps, cls, nc->ranges, nc->nranges, negate);
			ps->p = close + 2;
			return true;
		}
	}
	rx_invalid_at(ps, "Unknown character class", s, close + 2);
}

/* One character inside brackets (cursor there), escapes allowed. */
static int32
parse_class_char(RxParser *ps)
{
	int32		c;

	if (ps->p >= ps->end)
		rx_invalid(ps, "Missing closing \"]\".");
	if (*ps->p == '\\')
		return parse_escape(ps);
	rx_next(ps, &c);
	return c;
}

/* Parse a bracket expression (cursor at "[") into a class node. */
static RxNode *
parse_class(RxParser *ps)
{
	RxClass		cls = {0, 0, NULL};
	bool		negate = false;
	bool		first = true;

	ps->p++;
	if (ps->p < ps->end && *ps->p == '^')
	{
		negate = true;
		ps->p++;
	}
	while (ps->p >= ps->end || *ps->p != ']' || first)
	{
		const char *rng = ps->p;
		int32		lo;
		int32		hi;

		CHECK_FOR_INTERRUPTS();
		first = false;

		if (ps->end - ps->p > 2 && ps->p[0] == '[' && ps->p[1] == ':' &&
			parse_posix_class(ps, &cls))
			continue;
		if (ps->end - ps->p >= 2 && ps->p[0] == '\\' &&
			(ps->p[1] == 'p' || ps->p[1] == 'P'))
		{
			parse_unicode_class(ps, &cls);
			continue;
		}
		if (parse_perl_class(ps, &cls))
			continue;

		lo = hi = parse_class_char(ps);
		/* "a-]" is "a" and "-" */
		if (ps->end - ps->p >= 2 && ps->p[0] == '-' && ps->p[1] != ']')
		{
			ps->p++;
			hi = parse_class_char(ps);
			if (hi < lo)
				rx_invalid_at(ps, "Invalid character class range",
							  rng, ps->p);
		}
		class_add_range(ps, &cls, lo, hi);
	}
	ps->p++;					/* the "]" */
	class_clean(&cls);
	if (negate)
		class_negate(&cls);
	return node_class(&cls);
}

/*
 * Does the subtree stay within Go's limit of n copies of anything through
 * nested counted repetitions?  (Go's repeatIsValid.)
 */
static bool
repeat_is_valid(RxNode *n, int limit)
{
	int			i;

	check_stack_depth();
	if (n->op == RX_REPEAT)
	{
		int			m = n->max;

		if (m == 0)
			return true;
		if (m < 0)
			m = n->min;
		if (m > limit)
			return false;
		if (m > 0)
			limit /= m;
	}
	for (i = 0; i < n->nsubs; i++)
		if (!repeat_is_valid(n->subs[i], limit))
			return false;
	return true;
}

/*
 * Parse the body of a group after its opening text, with the given flags in
 * force inside; the flags in force before are restored after the ")".
 */
static RxNode *
parse_group(RxParser *ps, bool capture, int inner_flags)
{
	int			saved = ps->flags;
	RxNode	   *sub;

	ps->flags = inner_flags;
	sub = parse_alternation(ps);
	if (ps->p >= ps->end)
		rx_invalid(ps, "Missing closing \")\".");
	ps->p++;					/* the ")" */
	ps->flags = saved;
	return capture ? node_new1(RX_CAPTURE, sub) : sub;
}

/*
 * At "(?": parse a named capture, a non-capturing group or a flag setting.
 * Returns the group, or NULL for a bare "(?flags)", which only changes the
 * flags of the enclosing group from here on.
 */
static RxNode *
parse_perl_group(RxParser *ps)
{
	const char *s = ps->p;
	int			flags = ps->flags;
	int			sign = 1;
	bool		sawflag = false;
	int32		c;

	if (ps->end - s > 4 && s[2] == 'P' && s[3] == '<')
	{
		const char *gt = memchr(s, '>', ps->end - s);
		const char *q;

		if (gt == NULL)
		{
			rx_check_utf8(ps, s, ps->end);
			rx_invalid_at(ps, "Invalid named capture", s, ps->end);
		}
		rx_check_utf8(ps, s + 4, gt);
		if (gt == s + 4)
			rx_invalid_at(ps, "Invalid named capture", s, gt + 1);
		for (q = s + 4; q < gt; q++)
			if (*q != '_' && !rx_isalnum((unsigned char) *q))
				rx_invalid_at(ps, "Invalid named capture", s, gt + 1);
		ps->p = gt + 1;
		return parse_group(ps, true, ps->flags);
	}

	ps->p += 2;
	while (rx_next(ps, &c))
	{
		switch (c)
		{
			case 'i':
				flags |= RXF_FOLD;
				sawflag = true;
				continue;
			case 'm':
				flags |= RXF_MULTILINE;
				sawflag = true;
				continue;
			case 's':
				flags |= RXF_DOTNL;
				sawflag = true;
				continue;
			case 'U':
				flags |= RXF_NONGREEDY;
				sawflag = true;
				continue;
			case '-':
				if (sign < 0)
					break;
				sign = -1;
				/* invert, so that setting a bit below clears it */
				flags = ~flags & RXF_ALL;
				sawflag = false;
				continue;
			case ':':
			case ')':
				if (sign < 0)
				{
					if (!sawflag)
						break;
					flags = ~flags & RXF_ALL;
				}
				if (c == ':')
					return parse_group(ps, false, flags);
				ps->flags = flags;
				return NULL;
			default:
				break;
		}
		break;
	}
	rx_invalid_at(ps, "Invalid or unsupported Perl syntax", s, ps->p);
}

/*
 * Parse a concatenation, up to "|", ")" or the end of the pattern.  A
 * repetition operator applies to the last item; Go forbids stacking two
 * operators.
 */
static RxNode *
parse_concat(RxParser *ps)
{
	RxList		items = {0, 0, NULL};
	const char *last_repeat = NULL; /* previous token, if a repetition */

	while (ps->p < ps->end && *ps->p != '|' && *ps->p != ')')
	{
		const char *tok = ps->p;
		const char *repeat = NULL;
		RxNode	   *item = NULL;
		RxClass		cls = {0, 0, NULL};
		int32		c;

		CHECK_FOR_INTERRUPTS();
		switch (*ps->p)
		{
			case '(':
				if (ps->end - ps->p >= 2 && ps->p[1] == '?')
					item = parse_perl_group(ps);
				else
				{
					ps->p++;
					item = parse_group(ps, true, ps->flags);
				}
				break;
			case '^':
				item = node_new((ps->flags & RXF_MULTILINE) ? RX_BOL : RX_BOT);
				ps->p++;
				break;
			case '$':
				item = node_new((ps->flags & RXF_MULTILINE) ? RX_EOL : RX_EOT);
				ps->p++;
				break;
			case '.':
				if (ps->flags & RXF_DOTNL)
					item = node_new(RX_ANYCHAR);
				else
				{
					class_add(&cls, 0, '\n' - 1);
					class_add(&cls, '\n' + 1, RX_MAX_RUNE);
					item = node_class(&cls);
				}
				ps->p++;
				break;
			case '[':
				item = parse_class(ps);
				break;
			case '*':
			case '+':
			case '?':
			case '{':
				{
					RxOp		op;
					int			min = 0;
					int			max = -1;
					const char *after = ps->p + 1;
					RxNode	   *rep;

					if (*ps->p == '{')
					{
						if (!parse_braces(ps, &min, &max, &after))
						{
							/* not a repetition: a literal "{" */
							item = node_literal(ps, '{');
							ps->p++;
							break;
						}
						if (min < 0 || min > RX_MAX_REPEAT ||
							max > RX_MAX_REPEAT || (max >= 0 && min > max))
							rx_invalid_at(ps, "Invalid repeat count",
										  tok, after);
						op = RX_REPEAT;
					}
					else if (*ps->p == '*')
						op = RX_STAR;
					else if (*ps->p == '+')
					{
						op = RX_PLUS;
						min = 1;
					}
					else
					{
						op = RX_QUEST;
						max = 1;
					}
					if (after < ps->end && *after == '?')
						after++;	/* non-greedy: same strings */
					if (last_repeat != NULL)
						rx_invalid_at(ps, "Invalid nested repetition operator",
									  last_repeat, after);
					if (items.n == 0)
						rx_invalid_at(ps, "Missing argument to repetition operator",
									  tok, after);
					rep = node_new1(op, items.v[items.n - 1]);
					rep->min = min;
					rep->max = max;
					if (op == RX_REPEAT && (min >= 2 || max >= 2) &&
						!repeat_is_valid(rep, RX_MAX_REPEAT))
						rx_invalid_at(ps, "Invalid repeat count", tok, after);
					items.v[items.n - 1] = rep;
					ps->p = after;
					repeat = tok;
				}
				break;
			case '\\':
				if (ps->end - ps->p >= 2)
				{
					switch (ps->p[1])
					{
						case 'A':
							item = node_new(RX_BOT);
							ps->p += 2;
							break;
						case 'z':
							item = node_new(RX_EOT);
							ps->p += 2;
							break;
						case 'b':
							item = node_new(RX_WORDB);
							ps->p += 2;
							break;
						case 'B':
							item = node_new(RX_NWORDB);
							ps->p += 2;
							break;
						case 'C':
							/* "any byte": Go does not support it */
							rx_invalid_at(ps, "Invalid escape sequence",
										  ps->p, ps->p + 2);
							break;
						case 'Q':
							{
								/* literal text up to \E or the end */
								const char *stop = ps->p + 2;

								ps->p += 2;
								while (stop < ps->end &&
									   !(stop[0] == '\\' && stop + 1 < ps->end &&
										 stop[1] == 'E'))
									stop++;
								while (ps->p < stop)
								{
									int			n = rx_decode(ps->p, stop, &c);

									if (n <= 0)
										rx_invalid(ps, "The pattern is not valid UTF-8.");
									ps->p += n;
									rx_list_push(&items, node_literal(ps, c));
								}
								if (stop < ps->end)
									ps->p = stop + 2;
							}
							break;
						case 'p':
						case 'P':
							parse_unicode_class(ps, &cls);
							class_clean(&cls);
							item = node_class(&cls);
							break;
						default:
							if (parse_perl_class(ps, &cls))
							{
								class_clean(&cls);
								item = node_class(&cls);
							}
							break;
					}
					if (item != NULL || ps->p != tok)
						break;
				}
				item = node_literal(ps, parse_escape(ps));
				break;
			default:
				rx_next(ps, &c);
				item = node_literal(ps, c);
				break;
		}
		if (item != NULL)
			rx_list_push(&items, item);
		last_repeat = repeat;
	}
	return node_collect(RX_CONCAT, &items);
}

/* Parse an alternation, up to ")" or the end of the pattern. */
static RxNode *
parse_alternation(RxParser *ps)
{
	RxList		branches = {0, 0, NULL};

	check_stack_depth();
	rx_list_push(&branches, parse_concat(ps));
	while (ps->p < ps->end && *ps->p == '|')
	{
		ps->p++;
		rx_list_push(&branches, parse_concat(ps));
	}
	return node_collect(RX_ALT, &branches);
}


/* ---------------------------------------------------------------------
 * Go's size and height limits
 * ---------------------------------------------------------------------
 */

/* Go's estimate of the compiled program size (calcSize), saturating. */
static int64
tree_size(RxNode *n)
{
	int64		size = 0;
	int64		sub;
	int			i;

	check_stack_depth();
	switch (n->op)
	{
		case RX_CAPTURE:
		case RX_STAR:
			size = 2 + tree_size(n->subs[0]);
			break;
		case RX_PLUS:
		case RX_QUEST:
			size = 1 + tree_size(n->subs[0]);
			break;
		case RX_CONCAT:
		case RX_ALT:
			for (i = 0; i < n->nsubs; i++)
				size += tree_size(n->subs[i]);
			if (n->op == RX_ALT)
				size += n->nsubs - 1;
			break;
		case RX_REPEAT:
			sub = tree_size(n->subs[0]);
			if (n->max == -1)
				size = (n->min == 0) ? 2 + sub : 1 + (int64) n->min * sub;
			else
				size = (int64) n->max * sub + (n->max - n->min);
			break;
		default:
			size = 1;
			break;
	}
	return Min(Max(size, 1), (int64) RX_MAX_SIZE + 1);
}

/*
 * Height of Go's parse tree: runs of literal characters form one node,
 * groups without capture add no level.
 */
static int
tree_height(RxNode *n)
{
	int			h = 0;
	int			items = 0;
	int			i;

	check_stack_depth();
	switch (n->op)
	{
		case RX_CONCAT:
			for (i = 0; i < n->nsubs; i++)
			{
				int			sub = tree_height(n->subs[i]);

				if (n->subs[i]->op != RX_CHAR || i == 0 ||
					n->subs[i - 1]->op != RX_CHAR)
					items++;
				h = Max(h, sub);
			}
			return items > 1 ? h + 1 : h;
		case RX_ALT:
		case RX_CAPTURE:
		case RX_STAR:
		case RX_PLUS:
		case RX_QUEST:
		case RX_REPEAT:
			for (i = 0; i < n->nsubs; i++)
			{
				int			sub = tree_height(n->subs[i]);

				h = Max(h, sub);
			}
			return h + 1;
		default:
			return 1;
	}
}


/* ---------------------------------------------------------------------
 * Analysis: empty match and literal sets
 * ---------------------------------------------------------------------
 */

/* Does the node match the empty string (where every position is 0)? */
static bool
rx_matches_empty(RxNode *n)
{
	int			i;

	check_stack_depth();
	switch (n->op)
	{
		case RX_EMPTY:
		case RX_BOT:
		case RX_EOT:
		case RX_BOL:
		case RX_EOL:
		case RX_NWORDB:
			return true;
		case RX_NOMATCH:
		case RX_CHAR:
		case RX_CLASS:
		case RX_ANYCHAR:
		case RX_WORDB:
			return false;
		case RX_CONCAT:
			for (i = 0; i < n->nsubs; i++)
				if (!rx_matches_empty(n->subs[i]))
					return false;
			return true;
		case RX_ALT:
			for (i = 0; i < n->nsubs; i++)
				if (rx_matches_empty(n->subs[i]))
					return true;
			return false;
		case RX_STAR:
		case RX_QUEST:
			return true;
		case RX_CAPTURE:
			return rx_matches_empty(n->subs[0]);
		case RX_PLUS:
		case RX_REPEAT:
			return n->min == 0 || rx_matches_empty(n->subs[0]);
	}
	return false;
}

/*
 * The most strings, and bytes, of a regex's language that make it a literal
 * set: a pattern that matches a small finite set of strings (host-(1|2|3),
 * (?i)get, host-1[0-9]?) is matched as a set, by equality.
 */
#define RX_LITERALS_MAX		10000
#define RX_LITERAL_BYTES_MAX	(1024 * 1024)

/*
 * How many strings a node matches, counted with their repetitions (an
 * alternation's branches may share strings), at most RX_LITERALS_MAX + 1;
 * -1 when the node is not expanded: infinite ("." or an unbounded
 * repetition), or an assertion inside the pattern.
 */
static int64
language_size(RxNode *n)
{
	int64		size;
	int64		sub;
	int64		power;
	int			i;

	check_stack_depth();
	switch (n->op)
	{
		case RX_NOMATCH:
			return 0;
		case RX_EMPTY:
		case RX_CHAR:
			return 1;
		case RX_CLASS:
			size = 0;
			for (i = 0; i < n->nranges; i++)
				size += (int64) n->ranges[2 * i + 1] - n->ranges[2 * i] + 1;
			return Min(size, RX_LITERALS_MAX + 1);
		case RX_CAPTURE:
			return language_size(n->subs[0]);
		case RX_CONCAT:
		case RX_ALT:
			size = n->op == RX_CONCAT ? 1 : 0;
			for (i = 0; i < n->nsubs; i++)
			{
				if ((sub = language_size(n->subs[i])) < 0)
					return -1;
				size = n->op == RX_CONCAT ? size * sub : size + sub;
				size = Min(size, RX_LITERALS_MAX + 1);
			}
			return size;
		case RX_QUEST:
			sub = language_size(n->subs[0]);
			return sub < 0 ? -1 : Min(sub + 1, RX_LITERALS_MAX + 1);
		case RX_REPEAT:
			if (n->max < 0 || (sub = language_size(n->subs[0])) < 0)
				return -1;
			size = 0;
			power = 1;
			for (i = 0; i <= n->max && size <= RX_LITERALS_MAX; i++)
			{
				if (i >= n->min)
					size += power;
				power = Min(power * sub, RX_LITERALS_MAX + 1);
			}
			return Min(size, RX_LITERALS_MAX + 1);
		default:
			return -1;
	}
}

/* A set of strings being expanded, with repetitions. */
typedef struct RxStrings
{
	int			n;
	Size		bytes;			/* of all the strings */
	char	  **v;				/* NUL-terminated */
	int		   *lens;
} RxStrings;

/* A set of strings, empty, with room for the given number. */
static RxStrings *
strings_new(int64 capacity)
{
	RxStrings  *set = palloc(sizeof(RxStrings));

	set->n = 0;
	set->bytes = 0;
	set->v = palloc(sizeof(char *) * Max(capacity, 1));
	set->lens = palloc(sizeof(int) * Max(capacity, 1));
	return set;
}

/* Add a string (a and b, concatenated) to a set with room for it. */
static void
strings_add(RxStrings *set, const char *a, int alen, const char *b, int blen)
{
	char	   *s = palloc(alen + blen + 1);

	memcpy(s, a, alen);
	memcpy(s + alen, b, blen);
	s[alen + blen] = '\0';
	set->v[set->n] = s;
	set->lens[set->n] = alen + blen;
	set->n++;
	set->bytes += alen + blen;
}

/*
 * The strings a node matches, when its language_size is at most
 * RX_LITERALS_MAX (nothing larger is expanded, even under a factor that
 * matches nothing); NULL otherwise, or when their bytes pass
 * RX_LITERAL_BYTES_MAX.
 */
static RxStrings *
expand_strings(RxNode *n)
{
	RxStrings  *set;
	RxStrings  *sub = NULL;
	RxStrings  *power;
	unsigned char utf8[8];
	int			i;
	int			j;
	int			k;

	int64		size;

	check_stack_depth();
	CHECK_FOR_INTERRUPTS();
	size = language_size(n);
	if (size < 0 || size > RX_LITERALS_MAX)
		return NULL;
	set = strings_new(size);
	if (size == 0)
		return set;
	if (n->op == RX_REPEAT && n->max == 0)
	{
		strings_add(set, "", 0, "", 0);
		return set;
	}
	switch (n->op)
	{
		case RX_NOMATCH:
			return set;
		case RX_EMPTY:
			strings_add(set, "", 0, "", 0);
			return set;
		case RX_CHAR:
		case RX_CLASS:
			for (i = 0; i < (n->op == RX_CHAR ? 1 : n->nranges); i++)
			{
				int32		lo = n->op == RX_CHAR ? n->ch : n->ranges[2 * i];
				int32		hi = n->op == RX_CHAR ? n->ch : n->ranges[2 * i + 1];
				int32		c;

				for (c = lo; c <= hi; c++)
				{
					if (rx_impossible_char(c))
						continue;
					memset(utf8, 0, sizeof(utf8));
					unicode_to_utf8((pg_wchar) c, utf8);
					strings_add(set, (char *) utf8, strlen((char *) utf8), "", 0);
				}
			}
			return set;
		case RX_CAPTURE:
			return expand_strings(n->subs[0]);
		case RX_QUEST:
		case RX_ALT:
			if (n->op == RX_QUEST)
				strings_add(set, "", 0, "", 0);
			for (i = 0; i < n->nsubs; i++)
			{
				if ((sub = expand_strings(n->subs[i])) == NULL ||
					set->bytes + sub->bytes > RX_LITERAL_BYTES_MAX)
					return NULL;
				for (j = 0; j < sub->n; j++)
					strings_add(set, sub->v[j], sub->lens[j], "", 0);
			}
			return set;
		case RX_CONCAT:
		case RX_REPEAT:
			/* the concatenation of the subs; a repetition's powers */
			if (n->op == RX_REPEAT && (sub = expand_strings(n->subs[0])) == NULL)
				return NULL;
			power = strings_new(1);
			strings_add(power, "", 0, "", 0);
			for (k = 0; k < (n->op == RX_CONCAT ? n->nsubs : n->max); k++)
			{
				RxStrings  *next;

				if (n->op == RX_REPEAT && k >= n->min)
					for (j = 0; j < power->n; j++)
						strings_add(set, power->v[j], power->lens[j], "", 0);
				if (n->op == RX_CONCAT && (sub = expand_strings(n->subs[k])) == NULL)
					return NULL;
				next = strings_new((int64) power->n * sub->n);
				for (i = 0; i < power->n; i++)
					for (j = 0; j < sub->n; j++)
					{
						if (next->bytes > RX_LITERAL_BYTES_MAX)
							return NULL;
						strings_add(next, power->v[i], power->lens[i],
									sub->v[j], sub->lens[j]);
					}
				power = next;
			}
			for (j = 0; j < power->n; j++)
				strings_add(set, power->v[j], power->lens[j], "", 0);
			return set->bytes > RX_LITERAL_BYTES_MAX ? NULL : set;
		default:
			return NULL;
	}
}

/* qsort comparator for literals (NUL-free C strings): bytewise. */
static int
literal_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *) a, *(char *const *) b);
}

/*
 * Fill re->literals if the pattern matches a small finite set of strings (a
 * literal, an alternation of them, or any pattern without "." or unbounded
 * repetitions whose strings are few: host-(1|2), [ab]c?).  Text anchors
 * may begin or end a branch of the pattern's top alternation.  The literals
 * are sorted and without duplicates.
 */
static void
find_literal_set(RxNode *root, PromRegex *re, MemoryContext resultcxt)
{
	RxNode	   *n = root;
	RxNode	  **branches;
	int			nbranches;
	RxNode	   *inner;
	RxStrings  *all;
	char	  **lits;
	int			nlits = 0;
	int64		size;
	int64		total = 0;
	int			i;

	while (n->op == RX_CAPTURE)
		n = n->subs[0];
	if (n->op == RX_ALT)
	{
		branches = n->subs;
		nbranches = n->nsubs;
	}
	else
	{
		branches = &n;
		nbranches = 1;
	}
	/* the branches, without the text anchors at their ends */
	inner = palloc(sizeof(RxNode) * nbranches);
	for (i = 0; i < nbranches; i++)
	{
		RxNode	   *branch = branches[i];

		while (branch->op == RX_CAPTURE)
			branch = branch->subs[0];
		inner[i] = *branch;
		/* ^ at its start and $ at its end anchor nothing more */
		if (branch->op == RX_BOT || branch->op == RX_EOT)
			inner[i].op = RX_EMPTY;
		else if (branch->op == RX_CONCAT)
		{
			int			first = 0;
			int			last = branch->nsubs;

			while (first < last && branch->subs[first]->op == RX_BOT)
				first++;
			while (last > first && branch->subs[last - 1]->op == RX_EOT)
				last--;
			inner[i].subs = branch->subs + first;
			inner[i].nsubs = last - first;
		}
		size = language_size(&inner[i]);
		if (size < 0 || (total += size) > RX_LITERALS_MAX)
			return;				/* not a small literal set */
	}
	if (total == 0)
		return;					/* matches nothing: left to the ARE */
	all = strings_new(total);
	for (i = 0; i < nbranches; i++)
	{
		RxStrings  *sub = expand_strings(&inner[i]);
		int			j;

		if (sub == NULL || all->bytes + sub->bytes > RX_LITERAL_BYTES_MAX)
			return;
		for (j = 0; j < sub->n; j++)
			strings_add(all, sub->v[j], sub->lens[j], "", 0);
	}
	if (all->n == 0)
		return;					/* every string held a NUL: as above */
	lits = palloc(sizeof(char *) * all->n);
	for (i = 0; i < all->n; i++)
		lits[i] = all->v[i];
	qsort(lits, all->n, sizeof(char *), literal_cmp);

	re->literals = MemoryContextAlloc(resultcxt, sizeof(char *) * all->n);
	re->literal_lens = MemoryContextAlloc(resultcxt, sizeof(int) * all->n);
	for (i = 0; i < all->n; i++)
	{
		if (i > 0 && strcmp(lits[i], lits[i - 1]) == 0)
			continue;
		re->literals[nlits] = MemoryContextStrdup(resultcxt, lits[i]);
		re->literal_lens[nlits] = strlen(lits[i]);
		nlits++;
	}
	re->nliterals = nlits;
	re->is_literal_set = true;
}

/*
 * Append the literal prefix of the strings a node matches (the characters
 * every one of them begins with) to buf; returns whether the node is that
 * fixed string and nothing more, so that what follows it extends the
 * prefix.
 */
static bool
literal_prefix(RxNode *n, StringInfo buf)
{
	unsigned char utf8[8];
	int			i;

	check_stack_depth();
	switch (n->op)
	{
		case RX_CHAR:
			if (rx_impossible_char(n->ch))
				return false;
			memset(utf8, 0, sizeof(utf8));
			unicode_to_utf8((pg_wchar) n->ch, utf8);
			appendStringInfoString(buf, (char *) utf8);
			return true;
		case RX_EMPTY:
			return true;
		case RX_BOT:
			return buf->len == 0;
		case RX_CAPTURE:
			return literal_prefix(n->subs[0], buf);
		case RX_CONCAT:
			for (i = 0; i < n->nsubs; i++)
				if (!literal_prefix(n->subs[i], buf))
					return false;
			return true;
		case RX_PLUS:
			/* x+ begins with x */
			(void) literal_prefix(n->subs[0], buf);
			return false;
		case RX_REPEAT:
			if (n->min > 0)
				(void) literal_prefix(n->subs[0], buf);
			return false;
		default:
			return false;
	}
}

/*
 * Fill re->prefix with the literal prefix of every string the pattern
 * matches ("host-" for host-.*5), for a range predicate that an index can
 * serve; the prefix of the top alternation's branches is their common one.
 */
static void
find_prefix(RxNode *root, PromRegex *re, MemoryContext resultcxt)
{
	RxNode	   *n = root;
	StringInfoData buf;
	int			len = -1;
	int			i;

	while (n->op == RX_CAPTURE)
		n = n->subs[0];
	initStringInfo(&buf);
	if (n->op != RX_ALT)
	{
		(void) literal_prefix(n, &buf);
		len = buf.len;
	}
	else
	{
		char	   *first = NULL;

		for (i = 0; i < n->nsubs; i++)
		{
			int			common = 0;

			resetStringInfo(&buf);
			(void) literal_prefix(n->subs[i], &buf);
			if (first == NULL)
			{
				first = pnstrdup(buf.data, buf.len);
				len = buf.len;
				continue;
			}
			while (common < len && common < buf.len &&
				   first[common] == buf.data[common])
				common++;
			len = common;
		}
		resetStringInfo(&buf);
		if (first != NULL)
			appendBinaryStringInfo(&buf, first, len);
	}
	/* the prefix ends at a character's end */
	while (len > 0 && (buf.data[len - 1] & 0xC0) == 0x80)
		len--;
	if (len > 0 && (unsigned char) buf.data[len - 1] >= 0xC0)
		len--;
	re->prefix = MemoryContextAlloc(resultcxt, Max(len, 0) + 1);
	memcpy(re->prefix, buf.data, Max(len, 0));
	re->prefix[Max(len, 0)] = '\0';
	re->prefix_len = Max(len, 0);
}


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
	r = node_new1(RX_REPEAT, s);
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
static RxNode *
rx_simplify(RxNode *n)
{
	RxList		subs = {0, 0, NULL};
	RxNode	   *s;
	int			i;

	check_stack_depth();
	CHECK_FOR_INTERRUPTS();
	switch (n->op)
	{
		case RX_CHAR:
			return rx_impossible_char(n->ch) ? node_new(RX_NOMATCH) : n;
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
						class_add(&cls, lo, 0xD7FF);
						class_add(&cls, 0xE000, hi);
					}
					else
						class_add(&cls, lo, hi);
				}
				if (cls.n == 0)
					return node_new(RX_NOMATCH);
				if (cls.n == 2 && cls.r[0] == 1 && cls.r[1] == 0xD7FF &&
					cls.r[2] == 0xE000 && cls.r[3] == RX_MAX_RUNE)
					return node_new(RX_ANYCHAR);
				if (cls.n == 1 && cls.r[0] == cls.r[1])
				{
					s = node_new(RX_CHAR);
					s->ch = cls.r[0];
					return s;
				}
				return node_class(&cls);
			}
		case RX_CAPTURE:
			return rx_simplify(n->subs[0]);
		case RX_CONCAT:
			for (i = 0; i < n->nsubs; i++)
			{
				s = rx_simplify(n->subs[i]);
				if (s->op == RX_NOMATCH)
					return s;
				if (s->op != RX_EMPTY)
					rx_list_push(&subs, s);
			}
			return node_collect(RX_CONCAT, &subs);
		case RX_ALT:
			for (i = 0; i < n->nsubs; i++)
			{
				s = rx_simplify(n->subs[i]);
				if (s->op != RX_NOMATCH)
					rx_list_push(&subs, s);
			}
			return node_collect(RX_ALT, &subs);
		case RX_STAR:
		case RX_PLUS:
		case RX_QUEST:
		case RX_REPEAT:
			if (n->max == 0)
				return node_new(RX_EMPTY);
			s = rx_simplify(n->subs[0]);
			if (s->op == RX_NOMATCH || zero_width(s))
			{
				/* x{0,...} is empty; x{n,...} is x once (or nothing) */
				if (n->min == 0)
					return node_new(RX_EMPTY);
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
	if (rx_isalnum(c))
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
			class_add(&comp, next, 0xD7FF);
			next = 0xE000;
		}
		if (next == 0xD800)
			next = 0xE000;
		class_add(&comp, next, lo - 1);
		next = n->ranges[2 * i + 1] + 1;
	}
	if (next < 0xD800)
	{
		class_add(&comp, next, 0xD7FF);
		next = 0xE000;
	}
	if (next == 0xD800)
		next = 0xE000;
	class_add(&comp, next, RX_MAX_RUNE);

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

static void emit_node(StringInfo buf, RxNode *n, int prec);

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
	emit_node(&sub, n->subs[0], PREC_ATOM);

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
static void
emit_node(StringInfo buf, RxNode *n, int prec)
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
			emit_node(buf, n->subs[0], prec);
			break;
		case RX_CONCAT:
			if (prec == PREC_ATOM)
				appendStringInfoString(buf, "(?:");
			for (i = 0; i < n->nsubs; i++)
				emit_node(buf, n->subs[i], PREC_CONCAT);
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
				emit_node(buf, n->subs[i], PREC_ALT);
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

	root = parse_alternation(&ps);
	if (ps.p < ps.end)
		rx_invalid(&ps, "Unexpected \")\".");
	if (tree_size(root) > RX_MAX_SIZE)
		rx_invalid(&ps, "The expression is too large.");
	if (tree_height(root) > RX_MAX_HEIGHT)
		rx_invalid(&ps, "The expression nests too deeply.");

	if (ps.untrans_detail != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_REGULAR_EXPRESSION),
				 errmsg("regular expression \"%s\" cannot be translated for PostgreSQL",
						ps.patstr),
				 errdetail_internal("%s", ps.untrans_detail),
				 errhint("%s", ps.untrans_hint)));

	re->matches_empty = rx_matches_empty(root);
	find_literal_set(root, re, resultcxt);
	find_prefix(root, re, resultcxt);

	initStringInfo(&buf);
	appendStringInfoString(&buf, "^(?:");
	emit_node(&buf, rx_simplify(root), PREC_ALT);
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

/* A compiled pattern kept between calls of prom_regex_match. */
typedef struct CachedRegex
{
	text	   *pattern;
	PromRegex  *regex;
} CachedRegex;

/*
 * prom_regex_match(pattern text, value text) returns boolean
 *
 * Does a label value match a Prometheus regex matcher value, as promread
 * decides it (anchored; by its literals when it is a literal set)?  The
 * last pattern's translation is kept for the next call.
 */
Datum
prom_regex_match(PG_FUNCTION_ARGS)
{
	text	   *pattern = PG_GETARG_TEXT_PP(0);
	text	   *value = PG_GETARG_TEXT_PP(1);
	CachedRegex *cached = fcinfo->flinfo->fn_extra;

	if (cached == NULL || VARSIZE_ANY_EXHDR(cached->pattern) != VARSIZE_ANY_EXHDR(pattern) ||
		memcmp(VARDATA_ANY(cached->pattern), VARDATA_ANY(pattern),
			   VARSIZE_ANY_EXHDR(pattern)) != 0)
	{
		MemoryContext oldcxt = MemoryContextSwitchTo(fcinfo->flinfo->fn_mcxt);

		cached = palloc(sizeof(CachedRegex));
		cached->regex = PromRegexCompile(VARDATA_ANY(pattern),
										 VARSIZE_ANY_EXHDR(pattern));
		cached->pattern = (text *) pg_detoast_datum_copy((struct varlena *) pattern);
		fcinfo->flinfo->fn_extra = cached;
		MemoryContextSwitchTo(oldcxt);
	}
	PG_RETURN_BOOL(PromRegexMatch(cached->regex, VARDATA_ANY(value),
								  VARSIZE_ANY_EXHDR(value)));
}

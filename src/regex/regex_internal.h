/*-------------------------------------------------------------------------
 *
 * regex_internal.h
 *	  The regex translator's parse tree and the functions its files share:
 *	  regex_chars.c (errors, UTF-8, code-point sets, tree nodes) <-
 *	  regex_parse.c (Go's syntax) <- regex_analyze.c (limits, empty match,
 *	  literal sets, prefixes, LIKE patterns) and regex_emit.c
 *	  (simplification, the ARE)
 *	  <- prom_regex.c (the entry points).  prom_regex.c's essay describes
 *	  the whole.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PROMREAD_REGEX_INTERNAL_H
#define PROMREAD_REGEX_INTERNAL_H

#include "lib/stringinfo.h"
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
	int64		nnodes;			/* tree nodes made so far */
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

/* Errors, UTF-8 and characters, code-point sets, tree nodes (regex_chars.c) */
extern RxNode *PromRxNodeClass(RxClass *cls);
extern RxNode *PromRxNodeCollect(RxOp op, RxList *l);
extern RxNode *PromRxNodeLiteral(RxParser *ps, int32 c);
extern RxNode *PromRxNodeNew(RxOp op);
extern RxNode *PromRxNodeNew1(RxOp op, RxNode *sub);
extern bool PromRxImpossibleChar(int32 c);
extern bool PromRxIsAlnum(int32 c);
extern bool PromRxNext(RxParser *ps, int32 *r);
extern int PromRxDecode(const char *s, const char *end, int32 *r);
extern void PromRxCheckUtf8(RxParser *ps, const char *s, const char *end);
extern void PromRxClassAdd(RxClass *cls, int32 lo, int32 hi);
extern void PromRxClassAddGroup(RxParser *ps, RxClass *cls, const int32 *ranges,
								int n, bool negate);
extern void PromRxClassAddRange(RxParser *ps, RxClass *cls, int32 lo, int32 hi);
extern void PromRxClassClean(RxClass *cls);
extern void PromRxClassNegate(RxClass *cls);
extern void PromRxInvalid(RxParser *ps, const char *detail) pg_attribute_noreturn();
extern void PromRxInvalidAt(RxParser *ps, const char *what, const char *from,
							const char *to) pg_attribute_noreturn();
extern void PromRxListPush(RxList *l, RxNode *n);
extern void PromRxUntranslatable(RxParser *ps, char *detail, const char *hint);

/* The parser (regex_parse.c) */
extern RxNode *PromRxParseAlternation(RxParser *ps);

/* Limits and analysis (regex_analyze.c) */
extern bool PromRxMatchesEmpty(RxNode *n);
extern int PromRxTreeHeight(RxNode *n);
extern int64 PromRxTreeSize(RxNode *n);
extern void PromRxFindLiteralSet(RxNode *root, PromRegex *re,
							   MemoryContext resultcxt);
extern void PromRxFindPrefix(RxNode *root, PromRegex *re, MemoryContext resultcxt);
extern void PromRxFindLike(RxNode *simplified, PromRegex *re, MemoryContext resultcxt);

/* Simplification and ARE emission (regex_emit.c) */
extern RxNode *PromRxSimplify(RxNode *n);
extern void PromRxEmitNode(StringInfo buf, RxNode *n, int prec);

#endif							/* PROMREAD_REGEX_INTERNAL_H */

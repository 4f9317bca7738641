/*-------------------------------------------------------------------------
 *
 * regex_analyze.c
 *	  What a parsed regex says before it is translated: Go's size and
 *	  height limits, whether it matches "", its strings when they are few
 *	  (a literal set), and its literal prefix.
 *
 * A literal set lets a scan use "= ANY($n)" and an index; a prefix gives a
 * range an index serves.  Both are bounded (RX_LITERALS_MAX strings).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "miscadmin.h"
#include "regex/regex.h"
#include "regex_internal.h"

/* ---------------------------------------------------------------------
 * Go's size and height limits
 * ---------------------------------------------------------------------
 */

/* Go's estimate of the compiled program size (calcSize), saturating. */
int64
PromRxTreeSize(RxNode *n)
{
	int64		size = 0;
	int64		sub;
	int			i;

	check_stack_depth();
	switch (n->op)
	{
		case RX_CAPTURE:
		case RX_STAR:
			size = 2 + PromRxTreeSize(n->subs[0]);
			break;
		case RX_PLUS:
		case RX_QUEST:
			size = 1 + PromRxTreeSize(n->subs[0]);
			break;
		case RX_CONCAT:
		case RX_ALT:
			for (i = 0; i < n->nsubs; i++)
				size += PromRxTreeSize(n->subs[i]);
			if (n->op == RX_ALT)
				size += n->nsubs - 1;
			break;
		case RX_REPEAT:
			sub = PromRxTreeSize(n->subs[0]);
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
int
PromRxTreeHeight(RxNode *n)
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
				int			sub = PromRxTreeHeight(n->subs[i]);

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
				int			sub = PromRxTreeHeight(n->subs[i]);

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
bool
PromRxMatchesEmpty(RxNode *n)
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
				if (!PromRxMatchesEmpty(n->subs[i]))
					return false;
			return true;
		case RX_ALT:
			for (i = 0; i < n->nsubs; i++)
				if (PromRxMatchesEmpty(n->subs[i]))
					return true;
			return false;
		case RX_STAR:
		case RX_QUEST:
			return true;
		case RX_CAPTURE:
			return PromRxMatchesEmpty(n->subs[0]);
		case RX_PLUS:
		case RX_REPEAT:
			return n->min == 0 || PromRxMatchesEmpty(n->subs[0]);
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

/*
 * Everything an expansion allocates, counted: its sets hold every
 * repetition of a pattern like (x{1000}){1,1000} on the way to the final
 * set, so bounding each set alone does not bound their sum.  Past
 * RX_EXPANSION_BYTES_MAX the pattern is not a literal set (the ARE decides
 * it), whatever its final set would have held.
 */
#define RX_EXPANSION_BYTES_MAX	(8 * RX_LITERAL_BYTES_MAX)

typedef struct RxExpansion
{
	Size		spent;			/* bytes allocated so far, with overheads */
} RxExpansion;

/* A set of strings being expanded, with repetitions. */
typedef struct RxStrings
{
	int			n;
	Size		bytes;			/* of all the strings */
	char	  **v;				/* NUL-terminated */
	int		   *lens;
	RxExpansion *expansion;		/* charged for every allocation */
} RxStrings;

/* A set of strings, empty, with room for the given number. */
static RxStrings *
strings_new(RxExpansion *expansion, int64 capacity)
{
	RxStrings  *set = palloc(sizeof(RxStrings));

	set->n = 0;
	set->bytes = 0;
	set->v = palloc(sizeof(char *) * Max(capacity, 1));
	set->lens = palloc(sizeof(int) * Max(capacity, 1));
	set->expansion = expansion;
	expansion->spent += sizeof(RxStrings) + (sizeof(char *) + sizeof(int)) * Max(capacity, 1);
	return set;
}

/*
 * Add a string (a and b, concatenated) to a set with room for it; false,
 * adding nothing, once the expansion has spent its budget.
 */
static bool
strings_add(RxStrings *set, const char *a, int alen, const char *b, int blen)
{
	char	   *s;

	/* a chunk's header and alignment: at least 16 bytes more */
	set->expansion->spent += alen + blen + 1 + 16;
	if (set->expansion->spent > RX_EXPANSION_BYTES_MAX)
		return false;
	s = palloc(alen + blen + 1);
	memcpy(s, a, alen);
	memcpy(s + alen, b, blen);
	s[alen + blen] = '\0';
	set->v[set->n] = s;
	set->lens[set->n] = alen + blen;
	set->n++;
	set->bytes += alen + blen;
	return true;
}

/*
 * The strings a node matches, when its language_size is at most
 * RX_LITERALS_MAX (nothing larger is expanded, even under a factor that
 * matches nothing); NULL otherwise, or when the expansion passes its
 * budget (RxExpansion).
 */
static RxStrings *
expand_strings(RxExpansion *expansion, RxNode *n)
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
	set = strings_new(expansion, size);
	if (size == 0)
		return set;
	if (n->op == RX_REPEAT && n->max == 0)
		return strings_add(set, "", 0, "", 0) ? set : NULL;
	switch (n->op)
	{
		case RX_NOMATCH:
			return set;
		case RX_EMPTY:
			return strings_add(set, "", 0, "", 0) ? set : NULL;
		case RX_CHAR:
		case RX_CLASS:
			for (i = 0; i < (n->op == RX_CHAR ? 1 : n->nranges); i++)
			{
				int32		lo = n->op == RX_CHAR ? n->ch : n->ranges[2 * i];
				int32		hi = n->op == RX_CHAR ? n->ch : n->ranges[2 * i + 1];
				int32		c;

				for (c = lo; c <= hi; c++)
				{
					if (PromRxImpossibleChar(c))
						continue;
					memset(utf8, 0, sizeof(utf8));
					unicode_to_utf8((pg_wchar) c, utf8);
					if (!strings_add(set, (char *) utf8, strlen((char *) utf8), "", 0))
						return NULL;
				}
			}
			return set;
		case RX_CAPTURE:
			return expand_strings(expansion, n->subs[0]);
		case RX_QUEST:
		case RX_ALT:
			if (n->op == RX_QUEST && !strings_add(set, "", 0, "", 0))
				return NULL;
			for (i = 0; i < n->nsubs; i++)
			{
				if ((sub = expand_strings(expansion, n->subs[i])) == NULL)
					return NULL;
				for (j = 0; j < sub->n; j++)
					if (!strings_add(set, sub->v[j], sub->lens[j], "", 0))
						return NULL;
			}
			return set;
		case RX_CONCAT:
		case RX_REPEAT:
			/* the concatenation of the subs; a repetition's powers */
			if (n->op == RX_REPEAT && (sub = expand_strings(expansion, n->subs[0])) == NULL)
				return NULL;
			power = strings_new(expansion, 1);
			if (!strings_add(power, "", 0, "", 0))
				return NULL;
			for (k = 0; k < (n->op == RX_CONCAT ? n->nsubs : n->max); k++)
			{
				RxStrings  *next;

				if (n->op == RX_REPEAT && k >= n->min)
					for (j = 0; j < power->n; j++)
						if (!strings_add(set, power->v[j], power->lens[j], "", 0))
							return NULL;
				if (n->op == RX_CONCAT &&
					(sub = expand_strings(expansion, n->subs[k])) == NULL)
					return NULL;
				next = strings_new(expansion, (int64) power->n * sub->n);
				for (i = 0; i < power->n; i++)
					for (j = 0; j < sub->n; j++)
						if (!strings_add(next, power->v[i], power->lens[i],
										 sub->v[j], sub->lens[j]))
							return NULL;
				power = next;
			}
			for (j = 0; j < power->n; j++)
				if (!strings_add(set, power->v[j], power->lens[j], "", 0))
					return NULL;
			return set;
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
void
PromRxFindLiteralSet(RxNode *root, PromRegex *re, MemoryContext resultcxt)
{
	RxNode	   *n = root;
	RxNode	  **branches;
	int			nbranches;
	RxNode	   *inner;
	RxExpansion expansion = {0};
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
	all = strings_new(&expansion, total);
	for (i = 0; i < nbranches; i++)
	{
		RxStrings  *sub = expand_strings(&expansion, &inner[i]);
		int			j;

		if (sub == NULL)
			return;
		for (j = 0; j < sub->n; j++)
			if (!strings_add(all, sub->v[j], sub->lens[j], "", 0))
				return;
	}
	if (all->bytes > RX_LITERAL_BYTES_MAX)
		return;
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

/* Append a code point, in UTF-8. */
static void
append_char(StringInfo buf, int32 ch)
{
	unsigned char utf8[8];

	memset(utf8, 0, sizeof(utf8));
	unicode_to_utf8((pg_wchar) ch, utf8);
	appendStringInfoString(buf, (char *) utf8);
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
	int			i;

	check_stack_depth();
	switch (n->op)
	{
		case RX_CHAR:
			if (PromRxImpossibleChar(n->ch))
				return false;
			append_char(buf, n->ch);
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
void
PromRxFindPrefix(RxNode *root, PromRegex *re, MemoryContext resultcxt)
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

/* The longest LIKE pattern made: a longer one is left to the ARE. */
#define LIKE_MAX_BYTES 65536

/*
 * Append to buf the LIKE pattern of a simplified node (its repetitions are
 * RX_REPEAT) made of characters and "." (any character: Prometheus's "."
 * matches a newline too), "." repeated at least n times (.* and .+) and
 * either repeated exactly n times; returns false for any other node.
 * LIKE's "_" is one character and "%" any run of them, in a UTF8 database
 * as here.
 */
static bool
like_pattern(RxNode *n, StringInfo buf)
{
	int			i;

	check_stack_depth();
	switch (n->op)
	{
		case RX_EMPTY:
			return true;
		case RX_CHAR:
			if (PromRxImpossibleChar(n->ch))
				return false;
			if (n->ch == '%' || n->ch == '_' || n->ch == '\\')
				appendStringInfoChar(buf, '\\');
			append_char(buf, n->ch);
			return true;
		case RX_ANYCHAR:
			appendStringInfoChar(buf, '_');
			return true;
		case RX_CONCAT:
			for (i = 0; i < n->nsubs; i++)
				if (!like_pattern(n->subs[i], buf))
					return false;
			return true;
		case RX_REPEAT:
			/* x{n} is x n times, .{n,} n "_" and a "%"; no other repetition */
			if (n->max != n->min && (n->max != -1 || n->subs[0]->op != RX_ANYCHAR))
				return false;
			for (i = 0; i < n->min; i++)
				if (!like_pattern(n->subs[0], buf) || buf->len > LIKE_MAX_BYTES)
					return false;
			if (n->max == -1)
				appendStringInfoChar(buf, '%');
			return true;
		default:
			return false;
	}
}

/*
 * Fill re->like with the LIKE pattern that accepts exactly the strings the
 * (simplified) pattern matches, as host-%5 for host-.*5, or NULL when there
 * is none: a row's LIKE costs a fraction of the ARE's, whose DFA is built
 * again at every call.
 */
void
PromRxFindLike(RxNode *simplified, PromRegex *re, MemoryContext resultcxt)
{
	StringInfoData buf;

	initStringInfo(&buf);
	re->like = NULL;
	if (like_pattern(simplified, &buf))
		re->like = (text *) MemoryContextAlloc(resultcxt, VARHDRSZ + buf.len);
	if (re->like != NULL)
	{
		SET_VARSIZE(re->like, VARHDRSZ + buf.len);
		memcpy(VARDATA(re->like), buf.data, buf.len);
	}
}

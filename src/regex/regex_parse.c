/*-------------------------------------------------------------------------
 *
 * regex_parse.c
 *	  Parsing a regex in Go's RE2 syntax into a tree (prom_regex.c, step 1).
 *
 * A recursive-descent parser following Go 1.19's regexp/syntax: flags,
 * groups, repeats with Go's limits, escapes, and the Perl, POSIX and
 * Unicode classes, which it rejects when no exact ARE exists (step 2).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "miscadmin.h"
#include "regex_internal.h"

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
	if (!PromRxNext(ps, &c))
		PromRxInvalid(ps, "Trailing backslash at end of expression.");

	if (c < 0x80 && !PromRxIsAlnum(c))
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

				if (!PromRxNext(ps, &d))
					break;
				if (d == '{')
				{
					int			nhex = 0;

					r = 0;
					for (;;)
					{
						int			v;

						if (!PromRxNext(ps, &d))
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
				y = PromRxNext(ps, &d) ? PromHexDigit(d) : -1;
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
	PromRxInvalidAt(ps, "Invalid escape sequence", start, ps->p);
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
			PromRxCheckUtf8(ps, start, ps->end);
			PromRxInvalidAt(ps, "Unterminated Unicode character class", start,
							ps->end);
		}
		name = ps->p + 1;
		name_end = close;
		seq_end = close + 1;
		PromRxCheckUtf8(ps, name, name_end);
	}
	else
	{
		/* one-letter name (possibly none at the end of the pattern) */
		name = ps->p;
		PromRxNext(ps, &c);
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
			PromRxClassAdd(cls, 0, RX_MAX_RUNE);
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
		PromRxInvalidAt(ps, "Unknown Unicode character class", start, seq_end);

	PromRxUntranslatable(ps,
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
	PromRxClassAddGroup(ps, cls, ranges, n, ps->p[1] < 'a');
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
			PromRxClassAddGroup(ps, cls, nc->ranges, nc->nranges, negate);
			ps->p = close + 2;
			return true;
		}
	}
	PromRxInvalidAt(ps, "Unknown character class", s, close + 2);
}

/* One character inside brackets (cursor there), escapes allowed. */
static int32
parse_class_char(RxParser *ps)
{
	int32		c;

	if (ps->p >= ps->end)
		PromRxInvalid(ps, "Missing closing \"]\".");
	if (*ps->p == '\\')
		return parse_escape(ps);
	PromRxNext(ps, &c);
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
				PromRxInvalidAt(ps, "Invalid character class range",
								rng, ps->p);
		}
		PromRxClassAddRange(ps, &cls, lo, hi);
	}
	ps->p++;					/* the "]" */
	PromRxClassClean(&cls);
	if (negate)
		PromRxClassNegate(&cls);
	return PromRxNodeClass(&cls);
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
 * Count the nodes the parser makes, and stop at more than RX_MAX_SIZE: such
 * a tree takes gigabytes to build whole, and is too large for Go's limit
 * anyway unless x{0} or x{1} repetitions shrink its size below its count.
 */
static void
count_nodes(RxParser *ps, int n)
{
	ps->nnodes += n;
	if (ps->nnodes > RX_MAX_SIZE)
		PromRxInvalid(ps, "The expression is too large.");
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
	sub = PromRxParseAlternation(ps);
	if (ps->p >= ps->end)
		PromRxInvalid(ps, "Missing closing \")\".");
	ps->p++;					/* the ")" */
	ps->flags = saved;
	if (!capture)
		return sub;
	count_nodes(ps, 1);
	return PromRxNodeNew1(RX_CAPTURE, sub);
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
			PromRxCheckUtf8(ps, s, ps->end);
			PromRxInvalidAt(ps, "Invalid named capture", s, ps->end);
		}
		PromRxCheckUtf8(ps, s + 4, gt);
		if (gt == s + 4)
			PromRxInvalidAt(ps, "Invalid named capture", s, gt + 1);
		for (q = s + 4; q < gt; q++)
			if (*q != '_' && !PromRxIsAlnum((unsigned char) *q))
				PromRxInvalidAt(ps, "Invalid named capture", s, gt + 1);
		ps->p = gt + 1;
		return parse_group(ps, true, ps->flags);
	}

	ps->p += 2;
	while (PromRxNext(ps, &c))
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
	PromRxInvalidAt(ps, "Invalid or unsupported Perl syntax", s, ps->p);
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
				item = PromRxNodeNew((ps->flags & RXF_MULTILINE) ? RX_BOL : RX_BOT);
				ps->p++;
				break;
			case '$':
				item = PromRxNodeNew((ps->flags & RXF_MULTILINE) ? RX_EOL : RX_EOT);
				ps->p++;
				break;
			case '.':
				if (ps->flags & RXF_DOTNL)
					item = PromRxNodeNew(RX_ANYCHAR);
				else
				{
					PromRxClassAdd(&cls, 0, '\n' - 1);
					PromRxClassAdd(&cls, '\n' + 1, RX_MAX_RUNE);
					item = PromRxNodeClass(&cls);
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
							item = PromRxNodeLiteral(ps, '{');
							ps->p++;
							break;
						}
						if (min < 0 || min > RX_MAX_REPEAT ||
							max > RX_MAX_REPEAT || (max >= 0 && min > max))
							PromRxInvalidAt(ps, "Invalid repeat count",
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
						PromRxInvalidAt(ps, "Invalid nested repetition operator",
										last_repeat, after);
					if (items.n == 0)
						PromRxInvalidAt(ps, "Missing argument to repetition operator",
										tok, after);
					count_nodes(ps, 1);
					rep = PromRxNodeNew1(op, items.v[items.n - 1]);
					rep->min = min;
					rep->max = max;
					if (op == RX_REPEAT && (min >= 2 || max >= 2) &&
						!repeat_is_valid(rep, RX_MAX_REPEAT))
						PromRxInvalidAt(ps, "Invalid repeat count", tok, after);
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
							item = PromRxNodeNew(RX_BOT);
							ps->p += 2;
							break;
						case 'z':
							item = PromRxNodeNew(RX_EOT);
							ps->p += 2;
							break;
						case 'b':
							item = PromRxNodeNew(RX_WORDB);
							ps->p += 2;
							break;
						case 'B':
							item = PromRxNodeNew(RX_NWORDB);
							ps->p += 2;
							break;
						case 'C':
							/* "any byte": Go does not support it */
							PromRxInvalidAt(ps, "Invalid escape sequence",
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
									int			n = PromRxDecode(ps->p, stop, &c);

									if (n <= 0)
										PromRxInvalid(ps, "The pattern is not valid UTF-8.");
									ps->p += n;
									count_nodes(ps, 1);
									PromRxListPush(&items, PromRxNodeLiteral(ps, c));
								}
								if (stop < ps->end)
									ps->p = stop + 2;
							}
							break;
						case 'p':
						case 'P':
							parse_unicode_class(ps, &cls);
							PromRxClassClean(&cls);
							item = PromRxNodeClass(&cls);
							break;
						default:
							if (parse_perl_class(ps, &cls))
							{
								PromRxClassClean(&cls);
								item = PromRxNodeClass(&cls);
							}
							break;
					}
					if (item != NULL || ps->p != tok)
						break;
				}
				item = PromRxNodeLiteral(ps, parse_escape(ps));
				break;
			default:
				PromRxNext(ps, &c);
				item = PromRxNodeLiteral(ps, c);
				break;
		}
		if (item != NULL)
		{
			/* a group's nodes were counted as it was parsed */
			if (*tok != '(')
				count_nodes(ps, 1);
			PromRxListPush(&items, item);
		}
		last_repeat = repeat;
	}
	count_nodes(ps, items.n != 1);
	return PromRxNodeCollect(RX_CONCAT, &items);
}

/* Parse an alternation, up to ")" or the end of the pattern. */
RxNode *
PromRxParseAlternation(RxParser *ps)
{
	RxList		branches = {0, 0, NULL};

	check_stack_depth();
	PromRxListPush(&branches, parse_concat(ps));
	while (ps->p < ps->end && *ps->p == '|')
	{
		ps->p++;
		PromRxListPush(&branches, parse_concat(ps));
	}
	count_nodes(ps, branches.n != 1);
	return PromRxNodeCollect(RX_ALT, &branches);
}

// gen_cases.go writes the differential test cases for promread's translation
// of Prometheus regular expressions into PostgreSQL AREs (src/regex/prom_regex.c).
//
// Regenerate cases.tsv with Debian 12's Go 1.19 (package golang-go), from
// the repository root:
//
//	cd test/regex && go run gen_cases.go > cases.tsv
//
// (-seed and -random choose other random patterns, for stress runs; the
// committed file uses the defaults.)
//
// Go's own regexp package is the reference: a pattern is rejected as
// Prometheus 3 rejects it (regexp/syntax.Parse with Perl|DotNL), and a
// subject matches when regexp.Compile("^(?s:" + pattern + ")$") matches it.
// The list of patterns is deterministic: hand-picked edge cases for every
// construct, then seeded random patterns built from a small grammar.
//
// Output, in PostgreSQL COPY text format, one line per (pattern, subject):
//
//	pattern <TAB> subject <TAB> t|f
//
// or, once per pattern Go rejects:
//
//	pattern <TAB> \N <TAB> error
package main

import (
	"bufio"
	"flag"
	"fmt"
	"math/rand"
	"os"
	"regexp"
	"regexp/syntax"
	"strings"
	"unicode/utf8"
)

// baseSubjects are tried against every hand-picked pattern.
var baseSubjects = []string{
	"", "a", "b", "c", "ab", "ba", "abc", "aa", "aaa", "aab", "A", "AB", "Ab",
	"k", "K", "\u212a", "s", "S", "\u017f", "ks", "KS", "\u212a\u017f",
	"\n", "a\n", "\na", "a\nb", "\n\n", "\t", "\v", "\f", "\r", " ", "a b",
	"x", "xyz", "0", "9", "42", "_", "a_b", "-", ".", "a.c", "é", "É", "日",
	"日本", "😀", "a😀b", "{", "}", "[", "]", "\\", "*", "ok", "OK", "oK",
	"foo", "foo.bar", "fooxbar", "bar", "\x01", "\x7f", "\u0100",
	"aaaaaaaaaaaaaaaaaaaa",
}

// handPicked are edge cases for every construct, with extra subjects.
var handPicked = []struct {
	p     string
	extra []string
}{
	// literals, UTF-8
	{"", nil}, {"a", nil}, {"abc", nil}, {"é", nil}, {"日本", nil}, {"😀", nil},
	{"a😀b", nil}, {"\u212a", nil}, {"\u017f", nil}, {"a\nb", nil},
	{"a\tb", []string{"a\tb"}}, {"\u0100", nil}, {"ok", nil},
	// any character
	{".", nil}, {"..", nil}, {".*", nil}, {".+", nil}, {"a.c", nil},
	{"(?s).", nil}, {"(?-s).", nil}, {"(?-s).*", nil}, {"(?-s:.)a", nil},
	{"(?s-s).", nil}, {"(?-s)[^a]", nil}, {"(?-s)\\D", nil},
	{"(?-s).(?s).", []string{"a\n", "\na"}},
	// anchors
	{"^", nil}, {"$", nil}, {"^a", nil}, {"a$", nil}, {"^a$", nil},
	{"a^", nil}, {"$a", nil}, {"\\Aa\\z", nil}, {"a\\z", nil}, {"\\A", nil},
	{"\\z", nil}, {"^$", nil}, {"^*", nil}, {"$*", nil}, {"^+a", nil},
	{"a^b", nil}, {"a$b", nil}, {"(^a|b$)", nil}, {"^foo$|^bar$", nil},
	{"(?m)^a", nil}, {"(?m)a$", nil}, {"(?m)^a$", nil}, {"(?m)^", nil},
	{"(?m)$", nil}, {"(?m)a$\\n^b", nil}, {"(?m)\\Aa", nil},
	{"(?m)a\\z", nil}, {".*(?m)^b", []string{"a\nb", "ab"}},
	{"(?m)^$", nil}, {"(?m)(?:^)*a", nil}, {"(?m)a$\n", nil},
	{"(?m:^a$)\\n?b?", nil}, {"(?m).*^b.*", []string{"a\nb", "ab\n"}},
	{"(?m)(a$|^b)+", []string{"a\nb", "ab"}}, {"(?m)^\\n$", nil},
	{"(?m)$\\n*^", nil}, {"(?-m)^a$", nil}, {"(?m)(?-m:^a)", nil},
	// word boundaries
	{"\\b", nil}, {"\\B", nil}, {"\\ba", nil}, {"a\\b", nil},
	{"\\ba\\b", nil}, {"a\\Bb", nil}, {"\\b.*\\b", nil}, {".\\b.", nil},
	{".\\B.", nil}, {"é\\b", nil}, {"\\bé", nil}, {"\\b*", nil},
	{"\\B+", nil}, {"(?:\\b)*a", nil}, {"a\\b(?:.)", nil}, {"_\\b", nil},
	{"(?i)k\\b", nil}, {"\\b\\B", nil}, {"a\\b\\n", nil}, {"\\bfoo\\b", nil},
	{".*\\bbar", []string{"foo bar", "foobar", "foo.bar"}},
	// alternation
	{"a|b", nil}, {"a|b|", nil}, {"|a", nil}, {"|", nil}, {"a||b", nil},
	{"ab|cd", []string{"cd"}}, {"(a|b)c", nil}, {"a|(b|c)", nil},
	{"(?:x|yz)", []string{"yz"}}, {"((a|b))", nil}, {"(a)|b", nil},
	{"a|\\x00", nil}, {"\\x00|", nil}, {"\\x00*", nil}, {"\\x00+", nil},
	{"\\x00?a", nil}, {"a\\x00", nil}, {"foo|bar", nil},
	{"foo|foo|bar", nil}, {"a|ab|abc", nil}, {"k|K", nil},
	// groups
	{"(a)", nil}, {"(?:a)", nil}, {"(?P<name>a)", nil},
	{"(?P<n1>a)(?P<n1>b)", nil}, {"(?<name>a)", nil}, {"(?P<>a)", nil},
	{"(?P<a-b>x)", nil}, {"(?P<é>x)", nil}, {"(?P<a", nil}, {"(?P<", nil},
	{"(?P=a)", nil}, {"(?P>a)", nil}, {"()", nil}, {"(?:)", nil},
	{"(()|a)", nil}, {"(?:)*", nil}, {"()+", nil}, {"(a(b(c)))", nil},
	{"(a", nil}, {"a)", nil}, {")", nil}, {"(", nil}, {"((a)", nil},
	{"(a))", nil}, {"a)|(b", nil}, {"(?:a", nil}, {"(?i:a", nil},
	// flags
	{"(?i)a", nil}, {"(?i)abc", nil}, {"(?i:a)b", nil}, {"a(?i)b", nil},
	{"(?i)k", nil}, {"(?i)s", nil}, {"(?i)K", nil}, {"(?i)S", nil},
	{"(?i)[k]", nil}, {"(?i)[^k]", nil}, {"(?i)[a-z]", nil},
	{"(?i)[^a-z]", nil}, {"(?i)[k-s]", nil}, {"(?i)\\w", nil},
	{"(?i)\\W", nil}, {"(?i)[[:upper:]]", nil}, {"(?i)[[:^lower:]]", nil},
	{"(?i)[^[:lower:]]", nil}, {"(?i)[\\W]", nil}, {"(?i)[^\\w]", nil},
	{"(?i)\\x{212A}", nil}, {"(?i)\\x{17F}", nil}, {"(?i)[\\x{212A}]", nil},
	{"(?i)[^\\x{17F}]", nil}, {"(?i)é", nil}, {"(?i)[à-ÿ]", nil},
	{"(?i)😀", nil}, {"(?i)[\\x00-\\x{10FFFF}]", nil},
	{"(?i)[\\x{1F000}-\\x{1FFFF}]", nil}, {"(?i)[\\x{80}-\\x{10FFFF}]", nil},
	{"(?i)日", nil}, {"(?i)1", nil}, {"(?i)-", nil}, {"(?i)a|b", nil},
	{"(?i-i)a", nil}, {"(?-i)a", nil}, {"(?i)(?-i)a", nil},
	{"(?i:a(?-i)b)c", nil}, {"(?i)a(?-i:b)c", nil}, {"(?i:a|b)|c", nil},
	{"(a(?i)b|c)d", []string{"aBd", "Cd", "cd", "ABd"}}, {"(?U)a*", nil},
	{"(?U)a*?", nil}, {"(?im)^a", nil}, {"(?ims-U)a", nil}, {"(?)", nil},
	{"(?)a", nil}, {"(?-)", nil}, {"(?i-)", nil}, {"(?--i)", nil},
	{"(?x)", nil}, {"(?i", nil}, {"(?", nil}, {"(?i)", nil}, {"(?i)*", nil},
	{"a(?i)*", nil}, {"a*(?i)*", nil}, {"a(?i)+b", nil}, {"(?#c)", nil},
	{"(?=a)", nil}, {"(?!a)", nil}, {"(?<=a)", nil}, {"(?<!a)", nil},
	{"(?>a)", nil}, {"(?|a)", nil}, {"(?s:.)", nil}, {"(?-s:.)", nil},
	{"(?i)ok", nil}, {"(?i)error|warn", []string{"ERROR", "Warn", "err"}},
	{"(?i)\\Qa.B\\E", []string{"A.b", "aXb"}}, {"(?i)[k-k]", nil},
	{"(?i)[^\\x00-\\x{10FFFF}]", nil}, {"(?i)\\d", nil}, {"(?i)\\S", nil},
	{"(?i)[[:word:]]+", nil}, {"(?i)[[:^word:]]", nil},
	// repetitions
	{"a*", nil}, {"a+", nil}, {"a?", nil}, {"a*?", nil}, {"a+?", nil},
	{"a??", nil}, {"a**", nil}, {"a*+", nil}, {"a+*", nil}, {"a???", nil},
	{"a{2}", nil}, {"a{2,}", nil}, {"a{2,3}", nil}, {"a{0}", nil},
	{"a{0,}", nil}, {"a{0,0}", nil}, {"a{1}", nil}, {"a{,3}", []string{"a{,3}"}},
	{"a{", []string{"a{"}}, {"a{2", []string{"a{2"}}, {"a{2,", nil},
	{"a{2,3", nil}, {"a{x}", nil}, {"a{01}", []string{"a{01}"}},
	{"a{1,01}", nil}, {"{", nil}, {"{}", nil}, {"a{}", nil}, {"{2}", nil},
	{"a{2}{3}", nil}, {"a{2}*", nil}, {"a{2}?", nil}, {"a{2}??", nil},
	{"a{2}{", []string{"aa{"}}, {"a*{2}", nil}, {"a{1000}", []string{strings.Repeat("a", 1000), strings.Repeat("a", 999)}},
	{"a{1001}", nil}, {"a{1000,}", []string{strings.Repeat("a", 1000), strings.Repeat("a", 1200), strings.Repeat("a", 999)}},
	{"a{0,1000}", []string{strings.Repeat("a", 1000), strings.Repeat("a", 1001)}},
	{"a{2,1}", nil}, {"a{99999999999}", nil}, {"a{1,99999999999}", nil},
	{"(a{100}){10}", []string{strings.Repeat("a", 1000)}}, {"(a{100}){11}", nil},
	{"(a{10}){10}{10}", nil}, {"((a{10}){10}){10}", []string{strings.Repeat("a", 1000)}},
	{"((a{10}){10}){11}", nil}, {"(a*){1000}", nil}, {"(a{2}){0}", nil},
	{"((a{2}){1}){600}", nil}, {"(a+){1000}b", nil},
	{"a{255}", []string{strings.Repeat("a", 255), strings.Repeat("a", 256)}},
	{"a{256}", []string{strings.Repeat("a", 255), strings.Repeat("a", 256), strings.Repeat("a", 257)}},
	{"a{300}", []string{strings.Repeat("a", 299), strings.Repeat("a", 300), strings.Repeat("a", 301)}},
	{"a{254,256}", []string{strings.Repeat("a", 253), strings.Repeat("a", 254), strings.Repeat("a", 256), strings.Repeat("a", 257)}},
	{"a{0,600}", []string{strings.Repeat("a", 600), strings.Repeat("a", 601), strings.Repeat("a", 300)}},
	{"a{300,}", []string{strings.Repeat("a", 299), strings.Repeat("a", 300), strings.Repeat("a", 700)}},
	{"a{300,301}", []string{strings.Repeat("a", 299), strings.Repeat("a", 300), strings.Repeat("a", 301), strings.Repeat("a", 302)}},
	{"(?:ab){300}", []string{strings.Repeat("ab", 300), strings.Repeat("ab", 299)}},
	{"(?:a|bc){2,260}", []string{strings.Repeat("bc", 260), strings.Repeat("a", 261)}},
	{"x{3}{", nil}, {"*", nil}, {"+", nil}, {"?", nil}, {"a|*", nil},
	{"(*)", nil}, {"(+a)", nil}, {"^*a", nil}, {"()*", nil}, {"\\b{2}", nil},
	{"$+", nil}, {"(?:a|)*", nil}, {"(a|b)*c", nil}, {"(a+)+", nil},
	{"(a*)*b", nil}, {"(a?){3}", nil}, {".{3}", nil}, {"[ab]{2,3}", nil},
	{"(?:a*)+", nil}, {"(?:a?b?)*c", nil}, {"(?:^a)*", nil}, {"(?:a$)+", nil},
	{"(?:\\ba)+", []string{"aa", "a"}}, {"(?:a\\b|b)*", []string{"ab", "ba"}},
	// escapes
	{"\\a", []string{"\a"}}, {"\\f", nil}, {"\\t", nil}, {"\\n", nil},
	{"\\r", nil}, {"\\v", nil}, {"\\x41", nil}, {"\\x4", nil}, {"\\x4g", nil},
	{"\\x", nil}, {"\\x{41}", nil}, {"\\x{0041}", nil}, {"\\x{}", nil},
	{"\\x{10FFFF}", []string{"\U0010ffff"}}, {"\\x{110000}", nil},
	{"\\x{D800}", nil}, {"\\x{FFFFFFFFF}", nil}, {"\\x{41", nil},
	{"\\x{6b}", nil}, {"\\x{212A}", nil}, {"\\x{1F600}", nil}, {"\\101", nil},
	{"\\0", nil}, {"\\00", nil}, {"\\000", nil}, {"\\0000", nil},
	{"\\08", nil}, {"\\1", nil}, {"\\12", nil}, {"\\18", nil}, {"\\123", nil},
	{"\\1234", []string{"S4"}}, {"\\377", []string{"ÿ"}},
	{"\\400", []string{"Ā"}}, {"\\7", nil}, {"\\8", nil}, {"\\9", nil},
	{"\\Q.*\\E", []string{".*"}}, {"\\Q.*", []string{".*"}},
	{"\\Qa\\E*", nil}, {"a\\Q\\E*", nil}, {"\\Q\\E*", nil}, {"\\Q\\Eb", nil},
	{"\\Qa\\\\E", []string{"a\\"}}, {"\\Qab\\E+", []string{"abb", "abab"}},
	{"\\Q\\E", nil}, {"\\Qa|b\\E", []string{"a|b"}}, {"\\.", nil},
	{"\\*", nil}, {"\\\\", nil}, {"\\-", nil}, {"\\_", nil}, {"\\ ", nil},
	{"\\#", nil}, {"\\~", nil}, {"\\é", nil}, {"\\q", nil}, {"\\Z", nil},
	{"\\C", nil}, {"\\e", nil}, {"\\G", nil}, {"\\K", nil}, {"\\N", nil},
	{"\\cA", nil}, {"\\", nil}, {"a\\", nil}, {"\\<", nil}, {"\\%", nil},
	{"\\/", nil}, {"\\:", nil}, {"\\@", nil}, {"\\{", nil}, {"\\}", nil},
	{"\\[", nil}, {"\\]", nil}, {"\\(", nil}, {"\\)", nil}, {"\\|", nil},
	{"\\^", nil}, {"\\$", nil}, {"\\+", nil}, {"\\?", nil}, {"\\\n", nil},
	{"foo\\.bar", nil}, {"\\d\\.\\d", []string{"1.2", "1x2"}},
	// Perl classes
	{"\\d", nil}, {"\\D", nil}, {"\\s", nil}, {"\\S", nil}, {"\\w", nil},
	{"\\W", nil}, {"\\d+", nil}, {"\\s*", nil}, {"[\\d]", nil}, {"[^\\d]", nil},
	{"[\\D]", nil}, {"[^\\D]", nil}, {"[\\s\\S]", nil}, {"[\\w-]", nil},
	{"[\\d-z]", nil}, {"[a-\\d]", nil}, {"\\d\\w\\s", []string{"1a ", "1_\t"}},
	{"\\s+", []string{" \t\n\f\r", "\v"}},
	// brackets
	{"[a]", nil}, {"[ab]", nil}, {"[^ab]", nil}, {"[a-c]", nil},
	{"[^a-c]", nil}, {"[]a]", nil}, {"[^]a]", nil}, {"[]", nil}, {"[^]", nil},
	{"[a", nil}, {"[a-]", nil}, {"[-a]", nil}, {"[a-b-c]", nil}, {"[z-a]", nil},
	{"[a-a]", nil}, {"[\\]]", nil}, {"[\\\\]", nil}, {"[\\-]", nil},
	{"[\\^]", nil}, {"[^^]", nil}, {"[\\n]", nil}, {"[^\\n]", nil},
	{"[.]", nil}, {"[*]", nil}, {"[$]", nil}, {"[é]", nil}, {"[é-ê]", nil},
	{"[^é]", nil}, {"[日-本]", nil}, {"[😀]", nil}, {"[\\x00-\\x{10FFFF}]", nil},
	{"[^\\x00-\\x{10FFFF}]", nil}, {"[^\\x00-\\x{10FFFF}]*", nil},
	{"[\\x{80}-\\x{10FFFF}]", nil}, {"[\\x00]", nil}, {"[^\\x00]", nil},
	{"[\\x00a]", nil}, {"[\\x{D800}-\\x{DFFF}]", nil},
	{"[\\x{D7FF}-\\x{E000}]", []string{"\ud7ff", "\ue000"}},
	{"[^\\x{D7FF}-\\x{E000}]", []string{"\ud7ff", "\ue000"}},
	{"[[:alpha:]]", nil}, {"[[:^alpha:]]", nil}, {"[[:alnum:]]", nil},
	{"[[:ascii:]]", nil}, {"[[:blank:]]", nil}, {"[[:cntrl:]]", nil},
	{"[[:digit:]]", nil}, {"[[:graph:]]", nil}, {"[[:lower:]]", nil},
	{"[[:print:]]", nil}, {"[[:punct:]]", nil}, {"[[:space:]]", nil},
	{"[[:upper:]]", nil}, {"[[:word:]]", nil}, {"[[:xdigit:]]", nil},
	{"[[:foo:]]", nil}, {"[[:alpha:]", nil}, {"[[:a]", []string{"["}},
	{"[[:a]b:]]", nil}, {"[[:^space:]]", nil}, {"[^[:space:]]", nil},
	{"[[:space:]a]", nil}, {"[:alpha:]", nil}, {"[[.a.]]", nil},
	{"[[=a=]]", nil}, {"[\\b]", nil}, {"[\\Q]", nil}, {"[\\pL]", nil},
	{"[\\p{Any}]", nil}, {"[^\\p{Any}]", nil}, {"[\\P{Any}a]", nil},
	{"[a-\\x{10FFFF}]", nil}, {"[\\x41-\\x5a]", nil}, {"[\\101-\\132]", nil},
	{"[\\.-\\/]", nil}, {"[a\\-z]", nil}, {"[\\t-\\r]", nil}, {"[ -~]", nil},
	{"[^ -~]", nil}, {"[\n]", nil}, {"[^\\s\\S]", nil}, {"[[:^ascii:]]", nil},
	{"[\\x{1F600}-\\x{1F64F}]", nil}, {"[^a-z0-9]", nil}, {"[-]", nil},
	{"[^-]", nil}, {"[a-z-]", nil}, {"[%--]", nil}, {"[\\d\\D]", nil},
	// Unicode classes
	{"\\pL", nil}, {"\\p{L}", nil}, {"\\p{Greek}", nil}, {"\\PL", nil},
	{"\\P{Greek}", nil}, {"\\p{^Greek}", nil}, {"\\p{Foo}", nil},
	{"\\pX", nil}, {"\\p", nil}, {"\\p{", nil}, {"\\p{L", nil},
	{"\\p{Any}", nil}, {"\\P{Any}", nil}, {"\\p{^Any}", nil},
	{"\\P{^Any}", nil}, {"\\p{Any}*", nil}, {"a|\\P{Any}", nil},
	{"\\pN", nil}, {"[\\p{Han}]", nil}, {"\\p{Cs}", nil},
	{"(?i)\\p{Any}", nil}, {"\\p{greek}", nil}, {"\\p{}", nil},
	// typical Prometheus matchers
	{"foo", nil}, {"foo.*", nil}, {".*foo.*", []string{"xfooy"}},
	{"api_(get|post)", []string{"api_get", "api_put"}},
	{"5..", []string{"500", "404"}}, {"prod-.*|staging", []string{"prod-1", "staging"}},
	{"[a-z]+_total", []string{"http_total", "x_total"}},
	{"node_.*_bytes", []string{"node_mem_bytes", "node_bytes"}},
	{"/api/v[0-9]+/.*", []string{"/api/v1/query", "/api/x/"}},
	{"10\\.0\\.0\\.[0-9]{1,3}", []string{"10.0.0.1", "10.0.0.1000", "10x0.0.1"}},
	{".+", nil}, {".*-(a|b)$", []string{"x-a", "x-c"}}, {"^(foo|bar)$", nil},
	{"^foo|bar$", nil}, {"(?s)foo.bar", []string{"foo\nbar"}},
	{"[[:alpha:]_][[:alnum:]_]*", []string{"_x1", "1x"}},
}

// Alphabet for random subjects.
var subjectAlphabet = []rune("abcksABKS01_- .\n\t\vé日😀ſ\u212ax{}[]\\*")

// A node of a randomly generated pattern, kept to sample matching strings.
type node struct {
	text  string // pattern text
	chars []rune // leaf: characters it may match (for sampling)
	subs  []*node
	alt   bool // subs are alternatives (else concatenated)
	min   int  // repetition of subs[0] when max != 0
	max   int  // -1 for no limit, 0 when not a repetition
}

type gen struct {
	r        *rand.Rand
	foldable bool // the pattern may use (?i): no non-ASCII literals then
}

type atom struct {
	text  string
	chars string
}

var asciiAtoms = []atom{
	{"a", "a"}, {"b", "b"}, {"c", "c"}, {"k", "kK\u212a"}, {"s", "sS\u017f"},
	{"K", "Kk"}, {"S", "Ss"}, {"x", "x"}, {"0", "0"}, {"1", "1"}, {"_", "_"},
	{"-", "-"}, {" ", " "}, {"\\.", "."}, {"\\*", "*"}, {"\\\\", "\\"},
	{"\\{", "{"}, {"\\[", "["}, {"\\n", "\n"}, {"\\t", "\t"}, {"\\v", "\v"},
	{"\\x41", "A"}, {"\\x{6B}", "kK"}, {"\\101", "A"}, {"\\Q.*\\E", "."},
	{"\\Qa|b\\E", "a"}, {".", "a\n"}, {"\\d", "01"}, {"\\D", "a\n"},
	{"\\s", " \n\t"}, {"\\S", "a\v"}, {"\\w", "a_0"}, {"\\W", "- "},
	{"[ab]", "ab"}, {"[^ab]", "c\n"}, {"[a-c]", "abc"}, {"[^a-c]", "k\n"},
	{"[k]", "k\u212a"}, {"[^k]", "\u212aa"}, {"[s-t]", "s\u017f"}, {"[K]", "K"},
	{"[[:alpha:]]", "aK"}, {"[[:^alpha:]]", "0\u212a"}, {"[[:space:]]", " \v"},
	{"[[:word:]]", "a_"}, {"[[:punct:]]", "-."}, {"[\\d]", "0"}, {"[^\\d]", "a"},
	{"[\\w-]", "-a"}, {"[^\\W]", "a"}, {"[a-]", "a-"}, {"[-a]", "-"},
	{"[]a]", "]a"}, {"[^]a]", "b"}, {"[^\\n]", "a\n"},
	{"[\\x00-\\x{10FFFF}]", "aé"}, {"[^\\x00-\\x{10FFFF}]", "a"}, {"[.]", "."},
	{"[*]", "*"}, {"[\\]]", "]"}, {"[\\\\]", "\\"}, {"[^-]", "a-"},
	{"😀", "😀"}, {"\\x{1F600}", "😀"}, {"\\x00", "a"}, {"\\p{Any}", "a\n"},
	{"{", "{"}, {"a{,2}", "a"},
}

var nonASCIIAtoms = []atom{
	{"é", "éÉ"}, {"日", "日"}, {"ſ", "ſsS"}, {"\u212a", "\u212akK"},
	{"\\x{212A}", "\u212ak"}, {"[é-ê]", "éê"}, {"[^é]", "éa"},
	{"[\\x{80}-\\x{10FFFF}]", "é😀a"},
}

var assertions = []string{"^", "$", "\\A", "\\z", "\\b", "\\B"}

var groupOpen = []string{"(", "(?:", "(?P<n1>", "(?i:", "(?-i:", "(?s:",
	"(?-s:", "(?m:", "(?U:", "(?im-s:", "(?i-m:"}

var flagSets = []string{"(?i)", "(?-i)", "(?m)", "(?-m)", "(?s)", "(?-s)",
	"(?U)", "(?i-s)", "(?ms)"}

var repeats = []struct {
	text     string
	min, max int
}{
	{"*", 0, -1}, {"+", 1, -1}, {"?", 0, 1}, {"*?", 0, -1}, {"+?", 1, -1},
	{"??", 0, 1}, {"{0}", 0, 0}, {"{1}", 1, 1}, {"{2}", 2, 2}, {"{0,}", 0, -1},
	{"{1,}", 1, -1}, {"{2,}", 2, -1}, {"{0,1}", 0, 1}, {"{1,3}", 1, 3},
	{"{2,2}", 2, 2}, {"{0,2}?", 0, 2}, {"{3}?", 3, 3},
}

func (g *gen) pick(n int) int { return g.r.Intn(n) }

func (g *gen) leaf() *node {
	switch k := g.pick(20); {
	case k < 2:
		return &node{text: assertions[g.pick(len(assertions))]}
	case k < 3 && !g.foldable:
		a := nonASCIIAtoms[g.pick(len(nonASCIIAtoms))]
		return &node{text: a.text, chars: []rune(a.chars)}
	default:
		a := asciiAtoms[g.pick(len(asciiAtoms))]
		return &node{text: a.text, chars: []rune(a.chars)}
	}
}

// expr generates an alternation at the given depth.
func (g *gen) expr(depth int) *node {
	nalt := 1
	if g.pick(4) == 0 {
		nalt = 2 + g.pick(2)
	}
	alts := make([]*node, nalt)
	texts := make([]string, nalt)
	for i := range alts {
		alts[i] = g.concat(depth)
		texts[i] = alts[i].text
	}
	if nalt == 1 {
		return alts[0]
	}
	return &node{text: strings.Join(texts, "|"), subs: alts, alt: true}
}

func (g *gen) concat(depth int) *node {
	n := 1 + g.pick(4)
	if g.pick(10) == 0 {
		n = 0
	}
	var items []*node
	var text strings.Builder
	for i := 0; i < n; i++ {
		if g.foldable && g.pick(8) == 0 {
			text.WriteString(flagSets[g.pick(len(flagSets))])
		} else if !g.foldable && g.pick(12) == 0 {
			f := flagSets[g.pick(len(flagSets))]
			if !strings.Contains(f, "i") {
				text.WriteString(f)
			}
		}
		it := g.item(depth)
		items = append(items, it)
		text.WriteString(it.text)
	}
	return &node{text: text.String(), subs: items}
}

func (g *gen) item(depth int) *node {
	var base *node
	if depth > 0 && g.pick(4) == 0 {
		open := groupOpen[g.pick(len(groupOpen))]
		for !g.foldable && strings.Contains(open, "i") && !strings.Contains(open, "-i") {
			open = groupOpen[g.pick(len(groupOpen))]
		}
		sub := g.expr(depth - 1)
		base = &node{text: open + sub.text + ")", subs: []*node{sub}}
	} else {
		base = g.leaf()
	}
	if g.pick(3) == 0 {
		rp := repeats[g.pick(len(repeats))]
		return &node{text: base.text + rp.text, subs: []*node{base},
			min: rp.min, max: maxOrNeg(rp.max)}
	}
	return base
}

// maxOrNeg encodes a repetition's max so that 0 stays distinguishable
// from "not a repetition".
func maxOrNeg(m int) int {
	if m == 0 {
		return -2
	}
	return m
}

// sample returns a string the node is likely to match.
func (g *gen) sample(n *node, b *strings.Builder) {
	switch {
	case n.max != 0:
		max := n.max
		if max == -2 {
			return
		}
		if max == -1 {
			max = n.min + 3
		}
		count := n.min + g.pick(max-n.min+1)
		for i := 0; i < count; i++ {
			g.sample(n.subs[0], b)
		}
	case n.alt:
		g.sample(n.subs[g.pick(len(n.subs))], b)
	case len(n.subs) > 0:
		for _, s := range n.subs {
			g.sample(s, b)
		}
	case len(n.chars) > 0:
		b.WriteRune(n.chars[g.pick(len(n.chars))])
	}
}

func (g *gen) randomString() string {
	n := g.pick(6)
	rs := make([]rune, n)
	for i := range rs {
		rs[i] = subjectAlphabet[g.pick(len(subjectAlphabet))]
	}
	return string(rs)
}

func (g *gen) mutate(s string) string {
	rs := []rune(s)
	c := subjectAlphabet[g.pick(len(subjectAlphabet))]
	switch k := g.pick(4); {
	case k == 0 && len(rs) > 0:
		i := g.pick(len(rs))
		return string(append(rs[:i:i], rs[i+1:]...))
	case k == 1 && len(rs) > 0:
		i := g.pick(len(rs))
		rs[i] = c
		return string(rs)
	case k == 2:
		i := g.pick(len(rs) + 1)
		return string(append(append(rs[:i:i], c), rs[i:]...))
	default:
		return s + s
	}
}

// breakPattern damages a pattern to exercise error handling.
func (g *gen) breakPattern(p string) string {
	bad := []string{"(", ")", "[", "]", "*", "+", "?", "{2}", "{", "\\", "|",
		"(?", "\\1", "\\8", "[z-a]", "(?x", "**", "{1001}", "\\p{Foo}"}
	rs := []rune(p)
	i := g.pick(len(rs) + 1)
	if g.pick(3) == 0 && len(rs) > 0 {
		return string(rs[:i:i]) + string(rs[min(i+1, len(rs)):])
	}
	return string(rs[:i:i]) + bad[g.pick(len(bad))] + string(rs[i:])
}

func min(a, b int) int {
	if a < b {
		return a
	}
	return b
}

// copyEscape escapes a value for PostgreSQL's COPY text format.
func copyEscape(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch c {
		case '\\':
			b.WriteString(`\\`)
		case '\t':
			b.WriteString(`\t`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\b':
			b.WriteString(`\b`)
		case '\f':
			b.WriteString(`\f`)
		case '\v':
			b.WriteString(`\v`)
		default:
			if c < 0x20 || c == 0x7f {
				fmt.Fprintf(&b, `\%03o`, c)
			} else {
				b.WriteByte(c)
			}
		}
	}
	return b.String()
}

// compile returns Go's matcher for a Prometheus pattern, or nil if rejected.
// Like Prometheus 3, the pattern is parsed on its own first, so "a)|(b" is
// an error although "^(?s:a)|(b)$" would compile.
func compile(p string) *regexp.Regexp {
	if _, err := syntax.Parse(p, syntax.Perl|syntax.DotNL); err != nil {
		return nil
	}
	re, err := regexp.Compile("^(?s:" + p + ")$")
	if err != nil {
		// The pattern ends inside \Q...: end the quote before ")$".
		re, err = regexp.Compile("^(?s:" + p + `\E)$`)
	}
	if err != nil {
		panic(fmt.Sprintf("pattern %q parses but does not compile: %v", p, err))
	}
	return re
}

type writer struct {
	w    *bufio.Writer
	seen map[string]bool
}

// pattern writes the lines of one pattern; false if it was skipped.
func (w *writer) pattern(p string, subjects []string) bool {
	if w.seen[p] || !utf8.ValidString(p) || strings.ContainsRune(p, 0) {
		return false
	}
	w.seen[p] = true
	re := compile(p)
	if re == nil {
		fmt.Fprintf(w.w, "%s\t\\N\terror\n", copyEscape(p))
		return true
	}
	done := map[string]bool{}
	for _, s := range subjects {
		if done[s] {
			continue
		}
		done[s] = true
		res := "f"
		if re.MatchString(s) {
			res = "t"
		}
		fmt.Fprintf(w.w, "%s\t%s\t%s\n", copyEscape(p), copyEscape(s), res)
	}
	return true
}

func main() {
	seed := flag.Int64("seed", 20240617, "seed of the random patterns")
	nrandom := flag.Int("random", 3000, "number of random patterns")
	flag.Parse()

	out := bufio.NewWriter(os.Stdout)
	defer out.Flush()
	w := &writer{w: out, seen: map[string]bool{}}
	g := &gen{r: rand.New(rand.NewSource(*seed))}

	// Hand-picked patterns: the base subjects, extras, a few random ones.
	for _, h := range handPicked {
		subjects := append(append([]string{}, baseSubjects...), h.extra...)
		for i := 0; i < 6; i++ {
			subjects = append(subjects, g.randomString())
		}
		w.pattern(h.p, subjects)
	}
	// Two patterns at Go's limits: nesting depth and program size.
	w.pattern(strings.Repeat("(", 1001)+"a"+strings.Repeat(")", 1001), []string{"a"})
	w.pattern(strings.Repeat("(?:", 1001)+"a"+strings.Repeat(")", 1001), []string{"a", "b"})
	w.pattern("(?:"+strings.Repeat("ab", 2000)+"){1000}", []string{"ab"})

	// Random patterns, with subjects sampled from the pattern, mutated
	// samples and random strings; up to 6 matching and 6 others are kept.
	for n := 0; n < *nrandom; {
		g.foldable = g.pick(2) == 0
		tree := g.expr(3)
		p := tree.text
		// Damage some patterns, but not those using (?i): a damaged escape
		// or range there can need Unicode case folding, which promread
		// rejects; the hand-picked cases cover that.
		if !g.foldable && g.pick(6) == 0 {
			p = g.breakPattern(p)
		}
		re := compile(p)
		var match, other []string
		seen := map[string]bool{}
		keep := func(s string) {
			if seen[s] {
				return
			}
			seen[s] = true
			if re == nil {
				return
			}
			if re.MatchString(s) {
				if len(match) < 6 {
					match = append(match, s)
				}
			} else if len(other) < 6 {
				other = append(other, s)
			}
		}
		keep("")
		for i := 0; i < 12; i++ {
			var b strings.Builder
			g.sample(tree, &b)
			s := b.String()
			keep(s)
			keep(g.mutate(s))
			keep(g.randomString())
		}
		if w.pattern(p, append(match, other...)) {
			n++
		}
	}
}

-- Regex translation: Prometheus (Go RE2) patterns rewritten as PostgreSQL
-- AREs, checked against Go's own regexp on the cases of test/regex/cases.tsv
-- (written by test/regex/gen_cases.go: pattern, subject, and Go's answer
-- t/f, or "error" when Go rejects the pattern).

\set abs_srcdir `pwd` '/test'
\set cases_file :abs_srcdir '/regex/cases.tsv'
CREATE TEMP TABLE regex_cases (pattern text, subject text, expected text);
-- \copy does not expand variables itself: run it from one
\set copy_cases '\\copy regex_cases FROM ' :'cases_file'
:copy_cases

-- Translate a pattern; status is ok, invalid or untranslatable.
CREATE FUNCTION pg_temp.try_translate(p text,
		OUT are text, OUT status text, OUT detail text)
	LANGUAGE plpgsql AS $$
BEGIN
	are := prom_regex_translate(p);
	status := 'ok';
EXCEPTION WHEN invalid_regular_expression THEN
	GET STACKED DIAGNOSTICS detail = PG_EXCEPTION_DETAIL;
	status := CASE WHEN SQLERRM LIKE '%cannot be translated%'
		THEN 'untranslatable' ELSE 'invalid' END;
END $$;

-- Match as promread does; t, f, or the error PostgreSQL raised.
CREATE FUNCTION pg_temp.try_match(subject text, are text)
	RETURNS text LANGUAGE plpgsql AS $$
BEGIN
	RETURN CASE WHEN subject COLLATE "C" ~ are THEN 't' ELSE 'f' END;
EXCEPTION WHEN OTHERS THEN
	RETURN 'PostgreSQL error: ' || SQLERRM;
END $$;

CREATE TEMP TABLE regex_patterns AS
	SELECT g.pattern, g.go_error, t.are, t.status, t.detail
	FROM (SELECT pattern, bool_or(expected = 'error') AS go_error
		  FROM regex_cases GROUP BY pattern) g,
		LATERAL pg_temp.try_translate(g.pattern) t;

-- matched twice: by the ARE as SQL would, and by prom_regex_match as the
-- engine decides a matcher per value (by its literals when the pattern
-- matches a small finite set of strings, else by the ARE)
CREATE TEMP TABLE regex_results AS
	SELECT c.pattern, c.subject, c.expected,
		pg_temp.try_match(c.subject, p.are) AS actual,
		CASE WHEN prom_regex_match(c.pattern, c.subject) THEN 't' ELSE 'f' END
			AS decided
	FROM regex_cases c JOIN regex_patterns p USING (pattern)
	WHERE p.status = 'ok' AND NOT p.go_error;

-- the cases
SELECT count(*) AS cases,
	count(DISTINCT pattern) AS patterns,
	count(*) FILTER (WHERE expected = 'error') AS patterns_go_rejects
FROM regex_cases;

-- matches that differ from Go's (must be 0), and the first few of them
SELECT count(*) AS cases_checked,
	count(*) FILTER (WHERE actual <> expected) AS mismatches,
	count(*) FILTER (WHERE decided <> expected) AS mismatches_decided
FROM regex_results;
SELECT pattern, subject, expected, actual, decided, are
FROM regex_results JOIN regex_patterns USING (pattern)
WHERE actual <> expected OR decided <> expected
ORDER BY pattern COLLATE "C", subject COLLATE "C"
LIMIT 20;

-- patterns Go rejects that we accept (must be none)
SELECT pattern, are FROM regex_patterns
WHERE go_error AND status = 'ok'
ORDER BY pattern COLLATE "C";

-- patterns Go accepts that we call invalid (must be none)
SELECT pattern, detail FROM regex_patterns
WHERE NOT go_error AND status = 'invalid'
ORDER BY pattern COLLATE "C";

-- patterns Go accepts that have no exact ARE translation, and why: Unicode
-- classes (no Unicode tables) and (?i) on non-ASCII characters that have
-- case variants (no Unicode case-folding tables)
SELECT pattern, detail FROM regex_patterns
WHERE NOT go_error AND status = 'untranslatable'
ORDER BY pattern COLLATE "C";

-- patterns matched as literal sets: small finite languages, expanded
SELECT pattern, prom_regex_match(pattern, s) AS matches
FROM (VALUES ('host-(1|2|10)', 'host-10'), ('host-(1|2|10)', 'host-3'),
			 ('host-1[0-9]?|host-2', 'host-17'), ('host-1[0-9]?|host-2', 'host-27'),
			 ('(?i)get', 'GeT'), ('[^k]{0}x', 'x'), ('a{2,3}', 'aaaa'),
			 ('^(a|b)$', 'b'), ('a|', '')) AS v(pattern, s);

-- one call site decides a run of equal values once and keeps its last
-- verdict: repeated, changed, longer and empty values, and a new pattern
SELECT pattern, s, prom_regex_match(pattern, s) AS matches
FROM (VALUES (1, 'a.*', 'ab'), (2, 'a.*', 'ab'), (3, 'a.*', 'b'), (4, 'a.*', 'ab'),
			 (5, 'a.*', repeat('a', 100)), (6, 'a.*', ''), (7, 'b', 'ab'),
			 (8, 'b', 'b')) AS v(n, pattern, s)
ORDER BY n;

-- a few translations
SELECT p AS pattern, prom_regex_translate(p) AS are
FROM unnest(ARRAY['a|b', '(?i)ok', '\d+', 'foo\.bar', '(?-s).', '[^a-z]',
	'(?m)^a$', 'x{300}', 'a|\x00']) p;
SELECT 'K' COLLATE "C" ~ prom_regex_translate('(?i)k') AS kelvin_sign,
	E'a\nb' COLLATE "C" ~ prom_regex_translate('a.b') AS dot_newline,
	E'a\nb' COLLATE "C" ~ prom_regex_translate('(?-s)a.b') AS dot_no_newline;

-- errors: invalid for Go, then valid but untranslatable
SELECT prom_regex_translate('(a');
SELECT prom_regex_translate('a**');
SELECT prom_regex_translate('(?=x)');
SELECT prom_regex_translate('\1');
SELECT prom_regex_translate('x{1001}');
SELECT prom_regex_translate('[z-a]');
SELECT prom_regex_translate('\pL');
SELECT prom_regex_translate('(?i)é');

-- a tree of more nodes than Go's size limit is refused as the parser builds
-- it, not once it is whole: the later ")" is never reached (the whole tree
-- would take gigabytes)
DO $$
DECLARE
	detail text;
BEGIN
	PERFORM prom_regex_translate(repeat('a', 3400000) || ')');
EXCEPTION WHEN OTHERS THEN
	GET STACKED DIAGNOSTICS detail = PG_EXCEPTION_DETAIL;
	RAISE NOTICE '% %', SQLSTATE, detail;
END $$;

-- prom_regex_match keeps only the last pattern's translation: 200 patterns
-- of 9,001 literals each (about 1.3 MB) in one query hold little more than
-- one (the backend's memory measured after each row)
CREATE FUNCTION pg_temp.backend_bytes() RETURNS numeric LANGUAGE plpgsql AS $$
BEGIN
	RETURN (SELECT sum(total_bytes) FROM pg_backend_memory_contexts);
END $$;
SELECT max(bytes) - min(bytes) < 16 * 1024 * 1024 AS bounded, count(*) FILTER (WHERE m)
FROM (SELECT prom_regex_match('x{90}[0-9]{3}[0-8]|' || i, 'v') AS m,
		pg_temp.backend_bytes() AS bytes
	  FROM generate_series(1, 200) i) s;

-- a regex of characters and "."s reaches SQL as LIKE (host-.*5 as host-%5)
-- where SQL decides it (here a view's rows): LIKE selects exactly the
-- values prom_regex_match's ARE selects, LIKE's own characters (%, _ and
-- \) escaped, "." one character (a newline, a multibyte one), .{2,} two or
-- more; other regexes stay AREs
CREATE TABLE like_rows (ts timestamptz, l text, value float8);
CREATE VIEW like_view AS SELECT ts, l, value FROM like_rows;
SELECT prom_register('like_view');
INSERT INTO like_rows
SELECT '2024-01-01', v, 1
FROM unnest(ARRAY['', 'a', 'ab', 'abc', 'a%c', 'a_c', 'a\c', 'aXc', E'a\nc', 'aéc',
				  'a€c', 'ac', 'abbc', '%', '_', '\', 'x%y_z\w', 'xQyQzQw', 'host-15',
				  'host-1x5', 'host-5', 'host-1é5', E'host-1\n5', 'aab', 'aaab']) v;
SELECT p AS pattern,
	   (SELECT count(*) FROM prom_explain('like_view{l=~`' || p || '`}',
										  '2024-01-01', '2024-01-02') e
		WHERE e LIKE '%~~%') > 0 AS as_like,
	   (SELECT array_agg(coalesce(labels->>'l', '') ORDER BY coalesce(labels->>'l', ''))
		FROM prom_series('like_view{l=~`' || p || '`}', '2024-01-01', '2024-01-02'))
	   IS NOT DISTINCT FROM
	   (SELECT array_agg(l ORDER BY l) FROM like_rows WHERE prom_regex_match(p, l))
	   AS same_values
FROM unnest(ARRAY['a.c', 'a%.', '._c', '.\\.', '.*', '.+', 'a.*c', 'a.+c', 'a.{2,}c',
				  '.{2}', 'x%y_z\\.', 'host-1.*5', '%.*', '_.*', '\\.*', '...', 'a{2}b.*',
				  'a+b', 'a.?c', '(?i)a.c', '[a-c].c', 'a.c|x.y', 'a%c']) p;
SELECT prom_unregister('like_view');
DROP VIEW like_view;
DROP TABLE like_rows;

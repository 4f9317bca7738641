-- Matchers: every type on present and missing labels, regexes, enums,
-- __name__ across metrics, and values that try to escape.
SET timezone = 'UTC';
SET datestyle = 'ISO';
CREATE TYPE matchers_env AS ENUM ('prod', 'dev', 'staging', 'prod-eu');

CREATE TABLE http (t timestamptz, host text, path text, env matchers_env, v float8);
INSERT INTO http VALUES
	('2024-01-01 00:00:01', 'a', '/', 'prod', 1),
	('2024-01-01 00:00:01', 'ab', '/api', 'dev', 2),
	('2024-01-01 00:00:01', 'b', NULL, 'staging', 3),
	('2024-01-01 00:00:01', 'B', '', NULL, 4),
	('2024-01-01 00:00:01', NULL, '/x', 'prod-eu', 5);
SELECT prom_register('http');

-- a helper: the series a selector gives, as host/path/env and value
CREATE FUNCTION sel(selector text)
	RETURNS TABLE (host text, path text, env text, value float8)
	LANGUAGE sql AS $$
		SELECT labels->>'host', labels->>'path', labels->>'env', value[1]
		FROM prom_series(selector, '2024-01-01', '2024-01-02')
	$$;

-- = and != on a present label, with non-empty and empty values
SELECT * FROM sel('http{host="a"}');
SELECT * FROM sel('http{host!="a"}');
SELECT * FROM sel('http{path=""}');
SELECT * FROM sel('http{path!=""}');
-- =~ and !~, fully anchored: "a" does not match "ab"
SELECT * FROM sel('http{host=~"a"}');
SELECT * FROM sel('http{host=~"a.*"}');
SELECT * FROM sel('http{host!~"a"}');
SELECT * FROM sel('http{path=~""}');
SELECT * FROM sel('http{path=~".*"}');
SELECT * FROM sel('http{path=~".+"}');
SELECT * FROM sel('http{path!~".+"}');
SELECT * FROM sel('http{path!~""}');
-- a literal alternation, with and without the empty string
SELECT * FROM sel('http{host=~"a|b"}');
SELECT * FROM sel('http{host=~"a|b|"}');
SELECT * FROM sel('http{host!~"a|b"}');
SELECT * FROM sel('http{host!~"a|b|"}');
-- case-insensitive regexes
SELECT * FROM sel('http{host=~"(?i)b"}');
SELECT * FROM sel('http{host!~"(?i)B|a"}');
-- several matchers on one label
SELECT * FROM sel('http{host=~"[a-z].*", host!="ab"}');

-- matchers on a label the relation does not have read it as ""
SELECT * FROM sel('http{zone=""}');
SELECT * FROM sel('http{zone="x"}');
SELECT * FROM sel('http{zone!="x"}');
SELECT * FROM sel('http{zone!=""}');
SELECT * FROM sel('http{zone=~"x|"}');
SELECT * FROM sel('http{zone=~"x"}');
SELECT * FROM sel('http{zone!~"x"}');
SELECT * FROM sel('http{zone!~".*"}');

-- enum labels: compared by value; a value that is no label matches nothing
SELECT * FROM sel('http{env="prod"}');
SELECT * FROM sel('http{env="nope"}');
SELECT * FROM sel('http{env!="prod"}');
SELECT * FROM sel('http{env!="nope"}');
SELECT * FROM sel('http{env=""}');
SELECT * FROM sel('http{env!=""}');
SELECT * FROM sel('http{env=~"prod.*"}');
SELECT * FROM sel('http{env=~"prod.*|"}');
SELECT * FROM sel('http{env!~"prod.*"}');
SELECT * FROM sel('http{env=~".*"}');
SELECT * FROM sel('http{env=~".+"}');
SELECT * FROM sel('http{env=~"x.*"}');
SELECT * FROM sel('http{env!~".*"}');

-- enum labels follow changes to the type
ALTER TYPE matchers_env RENAME VALUE 'staging' TO 'stage';
SELECT * FROM sel('http{env="stage"}');
ALTER TYPE matchers_env ADD VALUE 'qa';
INSERT INTO http VALUES ('2024-01-01 00:00:01', 'q', NULL, 'qa', 6);
SELECT * FROM sel('http{env=~"q.*|stage"}');
DELETE FROM http WHERE host = 'q';

-- __name__ matchers select metrics; regexes reach across several
CREATE TABLE http_errors (t timestamptz, host text, v float8);
INSERT INTO http_errors VALUES ('2024-01-01 00:00:01', 'a', 7);
SELECT prom_register('http_errors');
CREATE TABLE cpu (t timestamptz, host text, v float8);
INSERT INTO cpu VALUES ('2024-01-01 00:00:01', 'a', 8);
SELECT prom_register('cpu');
SELECT labels, value FROM prom_series('{__name__=~"http.*", host="a"}', '2024-01-01', '2024-01-02');
SELECT labels, value FROM prom_series('{__name__!~"http.*", host="a"}', '2024-01-01', '2024-01-02');
SELECT labels, value FROM prom_series('{__name__=~"http_errors|cpu"}', '2024-01-01', '2024-01-02');
SELECT labels, value FROM prom_series('{__name__!="http", host="a"}', '2024-01-01', '2024-01-02');
SELECT labels, value FROM prom_series('{__name__="nope"}', '2024-01-01', '2024-01-02');
SELECT labels, value FROM prom_series('{host="a", __name__=~"c.u"}', '2024-01-01', '2024-01-02');

-- selector syntax: quoting, escapes, white space, trailing comma
SELECT * FROM sel('http { host = ''a'' , }');
SELECT * FROM sel('http{host=`a`}');
SELECT * FROM sel('http{host=~"\x61"}');
SELECT * FROM sel('http{host=~"\u0061|\U00000062"}');
SELECT * FROM sel(E'http{path=~"/\\\\w+"}');
SELECT * FROM sel('{__name__="http",host="a"}');

-- selector errors, as PromQL gives them
SELECT * FROM sel('');
SELECT * FROM sel('{}');
SELECT * FROM sel('http{');
SELECT * FROM sel('http{host}');
SELECT * FROM sel('http{host=="a"}');
SELECT * FROM sel('http{host="a"');
SELECT * FROM sel('http{host="a\q"}');
SELECT * FROM sel('http{1host="a"}');
SELECT * FROM sel('http{__name__="x"}');
SELECT * FROM sel('http[5m]');
SELECT * FROM sel('{host=""}');
SELECT * FROM sel('{host=~".*", path!~".+"}');
SELECT * FROM sel('http{host="\xff"}');
SELECT * FROM sel('http{host="\ud800"}');
-- regex errors and constructs RE2 does not have
SELECT * FROM sel('http{host=~"(a"}');
SELECT * FROM sel('http{host=~"a**"}');
SELECT * FROM sel('http{host=~"(a)\\1"}');
SELECT * FROM sel('http{host=~"(?=a)"}');
SELECT * FROM sel('http{host=~"\\pL"}');

-- hostile values are only ever compared, never executed
SELECT * FROM sel('http{host="a''; DROP TABLE http; --"}');
SELECT * FROM sel('http{host=~"a''); DROP TABLE http; --"}');
SELECT * FROM sel('http{host!="\"); DROP TABLE http; --"}');
SELECT count(*) FROM http;

-- hostile identifiers are quoted
CREATE TABLE "we""ird; DROP TABLE http; --" (
	"ti""me" timestamptz, "select" text, "Val" float8);
INSERT INTO "we""ird; DROP TABLE http; --" VALUES ('2024-01-01 00:00:01', 'x', 1);
SELECT prom_register('"we""ird; DROP TABLE http; --"', 'weird');
SELECT labels, value FROM prom_series('weird{select="x"}', '2024-01-01', '2024-01-02');
SELECT count(*) FROM http;

-- comparisons are bytewise, never by locale: under a case-insensitive
-- (nondeterministic) ICU collation, "a" and "A" are different label values
-- to every matcher, different series, and sorted bytewise
-- (where the server has ICU: matchers_1.out is the output without it)
DO $$ BEGIN
	CREATE COLLATION matchers_ci (provider = icu, locale = 'und-u-ks-level2',
		deterministic = false);
EXCEPTION WHEN feature_not_supported THEN NULL;
END $$;
SELECT EXISTS (SELECT FROM pg_collation WHERE collname = 'matchers_ci') AS have_icu \gset
\if :have_icu
CREATE TABLE ci_hosts (t timestamptz, host text COLLATE matchers_ci,
	dc varchar(8) COLLATE matchers_ci, v float8);
INSERT INTO ci_hosts VALUES ('2024-01-01 00:00:01', 'a', 'X', 1),
	('2024-01-01 00:00:01', 'A', 'x', 2), ('2024-01-01 00:00:01', 'b', NULL, 3),
	('2024-01-01 00:00:02', 'A', 'x', 4);
SELECT prom_register('ci_hosts');
SELECT labels, value FROM prom_series('ci_hosts', '2024-01-01', '2024-01-02');
SELECT labels, value FROM prom_series('ci_hosts{host="a"}', '2024-01-01', '2024-01-02');
SELECT labels, value FROM prom_series('ci_hosts{host!="a"}', '2024-01-01', '2024-01-02');
SELECT labels, value FROM prom_series('ci_hosts{host=~"a|b"}', '2024-01-01', '2024-01-02');
SELECT labels, value FROM prom_series('ci_hosts{host!~"a|b"}', '2024-01-01', '2024-01-02');
SELECT labels, value FROM prom_series('ci_hosts{host=~"[a-z]"}', '2024-01-01', '2024-01-02');
SELECT labels, value FROM prom_series('ci_hosts{dc="x"}', '2024-01-01', '2024-01-02');
SELECT labels, value FROM prom_series('ci_hosts{dc=~"X|"}', '2024-01-01', '2024-01-02');
SELECT prom_read_response_json(prom_read_response_agg(t, v, '__name__', 'agg',
	'host', host)) FROM ci_hosts;
DROP TABLE ci_hosts;
DROP COLLATION matchers_ci;
\endif

DROP TABLE http, http_errors, cpu, "we""ird; DROP TABLE http; --";
DROP FUNCTION sel(text);
DROP TYPE matchers_env;

-- Selective reads: which matchers SQL evaluates per row (those an index can
-- answer) and which the engine decides once per distinct label value, as
-- prom_explain shows them; the answers are the same either way.
SET timezone = 'UTC';
SET datestyle = 'ISO';
-- the plans' lines without their costs, which depend on statistics
CREATE FUNCTION explain(selector text, start_time timestamptz = '2024-01-01',
		end_time timestamptz = '2024-01-02')
	RETURNS SETOF text LANGUAGE sql AS $$
		SELECT regexp_replace(line, '  \(cost=.*\)$', '')
		FROM prom_explain(selector, start_time, end_time) AS line
	$$;
CREATE TABLE req (ts timestamptz NOT NULL, instance text COLLATE "C",
	code text, job text, value float8);
INSERT INTO req
	SELECT '2024-01-01'::timestamptz + s * interval '15 s', 'host-' || lpad(h::text, 3, '0'),
		(ARRAY['200', '404', '500'])[1 + h % 3], CASE WHEN h % 4 = 0 THEN 'api' END, h * 100 + s
	FROM generate_series(0, 199) h, generate_series(1, 20) s;
CREATE INDEX ON req (instance, ts);
CREATE INDEX ON req (ts);
ANALYZE req;
SELECT prom_register('req');

-- (plans of a small table: an index, where one serves, rather than a scan)
SET enable_seqscan = off;
-- equality and literal sets stay SQL predicates an index serves; a regex
-- whose strings are few (a small finite language) is a literal set
SELECT * FROM explain('req{instance="host-007"}');
SELECT * FROM explain('req{instance=~"host-00(1|2|3)"}');
SELECT * FROM explain('req{instance=~"host-00[1-3]|host-19[0-9]"}');
-- other regexes and negative matchers are decided per distinct value: over
-- the values an index on the column lists, when its statistics give a value
-- many rows, the accepted ones then read through it
SELECT * FROM explain('req{instance=~"host-1.*5"}');
SELECT * FROM explain('req{instance=~"host-1.*x"}');
-- else by the engine, as it reads the rows; a literal prefix still narrows
-- the scan through a range an index serves
SELECT * FROM explain('req{instance=~"host-1.*", code!="500", job!~"a.*"}');
SELECT * FROM explain('req{code=~".*0", job!="api"}');
-- a time range to the end of PostgreSQL's range is bound as infinity
SELECT * FROM explain('req{instance="host-007"}', '-infinity', 'infinity');
RESET enable_seqscan;

-- a view (here the normalized layout: a table of series, one of samples)
-- gets every matcher as SQL, which the planner evaluates once a series, on
-- the table of series
CREATE TABLE req_series (id int PRIMARY KEY, instance text COLLATE "C", code text);
INSERT INTO req_series SELECT DISTINCT ON (instance) h, instance, code
	FROM (SELECT row_number() OVER (ORDER BY instance) AS h, instance, code
		  FROM (SELECT DISTINCT instance, code FROM req) d) n;
CREATE INDEX ON req_series (instance);
CREATE TABLE req_samples (series_id int, ts timestamptz, value float8);
INSERT INTO req_samples SELECT s.id, r.ts, r.value FROM req r JOIN req_series s USING (instance);
CREATE INDEX ON req_samples (series_id, ts);
ANALYZE req_series, req_samples;
CREATE VIEW req_norm AS
	SELECT s.instance, s.code, x.ts, x.value
	FROM req_samples x JOIN req_series s ON s.id = x.series_id;
SELECT prom_register('req_norm');
SET enable_seqscan = off;
SELECT * FROM explain('req_norm{instance=~"host-1.*5", code!="500"}');
RESET enable_seqscan;
SELECT count(*), sum(array_length(value, 1))
FROM prom_series('req_norm{instance=~"host-1.*5", code!="500"}', '2024-01-01', '2024-01-02');

-- the answers equal those of the same matchers in SQL
CREATE FUNCTION same(selector text, sql_where text) RETURNS text
	LANGUAGE plpgsql AS $$
DECLARE
	promread jsonb;
	expected jsonb;
BEGIN
	SELECT jsonb_agg(jsonb_build_array(labels->>'instance', value) ORDER BY labels->>'instance')
	INTO promread FROM prom_series(selector, '2024-01-01', '2024-01-02');
	EXECUTE format('SELECT jsonb_agg(jsonb_build_array(instance, v) ORDER BY instance)
		FROM (SELECT instance, array_agg(value ORDER BY ts) AS v FROM req
			  WHERE %s GROUP BY instance) g', sql_where) INTO expected;
	RETURN CASE WHEN promread IS NOT DISTINCT FROM expected
		THEN 'same: ' || coalesce(jsonb_array_length(promread), 0) || ' series'
		ELSE 'DIFFERENT: ' || promread::text || ' vs ' || expected::text END;
END $$;
SELECT same('req{instance=~"host-1.*5"}', $$instance ~ '^host-1.*5$'$$);
SELECT same('req{instance!~"host-1.*"}', $$instance !~ '^host-1'$$);
SELECT same('req{instance=~"host-1.*", code!="500"}', $$instance LIKE 'host-1%' AND code <> '500'$$);
SELECT same('req{code=~".*0", job!="api"}', $$code LIKE '%0' AND job IS DISTINCT FROM 'api'$$);
SELECT same('req{job!~"a.*"}', $$job IS NULL OR job !~ '^a'$$);
SELECT same('req{job=~"|api", instance=~"host-00.*"}', $$instance LIKE 'host-00%'$$);
SELECT same('req{instance=~"host-(00[1-3]|19[0-9])"}', $$instance ~ '^host-(00[1-3]|19[0-9])$'$$);
SELECT same('req{instance!~"host-0.*|host-1[0-8].*"}', $$instance ~ '^host-19'$$);
SELECT same('req{instance=~"host-1.*x"}', $$false$$);
SELECT same('req{instance!~"host-.*"}', $$false$$);
SELECT same('req{instance!="host-007", code="200"}', $$instance <> 'host-007' AND code = '200'$$);
-- without statistics, the engine decides them
CREATE TABLE req_unanalyzed WITH (autovacuum_enabled = off) AS SELECT * FROM req;
CREATE INDEX ON req_unanalyzed (instance, ts);
SELECT prom_register('req_unanalyzed');
SELECT * FROM explain('req_unanalyzed{instance=~"host-1.*5"}');
-- a text value holds no NUL: strings with one drop out of a literal set, and
-- a regex whose every string holds one matches nothing
SELECT same('req{instance=~"host-007\\x00?|host-008\\x00"}', $$instance = 'host-007'$$);
SELECT same('req{instance=~"host-007\\x00"}', $$false$$);
SELECT same('req{instance!~"host-007\\x00", code="200"}', $$code = '200'$$);
-- a matcher per value on a series whose rows come apart (rows by time)
CREATE TABLE req_by_time AS SELECT * FROM req ORDER BY ts, instance;
SELECT prom_register('req_by_time');
SELECT count(*), sum(array_length(value, 1))
FROM prom_series('req_by_time{instance=~"host-1.*5", job!="api"}', '2024-01-01', '2024-01-02');

-- promread's statements are planned for each call's values, whatever
-- plan_cache_mode says: hash partitions are pruned by a literal set's values
-- (a generic plan cannot prune by an array parameter: it would scan all four)
CREATE TABLE req_hashed (ts timestamptz, instance text, value float8)
	PARTITION BY HASH (instance);
CREATE TABLE req_hashed_0 PARTITION OF req_hashed FOR VALUES WITH (MODULUS 4, REMAINDER 0);
CREATE TABLE req_hashed_1 PARTITION OF req_hashed FOR VALUES WITH (MODULUS 4, REMAINDER 1);
CREATE TABLE req_hashed_2 PARTITION OF req_hashed FOR VALUES WITH (MODULUS 4, REMAINDER 2);
CREATE TABLE req_hashed_3 PARTITION OF req_hashed FOR VALUES WITH (MODULUS 4, REMAINDER 3);
INSERT INTO req_hashed SELECT ts, instance, value FROM req;
SELECT prom_register('req_hashed');
SELECT count(DISTINCT tableoid) AS partitions_holding_them FROM req_hashed
WHERE instance IN ('host-007', 'host-008');
SET plan_cache_mode = force_generic_plan;
\set stats_helpers `pwd` '/test/fixtures/stats.sql'
\i :stats_helpers
SELECT flush_stats();
SELECT sum(seq_scan) AS scans_before FROM pg_stat_user_tables WHERE relname LIKE 'req_hashed_%' \gset
SELECT count(*) FROM prom_series('req_hashed{instance=~"host-007|host-008"}', '2024-01-01', '2024-01-02');
SELECT count(*) FROM prom_series('req_hashed{instance=~"host-007|host-008"}', '2024-01-01', '2024-01-02');
SELECT count(*) FROM prom_series('req_hashed{instance=~"host-007|host-008"}', '2024-01-01', '2024-01-02');
SELECT flush_stats();
SELECT sum(seq_scan) - :scans_before AS partitions_scanned_in_three_reads
FROM pg_stat_user_tables WHERE relname LIKE 'req_hashed_%';
RESET plan_cache_mode;


-- prom_regex_match, as shards are sent regexes: an index that leads with
-- its column reads only the rows of the values the regex accepts, listed
-- once a scan by prom_regex_label_values
SET enable_seqscan = off;
EXPLAIN (COSTS OFF) SELECT count(*) FROM req
WHERE prom_regex_match('host-.*5', instance) AND ts >= '2024-01-01';
RESET enable_seqscan;
SELECT count(*) FROM req WHERE prom_regex_match('host-.*5', instance);
SELECT count(*) FROM req WHERE instance ~ '^host-.*5$';
-- its selectivity is estimated from the statistics (20 of 200 values)
CREATE FUNCTION estimated_rows(sql text) RETURNS int LANGUAGE plpgsql AS $$
	DECLARE line text;
	BEGIN
		EXECUTE 'EXPLAIN ' || sql INTO line;
		RETURN (regexp_match(line, 'rows=(\d+)'))[1]::int;
	END $$;
SELECT estimated_rows('SELECT * FROM req WHERE prom_regex_match(''host-.*5'', instance)')
	BETWEEN 200 AND 800 AS estimate_near_400;
-- a regex that keeps most rows is read by a scan
EXPLAIN (COSTS OFF) SELECT count(*) FROM req WHERE prom_regex_match('host-[01].*', instance);
-- and a column of a nondeterministic collation is never listed (where the
-- server has ICU: selective_1.out is the output without it)
DO $$ BEGIN
	CREATE COLLATION regress_nocase (provider = icu, locale = 'und-u-ks-level2',
		deterministic = false);
EXCEPTION WHEN feature_not_supported THEN NULL;
END $$;
SELECT EXISTS (SELECT FROM pg_collation WHERE collname = 'regress_nocase') AS have_icu \gset
\if :have_icu
CREATE TABLE req_nocase AS SELECT ts, instance COLLATE regress_nocase AS instance FROM req;
CREATE INDEX ON req_nocase (instance);
ANALYZE req_nocase;
EXPLAIN (COSTS OFF) SELECT count(*) FROM req_nocase WHERE prom_regex_match('host-.*5', instance);
SELECT prom_regex_label_values('req_nocase', 'instance', '.*');
DROP TABLE req_nocase;
DROP COLLATION regress_nocase;
\endif
-- prom_regex_label_values: through the index, or by reading the column
SELECT prom_regex_label_values('req', 'instance', 'host-0.5');
SELECT array(SELECT unnest(prom_regex_label_values('req', 'code', '5.*|4.*')) ORDER BY 1) AS codes;
SELECT prom_regex_label_values('req', 'job', '.*') AS non_null_jobs;
SELECT prom_regex_label_values('req', 'nope', '.*');
SELECT prom_regex_label_values('req', 'value', '.*');
SELECT prom_regex_label_values('req', 'instance', '(');

DROP VIEW req_norm;
DROP TABLE req, req_by_time, req_hashed, req_unanalyzed, req_series, req_samples;
DROP FUNCTION explain, same, estimated_rows;

-- Remote-read requests captured from a real Prometheus 2.42
-- (test/fixtures/prometheus-2.42, see its README.md), answered by promread
-- and checked against what Prometheus's own TSDB would return.
--
-- Every fixture was evaluated at one time T (the end of 01-up.bin's range);
-- the data is laid out relative to T and all times below are shown relative
-- to T, so the output does not depend on when the fixtures were captured.
--
-- The test runs in a database of its own (same encoding and locale), so that
-- metrics other tests registered cannot change the answers.
\set abs_srcdir `pwd` '/test'
\set fixtures :abs_srcdir '/fixtures/prometheus-2.42/'
SELECT current_database() AS regress_db, datcollate, datctype
FROM pg_database WHERE datname = current_database() \gset
CREATE DATABASE regression_prometheus_requests TEMPLATE template0 ENCODING 'UTF8'
	LC_COLLATE :'datcollate' LC_CTYPE :'datctype';
\c regression_prometheus_requests
SET client_min_messages = warning;
CREATE EXTENSION promread;
RESET client_min_messages;
SELECT count(*) AS metrics FROM prom_metrics;

-- each fixture, the PromQL that produced it, and the series Prometheus's
-- TSDB would select for it: a condition on the label set l (a missing label
-- is ''), written by hand from the PromQL
CREATE FUNCTION lbl(l jsonb, name text) RETURNS text
	LANGUAGE sql IMMUTABLE AS $$ SELECT coalesce(l ->> name, '') COLLATE "C" $$;
CREATE TABLE fixture (file text PRIMARY KEY, api text, promql text, oracle text, req bytea);
INSERT INTO fixture (file, api, promql, oracle) VALUES
	('01-up', 'query', 'up',
		$$lbl(l, '__name__') = 'up'$$),
	('02-cpu-host-eq', 'query', 'cpu_usage{host="a"}',
		$$lbl(l, '__name__') = 'cpu_usage' AND lbl(l, 'host') = 'a'$$),
	('03-cpu-host-neq', 'query', 'cpu_usage{host!="a"}',
		$$lbl(l, '__name__') = 'cpu_usage' AND lbl(l, 'host') <> 'a'$$),
	('04-cpu-host-re', 'query', 'cpu_usage{host=~"a|b"}',
		$$lbl(l, '__name__') = 'cpu_usage' AND lbl(l, 'host') IN ('a', 'b')$$),
	('05-cpu-host-nre', 'query', 'cpu_usage{host!~"a|web-.*"}',
		$$lbl(l, '__name__') = 'cpu_usage' AND lbl(l, 'host') <> 'a'
		  AND lbl(l, 'host') NOT LIKE 'web-%'$$),
	('06-all-matcher-types', 'query', 'cpu_usage{host="a", job!="x", zone=~"eu-.*", env!~"dev|test"}',
		$$lbl(l, '__name__') = 'cpu_usage' AND lbl(l, 'host') = 'a' AND lbl(l, 'job') <> 'x'
		  AND lbl(l, 'zone') LIKE 'eu-%' AND lbl(l, 'env') NOT IN ('dev', 'test')$$),
	('07-name-re', 'query', '{__name__=~"cpu_.*"}',
		$$lbl(l, '__name__') LIKE 'cpu\_%'$$),
	('08-regex-escapes-ci', 'query', 'cpu_usage{host=~"(?i)WEB-\\d+\\.example\\.com"}',
		$$lbl(l, '__name__') = 'cpu_usage'
		  AND lbl(l, 'host') ~ '^[Ww][Ee][Bb]-[0-9]+\.[Ee][Xx][Aa][Mm][Pp][Ll][Ee]\.[Cc][Oo][Mm]$'$$),
	('09-missing-label', 'query', '{job="x", zone=""}',
		$$lbl(l, 'job') = 'x' AND lbl(l, 'zone') = ''$$),
	('10-rate', 'query', 'rate(cpu_usage{host="a"}[5m])',
		$$lbl(l, '__name__') = 'cpu_usage' AND lbl(l, 'host') = 'a'$$),
	('11-sum-by', 'query', 'sum by (host) (cpu_usage)',
		$$lbl(l, '__name__') = 'cpu_usage'$$),
	('12-offset', 'query', 'cpu_usage{host="b"} offset 1h',
		$$lbl(l, '__name__') = 'cpu_usage' AND lbl(l, 'host') = 'b'$$),
	('13-range-step', 'query_range', 'cpu_usage{host="a"}',
		$$lbl(l, '__name__') = 'cpu_usage' AND lbl(l, 'host') = 'a'$$),
	('14-non-ascii', 'query', 'cpu_usage{zone="zürich"}',
		$$lbl(l, '__name__') = 'cpu_usage' AND lbl(l, 'zone') = 'zürich'$$),
	('15-ext-label-added', 'query', 'cpu_usage{host="a"} with external label replica="a"',
		$$lbl(l, '__name__') = 'cpu_usage' AND lbl(l, 'host') = 'a' AND lbl(l, 'replica') = 'a'$$),
	('16-ext-label-user-matcher', 'query', 'cpu_usage{replica=~"a|b"} with external label replica="a"',
		$$lbl(l, '__name__') = 'cpu_usage' AND lbl(l, 'replica') IN ('a', 'b')$$);
UPDATE fixture SET req = pg_read_binary_file(:'fixtures' || file || '.bin');
SELECT file, api, promql FROM fixture ORDER BY file;

-- T, in ms since the Unix epoch
CREATE TABLE ref AS
SELECT (prom_read_request_json(req) -> 'queries' -> 0 ->> 'end_timestamp_ms')::bigint AS t_ms
FROM fixture WHERE file = '01-up';
-- a time in ms shown relative to T: T, T-300s, T+0.001s
CREATE FUNCTION rel(ms bigint) RETURNS text
	LANGUAGE sql STABLE AS $$
	SELECT CASE WHEN ms = t_ms THEN 'T'
		ELSE 'T' || CASE WHEN ms > t_ms THEN '+' ELSE '-' END
			|| trim_scale(abs(ms - t_ms) / 1000.0) || 's' END
	FROM ref $$;
-- T + secs (exact to the ms)
CREATE FUNCTION at_rel(secs numeric) RETURNS timestamptz
	LANGUAGE sql STABLE AS $$
	SELECT timestamptz 'epoch' + (t_ms + (secs * 1000)::bigint) * interval '1 ms' FROM ref $$;

-- What Prometheus sent.  Every request holds one query; accepted_response_types
-- is empty (meaning SAMPLES).  Matchers in the order sent (the metric name's
-- matcher comes after those in braces), values as sent (no PromQL escaping).
SELECT file, jsonb_array_length(j -> 'queries') AS queries,
	j -> 'accepted_response_types' AS response_types,
	rel((j #>> '{queries,0,start_timestamp_ms}')::bigint) AS start,
	rel((j #>> '{queries,0,end_timestamp_ms}')::bigint) AS "end",
	(SELECT string_agg(format('%s%s"%s"', m ->> 'name',
			CASE m ->> 'type' WHEN 'EQ' THEN '=' WHEN 'NEQ' THEN '!='
				WHEN 'RE' THEN '=~' WHEN 'NRE' THEN '!~' END,
			m ->> 'value'), ', ' ORDER BY i)
	 FROM jsonb_array_elements(j #> '{queries,0,matchers}') WITH ORDINALITY AS m(m, i)) AS matchers
FROM fixture, prom_read_request_json(req) AS j
ORDER BY file;

-- the hints
SELECT file, rel((h ->> 'start_ms')::bigint) AS start, rel((h ->> 'end_ms')::bigint) AS "end",
	h -> 'step_ms' AS step_ms, h -> 'func' AS func, h -> 'range_ms' AS range_ms,
	h -> 'by' AS by, h -> 'grouping' AS grouping
FROM fixture, LATERAL (SELECT prom_read_request_json(req) #> '{queries,0,hints}') AS x(h)
ORDER BY file;

-- The data: every series has a sample every 15 s (host b every 60 s, host d
-- every 30 s) from T-2h to T+1min, unless noted.
CREATE TYPE env AS ENUM ('prod', 'dev', 'test');
CREATE TABLE cpu_usage (t timestamptz, host text, job text, zone text, env env,
	replica text, v float8);
INSERT INTO cpu_usage
SELECT at_rel(o), host, job,
	-- host d: zone '' and NULL alternate; both mean "no zone label"
	CASE WHEN id = 5 AND o % 60 <> 0 THEN NULL ELSE zone END,
	env::env, replica,
	-- host a (id 1): one row without a value, at T-150s
	CASE WHEN id = 1 AND o = -150 THEN NULL ELSE id * 1000 + (o + 7200) / 15 END
FROM (VALUES
	(1, 'a', 'node', 'eu-west', 'prod', NULL, 15, 60),
	(2, 'a', 'node', 'eu-west', 'prod', 'a', 15, 60),
	(3, 'b', 'node', 'eu-east', 'dev', NULL, 60, 60),
	(4, 'c', 'x', NULL, NULL, NULL, 15, 60),
	(5, 'd', 'x', '', 'test', NULL, 30, 60),
	(6, 'e', 'x', 'us-east', NULL, NULL, 15, 60),
	(7, 'web-12.example.com', 'node', 'zürich', 'prod', NULL, 15, 60),
	(8, 'WEB-7.EXAMPLE.COM', 'node', 'eu-west', 'test', NULL, 15, 60),
	(9, 'web-x.example.com', 'node', NULL, NULL, NULL, 15, 60),
	(10, 'web-1Xexample.com', 'node', NULL, NULL, NULL, 15, 60),
	(11, NULL, 'node', 'zurich', NULL, NULL, 15, 60),
	(12, 'f', 'node', 'Zürich', NULL, NULL, 15, 60),
	(13, 'a', 'x', 'eu-west', 'prod', NULL, 15, 60),
	-- stops at T-405s: nothing in the last 5 minutes
	(14, 'a', 'node', 'us-east', 'prod', NULL, 15, -405),
	(15, 'a', 'node', 'eu-west', 'dev', NULL, 15, 60),
	(16, 'a', NULL, 'eu-central', NULL, NULL, 15, 60))
	AS s(id, host, job, zone, env, replica, step, last),
	generate_series(-7200, last, step) AS o;
-- host a (id 1): 1 ms outside the 5-minute window at either end
INSERT INTO cpu_usage VALUES
	(at_rel(-300.001), 'a', 'node', 'eu-west', 'prod', NULL, 0.5),
	(at_rel(0.001), 'a', 'node', 'eu-west', 'prod', NULL, 0.25);
SELECT prom_register('cpu_usage');

CREATE TABLE up (t timestamptz, job text, instance text, v float8);
INSERT INTO up SELECT at_rel(o), job, instance, v
FROM (VALUES ('x', 'h1:9100', 1), ('node', 'h2:9100', 0)) AS s(job, instance, v),
	generate_series(-7200, 60, 15) AS o;
SELECT prom_register('up');

CREATE TABLE cpu_temp (t timestamptz, host text, v float8);
INSERT INTO cpu_temp SELECT at_rel(o), 'a', 40 + o / 300.0
FROM generate_series(-7200, 60, 60) AS o;
SELECT prom_register('cpu_temp');

-- job x, with and without a zone
CREATE TABLE mem_usage (t timestamptz, host text, job text, zone text, v float8);
INSERT INTO mem_usage SELECT at_rel(o), host, 'x', zone, 2048
FROM (VALUES ('a', NULL), ('b', 'eu-west')) AS s(host, zone),
	generate_series(-7200, 60, 60) AS o;
SELECT prom_register('mem_usage');

-- names that {__name__=~"cpu_.*"} must not select
CREATE TABLE node_cpu (t timestamptz, host text, v float8);
INSERT INTO node_cpu SELECT at_rel(o), 'a', 1 FROM generate_series(-7200, 60, 60) AS o;
SELECT prom_register('node_cpu', 'node_cpu_seconds');
SELECT prom_register('node_cpu', 'CPU_load');

-- Every sample as Prometheus's TSDB would hold it: the label set without
-- empty labels, the time in ms.
CREATE VIEW tsdb AS
SELECT jsonb_strip_nulls(jsonb_build_object('__name__', 'cpu_usage', 'host', nullif(host, ''),
		'job', nullif(job, ''), 'zone', nullif(zone, ''), 'env', env,
		'replica', nullif(replica, ''))) AS l, t, v
	FROM cpu_usage
UNION ALL
SELECT jsonb_build_object('__name__', 'up', 'job', job, 'instance', instance), t, v FROM up
UNION ALL
SELECT jsonb_build_object('__name__', 'cpu_temp', 'host', host), t, v FROM cpu_temp
UNION ALL
SELECT jsonb_strip_nulls(jsonb_build_object('__name__', 'mem_usage', 'host', host,
		'job', job, 'zone', zone)), t, v FROM mem_usage
UNION ALL
SELECT jsonb_build_object('__name__', m, 'host', host), t, v
	FROM node_cpu, unnest(ARRAY['node_cpu_seconds', 'CPU_load']) AS m;

-- The series the oracle selects in the request's time range, both ends
-- included, in Prometheus's order (labels.Compare: label by label, name then
-- value, bytewise).
CREATE FUNCTION expected(f fixture) RETURNS jsonb LANGUAGE plpgsql AS $$
DECLARE
	q jsonb := prom_read_request_json(f.req) #> '{queries,0}';
	result jsonb;
BEGIN
	EXECUTE format($q$
		SELECT coalesce(jsonb_agg(jsonb_build_object('labels', l, 'samples', samples)
				ORDER BY sort_key COLLATE "C"), '[]')
		FROM (SELECT l, jsonb_agg(jsonb_build_array(ms, v) ORDER BY ms) AS samples,
				(SELECT array_agg(x ORDER BY k COLLATE "C", i)
				 FROM jsonb_each_text(l) AS e(k, val),
					unnest(ARRAY[k, val]) WITH ORDINALITY AS u(x, i)) AS sort_key
			FROM (SELECT l, floor(extract(epoch FROM t) * 1000)::bigint AS ms, v
				  FROM tsdb WHERE v IS NOT NULL) AS s
			WHERE ms BETWEEN $1 AND $2 AND (%s)
			GROUP BY l) AS series
		$q$, f.oracle)
	INTO result
	USING (q ->> 'start_timestamp_ms')::bigint, (q ->> 'end_timestamp_ms')::bigint;
	RETURN result;
END
$$;

-- promread's answer, decoded
CREATE FUNCTION answer(f fixture) RETURNS jsonb
	LANGUAGE sql AS $$ SELECT prom_read_response_json(prom_remote_read(f.req)) $$;

-- A compact view of an answer: each series (in the order sent) with its
-- number of samples and the times of its first and last sample.
CREATE FUNCTION summary(file text)
	RETURNS TABLE (series text, samples int, first text, last text)
	LANGUAGE sql AS $$
	SELECT (SELECT '{' || string_agg(format('%s="%s"', k, val), ', ' ORDER BY k COLLATE "C") || '}'
			FROM jsonb_each_text(ts -> 'labels') AS e(k, val)),
		jsonb_array_length(ts -> 'samples'),
		rel((ts #>> '{samples,0,0}')::bigint),
		rel((ts #>> '{samples,-1,0}')::bigint)
	FROM fixture f, jsonb_array_elements(answer(f) #> '{results,0,timeseries}')
		WITH ORDINALITY AS a(ts, i)
	WHERE f.file = summary.file
	ORDER BY i
$$;

-- up
SELECT * FROM summary('01-up');
-- cpu_usage{host="a"}: host a's series with a sample in [T-300s, T]
-- (not the one that stopped at T-405s; 20 samples in the one with a NULL value)
SELECT * FROM summary('02-cpu-host-eq');
-- cpu_usage{host!="a"}: includes the series without a host
SELECT * FROM summary('03-cpu-host-neq');
-- cpu_usage{host=~"a|b"}
SELECT * FROM summary('04-cpu-host-re');
-- cpu_usage{host!~"a|web-.*"}: WEB-7.EXAMPLE.COM and the hostless series stay
SELECT * FROM summary('05-cpu-host-nre');
-- cpu_usage{host="a", job!="x", zone=~"eu-.*", env!~"dev|test"}: missing job
-- and env pass the negative matchers
SELECT * FROM summary('06-all-matcher-types');
-- {__name__=~"cpu_.*"}: not node_cpu_seconds or CPU_load
SELECT * FROM summary('07-name-re');
-- cpu_usage{host=~"(?i)WEB-\\d+\\.example\\.com"}
SELECT * FROM summary('08-regex-escapes-ci');
-- {job="x", zone=""}: any metric; host d's rows with zone '' and NULL are one series
SELECT * FROM summary('09-missing-label');
-- rate(cpu_usage{host="a"}[5m]): the raw samples of the 5-minute range
SELECT * FROM summary('10-rate');
-- sum by (host) (cpu_usage): the hints do not change the answer
SELECT * FROM summary('11-sum-by');
-- cpu_usage{host="b"} offset 1h
SELECT * FROM summary('12-offset');
SELECT rel((s ->> 0)::bigint) AS at, s -> 1 AS value
FROM fixture f, jsonb_array_elements(answer(f) #> '{results,0,timeseries,0,samples}') AS s
WHERE file = '12-offset';
-- query_range cpu_usage{host="a"}, 30 minutes, step 60s: includes the series
-- that stopped at T-405s
SELECT * FROM summary('13-range-step');
-- cpu_usage{zone="zürich"}: not zurich or Zürich
SELECT * FROM summary('14-non-ascii');
-- cpu_usage{host="a"} with external label replica="a" added as a matcher
SELECT * FROM summary('15-ext-label-added');
-- cpu_usage{replica=~"a|b"}: the query's own replica matcher, none added
SELECT * FROM summary('16-ext-label-user-matcher');

-- Each answer is one result holding exactly the series, samples and order
-- that Prometheus's TSDB would return.
SELECT file, jsonb_array_length(a -> 'results') AS results,
	jsonb_array_length(a #> '{results,0,timeseries}') AS series,
	(SELECT sum(jsonb_array_length(ts -> 'samples'))
	 FROM jsonb_array_elements(a #> '{results,0,timeseries}') AS ts) AS samples,
	a #> '{results,0,timeseries}' = expected(f) AS as_prometheus
FROM fixture f, answer(f) AS a
ORDER BY file;

-- clean up
DROP VIEW tsdb;
DROP FUNCTION expected, answer, summary, rel, at_rel, lbl;
DROP TABLE fixture, ref, cpu_usage, up, cpu_temp, mem_usage, node_cpu;
DROP TYPE env;
SELECT count(*) AS metrics_left FROM prom_metrics;
\c :regress_db
DROP DATABASE regression_prometheus_requests;

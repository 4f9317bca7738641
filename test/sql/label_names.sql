-- Label names are data: every valid Prometheus label name (system column
-- names, the time and value columns' names, any length, any case) is written
-- by remote write and read back exactly, through the catalog's mapping of
-- labels to columns; labels past promread.write_max_label_columns, or past
-- the room PostgreSQL's 1,600 columns leave, are kept in a jsonb column of
-- overflow labels, read like the others.
SET timezone = 'UTC';
SET datestyle = 'ISO';
CREATE SCHEMA ln;
SET promread.write_schema = ln;
-- the tables of row storage, which this suite inspects and alters
-- (write_chunks covers chunk storage, remote write's default)
SET promread.write_storage = rows;

-- write one request of series given as (labels, value) pairs at one time
CREATE FUNCTION ln_write(VARIADIC series jsonb[]) RETURNS void LANGUAGE sql AS $$
	SELECT prom_remote_write(prom_write_request(jsonb_agg(jsonb_build_object(
		'labels', s, 'samples', jsonb_build_array(jsonb_build_array(1700000000000, i))))))
	FROM unnest(series) WITH ORDINALITY AS u(s, i)
$$;
-- the series of a selector as prom_series, remote read (SAMPLES) and remote
-- read (STREAMED_XOR_CHUNKS, which prom_read_response_json decodes as it
-- decodes SAMPLES) answer them: labels and values, one per line
CREATE FUNCTION ln_series(selector text) RETURNS TABLE (labels jsonb, value float8)
	LANGUAGE sql AS $$
	SELECT labels, value[1] FROM prom_series(selector, '2023-11-14', '2023-11-15')
$$;
CREATE FUNCTION ln_read(selector text, response_type text DEFAULT 'samples')
	RETURNS TABLE (labels jsonb, value float8) LANGUAGE sql AS $$
	SELECT t->'labels', (t->'samples'->0->>1)::float8
	FROM jsonb_array_elements(prom_read_response_json(prom_remote_read(
		prom_read_request(selector, '2023-11-14', '2023-11-15',
						  ARRAY[response_type])))->'results'->0->'timeseries') AS t
$$;
-- do all three read exactly the expected series (labels with __name__)?
CREATE FUNCTION ln_check(selector text, expected jsonb[]) RETURNS text
	LANGUAGE sql AS $$
	SELECT concat_ws(', ',
		CASE WHEN (SELECT array_agg(labels ORDER BY value) FROM ln_series(selector))
			IS NOT DISTINCT FROM expected THEN 'prom_series ok' ELSE 'prom_series WRONG' END,
		CASE WHEN (SELECT array_agg(labels ORDER BY value) FROM ln_read(selector))
			IS NOT DISTINCT FROM expected THEN 'samples ok' ELSE 'samples WRONG' END,
		CASE WHEN (SELECT array_agg(labels ORDER BY value)
				   FROM ln_read(selector, 'streamed_xor_chunks'))
			IS NOT DISTINCT FROM expected THEN 'chunks ok' ELSE 'chunks WRONG' END)
$$;
-- is a series' label names' order in a chunked answer bytewise order?
CREATE FUNCTION ln_wire_order(selector text, names text[]) RETURNS boolean
	LANGUAGE sql AS $$
	WITH answer AS (
		SELECT prom_remote_read(prom_read_request(selector, '2023-11-14',
			'2023-11-15', '{streamed_xor_chunks}')) AS b),
	at AS (
		SELECT n, position(('\x0a'::bytea || set_byte('\x00'::bytea, 0, length(n)) ||
							convert_to(n, 'UTF8')) IN b) AS p
		FROM answer, unnest(names) AS n)
	SELECT bool_and(p > 0) AND
		array_agg(n ORDER BY p) = array_agg(n ORDER BY n COLLATE "C")
	FROM at
$$;

-- every awkward name at once: system columns' names, the created table's
-- time and value columns' names, names of 64 and 200 bytes, Host and host
SELECT jsonb_build_object('__name__', 'ln_awkward', 'ctid', 'c1', 'xmin', 'c2',
	'xmax', 'c3', 'cmin', 'c4', 'cmax', 'c5', 'tableoid', 'c6', 'oid', 'c7',
	'ts', 'c8', 'value', 'c9', repeat('a', 64), 'c10', repeat('b', 200), 'c11',
	'Host', 'H', 'host', 'h', 'job', 'j') AS awkward \gset
SELECT ln_write(:'awkward', '{"__name__": "ln_awkward", "value": "other"}');
SELECT ln_check('ln_awkward', ARRAY[:'awkward',
	'{"__name__": "ln_awkward", "value": "other"}']::jsonb[]);
SELECT ln_wire_order('ln_awkward', ARRAY['ctid', 'xmin', 'xmax', 'cmin', 'cmax',
	'tableoid', 'oid', 'ts', 'value', repeat('a', 64), 'Host', 'host', 'job', '__name__']);
-- the catalog's mapping: each label's column
SELECT l AS label, c AS "column", overflow_column
FROM prom_metrics, unnest(label_names, label_columns) AS u(l, c)
WHERE metric = 'ln_awkward' ORDER BY l COLLATE "C";
-- matchers on them, as on any label
SELECT ln_check('ln_awkward{value="other"}', ARRAY['{"__name__": "ln_awkward", "value": "other"}']::jsonb[]);
SELECT ln_check('ln_awkward{ctid="c1", ' || repeat('b', 200) || '=~"c1."}', ARRAY[:'awkward']::jsonb[]);
SELECT ln_check('ln_awkward{host=""}', ARRAY['{"__name__": "ln_awkward", "value": "other"}']::jsonb[]);
-- a second request finds the mapping, and writes the same columns
SELECT ln_write(:'awkward');
SELECT count(*) AS rows, count(*) FILTER (WHERE "Host" = 'H') AS "Host"
FROM ln.ln_awkward;

-- 1,700 labels on one series: 400 columns (promread.write_max_label_columns),
-- the rest overflow labels
SELECT jsonb_object_agg('l' || i, 'v' || i) || '{"__name__": "ln_wide"}' AS wide
FROM generate_series(1, 1700) AS i \gset
SELECT ln_write(:'wide');
SELECT cardinality(label_columns) AS columns, overflow_column
FROM prom_metrics WHERE metric = 'ln_wide';
SELECT ln_check('ln_wide', ARRAY[:'wide']::jsonb[]);
SELECT ln_check('ln_wide{l1700="v1700", l1="v1", l999=~"v9+"}', ARRAY[:'wide']::jsonb[]);
SELECT ln_wire_order('ln_wide', ARRAY(SELECT 'l' || i FROM generate_series(1, 1700, 13) AS i));

-- label names that churn, 600 new ones a request: columns until the cap,
-- then overflow labels; every label new to the table after that goes there
-- too (so that a label is kept in one place only), whatever the setting
CREATE TABLE ln_churn AS
	SELECT r, jsonb_object_agg('r' || r || '_' || i, 'v' || i) ||
		jsonb_build_object('__name__', 'ln_churn', 'round', r::text) AS labels
	FROM generate_series(1, 3) AS r, generate_series(1, 600) AS i GROUP BY r;
SELECT ln_write(labels) FROM ln_churn WHERE r = 1;
SET promread.write_max_label_columns = 1000;
SELECT ln_write(labels) FROM ln_churn WHERE r = 2;
SELECT ln_write(labels) FROM ln_churn WHERE r = 3;
RESET promread.write_max_label_columns;
SELECT cardinality(label_columns) AS columns, overflow_column
FROM prom_metrics WHERE metric = 'ln_churn';
SELECT ln_check('ln_churn', ARRAY(SELECT labels FROM ln_churn ORDER BY r));
SELECT ln_check('ln_churn{r3_600="v600"}', ARRAY(SELECT labels FROM ln_churn WHERE r = 3));
SELECT ln_check('ln_churn{r1_1!="v1"}', ARRAY(SELECT labels FROM ln_churn WHERE r > 1 ORDER BY r));

-- dropped columns count for PostgreSQL's limit: labels past the room they
-- leave are overflow labels rather than a 54011 retried forever
SELECT ln_write('{"__name__": "ln_dropped", "a": "1"}');
DO $$
BEGIN
	EXECUTE 'ALTER TABLE ln.ln_dropped ' ||
		(SELECT string_agg(format('ADD COLUMN d%s int', i), ', ')
		 FROM generate_series(1, 1590) AS i);
	EXECUTE 'ALTER TABLE ln.ln_dropped ' ||
		(SELECT string_agg(format('DROP COLUMN d%s', i), ', ')
		 FROM generate_series(1, 1590) AS i);
END $$;
SELECT jsonb_object_agg('n' || i, 'v' || i) || '{"__name__": "ln_dropped"}' AS dropped
FROM generate_series(1, 20) AS i \gset
SELECT ln_write(:'dropped');
SELECT cardinality(label_columns) AS columns, overflow_column
FROM prom_metrics WHERE metric = 'ln_dropped';
SELECT ln_check('ln_dropped', ARRAY['{"__name__": "ln_dropped", "a": "1"}', :'dropped']::jsonb[]);

-- matchers on overflow labels: b has no column (one column: a); a series
-- without b (or with b="", which is no label) matches b="" and b!="x"
SET promread.write_max_label_columns = 1;
SELECT ln_write('{"__name__": "ln_match", "a": "1", "b": "x"}',
				'{"__name__": "ln_match", "a": "2", "b": "y"}',
				'{"__name__": "ln_match", "a": "3"}',
				'{"__name__": "ln_match", "a": "4", "b": ""}',
				'{"__name__": "ln_match", "a": "5", "b": "x", "c": "z"}');
RESET promread.write_max_label_columns;
SELECT label_columns, label_names, overflow_column
FROM prom_metrics WHERE metric = 'ln_match';
SELECT m, (SELECT string_agg(labels->>'a', ',' ORDER BY value)
		   FROM ln_series('ln_match{' || m || '}')) AS prom_series,
	(SELECT string_agg(labels->>'a', ',' ORDER BY value)
	 FROM ln_read('ln_match{' || m || '}')) AS samples,
	(SELECT string_agg(labels->>'a', ',' ORDER BY value)
	 FROM ln_read('ln_match{' || m || '}', 'streamed_xor_chunks')) AS chunks
FROM unnest(ARRAY['b="x"', 'b!="x"', 'b=~"x|y"', 'b!~"x"', 'b=""', 'b!=""',
				  'b=~""', 'b=~".*"', 'b=~".+"', 'b="x", c=""', 'b="x", c!=""',
				  'c="z"', 'd=""', 'd="z"', 'a=~"[1-3]", b!="y"']) AS m;
-- decided per distinct value of the overflow labels, not by SQL
SELECT line FROM prom_explain('ln_match{b=~"x|y"}', '2023-11-14', '2023-11-15') AS line
WHERE line NOT LIKE '   %' AND line NOT LIKE '  %Scan%';
-- a metric selected by a label only
SELECT ln_check('{c="z"}', ARRAY['{"__name__": "ln_match", "a": "5", "b": "x", "c": "z"}']::jsonb[]);

-- the INSERT path (COPY writes float8 value columns only) writes the
-- overflow labels too
ALTER TABLE ln.ln_match ALTER COLUMN value TYPE float4;
SELECT ln_write('{"__name__": "ln_match", "a": "6", "b": "w", "xmin": "m"}');
SELECT ln_check('ln_match{b="w"}', ARRAY['{"__name__": "ln_match", "a": "6", "b": "w", "xmin": "m"}']::jsonb[]);
SELECT a, __labels FROM ln.ln_match ORDER BY a;

-- a registered table of the user's: its labels are its columns' names
CREATE TABLE ln_user (ts timestamptz, value float8, "Host" text);
SELECT prom_register('ln_user');
SELECT label_columns, label_names, overflow_column FROM prom_metrics WHERE metric = 'ln_user';
SELECT ln_write('{"__name__": "ln_user", "Host": "u"}');
SELECT ln_check('ln_user{Host="u"}', ARRAY['{"__name__": "ln_user", "Host": "u"}']::jsonb[]);

-- overflow labels written by hand: keys that are not label names, __name__
-- and the labels of columns are left out; they must be strings
INSERT INTO ln.ln_match (ts, value, a, __labels)
VALUES ('2023-11-14 12:00', 8, '8',
		'{"a": "dup", "__name__": "x", "bad-name": "y", "e": "ok", "f": ""}');
SELECT ln_check('ln_match{a="8"}', ARRAY['{"__name__": "ln_match", "a": "8", "e": "ok"}']::jsonb[]);
DELETE FROM ln.ln_match WHERE a = '8';
INSERT INTO ln.ln_match (ts, value, a, __labels)
VALUES ('2023-11-14 12:00', 9, '9', '{"b": 1}');
\set VERBOSITY terse
SELECT count(*) FROM ln_series('ln_match');
\set VERBOSITY default
DELETE FROM ln.ln_match WHERE a = '9';

-- the aggregates take overflow labels as a jsonb after the label pairs, and
-- answer as remote read does
SELECT prom_read_response_json(prom_read_response_agg(ts, value::float8,
		'__name__', 'ln_match', 'a', a, __labels)) =
	prom_read_response_json(prom_remote_read(prom_read_request('ln_match',
		'2023-11-14', '2023-11-15'))) AS same_samples,
	prom_read_response_json(prom_chunked_response_agg(ts, value::float8,
		'__name__', 'ln_match', 'a', a, __labels)) =
	prom_read_response_json(prom_remote_read(prom_read_request('ln_match',
		'2023-11-14', '2023-11-15', '{streamed_xor_chunks}'))) AS same_chunks
FROM ln.ln_match;
SELECT prom_read_response_agg(ts, value::float8, '__name__', 'ln_match', 'a') FROM ln.ln_match;
-- through a parallel plan: series of more labels than a call's arguments
-- (150 overflow labels) pass between workers and are combined
CREATE TABLE ln_par AS
	SELECT '2023-11-14'::timestamptz + t * interval '1 s' AS ts,
		(s * 1000 + t)::float8 AS value, s::text AS host, l.labels
	FROM generate_series(0, 99) t,
		(SELECT s, (SELECT jsonb_object_agg('o' || k, 'v' || (s + k))
					FROM generate_series(1, 150) k) AS labels
		 FROM generate_series(0, 19) s) l;
SELECT md5(prom_read_response_agg(ts, value, '__name__', 'ln_par', 'host', host,
		labels)) AS serial_answer
FROM ln_par \gset
SET max_parallel_workers_per_gather = 2;
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SET parallel_leader_participation = off;
EXPLAIN (COSTS OFF)
SELECT prom_read_response_agg(ts, value, '__name__', 'ln_par', 'host', host, labels)
FROM ln_par;
SELECT md5(prom_read_response_agg(ts, value, '__name__', 'ln_par', 'host', host,
		labels)) = :'serial_answer' AS same
FROM ln_par;
RESET max_parallel_workers_per_gather;
RESET parallel_setup_cost;
RESET parallel_tuple_cost;
RESET min_parallel_table_scan_size;
RESET parallel_leader_participation;
SELECT count(*) AS series, min(jsonb_array_length(jsonb_path_query_array(t->'labels', '$.keyvalue()'))) AS labels
FROM jsonb_array_elements(prom_read_response_json((SELECT prom_read_response_agg(ts,
		value, '__name__', 'ln_par', 'host', host, labels) FROM ln_par))->'results'->0->'timeseries') AS t;

DROP TABLE ln_churn, ln_user, ln_par;
DROP SCHEMA ln CASCADE;

-- prom_convert_metric: a metric in row storage moved to chunk storage, its
-- answers, values' bits, privileges and exemplar table kept; what it refuses.
SET timezone = 'UTC';
SET datestyle = 'ISO';
SET promread.compact_after = 0;
CREATE ROLE conv_reader;
CREATE ROLE conv_other;

-- three windows of two hours, an integer label, a series without "env",
-- values whose bits matter (test/fixtures/exact_values.copy: the stale
-- marker, a NaN with another payload, -0, +Inf) and a time before 1970
CREATE TABLE conv (ts timestamptz NOT NULL, host text, code int, env text, value float8);
INSERT INTO conv
SELECT '2024-01-01 00:00:00+00'::timestamptz + g * interval '1 minute',
	'web-' || h, 200 + h, CASE WHEN h = 2 THEN NULL ELSE 'prod' END, g * h + 0.5
FROM generate_series(0, 359) g, generate_series(1, 3) h;
\set abs_srcdir `pwd` '/test'
\set exact_values :abs_srcdir '/fixtures/exact_values.copy'
CREATE TEMP TABLE exact (t timestamptz, host text, v float8);
COPY exact FROM :'exact_values' (FORMAT binary);
INSERT INTO conv (ts, host, value) SELECT t, 'exact-' || host, v FROM exact;
SELECT prom_register('conv');
GRANT SELECT ON conv TO conv_reader;

CREATE TEMP TABLE before AS
	SELECT labels::text AS labels, t, float8send(v) AS bits
	FROM prom_series('conv', '-infinity', 'infinity'), unnest(ts, value) AS s(t, v);
SELECT count(*) AS samples, count(DISTINCT labels) AS series FROM before;

SELECT prom_convert_metric('conv');
SELECT relkind FROM pg_class WHERE oid = 'conv'::regclass;
SELECT metric, relation, series, chunks, head FROM prom_metric_storage WHERE metric = 'conv';
SELECT metric, relation, label_names FROM prom_metrics WHERE metric = 'conv';
SELECT count(*) AS old_table FROM pg_class WHERE relname LIKE 'conv#converted%';

-- the same series and samples, bit for bit; compacted into chunks
CREATE TEMP TABLE after AS
	SELECT labels::text AS labels, t, float8send(v) AS bits
	FROM prom_series('conv', '-infinity', 'infinity'), unnest(ts, value) AS s(t, v);
SELECT (SELECT count(*) FROM before) = (SELECT count(*) FROM after) AS same_count,
	NOT EXISTS (SELECT * FROM before EXCEPT SELECT * FROM after) AS same_samples;
SELECT count(*) AS head_rows FROM "conv#head";
SELECT count(*) > 0 AS has_chunks, sum(prom_chunk_sample_count(chunk)) AS chunk_samples
FROM "conv#chunks";

-- a grant on the table is a grant on the view and its tables
SELECT c, has_table_privilege('conv_reader', c, 'SELECT') AS reader,
	has_table_privilege('conv_other', c, 'SELECT') AS other
FROM unnest(ARRAY['conv', 'conv#series', 'conv#chunks', 'conv#head', 'conv#late']) c;

-- what it refuses
SELECT prom_convert_metric('conv');
SELECT prom_convert_metric('nothing_here');
CREATE TABLE conv_rows (ts timestamptz, host text, value float8);
CREATE VIEW conv_view AS SELECT * FROM conv_rows;
SELECT prom_register('conv_view');
SELECT prom_convert_metric('conv_view');
SELECT prom_register('conv_rows');
SET ROLE conv_other;
SELECT prom_convert_metric('conv_rows');
RESET ROLE;
-- a view over the table keeps it: the move is refused and nothing changes
SELECT prom_unregister('conv_view');
INSERT INTO conv_rows VALUES ('2024-01-01 00:00:00+00', 'a', 1);
SELECT prom_convert_metric('conv_rows');
SELECT relkind FROM pg_class WHERE oid = 'conv_rows'::regclass;
SELECT count(*) FROM prom_metric_storage WHERE metric = 'conv_rows';
DROP VIEW conv_view;

-- an empty table converts to an empty metric
TRUNCATE conv_rows;
SELECT prom_convert_metric('conv_rows');
SELECT count(*) FROM prom_series('conv_rows', '-infinity', 'infinity');

DROP VIEW conv, conv_rows CASCADE;
DROP TABLE "conv#series", "conv#chunks", "conv#head", "conv#late", "conv_rows#series",
	"conv_rows#chunks", "conv_rows#head", "conv_rows#late";
DROP ROLE conv_reader;
DROP ROLE conv_other;

-- Metrics stored in other layouts: a normalized view, a partitioned table,
-- a materialized view, table inheritance.
SET timezone = 'UTC';
SET datestyle = 'ISO';

-- series and samples in two tables, joined by a view
CREATE TABLE series_def (id int PRIMARY KEY, job text, instance text);
CREATE TABLE samples (series_id int REFERENCES series_def, t timestamptz,
	v float8);
CREATE INDEX ON samples (series_id, t);
INSERT INTO series_def VALUES (1, 'api', 'a:80'), (2, 'api', 'b:80'),
	(3, 'db', NULL);
INSERT INTO samples
	SELECT 1 + i % 3, '2024-01-01'::timestamptz + i * interval '15 seconds', i
	FROM generate_series(0, 11) i;
CREATE VIEW up AS
	SELECT d.job, d.instance, s.t, s.v
	FROM samples s JOIN series_def d ON d.id = s.series_id;
SELECT prom_register('up');
SELECT labels, ts, value FROM prom_series('up{job="api"}', '2024-01-01', '2024-01-02');
SELECT labels, value FROM prom_series('up{instance=""}', '2024-01-01', '2024-01-02');

-- a partitioned table: partitions are pruned by the time range
CREATE TABLE temps (t timestamptz NOT NULL, room text, celsius float8)
	PARTITION BY RANGE (t);
CREATE TABLE temps_jan PARTITION OF temps
	FOR VALUES FROM ('2024-01-01') TO ('2024-02-01');
CREATE TABLE temps_feb PARTITION OF temps
	FOR VALUES FROM ('2024-02-01') TO ('2024-03-01');
INSERT INTO temps VALUES ('2024-01-15', 'hall', 19.5), ('2024-02-15', 'hall', 20.5),
	('2024-02-16', 'attic', 14);
SELECT prom_register('temps');
SELECT labels, ts, value FROM prom_series('temps', '2024-01-01', '2024-03-01');
SELECT labels, ts, value FROM prom_series('temps{room="hall"}', '2024-02-01', '2024-03-01');

-- pruning at work: a query of February never scans January's partition
\set stats_helpers `pwd` '/test/fixtures/stats.sql'
\i :stats_helpers
SELECT flush_stats();
SELECT seq_scan AS jan_before FROM pg_stat_user_tables WHERE relname = 'temps_jan' \gset
SELECT seq_scan AS feb_before FROM pg_stat_user_tables WHERE relname = 'temps_feb' \gset
SELECT count(*) FROM prom_series('temps', '2024-02-01', '2024-03-01');
SELECT flush_stats();
SELECT seq_scan - :jan_before AS jan_scans FROM pg_stat_user_tables WHERE relname = 'temps_jan';
SELECT seq_scan - :feb_before AS feb_scans FROM pg_stat_user_tables WHERE relname = 'temps_feb';

-- a materialized view
CREATE MATERIALIZED VIEW temps_daily AS
	SELECT date_trunc('day', t) AS day, room, avg(celsius) AS celsius
	FROM temps GROUP BY 1, 2;
SELECT prom_register('temps_daily');
SELECT labels, ts, value FROM prom_series('temps_daily{room=~"h.*"}', '2024-01-01', '2024-03-01');

-- table inheritance: the parent's scan includes its children
CREATE TABLE load_parent (t timestamptz, host text, v float8);
CREATE TABLE load_child () INHERITS (load_parent);
INSERT INTO load_parent VALUES ('2024-01-01 00:00:01', 'p', 1);
INSERT INTO load_child VALUES ('2024-01-01 00:00:01', 'c', 2);
SELECT prom_register('load_parent', 'load');
SELECT labels, value FROM prom_series('load', '2024-01-01', '2024-01-02');

-- value columns of every accepted type, read as double precision: their
-- extremes, exactly where a double holds them
CREATE TABLE numbers (t timestamptz, kind text, i2 smallint, i4 integer,
	i8 bigint, r real, n numeric);
INSERT INTO numbers VALUES
	('2024-01-01 00:00:01', 'min', -32768, -2147483648, -9223372036854775808, -3.4e38, -1e300),
	('2024-01-01 00:00:02', 'max', 32767, 2147483647, 9223372036854775807, 3.4e38, 1e300),
	('2024-01-01 00:00:03', 'zero', 0, 0, 0, 0, 0),
	('2024-01-01 00:00:04', 'odd', -7, 123456789, 9007199254740993, 0.1, 0.1);
SELECT prom_register('numbers', 'n_i2', value_column => 'i2', label_columns => '{kind}');
SELECT prom_register('numbers', 'n_i4', value_column => 'i4', label_columns => '{kind}');
SELECT prom_register('numbers', 'n_i8', value_column => 'i8', label_columns => '{kind}');
SELECT prom_register('numbers', 'n_r', value_column => 'r', label_columns => '{kind}');
SELECT prom_register('numbers', 'n_n', value_column => 'n', label_columns => '{kind}');
SELECT labels->>'__name__' AS metric, labels->>'kind' AS kind, value
FROM prom_series('{__name__=~"n_.*"}', '2024-01-01', '2024-01-02');

DROP VIEW up;
DROP TABLE numbers, samples, series_def;
DROP MATERIALIZED VIEW temps_daily;
DROP TABLE temps, load_parent CASCADE;

-- Registration: inference, explicit columns, every error, replacement.
SET timezone = 'UTC';
SET datestyle = 'ISO';
CREATE TYPE register_env AS ENUM ('prod', 'dev');
CREATE DOMAIN register_label AS text;

-- inference: one timestamptz, one float8, labels of text/varchar/name/enum
CREATE TABLE cpu_usage (
	at timestamptz, host text, dc varchar(10), zone name, env register_env,
	extra register_label, port integer, value double precision);
SELECT prom_register('cpu_usage');
SELECT * FROM prom_metrics;

-- a timestamp column without time zone is inferred too
CREATE TABLE mem (at timestamp, host text, v float8);
SELECT prom_register('mem', 'mem_bytes');

-- explicit columns of any type; bigint milliseconds when named
CREATE TABLE disk (ms bigint, host text, port integer, used numeric, free real);
SELECT prom_register('disk', 'disk_used', time_column => 'ms',
	value_column => 'used', label_columns => '{host,port}');
SELECT prom_register('disk', 'disk_free', 'ms', 'free', '{}');
SELECT metric, relation, time_column, value_column, label_columns
FROM prom_metrics ORDER BY metric;

-- re-registering replaces the entry
SELECT prom_register('disk', 'disk_free', 'ms', 'free', '{host}');
SELECT label_columns FROM prom_metrics WHERE metric = 'disk_free';

-- views, materialized views, partitioned tables and foreign tables qualify
CREATE VIEW cpu_view AS SELECT at, host, value FROM cpu_usage;
SELECT prom_register('cpu_view');
CREATE MATERIALIZED VIEW cpu_mat AS SELECT at, host, value FROM cpu_usage;
SELECT prom_register('cpu_mat');
CREATE TABLE parted (at timestamptz, host text, v float8) PARTITION BY RANGE (at);
SELECT prom_register('parted');

-- errors: ambiguity and absence, with a hint naming the argument
CREATE TABLE two_times (a timestamptz, b timestamp, v float8);
SELECT prom_register('two_times');
SELECT prom_register('two_times', time_column => 'a');
CREATE TABLE two_values (t timestamptz, a float8, b float8);
SELECT prom_register('two_values');
CREATE TABLE no_time (ms bigint, v float8);
SELECT prom_register('no_time');
CREATE TABLE no_value (t timestamptz, v numeric);
SELECT prom_register('no_value');
SELECT prom_register('no_value', value_column => 'v');

-- errors: wrong types and missing columns
SELECT prom_register('disk', time_column => 'host');
SELECT prom_register('disk', time_column => 'ms', value_column => 'host');
SELECT prom_register('disk', time_column => 'nope');
SELECT prom_register('disk', 'x', 'ms', 'used', '{nope}');
SELECT prom_register('disk', 'x', 'ms', 'used', '{host,host}');
SELECT prom_register('disk', 'x', 'ms', 'used', '{ms}');
SELECT prom_register('disk', 'x', 'ms', 'used', ARRAY[NULL]::name[]);
SELECT prom_register('disk', 'x', 'ms', 'ms');

-- errors: names Prometheus does not accept
SELECT prom_register('cpu_usage', 'cpu-usage');
SELECT prom_register('cpu_usage', '9cpu');
SELECT prom_register('cpu_usage', '');
SELECT prom_register('cpu_usage', 'cpu:usage_total');
CREATE TABLE bad_label ("Host-Name" text, t timestamptz, v float8);
SELECT prom_register('bad_label');
SELECT prom_register('bad_label', label_columns => '{}');
CREATE TABLE reserved_label (__job text, t timestamptz, v float8);
SELECT prom_register('reserved_label');
SELECT prom_register('reserved_label', label_columns => '{__job}');

-- errors: not a relation that holds rows; NULL relation
CREATE SEQUENCE seq;
SELECT prom_register('seq');
CREATE INDEX cpu_host ON cpu_usage (host);
SELECT prom_register('cpu_host');
SELECT prom_register(NULL);

-- unregister
SELECT prom_unregister('cpu:usage_total');
SELECT prom_unregister('cpu:usage_total');
SELECT prom_unregister('never_registered');

-- a dropped relation takes its entries with it
DROP TABLE disk;
DROP VIEW cpu_view;
SELECT metric, relation FROM prom_metrics ORDER BY metric;

-- foreign tables qualify too
CREATE EXTENSION file_fdw;
CREATE SERVER files FOREIGN DATA WRAPPER file_fdw;
CREATE FOREIGN TABLE ext_temps (t timestamptz, room text, v float8)
	SERVER files OPTIONS (program 'printf "2024-01-01 00:00:01+00,hall,21.5\n"',
		format 'csv');
SELECT prom_register('ext_temps');
SELECT labels, ts, value FROM prom_series('ext_temps', '2024-01-01', '2024-01-02');

DROP MATERIALIZED VIEW cpu_mat;
DROP TABLE cpu_usage, mem, parted, two_times, two_values, no_time, no_value,
	bad_label, reserved_label;
DROP SEQUENCE seq;
DROP TYPE register_env;
DROP DOMAIN register_label;
DROP EXTENSION file_fdw CASCADE;
SELECT count(*) FROM prom_metrics;

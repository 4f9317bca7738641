-- Remote write into metrics in chunk storage (docs/chunk-storage.md): each
-- series resolved to its row of m#series (labels_hash, then the labels,
-- new ones added once), its samples appended to m#head bit for bit; new
-- labels, overflow labels, histograms, exemplars, metadata, privileges and
-- the response headers' counts; read back through prom_series.
SET timezone = 'UTC';
SET datestyle = 'ISO';
\set abs_srcdir `pwd` '/test'
\set wire_helpers :abs_srcdir '/fixtures/wire.sql'
\i :wire_helpers

-- 'ok' or 'refused' (a metric refused: response.status 400) and the
-- response headers, or the SQLSTATE and message of the request's refusal
CREATE FUNCTION try_write(request bytea) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
	PERFORM set_config('response.headers', '', true);
	PERFORM set_config('response.status', '', true);
	PERFORM prom_remote_write(request);
	RETURN CASE current_setting('response.status') WHEN '400' THEN 'refused ' ELSE 'ok ' END
		|| current_setting('response.headers');
EXCEPTION WHEN others THEN
	RETURN SQLSTATE || ': ' || SQLERRM;
END $$;
CREATE FUNCTION try_json(series jsonb) RETURNS text LANGUAGE sql AS $$
	SELECT try_write(prom_write_request(series))
$$;
-- a hand-made series: labels, and samples of any float8 bits (big-endian)
CREATE FUNCTION wc_label(name bytea, value bytea) RETURNS bytea
	LANGUAGE sql IMMUTABLE AS $$
	SELECT wire_field(1, wire_field(1, name) || wire_field(2, value))
$$;
CREATE FUNCTION wc_sample(ms bigint, bits bytea) RETURNS bytea
	LANGUAGE sql IMMUTABLE AS $$
	SELECT wire_field(2, '\x09'::bytea
		|| (SELECT string_agg(substr(bits, i, 1), ''::bytea ORDER BY i DESC)
			FROM generate_series(1, 8) AS i)
		|| '\x10'::bytea || wire_varint(ms))
$$;
CREATE FUNCTION wc_series(VARIADIC parts bytea[]) RETURNS bytea
	LANGUAGE sql IMMUTABLE AS $$
	SELECT wire_field(1, string_agg(p, ''::bytea ORDER BY i))
	FROM unnest(parts) WITH ORDINALITY AS u(p, i)
$$;
-- a metric's series and head rows, as the series' labels (jsonb) and the
-- values' bits
CREATE FUNCTION wc_rows(metric text)
	RETURNS TABLE (series_id bigint, labels jsonb, t bigint, bits text)
	LANGUAGE plpgsql AS $$
DECLARE
	s prom_metric_storage;
BEGIN
	SELECT * INTO STRICT s FROM prom_metric_storage AS m WHERE m.metric = wc_rows.metric;
	RETURN QUERY EXECUTE format(
		'SELECT h.series_id, jsonb_strip_nulls(to_jsonb(s) - ''series_id'' - ''labels_hash''),'
		' h.t, encode(float8send(h.value), ''hex'')'
		' FROM %s AS h JOIN %s AS s USING (series_id) ORDER BY h.series_id, h.t',
		s.head, s.series);
END $$;

CREATE SCHEMA wc;
SET promread.write_schema = wc;

-- A new metric is created in chunk storage.  Two series, one sent twice in
-- the request (one series row, the samples of both), a stale marker and
-- +Inf kept bit for bit.
SELECT try_json('[
  {"labels": {"__name__": "wc_up", "job": "node", "instance": "a:9100"},
   "samples": [[1700000000000, 1], [1700000015000, "StaleNaN"]]},
  {"labels": {"__name__": "wc_up", "job": "node", "instance": "b:9100", "zone": ""},
   "samples": [[1700000000000, 0.1]]},
  {"labels": {"__name__": "wc_up", "job": "node", "instance": "a:9100"},
   "samples": [[1700000030000, "+Inf"]]}]');
SHOW promread.write_storage;
SELECT metric, relation, series, chunks, head FROM prom_metric_storage WHERE metric = 'wc_up';
SELECT relation, label_columns, created_by_write FROM prom_metrics WHERE metric = 'wc_up';
SELECT * FROM wc_rows('wc_up');
-- labels_hash is xxHash64 of 'instance' 0xff 'a:9100' 0xff 'job' 0xff 'node' 0xff
-- (values computed apart, with libxxhash's XXH64, seed 0)
SELECT labels_hash, instance, job FROM wc."wc_up#series" ORDER BY series_id;

-- a NaN of another payload and -0, sent by hand, kept bit for bit
SELECT try_write(snappy_literal(wc_series(wc_label('__name__', 'wc_up'),
	wc_label('instance', 'a:9100'), wc_label('job', 'node'),
	wc_sample(1700000045000, '\x8000000000000000'),
	wc_sample(1700000060000, '\x7ff8000000000001'),
	wc_sample(1700000061000, '\xfff0000000000002'))));
SELECT t, bits FROM wc_rows('wc_up') WHERE t >= 1700000045000;

-- a series already present gets no new row, whatever the request's order
SELECT try_json('[
  {"labels": {"__name__": "wc_up", "job": "node", "instance": "b:9100"}, "samples": [[1700000075000, 2]]},
  {"labels": {"__name__": "wc_up", "job": "node", "instance": "a:9100"}, "samples": [[1700000075000, 3]]}]');
SELECT count(*) AS two_series FROM wc."wc_up#series";
-- a label set included in another's is another series
SELECT try_json('[{"labels": {"__name__": "wc_up", "job": "node"}, "samples": [[1700000090000, 4]]}]');
SELECT series_id, labels, t, bits FROM wc_rows('wc_up') WHERE t >= 1700000075000;

-- a new label: a column of the series table and of the view, appended
SELECT try_json('[{"labels": {"__name__": "wc_up", "job": "node", "instance": "a:9100", "rack": "r1"},
                   "samples": [[1700000105000, 5]]}]');
SELECT label_columns FROM prom_metrics WHERE metric = 'wc_up';
SELECT attname FROM pg_attribute WHERE attrelid = 'wc.wc_up'::regclass AND attnum > 0 ORDER BY attnum;
SELECT series_id, labels FROM wc_rows('wc_up') WHERE t = 1700000105000;
SELECT count(*) AS four_series FROM wc."wc_up#series";

-- read back through the registered view, as SQL and prom_series see it
SELECT labels, ts, value FROM prom_series('wc_up', '2023-11-14', '2023-11-15');
SELECT instance, job, rack, ts, value FROM wc.wc_up ORDER BY instance, ts;

-- a series row deleted is added again: no series id outlives its row
DELETE FROM wc."wc_up#series" WHERE job = 'node' AND instance IS NULL;
SELECT try_json('[{"labels": {"__name__": "wc_up", "job": "node"}, "samples": [[1700000110000, 6]]}]');
SELECT series_id, labels, t FROM wc_rows('wc_up') WHERE labels = '{"job": "node"}';

-- a time outside PostgreSQL's range refuses the metric, nothing written
SELECT try_json('[{"labels": {"__name__": "wc_up", "job": "far"}, "samples": [[9223372036854775807, 1]]}]');
SELECT count(*) AS four_series FROM wc."wc_up#series";

-- Overflow labels: past promread.write_max_label_columns, the series table
-- gets __labels jsonb; a series is found by its columns and its overflow
-- labels both.
SET promread.write_max_label_columns = 1;
SELECT try_json('[
  {"labels": {"__name__": "wc_over", "a": "1", "b": "2", "c": "3"}, "samples": [[1700000000000, 1]]},
  {"labels": {"__name__": "wc_over", "a": "1", "b": "2"}, "samples": [[1700000000000, 2]]},
  {"labels": {"__name__": "wc_over", "a": "1"}, "samples": [[1700000000000, 3]]}]');
SELECT label_columns, overflow_column FROM prom_metrics WHERE metric = 'wc_over';
SELECT try_json('[
  {"labels": {"__name__": "wc_over", "a": "1", "b": "2", "c": "3"}, "samples": [[1700000015000, 4]]},
  {"labels": {"__name__": "wc_over", "a": "1", "c": "3", "b": "2"}, "samples": [[1700000030000, 5]]},
  {"labels": {"__name__": "wc_over", "a": "1", "d": "4"}, "samples": [[1700000015000, 6]]}]');
SELECT series_id, labels, t, bits FROM wc_rows('wc_over');
SELECT labels, value FROM prom_series('wc_over', '2023-11-14', '2023-11-15');
RESET promread.write_max_label_columns;

-- Native histograms: a prom_histogram head, the float staleness marker that
-- ends a series stored as a stale histogram; floats refused (22023)
SELECT try_json('[{"labels": {"__name__": "wc_hist", "job": "h"},
   "histograms": [{"timestamp": 1700000000000, "count_int": 2, "sum": 1.5, "schema": 0,
                   "zero_count_int": 2}],
   "samples": [[1700000015000, "StaleNaN"]]}]');
SELECT format_type(atttypid, atttypmod) FROM pg_attribute
WHERE attrelid = (SELECT head FROM prom_metric_storage WHERE metric = 'wc_hist') AND attname = 'value';
SELECT h.series_id, h.t, h.value::text FROM wc."wc_hist#head" AS h ORDER BY t;
SELECT try_json('[{"labels": {"__name__": "wc_hist", "job": "h"}, "samples": [[1700000030000, 1]]}]');
SELECT count(*) AS two_rows FROM wc."wc_hist#head";
SELECT labels, ts, histograms FROM prom_series('wc_hist', '2023-11-14', '2023-11-15');

-- Exemplars go to the table beside the metric's view
SELECT try_json('[{"labels": {"__name__": "wc_up", "job": "node", "instance": "a:9100"},
   "samples": [[1700000120000, 6]],
   "exemplars": [{"timestamp": 1700000120000, "value": 6, "labels": {"trace_id": "abc"}}]}]');
SELECT metric, relation FROM prom_exemplars WHERE metric = 'wc_up';
SELECT ts, value, series, labels FROM wc."wc_up#exemplars";

-- Privileges: a role without rights on the tables writes nothing (42501);
-- one with INSERT on the head and SELECT and INSERT on the series table
-- writes, adding series; its new label needs the owner (42501)
CREATE ROLE wc_writer;
CREATE ROLE wc_intruder;
GRANT USAGE ON SCHEMA wc TO wc_writer, wc_intruder;
GRANT INSERT ON wc."wc_up#head" TO wc_writer;
GRANT SELECT, INSERT ON wc."wc_up#series" TO wc_writer;
GRANT INSERT ON wc."wc_up#head" TO wc_intruder;
SELECT count(*) AS head_rows FROM wc."wc_up#head" \gset
SET ROLE wc_intruder;
SELECT try_json('[{"labels": {"__name__": "wc_up", "job": "node", "instance": "a:9100"}, "samples": [[1700000150000, 8]]}]');
SELECT try_json('[{"labels": {"__name__": "wc_up", "job": "intruder"}, "samples": [[1700000150000, 8]]}]');
SET ROLE wc_writer;
SELECT try_json('[{"labels": {"__name__": "wc_up", "job": "node", "instance": "a:9100"}, "samples": [[1700000150000, 9]]},
                  {"labels": {"__name__": "wc_up", "job": "writer"}, "samples": [[1700000150000, 10]]}]');
SELECT try_json('[{"labels": {"__name__": "wc_up", "job": "writer", "extra": "x"}, "samples": [[1700000165000, 11]]}]');
-- metadata of a family is written by who may write its metrics' heads
SELECT try_write(snappy_literal(wire_field(3, '\x0801'::bytea
	|| wire_field(2, 'wc_up') || wire_field(4, 'Targets up.') || wire_field(5, ''))));
RESET ROLE;
REVOKE INSERT ON wc."wc_up#head" FROM wc_intruder;
SET ROLE wc_intruder;
SELECT try_write(snappy_literal(wire_field(3, '\x0802'::bytea
	|| wire_field(2, 'wc_up') || wire_field(4, 'Hijacked.'))));
RESET ROLE;
SELECT metric, type, help, writer FROM prom_metric_metadata WHERE metric = 'wc_up';
SELECT count(*) - :head_rows AS two_more FROM wc."wc_up#head";
SELECT series_id, labels, t, bits FROM wc_rows('wc_up') WHERE t >= 1700000150000;
-- a trigger on the head of a role the writer does not trust refuses the write
CREATE FUNCTION wc_noop() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NEW; END $$;
-- (the head and each of its partitions, which the trigger is cloned to)
DO $$ DECLARE r regclass; BEGIN
	FOR r IN SELECT relid FROM pg_partition_tree('wc."wc_up#head"') LOOP
		EXECUTE format('ALTER TABLE %s OWNER TO wc_intruder', r);
	END LOOP; END $$;
SET ROLE wc_intruder;
CREATE TRIGGER wc_noop BEFORE INSERT ON wc."wc_up#head" FOR EACH ROW EXECUTE FUNCTION wc_noop();
SET ROLE wc_writer;
SELECT try_json('[{"labels": {"__name__": "wc_up", "job": "writer"}, "samples": [[1700000180000, 12]]}]');
RESET ROLE;
DROP TRIGGER wc_noop ON wc."wc_up#head";
DO $$ DECLARE r regclass; BEGIN
	FOR r IN SELECT relid FROM pg_partition_tree('wc."wc_up#head"') LOOP
		EXECUTE format('ALTER TABLE %s OWNER TO CURRENT_USER', r);
	END LOOP; END $$;

-- A request that needs more new metrics than promread.write_max_new_metrics
-- creates that many (in the order of their names), writes none of its
-- samples, and is answered with 503 and a WARNING: each metric created
-- holds its relations' locks until commit, in the lock table all sessions
-- share.  Sent again, it creates the next ones, until it is written whole.
-- A role that may create none of them is not asked to retry: the write
-- refuses those metrics (42501, 400) and writes the others.
SET promread.write_max_new_metrics = 2;
CREATE FUNCTION wc_try_status(request bytea) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
	PERFORM set_config('response.headers', '', true);
	PERFORM set_config('response.status', '', true);
	PERFORM prom_remote_write(request);
	RETURN 'status ' || coalesce(nullif(current_setting('response.status'), ''), '200')
		|| ' ' || current_setting('response.headers');
EXCEPTION WHEN others THEN
	RETURN SQLSTATE || ': ' || SQLERRM;
END $$;
CREATE FUNCTION wc_new_metrics(prefix text, n int) RETURNS bytea LANGUAGE sql AS $$
	SELECT prom_write_request(jsonb_agg(jsonb_build_object(
		'labels', jsonb_build_object('__name__', prefix || i, 'job', 'n'),
		'samples', jsonb_build_array(jsonb_build_array(1700000000000 + i, i)))
		ORDER BY i DESC) || '[{"labels": {"__name__": "wc_up", "job": "n"},
			"samples": [[1700000000000, 7]]}]')
	FROM generate_series(1, n) i $$;
CREATE VIEW wc_new_state AS
	SELECT (SELECT string_agg(metric, ',' ORDER BY metric) FROM prom_metrics
			WHERE metric LIKE 'wc\_new\_%') AS metrics,
		(SELECT count(*) FROM prom_series('{__name__=~"wc_new_.*|wc_up", job="n"}',
			'2023-11-14', '2023-11-15')) AS series_written;
SELECT wc_try_status(wc_new_metrics('wc_new_', 5));
SELECT * FROM wc_new_state;
SELECT wc_try_status(wc_new_metrics('wc_new_', 5));
SELECT * FROM wc_new_state;
SELECT wc_try_status(wc_new_metrics('wc_new_', 5));
SELECT * FROM wc_new_state;
GRANT INSERT ON wc."wc_up#head" TO wc_writer;
SET ROLE wc_writer;
SELECT wc_try_status(wc_new_metrics('wc_denied_', 3));
RESET ROLE;
SELECT count(*) AS none_created FROM prom_metrics WHERE metric LIKE 'wc\_denied\_%';
-- a call from a trigger creates every metric it needs: no one would send
-- its samples again
CREATE TABLE wc_outer (ts timestamptz NOT NULL, value float8, job text COLLATE "C");
SELECT prom_register('wc_outer');
CREATE FUNCTION wc_outer_nested() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	PERFORM prom_remote_write(wc_new_metrics('wc_nested_', 3));
	RETURN NEW;
END $$;
CREATE TRIGGER nested BEFORE INSERT ON wc_outer
	FOR EACH ROW EXECUTE FUNCTION wc_outer_nested();
SELECT wc_try_status(prom_write_request('[{"labels": {"__name__": "wc_outer", "job": "o"},
	"samples": [[1700000000000, 1]]}]'));
SELECT (SELECT count(*) FROM prom_metrics WHERE metric LIKE 'wc\_nested\_%') AS nested_metrics,
	(SELECT count(*) FROM prom_series('{__name__=~"wc_nested_.*"}', '2023-11-14', '2023-11-15'))
		AS nested_series,
	(SELECT count(*) FROM wc_outer) AS outer_rows;
DROP TABLE wc_outer;
DROP FUNCTION wc_outer_nested;
RESET promread.write_max_new_metrics;

-- promread.write_storage = rows creates a table, as before 0.5.0
SET promread.write_storage = rows;
SELECT try_json('[{"labels": {"__name__": "wc_rows_metric", "job": "r"}, "samples": [[1700000000000, 1]]}]');
SELECT relkind FROM pg_class WHERE oid = 'wc.wc_rows_metric'::regclass;
SELECT count(*) AS no_storage FROM prom_metric_storage WHERE metric = 'wc_rows_metric';
RESET promread.write_storage;
SET promread.write_storage = 'blocks';

DROP SCHEMA wc CASCADE;
DROP OWNED BY wc_writer, wc_intruder;
DROP ROLE wc_writer, wc_intruder;

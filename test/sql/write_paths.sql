-- Remote write through each of its paths (COPY into tables, INSERT into
-- the rest): a trigger that writes again while a write is in progress,
-- client encodings, labels without a column, privileges, time ranges and
-- the names of created tables.
SET timezone = 'UTC';
SET datestyle = 'ISO';
CREATE SCHEMA wp;
SET promread.write_schema = wp;

-- the SQLSTATE and message of writing a request
CREATE FUNCTION wp_try(request bytea) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
	PERFORM set_config('response.status', '', true);
	PERFORM prom_remote_write(request);
	-- metrics refused, the others written: a WARNING, and 400 for PostgREST
	IF current_setting('response.status') = '400' THEN
		RETURN 'refused';
	END IF;
	RETURN 'ok';
EXCEPTION WHEN others THEN
	RETURN SQLSTATE || ': ' || SQLERRM;
END $$;
CREATE FUNCTION wp_json(series jsonb) RETURNS text LANGUAGE sql AS $$
	SELECT wp_try(prom_write_request(series))
$$;

-- A BEFORE ROW trigger that writes other metrics while the write of its
-- own table is in progress, under every path: the outer write by COPY (a
-- table; 2,501 rows, more than COPY reads from its source at once), by
-- INSERT (a value column of type numeric) and through a view; the inner
-- ones by COPY and by INSERT, and once more by COPY refusing its metric (a
-- subtransaction rolled back under the outer COPY; its WARNING silenced).
-- Both writes are whole, and the outer one is not refused.
CREATE TABLE wp_inner_copy (ts timestamptz NOT NULL, value float8 CHECK (value >= 0),
	host text COLLATE "C");
SELECT prom_register('wp_inner_copy');
CREATE TABLE wp_inner_insert (ts timestamptz NOT NULL, value numeric, host text COLLATE "C");
SELECT prom_register('wp_inner_insert', 'wp_inner_insert', 'ts', 'value', '{host}');
CREATE FUNCTION wp_nested() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
	ms bigint := (extract(epoch FROM NEW.ts) * 1000)::bigint;
	metric text;
BEGIN
	IF NEW.value::numeric % 1000 <> 0 THEN
		RETURN NEW;
	END IF;
	FOREACH metric IN ARRAY ARRAY['wp_inner_copy', 'wp_inner_insert'] LOOP
		PERFORM prom_remote_write(prom_write_request(jsonb_build_array(jsonb_build_object(
			'labels', jsonb_build_object('__name__', metric,
										 'host', TG_TABLE_NAME || '/' || NEW.host),
			'samples', jsonb_build_array(jsonb_build_array(ms, NEW.value))))));
	END LOOP;
	PERFORM prom_remote_write(prom_write_request(jsonb_build_array(jsonb_build_object(
		'labels', jsonb_build_object('__name__', 'wp_inner_copy', 'host', 'refused'),
		'samples', jsonb_build_array(jsonb_build_array(ms, -1))))));
	RETURN NEW;
END $$ SET client_min_messages = error;
CREATE TABLE wp_outer_copy (ts timestamptz NOT NULL, value float8, host text COLLATE "C");
CREATE TABLE wp_outer_insert (ts timestamptz NOT NULL, value numeric, host text COLLATE "C");
CREATE TABLE wp_outer_base (ts timestamptz NOT NULL, value float8, host text COLLATE "C");
CREATE VIEW wp_outer_view AS SELECT ts, value, host FROM wp_outer_base;
CREATE TRIGGER nested BEFORE INSERT ON wp_outer_copy
	FOR EACH ROW EXECUTE FUNCTION wp_nested();
CREATE TRIGGER nested BEFORE INSERT ON wp_outer_insert
	FOR EACH ROW EXECUTE FUNCTION wp_nested();
CREATE TRIGGER nested BEFORE INSERT ON wp_outer_base
	FOR EACH ROW EXECUTE FUNCTION wp_nested();
SELECT prom_register('wp_outer_copy');
SELECT prom_register('wp_outer_insert', 'wp_outer_insert', 'ts', 'value', '{host}');
SELECT prom_register('wp_outer_view', 'wp_outer_view', 'ts', 'value', '{host}');
-- each outer metric: 2,500 samples of host a (values 0 to 2499), one of
-- host b (5000); the trigger writes for the values 0, 1000, 2000, 5000
SELECT wp_json(jsonb_build_array(
	jsonb_build_object('labels', jsonb_build_object('__name__', m, 'host', 'a'),
					   'samples', (SELECT jsonb_agg(jsonb_build_array(1700000000000 + 1000 * i, i))
								   FROM generate_series(0, 2499) AS i)),
	jsonb_build_object('labels', jsonb_build_object('__name__', m, 'host', 'b'),
					   'samples', '[[1700000000000, 5000]]'::jsonb)))
FROM unnest(ARRAY['wp_outer_copy', 'wp_outer_insert', 'wp_outer_view']) AS m;
SELECT 'copy' AS outer, host, count(*), sum(value), min(ts), max(ts) FROM wp_outer_copy GROUP BY 1, 2
UNION ALL SELECT 'insert', host, count(*), sum(value), min(ts), max(ts) FROM wp_outer_insert GROUP BY 1, 2
UNION ALL SELECT 'view', host, count(*), sum(value), min(ts), max(ts) FROM wp_outer_base GROUP BY 1, 2
ORDER BY 1, 2;
SELECT 'copy' AS inner, host, ts, value FROM wp_inner_copy
UNION ALL SELECT 'insert', host, ts, value FROM wp_inner_insert
ORDER BY 1, 2, 3;
-- the same in one request, inner metrics among the outer ones
SELECT wp_json(jsonb_build_array(
	jsonb_build_object('labels', jsonb_build_object('__name__', 'wp_inner_copy', 'host', 'direct'),
					   'samples', '[[1700000030000, 5]]'::jsonb),
	jsonb_build_object('labels', jsonb_build_object('__name__', 'wp_outer_copy', 'host', 'c'),
					   'samples', (SELECT jsonb_agg(jsonb_build_array(1700000000000 + 1000 * i, i))
								   FROM generate_series(0, 2999) AS i)),
	jsonb_build_object('labels', jsonb_build_object('__name__', 'wp_outer_view', 'host', 'c'),
					   'samples', '[[1700000030000, 8000]]'::jsonb)));
SELECT (SELECT count(*) FROM wp_outer_copy) AS outer_copy,
	(SELECT count(*) FROM wp_outer_base) AS outer_view,
	(SELECT count(*) FROM wp_inner_copy) AS inner_copy,
	(SELECT count(*) FROM wp_inner_insert) AS inner_insert,
	(SELECT count(*) FROM wp_inner_copy WHERE host = 'refused') AS refused;
DROP VIEW wp_outer_view;
DROP TABLE wp_outer_copy, wp_outer_insert, wp_outer_base, wp_inner_copy, wp_inner_insert;
DROP FUNCTION wp_nested;

-- Labels are the UTF-8 bytes Prometheus sent, whatever the session's
-- client_encoding: one series per metric under UTF8, LATIN1 and SJIS, on
-- both paths (Unicode escapes keep this file's text ASCII).
CREATE TABLE wp_enc_copy (ts timestamptz NOT NULL, value float8, city text COLLATE "C");
CREATE TABLE wp_enc_insert (ts timestamptz NOT NULL, value numeric, city text COLLATE "C");
SELECT prom_register('wp_enc_copy');
SELECT prom_register('wp_enc_insert', 'wp_enc_insert', 'ts', 'value', '{city}');
CREATE FUNCTION wp_enc_write() RETURNS text LANGUAGE sql AS $$
	SELECT string_agg(wp_json(jsonb_build_array(
		jsonb_build_object('labels', jsonb_build_object('__name__', m, 'city', U&'Z\00FCrich'),
						   'samples', jsonb_build_array(jsonb_build_array(
								1700000000000 + 1000 * pg_catalog.length(current_setting('client_encoding')), 1))),
		jsonb_build_object('labels', jsonb_build_object('__name__', m, 'city', U&'\6771\4EAC'),
						   'samples', '[[1700000000000, 2]]'::jsonb))), ', ')
	FROM unnest(ARRAY['wp_enc_copy', 'wp_enc_insert']) AS m
$$;
SET client_encoding = 'UTF8';
SELECT wp_enc_write();
SET client_encoding = 'LATIN1';
SELECT wp_enc_write();
SET client_encoding = 'SJIS';
SELECT wp_enc_write();
RESET client_encoding;
SELECT 'copy' AS path, convert_to(city, 'UTF8') AS city, count(*) FROM wp_enc_copy GROUP BY city
UNION ALL
SELECT 'insert', convert_to(city, 'UTF8'), count(*) FROM wp_enc_insert GROUP BY city
ORDER BY 1, 2;
SELECT count(*) AS four_series
FROM prom_series('{__name__=~"wp_enc_.*"}', '2023-11-14', '2023-11-15');
DROP TABLE wp_enc_copy, wp_enc_insert;
DROP FUNCTION wp_enc_write;

-- Labels without a column, dropped, sorting before, between and after the
-- labels that have one: the others keep their values, on both paths.
CREATE TABLE wp_gaps_copy (ts timestamptz NOT NULL, value float8, b text, d text);
CREATE TABLE wp_gaps_insert (ts timestamptz NOT NULL, value numeric, b text, d text);
SELECT prom_register('wp_gaps_copy', 'wp_gaps_copy', 'ts', 'value', '{b,d}');
SELECT prom_register('wp_gaps_insert', 'wp_gaps_insert', 'ts', 'value', '{b,d}');
SET promread.write_unknown_labels = drop;
SELECT wp_json(jsonb_build_array(
	jsonb_build_object('labels', jsonb_build_object('__name__', m, 'a', '1', 'b', '2', 'c', '3',
													'd', '4', 'e', '5'),
					   'samples', '[[1700000000000, 1]]'::jsonb),
	jsonb_build_object('labels', jsonb_build_object('__name__', m, 'a', '1', 'd', '6'),
					   'samples', '[[1700000001000, 2]]'::jsonb),
	jsonb_build_object('labels', jsonb_build_object('__name__', m, 'c', '3', 'd', '7'),
					   'samples', '[[1700000002000, 3]]'::jsonb)))
FROM unnest(ARRAY['wp_gaps_copy', 'wp_gaps_insert']) AS m;
RESET promread.write_unknown_labels;
SELECT 'copy' AS path, ts, b, d FROM wp_gaps_copy
UNION ALL SELECT 'insert', ts, b, d FROM wp_gaps_insert
ORDER BY 1, 2;
DROP TABLE wp_gaps_copy, wp_gaps_insert;

-- INSERT privilege on the columns written, checked on both paths (a table
-- written by COPY, a view written by INSERT)
CREATE ROLE regress_wp_writer;
GRANT USAGE ON SCHEMA wp TO regress_wp_writer;
CREATE TABLE wp.wp_priv (ts timestamptz NOT NULL, value float8, host text);
CREATE VIEW wp.wp_priv_view AS SELECT * FROM wp.wp_priv;
SELECT prom_register('wp.wp_priv', 'wp_priv');
SELECT prom_register('wp.wp_priv_view', 'wp_priv_view', 'ts', 'value', '{host}');
SET ROLE regress_wp_writer;
SELECT wp_json(jsonb_build_array(jsonb_build_object(
	'labels', jsonb_build_object('__name__', m), 'samples', '[[1700000000000, 1]]'::jsonb)))
FROM unnest(ARRAY['wp_priv', 'wp_priv_view']) AS m;
RESET ROLE;
GRANT INSERT (ts, value) ON wp.wp_priv, wp.wp_priv_view TO regress_wp_writer;
SET ROLE regress_wp_writer;
SELECT wp_json(jsonb_build_array(jsonb_build_object(
	'labels', jsonb_build_object('__name__', m, 'host', 'h'), 'samples', '[[1700000000000, 1]]'::jsonb)))
FROM unnest(ARRAY['wp_priv', 'wp_priv_view']) AS m;
SELECT wp_json(jsonb_build_array(jsonb_build_object(
	'labels', jsonb_build_object('__name__', m), 'samples', '[[1700000000000, 1]]'::jsonb)))
FROM unnest(ARRAY['wp_priv', 'wp_priv_view']) AS m;
RESET ROLE;
SELECT * FROM wp.wp_priv;
DROP VIEW wp.wp_priv_view;
DROP TABLE wp.wp_priv;
REVOKE USAGE ON SCHEMA wp FROM regress_wp_writer;
DROP ROLE regress_wp_writer;

-- times before 4714-11-24 BC or after 294276 AD: 22008 on both paths; as int8
-- (ms since the epoch) any time fits
CREATE TABLE wp_time_insert (ts timestamptz NOT NULL, value numeric);
CREATE TABLE wp_time_ms (ts bigint NOT NULL, value float8);
SELECT prom_register('wp_time_insert', 'wp_time_insert', 'ts', 'value', '{}');
SELECT prom_register('wp_time_ms', 'wp_time_ms', 'ts', 'value', '{}');
SELECT m, t, wp_json(jsonb_build_array(jsonb_build_object(
	'labels', jsonb_build_object('__name__', m),
	'samples', jsonb_build_array(jsonb_build_array(t, 1)))))
FROM unnest(ARRAY['wp_time_copy', 'wp_time_insert', 'wp_time_ms']) AS m,
	unnest(ARRAY[-210866803200001, -210866803200000, 9224318016000000]) AS t
ORDER BY 1, 2;
SELECT ts FROM wp.wp_time_copy UNION ALL SELECT ts FROM wp_time_insert ORDER BY 1;
SELECT ts FROM wp_time_ms ORDER BY 1;
DROP TABLE wp_time_insert, wp_time_ms;

-- created tables are named as their metric up to 63 bytes, cut and hashed
-- from 64 on
SELECT length(m), wp_json(jsonb_build_array(jsonb_build_object(
	'labels', jsonb_build_object('__name__', m), 'samples', '[[1700000000000, 1]]'::jsonb)))
FROM unnest(ARRAY[repeat('n', 62), repeat('n', 63), repeat('n', 64)]) AS m ORDER BY 1;
SELECT length(metric), relation::text = 'wp.' || metric AS named_as_metric,
	relation::text ~ ('^wp\.' || repeat('n', 54) || '_[0-9a-f]{8}$') AS cut_and_hashed
FROM prom_metrics WHERE metric ~ '^n+$' ORDER BY 1;

-- Samples that can never be written (a data exception, an integrity
-- constraint violation): their metric is refused, the others are written,
-- once each however many metrics are refused before and after them.
CREATE TYPE wp_zone AS ENUM ('eu', 'us');
CREATE TABLE wp_zoned (ts timestamptz NOT NULL, value float8, zone wp_zone);
CREATE TABLE wp_checked (ts timestamptz NOT NULL, value float8 CHECK (value < 100));
CREATE TABLE wp_locked (ts timestamptz NOT NULL, value float8);
SELECT prom_register('wp_zoned');
SELECT prom_register('wp_checked');
SELECT prom_register('wp_locked');
CREATE FUNCTION wp_mixed(zone text, value float8, ms bigint) RETURNS bytea LANGUAGE sql AS $$
	SELECT prom_write_request(jsonb_build_array(
		jsonb_build_object('labels', '{"__name__": "wp_fine", "host": "a"}'::jsonb,
						   'samples', '[[1700000000000, 1]]'::jsonb),
		jsonb_build_object('labels', jsonb_build_object('__name__', 'wp_zoned', 'zone', zone),
						   'samples', '[[1700000000000, 1], [1700000001000, 2]]'::jsonb),
		jsonb_build_object('labels', '{"__name__": "wp_checked"}'::jsonb,
						   'samples', jsonb_build_array(jsonb_build_array(1700000000000, value))),
		jsonb_build_object('labels', '{"__name__": "wp_time"}'::jsonb,
						   'samples', jsonb_build_array(jsonb_build_array(ms, 1)))))
$$;
SELECT wp_try(wp_mixed('mars', 1, 1700000000000));
SELECT wp_try(wp_mixed('eu', 100, 1700000000000));
SELECT wp_try(wp_mixed('eu', 1, -210866803200001));
SELECT wp_try(wp_mixed('mars', 100, -210866803200001));
SELECT count(*) AS four_requests FROM wp.wp_fine;
SELECT (SELECT count(*) FROM wp_zoned) AS zoned, (SELECT count(*) FROM wp_checked) AS checked,
	(SELECT count(*) FROM wp.wp_time) AS "time";
SELECT wp_try(wp_mixed('us', 1, 1700000000000));
SELECT labels, cardinality(ts) FROM prom_series('{__name__=~"wp_.*"}', '2023-11-14', '2023-11-15')
ORDER BY 1;
-- a metric the role may not write is refused alone as well
CREATE ROLE regress_wp_partial;
GRANT USAGE ON SCHEMA wp TO regress_wp_partial;
GRANT INSERT ON wp_zoned TO regress_wp_partial;
SET ROLE regress_wp_partial;
SELECT wp_json('[{"labels": {"__name__": "wp_zoned", "zone": "eu"}, "samples": [[1700000002000, 3]]},
                 {"labels": {"__name__": "wp_locked"}, "samples": [[1700000002000, 3]]}]');
RESET ROLE;
SELECT (SELECT count(*) FROM wp_zoned WHERE value = 3) AS zoned_written,
	(SELECT count(*) FROM wp_locked) AS locked_none;
-- a failure that a retry may fix (a serialization failure, raised by a
-- trigger of the last metric) fails the whole request: nothing written;
-- a trigger's own refusal (P0001) refuses its metric only
CREATE FUNCTION wp_raise() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	IF NEW.value = 40001 THEN
		RAISE EXCEPTION 'try again' USING ERRCODE = 'serialization_failure';
	END IF;
	RAISE EXCEPTION 'not these samples';
END $$;
CREATE TRIGGER wp_raise BEFORE INSERT ON wp_locked FOR EACH ROW EXECUTE FUNCTION wp_raise();
SELECT wp_json('[{"labels": {"__name__": "wp_zoned", "zone": "eu"}, "samples": [[1700000003000, 4]]},
                 {"labels": {"__name__": "wp_locked"}, "samples": [[1700000003000, 40001]]}]');
SELECT wp_json('[{"labels": {"__name__": "wp_zoned", "zone": "eu"}, "samples": [[1700000003000, 5]]},
                 {"labels": {"__name__": "wp_locked"}, "samples": [[1700000003000, 1]]}]');
SELECT value, count(*) FROM wp_zoned WHERE value IN (4, 5) GROUP BY value;
SELECT count(*) AS locked_none FROM wp_locked;
DROP FUNCTION wp_mixed;
DROP TABLE wp_zoned, wp_checked, wp_locked;
DROP FUNCTION wp_raise;
DROP TYPE wp_zone;
REVOKE USAGE ON SCHEMA wp FROM regress_wp_partial;
DROP ROLE regress_wp_partial;

DROP SCHEMA wp CASCADE;
DROP FUNCTION wp_try, wp_json;

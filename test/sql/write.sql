-- Remote write: prom_remote_write stores a WriteRequest's samples in the
-- registered relations, creates tables for new metrics, refuses the metrics
-- it cannot write (their errors in a WARNING), and honours privileges and RLS.
SET timezone = 'UTC';
SET datestyle = 'ISO';
\set abs_srcdir `pwd` '/test'
\set wire_helpers :abs_srcdir '/fixtures/wire.sql'
\i :wire_helpers

-- the SQLSTATE, message and detail of writing a request
CREATE FUNCTION try_write(request bytea) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
	detail text;
BEGIN
	PERFORM set_config('response.status', '', true);
	PERFORM prom_remote_write(request);
	-- metrics refused, the others written: a WARNING, and 400 for PostgREST
	IF current_setting('response.status') = '400' THEN
		RETURN 'refused';
	END IF;
	RETURN 'ok';
EXCEPTION WHEN others THEN
	GET STACKED DIAGNOSTICS detail = PG_EXCEPTION_DETAIL;
	RETURN SQLSTATE || ': ' || SQLERRM || coalesce(' (' || nullif(detail, '') || ')', '');
END $$;
CREATE FUNCTION try_json(series jsonb) RETURNS text LANGUAGE sql AS $$
	SELECT try_write(prom_write_request(series))
$$;
-- a hand-made TimeSeries field: a label, a sample (time in ms, value 0)
CREATE FUNCTION wr_label(name bytea, value bytea) RETURNS bytea
	LANGUAGE sql IMMUTABLE AS $$
	SELECT wire_field(1, wire_field(1, name) || wire_field(2, value))
$$;
CREATE FUNCTION wr_sample(ms bigint) RETURNS bytea LANGUAGE sql IMMUTABLE AS $$
	SELECT wire_field(2, '\x10'::bytea || wire_varint(ms))
$$;
-- a hand-made sample of any float8, its bits as they are (jsonb has no -0)
CREATE FUNCTION wr_sample_value(ms bigint, value float8) RETURNS bytea
	LANGUAGE sql IMMUTABLE AS $$
	SELECT wire_field(2, '\x09'::bytea
		|| (SELECT string_agg(substr(float8send(value), i, 1), ''::bytea ORDER BY i DESC)
			FROM generate_series(1, 8) AS i)
		|| '\x10'::bytea || wire_varint(ms))
$$;
CREATE FUNCTION wr_series(VARIADIC parts bytea[]) RETURNS bytea
	LANGUAGE sql IMMUTABLE AS $$
	SELECT wire_field(1, string_agg(p, ''::bytea ORDER BY i))
	FROM unnest(parts) WITH ORDINALITY AS u(p, i)
$$;
-- the samples of a metric as remote read answers them
CREATE FUNCTION wr_read(selector text) RETURNS jsonb LANGUAGE sql AS $$
	SELECT prom_read_response_json(prom_remote_read(
		prom_read_request(selector, '2023-11-14', '2023-11-15')))
$$;

CREATE SCHEMA wr;
SET promread.write_schema = wr;
-- the tables of row storage, which this suite inspects and alters
-- (write_chunks covers chunk storage, remote write's default)
SET promread.write_storage = rows;

-- a new metric gets a table of its own: ts, value, a text column per label
-- (an empty label is absent); values are kept bit for bit (a -0 sent by
-- hand, which jsonb cannot hold)
SELECT try_json('[
  {"labels": {"__name__": "wr_up", "job": "node", "instance": "a:9100"},
   "samples": [[1700000000000, 1], [1700000015000, "StaleNaN"],
               [1700000030000, "+Inf"]]},
  {"labels": {"__name__": "wr_up", "job": "node", "instance": "b:9100", "zone": ""},
   "samples": [[1700000000000, 0.1]]}]');
SELECT snappy_literal(wr_series(wr_label('__name__', 'wr_up'), wr_label('instance', 'a:9100'),
	wr_label('job', 'node'), wr_sample_value(1700000045000, '-0'))) AS minus_zero \gset
SELECT try_write(:'minus_zero');
\d wr.wr_up
SELECT metric, relation, time_column, value_column, label_columns, created_by_write
FROM prom_metrics WHERE metric = 'wr_up';
SELECT instance, job, ts, float8send(value) FROM wr.wr_up ORDER BY instance, ts;
SELECT wr_read('wr_up');

-- a label the table has no column for becomes one
SELECT try_json('[{"labels": {"__name__": "wr_up", "job": "node", "instance": "c:9100", "rack": "r1"},
                   "samples": [[1700000000000, 2]]}]');
SELECT label_columns FROM prom_metrics WHERE metric = 'wr_up';
SELECT wr_read('wr_up{rack="r1"}');

-- Prometheus retries a request that failed: written again, it reads the same
SELECT prom_remote_read(prom_read_request('wr_up', '2023-11-14', '2023-11-15')) AS before \gset
SELECT try_json('[{"labels": {"__name__": "wr_up", "job": "node", "instance": "a:9100"},
                   "samples": [[1700000000000, 1], [1700000015000, "StaleNaN"],
                               [1700000030000, "+Inf"]]}]');
SELECT try_write(:'minus_zero');
SELECT count(*) AS rows_now_twice FROM wr.wr_up WHERE instance = 'a:9100';
SELECT prom_remote_read(prom_read_request('wr_up', '2023-11-14', '2023-11-15')) = :'before'
	AS same_answer;

-- a metric name longer than an identifier: the table's name is cut and hashed
SELECT try_json(jsonb_build_array(jsonb_build_object(
	'labels', jsonb_build_object('__name__', repeat('long_', 15)),
	'samples', '[[1700000000000, 5]]'::jsonb)));
SELECT relation::text ~ '^wr\.(long_){10}long_[0-9a-f]{8}$' AS cut_and_hashed
FROM prom_metrics WHERE metric = repeat('long_', 15);

-- a label named as the created table's time or value column gets a column of
-- another name (label_names.sql reads such labels back)
SELECT try_json('[{"labels": {"__name__": "wr_up", "value": "x"}, "samples": [[1700000000000, 1]]}]');

-- a registered table of the user's: enum, varchar and int8 (ms) columns
CREATE TYPE wr_zone AS ENUM ('eu', 'us');
CREATE TABLE wr_user (t bigint NOT NULL, v numeric, host varchar(5), zone wr_zone);
SELECT prom_register('wr_user', 'wr_user', 't', 'v', '{host,zone}');
SELECT try_json('[{"labels": {"__name__": "wr_user", "host": "h1", "zone": "eu"}, "samples": [[1700000000000, 1.5]]},
                  {"labels": {"__name__": "wr_user", "host": "h2"}, "samples": [[1700000000001, 2]]}]');
SELECT * FROM wr_user ORDER BY t;
-- values that do not fit the columns refuse the whole request
SELECT try_json('[{"labels": {"__name__": "wr_user", "host": "h3"}, "samples": [[1700000000002, 3]]},
                  {"labels": {"__name__": "wr_user", "zone": "mars"}, "samples": [[1700000000003, 3]]}]');
SELECT try_json('[{"labels": {"__name__": "wr_user", "host": "toolong"}, "samples": [[1700000000002, 3]]}]');
SELECT count(*) AS still_two FROM wr_user;
-- a label without a column: refused, or dropped when asked
SELECT try_json('[{"labels": {"__name__": "wr_user", "host": "h4", "rack": "r1"}, "samples": [[1700000000004, 4]]}]');
SET promread.write_unknown_labels = drop;
SELECT try_json('[{"labels": {"__name__": "wr_user", "host": "h4", "rack": "r1"}, "samples": [[1700000000004, 4]]}]');
RESET promread.write_unknown_labels;
SELECT * FROM wr_user WHERE host = 'h4';
SELECT wr_read('wr_user{host="h4"}');

-- a partitioned table (written by COPY: rows routed to their partitions,
-- triggers fired) and an updatable view (written by INSERT)
CREATE TABLE wr_parts (ts timestamptz NOT NULL, value float8, host text COLLATE "C")
	PARTITION BY RANGE (ts);
CREATE TABLE wr_parts_2023 PARTITION OF wr_parts
	FOR VALUES FROM ('2023-01-01') TO ('2024-01-01');
CREATE TABLE wr_parts_2024 PARTITION OF wr_parts
	FOR VALUES FROM ('2024-01-01') TO ('2025-01-01');
CREATE TABLE wr_seen (host text);
CREATE FUNCTION wr_seen() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	INSERT INTO wr_seen VALUES (NEW.host);
	RETURN NEW;
END $$;
CREATE TRIGGER seen BEFORE INSERT ON wr_parts_2024 FOR EACH ROW EXECUTE FUNCTION wr_seen();
SELECT prom_register('wr_parts');
SELECT try_json('[{"labels": {"__name__": "wr_parts", "host": "a"},
                   "samples": [[1700000000000, 1], [1704067200000, 2], [1704067215000, 3]]}]');
SELECT tableoid::regclass, * FROM wr_parts ORDER BY ts;
SELECT host, count(*) FROM wr_seen GROUP BY host;
SELECT try_json('[{"labels": {"__name__": "wr_parts"}, "samples": [[1800000000000, 1]]}]');
CREATE VIEW wr_view AS SELECT ts, value, host FROM wr_parts;
SELECT prom_register('wr_view', 'wr_view', 'ts', 'value', '{host}');
SELECT try_json('[{"labels": {"__name__": "wr_view", "host": "v"}, "samples": [[1704067230000, 4]]}]');
SELECT tableoid::regclass, * FROM wr_parts WHERE host = 'v';
DROP VIEW wr_view;
DROP TABLE wr_parts, wr_seen;
DROP FUNCTION wr_seen;

-- metrics that are not registered
SET promread.write_create_metrics = off;
SELECT try_json('[{"labels": {"__name__": "wr_new"}, "samples": [[1700000000000, 1]]}]');
RESET promread.write_create_metrics;
CREATE TABLE wr.wr_taken (x int);
SELECT try_json('[{"labels": {"__name__": "wr_taken"}, "samples": [[1700000000000, 1]]}]');
SET promread.write_schema = wr_missing;
SELECT try_json('[{"labels": {"__name__": "wr_new"}, "samples": [[1700000000000, 1]]}]');
SET promread.write_schema = wr;

-- bad requests, refused whole before anything is written
SELECT try_write('\xff');
SELECT try_write(snappy_literal('\x0a05'));
SELECT try_json('[{"labels": {"job": "x"}, "samples": [[1, 1]]}]');
SELECT try_json('[{"labels": {"__name__": "1up"}, "samples": [[1, 1]]}]');
SELECT try_json('[{"labels": {"__name__": "wr_up", "bad-name": "x"}, "samples": [[1, 1]]}]');
SELECT try_write(snappy_literal(wr_series(wr_label('__name__', 'wr_up'),
	wr_label('job', 'a'), wr_label('job', 'b'), wr_sample(1))));
SELECT try_write(snappy_literal(wr_series(wr_label('__name__', 'wr_up'),
	wr_label('job', '\xff'), wr_sample(1))));
SELECT try_write(snappy_literal(wr_series(wr_label('__name__', 'wr_up'),
	wr_label('job', '\x6100'), wr_sample(1))));
SELECT try_json('[{"labels": {"__name__": "wr_up"}, "samples": [[9223372036854775807, 1]]}]');
SET promread.max_request_bytes = 10;
SELECT try_json('[{"labels": {"__name__": "wr_up"}, "samples": [[1, 1]]}]');
RESET promread.max_request_bytes;
SELECT count(*) AS unchanged FROM wr.wr_up;
-- a float sample and a native histogram (an empty one) of one metric: the
-- metric refused (22023); a float sample with an exemplar: written
SELECT try_write(snappy_literal(wr_series(wr_label('__name__', 'wr_up'),
	wr_sample(1700000060000), wire_field(4, ''))));
SELECT try_write(snappy_literal(wr_series(wr_label('__name__', 'wr_up'),
	wr_sample(1700000060000), wire_field(3, ''))));
SELECT count(*) AS one_more FROM wr.wr_up;
-- prom_write_request's own input
SELECT prom_write_request('{}');
SELECT prom_write_request('[{"labels": {"__name__": "x"}, "samples": [[1, "many"]]}]');

-- read-only transactions write nothing
BEGIN READ ONLY;
SELECT try_json('[{"labels": {"__name__": "wr_up"}, "samples": [[1700000000000, 1]]}]');
ROLLBACK;

-- metadata: kept per family; another role's is not replaced
SELECT try_write(snappy_literal(wire_field(3, '\x0801'::bytea
	|| wire_field(2, 'wr_up') || wire_field(4, 'Targets up.') || wire_field(5, ''))));
SELECT metric, type, help, unit, writer = current_user::regrole AS mine
FROM prom_metric_metadata;
SELECT try_write(snappy_literal(wire_field(3, '\x0809'::bytea || wire_field(2, 'wr_up'))));

-- privileges and row-level security apply as to any INSERT
CREATE ROLE regress_writer;
CREATE ROLE regress_intruder;
GRANT USAGE ON SCHEMA wr TO regress_writer, regress_intruder;
CREATE TABLE wr.wr_tenant (ts timestamptz, value float8, tenant text);
SELECT prom_register('wr.wr_tenant', 'wr_tenant');
GRANT INSERT ON wr.wr_tenant TO regress_writer;
ALTER TABLE wr.wr_tenant ENABLE ROW LEVEL SECURITY;
CREATE POLICY own ON wr.wr_tenant TO regress_writer
	USING (tenant = 't1') WITH CHECK (tenant = 't1');
SET ROLE regress_writer;
SELECT try_json('[{"labels": {"__name__": "wr_tenant", "tenant": "t1"}, "samples": [[1700000000000, 1]]}]');
SELECT try_json('[{"labels": {"__name__": "wr_tenant", "tenant": "t2"}, "samples": [[1700000000000, 1]]}]');
-- no CREATE on the schema: no new metric
SELECT try_json('[{"labels": {"__name__": "wr_writers_own"}, "samples": [[1700000000000, 1]]}]');
-- a created table's labels are added by its owner only
SET ROLE regress_intruder;
SELECT try_json('[{"labels": {"__name__": "wr_up", "evil": "x"}, "samples": [[1700000000000, 1]]}]');
SELECT try_json('[{"labels": {"__name__": "wr_tenant", "tenant": "t1"}, "samples": [[1700000000000, 1]]}]');
SELECT try_write(snappy_literal(wire_field(3, '\x0802'::bytea
	|| wire_field(2, 'wr_up') || wire_field(4, 'Hijacked.'))));
RESET ROLE;
SELECT tenant, count(*) FROM wr.wr_tenant GROUP BY tenant;
SELECT metric, type, help FROM prom_metric_metadata;

DELETE FROM prom_metric_metadata_catalog;
DROP SCHEMA wr CASCADE;
DROP TABLE wr_user;
DROP TYPE wr_zone;
DROP ROLE regress_writer, regress_intruder;
DROP FUNCTION try_write, try_json, wr_label, wr_sample, wr_sample_value, wr_series, wr_read,
	wire_varint, snappy_literal, wire_field, wire_matcher, wire_query;

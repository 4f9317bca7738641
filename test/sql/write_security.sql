-- Remote write as hostile roles would use it: metadata only for the
-- metrics a role may write, catalog locks only for who may change something,
-- and no write into a relation that runs another role's code as the writer.
SET timezone = 'UTC';
\set abs_srcdir `pwd` '/test'
\set wire_helpers :abs_srcdir '/fixtures/wire.sql'
\i :wire_helpers

-- the SQLSTATE, message, detail and hint of writing a request
CREATE FUNCTION ws_try(request bytea) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
	detail text;
	hint text;
BEGIN
	PERFORM set_config('response.status', '', true);
	PERFORM prom_remote_write(request);
	-- metrics refused, the others written: a WARNING, and 400 for PostgREST
	IF current_setting('response.status') = '400' THEN
		RETURN 'refused';
	END IF;
	RETURN 'ok';
EXCEPTION WHEN others THEN
	GET STACKED DIAGNOSTICS detail = PG_EXCEPTION_DETAIL, hint = PG_EXCEPTION_HINT;
	RETURN SQLSTATE || ': ' || SQLERRM || coalesce(' (' || nullif(detail, '') || ')', '')
		|| coalesce(' HINT: ' || nullif(hint, ''), '');
END $$;
CREATE FUNCTION ws_json(series jsonb) RETURNS text LANGUAGE sql AS $$
	SELECT ws_try(prom_write_request(series))
$$;
-- one sample of a metric, labelled instance="a"
CREATE FUNCTION ws_sample(metric text) RETURNS text LANGUAGE sql AS $$
	SELECT ws_json(jsonb_build_array(jsonb_build_object(
		'labels', jsonb_build_object('__name__', metric, 'instance', 'a'),
		'samples', '[[1700000000000, 1]]'::jsonb)))
$$;
-- a request of counter metadata: (family, help) pairs
CREATE FUNCTION ws_meta(VARIADIC pairs text[]) RETURNS bytea LANGUAGE sql AS $$
	SELECT snappy_literal(string_agg(wire_field(3, '\x0801'::bytea
		|| wire_field(2, convert_to(pairs[i], 'UTF8'))
		|| wire_field(4, convert_to(pairs[i + 1], 'UTF8'))), ''::bytea ORDER BY i))
	FROM generate_series(1, array_length(pairs, 1), 2) AS i
$$;

CREATE ROLE regress_ws_writer;
CREATE ROLE regress_ws_other;
CREATE ROLE regress_ws_mallory;
CREATE ROLE regress_ws_nobody;
CREATE SCHEMA ws;
CREATE SCHEMA ws_mallory AUTHORIZATION regress_ws_mallory;
GRANT USAGE, CREATE ON SCHEMA ws TO regress_ws_writer;
GRANT USAGE ON SCHEMA ws TO regress_ws_other, regress_ws_mallory;
GRANT USAGE ON SCHEMA ws_mallory TO PUBLIC;
SET promread.write_schema = ws;
-- the tables of row storage, which this suite inspects and alters
-- (write_chunks covers chunk storage, remote write's default)
SET promread.write_storage = rows;

--
-- Metadata: written only for the families of registered metrics the role
-- may insert into; by any role that may, not by the first writer only.
--
SET ROLE regress_ws_writer;
SELECT ws_sample('ws_requests_total'), ws_sample('ws_latency_seconds_bucket');
RESET ROLE;
GRANT INSERT ON ws.ws_requests_total TO regress_ws_other;
-- a role without a grant: nothing stored, however many families
SET ROLE regress_ws_nobody;
SELECT ws_try(ws_meta('ws_requests_total', 'MALLORY WAS HERE'));
SELECT ws_try(snappy_literal(string_agg(wire_field(3, '\x0801'::bytea
	|| wire_field(2, convert_to('junk_' || i, 'UTF8'))), ''::bytea)))
FROM generate_series(1, 1000) AS i;
-- nor by one that may insert into another metric only
SET ROLE regress_ws_mallory;
SELECT ws_try(ws_meta('ws_requests_total', 'MALLORY WAS HERE',
	'ws_latency_seconds', 'MALLORY WAS HERE'));
RESET ROLE;
SELECT count(*) AS no_metadata FROM prom_metric_metadata;
-- the writer: its families, a histogram's by its _bucket metric; not a
-- family without a registered metric, though it may create one
SET ROLE regress_ws_writer;
SELECT ws_try(ws_meta('ws_requests_total', 'Requests.', 'ws_latency_seconds', 'Latency.',
	'ws_not_yet', 'Not written yet.'));
RESET ROLE;
SELECT metric, help, writer FROM prom_metric_metadata ORDER BY metric;
-- metadata sent again unchanged is not written again
SELECT xmin AS before FROM prom_metric_metadata_catalog WHERE metric = 'ws_requests_total' \gset
SET ROLE regress_ws_writer;
SELECT ws_try(ws_meta('ws_requests_total', 'Requests.'));
RESET ROLE;
SELECT xmin = :'before' AS not_rewritten
FROM prom_metric_metadata_catalog WHERE metric = 'ws_requests_total';
-- another writer of the metric updates it; the first writer again
SET ROLE regress_ws_other;
SELECT ws_try(ws_meta('ws_requests_total', 'Requests served.'));
SELECT ws_try(ws_meta('ws_latency_seconds', 'Hijacked.'));
SET ROLE regress_ws_writer;
SELECT metric, help, writer FROM prom_metric_metadata ORDER BY metric;
-- a second metric of the family that the other writer may not insert into
SELECT ws_sample('ws_requests_total_created');
SET ROLE regress_ws_other;
SELECT ws_try(ws_meta('ws_requests_total', 'Not all of it.'));
SET ROLE regress_ws_writer;
SELECT ws_try(ws_meta('ws_requests_total', 'Requests, all of them.'));
SELECT metric, help, writer FROM prom_metric_metadata ORDER BY metric;
-- metadata that another role wrote before (0.3.0 let any role write it)
-- is replaced by the metric's writer
RESET ROLE;
UPDATE prom_metric_metadata_catalog SET help = 'MALLORY WAS HERE',
	writer = 'regress_ws_mallory' WHERE metric = 'ws_latency_seconds';
SET ROLE regress_ws_writer;
SELECT ws_try(ws_meta('ws_latency_seconds', 'Latency.'));
RESET ROLE;
SELECT metric, help, writer FROM prom_metric_metadata ORDER BY metric;

--
-- Locks: a role that may change nothing takes no lock of the catalog's
-- beyond a reader's (test/scripts/write-locks runs the two sessions)
--
SELECT prom_register('ws.ws_requests_total', 'ws_registered');
BEGIN;
SET LOCAL ROLE regress_ws_nobody;
SELECT prom_unregister('ws_no_such_metric');
SELECT ws_try(ws_meta('ws_requests_total', 'x', 'ws_none', 'y'));
SELECT mode, locktype FROM pg_locks
WHERE pid = pg_backend_pid() AND mode <> 'AccessShareLock'
  AND (locktype = 'object' OR relation IN ('prom_metric_catalog'::regclass,
                                           'prom_metric_metadata_catalog'::regclass));
SELECT prom_unregister('ws_registered');
ROLLBACK;
-- the owner's unregistering locks the name it removes, not the catalog
BEGIN;
SELECT prom_unregister('ws_registered');
SELECT mode, locktype FROM pg_locks
WHERE pid = pg_backend_pid() AND mode <> 'AccessShareLock'
  AND (locktype = 'object' OR relation IN ('prom_metric_catalog'::regclass,
                                           'prom_metric_metadata_catalog'::regclass))
ORDER BY locktype;
ROLLBACK;

--
-- Squatting: a table of another role, registered under a metric name
-- nobody has written yet, with code that would run as the writer
--
SET ROLE regress_ws_mallory;
CREATE TABLE ws_mallory.loot (who name, what text);
GRANT INSERT ON ws_mallory.loot TO PUBLIC;
CREATE FUNCTION ws_mallory.steal() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	INSERT INTO ws_mallory.loot VALUES (current_user, TG_TABLE_NAME);
	RETURN NEW;
END $$;
CREATE FUNCTION ws_mallory.steal_value() RETURNS text LANGUAGE sql AS $$
	INSERT INTO ws_mallory.loot VALUES (current_user, 'expression') RETURNING 'x'
$$;
CREATE FUNCTION ws_mallory.ok(float8) RETURNS boolean LANGUAGE sql IMMUTABLE AS $$
	SELECT true
$$;
CREATE TABLE ws_mallory.node_load1 (ts timestamptz, value float8, instance text);
CREATE TRIGGER steal BEFORE INSERT ON ws_mallory.node_load1
	FOR EACH ROW EXECUTE FUNCTION ws_mallory.steal();
SELECT prom_register('ws_mallory.node_load1', 'ws_node_load1');
-- the same with a rule, a policy, a default, a check, an index expression,
-- a domain
CREATE TABLE ws_mallory.by_rule (ts timestamptz, value float8, instance text);
CREATE RULE steal AS ON INSERT TO ws_mallory.by_rule
	DO ALSO INSERT INTO ws_mallory.loot VALUES (current_user, 'rule');
CREATE TABLE ws_mallory.by_policy (ts timestamptz, value float8, instance text);
ALTER TABLE ws_mallory.by_policy ENABLE ROW LEVEL SECURITY;
CREATE POLICY steal ON ws_mallory.by_policy WITH CHECK (ws_mallory.steal_value() = 'x');
CREATE TABLE ws_mallory.by_default (ts timestamptz, value float8, instance text,
	extra text DEFAULT ws_mallory.steal_value());
CREATE TABLE ws_mallory.by_check (ts timestamptz, value float8, instance text,
	CHECK (ws_mallory.steal_value() = 'x'));
CREATE TABLE ws_mallory.by_index (ts timestamptz, value float8, instance text);
CREATE INDEX ON ws_mallory.by_index (ws_mallory.ok(value));
CREATE TABLE ws_mallory.by_builtin (ts timestamptz, value float8, instance text,
	extra text DEFAULT set_config('application_name', 'pwned', false));
CREATE DOMAIN ws_mallory.label AS text CHECK (ws_mallory.steal_value() = 'x');
CREATE TABLE ws_mallory.by_domain (ts timestamptz, value float8, instance ws_mallory.label);
CREATE VIEW ws_mallory.by_view AS SELECT * FROM ws_mallory.by_index;
-- without code of its own, a table of another role is written
CREATE TABLE ws_mallory.plain (ts timestamptz, value float8, instance text,
	extra text DEFAULT 'x' CHECK (value > -1), id bigint GENERATED ALWAYS AS IDENTITY);
CREATE INDEX ON ws_mallory.plain (instance, ts);
SELECT prom_register(relation, 'ws_' || (SELECT relname FROM pg_class WHERE oid = relation))
FROM unnest('{ws_mallory.by_rule, ws_mallory.by_policy, ws_mallory.by_default,
              ws_mallory.by_check, ws_mallory.by_index, ws_mallory.by_builtin,
              ws_mallory.by_domain, ws_mallory.by_view,
              ws_mallory.plain}'::regclass[]) AS relation;
GRANT INSERT ON ALL TABLES IN SCHEMA ws_mallory TO PUBLIC;
RESET ROLE;

SET ROLE regress_ws_writer;
SELECT ws_sample('ws_node_load1');
-- (each refused metric's WARNING says what would run)
SELECT metric, r AS written
FROM unnest('{ws_node_load1, ws_by_rule, ws_by_policy, ws_by_default, ws_by_check,
              ws_by_index, ws_by_builtin, ws_by_domain, ws_by_view, ws_plain}'::text[]) AS metric,
	LATERAL ws_sample(metric) AS r;
RESET ROLE;
SELECT count(*) AS nothing_stolen FROM ws_mallory.loot;
SHOW application_name;
SELECT count(*) AS none_written FROM ws_mallory.node_load1;
SELECT count(*) AS plain_written FROM ws_mallory.plain;

-- a partition of another role's, under a table of a trusted owner
CREATE TABLE ws.parts (ts timestamptz NOT NULL, value float8, instance text)
	PARTITION BY RANGE (ts);
CREATE TABLE ws.parts_2023 PARTITION OF ws.parts
	FOR VALUES FROM ('2023-01-01') TO ('2024-01-01');
GRANT INSERT ON ws.parts TO regress_ws_writer;
SELECT prom_register('ws.parts', 'ws_parts');
ALTER TABLE ws.parts_2023 OWNER TO regress_ws_mallory;
SET ROLE regress_ws_mallory;
CREATE TRIGGER steal BEFORE INSERT ON ws.parts_2023
	FOR EACH ROW EXECUTE FUNCTION ws_mallory.steal();
SET ROLE regress_ws_writer;
SELECT ws_sample('ws_parts');
RESET ROLE;
SELECT count(*) AS none_in_parts FROM ws.parts;

-- only a superuser trusts a role
SET ROLE regress_ws_writer;
SET promread.write_trusted_owners = regress_ws_mallory;
RESET ROLE;
SET promread.write_trusted_owners = 'regress_ws_mallory, "no such role"';
SET ROLE regress_ws_writer;
SELECT ws_sample('ws_node_load1'), ws_sample('ws_parts');
RESET ROLE;
SELECT who, what FROM ws_mallory.loot ORDER BY what;
SELECT count(*) AS written FROM ws_mallory.node_load1;
RESET promread.write_trusted_owners;
SET promread.write_trusted_owners = '"unclosed';

-- a superuser writer is refused the same
SELECT ws_sample('ws_by_rule');

DELETE FROM prom_metric_metadata_catalog;
DROP SCHEMA ws, ws_mallory CASCADE;
DROP ROLE regress_ws_writer, regress_ws_other, regress_ws_mallory, regress_ws_nobody;
DROP FUNCTION ws_try, ws_json, ws_sample, ws_meta,
	wire_varint, snappy_literal, wire_field, wire_matcher, wire_query;

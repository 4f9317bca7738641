-- Reads with the rights of the scan: prom_regex_match's index condition
-- through a view owned by another role, prom_regex_label_values, and
-- prom_explain skipping what the caller may not read; the value listing's
-- bounds and its cap under stale statistics; which index column the
-- support function gives a condition; shards grouping beside row-level
-- security on one partition.
SET timezone = 'UTC';
SET datestyle = 'ISO';
SET max_parallel_workers_per_gather = 0;
SET jit = off;
-- does the plan of a query list values with prom_regex_label_values?
CREATE FUNCTION lists_values(sql text) RETURNS boolean LANGUAGE plpgsql AS $$
	DECLARE line text;
	BEGIN
		FOR line IN EXECUTE 'EXPLAIN (COSTS OFF) ' || sql LOOP
			IF line LIKE '%prom_regex_label_values%' THEN
				RETURN true;
			END IF;
		END LOOP;
		RETURN false;
	END $$;
GRANT EXECUTE ON FUNCTION lists_values(text) TO PUBLIC;
CREATE ROLE regress_rr_owner;
CREATE ROLE regress_rr_tenant;
CREATE ROLE regress_rr_viewer;
GRANT CREATE ON SCHEMA public TO regress_rr_owner;

-- a table of two tenants under row-level security, read by a tenant
-- directly and, through a view of the table's owner, by both tenants' rows
SET ROLE regress_rr_owner;
CREATE TABLE rls_req (ts timestamptz NOT NULL, tenant text,
	instance text COLLATE "C", value float8);
INSERT INTO rls_req
	SELECT '2024-01-01'::timestamptz + s * interval '15 s',
		CASE WHEN h % 2 = 0 THEN 'acme' ELSE 'globex' END,
		'host-' || lpad(h::text, 3, '0'), s
	FROM generate_series(0, 199) h, generate_series(1, 40) s;
CREATE INDEX ON rls_req (instance);
ANALYZE rls_req;
ALTER TABLE rls_req ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant_rows ON rls_req FOR SELECT
	USING (tenant = current_setting('regress.tenant', true));
CREATE VIEW rls_view AS SELECT * FROM rls_req;
GRANT SELECT ON rls_req TO regress_rr_tenant;
GRANT SELECT ON rls_view TO regress_rr_tenant, regress_rr_viewer;
RESET ROLE;
SET enable_seqscan = off;

-- the table read directly: the tenant's rows (no index condition under
-- its policy: prom_regex_match is not leakproof, so under row-level
-- security it is never an index condition)
SET ROLE regress_rr_tenant;
SET regress.tenant = 'acme';
SELECT lists_values($$SELECT count(*) FROM rls_req WHERE prom_regex_match('host-.*[05]', instance)$$);
SELECT count(*) FROM rls_req WHERE instance ~ '^host-.*[05]$';
SELECT count(*) FROM rls_req WHERE prom_regex_match('host-.*[05]', instance);
-- through the owner's view: every row, as "~" counts them, the values
-- listed as the owner
SELECT lists_values($$SELECT count(*) FROM rls_view WHERE prom_regex_match('host-.*[05]', instance)$$);
SELECT count(*) FROM rls_view WHERE instance ~ '^host-.*[05]$';
SELECT count(*) FROM rls_view WHERE prom_regex_match('host-.*[05]', instance);
-- the values listed: the tenant's by the table, all by the view
SELECT cardinality(prom_regex_label_values('rls_req', 'instance', 'host-.*[05]'));
SELECT cardinality(prom_regex_label_values('rls_view', 'instance', 'host-.*[05]'));
SELECT count(DISTINCT instance) FROM rls_view WHERE instance ~ '^host-.*[05]$';
-- a role with SELECT on the view only reads through it
SET ROLE regress_rr_viewer;
SELECT count(*) FROM rls_view WHERE prom_regex_match('host-.*[05]', instance);
SELECT cardinality(prom_regex_label_values('rls_view', 'instance', 'host-.*[05]'));
\set VERBOSITY terse
SELECT prom_regex_label_values('rls_req', 'instance', 'host-.*[05]');
\set VERBOSITY default
-- a plan made for the owner reading through its view lists as the owner
-- whoever executes it
PREPARE through_view AS
	SELECT count(*) FROM rls_view WHERE prom_regex_match('host-.*[05]', instance);
EXECUTE through_view;
SET ROLE regress_rr_tenant;
EXECUTE through_view;
SET ROLE regress_rr_viewer;
EXECUTE through_view;
DEALLOCATE through_view;
-- so does one without row-level security, which is not planned again for
-- another role: a role with SELECT on the view only lists as the owner
SET ROLE regress_rr_owner;
CREATE TABLE plain_req AS SELECT ts, instance, value FROM rls_req;
CREATE INDEX ON plain_req (instance);
ANALYZE plain_req;
CREATE VIEW plain_view AS SELECT * FROM plain_req;
GRANT SELECT ON plain_view TO regress_rr_viewer;
PREPARE through_plain_view AS
	SELECT count(*) FROM plain_view WHERE prom_regex_match('host-.*[05]', instance);
SELECT lists_values('EXECUTE through_plain_view');
EXECUTE through_plain_view;
SET ROLE regress_rr_viewer;
SELECT lists_values('EXECUTE through_plain_view');
EXECUTE through_plain_view;
DEALLOCATE through_plain_view;
-- a view of a third role, read by a role without SELECT on the table: the
-- listing is checked as the view's owner, as the scan is, the role given
-- as a prom_scan_role, which only the planner makes
RESET ROLE;
CREATE ROLE regress_rr_view_owner;
GRANT CREATE ON SCHEMA public TO regress_rr_view_owner;
GRANT SELECT ON plain_req TO regress_rr_view_owner;
SET ROLE regress_rr_view_owner;
CREATE VIEW third_view AS SELECT * FROM plain_req;
GRANT SELECT ON third_view TO regress_rr_tenant;
SET ROLE regress_rr_tenant;
EXPLAIN (COSTS OFF) SELECT count(*) FROM third_view WHERE prom_regex_match('host-.*[05]', instance);
SELECT count(*) FROM third_view WHERE prom_regex_match('host-.*[05]', instance);
SELECT count(*) FROM third_view WHERE instance ~ '^host-.*[05]$';
\set VERBOSITY terse
SELECT prom_regex_label_values('plain_req', 'instance', 'host-.*[05]', 'regress_rr_owner');
SELECT 'regress_rr_owner'::prom_scan_role;
\set VERBOSITY default
SELECT prom_regex_label_values('plain_req', 'instance', 'host-.*[05]', NULL) IS NULL AS strict;
-- the owner's SELECT revoked: the scan and the listing fail alike
RESET ROLE;
REVOKE SELECT ON plain_req FROM regress_rr_view_owner;
SET ROLE regress_rr_tenant;
\set VERBOSITY terse
SELECT count(*) FROM third_view WHERE prom_regex_match('host-.*[05]', instance);
\set VERBOSITY default
RESET ROLE;
DROP VIEW third_view;
REVOKE CREATE ON SCHEMA public FROM regress_rr_view_owner;
DROP ROLE regress_rr_view_owner;
RESET regress.tenant;
RESET ROLE;

-- prom_explain skips a relation the caller may not read, as prom_series
-- does, when the selector does not name its metric; and fails when it does
CREATE TABLE rr_readable (ts timestamptz, host text, value float8);
CREATE TABLE rr_hidden (ts timestamptz, host text, value float8);
INSERT INTO rr_readable VALUES ('2024-01-01 00:00:01', 'a', 1);
INSERT INTO rr_hidden VALUES ('2024-01-01 00:00:01', 'b', 2);
SELECT prom_register('rr_readable');
SELECT prom_register('rr_hidden');
GRANT SELECT ON rr_readable TO regress_rr_viewer;
SET ROLE regress_rr_viewer;
SELECT labels FROM prom_series('{__name__=~"rr_.*"}', '2024-01-01', '2024-01-02');
RESET enable_seqscan;  -- (PostgreSQL 18 marks a plan's disabled nodes)
SELECT regexp_replace(line, '  \(cost=.*\)$', '') AS line
FROM prom_explain('{__name__=~"rr_.*"}', '2024-01-01', '2024-01-02') AS line;
SET enable_seqscan = off;
SELECT count(*) FROM prom_explain('{__name__=~"rr_.*"}', '2024-01-01', '2024-01-02', true) AS line
WHERE line LIKE 'metric %';
SELECT * FROM prom_explain('rr_hidden', '2024-01-01', '2024-01-02');
RESET ROLE;

-- a regex's literal prefix bounds the values an index lists, the prefix
-- itself included: host-1 is a value of host-1.* and of host-1[0-9a]*
CREATE TABLE prefixed (ts timestamptz NOT NULL, instance text COLLATE "C",
	value float8);
INSERT INTO prefixed
	SELECT '2024-01-01'::timestamptz + s * interval '15 s', i, s
	FROM unnest(ARRAY['host-0', 'host-1', 'host-10', 'host-1a', 'host-1b', 'host-2']) i,
		generate_series(1, 40) s;
CREATE INDEX ON prefixed (instance);
ANALYZE prefixed;
SELECT prom_register('prefixed');
SELECT array(SELECT unnest(prom_regex_label_values('prefixed', 'instance', 'host-1.*'))
	ORDER BY 1) AS values;
SELECT array(SELECT unnest(prom_regex_label_values('prefixed', 'instance', 'host-1'))
	ORDER BY 1) AS values;
SELECT regexp_replace(line, '  \(cost=.*\)$', '') AS line
FROM prom_explain('prefixed{instance=~"host-1[0-9a]*"}', '2024-01-01', '2024-01-02') AS line
WHERE line LIKE '%values an index lists%';
SELECT labels->>'instance' AS instance, array_length(value, 1) AS samples
FROM prom_series('prefixed{instance=~"host-1[0-9a]*"}', '2024-01-01', '2024-01-02')
ORDER BY 1;
SELECT count(*) FROM prefixed WHERE prom_regex_match('host-1.*', instance);
SELECT count(*) FROM prefixed WHERE instance ~ '^host-1.*$';

-- statistics far out of date: the index lists no more than twice
-- ANALYZE's count of values before the column is read instead
CREATE TABLE stale (ts timestamptz, instance text COLLATE "C", value float8)
	WITH (autovacuum_enabled = off);
INSERT INTO stale SELECT '2024-01-01', 'host-' || (i % 20), i
	FROM generate_series(1, 2000) i;
CREATE INDEX stale_instance ON stale (instance);
ANALYZE stale;
INSERT INTO stale SELECT '2024-01-01', 'new-' || i, i FROM generate_series(1, 20000) i;
\set stats_helpers `pwd` '/test/fixtures/stats.sql'
\i :stats_helpers
SELECT flush_stats();
SELECT idx_scan AS scans_before FROM pg_stat_user_indexes
WHERE indexrelname = 'stale_instance' \gset
SELECT lists_values($$SELECT count(*) FROM stale WHERE prom_regex_match('.*host-.*[05]', instance)$$);
SELECT count(*) FROM stale WHERE prom_regex_match('.*host-.*[05]', instance);
SELECT count(*) FROM stale WHERE instance ~ '^.*host-.*5$';
SELECT array(SELECT unnest(prom_regex_label_values('stale', 'instance', '.*-1999.*'))
	ORDER BY 1) AS values;
SELECT flush_stats();
SELECT idx_scan - :scans_before < 5000 AS descents_bounded FROM pg_stat_user_indexes
WHERE indexrelname = 'stale_instance';

-- a label that is not an index's first column gets no index condition
CREATE TABLE second_col (ts timestamptz, job text COLLATE "C",
	instance text COLLATE "C", value float8);
INSERT INTO second_col
	SELECT '2024-01-01'::timestamptz + s * interval '15 s',
		'job-' || (h % 4), 'host-' || lpad(h::text, 3, '0'), s
	FROM generate_series(0, 199) h, generate_series(1, 20) s;
CREATE INDEX ON second_col (job, instance);
ANALYZE second_col;
SELECT lists_values($$SELECT count(*) FROM second_col WHERE prom_regex_match('host-.*[05]', instance)$$);
SELECT count(*) FROM second_col WHERE prom_regex_match('host-.*[05]', instance);
SELECT count(*) FROM second_col WHERE instance ~ '^host-.*[05]$';
-- its first column does
SELECT lists_values($$SELECT count(*) FROM second_col WHERE prom_regex_match('job-[12]', job)$$);
SELECT count(*) FROM second_col WHERE prom_regex_match('job-[12]', job);
RESET enable_seqscan;

-- shards (a loopback postgres_fdw server that lists promread): a partition
-- with row-level security of its own, which applies only when it is read
-- by name, has its rows read rather than grouped by partition
CREATE EXTENSION postgres_fdw;
DO $$
BEGIN
	EXECUTE format('CREATE SERVER regress_rr_loopback FOREIGN DATA WRAPPER postgres_fdw '
				   'OPTIONS (host %L, port %L, dbname %L, extensions %L)',
				   coalesce(nullif(split_part(current_setting('unix_socket_directories'), ',', 1), ''),
							'localhost'),
				   current_setting('port'), current_database(), 'promread');
	EXECUTE format('CREATE USER MAPPING FOR PUBLIC SERVER regress_rr_loopback '
				   'OPTIONS (user %L, password_required %L)', current_user, 'false');
END $$;
CREATE TABLE sharded (ts timestamptz, host text, value float8) PARTITION BY LIST (host);
CREATE TABLE sharded_far_rows (ts timestamptz, host text, value float8);
CREATE FOREIGN TABLE sharded_far PARTITION OF sharded FOR VALUES IN ('far')
	SERVER regress_rr_loopback OPTIONS (table_name 'sharded_far_rows');
CREATE TABLE sharded_near PARTITION OF sharded FOR VALUES IN ('near-1', 'near-2');
INSERT INTO sharded_far_rows
	SELECT '2024-01-01'::timestamptz + s * interval '15 s', 'far', s
	FROM generate_series(1, 10) s;
INSERT INTO sharded_near
	SELECT '2024-01-01'::timestamptz + s * interval '15 s', h, s
	FROM unnest(ARRAY['near-1', 'near-2']) h, generate_series(1, 10) s;
SELECT prom_register('sharded');
GRANT SELECT ON sharded, sharded_far, sharded_near TO regress_rr_viewer;
SET ROLE regress_rr_viewer;
-- without row-level security the partitions group their rows
SELECT line FROM prom_explain('sharded', '2024-01-01', '2024-01-02') AS line
WHERE line LIKE '%grouped%' ORDER BY 1;
SELECT labels->>'host' AS host, array_length(value, 1) AS samples
FROM prom_series('sharded', '2024-01-01', '2024-01-02') ORDER BY 1;
RESET ROLE;
ALTER TABLE sharded_near ENABLE ROW LEVEL SECURITY;
CREATE POLICY only_near_1 ON sharded_near FOR SELECT USING (host = 'near-1');
SET ROLE regress_rr_viewer;
-- with it on one partition, rows are read: the answer is the table's
SELECT count(*) FROM prom_explain('sharded', '2024-01-01', '2024-01-02') AS line
WHERE line LIKE '%grouped%';
SELECT labels->>'host' AS host, array_length(value, 1) AS samples
FROM prom_series('sharded', '2024-01-01', '2024-01-02') ORDER BY 1;
SELECT host, count(*) FROM sharded GROUP BY 1 ORDER BY 1;
RESET ROLE;

SELECT prom_unregister(metric) FROM prom_metrics
WHERE metric IN ('rr_readable', 'rr_hidden', 'prefixed', 'sharded') ORDER BY 1;
DROP TABLE rls_req, plain_req CASCADE;
DROP TABLE rr_readable, rr_hidden, prefixed, stale, second_col, sharded,
	sharded_far_rows;
DROP USER MAPPING FOR PUBLIC SERVER regress_rr_loopback;
DROP EXTENSION postgres_fdw CASCADE;
REVOKE CREATE ON SCHEMA public FROM regress_rr_owner;
DROP FUNCTION lists_values;
DROP ROLE regress_rr_owner, regress_rr_tenant, regress_rr_viewer;

-- Privileges: reading runs as the caller, registering needs ownership, the
-- catalog cannot be written directly, row-level security applies.
SET timezone = 'UTC';
SET datestyle = 'ISO';
CREATE ROLE regress_owner;
CREATE ROLE regress_reader;
CREATE ROLE regress_stranger;
GRANT CREATE ON SCHEMA public TO regress_owner;

SET ROLE regress_owner;
CREATE TABLE secret (t timestamptz, tenant text, host text, v float8);
INSERT INTO secret VALUES
	('2024-01-01 00:00:01', 'acme', 'a', 1),
	('2024-01-01 00:00:01', 'globex', 'b', 2),
	('2024-01-01 00:00:02', 'acme', 'a', 3);
SELECT prom_register('secret');
GRANT SELECT ON secret TO regress_reader;
RESET ROLE;

-- a role without SELECT on the relation is refused
SET ROLE regress_stranger;
SELECT * FROM prom_series('secret', '2024-01-01', '2024-01-02');
-- and may neither register the table nor unregister its metric
SELECT prom_register('secret', 'stolen');
SELECT prom_unregister('secret');
-- nor write or read the catalog table directly
INSERT INTO prom_metric_catalog VALUES ('x', 'secret', 't', 'v', '{}');
UPDATE prom_metric_catalog SET metric = 'x';
DELETE FROM prom_metric_catalog;
SELECT * FROM prom_metric_catalog;
-- the view of the catalog is public
SELECT metric, relation FROM prom_metrics;
RESET ROLE;

-- a reader needs SELECT on the relation and nothing on the catalog
SET ROLE regress_reader;
SELECT labels, value FROM prom_series('secret', '2024-01-01', '2024-01-02');
RESET ROLE;

-- row-level security keyed on a setting, as PostgREST sets JWT claims
SET ROLE regress_owner;
ALTER TABLE secret ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant_rows ON secret FOR SELECT
	USING (tenant = current_setting('request.jwt.claims', true)::jsonb->>'tenant');
RESET ROLE;
SET ROLE regress_reader;
SELECT labels, value FROM prom_series('secret', '2024-01-01', '2024-01-02');
SET request.jwt.claims = '{"tenant": "acme"}';
SELECT labels, value FROM prom_series('secret', '2024-01-01', '2024-01-02');
SET request.jwt.claims = '{"tenant": "globex"}';
SELECT labels, value FROM prom_series('secret', '2024-01-01', '2024-01-02');
SELECT labels, value FROM prom_series('secret{tenant="acme"}', '2024-01-01', '2024-01-02');
RESET request.jwt.claims;
RESET ROLE;

-- column privileges: SELECT on the registered columns is enough
SET ROLE regress_owner;
CREATE TABLE partial (t timestamptz, host text, v float8, hidden text);
INSERT INTO partial VALUES ('2024-01-01 00:00:01', 'a', 1, 'x');
SELECT prom_register('partial', label_columns => '{host}');
GRANT SELECT (t, host, v) ON partial TO regress_reader;
RESET ROLE;
SET ROLE regress_reader;
SELECT labels, value FROM prom_series('partial', '2024-01-01', '2024-01-02');
RESET ROLE;

-- a superuser may register any relation
SELECT prom_register('secret', 'secret_copy');
SELECT prom_unregister('secret_copy');

DROP TABLE secret, partial;
REVOKE CREATE ON SCHEMA public FROM regress_owner;
DROP ROLE regress_owner, regress_reader, regress_stranger;

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
SELECT prom_regex_label_values('secret', 'host', '.*');
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
	USING (tenant = nullif(current_setting('request.jwt.claims', true), '')::jsonb->>'tenant');
RESET ROLE;
SET ROLE regress_reader;
SELECT labels, value FROM prom_series('secret', '2024-01-01', '2024-01-02');
SET request.jwt.claims = '{"tenant": "acme"}';
SELECT labels, value FROM prom_series('secret', '2024-01-01', '2024-01-02');
SET request.jwt.claims = '{"tenant": "globex"}';
SELECT labels, value FROM prom_series('secret', '2024-01-01', '2024-01-02');
SELECT labels, value FROM prom_series('secret{tenant="acme"}', '2024-01-01', '2024-01-02');
-- a regex's values are listed from the rows the policy shows
SELECT prom_regex_label_values('secret', 'host', '.*');
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

-- nobody but the owner of the relation an entry names (or a superuser) may
-- replace or remove the entry: a stranger's table cannot take a metric over
GRANT CREATE ON SCHEMA public TO regress_stranger;
SET ROLE regress_stranger;
CREATE TABLE fake (t timestamptz, tenant text, host text, v float8);
INSERT INTO fake VALUES ('2024-01-01 00:00:01', 'acme', 'fake', 666);
GRANT SELECT ON fake TO PUBLIC;
SELECT prom_register('fake', 'secret');
SELECT prom_unregister('secret');
RESET ROLE;
SELECT metric, relation FROM prom_metrics WHERE metric = 'secret';
SET ROLE regress_reader;
SET request.jwt.claims = '{"tenant": "acme"}';
SELECT labels, value FROM prom_series('secret', '2024-01-01', '2024-01-02');
RESET request.jwt.claims;
RESET ROLE;
-- the owner may move its own metric to another of its relations
SET ROLE regress_owner;
CREATE TABLE secret2 (t timestamptz, host text, v float8);
SELECT prom_register('secret2', 'secret_moved');
SELECT prom_register('partial', 'secret_moved', label_columns => '{host}');
SELECT relation FROM prom_metrics WHERE metric = 'secret_moved';
SELECT prom_unregister('secret_moved');
RESET ROLE;
-- and a superuser may replace any entry
SELECT prom_register('secret2', 'secret_moved');
SELECT prom_unregister('secret_moved');

-- a selector that does not name its metric skips the relations the caller
-- may not read, as row-level security hides rows; naming one still fails
SET ROLE regress_stranger;
CREATE TABLE mine (t timestamptz, host text, v float8);
INSERT INTO mine VALUES ('2024-01-01 00:00:01', 'a', 7);
SELECT prom_register('mine');
GRANT SELECT ON mine TO regress_reader;
-- a view over a table its owner may not read: reading it is refused
CREATE VIEW peek AS SELECT t, host, v FROM secret;
SELECT prom_register('peek');
GRANT SELECT ON peek TO PUBLIC;
RESET ROLE;
SET ROLE regress_reader;
SELECT labels, value FROM prom_series('{host="a"}', '2024-01-01', '2024-01-02');
SELECT labels, value FROM prom_series('{__name__=~"mine|peek|secret", host="a"}', '2024-01-01', '2024-01-02');
SELECT prom_read_response_json(prom_remote_read(prom_read_request(
	'{host="a"}', '2024-01-01', '2024-01-02')));
SELECT labels, value FROM prom_series('peek{host="a"}', '2024-01-01', '2024-01-02');
RESET ROLE;
SET ROLE regress_stranger;
SELECT labels, value FROM prom_series('{host="a"}', '2024-01-01', '2024-01-02');
SELECT labels, value FROM prom_series('secret', '2024-01-01', '2024-01-02');
RESET ROLE;
SET ROLE regress_stranger;
DROP VIEW peek;
DROP TABLE mine, fake;
RESET ROLE;
REVOKE CREATE ON SCHEMA public FROM regress_stranger;

-- temporary relations cannot be registered: their entries would outlive them
CREATE TEMPORARY TABLE scratch (t timestamptz, host text, v float8);
SELECT prom_register('scratch');
CREATE VIEW scratch_view AS SELECT * FROM scratch;
SELECT prom_register('scratch_view');
DROP TABLE scratch CASCADE;

-- the catalog is not written in a read-only transaction
BEGIN READ ONLY;
SELECT prom_register('secret2');
ROLLBACK;
SET default_transaction_read_only = on;
BEGIN;
SELECT prom_unregister('secret');
ROLLBACK;
RESET default_transaction_read_only;

-- promread.report_phases runs scans twice: only a superuser may turn it
SET ROLE regress_reader;
SET promread.report_phases = on;
RESET ROLE;

DROP TABLE secret, secret2, partial;
REVOKE CREATE ON SCHEMA public FROM regress_owner;
DROP ROLE regress_owner, regress_reader, regress_stranger;

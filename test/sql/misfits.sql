-- Registrations that no longer fit their relation: a registered column
-- re-typed, renamed or dropped.  A query that names the metric fails with a
-- clear error, every time (no plan of a failed statement is kept); a query
-- that selects it by labels skips it with a warning, once per call.
SET timezone = 'UTC';
SET datestyle = 'ISO';
CREATE TABLE c2 (ts timestamptz, host text, value float8);
INSERT INTO c2 VALUES ('2024-01-01 00:00:01', 'a', 1);
SELECT prom_register('c2');
CREATE TABLE fits (ts timestamptz, host text, value float8);
INSERT INTO fits VALUES ('2024-01-01 00:00:01', 'a', 2);
SELECT prom_register('fits');
SELECT labels, value FROM prom_series('{host="a"}', '2024-01-01', '2024-01-02');

-- the value column re-typed to one promread cannot read
ALTER TABLE c2 ALTER COLUMN value TYPE boolean USING value > 0;
SELECT * FROM prom_series('c2', '-infinity', 'infinity');
SELECT * FROM prom_series('c2', '-infinity', 'infinity');
SELECT labels, value FROM prom_series('{host="a"}', '2024-01-01', '2024-01-02');
-- one warning for a call of several queries
SELECT prom_read_response_json(prom_remote_read(prom_read_request(
	ARRAY['{host="a"}', '{host=~"a|b"}'], '2024-01-01', '2024-01-02')));
ALTER TABLE c2 ALTER COLUMN value TYPE float8 USING value::int;
SELECT labels, value FROM prom_series('c2', '-infinity', 'infinity');

-- the time column re-typed
ALTER TABLE c2 ALTER COLUMN ts TYPE text;
SELECT * FROM prom_series('c2', '-infinity', 'infinity');
SELECT labels, value FROM prom_series('{host="a"}', '2024-01-01', '2024-01-02');
ALTER TABLE c2 ALTER COLUMN ts TYPE timestamptz USING ts::timestamptz;

-- a label column renamed, then renamed back
ALTER TABLE c2 RENAME COLUMN host TO node;
SELECT * FROM prom_series('c2', '-infinity', 'infinity');
SELECT labels, value FROM prom_series('{host="a"}', '2024-01-01', '2024-01-02');
ALTER TABLE c2 RENAME COLUMN node TO host;
SELECT labels, value FROM prom_series('c2', '-infinity', 'infinity');

-- a label column dropped; one of another type added under its name is
-- read as a label of that type (the registration names columns)
ALTER TABLE c2 DROP COLUMN host;
SELECT * FROM prom_series('c2', '-infinity', 'infinity');
ALTER TABLE c2 ADD COLUMN host int4 DEFAULT 77;
SELECT labels, value FROM prom_series('c2', '-infinity', 'infinity');
SELECT labels, value FROM prom_series('c2{host="77"}', '-infinity', 'infinity');
SELECT labels, value FROM prom_series('{host=~"7.*|a"}', '2024-01-01', '2024-01-02');

-- registering again makes it fit
ALTER TABLE c2 DROP COLUMN value;
SELECT labels, value FROM prom_series('{host=~"7.*|a"}', '2024-01-01', '2024-01-02');
ALTER TABLE c2 ADD COLUMN v float8 DEFAULT 3;
SELECT prom_register('c2', label_columns => '{host}');
SELECT labels, value FROM prom_series('{host=~"7.*|a"}', '2024-01-01', '2024-01-02');

DROP TABLE c2, fits;

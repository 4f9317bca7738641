-- A metric spread over two shards with postgres_fdw: run on the
-- coordinator, as a superuser, after CREATE EXTENSION promread and
-- deploy/postgrest/api.sql (its roles prom_reader and prom_writer), with the
-- shards' addresses and the credentials of a role that may read and write
-- the shards' tables.  docs/scaling-out.md explains each step.
--
--   psql -d metrics -v ON_ERROR_STOP=1 -f deploy/scale-out/coordinator.sql
--
-- On each shard first (same database name; promread installed there too,
-- the same version in the same schema as here, so that each shard groups
-- its own rows):
--
--   CREATE EXTENSION promread;
--   CREATE TABLE http_requests_total (ts timestamptz NOT NULL, value float8,
--       instance text COLLATE "C", job text COLLATE "C", code text COLLATE "C");
--   CREATE INDEX ON http_requests_total (instance, ts);
--   CREATE INDEX ON http_requests_total (ts);
--
-- and ANALYZE the shards' tables once they hold rows (autovacuum does it
-- later): a regex the shards are sent is read through the (instance, ts)
-- index when their statistics give many rows per value.

CREATE EXTENSION IF NOT EXISTS postgres_fdw;

-- One server per shard.  extensions 'promread' lets postgres_fdw send
-- promread's aggregate, so each shard groups its own rows into series;
-- async_capable lets the coordinator ask the shards at once; fetch_size
-- moves rows in larger batches where rows are read; batch_size groups the
-- rows remote write inserts.
CREATE SERVER shard1 FOREIGN DATA WRAPPER postgres_fdw
	OPTIONS (host 'shard1.example', port '5432', dbname 'metrics',
			 extensions 'promread', async_capable 'true',
			 fetch_size '10000', batch_size '1000');
CREATE SERVER shard2 FOREIGN DATA WRAPPER postgres_fdw
	OPTIONS (host 'shard2.example', port '5432', dbname 'metrics',
			 extensions 'promread', async_capable 'true',
			 fetch_size '10000', batch_size '1000');

-- Who reads and writes: a mapping per role that reaches the shards
-- (prom_reader and prom_writer of deploy/postgrest/api.sql); roles that are
-- not superusers must give a password.
CREATE USER MAPPING FOR prom_reader SERVER shard1
	OPTIONS (user 'prom_reader', password 'CHANGE-ME');
CREATE USER MAPPING FOR prom_reader SERVER shard2
	OPTIONS (user 'prom_reader', password 'CHANGE-ME');
CREATE USER MAPPING FOR prom_writer SERVER shard1
	OPTIONS (user 'prom_writer', password 'CHANGE-ME');
CREATE USER MAPPING FOR prom_writer SERVER shard2
	OPTIONS (user 'prom_writer', password 'CHANGE-ME');

-- The metric: partitioned by hash of a label, so that each series lives
-- on one shard, each partition a foreign table on its shard.
CREATE TABLE http_requests_total (ts timestamptz NOT NULL, value float8,
	instance text COLLATE "C", job text COLLATE "C", code text COLLATE "C")
	PARTITION BY HASH (instance);
CREATE FOREIGN TABLE http_requests_total_0 PARTITION OF http_requests_total
	FOR VALUES WITH (MODULUS 2, REMAINDER 0) SERVER shard1
	OPTIONS (table_name 'http_requests_total');
CREATE FOREIGN TABLE http_requests_total_1 PARTITION OF http_requests_total
	FOR VALUES WITH (MODULUS 2, REMAINDER 1) SERVER shard2
	OPTIONS (table_name 'http_requests_total');

SELECT prom_register('http_requests_total');
-- Readers are granted the partitions too: shards group their rows only for
-- a role that may read each partition by name (others read rows).
GRANT SELECT ON http_requests_total, http_requests_total_0,
	http_requests_total_1 TO prom_reader;
GRANT INSERT ON http_requests_total TO prom_writer;

-- The planner's statistics of the foreign partitions (again after loads).
ANALYZE http_requests_total;

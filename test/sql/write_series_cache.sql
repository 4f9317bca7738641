-- The series ids remote write caches per backend for metrics in chunk
-- storage (docs/chunk-storage.md, "Writing"; src/write/series_cache.c): a write
-- whose series are cached reads nothing of m#series, and no cached id ever
-- outlives its row or the rights and policies that let a writer read it:
-- TRUNCATE, DELETE, a rolled back write, DROP and a new metric of the same
-- name, privileges, row-level security, the cache's bound.
SET promread.write_schema = sc;
CREATE SCHEMA sc;

-- 'ok' or 'refused' (a metric refused: response.status 400), or the
-- SQLSTATE and message of the request's refusal
CREATE FUNCTION sc_try(series jsonb) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
	PERFORM set_config('response.status', '', true);
	PERFORM prom_remote_write(prom_write_request(series));
	RETURN CASE current_setting('response.status') WHEN '400' THEN 'refused' ELSE 'ok' END;
EXCEPTION WHEN others THEN
	RETURN SQLSTATE || ': ' || SQLERRM;
END $$;
-- a request of one sample of series sc_m{job=...}
CREATE FUNCTION sc_one(job text, ms bigint, metric text DEFAULT 'sc_m') RETURNS jsonb
	LANGUAGE sql AS $$
	SELECT jsonb_build_array(jsonb_build_object(
		'labels', jsonb_build_object('__name__', metric, 'job', job),
		'samples', jsonb_build_array(jsonb_build_array(ms, 1))))
$$;
-- a metric's series rows, head rows, and head rows (from a time on) whose
-- series_id is no row's
CREATE FUNCTION sc_state(metric text DEFAULT 'sc_m', since bigint DEFAULT 0)
	RETURNS TABLE (series bigint, head_rows bigint, orphans bigint)
	LANGUAGE plpgsql AS $$
DECLARE
	s prom_metric_storage;
BEGIN
	SELECT * INTO STRICT s FROM prom_metric_storage AS m WHERE m.metric = sc_state.metric;
	RETURN QUERY EXECUTE format(
		'SELECT (SELECT count(*) FROM %1$s), (SELECT count(*) FROM %2$s),'
		' (SELECT count(*) FROM %2$s AS h WHERE h.t >= $1 AND NOT EXISTS'
		'  (SELECT FROM %1$s AS s WHERE s.series_id = h.series_id))', s.series, s.head)
		USING since;
END $$;
-- scans of a table and its indexes by this backend (not yet reported)
CREATE FUNCTION sc_table_scans(relid regclass) RETURNS bigint LANGUAGE sql AS $$
	SELECT pg_stat_get_xact_numscans(relid)
		+ (SELECT coalesce(sum(pg_stat_get_xact_numscans(indexrelid)), 0)
		   FROM pg_index WHERE indrelid = relid)
$$;
-- how many times a write of a request scans the metric's series table or
-- its indexes: 0 when every series is cached
CREATE FUNCTION sc_scans(request jsonb, metric text DEFAULT 'sc_m') RETURNS text
	LANGUAGE plpgsql AS $$
DECLARE
	series regclass;
	before bigint := 0;
	result text;
BEGIN
	SELECT m.series INTO series FROM prom_metric_storage AS m WHERE m.metric = sc_scans.metric;
	IF series IS NOT NULL THEN
		before := sc_table_scans(series);
	END IF;
	result := sc_try(request);
	SELECT m.series INTO STRICT series FROM prom_metric_storage AS m
		WHERE m.metric = sc_scans.metric;
	RETURN result || ', scans ' || sc_table_scans(series) - before;
END $$;

-- The first write looks its series up and adds them; once it committed,
-- the next reads nothing of m#series, and one with a new series looks up
-- that one
SELECT sc_scans(sc_one('a', 1700000000000));
SELECT sc_scans(sc_one('a', 1700000015000));
SELECT sc_scans(sc_one('b', 1700000015000));
SELECT sc_scans(sc_one('b', 1700000030000));
SELECT * FROM sc_state();
-- promread.write_series_cache = 0 turns it off
SET promread.write_series_cache = 0;
SELECT sc_scans(sc_one('a', 1700000030000));
RESET promread.write_series_cache;
-- ...as does a series table without the trigger that tells of rows
-- updated or deleted, or with it not enabled ALWAYS
ALTER TABLE sc."sc_m#series" ENABLE TRIGGER prom_series_changed;
SELECT sc_scans(sc_one('a', 1700000045000));
ALTER TABLE sc."sc_m#series" ENABLE ALWAYS TRIGGER prom_series_changed;
SELECT sc_scans(sc_one('a', 1700000060000));
SELECT sc_scans(sc_one('a', 1700000075000));

-- TRUNCATE of m#series (and of the head) between writes: the series is
-- added again, no head row points at nothing
TRUNCATE sc."sc_m#series", sc."sc_m#head";
SELECT sc_scans(sc_one('a', 1700000090000));
SELECT * FROM sc_state();
-- TRUNCATE of m#series alone, in the transaction that writes next
BEGIN;
TRUNCATE sc."sc_m#series";
SELECT sc_scans(sc_one('a', 1700000105000));
COMMIT;
-- (the head row written before the TRUNCATE points at nothing now)
SELECT * FROM sc_state(since => 1700000105000);
SELECT sc_scans(sc_one('a', 1700000120000));

-- DELETE of a series row by hand: the statement trigger drops the cached
-- ids of the table
DELETE FROM sc."sc_m#head";
DELETE FROM sc."sc_m#series" WHERE job = 'a';
SELECT sc_scans(sc_one('a', 1700000135000));
SELECT * FROM sc_state();

-- A write that added a series and rolled back, then a write of the same
-- series: it is added again (the rolled back id was never cached)
BEGIN;
SELECT sc_try(sc_one('c', 1700000150000));
ROLLBACK;
-- (a transaction that commits without it)
SELECT sc_scans(sc_one('a', 1700000150000));
SELECT sc_scans(sc_one('c', 1700000165000));
SELECT * FROM sc_state();
-- ...and a subtransaction rolled back in a transaction that commits
BEGIN;
SAVEPOINT before_d;
SELECT sc_try(sc_one('d', 1700000180000));
ROLLBACK TO SAVEPOINT before_d;
SELECT sc_try(sc_one('e', 1700000180000));
COMMIT;
SELECT sc_scans(sc_one('d', 1700000195000));
SELECT sc_scans(sc_one('e', 1700000195000));
SELECT * FROM sc_state();
-- ...and a request one of whose metrics is refused (its subtransaction
-- rolled back, the other metric written again in one of its own)
SELECT sc_try('[{"labels": {"__name__": "sc_m", "job": "f"}, "samples": [[1700000210000, 1]]},
                  {"labels": {"__name__": "sc_other", "job": "f"}, "samples": [[-9223372036854775808, 1]]}]');
SELECT sc_scans(sc_one('f', 1700000225000));
SELECT * FROM sc_state();

-- DROP of the metric and a new metric of the same name
SELECT sc_scans(sc_one('g', 1700000000000, 'sc_n'), 'sc_n');
SELECT sc_scans(sc_one('g', 1700000015000, 'sc_n'), 'sc_n');
SELECT sc_scans(sc_one('g', 1700000030000, 'sc_n'), 'sc_n');
DROP VIEW sc.sc_n;
DROP TABLE sc."sc_n#series", sc."sc_n#head", sc."sc_n#chunks", sc."sc_n#late";
SELECT sc_scans(sc_one('g', 1700000045000, 'sc_n'), 'sc_n');
SELECT * FROM sc_state('sc_n');

-- Privileges are checked every request: a role without SELECT on m#series
-- is refused (42501) though another role's write cached the series
CREATE ROLE sc_writer;
CREATE ROLE sc_blind;
GRANT USAGE ON SCHEMA sc TO sc_writer, sc_blind;
GRANT SELECT, INSERT ON sc."sc_m#series" TO sc_writer;
GRANT INSERT ON sc."sc_m#head" TO sc_writer, sc_blind;
GRANT INSERT ON sc."sc_m#series" TO sc_blind;
SET ROLE sc_writer;
SELECT sc_scans(sc_one('h', 1700000240000));
SELECT sc_scans(sc_one('h', 1700000255000));
SET ROLE sc_blind;
SELECT sc_try(sc_one('h', 1700000270000));
RESET ROLE;
-- ...and a role whose INSERT on the head was revoked
REVOKE INSERT ON sc."sc_m#head" FROM sc_writer;
SET ROLE sc_writer;
SELECT sc_try(sc_one('h', 1700000285000));
RESET ROLE;
GRANT INSERT ON sc."sc_m#head" TO sc_writer;

-- Row-level security on m#series: a writer under it looks its series up
-- through its policies, never in the cache.  The owner, not under the
-- policy, writes job="secret" and caches it; sc_writer, who may see and
-- add only job="h", is refused it (42501: its new row violates the
-- policy) rather than given the id, and looks up even job="h"
ALTER TABLE sc."sc_m#series" ENABLE ROW LEVEL SECURITY;
CREATE POLICY sc_h ON sc."sc_m#series" USING (job = 'h');
SELECT sc_scans(sc_one('secret', 1700000300000));
SELECT sc_scans(sc_one('secret', 1700000315000));
SELECT sc_scans(sc_one('h', 1700000315000));
SET ROLE sc_writer;
SELECT sc_try(sc_one('secret', 1700000330000));
SELECT sc_scans(sc_one('h', 1700000330000));
RESET ROLE;
SELECT sc_scans(sc_one('secret', 1700000345000));
DROP POLICY sc_h ON sc."sc_m#series";
ALTER TABLE sc."sc_m#series" DISABLE ROW LEVEL SECURITY;
SELECT * FROM sc_state();

-- The cache's bound: with room for one id, of two series written in turn
-- each evicts the other
SET promread.write_series_cache = 1;
SELECT sc_scans(sc_one('a', 1700000360000));
SELECT sc_scans(sc_one('a', 1700000375000));
SELECT sc_scans(sc_one('b', 1700000375000));
SELECT sc_scans(sc_one('a', 1700000390000));
RESET promread.write_series_cache;
SELECT sc_scans(sc_one('a', 1700000395000));
-- ...and no more ids wait for their transaction's commit than it holds:
-- of 5,000 new series, 10 (the pending ids of 5,000 were 400 kB)
SELECT sc_try(sc_one('p0', 1700000400000, 'sc_pending'));
BEGIN;
SET LOCAL promread.write_series_cache = 10;
SELECT sc_try((SELECT jsonb_agg(sc_one('p' || i, 1700000400000, 'sc_pending') -> 0)
			   FROM generate_series(1, 5000) AS i));
SELECT max(used_bytes) < 65536 AS pending_bounded
FROM pg_backend_memory_contexts WHERE name = 'promread series ids';
COMMIT;
SELECT series, head_rows FROM sc_state('sc_pending');

-- The cache is not used in a transaction whose snapshot is the
-- transaction's (it could see a row deleted since), nor for a series table
-- with a child (whose rows its lookups read, and whose changes tell the
-- cache nothing)
BEGIN ISOLATION LEVEL REPEATABLE READ;
SELECT sc_scans(sc_one('a', 1700000400000));
COMMIT;
CREATE TABLE sc.sc_child () INHERITS (sc."sc_m#series");
SELECT sc_scans(sc_one('a', 1700000405000));
DROP TABLE sc.sc_child;
VACUUM sc."sc_m#series";
SELECT sc_scans(sc_one('a', 1700000410000));
SELECT sc_scans(sc_one('a', 1700000415000));

DROP SCHEMA sc CASCADE;
DROP OWNED BY sc_writer, sc_blind;
DROP ROLE sc_writer, sc_blind;
DROP FUNCTION sc_try, sc_one, sc_state, sc_table_scans, sc_scans;

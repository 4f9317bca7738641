-- The head of a chunk metric partitioned by 2-hour window behind a
-- watermark (src/storage/head.c, docs/chunk-storage.md): a read of one
-- series reads its head rows alone; compaction reads a window's partition
-- without deleting, moves the watermark, and a later one drops the
-- partition; remote write sends samples of compacted windows to m#late;
-- readers see every sample once.  test/scripts/head-watermark-race races
-- writers against the watermark's moves.
SET client_min_messages = warning;

-- now's window (its number), and its start in ms
SELECT floor(extract(epoch FROM now()) * 1000 / 7200000)::bigint AS w \gset
\set w0 '(:w::bigint * 7200000)'

-- the pages the head statement of a read touches (prom_explain's buffers)
CREATE FUNCTION head_pages(selector text) RETURNS int LANGUAGE plpgsql AS $$
DECLARE
	line text;
	in_head boolean := false;
	m text[];
BEGIN
	FOR line IN SELECT * FROM prom_explain(selector, to_timestamp(0),
			now() + interval '1 day', true) LOOP
		in_head := in_head OR line LIKE '  head: %';
		m := regexp_match(line, 'Buffers: shared(?: hit=(\d+))?(?: read=(\d+))?');
		IF in_head AND m IS NOT NULL THEN
			RETURN coalesce(m[1]::int, 0) + coalesce(m[2]::int, 0);
		END IF;
	END LOOP;
	RETURN NULL;
END $$;
-- a remote write of one sample of a series
CREATE FUNCTION write_one(job text, ms bigint, v float8) RETURNS text LANGUAGE sql AS $$
	SELECT prom_remote_write(prom_write_request(jsonb_build_array(jsonb_build_object(
		'labels', jsonb_build_object('__name__', 'hp', 'job', job),
		'samples', jsonb_build_array(jsonb_build_array(ms, v))))))::text IS NOT NULL
$$;

SELECT prom_create_metric('hp', '{job}');
INSERT INTO "hp#series" (labels_hash, job) SELECT i, 'j' || i FROM generate_series(1, 2000) i;

-- 1. 2,000 series, 10 samples each in now's window, in scrape order (a
-- series' rows on pages of their own): a read of one series reads a few
-- pages of the head (its B-tree and its rows, and two index pages of each
-- empty partition of the range: its plan searches each partition's
-- index), a read of all reads them all
INSERT INTO "hp#head" SELECT s, :w0 + i * 15000, i
FROM generate_series(0, 9) i, generate_series(1, 2000) s;
ANALYZE "hp#series", "hp#head", "hp#late";
SELECT head_pages('hp{job="j7"}') < 40 AS one_series_few_pages,
	head_pages('hp') > 100 AS all_series_all_pages,
	(SELECT relpages FROM pg_class WHERE relname = 'hp#head_' ||
		to_char(to_timestamp(:w0 / 1000) AT TIME ZONE 'UTC', 'YYYYMMDDHH24')) > 100 AS partition_pages;
SELECT labels ->> 'job' AS job, cardinality(ts) AS samples
FROM prom_series('hp{job="j7"}', to_timestamp(:w0 / 1000), now() + interval '2 hours');
-- the chunk and head statements of a read of a few series are planned
-- once for any values (a generic plan: its values are parameters, $4 the
-- series' ids); those of more than 256 series (j1, j10-j19, j100-j199,
-- j1000-j1999) for their values, the ids as a constant; the series
-- statement is planned once when its matchers are equalities, for its
-- values when one is a regex (a prefix, here 'j1%', an index may serve);
-- prom_explain shows a generic plan by a prepared statement of its own,
-- whatever the session's are called, and drops it
PREPARE promread_explain_1 AS SELECT 1;
SELECT selector, bool_or(line LIKE '%job = $1%') AS series_once,
	bool_or(line LIKE '%series_id = ANY ($4)%') AS generic,
	bool_or(line LIKE '%series_id = ANY (''{%') AS for_values
FROM unnest(ARRAY['hp{job="j7"}', 'hp{job=~"j1.*"}']) selector,
	prom_explain(selector, to_timestamp(:w0 / 1000), now() + interval '2 hours') line
GROUP BY selector ORDER BY selector;
SELECT name FROM pg_prepared_statements;
DEALLOCATE promread_explain_1;

-- 2. compaction of the window before now's (promread.compact_after = 0:
-- every window before now's is due): its partition is read, not deleted,
-- and the watermark moves to now's window
TRUNCATE "hp#head";
INSERT INTO "hp#head" SELECT s, :w0 - 7200000 + i * 60000, i
FROM generate_series(0, 9) i, generate_series(1, 3) s;
INSERT INTO "hp#head" SELECT s, :w0 + i * 60000, 100 + i
FROM generate_series(0, 4) i, generate_series(1, 3) s;
SET promread.compact_after = 0;
BEGIN;
SELECT prom_compact('hp') AS chunks;
SELECT compacted_before = :w0 AS watermark_at_now FROM prom_metric_storage WHERE metric = 'hp';
SELECT prom_head_compacted_before('hp', '"hp#head"') = :w0 AS as_seen;
SELECT count(*) AS rows_kept_in_partition FROM "hp#head" WHERE t < :w0;
-- each sample once: the chunks', and the head's from the watermark on
SELECT count(*) AS samples, count(DISTINCT (job, ts)) AS distinct_samples, sum(value) FROM hp;
SELECT sum(cardinality(ts)) AS samples FROM prom_series('hp', to_timestamp((:w0 - 7200000) / 1000),
	now() + interval '2 hours');
SELECT samples, bytes > 0 AS has_bytes FROM prom_metric_sizes WHERE metric = 'hp';
COMMIT;

-- 3. remote write: samples before the watermark go to m#late (one of the
-- compacted window, whose partition is still there, and one of 2024, which
-- has none), one of now's window to its partition, one of a window without
-- a partition after the watermark (in 30 days) to the default partition
SELECT write_one('j1', :w0 - 7200000 + 30000, 7), write_one('j1', :w0 + 30000, 8),
	write_one('j1', 1704067200000, 9), write_one('j1', :w0 + 30 * 86400000::bigint, 10);
SELECT (SELECT count(*) FROM "hp#late") AS late_rows,
	(SELECT count(*) FROM "hp#head" WHERE t < :w0) AS compacted_window_rows,
	(SELECT count(*) FROM "hp#head" WHERE t >= :w0) AS head_rows,
	(SELECT count(*) FROM "hp#head_default") AS default_rows;
SELECT count(*) AS samples, count(DISTINCT (job, ts)) AS distinct_samples, sum(value) FROM hp;
SELECT sum(cardinality(ts)) AS samples FROM prom_series('hp', '2023-12-31', now() + interval '31 days');
-- a write locks m#late only when it has a sample before the watermark
BEGIN;
SELECT write_one('j2', :w0 + 45000, 11);
SELECT count(*) AS late_locked FROM pg_locks
WHERE pid = pg_backend_pid() AND relation = '"hp#late"'::regclass;
SELECT write_one('j2', :w0 - 7200000 + 45000, 12);
SELECT count(*) AS late_locked FROM pg_locks
WHERE pid = pg_backend_pid() AND relation = '"hp#late"'::regclass;
ROLLBACK;

-- 4. the next compaction (no snapshot older than the watermark's move
-- left) drops the compacted window's partition, and merges the late and
-- default rows into chunks
SELECT count(*) AS compacted_partitions FROM pg_class
WHERE relname = 'hp#head_' || to_char(to_timestamp((:w0 - 7200000) / 1000) AT TIME ZONE 'UTC', 'YYYYMMDDHH24');
SELECT prom_compact('hp') AS chunks;
SELECT count(*) AS compacted_partitions FROM pg_class
WHERE relname = 'hp#head_' || to_char(to_timestamp((:w0 - 7200000) / 1000) AT TIME ZONE 'UTC', 'YYYYMMDDHH24');
SELECT (SELECT count(*) FROM "hp#late") AS late_rows,
	(SELECT count(*) FROM "hp#head_default") AS default_rows;
SELECT count(*) AS samples, count(DISTINCT (job, ts)) AS distinct_samples, sum(value) FROM hp;

-- 5. partitions made ahead: a missing one of the windows after now's is
-- made again by the next compaction, 6 windows ahead
DO $$ BEGIN
	EXECUTE format('DROP TABLE %I', 'hp#head_' || to_char(date_trunc('hour', now() AT TIME ZONE 'UTC')
		- make_interval(hours => extract(hour FROM now() AT TIME ZONE 'UTC')::int % 2)
		+ interval '8 hours', 'YYYYMMDDHH24'));
END $$;
SELECT count(*) AS windows_ahead FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
WHERE i.inhparent = '"hp#head"'::regclass AND c.relname > 'hp#head_' ||
	to_char(to_timestamp(:w0 / 1000) AT TIME ZONE 'UTC', 'YYYYMMDDHH24') AND c.relname <> 'hp#head_default';
SELECT prom_compact('hp') AS chunks;
SELECT count(*) AS windows_ahead FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
WHERE i.inhparent = '"hp#head"'::regclass AND c.relname > 'hp#head_' ||
	to_char(to_timestamp(:w0 / 1000) AT TIME ZONE 'UTC', 'YYYYMMDDHH24') AND c.relname <> 'hp#head_default';

-- 6. a row inserted by hand into the head before the watermark, in a window
-- without a partition (the default partition's), is seen by readers; the
-- retention deletes it (and does not compact it)
INSERT INTO "hp#head" VALUES (2, 1704067200000 + 1000, 11);
SELECT count(*) AS samples_2024, sum(value) FROM hp WHERE ts < '2024-01-02';
SELECT sum(cardinality(ts)) AS samples_2024 FROM prom_series('hp', '2023-12-31', '2024-01-02');
SELECT prom_set_retention('hp', interval '30 days');
SELECT prom_compact('hp') AS chunks;
SELECT count(*) AS samples_2024 FROM hp WHERE ts < '2024-01-02';
SELECT count(*) AS default_rows_2024 FROM "hp#head_default" WHERE t < 1704153600000;

-- 7. a window partition whose rows would not fit in maintenance_work_mem
-- (estimated from its size: over 1MB / 32 bytes a row) is read in passes
-- of its series: 4 series of 10,000 samples, written newest first
SELECT prom_create_metric('hq', '{job}');
INSERT INTO "hq#series" (labels_hash, job) SELECT i, 'j' || i FROM generate_series(1, 4) i;
INSERT INTO "hq#head" SELECT s, :w0 - 7200000 + i * 720, s * 100000 + i
FROM generate_series(9999, 0, -1) i, generate_series(1, 4) s;
SELECT pg_relation_size(tableoid) * 32 / 52 > 1024 * 1024 AS over_1mb FROM "hq#head" LIMIT 1;
SET maintenance_work_mem = '1MB';
SELECT prom_compact('hq') AS chunks;
RESET maintenance_work_mem;
SELECT k.series_id, count(*) AS samples, count(DISTINCT c.ts) AS distinct_samples,
	bool_and(c.value = k.series_id * 100000 + (extract(epoch FROM c.ts) * 1000 - (:w0 - 7200000)) / 720)
		AS values_in_place
FROM "hq#chunks" k, prom_chunk_samples(k.chunk) c GROUP BY 1 ORDER BY 1;
SELECT count(*) AS samples FROM hq;
SELECT prom_unregister('hq');
DROP VIEW hq;
DROP TABLE "hq#series", "hq#chunks", "hq#head", "hq#late";
RESET promread.compact_after;

-- 8. a metric remote write creates has window partitions back to its first
-- samples' window (samples written late, a backfill), so that they are
-- compacted without deleting them row by row; at most 12 windows (a day)
-- before now's: an older sample goes to the default partition
CREATE FUNCTION hb_write(metric text, ms bigint) RETURNS boolean LANGUAGE sql AS $$
	SELECT prom_remote_write(prom_write_request(jsonb_build_array(jsonb_build_object(
		'labels', jsonb_build_object('__name__', metric, 'job', 'a'),
		'samples', jsonb_build_array(jsonb_build_array(ms, 1),
			jsonb_build_array(extract(epoch FROM now())::bigint * 1000, 2))))))::text IS NOT NULL
$$;
CREATE FUNCTION hb_partitions(metric text, OUT first text, OUT windows bigint,
	OUT default_rows bigint) LANGUAGE plpgsql AS $$
BEGIN
	SELECT min(c.relname), count(*) INTO first, windows
	FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
	WHERE i.inhparent = format('%I', metric || '#head')::regclass
		AND c.relname <> metric || '#head_default';
	EXECUTE format('SELECT count(*) FROM %I', metric || '#head_default') INTO default_rows;
END $$;
SELECT hb_write('hb', :w0 - 5 * 7200000 + 1000), hb_write('hc', :w0 - 36 * 7200000);
SELECT first = 'hb#head_' || to_char(to_timestamp((:w0 - 5 * 7200000) / 1000) AT TIME ZONE 'UTC',
		'YYYYMMDDHH24') AS from_first_sample, windows, default_rows
FROM hb_partitions('hb');
SELECT first = 'hc#head_' || to_char(to_timestamp((:w0 - 12 * 7200000) / 1000) AT TIME ZONE 'UTC',
		'YYYYMMDDHH24') AS from_a_day_before, windows, default_rows
FROM hb_partitions('hc');
SELECT prom_unregister('hb'), prom_unregister('hc');
DROP VIEW hb, hc;
DROP TABLE "hb#series", "hb#chunks", "hb#head", "hb#late", "hc#series", "hc#chunks", "hc#head",
	"hc#late";
DROP FUNCTION hb_write, hb_partitions;

-- 9. unregistering a chunk metric drops its head's partitions below the
-- watermark, which its view, left without one, would show beside their
-- chunks; each sample is then seen once
SELECT prom_create_metric('hu', '{job}') IS NOT NULL AS created;
INSERT INTO "hu#series" (labels_hash, job) VALUES (1, 'a');
INSERT INTO "hu#head" SELECT 1, :w0 - 7200000 + i * 60000, i FROM generate_series(0, 9) i;
SET promread.compact_after = 0;
SELECT prom_compact('hu') AS chunks;
RESET promread.compact_after;
SELECT count(*) AS samples, count(DISTINCT ts) AS distinct_samples FROM hu;
SELECT prom_unregister('hu');
SELECT count(*) AS samples, count(DISTINCT ts) AS distinct_samples FROM hu;
SELECT count(*) AS compacted_partitions FROM pg_class
WHERE relname = 'hu#head_' || to_char(to_timestamp((:w0 - 7200000) / 1000) AT TIME ZONE 'UTC', 'YYYYMMDDHH24');
DROP VIEW hu;
DROP TABLE "hu#series", "hu#chunks", "hu#head", "hu#late";

-- 10. a partition of the head's owner's making (two windows) with a
-- trigger: remote write would run the owner's code there, and refuses
-- (42501) as for a table of rows, rather than check the default partition
-- its window has none of its own to route to
CREATE ROLE regress_hp_owner;
CREATE ROLE regress_hp_writer SUPERUSER;
GRANT CREATE ON SCHEMA public TO regress_hp_owner;
SET ROLE regress_hp_owner;
SELECT prom_create_metric('hx', '{job}') IS NOT NULL AS created;
CREATE FUNCTION hx_trigger() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	RAISE EXCEPTION 'the owner''s code ran as %', current_user;
END $$;
DO $$ BEGIN
	EXECUTE format('CREATE TABLE %I PARTITION OF %I FOR VALUES FROM (%s) TO (%s)', 'hx#head_x',
		'hx#head', (floor(extract(epoch FROM now()) * 1000 / 7200000)::bigint + 10) * 7200000,
		(floor(extract(epoch FROM now()) * 1000 / 7200000)::bigint + 12) * 7200000);
END $$;
CREATE TRIGGER hx_t BEFORE INSERT ON "hx#head_x" FOR EACH ROW EXECUTE FUNCTION hx_trigger();
SET ROLE regress_hp_writer;
SELECT prom_remote_write(prom_write_request(jsonb_build_array(jsonb_build_object(
	'labels', jsonb_build_object('__name__', 'hx', 'job', 'a'),
	'samples', jsonb_build_array(jsonb_build_array(:w0 + 10 * 7200000 + 1000, 1))))));
RESET ROLE;
SELECT count(*) AS written FROM hx;
DROP OWNED BY regress_hp_owner CASCADE;
DROP ROLE regress_hp_owner, regress_hp_writer;
SELECT count(*) AS hx_left FROM prom_metrics WHERE metric = 'hx';

-- 11. promread.head_index = time: a metric created then has BRIN on t in
-- its head and each partition, m#late keeps its B-tree; a read of one
-- series reads the head's rows of its range, every series' (the price of
-- writes without a B-tree insertion); compaction and reads are as with
-- the B-tree.  A metric that exists changes its index with plain SQL
-- (docs/chunk-storage.md), and partitions made later follow.
SET promread.head_index = time;
SELECT prom_create_metric('hb', '{job}') IS NOT NULL AS created;
RESET promread.head_index;
SELECT c.relname, regexp_replace(pg_get_indexdef(x.indexrelid), '.* USING ', '') AS index
FROM pg_index x JOIN pg_class c ON c.oid = x.indrelid
WHERE c.relname IN ('hb#head', 'hb#head_default', 'hb#late') ORDER BY 1;
SELECT bool_and(pg_get_indexdef(x.indexrelid) LIKE '%USING brin (t)') AS windows_brin, count(*) AS windows
FROM pg_inherits i JOIN pg_index x ON x.indrelid = i.inhrelid
WHERE i.inhparent = '"hb#head"'::regclass AND i.inhrelid <> '"hb#head_default"'::regclass;
INSERT INTO "hb#series" (labels_hash, job) SELECT i, 'j' || i FROM generate_series(1, 2000) i;
INSERT INTO "hb#head" SELECT s, :w0 - 7200000 + i * 15000, i
FROM generate_series(0, 9) i, generate_series(1, 2000) s;
INSERT INTO "hb#head" SELECT s, :w0 + i * 15000, 10 + i
FROM generate_series(0, 9) i, generate_series(1, 2000) s;
ANALYZE "hb#series", "hb#head";
SELECT head_pages('hb{job="j7"}') > 100 AS one_series_reads_range;
SELECT labels ->> 'job' AS job, ts[1] = to_timestamp((:w0 - 7200000) / 1000) AS from_first, value
FROM prom_series('hb{job="j7"}', to_timestamp((:w0 - 7200000) / 1000), now() + interval '2 hours');
SET promread.compact_after = 0;
SELECT prom_compact('hb') > 0 AS compacted;
SELECT labels ->> 'job' AS job, value
FROM prom_series('hb{job="j7"}', to_timestamp((:w0 - 7200000) / 1000), now() + interval '2 hours');
SELECT count(*) AS samples, count(DISTINCT (job, ts)) AS distinct_samples, sum(value) FROM hb;
-- back to the B-tree by SQL; a partition made later has it
DROP INDEX "hb#head_t_idx";
CREATE INDEX ON "hb#head" (series_id, t);
SELECT prom_remote_write(prom_write_request(jsonb_build_array(jsonb_build_object(
	'labels', jsonb_build_object('__name__', 'hb', 'job', 'j7'),
	'samples', jsonb_build_array(jsonb_build_array(:w0 + 5 * 7200000 + 1000, 99)))))) IS NOT NULL AS written;
ANALYZE "hb#head";
SELECT bool_and(pg_get_indexdef(x.indexrelid) LIKE '%USING btree (series_id, t)') AS windows_btree
FROM pg_inherits i JOIN pg_index x ON x.indrelid = i.inhrelid
WHERE i.inhparent = '"hb#head"'::regclass;
SELECT head_pages('hb{job="j7"}') < 80 AS one_series_few_pages;
SELECT count(*) AS samples, sum(value) FROM hb;
SELECT prom_unregister('hb');
DROP VIEW hb;
DROP TABLE "hb#series", "hb#chunks", "hb#head", "hb#late";
RESET promread.compact_after;

-- 12. rows are appended straight to a window's partition only where COPY
-- would run nothing else (src/write/write_head.c, 2.): a row trigger, a
-- statement trigger on the head, a check constraint, a column with a
-- default each send the rows by COPY, which runs them; an immediate unique
-- index is checked either way; the INSERT privilege on m#head, and on
-- m#late for a late sample, is checked.
SELECT prom_create_metric('hd', '{job}') IS NOT NULL AS created;
-- a remote write of one sample: 'written', or the HTTP status it is refused with
CREATE FUNCTION hd_write(job text, ms bigint, v float8) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
	PERFORM set_config('response.status', '', true);
	PERFORM prom_remote_write(prom_write_request(jsonb_build_array(jsonb_build_object(
		'labels', jsonb_build_object('__name__', 'hd', 'job', job),
		'samples', jsonb_build_array(jsonb_build_array(ms, v))))));
	RETURN coalesce(nullif(current_setting('response.status', true), ''), 'written');
END $$;
SET client_min_messages = error;
CREATE TABLE hd_fired (what text);
CREATE FUNCTION hd_fire() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	INSERT INTO hd_fired VALUES (TG_LEVEL);
	RETURN NEW;
END $$;
CREATE TRIGGER hd_row BEFORE INSERT ON "hd#head" FOR EACH ROW EXECUTE FUNCTION hd_fire();
SELECT hd_write('a', :w0 + 1000, 1);
DROP TRIGGER hd_row ON "hd#head";
CREATE TRIGGER hd_statement AFTER INSERT ON "hd#head" FOR EACH STATEMENT EXECUTE FUNCTION hd_fire();
SELECT hd_write('a', :w0 + 2000, 2);
DROP TRIGGER hd_statement ON "hd#head";
SELECT what, count(*) FROM hd_fired GROUP BY what ORDER BY what;
ALTER TABLE "hd#head" ADD CONSTRAINT small CHECK (value < 1000);
SELECT hd_write('a', :w0 + 3000, 5000);
ALTER TABLE "hd#head" DROP CONSTRAINT small;
ALTER TABLE "hd#head" ADD COLUMN note text DEFAULT 'by COPY';
SELECT hd_write('a', :w0 + 4000, 4);
SELECT t - :w0 AS t, value, note FROM "hd#head" ORDER BY t;
ALTER TABLE "hd#head" DROP COLUMN note;
-- the dropped column stays in the partitions' descriptors: by COPY too
SELECT hd_write('a', :w0 + 5000, 5), hd_write('a', :w0 + 7200000 + 5000, 6);
CREATE UNIQUE INDEX ON "hd#head" (series_id, t);
SELECT hd_write('a', :w0 + 5000, 50), hd_write('a', :w0 + 7200000 + 5000, 60),
	hd_write('a', :w0 + 7200000 + 6000, 7);
SELECT (extract(epoch FROM ts) * 1000)::bigint - :w0 AS t, value FROM hd ORDER BY ts;
-- privileges: INSERT on m#head for a sample of now, on m#late for a late one
INSERT INTO "hd#head" VALUES (1, :w0 - 7200000, 0);
SET promread.compact_after = 0;
SELECT prom_compact('hd') AS chunks;
CREATE ROLE regress_hd_writer;
GRANT SELECT, INSERT ON "hd#series" TO regress_hd_writer;
GRANT INSERT ON "hd#head" TO regress_hd_writer;
GRANT EXECUTE ON FUNCTION hd_write TO regress_hd_writer;
SET ROLE regress_hd_writer;
SELECT hd_write('a', :w0 + 8000, 8) AS now_sample, hd_write('a', :w0 - 7200000 + 8000, 9) AS late_sample;
RESET ROLE;
REVOKE INSERT ON "hd#head" FROM regress_hd_writer;
GRANT INSERT ON "hd#late" TO regress_hd_writer;
SET ROLE regress_hd_writer;
SELECT hd_write('a', :w0 + 9000, 10) AS now_sample, hd_write('a', :w0 - 7200000 + 9000, 11) AS late_sample;
RESET ROLE;
SELECT (extract(epoch FROM ts) * 1000)::bigint - :w0 AS t, value FROM hd WHERE value >= 8 ORDER BY ts;
REVOKE ALL ON "hd#series", "hd#late" FROM regress_hd_writer;
REVOKE ALL ON FUNCTION hd_write FROM regress_hd_writer;
DROP ROLE regress_hd_writer;
RESET promread.compact_after;
SELECT prom_unregister('hd');
DROP VIEW hd;
DROP TABLE "hd#series", "hd#chunks", "hd#head", "hd#late", hd_fired;
DROP FUNCTION hd_write, hd_fire;
SET client_min_messages = warning;

SELECT prom_unregister('hp');
DROP VIEW hp;
DROP TABLE "hp#series", "hp#chunks", "hp#head", "hp#late";
DROP FUNCTION head_pages, write_one;
SELECT count(*) AS left_behind FROM prom_storage_catalog;

-- Compaction of metrics in chunk storage (docs/chunk-storage.md): windows,
-- 120-sample cuts split evenly, late samples merged, duplicates, stale
-- markers and NaN payloads bit for bit, histograms, retention, privileges.
-- Chunks are read here by prom_chunk_samples and prom_chunk_histograms;
-- test/scripts/compact-check decodes them with decoders written apart.
SET client_min_messages = warning;

-- a metric in chunk storage, with four series (their ids 1 to 4)
CREATE FUNCTION make_chunk_metric(name text, value_type regtype) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
	PERFORM prom_create_metric(name, '{job}', value_type => value_type);
	EXECUTE format('INSERT INTO %I (labels_hash, job) SELECT i, ''job'' || i FROM generate_series(1, 4) i', name || '#series');
END
$$;

-- a chunk's values' bits, in order
CREATE FUNCTION chunk_bits(chunk bytea) RETURNS text
LANGUAGE sql AS $$
	SELECT string_agg(encode(float8send(value), 'hex'), ',') FROM prom_chunk_samples(chunk)
$$;
CREATE FUNCTION bits(v float8) RETURNS text
LANGUAGE sql AS $$ SELECT encode(float8send(v), 'hex') $$;

-- the chunks of a metric: per series and window, each chunk's samples
CREATE FUNCTION chunks_of(name text)
RETURNS TABLE (series_id bigint, w bigint, min_time bigint, max_time bigint,
			   encoding smallint, samples int)
LANGUAGE plpgsql AS $$
BEGIN
	RETURN QUERY EXECUTE format('SELECT series_id, floor(min_time / 7200000.0)::bigint - 236676, min_time, max_time, encoding, prom_chunk_sample_count(chunk) FROM %I ORDER BY 1, 3', name || '#chunks');
END
$$;

-- 2024-01-01 00:00 UTC, window 236676 (a window's number less 236676 is w)
\set t0 1704067200000

SELECT make_chunk_metric('cm', 'float8');

-- windows: series 1 every 15 s over three windows and a bit (1000 samples),
-- series 2 once a window, series 3 one sample at a window's last ms
INSERT INTO "cm#head" SELECT 1, :t0 + i * 15000, i FROM generate_series(0, 999) i;
INSERT INTO "cm#head" SELECT 2, :t0 + i * 7200000, -i FROM generate_series(0, 3) i;
INSERT INTO "cm#head" VALUES (3, :t0 + 7200000 - 1, 0.5);
-- the view sees every sample once, before and after
SELECT count(*), sum(value) FROM cm;
SELECT prom_compact('cm');
SELECT count(*), sum(value) FROM cm;
-- series 1: 480 samples a window (4 chunks of 120), 40 in the fourth
SELECT series_id, w, count(*) AS chunks, array_agg(samples ORDER BY min_time) AS samples,
	   bool_and(floor(min_time / 7200000.0) = floor(max_time / 7200000.0)) AS within
FROM chunks_of('cm') GROUP BY 1, 2 ORDER BY 1, 2;
SELECT count(*) AS head_rows FROM "cm#head";
SELECT sum(samples) AS samples FROM chunks_of('cm');
-- exact times: each chunk's first and last sample
SELECT min_time - :t0 AS min_offset, max_time - :t0 AS max_offset, samples
FROM chunks_of('cm') WHERE series_id = 1 AND w = 0;
SELECT min_time - :t0 AS min_offset, max_time - :t0 AS max_offset FROM chunks_of('cm') WHERE series_id = 3;
-- the partition of the day, named after the table
SELECT c.relname, pg_get_expr(c.relpartbound, c.oid)
FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
WHERE i.inhparent = '"cm#chunks"'::regclass ORDER BY 1;
-- nothing left to do
SELECT prom_compact('cm');

-- cuts split evenly: 1, 120, 121, 240 and 241 samples in one window (the
-- windows of 2024 are compacted already, behind the watermark: their
-- samples go to m#late from now on)
TRUNCATE "cm#chunks";
INSERT INTO "cm#late" SELECT s, :t0 + 7200000 * 4 + i * 1000, i
FROM (VALUES (1, 1), (2, 120), (3, 121), (4, 240)) AS v(s, n),
	 LATERAL generate_series(0, n - 1) i;
INSERT INTO "cm#late" SELECT 1, :t0 + 7200000 * 5 + i * 1000, i FROM generate_series(0, 240) i;
SELECT prom_compact('cm');
SELECT series_id, w, array_agg(samples ORDER BY min_time) AS samples
FROM chunks_of('cm') GROUP BY 1, 2 ORDER BY 2, 1;

-- late samples: a new one between, one replacing a stored one, one before
-- the first; series 4's window is cut again into 81, 80, 80
INSERT INTO "cm#late" VALUES (4, :t0 + 7200000 * 4 + 500, 1000),
	(4, :t0 + 7200000 * 4 + 7000, 7000.5),
	(4, :t0 + 7200000 * 4 - 7200000 + 1, 99);
SELECT prom_compact('cm');
SELECT series_id, w, array_agg(samples ORDER BY min_time) AS samples
FROM chunks_of('cm') WHERE series_id = 4 GROUP BY 1, 2 ORDER BY 2;
SELECT count(*) AS head_rows FROM "cm#head";
-- the merged samples: 241 in window 4, the late ones in place
SELECT (extract(epoch FROM s.ts) * 1000)::bigint - :t0 - 7200000 * 4 AS offset_ms, s.value
FROM "cm#chunks" c, prom_chunk_samples(c.chunk) s
WHERE c.series_id = 4 AND s.value NOT IN (SELECT generate_series(8, 239)::float8)
ORDER BY 1;

-- values whose bits matter (test/fixtures/exact_values.copy, as in the
-- encoders suite): the stale marker 0x7ff0000000000002, -0, +Inf, 1.5,
-- 0xfff8000000000001 and 2.0
CREATE TABLE exact (t timestamptz, host text, v float8);
\set abs_srcdir `pwd` '/test'
\set exact_values :abs_srcdir '/fixtures/exact_values.copy'
COPY exact FROM :'exact_values' (FORMAT binary);
CREATE TABLE nan_bits AS
	SELECT row_number() OVER (ORDER BY t) AS s, v, bits(v) AS hex FROM exact;

-- duplicates in the head at one ms: the value of greatest bits is kept
-- (-1 is 0xbff0..., above 2 at 0x4000... and the stale NaN 0x7ff0...02;
-- NaN 0x7ff8... is above 1)
TRUNCATE "cm#chunks";
INSERT INTO "cm#late" VALUES (1, :t0, 2), (1, :t0, -1), (2, :t0, 'NaN'), (2, :t0, 1);
INSERT INTO "cm#late" SELECT 1, :t0, v FROM nan_bits WHERE hex = '7ff0000000000002';
SELECT prom_compact('cm');
SELECT series_id, prom_chunk_sample_count(chunk) AS samples, chunk_bits(chunk) FROM "cm#chunks" ORDER BY 1;

-- stale markers and NaN payloads, bit for bit: each a chunk's first value
TRUNCATE "cm#chunks";
INSERT INTO "cm#late" SELECT s, :t0 + 7200000 * 6, v FROM nan_bits;
INSERT INTO "cm#late" SELECT s, :t0 + 7200000 * 6 + 1000, 1 FROM nan_bits;
SELECT prom_compact('cm');
SELECT c.series_id, n.hex, chunk_bits(c.chunk) AS stored,
	split_part(chunk_bits(c.chunk), ',', 1) = n.hex AS same
FROM "cm#chunks" c JOIN nan_bits n ON n.s = c.series_id ORDER BY 1;

-- histograms: cut at a layout change and around a stale marker
SELECT make_chunk_metric('hm', 'prom_histogram');
INSERT INTO "hm#head" SELECT 1, :t0 + i * 1000,
	format('{"count":%s,"sum":%s,"positive_spans":[[0,1]],"positive_deltas":[%s]}', i, i, i)::prom_histogram
FROM generate_series(0, 199) i;
INSERT INTO "hm#head" VALUES
	(1, :t0 + 200000, '{"count":300,"sum":1,"positive_spans":[[0,2]],"positive_deltas":[100,100]}'),
	(1, :t0 + 201000, '{"kind":"float","sum":"NaN:0x7ff0000000000002"}'),
	(1, :t0 + 202000, '{"count":1,"sum":1,"positive_spans":[[0,2]],"positive_deltas":[1,-1]}'),
	(2, :t0, '{"kind":"float","count":1,"sum":0.5,"positive_spans":[[0,1]],"positive_counts":[1]}');
SELECT prom_compact('hm');
-- 203 samples, so chunks of at most ceil(203 / 2) = 102: the 200 of one
-- layout in two; then the new layout, the stale marker alone (a float
-- histogram) and the sample after it; series 2 a float histogram chunk
SELECT series_id, min_time - :t0 AS min_offset, max_time - :t0 AS max_offset, encoding, samples
FROM chunks_of('hm') ORDER BY 1, 3;
-- a late histogram replaces the one of its ms: the window is cut again
INSERT INTO "hm#late" VALUES (1, :t0 + 202000, '{"count":2,"sum":2,"positive_spans":[[0,2]],"positive_deltas":[1,0]}');
SELECT prom_compact('hm');
SELECT series_id, min_time - :t0 AS min_offset, max_time - :t0 AS max_offset, encoding, samples
FROM chunks_of('hm') WHERE series_id = 1 ORDER BY 1, 3;
SELECT h.ts - to_timestamp(:t0 / 1000) AS offset, h.value
FROM "hm#chunks" c, prom_chunk_histograms(c.encoding, c.chunk) h
WHERE c.series_id = 1 AND c.min_time >= :t0 + 199000 ORDER BY 1;
SELECT count(*), count(DISTINCT value::text) FROM hm;

-- windows still open: now() - promread.compact_after is where they end
-- (one transaction, so that now() is one time; a new metric, nothing of it
-- compacted yet)
BEGIN;
SELECT make_chunk_metric('om', 'float8');
INSERT INTO "om#head" VALUES
	(1, (floor(extract(epoch FROM now()) * 1000 / 7200000) - 1) * 7200000, 1),
	(1, (floor(extract(epoch FROM now()) * 1000 / 7200000)) * 7200000, 2);
SET LOCAL promread.compact_after = '4h';
SELECT prom_compact('om');
SET LOCAL promread.compact_after = 0;
SELECT prom_compact('om');
-- the head rows from the watermark on: the compacted window's stay in its
-- partition until no snapshot needs them
SELECT count(*) AS head_rows FROM "om#head" WHERE t >= prom_head_compacted_before('om', '"om#head"');
SELECT count(*) AS samples FROM om;
COMMIT;
RESET promread.compact_after;
SHOW promread.compact_after;

-- retention: partitions ending before now() - retention dropped, older
-- chunks and head rows deleted; NULL keeps everything
TRUNCATE "cm#chunks";
INSERT INTO "cm#late" SELECT 1, :t0 + i * 86400000 + 3600000, i FROM generate_series(0, 2) i;
SELECT prom_compact('cm');
SELECT count(*) AS partitions_2024 FROM pg_class WHERE relname LIKE 'cm#chunks_2024%' AND relkind = 'r';
-- a day ago less and more 3 hours: in a partition that straddles the
-- cutoff, or in one before it
\set now_ms '(extract(epoch FROM now()) * 1000)::bigint'
INSERT INTO "cm#late" VALUES (2, :now_ms - 86400000 - 10800000, 1),
	(2, :now_ms - 86400000 + 10800000, 2);
SELECT prom_compact('cm');
SELECT prom_set_retention('cm', interval '1 day');
SELECT metric, retention FROM prom_metric_storage WHERE metric = 'cm';
-- a head row past retention is deleted, not compacted
INSERT INTO "cm#late" VALUES (1, :t0, 5), (2, :now_ms - 3 * 86400000, 3);
SELECT prom_compact('cm');
SELECT count(*) AS partitions_2024 FROM pg_class WHERE relname LIKE 'cm#chunks_2024%' AND relkind = 'r';
SELECT count(*) AS partitions_past FROM pg_inherits i, LATERAL
	(SELECT (regexp_match(pg_get_expr(c.relpartbound, c.oid), 'TO \(''(\d+)''\)'))[1]::bigint AS hi
	 FROM pg_class c WHERE c.oid = i.inhrelid) b
WHERE i.inhparent = '"cm#chunks"'::regclass AND b.hi <= :now_ms - 86400000;
SELECT series_id, max_time > :now_ms - 86400000 AS recent FROM "cm#chunks";
SELECT count(*) AS head_rows FROM "cm#head";
SELECT prom_set_retention('cm', NULL);
SELECT retention IS NULL AS keep_forever FROM prom_metric_storage WHERE metric = 'cm';

-- a window's rows are read in the order written (no sort), and in passes
-- of its series when they do not fit in maintenance_work_mem (1MB: 32768
-- rows a pass, so two passes here); written newest first, with
-- duplicates, the chunks are those of the rows in time order
TRUNCATE "cm#chunks";
DELETE FROM "cm#head";
SET maintenance_work_mem = '1MB';
INSERT INTO "cm#late" SELECT s, :t0 + i * 720, s * 100000 + i
FROM generate_series(9999, 0, -1) i, generate_series(1, 4) s;
-- a lesser value (0.5's bits) of one ms, written last, is dropped
INSERT INTO "cm#late" SELECT s, :t0 + 720 * 5000, 0.5 FROM generate_series(1, 4) s;
SELECT count(*), sum(value) FROM cm;
SELECT prom_compact('cm');
SELECT count(*), sum(value), count(DISTINCT (job, ts)) AS distinct_samples FROM cm;
SELECT count(*) AS head_rows FROM "cm#head";
SELECT series_id, count(*) AS chunks, sum(samples) AS samples, min(samples), max(samples)
FROM chunks_of('cm') GROUP BY 1 ORDER BY 1;
-- in time order: each chunk's samples, and chunks one after another
SELECT count(*) AS out_of_order FROM (
	SELECT k.series_id, c.ts, lag(c.ts) OVER (PARTITION BY k.series_id ORDER BY k.min_time, c.ts) AS prev,
		   c.value, k.min_time, k.max_time
	FROM "cm#chunks" k, prom_chunk_samples(k.chunk) c) x
WHERE ts <= prev OR value <> (series_id * 100000 + extract(epoch FROM ts - to_timestamp(:t0 / 1000.0)) * 1000 / 720)
	OR ts < 'epoch'::timestamptz + min_time * interval '1 ms'
	OR ts > 'epoch'::timestamptz + max_time * interval '1 ms';
-- late rows of two series, merged in one pass: one replaces a stored
-- sample, one is new; the other series' chunks stay as they are
INSERT INTO "cm#late" VALUES (1, :t0 + 720 * 10, -7), (3, :t0 + 721, -8);
SELECT prom_compact('cm');
SELECT count(*), sum(value) FROM cm;
SELECT job, ts - to_timestamp(:t0 / 1000) AS offset, value FROM cm WHERE value < 0 ORDER BY 1;
SELECT series_id, count(*) AS chunks, sum(samples) AS samples FROM chunks_of('cm') GROUP BY 1 ORDER BY 1;
RESET maintenance_work_mem;
TRUNCATE "cm#chunks";

-- refusals
SELECT prom_set_retention('cm', interval '0');
SELECT prom_set_retention('cm', interval '-1 day');
SELECT prom_set_retention('cm', interval '100000 years');
SELECT prom_set_retention('nosuch', interval '1 day');
SELECT prom_compact('nosuch');
CREATE TABLE rowmetric (ts timestamptz, value float8);
SELECT prom_register('rowmetric');
SELECT prom_compact('rowmetric');
BEGIN ISOLATION LEVEL REPEATABLE READ;
SELECT prom_compact('cm');
ROLLBACK;

-- privileges: another role's metric is refused by name and skipped by
-- prom_compact(); its own is compacted, as its owner
CREATE ROLE compact_a;
CREATE ROLE compact_b;
GRANT CREATE ON SCHEMA public TO compact_a, compact_b;
SET ROLE compact_a;
SELECT make_chunk_metric('am', 'float8');
SET ROLE compact_a;
INSERT INTO "am#head" VALUES (1, :t0, 1);
SET ROLE compact_b;
SELECT prom_compact('am');
SELECT prom_set_retention('am', interval '1 day');
SELECT prom_compact();
SET ROLE compact_a;
SELECT prom_compact();
SELECT relname, pg_get_userbyid(relowner) FROM pg_class WHERE relname LIKE 'am#chunks_%' AND relkind = 'r';
RESET ROLE;
-- a superuser compacts every metric, partitions owned by their owner
INSERT INTO "am#late" VALUES (1, :t0 + 86400000, 1);
SELECT prom_compact();
SELECT relname, pg_get_userbyid(relowner) FROM pg_class WHERE relname LIKE 'am#chunks_%' AND relkind = 'r' ORDER BY 1;

-- prom_compact_proc: every metric the caller owns, each in a transaction of
-- its own; a metric that fails is a WARNING, the others are compacted, and
-- the call ends with an error counting the failures (the first one's
-- SQLSTATE); in a transaction block it cannot commit
SET ROLE compact_a;
SELECT make_chunk_metric('pa', 'float8'), make_chunk_metric('pb', 'float8');
INSERT INTO "pa#head" VALUES (1, :t0, 1);
INSERT INTO "pb#head" VALUES (1, :t0, 2);
INSERT INTO "am#late" VALUES (1, :t0 + 2 * 86400000, 3);
ALTER TABLE "pa#chunks" ADD CONSTRAINT pa_refuses CHECK (series_id < 0);
CALL prom_compact_proc();
SELECT 'pa' AS metric, count(*) FROM chunks_of('pa')
UNION ALL SELECT 'pb', count(*) FROM chunks_of('pb')
UNION ALL SELECT 'am', count(*) FROM chunks_of('am');
ALTER TABLE "pa#chunks" DROP CONSTRAINT pa_refuses;
CALL prom_compact_proc();
CALL prom_compact_proc();
BEGIN;
CALL prom_compact_proc();
ROLLBACK;
-- another role's metrics are skipped
RESET ROLE;
INSERT INTO "pa#head" VALUES (2, :t0, 4);
SET ROLE compact_b;
CALL prom_compact_proc();
RESET ROLE;
SELECT count(*) FROM chunks_of('pa');

DROP VIEW am, cm, hm, om, pa, pb;
DROP TABLE "am#series", "am#chunks", "am#head", "am#late", "cm#series", "cm#chunks",
	"cm#head", "cm#late", "hm#series", "hm#chunks", "hm#head", "hm#late",
	"om#series", "om#chunks", "om#head", "om#late", "pa#series", "pa#chunks",
	"pa#head", "pa#late", "pb#series", "pb#chunks", "pb#head", "pb#late", rowmetric,
	nan_bits, exact;
DROP FUNCTION make_chunk_metric, chunk_bits, bits, chunks_of;
REVOKE CREATE ON SCHEMA public FROM compact_a, compact_b;
DROP ROLE compact_a;
DROP ROLE compact_b;
SELECT count(*) AS left_behind FROM prom_storage_catalog;

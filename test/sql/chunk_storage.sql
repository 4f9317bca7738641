-- Chunk storage (docs/chunk-storage.md): reading stored chunks, creating
-- metrics, their view, partitions, catalogs and sizes.
SET timezone = 'UTC';
SET datestyle = 'ISO';
SET client_min_messages = warning;

-- an error's SQLSTATE and message, or 'ok'
CREATE FUNCTION cs_try(sql text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
	EXECUTE sql;
	RETURN 'ok';
EXCEPTION WHEN others THEN
	RETURN SQLSTATE || ': ' || SQLERRM;
END $$;

--
-- prom_chunk_samples on XOR chunks encoded by hand (test/sql's own encoder,
-- after tsdb/chunkenc/xor.go), from these samples (ms, value):
-- 1700000000000 1.5; +15000 2.5; +15000 2.5 (unchanged); +15123 -0 (a
-- 14-bit delta of delta); 1700000060000 the stale NaN 0x7ff0000000000002;
-- +15000 1e300; +15000 -42.125; +1000000 Infinity (a 64-bit delta of
-- delta); +1 the smallest subnormal.
--
SELECT ts, value, float8send(value) AS bits
FROM prom_chunk_samples('\x000980a0abfef9623ff80000000000009875c26fffc807bc0760037e1583ffff000000000000300f700e3f21e44003acf57ce5e8791000eb3bc00000000003c1ea2bfb5100000000001fffffffffffe17b8387fffe00000000000020');
-- times before 1970 (a negative first time, zigzag-encoded), ms exact
SELECT ts, extract(epoch FROM ts) * 1000 AS ms, value
FROM prom_chunk_samples('\x0002cf0f4008000000000000e707c00c');
-- no samples
SELECT count(*) FROM prom_chunk_samples('\x0000');
SELECT prom_chunk_sample_count('\x000980a0'), prom_chunk_sample_count('\x0000');

-- Every prefix of the 9-sample chunk is refused (22P03), never read past
SELECT n, cs_try(format('SELECT count(*) FROM prom_chunk_samples(%L)',
	substring('\x000980a0abfef9623ff80000000000009875c26fffc807bc0760037e1583ffff000000000000300f700e3f21e44003acf57ce5e8791000eb3bc00000000003c1ea2bfb5100000000001fffffffffffe17b8387fffe00000000000020'::bytea
		FROM 1 FOR n))) AS result
FROM generate_series(0, 61) AS n
WHERE n IN (0, 1, 2, 3, 11, 12, 30, 60, 61);
SELECT count(*) AS prefixes, count(*) FILTER (WHERE result LIKE '22P03:%') AS refused
FROM (SELECT cs_try(format('SELECT count(*) FROM prom_chunk_samples(%L)',
	substring('\x000980a0abfef9623ff80000000000009875c26fffc807bc0760037e1583ffff000000000000300f700e3f21e44003acf57ce5e8791000eb3bc00000000003c1ea2bfb5100000000001fffffffffffe17b8387fffe00000000000020'::bytea
		FROM 1 FOR n))) AS result
	  FROM generate_series(0, 61) AS n) AS t;
-- garbage: every outcome is rows or 22P03 (or 22008, a time past
-- timestamptz's range), never a crash
SELECT split_part(result, ':', 1) AS outcome, count(*) > 0 AS seen
FROM (SELECT cs_try(format('SELECT count(*) FROM prom_chunk_samples(%L)',
		decode(substring(md5(i::text) || md5((i * 7)::text) FROM 1 FOR 2 * (i % 33)), 'hex')))
	  AS result
	  FROM generate_series(1, 3000) AS i) AS t
GROUP BY 1 ORDER BY 1;
-- histogram and float histogram chunks: rows or 22P03, a histogram that
-- breaks Prometheus's rules included
SELECT split_part(result, ':', 1) AS outcome, count(*) > 0 AS seen
FROM (SELECT cs_try(format('SELECT count(*) FROM prom_chunk_histograms(%s::smallint, %L)',
		2 + i % 2,
		decode(lpad(to_hex(i % 4), 4, '0') || substring(md5(i::text) || md5((i * 7)::text) FROM 1 FOR 2 * (i % 33)), 'hex')))
	  AS result
	  FROM generate_series(1, 3000) AS i) AS t
GROUP BY 1 ORDER BY 1;
-- garbage after a sample count of 0 to 3: some decode
SELECT split_part(result, ':', 1) AS outcome, count(*) > 0 AS seen
FROM (SELECT cs_try(format('SELECT count(*) FROM prom_chunk_samples(%L)',
		decode(lpad(to_hex(i % 4), 4, '0') || substring(md5(i::text) || md5((i * 7)::text)
			FROM 1 FOR 2 * (i % 33)), 'hex')))
	  AS result
	  FROM generate_series(1, 3000) AS i) AS t
GROUP BY 1 ORDER BY 1;
-- a time past timestamptz's range
SELECT cs_try($$SELECT * FROM prom_chunk_samples('\x00018080a0a89c94b6e6f9013ff0000000000000')$$);
SELECT cs_try($$SELECT * FROM prom_chunk_histograms(1::smallint, '\x0000')$$);
SELECT * FROM prom_chunk_samples('\x0001');

--
-- Chunks of promread's own encoder (prom_chunked_response_agg), taken out
-- of its answer: ChunkedReadResponse { 1: ChunkedSeries { 2: Chunk { 3:
-- type, 4: data } } } in frames of a uvarint length, a CRC and a message
--
CREATE FUNCTION cs_fields(msg bytea) RETURNS TABLE (field int, value bigint, data bytea)
	LANGUAGE plpgsql IMMUTABLE STRICT AS $$
DECLARE
	pos int := 0;
	tag bigint;
	n bigint;
	shift int;
	b int;
BEGIN
	WHILE pos < length(msg) LOOP
		FOR k IN 1 .. 2 LOOP	-- the tag, then a varint or a length
			n := 0; shift := 0;
			LOOP
				b := get_byte(msg, pos); pos := pos + 1;
				n := n | ((b & 127)::bigint << shift); shift := shift + 7;
				EXIT WHEN b < 128;
			END LOOP;
			IF k = 1 THEN tag := n; END IF;
		END LOOP;
		field := tag >> 3; value := n; data := NULL;
		IF tag & 7 = 2 THEN
			data := substring(msg FROM pos + 1 FOR n::int); pos := pos + n::int;
		END IF;
		RETURN NEXT;
	END LOOP;
END $$;
CREATE FUNCTION cs_chunks(stream bytea) RETURNS TABLE (encoding smallint, chunk bytea)
	LANGUAGE plpgsql IMMUTABLE STRICT AS $$
DECLARE
	pos int := 0;
	n int;
	shift int;
	b int;
BEGIN
	WHILE pos < length(stream) LOOP
		n := 0; shift := 0;
		LOOP
			b := get_byte(stream, pos); pos := pos + 1;
			n := n | ((b & 127) << shift); shift := shift + 7;
			EXIT WHEN b < 128;
		END LOOP;
		RETURN QUERY SELECT coalesce((SELECT f.value FROM cs_fields(c.data) f WHERE f.field = 3), 0)::smallint,
			(SELECT f.data FROM cs_fields(c.data) f WHERE f.field = 4)
		FROM cs_fields(substring(stream FROM pos + 5 FOR n)) s,
			cs_fields(s.data) c WHERE s.field = 1 AND c.field = 2;
		pos := pos + 4 + n;
	END LOOP;
END $$;

-- 500 samples of varied values and jittered times: every one comes back,
-- bit for bit, from the chunks (of 120 samples at most)
CREATE TABLE cs_samples AS
SELECT timestamptz '2024-01-01' + (i * 15000 + (i * 7919) % 997) * interval '1 ms' AS t,
	CASE i % 5 WHEN 0 THEN i WHEN 1 THEN -i / 3.0 WHEN 2 THEN 1e15 + i
		WHEN 3 THEN 'NaN'::float8 ELSE sqrt(i) END AS v
FROM generate_series(0, 499) AS i;
CREATE TABLE cs_encoded AS
SELECT * FROM cs_chunks((SELECT prom_chunked_response_agg(t, v, '__name__', 'x') FROM cs_samples));
SELECT count(*) AS chunks, min(encoding), max(prom_chunk_sample_count(chunk)),
	sum(prom_chunk_sample_count(chunk)) AS samples FROM cs_encoded;
SELECT count(*) AS decoded,
	count(*) FILTER (WHERE float8send(s.value) = float8send(k.v)) AS same_bits
FROM cs_encoded AS e, prom_chunk_samples(e.chunk) AS s JOIN cs_samples AS k ON k.t = s.ts;

-- histograms: integer ones with a stale marker, then float ones
CREATE TABLE cs_histograms (t timestamptz, h prom_histogram);
INSERT INTO cs_histograms VALUES
	('2024-01-01 00:00:00', '{"kind":"integer","schema":3,"zero_threshold":1e-128,"zero_count":2,"count":8,"sum":12.5,"positive_spans":[[0,2],[1,1]],"positive_deltas":[1,2,-1],"reset_hint":"unknown"}'),
	('2024-01-01 00:00:15', '{"kind":"integer","schema":3,"zero_threshold":1e-128,"zero_count":3,"count":10,"sum":14.5,"positive_spans":[[0,2],[1,1]],"positive_deltas":[2,1,-1],"reset_hint":"unknown"}'),
	('2024-01-01 00:00:45.001', '{"kind":"integer","sum":"NaN:0x7ff0000000000002"}');
SELECT e.encoding, prom_chunk_sample_count(e.chunk), s.ts, s.value,
	s.value = h.h AS same
FROM cs_chunks((SELECT prom_chunked_response_agg(t, h, '__name__', 'x') FROM cs_histograms)) AS e,
	prom_chunk_histograms(e.encoding, e.chunk) AS s LEFT JOIN cs_histograms AS h ON h.t = s.ts;
CREATE TABLE cs_float_histograms (t timestamptz, h prom_histogram);
INSERT INTO cs_float_histograms VALUES
	('2024-01-01 00:00:00', '{"kind":"float","schema":-53,"count":6,"sum":40,"positive_spans":[[0,2],[1,1]],"positive_counts":[1,2,3],"custom_values":[-5,0.5,10],"reset_hint":"gauge"}'),
	('2024-01-01 00:01:00', '{"kind":"float","schema":-53,"count":7.5,"sum":41,"positive_spans":[[0,2],[1,1]],"positive_counts":[1.5,2,4],"custom_values":[-5,0.5,10],"reset_hint":"gauge"}');
SELECT e.encoding, s.ts, s.value = h.h AS same
FROM cs_chunks((SELECT prom_chunked_response_agg(t, h, '__name__', 'x') FROM cs_float_histograms)) AS e,
	prom_chunk_histograms(e.encoding, e.chunk) AS s LEFT JOIN cs_float_histograms AS h ON h.t = s.ts;
-- every prefix of a histogram chunk is refused
SELECT count(*) AS prefixes, count(*) FILTER (WHERE r LIKE '22P03:%') AS refused
FROM (SELECT e.chunk FROM cs_chunks((SELECT prom_chunked_response_agg(t, h, '__name__', 'x')
		FROM cs_histograms)) AS e LIMIT 1) AS c,
	LATERAL (SELECT cs_try(format('SELECT count(*) FROM prom_chunk_histograms(2::smallint, %L)',
		substring(c.chunk FROM 1 FOR n))) AS r
		FROM generate_series(0, length(c.chunk) - 1) AS n) AS t;

--
-- prom_create_metric
--
CREATE ROLE cs_owner;
CREATE ROLE cs_other;
CREATE SCHEMA cs AUTHORIZATION cs_owner;
CREATE SCHEMA cs_others AUTHORIZATION cs_other;
GRANT USAGE ON SCHEMA cs TO cs_other;
GRANT SELECT ON cs_histograms, cs_float_histograms TO PUBLIC;
SET ROLE cs_owner;
SET search_path = cs, public;
SELECT prom_create_metric('cs_cpu', '{instance,job,mode,series_id}');
-- the relations, owned by the caller, with their columns
SELECT c.relname, c.relkind, pg_get_userbyid(c.relowner) AS owner,
	string_agg(a.attname || ' ' || format_type(a.atttypid, a.atttypmod)
		|| CASE WHEN a.attnotnull THEN ' not null' ELSE '' END
		|| CASE WHEN a.attidentity <> '' THEN ' identity' ELSE '' END
		|| CASE WHEN a.attcollation = 950 THEN ' C' ELSE '' END, ', ' ORDER BY a.attnum) AS columns
FROM pg_class AS c JOIN pg_attribute AS a ON a.attrelid = c.oid AND a.attnum > 0
WHERE c.relnamespace = 'cs'::regnamespace AND c.relkind IN ('r', 'p', 'v')
	AND c.relname !~ '#head_\d{10}$'
GROUP BY c.relname, c.relkind, c.relowner ORDER BY c.relname;
SELECT indexrelid::regclass, pg_get_indexdef(indexrelid) FROM pg_index
WHERE indrelid IN ('"cs_cpu#series"'::regclass, '"cs_cpu#chunks"'::regclass,
	'"cs_cpu#head"'::regclass, '"cs_cpu#late"'::regclass, '"cs_cpu#head_default"'::regclass)
ORDER BY 1::text;
-- the head: a partition a 2-hour window, from the one before now's to 6
-- after it, named by the window's start (UTC), each with the B-tree, and a
-- default partition
SELECT pg_get_partkeydef('"cs_cpu#head"'::regclass),
	count(*) FILTER (WHERE pg_get_expr(c.relpartbound, c.oid) <> 'DEFAULT') AS windows,
	count(*) FILTER (WHERE pg_get_expr(c.relpartbound, c.oid) = 'DEFAULT') AS defaults,
	bool_and(c.relname = 'cs_cpu#head_' || to_char(to_timestamp(b.lo / 1000) AT TIME ZONE 'UTC', 'YYYYMMDDHH24')
		OR b.lo IS NULL) AS named,
	bool_and(b.hi - b.lo = 7200000 AND b.lo % 7200000 = 0 OR b.lo IS NULL) AS windowed,
	min(b.lo) = (floor(extract(epoch FROM now()) * 1000 / 7200000) - 1) * 7200000 AS from_before_now,
	bool_and(pg_get_userbyid(c.relowner) = 'cs_owner') AS owned,
	bool_and(EXISTS (SELECT FROM pg_index x WHERE x.indrelid = c.oid
		AND pg_get_indexdef(x.indexrelid) LIKE '%USING btree (series_id, t)')) AS indexed
FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid,
	LATERAL (SELECT m[1]::bigint AS lo, m[2]::bigint AS hi
		FROM regexp_match(pg_get_expr(c.relpartbound, c.oid), 'FROM \(''(-?\d+)''\) TO \(''(-?\d+)''\)') m) b
WHERE i.inhparent = '"cs_cpu#head"'::regclass;
SELECT conrelid::regclass, pg_get_constraintdef(oid) FROM pg_constraint
WHERE conrelid = '"cs_cpu#chunks"'::regclass AND contype = 'c' ORDER BY 2;
SELECT pg_get_partkeydef('"cs_cpu#chunks"'::regclass),
	(SELECT count(*) FROM pg_inherits WHERE inhparent = '"cs_cpu#chunks"'::regclass) AS partitions;
SELECT metric, relation, time_column, value_column, label_columns, label_names,
	overflow_column, created_by_write FROM prom_metrics WHERE metric LIKE 'cs\_%';
SELECT * FROM prom_metric_storage WHERE metric LIKE 'cs\_%';

-- partitions: a UTC day each, made once, named by the day
SELECT prom_chunk_partition('cs_cpu', '2023-11-14 22:00:00+00'),
	prom_chunk_partition('cs_cpu', '2023-11-14 23:59:59.999+00'),
	prom_chunk_partition('cs_cpu', '2023-11-15 00:00:00+00'),
	prom_chunk_partition('cs_cpu', '1969-12-31 23:00:00+00');
SELECT c.relid, pg_get_expr(r.relpartbound, r.oid), pg_get_userbyid(r.relowner) AS owner
FROM pg_partition_tree('"cs_cpu#chunks"') AS c JOIN pg_class AS r ON r.oid = c.relid
WHERE c.isleaf ORDER BY 1::text;

-- the view: chunks' samples and head rows joined to their series, NULL for
-- a label a series lacks; the head's times exact to the millisecond
INSERT INTO "cs_cpu#series" (labels_hash, instance, job, mode)
VALUES (11, 'a:9100', 'node', 'idle'), (12, 'b:9100', 'node', NULL);
INSERT INTO "cs_cpu#chunks" VALUES
	(1, 1700000000000, 1700001090001, 1, '\x000980a0abfef9623ff80000000000009875c26fffc807bc0760037e1583ffff000000000000300f700e3f21e44003acf57ce5e8791000eb3bc00000000003c1ea2bfb5100000000001fffffffffffe17b8387fffe00000000000020'),
	(2, 1700001100000, 1700001145000, 1, '\x0004c0c3b1fff96200000000000000009875c457fec25fff6c06');
INSERT INTO "cs_cpu#head" VALUES (1, 1700001100000, 7), (2, 1700001200123, 8.5),
	(1, -1, 0.25);
SELECT * FROM cs_cpu ORDER BY instance, ts;
-- a chunk may not span two 2-hour windows, nor end before it starts
SELECT cs_try($$INSERT INTO "cs_cpu#chunks" VALUES (1, 1700006399999, 1700006400000, 1, '\x0000')$$);
SELECT cs_try($$INSERT INTO "cs_cpu#chunks" VALUES (1, 1700000000001, 1700000000000, 1, '\x0000')$$);
SELECT cs_try($$INSERT INTO "cs_cpu#chunks" VALUES (1, 1800000000000, 1800000000000, 1, '\x0000')$$);
-- prom_series reads the metric through its view
SELECT labels, ts, value FROM prom_series('cs_cpu', '2023-11-14', '2023-11-15') ORDER BY labels::text;
SELECT labels, ts FROM prom_series('cs_cpu{mode=""}', '2023-11-14', '2023-11-15');

-- a metric of native histograms
SELECT prom_create_metric('cs_latency', '{job}', value_type => 'prom_histogram');
SELECT prom_chunk_partition('cs_latency', '2024-01-01');
INSERT INTO "cs_latency#series" (labels_hash, job) VALUES (1, 'api');
INSERT INTO "cs_latency#chunks"
SELECT 1, 1704067200000, 1704067245001, e.encoding, e.chunk
FROM cs_chunks((SELECT prom_chunked_response_agg(t, h, '__name__', 'x') FROM cs_histograms)) AS e
LIMIT 1;
INSERT INTO "cs_latency#head" SELECT 1, 1704067260000, h FROM cs_float_histograms LIMIT 1;
SELECT job, ts, prom_histogram_count(value) AS count, prom_histogram_sum(value) AS sum
FROM cs_latency ORDER BY ts;
SELECT format_type(atttypid, atttypmod) FROM pg_attribute
WHERE attrelid = 'cs_latency'::regclass AND attname = 'value';

-- row storage: a table as remote write creates one
SELECT prom_create_metric('cs_rows', '{job,instance}', 'rows');
SELECT string_agg(attname || ' ' || format_type(atttypid, atttypmod), ', ' ORDER BY attnum)
FROM pg_attribute WHERE attrelid = 'cs_rows'::regclass AND attnum > 0;
SELECT metric, relation, label_columns FROM prom_metrics WHERE metric = 'cs_rows';
INSERT INTO cs_rows VALUES ('2024-01-01', 1, 'a', 'x'), ('2024-01-01 00:00:15', 2, 'a', 'x'),
	('2024-01-01', 3, 'b', NULL);

-- a long name is cut and given a hash, its suffix kept
SELECT prom_create_metric(repeat('m', 70));
SELECT relation, series, chunks, head FROM prom_metric_storage
WHERE metric = repeat('m', 70);

-- sizes: chunk metrics count head rows and chunks' samples
SELECT metric, storage, series, samples, bytes > 0 AS has_bytes,
	bytes_per_sample = bytes::float8 / nullif(samples, 0) AS per_sample
FROM prom_metric_sizes WHERE metric LIKE 'cs\_%' OR metric LIKE 'mmm%' ORDER BY metric;
-- bytes: every relation of the metric, each partition of its chunks
SELECT bytes = (SELECT sum(pg_total_relation_size(r))
				FROM (SELECT unnest(ARRAY['"cs_cpu#series"', '"cs_cpu#late"',
					'"cs_cpu#chunks_20231114"', '"cs_cpu#chunks_20231115"',
					'"cs_cpu#chunks_19691231"']::regclass[]) AS r
					UNION ALL SELECT relid FROM pg_partition_tree('"cs_cpu#head"')
					WHERE isleaf) x) AS all_relations
FROM prom_metric_sizes WHERE metric = 'cs_cpu';
-- one metric's
SELECT metric, storage, series, samples, bytes > 0 AS has_bytes
FROM prom_get_metric_sizes('cs_rows');
-- each metric is measured letting go of its locks: none is left on a
-- metric's relations once the view is read
BEGIN;
SELECT count(*) > 0 AS measured FROM prom_metric_sizes;
SELECT count(*) AS locked FROM pg_locks l JOIN pg_class c ON c.oid = l.relation
WHERE l.pid = pg_backend_pid() AND c.relname LIKE 'cs\_%';
COMMIT;
-- a metric registered as a view has no bytes of its own
CREATE VIEW cs_rows_view AS SELECT * FROM cs_rows;
SELECT prom_register('cs_rows_view');
SELECT metric, storage, series, samples, bytes, bytes_per_sample
FROM prom_metric_sizes WHERE metric = 'cs_rows_view';
SELECT prom_unregister('cs_rows_view');

-- errors
SELECT cs_try($$SELECT prom_create_metric('cs_cpu')$$);
SELECT cs_try($$SELECT prom_create_metric('cs cpu')$$);
SELECT cs_try($$SELECT prom_create_metric('cs_x', '{job,job}')$$);
SELECT cs_try($$SELECT prom_create_metric('cs_x', '{"9job"}')$$);
SELECT cs_try($$SELECT prom_create_metric('cs_x', '{__name__}')$$);
SELECT cs_try($$SELECT prom_create_metric('cs_x', '{job,NULL}')$$);
SELECT cs_try($$SELECT prom_create_metric('cs_x', storage => 'columns')$$);
SELECT cs_try($$SELECT prom_create_metric('cs_x', value_type => 'text')$$);
SELECT cs_try($$SELECT prom_create_metric(NULL)$$);
SELECT cs_try($$SELECT prom_chunk_partition('cs_rows', '2024-01-01')$$);
SELECT cs_try($$SELECT prom_chunk_partition('cs_cpu', 'infinity')$$);
BEGIN READ ONLY;
SELECT cs_try($$SELECT prom_create_metric('cs_x')$$);
ROLLBACK;
CREATE TABLE "cs_y#head" ();
SELECT cs_try($$SELECT prom_create_metric('cs_y')$$);
SELECT count(*) FROM pg_class WHERE relname LIKE 'cs_y%';
DROP TABLE "cs_y#head";

-- another role may not create over a metric, read it, nor make its
-- partitions, nor create metrics in a schema it may not create in
RESET ROLE;
SET ROLE cs_other;
SELECT cs_try($$SELECT prom_create_metric('cs_new')$$);
SET search_path = cs_others, public;
SELECT cs_try($$SELECT prom_create_metric('cs_cpu')$$);
SELECT count(*) FROM pg_class WHERE relnamespace = 'cs_others'::regnamespace;
SET search_path = cs, public;
SELECT cs_try($$SELECT * FROM cs_cpu$$);
SELECT cs_try($$SELECT * FROM "cs_cpu#head"$$);
SELECT cs_try($$SELECT prom_chunk_partition('cs_cpu', '2030-01-01')$$);
SELECT cs_try($$SELECT prom_unregister('cs_cpu')$$);
SELECT metric, series, samples FROM prom_metric_sizes WHERE metric = 'cs_cpu';
RESET ROLE;
SET ROLE cs_owner;
GRANT SELECT ON cs_cpu TO cs_other;
RESET ROLE;
SET ROLE cs_other;
SELECT count(*) FROM cs_cpu;
RESET ROLE;

-- unregistering, registering again and dropping forget the storage entry
SET ROLE cs_owner;
SELECT prom_unregister('cs_cpu');
SELECT metric FROM prom_metric_storage WHERE metric LIKE 'cs\_%' OR metric LIKE 'mmm%' ORDER BY 1;
SELECT prom_register('cs_latency', 'cs_latency');
SELECT metric FROM prom_metric_storage WHERE metric LIKE 'cs\_%' OR metric LIKE 'mmm%' ORDER BY 1;
DO $$ BEGIN
	EXECUTE format('DROP VIEW %s', (SELECT relation FROM prom_metric_storage
									WHERE metric = repeat('m', 70)));
END $$;
SELECT metric FROM prom_metric_storage WHERE metric LIKE 'cs\_%' OR metric LIKE 'mmm%' ORDER BY 1;
SELECT metric FROM prom_metrics WHERE metric LIKE 'cs\_%' OR metric LIKE 'mmm%' ORDER BY 1;
RESET ROLE;
RESET search_path;
DROP SCHEMA cs CASCADE;
DROP SCHEMA cs_others CASCADE;
DROP ROLE cs_owner;
DROP ROLE cs_other;

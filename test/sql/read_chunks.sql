-- Reading metrics in chunk storage (docs/chunk-storage.md): the same
-- samples in a row table and in a chunk metric, split between chunks and
-- head rows (late head samples among the chunks' times, a millisecond in
-- both where the head's sample wins, stale markers and a NaN payload), give
-- the same answers through prom_series and through prom_remote_read's
-- SAMPLES and STREAMED_XOR_CHUNKS answers, for many selectors and time
-- ranges that cut chunks; then a metric made by prom_create_metric (its
-- labels in overflow), one compacted by prom_compact before and after late
-- samples, histograms, prom_explain, the caller's rights, row-level
-- security on the series table, limits and bad chunks.  The first tables
-- are made here by hand as the contract's DDL describes them; their chunks
-- are cut from promread's own STREAMED_XOR_CHUNKS answers of a row table
-- of the same samples.
SET timezone = 'UTC';
SET datestyle = 'ISO';
SET max_parallel_workers_per_gather = 0;
SET jit = off;

-- The fields of a protobuf message: a varint's value, or a LEN's bytes.
CREATE FUNCTION rc_fields(msg bytea)
	RETURNS TABLE (field int, value bigint, bytes bytea)
	LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE
	pos int := 0;
	shift int;
	b int;
	tag bigint;
	n bigint;
	part int;
BEGIN
	WHILE pos < length(msg) LOOP
		FOR part IN 1..2 LOOP
			n := 0;
			shift := 0;
			LOOP
				b := get_byte(msg, pos);
				pos := pos + 1;
				n := n | ((b & 127)::bigint << shift);
				EXIT WHEN b < 128;
				shift := shift + 7;
			END LOOP;
			IF part = 1 THEN
				tag := n;
				field := tag >> 3;
			END IF;
		END LOOP;
		IF tag & 7 = 0 THEN
			value := n;
			bytes := NULL;
		ELSE
			value := NULL;
			bytes := substr(msg, pos + 1, n::int);
			pos := pos + n::int;
		END IF;
		RETURN NEXT;
	END LOOP;
END $$;

-- The chunks of a STREAMED_XOR_CHUNKS stream: frames of a varint length,
-- a CRC and a ChunkedReadResponse { chunked_series = 1 { chunks = 2 {
-- min_time_ms = 1, max_time_ms = 2, type = 3, data = 4 } } }.
CREATE FUNCTION rc_stream_chunks(stream bytea)
	RETURNS TABLE (min_time bigint, max_time bigint, encoding int, data bytea)
	LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE
	pos int := 0;
	len bigint;
	shift int;
	b int;
	message bytea;
BEGIN
	WHILE pos < length(stream) LOOP
		len := 0;
		shift := 0;
		LOOP
			b := get_byte(stream, pos);
			pos := pos + 1;
			len := len | ((b & 127)::bigint << shift);
			EXIT WHEN b < 128;
			shift := shift + 7;
		END LOOP;
		message := substr(stream, pos + 5, len::int);
		pos := pos + 4 + len::int;
		RETURN QUERY
			SELECT (SELECT f.value FROM rc_fields(c.bytes) f WHERE f.field = 1),
				(SELECT f.value FROM rc_fields(c.bytes) f WHERE f.field = 2),
				(SELECT f.value FROM rc_fields(c.bytes) f WHERE f.field = 3)::int,
				(SELECT f.bytes FROM rc_fields(c.bytes) f WHERE f.field = 4)
			FROM rc_fields(message) s, rc_fields(s.bytes) c
			WHERE s.field = 1 AND c.field = 2;
	END LOOP;
END $$;

-- Exact values: the stale marker and a NaN with another payload, which SQL
-- has no literal for (test/fixtures/exact_values.copy, see encoders.sql).
CREATE TABLE rc_exact (t timestamptz, host text, v float8);
\set abs_srcdir `pwd` '/test'
\set exact_values :abs_srcdir '/fixtures/exact_values.copy'
COPY rc_exact FROM :'exact_values' (FORMAT binary);
CREATE FUNCTION rc_bits(bits bytea) RETURNS float8 LANGUAGE sql STABLE AS $$
	SELECT v FROM rc_exact WHERE float8send(v) = bits $$;

-- The samples: five series, one every 50 s (and a few ms) from 00:00 to
-- 05:00; those before 04:00 go to chunks, the rest to the head.  The head
-- also has late samples at 00:08-00:17 between the chunks' ones, four
-- samples at the millisecond of a chunk's sample (the head's wins) and a
-- stale marker; the chunks a stale marker and a NaN payload.
CREATE TABLE rc_labels (sid int, job text, instance text, zone text);
INSERT INTO rc_labels VALUES (1, 'api', 'i1', 'eu'), (2, 'api', 'i2', NULL),
	(3, 'db', 'i1', 'us'), (4, 'db', 'i3', NULL), (5, 'web', 'i1', 'eu');
CREATE TABLE rc_samples (sid int, t bigint, v float8, head boolean);
INSERT INTO rc_samples
	SELECT sid, 1704067200000 + k * 50000 + (k * 7) % 13,
		CASE WHEN sid = 1 AND k = 100 THEN rc_bits('\x7ff0000000000002')
			 WHEN sid = 2 AND k = 200 THEN rc_bits('\xfff8000000000001')
			 ELSE sid * 1000 + k * 0.5 END,
		k * 50000 >= 4 * 3600000
	FROM generate_series(1, 5) sid, generate_series(0, 359) k;
INSERT INTO rc_samples
	SELECT sid, 1704067200000 + k * 50000 + 25000, -k, true
	FROM generate_series(1, 3) sid, generate_series(10, 20) k;
INSERT INTO rc_samples VALUES
	(1, 1704067200000 + 50 * 50000 + 350 % 13, 99999, true),
	(3, 1704067200000 + 100 * 50000 + 700 % 13, -99999, true),
	(5, 1704067200000 + 200 * 50000 + 1400 % 13, 55555, true),
	(1, 1704067200000 + 200 * 50000 + 1400 % 13, 11111, true),
	(4, 1704067200000 + 5 * 3600000, rc_bits('\x7ff0000000000002'), true);

-- the row metric: each millisecond's sample, the head's where both have one
CREATE TABLE rc_rows (t bigint, job text, instance text, zone text, v float8);
INSERT INTO rc_rows
	SELECT DISTINCT ON (s.sid, s.t) s.t, l.job, l.instance, l.zone, s.v
	FROM rc_samples s JOIN rc_labels l USING (sid)
	ORDER BY s.sid, s.t, s.head DESC;
SELECT prom_register('rc_rows', time_column => 't');
SELECT count(*) AS samples, count(*) FILTER (WHERE v::text = 'NaN') AS nans
FROM rc_rows;

-- the chunk metric's tables, as docs/chunk-storage.md defines them
CREATE TABLE "rc_chunks#series" (
	series_id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	labels_hash bigint NOT NULL,
	job text COLLATE "C", instance text COLLATE "C", zone text COLLATE "C");
CREATE INDEX ON "rc_chunks#series" (labels_hash);
CREATE INDEX ON "rc_chunks#series" (instance);
CREATE INDEX ON "rc_chunks#series" (job);
CREATE TABLE "rc_chunks#chunks" (
	series_id bigint NOT NULL, min_time bigint NOT NULL,
	max_time bigint NOT NULL, encoding smallint NOT NULL, chunk bytea NOT NULL,
	CHECK (floor(min_time / 7200000.0) = floor(max_time / 7200000.0)))
	PARTITION BY RANGE (min_time);
CREATE TABLE "rc_chunks#chunks_20240101" PARTITION OF "rc_chunks#chunks"
	FOR VALUES FROM (1704067200000) TO (1704153600000);
CREATE TABLE "rc_chunks#chunks_20231231" PARTITION OF "rc_chunks#chunks"
	FOR VALUES FROM (1703980800000) TO (1704067200000);
CREATE INDEX ON "rc_chunks#chunks" (series_id, min_time);
CREATE TABLE "rc_chunks#head" (series_id bigint NOT NULL, t bigint NOT NULL,
	value float8 NOT NULL);
CREATE INDEX ON "rc_chunks#head" (series_id, t);
INSERT INTO "rc_chunks#series" (labels_hash, job, instance, zone)
	SELECT sid, job, instance, zone FROM rc_labels ORDER BY sid;
INSERT INTO "rc_chunks#head"
	SELECT sid, t, v FROM rc_samples WHERE head;
-- the registered relation: a view (here of the head alone: reads of the
-- metric never read it)
CREATE VIEW rc_chunks AS
	SELECT s.job, s.instance, s.zone, to_timestamp(h.t / 1000.0) AS ts, h.value
	FROM "rc_chunks#head" h JOIN "rc_chunks#series" s USING (series_id);
SELECT prom_register('rc_chunks');

-- the chunks: each series' chunk samples of each 2-hour window, as
-- promread's STREAMED_XOR_CHUNKS answer of a row table encodes them, stored
-- window by window (a series' chunks apart: a read orders them by series)
CREATE TABLE rc_src (t bigint, job text, instance text, zone text, v float8);
INSERT INTO rc_src
	SELECT s.t, l.job, l.instance, l.zone, s.v
	FROM rc_samples s JOIN rc_labels l USING (sid) WHERE NOT s.head;
SELECT prom_register('rc_src', time_column => 't');
CREATE FUNCTION rc_series_selector(metric text, sid int) RETURNS text
	LANGUAGE sql STABLE AS $$
	SELECT format('{__name__=%s, job=%s, instance=%s, zone=%s}', to_json(metric),
		to_json(job), to_json(instance), to_json(coalesce(zone, '')))
	FROM rc_labels WHERE rc_labels.sid = rc_series_selector.sid $$;
CREATE FUNCTION rc_ms(ms bigint) RETURNS timestamptz LANGUAGE sql IMMUTABLE AS $$
	SELECT 'epoch'::timestamptz + ms * interval '1 ms' $$;
INSERT INTO "rc_chunks#chunks"
	SELECT l.sid, c.min_time, c.max_time, c.encoding, c.data
	FROM generate_series(0, 1) w, rc_labels l,
		LATERAL rc_stream_chunks(prom_remote_read(prom_read_request(
			rc_series_selector('rc_src', l.sid),
			rc_ms(1704067200000 + w * 7200000),
			rc_ms(1704067200000 + (w + 1) * 7200000 - 1),
			'{streamed_xor_chunks}'))) c;
SELECT count(*) AS chunks, min(max_time - min_time) > 0 AS spans,
	count(DISTINCT encoding) AS encodings FROM "rc_chunks#chunks";
INSERT INTO prom_storage_catalog VALUES ('rc_chunks', 'rc_chunks',
	'"rc_chunks#series"', '"rc_chunks#chunks"', '"rc_chunks#head"');
SELECT metric, relation, series, chunks, head FROM prom_metric_storage;

-- A decoded answer with the samples in [start_time, end_time] alone, and
-- the series left with some: what a client keeps of a STREAMED_XOR_CHUNKS
-- answer, whose stored chunks are sent whole, samples outside the range
-- included, as Prometheus's own server sends its chunks.
CREATE FUNCTION rc_in_range(answer jsonb, start_time timestamptz,
		end_time timestamptz) RETURNS jsonb
	LANGUAGE sql STABLE AS $$
	SELECT jsonb_build_object('results', coalesce(jsonb_agg(r ||
		jsonb_build_object('timeseries', coalesce((
			SELECT jsonb_agg(f ORDER BY o)
			FROM jsonb_array_elements(r -> 'timeseries') WITH ORDINALITY x(t, o),
				LATERAL (SELECT jsonb_build_object(
					's', (extract(epoch FROM start_time) * 1000)::bigint,
					'e', (extract(epoch FROM end_time) * 1000)::bigint) AS v) b,
				LATERAL (SELECT t || jsonb_build_object('samples',
					jsonb_path_query_array(t -> 'samples',
						'strict $[*] ? (@[0] >= $s && @[0] <= $e)', v)) ||
					CASE WHEN t ? 'histograms' THEN jsonb_build_object('histograms',
						jsonb_path_query_array(t -> 'histograms',
							'strict $[*] ? (@[0] >= $s && @[0] <= $e)', v))
					ELSE '{}' END AS f) y
			WHERE jsonb_array_length(f -> 'samples') > 0
				OR jsonb_array_length(coalesce(f -> 'histograms', '[]')) > 0),
			'[]')) ORDER BY ro), '[]'))
	FROM jsonb_array_elements(answer -> 'results') WITH ORDINALITY q(r, ro) $$;

-- Compare the two metrics for a selector's matchers and a time range:
-- prom_series (values by their bits), the SAMPLES answer and the
-- STREAMED_XOR_CHUNKS answer (its samples in the range, rc_in_range), each
-- with the metric's name replaced.
CREATE FUNCTION rc_compare(metric_a text, metric_b text, matchers text,
		start_time timestamptz, end_time timestamptz,
		OUT series bigint, OUT samples bigint, OUT same_series boolean,
		OUT same_samples boolean, OUT same_chunks boolean)
	LANGUAGE plpgsql AS $$
DECLARE
	sel_a text := format('{__name__=%s%s}', to_json(metric_a), matchers);
	sel_b text := format('{__name__=%s%s}', to_json(metric_b), matchers);
	a text;
	b text;
	t text;
BEGIN
	SELECT count(*), sum(cardinality(s.ts) + coalesce(cardinality(s.histograms), 0))
		INTO series, samples FROM prom_series(sel_a, start_time, end_time) s;
	SELECT string_agg(format('%s %s %s %s', s.labels - '__name__', s.ts,
		(SELECT array_agg(float8send(v)) FROM unnest(s.value) v),
		s.histograms), ';' ORDER BY s.labels::text)
		INTO a FROM prom_series(sel_a, start_time, end_time) s;
	SELECT string_agg(format('%s %s %s %s', s.labels - '__name__', s.ts,
		(SELECT array_agg(float8send(v)) FROM unnest(s.value) v),
		s.histograms), ';' ORDER BY s.labels::text)
		INTO b FROM prom_series(sel_b, start_time, end_time) s;
	same_series := a IS NOT DISTINCT FROM b;
	FOREACH t IN ARRAY ARRAY['{samples}', '{streamed_xor_chunks}'] LOOP
		a := replace(rc_in_range(prom_read_response_json(prom_remote_read(
			prom_read_request(sel_a, start_time, end_time, t::text[]))),
			start_time, end_time)::text, metric_a, '');
		b := replace(rc_in_range(prom_read_response_json(prom_remote_read(
			prom_read_request(sel_b, start_time, end_time, t::text[]))),
			start_time, end_time)::text, metric_b, '');
		IF t = '{samples}' THEN
			same_samples := a = b;
		ELSE
			same_chunks := a = b;
		END IF;
	END LOOP;
END $$;

-- selectors by each kind of matcher, absent labels, and every time range
SELECT m AS matchers, (rc_compare('rc_rows', 'rc_chunks', m,
	'2024-01-01', '2024-01-02')).*
FROM unnest(ARRAY['', ', job="api"', ', job!="api"', ', job=~"a.*|w.b"',
	', job!~"d.*"', ', zone=""', ', zone!=""', ', zone=~"e.*|"',
	', instance="i1", zone!~"us"', ', job=~"api|db"', ', job="nope"',
	', zone="eu", job!="web"', ', other=""', ', other="x"']) m;
SELECT s AS start_time, e AS end_time, (rc_compare('rc_rows', 'rc_chunks', '',
	s::timestamptz, e::timestamptz)).*
FROM (VALUES ('2024-01-01 00:00:00', '2024-01-01 00:00:00'),
	('2024-01-01 00:03:20.014', '2024-01-01 00:07:30.011'),
	('2024-01-01 00:08:00', '2024-01-01 00:13:00'),
	('2024-01-01 00:41:40', '2024-01-01 02:05:00'),
	('2024-01-01 01:59:59.999', '2024-01-01 02:00:00.001'),
	('2024-01-01 02:00:00', '2024-01-01 03:59:59.999'),
	('2024-01-01 03:58:00', '2024-01-01 04:02:00'),
	('2024-01-01 04:00:00', '2024-01-01 05:00:00'),
	('2023-12-31 23:00:00', '2024-01-01 00:00:00.001'),
	('2023-12-31', '2023-12-31 23:59:59'),
	('2024-01-01 05:00:00.001', '2024-01-02')) r(s, e);
-- the head's sample of a millisecond that a chunk has too, and the late
-- head samples between the chunks', and the stale markers, bit for bit
SELECT labels ->> 'job' AS job, labels ->> 'instance' AS instance, ts,
	(SELECT array_agg(float8send(v)) FROM unnest(value) v) AS value
FROM prom_series('rc_chunks{instance="i1", job=~"api|db"}',
	'2024-01-01 00:41:40', '2024-01-01 00:41:40.02')
UNION ALL
SELECT labels ->> 'job', labels ->> 'instance', ts,
	(SELECT array_agg(float8send(v)) FROM unnest(value) v)
FROM prom_series('rc_chunks{job="api", instance="i1"}',
	'2024-01-01 00:08:20', '2024-01-01 00:09:10')
UNION ALL
SELECT labels ->> 'job', labels ->> 'instance', ts,
	(SELECT array_agg(float8send(v)) FROM unnest(value) v)
FROM prom_series('rc_chunks{instance=~"i[12]"}',
	'2024-01-01 01:23:20', '2024-01-01 01:23:20.02')
UNION ALL
SELECT labels ->> 'job', labels ->> 'instance', ts,
	(SELECT array_agg(float8send(v)) FROM unnest(value) v)
FROM prom_series('rc_chunks{instance=~"i[12]"}', '2024-01-01 02:46:40', '2024-01-01 02:46:40.02')
UNION ALL
SELECT labels ->> 'job', labels ->> 'instance', ts,
	(SELECT array_agg(float8send(v)) FROM unnest(value) v)
FROM prom_series('rc_chunks{instance="i3"}', '2024-01-01 05:00:00', '2024-01-01 05:00:00');

-- both metrics in one query: each keeps its own series
SELECT count(*) AS series FROM prom_series('{__name__=~"rc_(rows|chunks)", job="db"}',
	'2024-01-01', '2024-01-02');

-- prom_explain shows the chunk and head statements and the matchers'
-- decisions on the series table; the chunks' partitions are pruned from
-- below too (a chunk lies within one 2-hour window): a read from 03:00
-- reaches no chunk of the day before, one from 00:30 may
SELECT line FROM prom_explain('rc_chunks{job!~"d.*", instance="i1"}',
	'2024-01-01 00:30', '2024-01-01 01:00') line
WHERE line ~ '^(metric|  decided|  series:|  chunks:|  head:)';
SELECT s AS start_time, bool_or(line LIKE '%rc_chunks#chunks_20231231%') AS reads_day_before,
	bool_or(line LIKE '%rc_chunks#chunks_20240101%') AS reads_day
FROM unnest(ARRAY['2024-01-01 00:30', '2024-01-01 03:00']) s,
	prom_explain('rc_chunks', s::timestamptz, '2024-01-01 04:00') line
GROUP BY s ORDER BY s;
-- a read of a few series is planned once for any values (a generic plan,
-- the series' ids a parameter), and the plan holds the partitions of the
-- range's days alone: from 03:00 the day before is not in it (not even as
-- a partition pruned when the plan runs), from 00:30 it is
SELECT s AS start_time, bool_or(line LIKE '%series_id = ANY ($4)%') AS generic,
	bool_or(line LIKE '%rc_chunks#chunks_20231231%') AS reads_day_before,
	bool_or(line LIKE '%Subplans Removed%') AS pruned_when_run
FROM unnest(ARRAY['2024-01-01 00:30', '2024-01-01 03:00']) s,
	prom_explain('rc_chunks{instance="i1"}', s::timestamptz, '2024-01-01 04:00') line
GROUP BY s ORDER BY s;

-- A metric made by prom_create_metric, its labels past the first in its
-- jsonb column of overflow labels, holding the same series, chunks and
-- head rows: the same answers as the row metric, matchers on overflow
-- labels included
SET promread.write_max_label_columns = 1;
SELECT prom_create_metric('rc_made', '{job,instance,zone}');
RESET promread.write_max_label_columns;
SELECT metric, label_columns, overflow_column FROM prom_metrics WHERE metric = 'rc_made';
SELECT prom_chunk_partition('rc_made', '2024-01-01') IS NOT NULL AS partition;
INSERT INTO "rc_made#series" (labels_hash, job, __labels)
	SELECT sid, job, jsonb_strip_nulls(jsonb_build_object('instance', instance, 'zone', zone))
	FROM rc_labels ORDER BY sid;
INSERT INTO "rc_made#chunks" SELECT * FROM "rc_chunks#chunks";
INSERT INTO "rc_made#head" SELECT * FROM "rc_chunks#head";
SELECT m AS matchers, (rc_compare('rc_rows', 'rc_made', m,
	'2024-01-01 00:30', '2024-01-01 04:30')).*
FROM unnest(ARRAY['', ', job="api"', ', instance="i1"', ', zone=""',
	', zone=~"e.*|"', ', instance!~"i[12]", job!="web"']) m;
-- the view gives the same samples, more slowly (a millisecond in a chunk
-- and in the head is a row of each)
SELECT count(*) AS view_rows FROM rc_made;
SELECT sum(cardinality(ts)) AS samples FROM prom_series('rc_made', '2024-01-01', '2024-01-02');

-- Compaction (prom_compact) of a metric made by prom_create_metric: its
-- chunk samples first written to its head, then compacted; then the head
-- samples written (late ones and those of a millisecond a chunk has
-- among them: to m#late, their windows being compacted), then compacted again, merged with the chunks: the answers
-- stay those of the row metrics of the same samples (rc_src, then rc_rows)
SELECT prom_create_metric('rc_comp', '{job,instance,zone}');
INSERT INTO "rc_comp#series" (labels_hash, job, instance, zone)
	SELECT sid, job, instance, zone FROM rc_labels ORDER BY sid;
INSERT INTO "rc_comp#head" SELECT sid, t, v FROM rc_samples WHERE NOT head;
SELECT 'head' AS state, (rc_compare('rc_src', 'rc_comp', '', '2024-01-01', '2024-01-02')).*;
SELECT prom_compact('rc_comp') > 0 AS compacted;
SELECT 'compacted' AS state, (rc_compare('rc_src', 'rc_comp', '', '2024-01-01', '2024-01-02')).*;
INSERT INTO "rc_comp#late" SELECT sid, t, v FROM rc_samples WHERE head;
SELECT 'chunks and head' AS state, m AS matchers,
	(rc_compare('rc_rows', 'rc_comp', m, '2024-01-01', '2024-01-02')).*
FROM unnest(ARRAY['', ', instance="i1"']) m;
SELECT prom_compact('rc_comp') > 0 AS compacted;
SELECT count(*) AS head_rows FROM "rc_comp#head";
SELECT 'merged' AS state, m AS matchers,
	(rc_compare('rc_rows', 'rc_comp', m, '2024-01-01 00:05', '2024-01-01 04:10')).*
FROM unnest(ARRAY['', ', instance="i1"']) m;

-- Histograms: a metric whose head holds prom_histogram values and whose
-- chunks are HISTOGRAM and FLOAT_HISTOGRAM chunks
CREATE TABLE rc_hsamples (job text, t bigint, h prom_histogram, head boolean);
INSERT INTO rc_hsamples
	SELECT 'a', 1704067200000 + k * 60000 + k % 7,
		format('{"kind":"integer","schema":3,"zero_count":%s,"count":%s,"sum":%s,"positive_spans":[[0,2]],"positive_deltas":[%s,1],"reset_hint":"unknown"}',
			k, 3 * k + 1, k * 1.5, k)::prom_histogram,
		k >= 120
	FROM generate_series(0, 179) k
	UNION ALL
	SELECT 'b', 1704067200000 + k * 60000,
		CASE WHEN k = 30 THEN '{"kind":"float","sum":"NaN:0x7ff0000000000002","reset_hint":"gauge"}'
		ELSE format('{"kind":"float","count":%s,"sum":%s,"positive_spans":[[1,1]],"positive_counts":[%s],"reset_hint":"gauge"}',
			k, k * 0.25, k) END::prom_histogram,
		k >= 120
	FROM generate_series(0, 179) k;
INSERT INTO rc_hsamples VALUES
	('a', 1704067200000 + 40 * 60000 + 40 % 7,
	 '{"kind":"integer","count":7,"zero_count":7,"reset_hint":"unknown"}', true),
	('b', 1704067200000 + 10 * 60000 + 30000,
	 '{"kind":"float","count":1,"zero_count":1,"reset_hint":"gauge"}', true);
CREATE TABLE rc_hrows (t bigint, job text, h prom_histogram);
INSERT INTO rc_hrows
	SELECT DISTINCT ON (job, t) t, job, h FROM rc_hsamples ORDER BY job, t, head DESC;
SELECT prom_register('rc_hrows', time_column => 't');
CREATE TABLE rc_hsrc (t bigint, job text, h prom_histogram);
INSERT INTO rc_hsrc SELECT t, job, h FROM rc_hsamples WHERE NOT head;
SELECT prom_register('rc_hsrc', time_column => 't');

CREATE TABLE "rc_hchunks#series" (
	series_id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	labels_hash bigint NOT NULL, job text COLLATE "C");
CREATE TABLE "rc_hchunks#chunks" (
	series_id bigint NOT NULL, min_time bigint NOT NULL,
	max_time bigint NOT NULL, encoding smallint NOT NULL, chunk bytea NOT NULL);
CREATE TABLE "rc_hchunks#head" (series_id bigint NOT NULL, t bigint NOT NULL,
	value prom_histogram NOT NULL);
INSERT INTO "rc_hchunks#series" (labels_hash, job) VALUES (1, 'a'), (2, 'b');
INSERT INTO "rc_hchunks#head"
	SELECT s.series_id, h.t, h.h FROM rc_hsamples h JOIN "rc_hchunks#series" s USING (job)
	WHERE h.head;
INSERT INTO "rc_hchunks#chunks"
	SELECT s.series_id, c.min_time, c.max_time, c.encoding, c.data
	FROM "rc_hchunks#series" s, generate_series(0, 1) w,
		LATERAL rc_stream_chunks(prom_remote_read(prom_read_request(
			format('rc_hsrc{job="%s"}', s.job),
			rc_ms(1704067200000 + w * 7200000),
			rc_ms(1704067200000 + (w + 1) * 7200000 - 1),
			'{streamed_xor_chunks}'))) c;
SELECT encoding, count(*) AS chunks FROM "rc_hchunks#chunks" GROUP BY 1 ORDER BY 1;
CREATE VIEW rc_hchunks AS
	SELECT s.job, to_timestamp(h.t / 1000.0) AS ts, h.value
	FROM "rc_hchunks#head" h JOIN "rc_hchunks#series" s USING (series_id);
SELECT prom_register('rc_hchunks');
INSERT INTO prom_storage_catalog VALUES ('rc_hchunks', 'rc_hchunks',
	'"rc_hchunks#series"', '"rc_hchunks#chunks"', '"rc_hchunks#head"');
SELECT m AS matchers, s AS start_time, e AS end_time,
	(rc_compare('rc_hrows', 'rc_hchunks', m, s::timestamptz, e::timestamptz)).*
FROM (VALUES ('', '2024-01-01', '2024-01-02'),
	(', job="a"', '2024-01-01 00:30', '2024-01-01 00:45'),
	(', job!="a"', '2024-01-01 00:05', '2024-01-01 00:35'),
	(', job=~"a|b"', '2024-01-01 01:50', '2024-01-01 02:10')) r(m, s, e);
SELECT labels ->> 'job' AS job, ts, histograms::text[]
FROM prom_series('rc_hchunks', '2024-01-01 00:10:00', '2024-01-01 00:10:30')
UNION ALL
SELECT labels ->> 'job', ts, histograms::text[]
FROM prom_series('rc_hchunks', '2024-01-01 00:30:00', '2024-01-01 00:30:00')
UNION ALL
SELECT labels ->> 'job', ts, histograms::text[]
FROM prom_series('rc_hchunks{job="a"}', '2024-01-01 00:40:00', '2024-01-01 00:40:00.01');

-- The caller's rights: the three tables are read with them.  A role that
-- may read none of them fails a query that names the metric, and one that
-- selects it by another matcher skips it; SELECT on each (or on each of
-- its columns) reads it.
CREATE ROLE regress_rc_reader;
GRANT SELECT ON rc_rows TO regress_rc_reader;
SET ROLE regress_rc_reader;
SELECT count(*) FROM prom_series('rc_chunks', '2024-01-01', '2024-01-02');
SELECT labels ->> '__name__' AS metric, count(*) AS series
FROM prom_series('{__name__=~"rc_(rows|chunks)"}', '2024-01-01', '2024-01-02')
GROUP BY 1;
SELECT count(*) FROM prom_explain('{__name__=~"rc_(rows|chunks)"}', '2024-01-01', '2024-01-02') l
WHERE l LIKE 'metric%';
RESET ROLE;
GRANT SELECT ON "rc_chunks#series", "rc_chunks#chunks" TO regress_rc_reader;
GRANT SELECT (series_id, t) ON "rc_chunks#head" TO regress_rc_reader;
SET ROLE regress_rc_reader;
-- some of the head's columns: not read
SELECT count(*) FROM prom_series('rc_chunks', '2024-01-01', '2024-01-02');
RESET ROLE;
-- each of the head's columns: read
GRANT SELECT (value) ON "rc_chunks#head" TO regress_rc_reader;
SET ROLE regress_rc_reader;
SELECT count(*) AS series, sum(cardinality(ts)) AS samples
FROM prom_series('rc_chunks', '2024-01-01', '2024-01-02');
RESET ROLE;
-- row-level security on the series table applies to its readers
ALTER TABLE "rc_chunks#series" ENABLE ROW LEVEL SECURITY;
CREATE POLICY rc_api ON "rc_chunks#series" FOR SELECT TO regress_rc_reader
	USING (job = 'api');
SET ROLE regress_rc_reader;
SELECT labels ->> 'job' AS job, labels ->> 'instance' AS instance,
	cardinality(ts) AS samples
FROM prom_series('rc_chunks', '2024-01-01', '2024-01-02') ORDER BY 2;
RESET ROLE;
ALTER TABLE "rc_chunks#series" DISABLE ROW LEVEL SECURITY;

-- More series selected than the chunk and head statements list by id
-- (4,096): they read the range, and skip the rows of the series the
-- matchers leave out.  4,200 series of job a and 100 of job b, each with
-- four samples compacted and two in the head: the answers are a row
-- metric's of the same samples, for all, for a (not listed) and for b
-- (listed), and under row-level security that leaves out a tenth of them
SET promread.compact_after = 0;
SELECT prom_create_metric('rc_many', '{job,instance}') IS NOT NULL AS created;
INSERT INTO "rc_many#series" (labels_hash, job, instance)
	SELECT i, CASE WHEN i <= 4200 THEN 'a' ELSE 'b' END, 'i' || i
	FROM generate_series(1, 4300) i;
INSERT INTO "rc_many#head"
	SELECT series_id, 1704067200000 + k * 15000, series_id * 10 + k
	FROM "rc_many#series", generate_series(0, 3) k;
SELECT prom_compact('rc_many') > 0 AS compacted;
RESET promread.compact_after;
INSERT INTO "rc_many#head"
	SELECT series_id, 1704067200000 + k * 15000, series_id * 10 + k
	FROM "rc_many#series", generate_series(4, 5) k;
CREATE TABLE rc_many_rows AS
	SELECT h.t, s.job, s.instance, h.value AS v
	FROM "rc_many#head" h JOIN "rc_many#series" s USING (series_id);
INSERT INTO rc_many_rows
	SELECT 1704067200000 + k * 15000, job, instance, series_id * 10 + k
	FROM "rc_many#series", generate_series(0, 3) k;
SELECT prom_register('rc_many_rows', time_column => 't');
SELECT m AS matchers, (rc_compare('rc_many_rows', 'rc_many', m,
	'2024-01-01', '2024-01-01 01:00')).*
FROM unnest(ARRAY['', ', job="a"', ', job="b"', ', instance=~"i1.*"']) m;
ALTER TABLE "rc_many#series" ENABLE ROW LEVEL SECURITY;
CREATE POLICY rc_tenth ON "rc_many#series" FOR SELECT TO regress_rc_reader
	USING (series_id % 10 = 0);
GRANT SELECT ON "rc_many#series", "rc_many#chunks", "rc_many#head", "rc_many#late",
	rc_many_rows TO regress_rc_reader;
SET ROLE regress_rc_reader;
SELECT m AS matchers, count(*) AS series, sum(cardinality(ts)) AS samples,
	bool_and((labels ->> 'instance') ~ '0$') AS only_allowed
FROM unnest(ARRAY['rc_many', 'rc_many{job="a"}', 'rc_many{job="b"}']) m,
	prom_series(m, '2024-01-01', '2024-01-01 01:00')
GROUP BY m ORDER BY m;
RESET ROLE;
SELECT prom_unregister('rc_many'), prom_unregister('rc_many_rows');
DROP VIEW rc_many;
DROP TABLE rc_many_rows, "rc_many#series", "rc_many#chunks", "rc_many#head", "rc_many#late";

-- Before 1970 too: m#chunks' index is by window as SQL's division numbers
-- it (toward zero), and a read of a few series lists those keys.  Samples
-- every 10 minutes from 1969-12-31 20:00 to 1970-01-01 04:00, compacted,
-- then a late one in a window before 1970, compacted again (merged): every
-- read, from ranges that start and end on either side, sees them all
SET promread.compact_after = 0;
SELECT prom_create_metric('rc_neg', '{job}') IS NOT NULL AS created;
INSERT INTO "rc_neg#series" (labels_hash, job) VALUES (1, 'a'), (2, 'b');
INSERT INTO "rc_neg#head"
	SELECT s, k * 600000, k + s / 10.0 FROM generate_series(-24, 24) k, generate_series(1, 2) s;
SELECT prom_compact('rc_neg') > 0 AS compacted;
INSERT INTO "rc_neg#head" VALUES (1, -5400000 + 1, 0.5);
SELECT prom_compact('rc_neg') > 0 AS compacted;
RESET promread.compact_after;
SELECT count(*) AS head_rows FROM "rc_neg#head";
SELECT s, e, sel, (SELECT sum(cardinality(ts)) FROM prom_series(sel, s::timestamptz, e::timestamptz)) AS samples
FROM unnest(ARRAY['1969-12-31 20:00+00', '1969-12-31 23:10+00', '1970-01-01 01:00+00']) s,
	unnest(ARRAY['1969-12-31 23:50+00', '1970-01-01 04:00+00']) e,
	unnest(ARRAY['rc_neg{job="a"}', 'rc_neg']) sel
WHERE s < e ORDER BY 1, 2, 3;
SELECT prom_unregister('rc_neg');
DROP VIEW rc_neg;
DROP TABLE "rc_neg#series", "rc_neg#chunks", "rc_neg#head";

-- Limits apply as to rows: promread.max_samples counts the chunks' samples
\set VERBOSITY sqlstate
SET promread.max_samples = 100;
SELECT count(*) FROM prom_series('rc_chunks{job="api", instance="i1"}', '2024-01-01', '2024-01-02');
SELECT count(*) FROM prom_series('rc_chunks{job="api", instance="i1"}', '2024-01-01 04:00', '2024-01-02');
SET promread.max_samples = 1000;
SELECT sum(cardinality(ts)) FROM prom_series('rc_chunks{job="api", instance="i1"}', '2024-01-01', '2024-01-02');
RESET promread.max_samples;
\set VERBOSITY default

-- A chunk that does not decode, or has the wrong encoding, is an error
-- naming its series and time (XX001)
\set SHOW_CONTEXT never
BEGIN;
UPDATE "rc_chunks#chunks" SET chunk = substr(chunk, 1, 20)
WHERE series_id = 2 AND min_time = 1704067200000;
SELECT count(*) FROM prom_series('rc_chunks', '2024-01-01', '2024-01-02');
ROLLBACK;
BEGIN;
UPDATE "rc_chunks#chunks" SET encoding = 2
WHERE series_id = 2 AND min_time = 1704067200000;
SELECT count(*) FROM prom_series('rc_chunks', '2024-01-01', '2024-01-02');
ROLLBACK;
\set SHOW_CONTEXT errors
-- a range that reaches no chunk does not read it
BEGIN;
UPDATE "rc_chunks#chunks" SET encoding = 2
WHERE series_id = 2 AND min_time = 1704067200000;
SELECT count(*) FROM prom_series('rc_chunks', '2024-01-01 04:00', '2024-01-02');
ROLLBACK;

-- an entry of the storage catalog counts only while its metric is
-- registered to its relation: registered to another relation, the metric
-- is read as rows
UPDATE prom_storage_catalog SET relation = 'rc_rows' WHERE metric = 'rc_chunks';
SELECT sum(cardinality(ts)) AS samples FROM prom_series('rc_chunks', '2024-01-01', '2024-01-02');
UPDATE prom_storage_catalog SET relation = 'rc_chunks' WHERE metric = 'rc_chunks';

-- STREAMED_XOR_CHUNKS answers send the stored chunks as they are: their
-- bytes, encoding, min and max times, samples outside the range included
-- (a client drops them); the head's samples as chunks encoded at read time;
-- where head samples or other chunks overlap a stored chunk in time, the
-- overlapping ones merged, a head sample replacing the chunk's sample of its
-- millisecond, and cut again.  Series a every 15 s from 00:00 to 04:00
-- (961 samples), b every minute and 7 ms from 00:00 to 02:00, compacted.
SET promread.compact_after = 0;
SELECT prom_create_metric('rc_pass', '{job}') IS NOT NULL AS created;
INSERT INTO "rc_pass#series" (labels_hash, job) VALUES (1, 'a'), (2, 'b');
INSERT INTO "rc_pass#head"
	SELECT 1, 1704067200000 + k * 15000, k * 0.5 FROM generate_series(0, 960) k
	UNION ALL
	SELECT 2, 1704067200000 + k * 60000 + 7, sin(k) FROM generate_series(0, 120) k;
SELECT prom_compact('rc_pass') AS chunks;
RESET promread.compact_after;
-- the chunks of an answer, in its order, as text
CREATE FUNCTION rc_answer_chunks(selector text, s bigint, e bigint)
	RETURNS TABLE (n bigint, chunk text, min_time bigint, max_time bigint)
	LANGUAGE sql AS $$
	SELECT c.n, row(c.min_time, c.max_time, c.encoding, c.data)::text,
		c.min_time, c.max_time
	FROM rc_stream_chunks(prom_remote_read(prom_read_request(selector,
		rc_ms(s), rc_ms(e), '{streamed_xor_chunks}')))
		WITH ORDINALITY c(min_time, max_time, encoding, data, n) $$;
-- the stored chunks of a series that reach into [s, e], in time order
CREATE FUNCTION rc_stored_chunks(metric text, series bigint, s bigint, e bigint)
	RETURNS SETOF text LANGUAGE plpgsql AS $$
BEGIN
	RETURN QUERY EXECUTE format('SELECT row(min_time, max_time, encoding, chunk)::text
		FROM %I WHERE series_id = $1 AND max_time >= $2 AND min_time <= $3
		ORDER BY min_time', metric || '#chunks') USING series, s, e;
END $$;
-- does the chunked answer keep, of the samples in [s, e], just the SAMPLES
-- answer's?  A histogram's counter-reset hint aside: a chunk carries one,
-- on its first histogram, where it was cut
CREATE FUNCTION rc_same_in_range(selector text, s bigint, e bigint)
	RETURNS boolean LANGUAGE sql AS $$
	SELECT regexp_replace(rc_in_range(prom_read_response_json(prom_remote_read(
			prom_read_request(selector, rc_ms(s), rc_ms(e), '{streamed_xor_chunks}'))),
			rc_ms(s), rc_ms(e))::text, '"reset_hint": "[a-z]+"', '', 'g')
		= regexp_replace(prom_read_response_json(prom_remote_read(prom_read_request(
			selector, rc_ms(s), rc_ms(e), '{samples}')))::text,
			'"reset_hint": "[a-z]+"', '', 'g') $$;
-- ranges whose ends lie inside chunks, on a chunk's edge, in one chunk,
-- across windows: the answer's chunks are the stored ones, byte for byte
SELECT r.s - 1704067200000 AS s, r.e - 1704067200000 AS e,
	(SELECT count(*) FROM rc_answer_chunks('{__name__="rc_pass", job="a"}', r.s, r.e)) AS chunks,
	(SELECT array_agg(chunk ORDER BY n) FROM rc_answer_chunks('{__name__="rc_pass", job="a"}', r.s, r.e))
		= ARRAY(SELECT rc_stored_chunks('rc_pass', 1, r.s, r.e)) AS stored_bytes,
	ARRAY(SELECT chunk FROM rc_answer_chunks('{__name__="rc_pass", job="b"}', r.s, r.e) ORDER BY n)
		= ARRAY(SELECT rc_stored_chunks('rc_pass', 2, r.s, r.e)) AS stored_bytes_b,
	rc_same_in_range('{__name__="rc_pass"}', r.s, r.e) AS same_samples
FROM (VALUES (1704067200000 + 100 * 15000 + 1, 1704067200000 + 300 * 15000 - 1),
	(1704067200000, 1704067200000),
	(1704067200000 + 5000, 1704067200000 + 6000),
	(1704067200000 + 7199999, 1704067200000 + 7200000),
	(1704067200000 - 1000, 1704067200000 + 14400000)) r(s, e);
-- the bytes of every stored chunk, whole, in one answer
SELECT (SELECT count(*) FROM rc_answer_chunks('{__name__="rc_pass"}',
		1704067200000, 1704081600000)) AS chunks,
	(SELECT array_agg(chunk ORDER BY chunk) FROM rc_answer_chunks('{__name__="rc_pass"}',
		1704067200000, 1704081600000))
	= (SELECT array_agg(row(min_time, max_time, encoding, chunk)::text
		ORDER BY row(min_time, max_time, encoding, chunk)::text)
		FROM "rc_pass#chunks") AS stored_bytes;
-- late head samples in compacted windows: one replacing a stored sample's
-- millisecond (00:02:30), one between two (00:02:30.001), one where no
-- chunk is (05:00); and a chunk of series b copied 30 s later, overlapping
-- its own
INSERT INTO "rc_pass#late" VALUES (1, 1704067200000 + 10 * 15000, 1000),
	(1, 1704067200000 + 10 * 15000 + 1, 2000), (1, 1704085200000, 3000);
CREATE TABLE rc_pass_src (t bigint, job text, v float8);
INSERT INTO rc_pass_src
	SELECT 1704067200000 + k * 60000 + 30007, 'b', -k FROM generate_series(0, 29) k;
SELECT prom_register('rc_pass_src', time_column => 't');
INSERT INTO "rc_pass#chunks"
	SELECT 2, c.min_time, c.max_time, c.encoding, c.data
	FROM rc_stream_chunks(prom_remote_read(prom_read_request('rc_pass_src',
		rc_ms(1704067200000), rc_ms(1704069000000), '{streamed_xor_chunks}'))) c;
SELECT prom_unregister('rc_pass_src');
-- the answers keep exactly the samples of the SAMPLES answers (the head's
-- 1000 replacing the stored 5), their chunks in time order, each after the
-- one before; the chunks that nothing overlaps are the stored ones
SELECT r.s - 1704067200000 AS s, r.e - 1704067200000 AS e,
	rc_same_in_range('{__name__="rc_pass"}', r.s, r.e) AS same_samples,
	(SELECT bool_and(prev IS NULL OR min_time > prev) FROM (SELECT min_time,
		lag(max_time) OVER (ORDER BY n) AS prev
		FROM rc_answer_chunks('{__name__="rc_pass", job="a"}', r.s, r.e)) c) AS a_in_order,
	(SELECT bool_and(prev IS NULL OR min_time > prev) FROM (SELECT min_time,
		lag(max_time) OVER (ORDER BY n) AS prev
		FROM rc_answer_chunks('{__name__="rc_pass", job="b"}', r.s, r.e)) c) AS b_in_order,
	(SELECT count(*) FROM rc_answer_chunks('{__name__="rc_pass", job="a"}', r.s, r.e) a
		WHERE a.chunk IN (SELECT rc_stored_chunks('rc_pass', 1, r.s, r.e))) AS a_stored,
	(SELECT count(*) FROM rc_answer_chunks('{__name__="rc_pass", job="a"}', r.s, r.e)) AS a_chunks
FROM (VALUES (1704067200000, 1704067200000 + 600000),
	(1704067200000 + 150000, 1704067200000 + 150000),
	(1704067200000 + 150001, 1704067200000 + 150001),
	(1704067200000, 1704088800000)) r(s, e);
SELECT jsonb_path_query(prom_read_response_json(prom_remote_read(prom_read_request(
		'{__name__="rc_pass", job="a"}', rc_ms(1704067200000 + 145000),
		rc_ms(1704067200000 + 155000), '{streamed_xor_chunks}'))),
	'strict $.results[0].timeseries[0].samples[*] ? (@[0] >= 1704067345000 && @[0] <= 1704067355000)');

-- the limit on samples counts a stored chunk's samples, all of them
SET promread.max_samples = 100;
\set VERBOSITY terse
SELECT length(prom_remote_read(prom_read_request('{__name__="rc_pass", job="a"}',
	rc_ms(1704067200000), rc_ms(1704067200000), '{streamed_xor_chunks}')));
\set VERBOSITY default
RESET promread.max_samples;
SET promread.max_samples = 121;
SELECT length(prom_remote_read(prom_read_request('{__name__="rc_pass", job="a"}',
	rc_ms(1704067200000), rc_ms(1704067200000), '{streamed_xor_chunks}'))) > 0 AS answered;
RESET promread.max_samples;

-- histogram chunks pass as they are too, and merge with late head samples
SET promread.compact_after = 0;
SELECT prom_create_metric('rc_hpass', '{job}', value_type => 'prom_histogram') IS NOT NULL AS created;
INSERT INTO "rc_hpass#series" (labels_hash, job) VALUES (1, 'a'), (2, 'b');
INSERT INTO "rc_hpass#head" SELECT CASE job WHEN 'a' THEN 1 ELSE 2 END, t, h
	FROM rc_hsamples WHERE NOT (job = 'a' AND t = 1704067200000 + 40 * 60000 + 40 % 7 AND head)
		AND NOT (job = 'b' AND t = 1704067200000 + 10 * 60000 + 30000);
SELECT prom_compact('rc_hpass') AS chunks;
RESET promread.compact_after;
SELECT (SELECT array_agg(DISTINCT encoding ORDER BY encoding) FROM "rc_hpass#chunks") AS encodings,
	(SELECT array_agg(chunk ORDER BY chunk) FROM rc_answer_chunks('{__name__="rc_hpass"}',
		1704067200000 + 1000, 1704081600000))
	= (SELECT array_agg(row(min_time, max_time, encoding, chunk)::text
		ORDER BY row(min_time, max_time, encoding, chunk)::text)
		FROM "rc_hpass#chunks") AS stored_bytes,
	rc_same_in_range('{__name__="rc_hpass"}', 1704067200000 + 1000, 1704081600000) AS same_samples;
INSERT INTO "rc_hpass#late" SELECT CASE job WHEN 'a' THEN 1 ELSE 2 END, t, h
	FROM rc_hsamples WHERE (job = 'a' AND t = 1704067200000 + 40 * 60000 + 40 % 7 AND head)
		OR (job = 'b' AND t = 1704067200000 + 10 * 60000 + 30000);
SELECT rc_same_in_range('{__name__="rc_hpass"}', 1704067200000 + 1000, 1704081600000) AS same_samples,
	(SELECT count(*) FROM rc_answer_chunks('{__name__="rc_hpass"}',
		1704067200000 + 1000, 1704081600000) a
		WHERE a.chunk IN (SELECT row(min_time, max_time, encoding, chunk)::text
			FROM "rc_hpass#chunks")) AS stored,
	(SELECT count(*) FROM rc_answer_chunks('{__name__="rc_hpass"}',
		1704067200000 + 1000, 1704081600000)) AS chunks;
SELECT prom_unregister('rc_pass'), prom_unregister('rc_hpass');
DROP VIEW rc_pass, rc_hpass;
DROP TABLE rc_pass_src, "rc_pass#series", "rc_pass#chunks", "rc_pass#head",
	"rc_pass#late", "rc_hpass#series", "rc_hpass#chunks", "rc_hpass#head",
	"rc_hpass#late";
DROP FUNCTION rc_answer_chunks, rc_stored_chunks, rc_same_in_range;
DELETE FROM prom_storage_catalog WHERE metric IN ('rc_pass', 'rc_hpass');

-- remote write into a metric whose head is a plain table made by hand
-- (no m#late): the sample is appended to it, bits and all
SELECT prom_remote_write(prom_write_request(jsonb_build_array(jsonb_build_object(
	'labels', jsonb_build_object('__name__', 'rc_chunks', 'job', 'hand', 'instance', 'h:1'),
	'samples', jsonb_build_array(jsonb_build_array(1704153600000, -0.5)))))) IS NOT NULL AS written;
SELECT h.t, encode(float8send(h.value), 'hex') AS bits, s.job, s.instance
FROM "rc_chunks#head" h JOIN "rc_chunks#series" s USING (series_id) WHERE s.job = 'hand';

SELECT prom_unregister('rc_made'), prom_unregister('rc_comp');
DROP VIEW rc_made, rc_comp;
DROP TABLE "rc_made#series", "rc_made#chunks", "rc_made#head", "rc_made#late",
	"rc_comp#series", "rc_comp#chunks", "rc_comp#head", "rc_comp#late";
DROP VIEW rc_chunks, rc_hchunks;
DROP TABLE rc_rows, rc_src, rc_hrows, rc_hsrc, rc_samples, rc_hsamples,
	rc_labels, rc_exact, "rc_chunks#series", "rc_chunks#chunks",
	"rc_chunks#head", "rc_hchunks#series", "rc_hchunks#chunks",
	"rc_hchunks#head";

-- A selector without a metric name reads each metric it selects letting go
-- of that metric's locks once it is read (a dozen a chunk metric: a
-- selector of thousands of metrics would fill the lock table): after a
-- read of twelve, the transaction holds no lock on their relations.
SELECT count(prom_create_metric('rc_many_' || i, '{job}')) FROM generate_series(1, 12) i;
SELECT prom_remote_write(prom_write_request((SELECT jsonb_agg(jsonb_build_object(
	'labels', jsonb_build_object('__name__', 'rc_many_' || i, 'job', 'many'),
	'samples', jsonb_build_array(jsonb_build_array(1704153600000, i))))
	FROM generate_series(1, 12) i))) IS NOT NULL AS written;
BEGIN;
SELECT jsonb_array_length(prom_read_response_json(prom_remote_read(prom_read_request(
	'{job="many"}', '2024-01-02 00:00:00+00', '2024-01-02 01:00:00+00')))
	-> 'results' -> 0 -> 'timeseries') AS series;
SELECT count(*) AS locked FROM pg_locks l JOIN pg_class c ON c.oid = l.relation
WHERE l.pid = pg_backend_pid() AND c.relname LIKE 'rc\_many\_%';
-- a query that names its metric keeps its locks, as any statement does
SELECT length(prom_remote_read(prom_read_request('rc_many_1{job="many"}',
	'2024-01-02 00:00:00+00', '2024-01-02 01:00:00+00'))) > 0 AS answered;
SELECT count(*) > 0 AS locked FROM pg_locks l JOIN pg_class c ON c.oid = l.relation
WHERE l.pid = pg_backend_pid() AND c.relname LIKE 'rc\_many\_1%';
COMMIT;
SELECT count(prom_unregister('rc_many_' || i)) FROM generate_series(1, 12) i;
DO $$
BEGIN
	FOR i IN 1..12 LOOP
		EXECUTE format('DROP VIEW %I', 'rc_many_' || i);
		EXECUTE format('DROP TABLE %I, %I, %I, %I', 'rc_many_' || i || '#series',
					   'rc_many_' || i || '#chunks', 'rc_many_' || i || '#head',
					   'rc_many_' || i || '#late');
	END LOOP;
END $$;

SELECT count(*) FROM prom_storage_catalog;
DROP ROLE regress_rc_reader;

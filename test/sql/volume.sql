-- 100,000 rows in shuffled order, with NULL and empty labels, checked
-- against the same grouping written in plain SQL: same series, same samples,
-- same order.
SET timezone = 'UTC';
SET datestyle = 'ISO';
CREATE TYPE volume_env AS ENUM ('prod', 'dev', 'test');
CREATE TABLE vol (t timestamptz, host text, dc varchar, env volume_env,
	job text, v float8);
SELECT setseed(0.42);
INSERT INTO vol
	SELECT '2024-01-01'::timestamptz + (s.n * interval '15 seconds')
			+ (random() * 1000)::int * interval '1 microsecond',
		'host-' || h.n,
		CASE h.n % 4 WHEN 0 THEN NULL WHEN 1 THEN '' ELSE 'dc' || h.n % 3 END,
		CASE WHEN h.n % 5 = 0 THEN NULL
			ELSE (enum_range(NULL::volume_env))[1 + h.n % 3] END,
		CASE WHEN h.n % 7 = 0 THEN 'batch' ELSE 'web' END,
		h.n * 1000 + s.n
	FROM generate_series(1, 1000) h(n), generate_series(1, 100) s(n)
	ORDER BY random();
SELECT prom_register('vol');

-- the same series in SQL: absent labels dropped, times truncated to ms,
-- label sets ordered as Prometheus orders them (bytewise pairs)
CREATE VIEW expected AS
	SELECT jsonb_strip_nulls(jsonb_build_object('__name__', 'vol',
			'host', nullif(host, ''), 'dc', nullif(dc, ''), 'env', env,
			'job', nullif(job, ''))) AS labels,
		array_remove(ARRAY['__name__', 'vol',
			CASE WHEN dc <> '' THEN 'dc' END, nullif(dc, ''),
			CASE WHEN env IS NOT NULL THEN 'env' END, env::text,
			CASE WHEN host <> '' THEN 'host' END, nullif(host, ''),
			CASE WHEN job <> '' THEN 'job' END, nullif(job, '')], NULL)
			COLLATE "C" AS sort_key,
		array_agg(date_trunc('milliseconds', t) ORDER BY t) AS ts,
		array_agg(v ORDER BY t) AS value
	FROM vol
	GROUP BY 1, 2;

CREATE TEMP TABLE got AS
	SELECT row_number() OVER () AS position, labels, ts, value
	FROM prom_series('vol', '2024-01-01', '2024-01-03');

SELECT count(*) AS series, sum(cardinality(ts)) AS samples FROM got;
SELECT count(*) AS expected_series FROM expected;
-- no series or sample differs
SELECT count(*) AS missing FROM
	(SELECT labels, ts, value FROM expected
	 EXCEPT SELECT labels, ts, value FROM got) d;
SELECT count(*) AS unexpected FROM
	(SELECT labels, ts, value FROM got
	 EXCEPT SELECT labels, ts, value FROM expected) d;
-- series come in label-set order
SELECT count(*) AS misplaced FROM got
	JOIN (SELECT labels, row_number() OVER (ORDER BY sort_key) AS position
		  FROM expected) e USING (labels)
	WHERE got.position <> e.position;

-- a matcher subset agrees with the same filter in SQL
SELECT count(*) AS series, sum(cardinality(ts)) AS samples
FROM prom_series('vol{dc=~"dc[12]", env!="dev", job="web"}', '2024-01-01', '2024-01-03');
SELECT count(DISTINCT host) AS series, count(*) AS samples FROM vol
WHERE dc IN ('dc1', 'dc2') AND env IS DISTINCT FROM 'dev' AND job = 'web';

-- the sample limit stops a query as soon as it is passed
SET promread.max_samples = 99999;
SELECT count(*) FROM prom_series('vol', '2024-01-01', '2024-01-03');
SET promread.max_samples = 100000;
SELECT count(*) FROM prom_series('vol', '2024-01-01', '2024-01-03');
RESET promread.max_samples;

-- sample blocks are sized by the plan's estimate of the rows: with series
-- interleaved and statistics that no longer hold, the estimate is far below
-- the rows (a time range past what ANALYZE saw: 1 row for 149,000), two
-- fifths of them (a range from the middle of what it saw, 59,750 rows for
-- 149,750: series pass their share and get blocks of an eighth of what they
-- hold) or far above them (the range it saw: 119,500 rows for 500), and the
-- answer is still the same as in SQL
CREATE TABLE stale (t timestamptz, host text, v float8)
	WITH (autovacuum_enabled = off);
INSERT INTO stale
	SELECT '2024-01-01'::timestamptz + k * interval '15 seconds', 'host-' || s, k
	FROM generate_series(0, 9) k, generate_series(1, 50) s ORDER BY k, s;
ANALYZE stale;
INSERT INTO stale
	SELECT '2024-01-01'::timestamptz + k * interval '15 seconds', 'host-' || s, k
	FROM generate_series(10, 2999) k, generate_series(1, 50) s ORDER BY k, s;
SELECT prom_register('stale');
CREATE FUNCTION stale_check(first timestamptz, last timestamptz,
	OUT series bigint, OUT same bigint) LANGUAGE sql AS $$
	SELECT count(*), count(*) FILTER (WHERE g.ts = e.ts AND g.value = e.value)
	FROM prom_series('stale', first, last) g
		JOIN (SELECT host, array_agg(t ORDER BY t) AS ts,
				array_agg(v ORDER BY t) AS value
			  FROM stale WHERE t BETWEEN first AND last GROUP BY host) e
		ON e.host = g.labels->>'host' $$;
SELECT * FROM stale_check('2024-01-01 00:05', '2024-01-03');
SELECT * FROM stale_check('2024-01-01 00:01:15', '2024-01-03');
SELECT * FROM stale_check('2024-01-01', '2024-01-01 00:02:15');

-- series that interleave, of a few samples each, whose second blocks
-- continue their head (test/fixtures/shares.sql tells which ways its rows
-- take; test/scripts/phases-check counts that each is taken): with the
-- plan's estimate right, low, and with rows of two series that come back,
-- every answer is the same as in SQL, and the XOR chunks of
-- prom_remote_read decode to its SAMPLES answer
\set abs_srcdir `pwd` '/test'
\set shares_rows :abs_srcdir '/fixtures/shares.sql'
\i :shares_rows
CREATE FUNCTION shares_check(OUT series bigint, OUT samples bigint,
	OUT same bigint, OUT chunks_same boolean) LANGUAGE sql AS $$
	SELECT count(*), sum(cardinality(g.ts)),
		count(*) FILTER (WHERE g.ts = e.ts AND g.value = e.value),
		(SELECT prom_read_response_json(prom_remote_read(prom_read_request(
				'shares', '2024-01-01', '2024-03-01', '{streamed_xor_chunks}')))
			= prom_read_response_json(prom_remote_read(prom_read_request(
				'shares', '2024-01-01', '2024-03-01'))))
	FROM prom_series('shares', '2024-01-01', '2024-03-01') g
		JOIN (SELECT host, array_agg(t ORDER BY t) AS ts,
				array_agg(v ORDER BY t) AS value
			  FROM shares GROUP BY host) e
		ON e.host = g.labels->>'host' $$;
SELECT shares_estimate(400);
SELECT * FROM shares_check();
SELECT shares_estimate(320);
SELECT * FROM shares_check();
CALL shares_come_back();
SELECT shares_estimate(400);
SELECT * FROM shares_check();

-- a metric of host series registered under its relation's name against its
-- rows grouped in SQL: series, samples, and series of the same times and
-- values
CREATE FUNCTION host_series_check(relation text, OUT series bigint,
	OUT samples bigint, OUT same bigint) LANGUAGE plpgsql AS $$
BEGIN
	EXECUTE format($q$
		SELECT count(*), sum(cardinality(g.ts)),
			count(*) FILTER (WHERE (g.ts, g.value) = (e.ts, e.value))
		FROM prom_series(%L, '2024-01-01', '2024-01-05') g
			JOIN (SELECT host, array_agg(t ORDER BY t) AS ts,
					array_agg(v ORDER BY t) AS value
				  FROM %I GROUP BY host) e
			ON e.host = g.labels->>'host' $q$, relation, relation)
		INTO series, samples, same;
END $$;

-- series whose rows come together, of 1 to 300 samples each in no order of
-- length, 150,000 rows: a block grows in place while it is the arena's
-- newest allocation, and a new block follows where a chunk ends; rows of
-- two series come back later (one among 100 new series, one at the end,
-- with times before its first); the answer is the same as in SQL
CREATE TABLE runs (t timestamptz, host text, v float8);
INSERT INTO runs
	SELECT '2024-01-01'::timestamptz + k * interval '15 seconds', 'host-' || h,
		h * 1000 + k
	FROM (SELECT h, 1 + (h * 7919) % 300 AS n FROM generate_series(1, 1000) h) s,
		generate_series(1, s.n) k
	ORDER BY h, k;
INSERT INTO runs
	SELECT '2024-01-01'::timestamptz + k * interval '15 seconds', 'host-5', -k
	FROM generate_series(301, 310) k;
INSERT INTO runs
	SELECT '2024-01-01'::timestamptz + k * interval '15 seconds', 'host-' || h,
		h * 1000 + k
	FROM generate_series(2001, 2100) h, generate_series(1, 3) k ORDER BY h, k;
INSERT INTO runs
	SELECT '2024-01-01'::timestamptz + k * interval '1 second', 'host-7', -k
	FROM generate_series(1, 5) k;
SELECT prom_register('runs');
SELECT * FROM host_series_check('runs');

-- series whose rows come in runs, a run for each partition of a table
-- (test/fixtures/parts.sql): series made after runs of rows without a
-- lookup, again in a later partition, merged by the sort, their samples
-- sorted; runs that look their series up after such series; the aggregate
-- over the same rows: every answer is the same as in SQL
\set parts_rows :abs_srcdir '/fixtures/parts.sql'
\i :parts_rows
SELECT * FROM host_series_check('parts');
SELECT * FROM host_series_check('parts_backwards');
SELECT prom_read_response_json(prom_read_response_agg(t, v,
		'__name__', 'parts', 'host', host, 'dc', dc))
	= prom_read_response_json(prom_remote_read(prom_read_request(
		'parts', '2024-01-01', '2024-01-04'))) AS agg_same
FROM parts;

-- runs of 10 rows, then each host's rows of an hour in no order (held and
-- looked up sixteen at a time, after the series made after runs are put in
-- the index), then runs again, the hosts in reverse order and 30 new ones:
-- the answer is the same as in SQL
SELECT setseed(0.7);
CREATE TABLE mixed (t timestamptz, host text, v float8);
INSERT INTO mixed
	SELECT '2024-01-01'::timestamptz + k * interval '1 minute', 'h' || h,
		h * 1000 + k
	FROM generate_series(1, 300) h, generate_series(1, 10) k ORDER BY h, k;
INSERT INTO mixed
	SELECT '2024-01-01 01:00'::timestamptz + k * interval '1 minute', 'h' || h,
		-(h * 1000 + k)
	FROM generate_series(1, 300) h, generate_series(1, 20) k ORDER BY random();
INSERT INTO mixed
	SELECT '2024-01-01 02:00'::timestamptz + k * interval '1 minute', 'h' || h,
		h * 1000 + k + 0.5
	FROM generate_series(1, 330) h, generate_series(1, 10) k ORDER BY h DESC, k;
SELECT prom_register('mixed');
SELECT * FROM host_series_check('mixed');

-- Rows of the series of the row before are compared by image: the bytes of
-- their labels as they lie in the row.  Rows of a view over two tables of
-- different shapes, where the same bytes after host are dc in one and
-- another column in the other; a column that changes on every row between
-- two labels (every 25 rows, then on every row, until images are given
-- up); NULL and empty labels in one series; a label too long for a one-byte
-- header.
CREATE TABLE image_a (t timestamptz, host text, dc text, v float8);
CREATE TABLE image_b (t timestamptz, host text, other text, dc text, v float8);
INSERT INTO image_a
	SELECT '2024-01-01'::timestamptz + k * interval '15 seconds', 'a', 'y', k
	FROM generate_series(1, 5) k;
INSERT INTO image_b
	SELECT '2024-01-01'::timestamptz + k * interval '15 seconds', 'a', 'y', 'z', k
	FROM generate_series(6, 10) k;
CREATE VIEW image_ab AS
	SELECT t, host, dc, v FROM image_a UNION ALL SELECT t, host, dc, v FROM image_b;
SELECT prom_register('image_ab');
SELECT labels, value FROM prom_series('image_ab', '2024-01-01', '2024-01-02');

CREATE TABLE image_gap_rows (t timestamptz, host text, seq text, dc text,
	job text, v float8);
INSERT INTO image_gap_rows
	SELECT '2024-01-01'::timestamptz + k * interval '15 seconds', 'host-' || h,
		CASE WHEN h = 3 THEN k ELSE k / 25 END, CASE WHEN k % 100 < 50 THEN '' END,
		CASE WHEN h = 2 THEN repeat('j', 200) ELSE 'web' END, h * 1000 + k
	FROM generate_series(1, 3) h, generate_series(1, 200) k ORDER BY h, k;
CREATE VIEW image_gap AS SELECT t, host, dc, job, v FROM image_gap_rows;
SELECT prom_register('image_gap');
SELECT labels->>'host' AS host, length(labels->>'job') AS job_length,
	labels ? 'dc' AS has_dc, cardinality(value) AS samples,
	value[1] AS first, value[200] AS last
FROM prom_series('image_gap', '2024-01-01', '2024-01-02');

-- NULL labels in an image: a series whose last label is NULL, then one
-- where it is present, the labels before it the same bytes (the image must
-- know which labels are NULL); then the first again, the bytes of the last
-- label (in a column that is not a label) where it would be; then one whose
-- middle label is NULL
CREATE TABLE image_nulls (t timestamptz, host text, dc text, job text,
	note text, v float8);
INSERT INTO image_nulls
	SELECT '2024-01-01'::timestamptz + k * interval '15 seconds', 'a',
		CASE WHEN k <= 9 THEN 'x' END,
		CASE WHEN k BETWEEN 4 AND 6 OR k > 9 THEN 'y' END, 'y', k
	FROM generate_series(1, 12) k ORDER BY k;
SELECT prom_register('image_nulls', label_columns => '{host,dc,job}');
SELECT labels, value FROM prom_series('image_nulls', '2024-01-01', '2024-01-02');

-- an image's enum and integer labels: series that follow each other and
-- differ in one of them only, the last one NULL where the one before has 0
CREATE TABLE image_scalars (t timestamptz, env volume_env, n int, v float8);
INSERT INTO image_scalars
	SELECT '2024-01-01'::timestamptz + k * interval '15 seconds',
		(enum_range(NULL::volume_env))[1 + s / 2],
		CASE WHEN s < 3 THEN s % 2 END, s * 10 + k
	FROM generate_series(0, 3) s, generate_series(1, 3) k ORDER BY s, k;
SELECT prom_register('image_scalars', label_columns => '{env,n}');
SELECT labels, value FROM prom_series('image_scalars', '2024-01-01', '2024-01-02');

-- an image over text, enum and integer labels in one row, the text ones not
-- side by side (an enum between them): series that differ in the enum only,
-- in the integer only, in the second text only, and by a NULL second text
CREATE TABLE image_mixed (t timestamptz, host text, env volume_env, dc text,
	n int, v float8);
INSERT INTO image_mixed
	SELECT '2024-01-01'::timestamptz + k * interval '15 seconds', 'a',
		(enum_range(NULL::volume_env))[1 + (s = 1)::int],
		CASE WHEN s = 4 THEN NULL WHEN s = 3 THEN 'xy' ELSE 'xx' END,
		CASE WHEN s = 2 THEN 8 ELSE 7 END, s * 10 + k
	FROM generate_series(0, 4) s, generate_series(1, 3) k ORDER BY s, k;
SELECT prom_register('image_mixed');
SELECT labels, value FROM prom_series('image_mixed', '2024-01-01', '2024-01-02');

-- windows of more than four columns: series that differ only in the middle
-- of a window of six (integer labels between the first two columns and the
-- last two, after the text ones, so that only their Datums tell them
-- apart); and a window of more columns than an image holds
-- (ROW_IMAGE_COLUMNS, 32), whose rows are compared key by key: series that
-- differ only in the 17th or only in the last of 40 labels
CREATE TABLE image_six (t timestamptz, a text, b text, c int, d int, e int,
	f int, v float8);
INSERT INTO image_six
	SELECT '2024-01-01'::timestamptz + k * interval '15 seconds', 'a', 'b',
		(s = 1)::int, (s = 2)::int, 5, 6, s * 10 + k
	FROM generate_series(0, 2) s, generate_series(1, 3) k ORDER BY s, k;
SELECT prom_register('image_six', label_columns => '{a,b,c,d,e,f}');
SELECT labels, value FROM prom_series('image_six', '2024-01-01', '2024-01-02');
DO $$
BEGIN
	EXECUTE 'CREATE TABLE image_wide (t timestamptz, ' ||
		(SELECT string_agg(format('l%s text', lpad(i::text, 2, '0')), ', ')
		 FROM generate_series(1, 40) i) || ', v float8)';
	EXECUTE 'INSERT INTO image_wide SELECT ''2024-01-01''::timestamptz + '
		'k * interval ''15 seconds'', ' ||
		(SELECT string_agg(CASE i
				WHEN 17 THEN 'CASE WHEN s = 2 THEN ''y'' ELSE ''x'' END'
				WHEN 40 THEN 'CASE WHEN s = 1 THEN ''y'' ELSE ''x'' END'
				ELSE '''x''' END, ', ' ORDER BY i)
		 FROM generate_series(1, 40) i) ||
		', s * 10 + k FROM generate_series(0, 2) s, generate_series(1, 3) k '
		'ORDER BY s, k';
END $$;
SELECT prom_register('image_wide');
SELECT (SELECT count(*) FROM jsonb_object_keys(labels)) AS labels,
	labels->>'l17' AS l17, labels->>'l40' AS l40, value
FROM prom_series('image_wide', '2024-01-01', '2024-01-02');

-- the aggregate with one label: its image's window reaches past the label
SELECT prom_read_response_json(prom_read_response_agg(t, v, 'host', host
	ORDER BY t))
FROM (SELECT '2024-01-01'::timestamptz + k * interval '15 seconds' AS t,
		CASE WHEN k <= 3 THEN 'a' WHEN k <= 5 THEN 'b' END AS host, k AS v
	  FROM generate_series(1, 7) k) r;

DROP FUNCTION stale_check, shares_estimate, shares_check;
DROP PROCEDURE shares_come_back;
DROP VIEW expected;
DROP VIEW image_ab, image_gap;
DROP TABLE vol, stale, shares, runs, image_a, image_b, image_gap_rows,
	image_scalars, image_nulls, image_mixed;
DROP TYPE volume_env;

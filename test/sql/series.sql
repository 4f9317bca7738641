-- Rows to series: grouping, label sets, ordering, time range.
SET timezone = 'UTC';
SET datestyle = 'ISO';
CREATE TYPE series_env AS ENUM ('prod', 'dev', 'staging');

CREATE TABLE m (t timestamptz, host text, dc varchar, env series_env, v float8);
SELECT prom_register('m');

-- adjacent rows of one series, then interleaved rows of two
INSERT INTO m VALUES
	('2024-01-01 00:00:01', 'a', 'x', 'prod', 1),
	('2024-01-01 00:00:02', 'a', 'x', 'prod', 2),
	('2024-01-01 00:00:03', 'a', 'x', 'prod', 3),
	('2024-01-01 00:00:01', 'b', 'x', 'dev', 10),
	('2024-01-01 00:00:01', 'c', 'x', 'dev', 20),
	('2024-01-01 00:00:02', 'b', 'x', 'dev', 11),
	('2024-01-01 00:00:02', 'c', 'x', 'dev', 21),
	('2024-01-01 00:00:03', 'b', 'x', 'dev', 12),
	('2024-01-01 00:00:03', 'c', 'x', 'dev', 22);
SELECT labels, ts, value FROM prom_series('m', '2024-01-01', '2024-01-02');

-- NULL and '' are the same absent label: one series, no "dc" label
TRUNCATE m;
INSERT INTO m VALUES
	('2024-01-01 00:00:01', 'a', NULL, 'prod', 1),
	('2024-01-01 00:00:02', 'a', '', 'prod', 2),
	('2024-01-01 00:00:03', 'a', NULL, 'prod', 3);
SELECT labels, value FROM prom_series('m', '2024-01-01', '2024-01-02');

-- NULLs shift labels: {host="a"} and {dc="a"} and {env="dev"} never merge,
-- and a label set that is a prefix of another sorts first
TRUNCATE m;
INSERT INTO m VALUES
	('2024-01-01 00:00:01', 'a', NULL, NULL, 1),
	('2024-01-01 00:00:01', NULL, 'a', NULL, 2),
	('2024-01-01 00:00:01', NULL, NULL, 'dev', 3),
	('2024-01-01 00:00:01', NULL, NULL, NULL, 4),
	('2024-01-01 00:00:01', 'a', 'a', NULL, 5),
	('2024-01-01 00:00:01', '', '', NULL, 6);
SELECT labels, value FROM prom_series('m', '2024-01-01', '2024-01-02');

-- label names sort bytewise too: "AZ" and "Zone" come before "__name__",
-- and a missing label moves the next one up
CREATE TABLE upper_names ("AZ" text, "Zone" text, host text, t timestamptz, v float8);
INSERT INTO upper_names VALUES
	('b', NULL, 'h1', '2024-01-01 00:00:01', 1),
	('a', 'z', 'h2', '2024-01-01 00:00:01', 2),
	(NULL, 'y', 'h3', '2024-01-01 00:00:01', 3),
	('a', NULL, NULL, '2024-01-01 00:00:01', 4),
	(NULL, NULL, 'h0', '2024-01-01 00:00:01', 5);
SELECT prom_register('upper_names');
SELECT value, labels FROM prom_series('upper_names', '2024-01-01', '2024-01-02');
DROP TABLE upper_names;

-- label values sort bytewise, never by locale; names too
TRUNCATE m;
INSERT INTO m VALUES
	('2024-01-01 00:00:01', 'b', NULL, NULL, 1),
	('2024-01-01 00:00:01', 'B', NULL, NULL, 2),
	('2024-01-01 00:00:01', 'a', NULL, NULL, 3),
	('2024-01-01 00:00:01', 'é', NULL, NULL, 4),
	('2024-01-01 00:00:01', 'Z', NULL, NULL, 5),
	('2024-01-01 00:00:01', 'aa', NULL, NULL, 6),
	('2024-01-01 00:00:01', '_', NULL, NULL, 7);
SELECT labels->>'host' AS host, value FROM prom_series('m', '2024-01-01', '2024-01-02');

-- out-of-order rows are sorted; of rows sharing a millisecond the one read
-- last wins, and sub-millisecond digits are truncated
TRUNCATE m;
INSERT INTO m VALUES
	('2024-01-01 00:00:03', 'a', NULL, NULL, 3),
	('2024-01-01 00:00:01', 'a', NULL, NULL, 1),
	('2024-01-01 00:00:02.0001', 'a', NULL, NULL, 2),
	('2024-01-01 00:00:02.0009', 'a', NULL, NULL, 2.5),
	('2024-01-01 00:00:00', 'a', NULL, NULL, 0);
SELECT ts, value FROM prom_series('m', '2024-01-01', '2024-01-02');

-- a block of samples reaches 2^31 ms (24.8 days) either side of its first
-- sample's time: samples at and past that reach, in order and out of order
-- (sorting packs them into blocks anew, here into more than they were in),
-- come back exact and in order
TRUNCATE m;
INSERT INTO m SELECT 'epoch'::timestamptz + ms * interval '1 ms', 'c', NULL, NULL, v
	FROM (VALUES (0, 1), (2147483647, 2), (-2147483648, 3), (1, 4)) s(ms, v);
INSERT INTO m SELECT 'epoch'::timestamptz + ms * interval '1 ms', 'a', NULL, NULL, v
	FROM (VALUES (0, 1), (2147483647, 2), (-2147483648, 3), (2147483648, 4),
		(-2147483649, 5), (4294967295, 6), (1, 7)) s(ms, v);
INSERT INTO m SELECT 'epoch'::timestamptz + ms * interval '1 ms', 'b', NULL, NULL, v
	FROM (VALUES (0, 1), (2147483647, 2), (2147483648, 3), (4294967295, 4),
		(4294967296, 5)) s(ms, v);
SELECT labels->>'host' AS host, ts, value
FROM prom_series('m', '-infinity', 'infinity');
-- series that interleave, each cycling through three times of year
TRUNCATE m;
INSERT INTO m
	SELECT (ARRAY['1970-01-01', '2024-01-01', '2024-01-25 20:31:23.647'])[1 + i % 3]::timestamptz
		+ i * interval '1 s', h, NULL, NULL, i
	FROM generate_series(1, 300) i, unnest(ARRAY['a', 'b']) h
	ORDER BY i, h;
SELECT labels->>'host' AS host, cardinality(ts) AS samples,
	ts = (SELECT array_agg(t ORDER BY t) FROM m WHERE host = s.labels->>'host') AS times,
	value = (SELECT array_agg(v ORDER BY t) FROM m WHERE host = s.labels->>'host') AS values
FROM prom_series('m', '-infinity', 'infinity') s;

-- the time range holds both ends at millisecond precision
TRUNCATE m;
INSERT INTO m VALUES
	('2024-01-01 00:00:00.9999', 'a', NULL, NULL, 0),
	('2024-01-01 00:00:01', 'a', NULL, NULL, 1),
	('2024-01-01 00:00:01.0005', 'a', NULL, NULL, 1.5),
	('2024-01-01 00:00:01.9999', 'a', NULL, NULL, 2),
	('2024-01-01 00:00:02.0001', 'a', NULL, NULL, 3),
	('2024-01-01 00:00:02.001', 'a', NULL, NULL, 4);
SELECT ts, value FROM prom_series('m', '2024-01-01 00:00:01', '2024-01-01 00:00:02');
SELECT ts, value FROM prom_series('m', '2024-01-01 00:00:01.0009', '2024-01-01 00:00:01.0009');
SELECT ts, value FROM prom_series('m', '2024-01-01 00:00:02.001', 'infinity');
SELECT ts, value FROM prom_series('m', '-infinity', '2024-01-01 00:00:00.999');
SELECT count(*) FROM prom_series('m', '2024-01-01 00:00:03', '2024-01-01 00:00:04');
SELECT * FROM prom_series('m', '2024-01-01 00:00:02', '2024-01-01 00:00:01');

-- NULL times and values give no sample; a series without samples is absent
TRUNCATE m;
INSERT INTO m VALUES
	(NULL, 'a', NULL, NULL, 1),
	('2024-01-01 00:00:01', 'b', NULL, NULL, NULL),
	('2024-01-01 00:00:01', 'c', NULL, NULL, 'NaN'),
	('2024-01-01 00:00:02', 'c', NULL, NULL, '-Infinity'),
	('infinity', 'd', NULL, NULL, 1);
SELECT labels, value FROM prom_series('m', '-infinity', 'infinity');

-- enum, varchar and an explicit integer label (printed by its type)
CREATE TABLE typed (t timestamptz, env series_env, code varchar(8), port int, v float8);
SELECT prom_register('typed', label_columns => '{env,code,port}');
INSERT INTO typed VALUES
	('2024-01-01 00:00:01', 'staging', 'x1', 8080, 1),
	('2024-01-01 00:00:01', 'prod', 'x1', 443, 2),
	('2024-01-01 00:00:02', 'staging', 'x1', 8080, 3),
	('2024-01-01 00:00:02', 'prod', 'x1', NULL, 4),
	('2024-01-01 00:00:03', 'prod', 'x1', 443, 5);
SELECT labels, value FROM prom_series('typed', '2024-01-01', '2024-01-02');
-- a NULL integer label and a zero (whose Datum a NULL's equals) are
-- different series, in rows of one series after another and interleaved
TRUNCATE typed;
INSERT INTO typed VALUES
	('2024-01-01 00:00:01', 'prod', 'x1', NULL, 1),
	('2024-01-01 00:00:02', 'prod', 'x1', NULL, 2),
	('2024-01-01 00:00:01', 'prod', 'x1', 0, 3),
	('2024-01-01 00:00:02', 'prod', 'x1', 0, 4),
	('2024-01-01 00:00:03', 'prod', 'x1', NULL, 5),
	('2024-01-01 00:00:03', 'prod', 'x1', 0, 6);
SELECT labels, value FROM prom_series('typed', '2024-01-01', '2024-01-02');

-- timestamp without time zone is read as UTC; bigint milliseconds as they are
CREATE TABLE local_ts (t timestamp, host text, v float8);
INSERT INTO local_ts VALUES ('2024-01-01 00:00:01.5', 'a', 1);
SELECT prom_register('local_ts');
SET timezone = 'America/New_York';
SELECT ts, value FROM prom_series('local_ts', '2024-01-01 00:00:01.5+00', '2024-01-01 00:00:01.5+00');
SET timezone = 'UTC';
CREATE TABLE epoch_ms (ms bigint, host text, v real);
INSERT INTO epoch_ms VALUES (1704067201500, 'a', 0.5), (1704067201499, 'a', 0.25),
	(NULL, 'a', 1);
SELECT prom_register('epoch_ms', time_column => 'ms', value_column => 'v');
SELECT ts, value FROM prom_series('epoch_ms', '2024-01-01 00:00:01.5', '2024-01-01 00:00:01.5');
SELECT ts, value FROM prom_series('epoch_ms', '2024-01-01', '2024-01-02');

-- integer and numeric values become double precision
CREATE TABLE int_values (t timestamptz, v bigint);
INSERT INTO int_values VALUES ('2024-01-01 00:00:01', 9007199254740993);
SELECT prom_register('int_values', value_column => 'v');
SELECT labels, value FROM prom_series('int_values', '2024-01-01', '2024-01-02');

-- long label values stored compressed or out of line are read correctly
CREATE TABLE toasted (t timestamptz, host text, v float8);
ALTER TABLE toasted ALTER host SET STORAGE EXTERNAL;
INSERT INTO toasted
	SELECT '2024-01-01'::timestamptz + i * interval '1 second',
		repeat(chr(97 + i % 2), 5000), i
	FROM generate_series(1, 6) i;
SELECT prom_register('toasted');
SELECT length(labels->>'host'), left(labels->>'host', 3), value
FROM prom_series('toasted', '2024-01-01', '2024-01-02');
-- compressed in line
CREATE TABLE compressed (t timestamptz, host text, v float8);
INSERT INTO compressed
	SELECT '2024-01-01'::timestamptz + i * interval '1 second',
		repeat(chr(97 + i % 2), 100000), i
	FROM generate_series(1, 6) i;
SELECT pg_column_compression(host) IS NOT NULL AS compressed
FROM compressed LIMIT 1;
SELECT prom_register('compressed');
SELECT length(labels->>'host'), left(labels->>'host', 3), value
FROM prom_series('compressed', '2024-01-01', '2024-01-02');

-- label values that differ from the row before in one byte, at every
-- position of every length up to 20: each is a series of its own
CREATE TABLE one_byte (t timestamptz, host text, v float8);
INSERT INTO one_byte
	SELECT '2024-01-01'::timestamptz + (len * 100 + pos) * interval '1 second',
		CASE WHEN side = 0 THEN repeat('a', len)
			ELSE overlay(repeat('a', len) PLACING 'b' FROM pos FOR 1) END,
		side
	FROM generate_series(1, 20) len, generate_series(1, len) pos,
		generate_series(0, 1) side
	ORDER BY len, pos, side;
SELECT prom_register('one_byte');
SELECT count(*) AS series, sum(cardinality(ts)) AS samples,
	count(*) FILTER (WHERE labels->>'host' LIKE '%b%') AS changed
FROM prom_series('one_byte', '2024-01-01', '2024-01-02');
-- and they come in bytewise order, those sharing their first 12 or 16 bytes
-- (what the sort compares at once) among them
SELECT count(*) AS series,
	count(*) FILTER (WHERE got.position <> e.position) AS misplaced FROM
	(SELECT labels->>'host' AS host, row_number() OVER () AS position
	 FROM prom_series('one_byte', '2024-01-01', '2024-01-02')) got
	JOIN (SELECT host, row_number() OVER (ORDER BY host COLLATE "C") AS position
		  FROM (SELECT DISTINCT host FROM one_byte) d) e USING (host);

-- a label with a value of its own in every series (a host) orders the
-- series that agree on the labels before it; the labels after it, NULL in
-- some series, never decide
CREATE TABLE unique_host (t timestamptz, dc text, host text, zone text, v float8);
INSERT INTO unique_host
	SELECT '2024-01-01'::timestamptz + i * interval '1 second',
		'dc' || (i * 7 % 3), 'h' || lpad((i * 37 % 101)::text, 3, '0'),
		CASE WHEN i % 5 = 0 THEN NULL ELSE 'z' || (100 - i) END, i
	FROM generate_series(1, 101) i;
SELECT prom_register('unique_host');
SELECT count(*) AS series,
	count(*) FILTER (WHERE got.position <> e.position) AS misplaced FROM
	(SELECT labels->>'dc' AS dc, labels->>'host' AS host,
			row_number() OVER () AS position
	 FROM prom_series('unique_host', '2024-01-01', '2024-01-02')) got
	JOIN (SELECT dc, host, row_number() OVER (ORDER BY dc COLLATE "C",
											  host COLLATE "C") AS position
		  FROM unique_host) e USING (dc, host);

-- every way of reading a label in one table, the kinds' columns mixed:
-- uuid and numeric (their bytes), name, enum, text and int (the Datum);
-- 1.5 and 1.50 are different bytes that print differently
CREATE TABLE kinds (t timestamptz, id uuid, rack name, env series_env,
	amount numeric, host text, port int, v float8);
SELECT prom_register('kinds', label_columns => '{id,rack,env,amount,host,port}');
INSERT INTO kinds VALUES
	('2024-01-01 00:00:01', '00000000-0000-0000-0000-000000000001', 'r1', 'prod', 1.50, 'a', 80, 1),
	('2024-01-01 00:00:02', '00000000-0000-0000-0000-000000000001', 'r1', 'prod', 1.50, 'a', 80, 2),
	('2024-01-01 00:00:01', '00000000-0000-0000-0000-000000000001', 'r1', 'prod', 1.5, 'a', 80, 3),
	('2024-01-01 00:00:01', '00000000-0000-0000-0000-000000000001', 'r2', 'prod', 1.50, 'a', 80, 4),
	('2024-01-01 00:00:02', '00000000-0000-0000-0000-000000000002', NULL, NULL, NULL, NULL, NULL, 5),
	('2024-01-01 00:00:03', '00000000-0000-0000-0000-000000000001', 'r1', 'prod', 1.50, 'a', 80, 6),
	('2024-01-01 00:00:03', '00000000-0000-0000-0000-000000000001', 'r1', 'dev', 1.50, 'a', 80, 7),
	('2024-01-01 00:00:03', '00000000-0000-0000-0000-000000000001', 'r1', 'prod', 1.50, 'b', 80, 8),
	('2024-01-01 00:00:03', '00000000-0000-0000-0000-000000000001', 'r1', 'prod', 1.50, 'a', 81, 9),
	('2024-01-01 00:00:04', '00000000-0000-0000-0000-000000000002', '', NULL, NULL, '', NULL, 10);
SELECT labels, ts, value FROM prom_series('kinds', '2024-01-01', '2024-01-02');

-- enum labels are cached by value: in an array when the type's values are
-- close together (those of one CREATE TYPE), in a hash table when values
-- added later are far from the others (other objects took OIDs between)
CREATE TYPE sparse_env AS ENUM ('one', 'two');
DO $$ BEGIN FOR i IN 1..10 LOOP
	EXECUTE format('CREATE TABLE sparse_pad%s ()', i);
	EXECUTE format('DROP TABLE sparse_pad%s', i);
END LOOP; END $$;
ALTER TYPE sparse_env ADD VALUE 'zero' BEFORE 'one';
ALTER TYPE sparse_env ADD VALUE 'three';
CREATE TABLE sparse (t timestamptz, env sparse_env, v float8);
INSERT INTO sparse SELECT '2024-01-01 00:00:01', e, 1
	FROM unnest(enum_range(NULL::sparse_env)) e;
INSERT INTO kinds (t, env, v) VALUES ('2024-01-01 00:00:05', 'dev', 11);
SELECT prom_register('sparse');
SELECT labels FROM prom_series('sparse', '2024-01-01', '2024-01-02');
SELECT labels FROM prom_series('kinds{env="dev"}', '2024-01-01', '2024-01-02');

-- an enum value '' and a NULL are different keys of one label set (the
-- label absent): one series, its samples in time order; the NULL of an
-- integer and its zero stay apart (above), as do '' and 'prod'
CREATE TYPE blank_env AS ENUM ('', 'prod');
CREATE TABLE blank (t timestamptz, env blank_env, v float8);
INSERT INTO blank VALUES
	('2024-01-01 00:00:03', '', 3),
	('2024-01-01 00:00:01', NULL, 1),
	('2024-01-01 00:00:02', 'prod', 2),
	('2024-01-01 00:00:04', NULL, 4),
	('2024-01-01 00:00:02', '', 2);
SELECT prom_register('blank');
SELECT labels, ts, value FROM prom_series('blank', '2024-01-01', '2024-01-02');

DROP TABLE m, typed, local_ts, epoch_ms, int_values, toasted, compressed,
	one_byte, unique_host, kinds, sparse, blank;
DROP TYPE series_env, sparse_env, blank_env;

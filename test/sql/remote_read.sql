-- The remote-read protocol: requests built by prom_read_request, answered
-- by prom_remote_read, decoded by prom_read_response_json.
SET timezone = 'UTC';
SET datestyle = 'ISO';
\set abs_srcdir `pwd` '/test'
\set rr_rows :abs_srcdir '/fixtures/rr.sql'
\i :rr_rows
\set wire_helpers :abs_srcdir '/fixtures/wire.sql'
\i :wire_helpers

-- answer selectors over a time range, as JSON
CREATE FUNCTION rr_read(selectors text[], start_time timestamptz = '2024-01-01',
		end_time timestamptz = '2024-01-02')
	RETURNS jsonb LANGUAGE sql AS $$
		SELECT prom_read_response_json(prom_remote_read(
			prom_read_request(selectors, start_time, end_time)))
	$$;

-- the request as Prometheus would send it
SELECT prom_read_request_json(prom_read_request('rr{host=~"a|b", dc!=""}',
	'2024-01-01 00:00:00.0015', '2024-01-01 00:00:01'));

-- every query answered in order, empty results included
SELECT jsonb_pretty(rr_read(ARRAY['rr', 'nope', 'rr{host="a"}', '{__name__=~"rr.*", host="a"}']));

-- the time range at millisecond precision
SELECT rr_read(ARRAY['rr{host="b"}'], '2024-01-01 00:00:02', '2024-01-01 00:00:02');
SELECT rr_read(ARRAY['rr{host="a"}'], '2024-01-01 00:00:00.5', '2024-01-01 00:00:01');

-- matchers of every type, on present and missing labels
SELECT rr_read(ARRAY['rr{dc=""}', 'rr{dc!=""}', 'rr{env=~"pro.*"}',
	'rr{env!~"pro.*"}', 'rr{zone=""}', 'rr{zone="z"}', 'rr{host=~"A", host=~"(?i)A"}']);

-- a query whose matchers all match "" selects every series that they
-- match, of every metric, over the data (as Prometheus's storage does): here
-- every series without a zone label, then every series without dc
SELECT jsonb_pretty(prom_read_response_json(prom_remote_read(snappy_literal(
	wire_query(1704067200000, 1704067202000, wire_matcher(0, 'zone', ''))))));
SELECT prom_read_response_json(prom_remote_read(snappy_literal(
	wire_query(1704067200000, 1704067202000, wire_matcher(0, 'dc', ''),
		wire_matcher(2, 'host', '.*')))));

-- an empty request gets an empty response
SELECT prom_read_response_json(prom_remote_read(prom_read_request('{}'::text[], '2024-01-01', '2024-01-02')));

-- special values (test/fixtures/rr.sql)
SELECT rr_read(ARRAY['rr_values']);

-- the aggregate: rows with a NULL or infinite time, or a NULL value, carry
-- no sample, and a series of no samples is not in the answer
SELECT prom_read_response_json(prom_read_response_agg(t, v, '__name__', 'agg_edges',
		'host', host))
FROM (VALUES ('2024-01-01 00:00:01'::timestamptz, 1::float8, 'a'),
			 (NULL, 2, 'a'), ('infinity', 3, 'a'), ('-infinity', 4, 'b'),
			 ('2024-01-01 00:00:02', NULL, 'b'), ('2024-01-01 00:00:03', 5, 'c'),
			 ('2024-01-01 00:00:04', 'NaN', NULL)) AS v(t, v, host);

-- the aggregate gives the same bytes as prom_remote_read
SELECT prom_remote_read(prom_read_request('rr', '2024-01-01', '2024-01-02'))
	= (SELECT prom_read_response_agg(t, v, '__name__', 'rr', 'host', host,
			'dc', dc, 'env', env)
	   FROM rr WHERE t >= '2024-01-01' AND t < '2024-01-02 00:00:00.001') AS same;
SELECT prom_remote_read(prom_read_request('rr_values', '2024-01-01', '2024-01-02'))
	= (SELECT prom_read_response_agg(t, v, '__name__', 'rr_values')
	   FROM rr_values) AS same;
-- the chunked aggregate gives the bytes of a STREAMED_XOR_CHUNKS read; its
-- time may be a timestamp (read as UTC, whatever the session's time zone)
-- or a bigint of ms; no rows, no frames
SELECT prom_remote_read(prom_read_request('rr', '2024-01-01', '2024-01-02',
		'{streamed_xor_chunks}'))
	= (SELECT prom_chunked_response_agg(t, v, '__name__', 'rr', 'host', host,
			'dc', dc, 'env', env)
	   FROM rr WHERE t >= '2024-01-01' AND t < '2024-01-02 00:00:00.001') AS same;
SET timezone = 'America/New_York';
SELECT prom_chunked_response_agg(t, v, 'host', host)
		= prom_chunked_response_agg(t AT TIME ZONE 'UTC', v, 'host', host) AS same_timestamp,
	prom_chunked_response_agg(t, v, 'host', host)
		= prom_chunked_response_agg(floor(extract(epoch FROM t) * 1000)::bigint, v,
			'host', host) AS same_ms
FROM rr WHERE t > '-infinity' AND t < 'infinity';
SET timezone = 'UTC';
SELECT length(prom_chunked_response_agg(t, v, 'host', host)) AS empty FROM rr WHERE false;
-- label names may vary by row; values of any type print by their type
SELECT prom_read_response_json(prom_read_response_agg(t, v,
	'__name__', 'mixed', CASE WHEN host = 'a' THEN 'host' ELSE 'node' END, host,
	'port', 8000 + length(host), 'up', v > 2))
FROM rr WHERE host IS NOT NULL;
-- a series names its layout (a list of label names here) by a 16-bit number:
-- each of 300 series has its own layout's name (the value i of label "li"),
-- 65535 layouts are grouped, and one more is refused
SELECT count(*) AS series,
	count(*) FILTER (WHERE s->'labels'->>('l' || (s->'samples'->0->>1)) = 'x') AS right
FROM json_array_elements((SELECT prom_read_response_json(
		prom_read_response_agg('2024-01-01', i, 'l' || i, 'x'))
	FROM generate_series(1, 300) i)::json->'results'->0->'timeseries') s;
SELECT prom_read_response_agg('2024-01-01', i, 'l' || i, 'x')
FROM generate_series(1, 65536) i;
-- rows come back to layouts made long before (found by the hash of their
-- names: 100 lists of names in turn, 700 rows each; were a list's layout not
-- found again, each row would make one, and the 65,536th be refused), and
-- lists of names that join to the same text are layouts of their own
SELECT count(*) AS series, min(json_array_length(s->'samples')) AS least,
	max(json_array_length(s->'samples')) AS most
FROM json_array_elements((SELECT prom_read_response_json(prom_read_response_agg(
		'2024-01-01'::timestamptz + (i / 100) * interval '1 second', i,
		'l' || (i % 100), 'x'))
	FROM generate_series(0, 69999) i)::json->'results'->0->'timeseries') s;
SELECT prom_read_response_json(prom_read_response_agg(
	'2024-01-01'::timestamptz + s * interval '1 second', s, n1, 'x', n2, 'y'))
FROM (VALUES (1, 'ab', 'c'), (2, 'a', 'bc'), (3, 'ab', 'c')) r(s, n1, n2);
-- the same labels in another order are one series: its messages merged,
-- samples in time order, the last of equal times read last winning (the
-- second series has two of one time and its samples out of order)
SELECT prom_read_response_json(prom_read_response_agg(
	'2024-01-01'::timestamptz + s * interval '1 second', v, n1, v1, n2, v2))
FROM (VALUES (1, 1.0, 'a', 'x', 'b', 'y'), (3, 2.0, 'b', 'y', 'a', 'x'),
	(2, 3.0, 'a', 'x', 'b', 'y'), (2, 4.0, 'b', 'y', 'a', 'x'),
	(4, 5.0, 'a', 'z', 'b', 'y'), (2, 6.0, 'b', 'y', 'a', 'x')) r(s, v, n1, v1, n2, v2);
-- merged series of many sample blocks each, their rows out of time order
-- (times distinct, so no winner depends on which series came first): the
-- same answer as with the labels always in one order
SELECT merged = single AS same, length(single) > 50000 AS long
FROM (SELECT prom_read_response_agg(t, v,
			CASE WHEN i % 2 = 0 THEN 'a' ELSE 'b' END,
			CASE WHEN i % 2 = 0 THEN 'x' || i % 3 ELSE 'y' END,
			CASE WHEN i % 2 = 0 THEN 'b' ELSE 'a' END,
			CASE WHEN i % 2 = 0 THEN 'y' ELSE 'x' || i % 3 END) AS merged,
		prom_read_response_agg(t, v, 'a', 'x' || i % 3, 'b', 'y') AS single
	FROM (SELECT '2024-01-01'::timestamptz + (i * 7919 % 6000) * interval '1 s' AS t,
			i::float8 AS v, i
		FROM generate_series(0, 5999) i) r) a;
-- rows of a series coming again right after those of a new series (looked
-- up one series late): they join the series' earlier rows, whether they are
-- a block's 1024 or more, in time order or not, and whether the series' label
-- values (text, integer, numeric: a value per series) were looked up or, past
-- a thousand series, copied for each series; the answer is that of the rows
-- ordered by series (times distinct, so no winner depends on the order)
SELECT runs = ordered AS same, length(ordered) > 100000 AS long
FROM (SELECT prom_read_response_agg(t, v, 'host', 'h' || h, 'port', h,
			'id', h::numeric, 'dc', 'd' || h % 3 ORDER BY r, i) AS runs,
		prom_read_response_agg(t, v, 'host', 'h' || h, 'port', h,
			'id', h::numeric, 'dc', 'd' || h % 3 ORDER BY h, i) AS ordered
	FROM (SELECT r, h, i, i::float8 AS v,
			'2024-01-01'::timestamptz + (i * 7919 % 1000003) * interval '1 s' AS t
		FROM (SELECT r, h, row_number() OVER (ORDER BY r, j) AS i
			FROM (SELECT r,
					CASE WHEN r % 2 = 0 THEN r / 2 ELSE r / 2 * 7 % (r / 2 + 1) END AS h,
					CASE WHEN r % 2 = 0 THEN 3 WHEN r / 2 % 500 = 7 THEN 1100
						WHEN r / 2 % 5 = 0 THEN 70 ELSE 1 + r / 2 % 4 END AS n
				FROM generate_series(0, 3999) r) runs,
				generate_series(1, n) j) numbered) timed) a;
-- the last rows of a metric are of such a series, looked up only when the
-- next metric's rows come: the next metric's name (its layout's) is intact
CREATE TABLE rr_runs_a (t timestamptz, host text, v float8);
INSERT INTO rr_runs_a VALUES
	('2024-01-01 00:00:01', 'x', 1), ('2024-01-01 00:00:02', 'x', 2),
	('2024-01-01 00:00:03', 'x', 3), ('2024-01-01 00:00:04', 'x', 4),
	('2024-01-01 00:00:01', 'y', 5), ('2024-01-01 00:00:02', 'y', 6),
	('2024-01-01 00:00:03', 'y', 7), ('2024-01-01 00:00:04', 'y', 8),
	('2024-01-01 00:00:05', 'x', 9);
CREATE TABLE rr_runs_b (t timestamptz, host text, v float8);
INSERT INTO rr_runs_b VALUES
	('2024-01-01 00:00:01', 'z', 10), ('2024-01-01 00:00:02', 'w', 11);
SELECT prom_register('rr_runs_a'), prom_register('rr_runs_b');
SELECT jsonb_pretty(prom_read_response_json(prom_remote_read(prom_read_request(
	'{__name__=~"rr_runs_.", host=~".+"}', '2024-01-01', '2024-01-02'))));
-- the same with the last of two samples of one time read winning, and the
-- series before the new one reading on
SELECT prom_read_response_json(prom_read_response_agg(
	'2024-01-01'::timestamptz + s * interval '1 second', v, 'host', h ORDER BY o))
FROM (VALUES (1, 'a', 1, 1.0), (2, 'a', 2, 2.0), (3, 'x', 1, 3.0),
	(4, 'x', 2, 4.0), (5, 'a', 2, 5.0), (6, 'a', 3, 6.0), (7, 'x', 3, 7.0),
	(8, 'a', 4, 8.0), (9, 'c', 1, 9.0)) r(o, h, s, v);
-- rows of each time in another order of series (no series follows the one
-- it followed before, so guesses stop for a while and rows are held to be
-- looked up together), of two label names in turn and with long values
-- among them: the same answer as the rows ordered by series
SELECT shuffled = ordered AS same
FROM (SELECT prom_read_response_agg(t, v, name, value, 'dc', 'd' || s % 3
			ORDER BY k, s * (7919 + k * 104729) % 1009) AS shuffled,
		prom_read_response_agg(t, v, name, value, 'dc', 'd' || s % 3
			ORDER BY s, k) AS ordered
	FROM (SELECT s, k, (s * 10 + k)::float8 AS v,
			'2024-01-01'::timestamptz + k * interval '15 s' AS t,
			CASE WHEN s % 7 = 0 THEN 'node' ELSE 'host' END AS name,
			'h' || s || repeat('x', CASE WHEN s % 97 = 0 THEN 5000
				ELSE s % 5 * 300 END) AS value
		FROM generate_series(0, 999) s, generate_series(0, 9) k) r) a;
-- no rows: one empty result
SELECT prom_read_response_json(prom_read_response_agg(t, v, '__name__', 'x'))
FROM rr WHERE false;
-- bad label arguments
SELECT prom_read_response_agg(t, v, '__name__') FROM rr;
SELECT prom_read_response_agg(t, v, NULL::text, 'x') FROM rr;
SELECT prom_read_response_agg(t, v, 'bad-name', 'x') FROM rr;
SELECT prom_read_response_agg(t, v, 'a', 'x', 'a', 'y') FROM rr;
SELECT prom_read_response_agg(t, v, 1, 'x') FROM rr;
SELECT prom_read_response_agg(t, v, VARIADIC ARRAY['a', 'x']) FROM rr;

-- the same through a parallel plan: partial states serialized by workers,
-- deserialized and combined by the leader
CREATE TABLE rr_big AS
	SELECT '2024-01-01'::timestamptz + (i % 500) * interval '1 second' AS t,
		'host-' || (i / 500) AS host, (i % 7)::text AS shard, i::float8 AS v
	FROM generate_series(0, 49999) i;
SELECT prom_register('rr_big');
SET max_parallel_workers_per_gather = 2;
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SET parallel_leader_participation = off;
-- (prom_remote_read is parallel unsafe: a statement calling it runs no
-- workers, so the parallel answer is taken first, by its digest)
EXPLAIN (COSTS OFF)
SELECT md5(prom_read_response_agg(t, v, '__name__', 'rr_big', 'host', host,
		'shard', shard)) AS parallel_answer
FROM rr_big;
SELECT md5(prom_read_response_agg(t, v, '__name__', 'rr_big', 'host', host,
		'shard', shard)) AS parallel_answer
FROM rr_big \gset
SELECT md5(prom_remote_read(prom_read_request('rr_big', '2024-01-01',
		'2024-01-02'))) = :'parallel_answer' AS same;
-- rows of each time in another order of series, which are held to be looked
-- up together: placed before a worker's state is serialized
CREATE TABLE rr_shuffled AS
	SELECT '2024-01-01'::timestamptz + k * interval '15 s' AS t,
		'h' || s AS host, (s * 10 + k)::float8 AS v
	FROM generate_series(0, 19) k, generate_series(0, 1999) s
	ORDER BY k, s::bigint * (7919 + k * 104729) % 2003;
SELECT prom_register('rr_shuffled');
EXPLAIN (COSTS OFF)
SELECT md5(prom_read_response_agg(t, v, '__name__', 'rr_shuffled',
		'host', host)) AS parallel_answer
FROM rr_shuffled;
SELECT md5(prom_read_response_agg(t, v, '__name__', 'rr_shuffled',
		'host', host)) AS parallel_answer
FROM rr_shuffled \gset
SELECT md5(prom_read_response_agg(t, v, '__name__', 'rr_shuffled',
			'host', host ORDER BY host, t)) = :'parallel_answer' AS same,
	md5(prom_remote_read(prom_read_request('rr_shuffled', '2024-01-01',
			'2024-01-02'))) = :'parallel_answer' AS same_read
FROM rr_shuffled;
RESET max_parallel_workers_per_gather;
RESET parallel_setup_cost;
RESET parallel_tuple_cost;
RESET min_parallel_table_scan_size;
RESET parallel_leader_participation;

-- response headers for PostgREST, local to the transaction
BEGIN;
SELECT current_setting('response.headers', true) IS NULL
	OR current_setting('response.headers', true) = '' AS unset;
SELECT length(prom_remote_read(prom_read_request('rr', '2024-01-01', '2024-01-02'))) > 0;
SELECT current_setting('response.headers');
COMMIT;

-- the sample limit, passed by one sample
SET promread.max_samples = 6;
SELECT rr_read(ARRAY['rr']);
SET promread.max_samples = 7;
SELECT jsonb_array_length(rr_read(ARRAY['rr'])->'results'->0->'timeseries');
RESET promread.max_samples;

-- hostile requests: each gets its own error and SQLSTATE
-- the SQLSTATE, message and detail of reading a request
CREATE FUNCTION try_read(request bytea) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
	detail text;
BEGIN
	PERFORM prom_remote_read(request);
	RETURN 'ok';
EXCEPTION WHEN others THEN
	GET STACKED DIAGNOSTICS detail = PG_EXCEPTION_DETAIL;
	RETURN SQLSTATE || ': ' || SQLERRM || coalesce(' (' || nullif(detail, '') || ')', '');
END $$;
-- sanity: a hand-made request decodes
SELECT prom_read_request_json(snappy_literal('\x0a0c100a1a0808011201611a016212020001'));
-- not snappy; a corrupt block; a block announcing 4 GB
SELECT try_read('\xff');
SELECT try_read('\x0a1001020304');
SELECT try_read(wire_varint(4294967295) || '\x0061');
-- over promread.max_request_bytes
SET promread.max_request_bytes = '1kB';
SELECT try_read(snappy_literal(decode(repeat('0a00', 600), 'hex')));
RESET promread.max_request_bytes;
-- truncated and malformed protobuf
SELECT try_read(snappy_literal('\x0a05'));
SELECT try_read(snappy_literal('\x0a0c100a1a0808011201611a01'));
SELECT try_read(snappy_literal('\xff'));
-- invalid UTF-8 in a value and in a name
SELECT try_read(snappy_literal('\x0a0a10011a0612016a1a01ff'));
SELECT try_read(snappy_literal('\x0a0a10011a061201ff1a0162'));
-- and in or after 8 bytes (ASCII is checked a word at a time): 0xff at each
-- place of 9, a surrogate after 10; two-byte characters in and after them
-- are valid
SELECT pos, try_read(snappy_literal('\x0a1210011a0e12016a1a09'::bytea ||
	overlay('\x616263646566676869'::bytea PLACING '\xff' FROM pos + 1 FOR 1)))
FROM generate_series(0, 8) pos;
SELECT try_read(snappy_literal('\x0a1610011a1212016a1a0d6162636465666768696aeda080'));
SELECT try_read(snappy_literal('\x0a1310011a0f12016a1a0a6162636465666768c3a9'));
SELECT try_read(snappy_literal('\x0a1210011a0e12016a1a096162c3a96465666768'));
-- an unrecognized matcher type; a query ending before it starts
SELECT try_read(snappy_literal('\x0a0c10011a0808071201611a0162'));
SELECT try_read(snappy_literal('\x0a0c080210011a0612016a1a0162'));
-- invalid and untranslatable regexes
SELECT try_read(snappy_literal('\x0a0c10011a0808021201611a0128'));
SELECT try_read(snappy_literal('\x0a0e10011a0a08021201611a035c704c'));
-- only response types promread does not serve
SELECT try_read(snappy_literal('\x120105'));
SELECT try_read(snappy_literal('\x1202' || '\x0507'::bytea));
-- more than 1000 queries; more than 1000 matchers in a query
SELECT try_read(snappy_literal(decode(repeat('0a00', 1001), 'hex')));
SELECT try_read(snappy_literal('\x0a' || wire_varint(2002) || decode(repeat('1a00', 1001), 'hex')));
-- at the limits: accepted
SELECT length(prom_remote_read(snappy_literal(decode(repeat('0a00', 1000), 'hex')))) > 0;
SELECT jsonb_array_length(prom_read_response_json(prom_remote_read(
	snappy_literal('\x0a' || wire_varint(2000) || decode(repeat('1a00', 1000), 'hex'))))->'results');
-- a label name holding a NUL is a label no series has
SELECT prom_read_response_json(prom_remote_read(snappy_literal(
	'\x0a2610ffffffffffffffff7f1a0e12085f5f6e616d655f5f1a0272721a0a080112036100621a0162')));
SELECT prom_read_response_json(prom_remote_read(snappy_literal(
	'\x0a2410ffffffffffffffff7f1a0e12085f5f6e616d655f5f1a0272721a0812036100621a0162')));
-- the widest time range is clamped to PostgreSQL's
SELECT rr_read(ARRAY['rr{host="a"}'], '-infinity', 'infinity');
-- times of a bigint column at the ends of its range and between, out of
-- order, in one series: every one exact and in order
CREATE TABLE rr_far (ms bigint, v float8);
INSERT INTO rr_far VALUES (9223372036854775000, 1), (-9223372036854775000, 2),
	(0, 3), (2147483647, 4), (-2147483648, 5), (9223372036854775807, 6),
	(-9223372036854775808, 7), (-1, 8);
SELECT prom_register('rr_far', time_column => 'ms');
SELECT rr_read(ARRAY['rr_far'], '-infinity', 'infinity');

DROP TABLE rr, rr_other, rr_values, rr_big, rr_far;
DROP FUNCTION rr_read, try_read, wire_varint, snappy_literal,
	wire_field, wire_matcher, wire_query;
DROP TYPE rr_env;

-- STREAMED_XOR_CHUNKS responses: frames of XOR chunks, taken apart here by
-- a small frame reader written in SQL, and decoded by prom_read_response_json.
SET timezone = 'UTC';
SET datestyle = 'ISO';

-- a varint at byte pos (from 0) of b: its value and the position after it
CREATE FUNCTION ch_varint(b bytea, INOUT pos int, OUT value numeric)
	LANGUAGE plpgsql IMMUTABLE STRICT AS $$
DECLARE
	shift numeric := 1;
	byte int;
BEGIN
	value := 0;
	LOOP
		byte := get_byte(b, pos);
		pos := pos + 1;
		value := value + (byte & 127) * shift;
		EXIT WHEN byte < 128;
		shift := shift * 128;
	END LOOP;
END $$;
\set abs_srcdir `pwd` '/test'
\set wire_helpers :abs_srcdir '/fixtures/wire.sql'
\i :wire_helpers
-- a varint's value as int64
CREATE FUNCTION ch_int64(n numeric) RETURNS bigint LANGUAGE sql IMMUTABLE STRICT AS $$
	SELECT (CASE WHEN n >= 2::numeric ^ 63 THEN n - 2::numeric ^ 64 ELSE n END)::bigint
$$;
-- the fields of a protobuf message, in order: number, and varint or bytes
CREATE FUNCTION ch_fields(msg bytea)
	RETURNS TABLE (field int, value numeric, data bytea)
	LANGUAGE plpgsql IMMUTABLE STRICT AS $$
DECLARE
	pos int := 0;
	tag numeric;
	len numeric;
BEGIN
	WHILE pos < length(msg) LOOP
		SELECT v.pos, v.value INTO pos, tag FROM ch_varint(msg, pos) v;
		field := div(tag, 8);
		value := NULL;
		data := NULL;
		IF mod(tag, 8) = 0 THEN
			SELECT v.pos, v.value INTO pos, value FROM ch_varint(msg, pos) v;
		ELSIF mod(tag, 8) = 2 THEN
			SELECT v.pos, v.value INTO pos, len FROM ch_varint(msg, pos) v;
			data := substring(msg FROM pos + 1 FOR len::int);
			pos := pos + len::int;
		ELSE
			RAISE EXCEPTION 'unexpected wire type %', mod(tag, 8);
		END IF;
		RETURN NEXT;
	END LOOP;
END $$;
-- CRC-32C (Castagnoli, reflected polynomial 0x82F63B78), bit by bit
CREATE FUNCTION ch_crc32c(data bytea) RETURNS bigint
	LANGUAGE plpgsql IMMUTABLE STRICT AS $$
DECLARE
	crc bigint := 4294967295;
BEGIN
	FOR i IN 0 .. length(data) - 1 LOOP
		crc := crc # get_byte(data, i);
		FOR k IN 1 .. 8 LOOP
			crc := (crc >> 1) # (CASE WHEN crc & 1 = 1 THEN 2197175160 ELSE 0 END);
		END LOOP;
	END LOOP;
	RETURN crc # 4294967295;
END $$;
SELECT to_hex(ch_crc32c('123456789')) AS crc_check_value;	-- e3069283
-- the frames of a stream, a row per chunk: the frame's bytes, whether its
-- CRC matches, its query index, the series' labels, the chunk's times,
-- encoding, sample count (its first 2 bytes) and data
CREATE FUNCTION ch_frames(stream bytea)
	RETURNS TABLE (frame int, bytes int, crc_ok boolean, query_index bigint,
		labels text, chunk int, min_time bigint, max_time bigint, type int,
		samples int, data bytea)
	LANGUAGE plpgsql IMMUTABLE STRICT AS $$
DECLARE
	pos int := 0;
	start int;
	len numeric;
	message bytea;
	series bytea;
	c bytea;
BEGIN
	frame := 0;
	WHILE pos < length(stream) LOOP
		start := pos;
		SELECT v.pos, v.value INTO pos, len FROM ch_varint(stream, pos) v;
		message := substring(stream FROM pos + 5 FOR len::int);
		crc_ok := ('x' || encode(substring(stream FROM pos + 1 FOR 4), 'hex'))::bit(32)::bigint
			= ch_crc32c(message);
		pos := pos + 4 + len::int;
		bytes := pos - start;
		query_index := coalesce((SELECT ch_int64(f.value) FROM ch_fields(message) f
								 WHERE f.field = 2), 0);
		FOR series IN SELECT f.data FROM ch_fields(message) f WHERE f.field = 1 LOOP
			labels := (SELECT '{' || string_agg(
						(SELECT convert_from(x.data, 'UTF8') FROM ch_fields(l.data) x WHERE x.field = 1)
						|| '="' ||
						(SELECT convert_from(x.data, 'UTF8') FROM ch_fields(l.data) x WHERE x.field = 2)
						|| '"', ', ' ORDER BY l.n) || '}'
					   FROM ch_fields(series) WITH ORDINALITY l(field, value, data, n)
					   WHERE l.field = 1);
			chunk := 0;
			FOR c IN SELECT f.data FROM ch_fields(series) f WHERE f.field = 2 LOOP
				SELECT coalesce(ch_int64(max(f.value) FILTER (WHERE f.field = 1)), 0),
					coalesce(ch_int64(max(f.value) FILTER (WHERE f.field = 2)), 0),
					coalesce(max(f.value) FILTER (WHERE f.field = 3), 0),
					(array_agg(f.data) FILTER (WHERE f.field = 4))[1]
				INTO min_time, max_time, type, data
				FROM ch_fields(c) f;
				samples := get_byte(data, 0) * 256 + get_byte(data, 1);
				RETURN NEXT;
				chunk := chunk + 1;
			END LOOP;
		END LOOP;
		frame := frame + 1;
	END LOOP;
END $$;
-- building messages and frames by hand: a varint field, a bytes field,
-- a frame (uvarint length, big-endian CRC-32C, message)
CREATE FUNCTION ch_int(field int, n numeric) RETURNS bytea LANGUAGE sql IMMUTABLE AS $$
	SELECT set_byte('\x00'::bytea, 0, field * 8) || wire_varint(n)
$$;
CREATE FUNCTION ch_len(field int, data bytea) RETURNS bytea LANGUAGE sql IMMUTABLE AS $$
	SELECT set_byte('\x00'::bytea, 0, field * 8 + 2) || wire_varint(length(data)) || data
$$;
CREATE FUNCTION ch_frame(message bytea) RETURNS bytea LANGUAGE sql IMMUTABLE AS $$
	SELECT wire_varint(length(message))
		|| decode(lpad(to_hex(ch_crc32c(message)), 8, '0'), 'hex') || message
$$;
-- a ChunkedReadResponse of one series {__name__="<name>"} and one chunk
CREATE FUNCTION ch_message(name text, min_time bigint, max_time bigint, type int,
		data bytea, query_index bigint = 0) RETURNS bytea LANGUAGE sql IMMUTABLE AS $$
	SELECT ch_len(1,
			ch_len(1, ch_len(1, '__name__') || ch_len(2, convert_to(name, 'UTF8')))
			|| ch_len(2, CASE WHEN min_time <> 0 THEN ch_int(1, min_time) ELSE '' END
					|| CASE WHEN max_time <> 0 THEN ch_int(2, max_time) ELSE '' END
					|| ch_int(3, type) || ch_len(4, data)))
		|| CASE WHEN query_index <> 0 THEN ch_int(2, query_index) ELSE '' END
$$;
-- the SQLSTATE, message and detail of an error
CREATE FUNCTION ch_try(sql text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
	detail text;
BEGIN
	EXECUTE sql;
	RETURN 'ok';
EXCEPTION WHEN others THEN
	GET STACKED DIAGNOSTICS detail = PG_EXCEPTION_DETAIL;
	RETURN SQLSTATE || ': ' || SQLERRM || coalesce(' (' || nullif(detail, '') || ')', '');
END $$;

-- the golden vector: one sample at t = 7200000 ms, v = 12000
CREATE TABLE golden (t timestamptz, v float8);
INSERT INTO golden VALUES ('1970-01-01 02:00:00+00', 12000);
SELECT prom_register('golden');
CREATE TABLE ch_answer AS
	SELECT prom_remote_read(prom_read_request('golden', '1970-01-01', '1970-01-02',
		'{streamed_xor_chunks}')) AS r;
-- the whole answer: one frame
SELECT encode(r, 'hex') FROM ch_answer;
-- taken apart: the message length (52), the CRC-32C, then the
-- ChunkedReadResponse: its chunked_series (0a, 50 bytes), there the label
-- __name__="golden" (0a, 18 bytes) and the chunk (12, 28 bytes):
-- min_time_ms (08) and max_time_ms (10) 7200000, type (18) XOR, data (22,
-- 14 bytes); query_index 0 is left out
SELECT part, encode(substring(r FROM o FOR n), 'hex') AS bytes
FROM ch_answer, (VALUES ('message length', 1, 1), ('CRC-32C', 2, 4),
	('chunked_series', 6, 2), ('labels', 8, 20), ('chunks', 28, 2),
	('min_time_ms', 30, 5), ('max_time_ms', 35, 5), ('type', 40, 2),
	('data', 42, 2), ('  sample count', 44, 2), ('  t: zigzag varint', 46, 4),
	('  v: 64 bits', 50, 8)) AS p(part, o, n)
ORDER BY o;
-- the chunk data is the golden vector, at the end of the frame
SELECT position('\x000180f4ee0640c7700000000000'::bytea IN r) AS data_at,
	length(r) AS frame_bytes FROM ch_answer;
SELECT frame, bytes, crc_ok, query_index, labels, chunk, min_time, max_time, type,
	samples, encode(data, 'hex') AS data FROM ch_frames((SELECT r FROM ch_answer));
-- the same frame written by hand
SELECT ch_frame(ch_message('golden', 7200000, 7200000, 1,
	'\x000180f4ee0640c7700000000000')) = r AS same_bytes FROM ch_answer;
SELECT prom_read_response_json(r) FROM ch_answer;
DROP TABLE ch_answer;

-- chunk boundaries: 120, 121 and 241 samples make 1, 2 and 3 chunks of at
-- most 120 samples, min_time_ms and max_time_ms being their first and last
CREATE TABLE ch_b (t timestamptz, host text, v float8);
INSERT INTO ch_b
	SELECT '2024-01-01'::timestamptz + i * interval '15 seconds', 'n' || n, i * 0.5
	FROM (VALUES (120), (121), (241)) s(n), generate_series(0, n - 1) i;
SELECT prom_register('ch_b');
SELECT frame, crc_ok, query_index, labels, chunk, min_time, max_time, samples
FROM ch_frames(prom_remote_read(prom_read_request('ch_b', '2024-01-01', '2024-01-02',
	'{streamed_xor_chunks}')));
-- and they decode to every sample
SELECT count(*), min((s->>0)::bigint), max((s->>0)::bigint), sum((s->>1)::float8)
FROM jsonb_path_query(prom_read_response_json(prom_remote_read(prom_read_request('ch_b',
	'2024-01-01', '2024-01-02', '{streamed_xor_chunks}'))), '$.results[*].timeseries[*].samples[*]') s;

-- every series is one frame, whatever its size: Prometheus's client (2.55
-- and later) makes a series of each frame and never joins two
SHOW promread.max_frame_bytes;
SELECT frame, bytes, labels, chunk, min_time, max_time, samples
FROM ch_frames(prom_remote_read(prom_read_request('ch_b{host="n241"}', '2024-01-01',
	'2024-01-02', '{streamed_xor_chunks}')));
-- promread.max_frame_bytes bounds a frame's message (the frame less its
-- length and CRC), as the client's chunked_read_limit does: a frame's
-- message of 444 bytes (a frame of 450) is sent under a limit of 444
SET promread.max_frame_bytes = '444B';
SELECT frame, bytes, labels, count(*) AS chunks
FROM ch_frames(prom_remote_read(prom_read_request('ch_b{host="n241"}', '2024-01-01',
	'2024-01-02', '{streamed_xor_chunks}')))
GROUP BY frame, bytes, labels;
-- one byte less: the series is refused, not cut (54000), by the endpoint
-- and by the aggregate that shards answer with; a series that fits still
-- goes through
SET promread.max_frame_bytes = '443B';
SELECT ch_try($$SELECT prom_remote_read(prom_read_request('ch_b', '2024-01-01',
	'2024-01-02', '{streamed_xor_chunks}'))$$);
SELECT ch_try($$SELECT prom_chunked_response_agg(t, v, '__name__', 'ch_b', 'host', host)
	FROM ch_b$$);
SELECT frame, bytes, labels, count(*) AS chunks
FROM ch_frames(prom_remote_read(prom_read_request('ch_b{host="n121"}', '2024-01-01',
	'2024-01-02', '{streamed_xor_chunks}')))
GROUP BY frame, bytes, labels;
-- a limit below any frame refuses at the first chunk, naming the series
-- (labels escaped as Prometheus prints them, long values cut); SAMPLES
-- answers are not concerned
INSERT INTO ch_b VALUES ('2024-01-01', 'say "hi" \ ' || repeat('é', 150), 1);
SET promread.max_frame_bytes = 1;
SELECT ch_try($$SELECT prom_remote_read(prom_read_request('ch_b{host=~"say.*"}', '2024-01-01',
	'2024-01-02', '{streamed_xor_chunks}'))$$);
SELECT ch_try($$SELECT prom_remote_read(prom_read_request('ch_b{host="n121"}', '2024-01-01',
	'2024-01-02', '{streamed_xor_chunks}'))$$);
SELECT jsonb_array_length(prom_read_response_json(prom_remote_read(prom_read_request('ch_b',
	'2024-01-01', '2024-01-02')))->'results'->0->'timeseries') AS samples_series;
RESET promread.max_frame_bytes;
DELETE FROM ch_b WHERE host LIKE 'say%';
SET promread.max_frame_bytes = '1kB';
SHOW promread.max_frame_bytes;
-- 0 is refused (the wording of the range differs between majors)
DO $$ BEGIN
	SET promread.max_frame_bytes = 0;
EXCEPTION WHEN invalid_parameter_value THEN
	RAISE NOTICE 'refused: %, %', SQLSTATE, SQLERRM LIKE '0 B is outside the valid range%';
END $$;
SHOW promread.max_frame_bytes;
RESET promread.max_frame_bytes;

-- several queries: each query's frames in order, query_index its position
-- in the request (0 is left out on the wire); a query without series has
-- no frame
SELECT frame, query_index, labels, chunk, samples
FROM ch_frames(prom_remote_read(prom_read_request(
	ARRAY['ch_b{host="n121"}', 'nope', 'ch_b{host=~"n12."}', 'nope'],
	'2024-01-01', '2024-01-02', '{streamed_xor_chunks}')));
-- so the decoded stream has a result per index up to the last one with
-- series
SELECT jsonb_path_query(prom_read_response_json(prom_remote_read(prom_read_request(
	ARRAY['ch_b{host="n121"}', 'nope', 'ch_b{host=~"n12."}', 'nope'],
	'2024-01-01', '2024-01-02', '{streamed_xor_chunks}'))),
	'$.results[*].timeseries.size()') AS series_per_result;

-- negotiation: the first accepted type that promread serves; none means
-- SAMPLES; the response headers say which
CREATE FUNCTION ch_headers(request bytea) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
	PERFORM prom_remote_read(request);
	RETURN current_setting('response.headers');
EXCEPTION WHEN others THEN
	RETURN SQLSTATE || ': ' || SQLERRM;
END $$;
SELECT types, ch_headers(prom_read_request('ch_b', '2024-01-01', '2024-01-02', types))
FROM (VALUES ('{streamed_xor_chunks,samples}'::text[]), ('{streamed_xor_chunks}'),
	('{samples,streamed_xor_chunks}'), ('{samples}'), ('{}')) AS t(types);
-- requests made by hand, in a snappy block of one literal
-- accepted types 5, 1 (unrecognized, then STREAMED_XOR_CHUNKS); 7, 0, 1;
-- only unrecognized types 5, 7
SELECT ch_headers(snappy_literal('\x0a00' || '\x12020501'::bytea));
SELECT ch_headers(snappy_literal('\x0a00' || '\x1203070001'::bytea));
SELECT ch_headers(snappy_literal('\x0a00' || '\x12020507'::bytea));
SELECT ch_try($$SELECT prom_remote_read(snappy_literal('\x12020507'))$$);
-- the response headers stay until the transaction ends
BEGIN;
SELECT length(prom_remote_read(prom_read_request('ch_b', '2024-01-01', '2024-01-02',
	'{streamed_xor_chunks,samples}'))) > 0;
SELECT current_setting('response.headers');
COMMIT;

-- every query shape of remote_read.sql: the chunked answer, decoded,
-- equals the SAMPLES answer, decoded.  A stream has no frame for a query
-- without series, so the SAMPLES results after the last one with series
-- are left out of the comparison (and counted).
\set rr_rows :abs_srcdir '/fixtures/rr.sql'
\i :rr_rows
CREATE TABLE ch_rr_big AS
	SELECT '2024-01-01'::timestamptz + (i % 500) * interval '1 second' AS t,
		'host-' || (i / 500) AS host, (i % 7)::text AS shard, i::float8 AS v
	FROM generate_series(0, 49999) i;
SELECT prom_register('ch_rr_big');
-- compare the answers to a SAMPLES request and to a chunked one
CREATE FUNCTION ch_compare(samples_request bytea, chunks_request bytea)
	RETURNS text LANGUAGE plpgsql AS $$
DECLARE
	samples jsonb := prom_read_response_json(prom_remote_read(samples_request));
	chunks jsonb := prom_read_response_json(prom_remote_read(chunks_request));
	chunked boolean := current_setting('response.headers') LIKE '%x-streamed-protobuf%';
	kept bigint;
	trimmed jsonb;
	nseries bigint;
	nsamples bigint;
BEGIN
	SELECT coalesce(max(i) FILTER (WHERE jsonb_array_length(e->'timeseries') > 0), 0)
	INTO kept FROM jsonb_array_elements(samples->'results') WITH ORDINALITY a(e, i);
	SELECT jsonb_build_object('results', coalesce(jsonb_agg(e ORDER BY i), '[]'))
	INTO trimmed FROM jsonb_array_elements(samples->'results') WITH ORDINALITY a(e, i)
	WHERE i <= kept;
	SELECT count(*), sum(jsonb_array_length(ts->'samples')) INTO nseries, nsamples
	FROM jsonb_array_elements(chunks->'results') r,
		jsonb_array_elements(r->'timeseries') ts;
	RETURN CASE WHEN NOT chunked THEN 'NOT CHUNKED'
			WHEN chunks = trimmed THEN 'same' ELSE 'DIFFERENT' END
		|| format(': %s results (%s trailing empty), %s series, %s samples',
				  jsonb_array_length(samples->'results'),
				  jsonb_array_length(samples->'results') - kept, nseries,
				  coalesce(nsamples, 0));
END $$;
CREATE FUNCTION ch_same(selectors text[], start_time timestamptz = '2024-01-01',
		end_time timestamptz = '2024-01-02') RETURNS text LANGUAGE sql AS $$
	SELECT ch_compare(prom_read_request(selectors, start_time, end_time, '{samples}'),
		prom_read_request(selectors, start_time, end_time, '{streamed_xor_chunks}'))
$$;
-- the same for a request made by hand: its queries, then accepted types
CREATE FUNCTION ch_same_raw(queries bytea) RETURNS text LANGUAGE sql AS $$
	SELECT ch_compare(snappy_literal(queries), snappy_literal(queries || '\x120101'::bytea))
$$;
SELECT ch_same(ARRAY['rr', 'nope', 'rr{host="a"}', '{__name__=~"rr.*", host="a"}']);
SELECT jsonb_pretty(prom_read_response_json(prom_remote_read(prom_read_request(
	ARRAY['rr', 'nope', 'rr{host="a"}', '{__name__=~"rr.*", host="a"}'],
	'2024-01-01', '2024-01-02', '{streamed_xor_chunks}'))));
SELECT ch_same(ARRAY['rr{host="b"}'], '2024-01-01 00:00:02', '2024-01-01 00:00:02');
SELECT ch_same(ARRAY['rr{host="a"}'], '2024-01-01 00:00:00.5', '2024-01-01 00:00:01');
SELECT ch_same(ARRAY['rr{dc=""}', 'rr{dc!=""}', 'rr{env=~"pro.*"}',
	'rr{env!~"pro.*"}', 'rr{zone=""}', 'rr{zone="z"}',
	'rr{host=~"A", host=~"(?i)A"}']);
SELECT ch_same('{}'::text[]);
-- a query whose matchers all match "", over the data
SELECT ch_same_raw(wire_query(1704067200000, 1704067202000, wire_matcher(0, 'zone', '')));
SELECT ch_same(ARRAY['rr_values']);
SELECT prom_read_response_json(prom_remote_read(prom_read_request('rr_values',
	'2024-01-01', '2024-01-02', '{streamed_xor_chunks}')));
SELECT ch_same(ARRAY['ch_rr_big']);
SELECT ch_same(ARRAY['rr{host="a"}'], '-infinity', 'infinity');
-- times far apart (more than a sample block reaches) and at the ends of a
-- bigint column's range, out of order
CREATE TABLE ch_rr_far (ms bigint, host text, v float8);
INSERT INTO ch_rr_far
	SELECT (ARRAY[-9223372036854775808, -4294967296, 0, 2147483648,
			9223372036853000000])[1 + i % 5] + i * 1000, 'h' || i % 2, i
	FROM generate_series(0, 999) i;
SELECT prom_register('ch_rr_far', time_column => 'ms');
SELECT ch_same(ARRAY['ch_rr_far'], '-infinity', 'infinity');
SELECT ch_same_raw(decode(repeat('0a00', 1000), 'hex'));
SELECT ch_same_raw('\x0a' || wire_varint(2000) || decode(repeat('1a00', 1000), 'hex'));
-- label names holding a NUL (NEQ, then EQ)
SELECT ch_same_raw('\x0a2610ffffffffffffffff7f1a0e12085f5f6e616d655f5f1a0272721a0a080112036100621a0162');
SELECT ch_same_raw('\x0a2410ffffffffffffffff7f1a0e12085f5f6e616d655f5f1a0272721a0812036100621a0162');
-- the sample limit applies the same
SET promread.max_samples = 6;
SELECT ch_try($$SELECT prom_remote_read(prom_read_request('rr', '2024-01-01',
	'2024-01-02', '{streamed_xor_chunks}'))$$);
RESET promread.max_samples;

-- streams made by hand: frames of query 1, then of query 0, where two
-- frames in a row with the same labels are one series; an empty stream
SELECT prom_read_response_json(
	ch_frame(ch_message('x', 7200000, 7200000, 1, '\x000180f4ee0640c7700000000000', 1))
	|| ch_frame(ch_message('x', 7200000, 7200000, 1, '\x000180f4ee0640c7700000000000'))
	|| ch_frame(ch_message('x', 7300000, 7300000, 1, '\x0001c08efb0640c9640000000000')));
SELECT prom_read_response_json('');

-- corrupt streams: each an error with SQLSTATE 22P03 saying what is wrong
-- a stream of two frames, and where frame 1 starts (from 0)
CREATE TABLE ch_stream AS
	SELECT s, (SELECT bytes FROM ch_frames(s) WHERE frame = 0 LIMIT 1) AS f1
	FROM prom_remote_read(prom_read_request('ch_b{host=~"n12."}', '2024-01-01',
		'2024-01-02', '{streamed_xor_chunks}')) AS s;
SELECT frame, bytes, crc_ok, labels, chunk FROM ch_frames((SELECT s FROM ch_stream));
CREATE FUNCTION ch_decode(stream bytea) RETURNS text LANGUAGE sql AS $$
	SELECT ch_try(format('SELECT prom_read_response_json(%L::bytea)', stream))
$$;
-- a bit flipped in frame 0's message (then the data is not a stream at
-- all), in frame 1's message, in frame 1's CRC (after its 2-byte length)
SELECT ch_decode(set_byte(s, 40, get_byte(s, 40) # 1)) FROM ch_stream;
SELECT ch_decode(set_byte(s, length(s) - 1, get_byte(s, length(s) - 1) # 1)) FROM ch_stream;
SELECT ch_decode(set_byte(s, f1 + 2, get_byte(s, f1 + 2) # 1)) FROM ch_stream;
-- truncated: in frame 1's message, in its CRC, in the length of a frame 2
SELECT ch_decode(substring(s FROM 1 FOR length(s) - 1)) FROM ch_stream;
SELECT ch_decode(substring(s FROM 1 FOR f1 + 4)) FROM ch_stream;
SELECT ch_decode(s || '\x80'::bytea) FROM ch_stream;
-- bad lengths: a varint overflowing 64 bits, 2^63 bytes
SELECT ch_decode(s || '\xffffffffffffffffff7f'::bytea) FROM ch_stream;
SELECT ch_decode(s || '\x8080808080808080800100000000'::bytea) FROM ch_stream;
-- frames whose CRC matches but whose message is wrong: not protobuf; a
-- negative and a huge query index; chunks that are not valid XOR: shorter
-- than their header, ending early, ending inside a varint, meaningful bits
-- overflowing 64; a histogram chunk shorter than its header; a chunk of
-- encoding 0 (UNKNOWN), which is not decoded
SELECT ch_decode(s || ch_frame('\x0a05')) FROM ch_stream;
SELECT ch_decode(s || ch_frame(ch_message('x', 1, 1, 1, '\x0001020000000000000000', -1)))
FROM ch_stream;
SELECT ch_decode(s || ch_frame(ch_message('x', 1, 1, 1, '\x0001020000000000000000', 100001)))
FROM ch_stream;
SELECT ch_decode(ch_frame(ch_message('x', 0, 0, 1, '\x00')));
SELECT ch_decode(ch_frame(ch_message('x', 0, 0, 1, '\x00010000000000')));
SELECT ch_decode(ch_frame(ch_message('x', 0, 0, 1, '\x000280f4ee0640c7700000000000')));
SELECT ch_decode(ch_frame(ch_message('x', 0, 0, 1, '\x000280f4ee0640c770000000000001fff8')));
SELECT ch_decode(ch_frame(ch_message('x', 0, 0, 2, '\x0001')));
SELECT ch_decode(ch_frame(ch_message('x', 0, 0, 0, '\x0001')));
-- neither a snappy block nor a frame
SELECT ch_decode('\xff');
SELECT ch_decode('\x0a000000000000');

-- promread.max_memory bounds all that prom_read_response_json holds over
-- the call, decoded samples, histograms and jsonb tree included (53200),
-- not each chunk or series alone; byte counts are left out here
CREATE FUNCTION ch_decode_memory(stream bytea) RETURNS text LANGUAGE sql AS $$
	SELECT regexp_replace(ch_decode(stream), '[0-9]+ (bytes|more)', 'N \1', 'g')
$$;
-- an XOR chunk of 65,535 samples of time 0 and value 0: after the first
-- two, each sample is 2 bits (delta of delta '0', value unchanged '0'), so
-- the chunk takes 16 kB; four such frames of one series would be 262,140
-- samples, about 100 MB of jsonb tree
CREATE TABLE ch_zeros AS
	SELECT ch_frame(ch_message('x', 0, 0, 1,
		'\xffff'::bytea || decode(repeat('00', 16394), 'hex'))) AS f;
SELECT length(f) AS frame_bytes,
	jsonb_array_length(prom_read_response_json(f)->'results'->0->'timeseries'->0->'samples')
		AS samples
FROM ch_zeros;
-- a thousand samples a series: one series decodes within 1 MB, ten do not
CREATE TABLE ch_thousands AS
	SELECT i, ch_frame(ch_message('x' || i, 0, 0, 1,
		'\x03e8'::bytea || decode(repeat('00', 260), 'hex'))) AS f
	FROM generate_series(1, 10) i;
-- a SAMPLES response of 3,000 empty samples (2 bytes each)
CREATE TABLE ch_empty_samples AS
	SELECT snappy_literal(ch_len(1, ch_len(1, ch_len(1, ch_len(1, '__name__')
		|| ch_len(2, 'x')) || decode(repeat('1200', 3000), 'hex')))) AS r;
SELECT jsonb_array_length(prom_read_response_json(r)->'results'->0->'timeseries'->0->'samples')
	AS samples
FROM ch_empty_samples;
-- 600 histograms of 500 buckets: 5 HISTOGRAM chunks of 120, about 500 kB
-- of histograms each
CREATE TABLE ch_hist (t timestamptz, h prom_histogram);
SELECT prom_register('ch_hist');
INSERT INTO ch_hist
	SELECT '2024-01-01'::timestamptz + i * interval '1 s',
		('{"count":500,"positive_spans":[[0,500]],"positive_deltas":[1'
		 || repeat(',0', 499) || ']}')::prom_histogram
	FROM generate_series(1, 600) i;
CREATE TABLE ch_hist_stream AS
	SELECT prom_remote_read(prom_read_request('ch_hist', '2024-01-01', '2024-01-02',
		'{streamed_xor_chunks}')) AS s;
SELECT chunk, type, samples FROM ch_frames((SELECT s FROM ch_hist_stream));
SELECT jsonb_array_length(prom_read_response_json(s)->'results'->0->'timeseries'->0->'histograms')
	AS histograms
FROM ch_hist_stream;
SET promread.max_memory = '1MB';
SELECT ch_decode_memory(f || f || f || f) FROM ch_zeros;
SELECT ch_decode_memory(f) FROM ch_thousands WHERE i = 1;
SELECT ch_decode_memory(string_agg(f, ''::bytea ORDER BY i)) FROM ch_thousands;
SELECT ch_decode_memory(r) FROM ch_empty_samples;
-- each histogram chunk alone decodes within 1 MB; the stream of five not
-- (the SQLSTATE alone: whether the decoder of a chunk refuses it, or the
-- count after a chunk, depends on how the allocator rounds a histogram)
SELECT chunk, (SELECT count(*) FROM prom_chunk_histograms(type::smallint, data)) AS histograms
FROM ch_frames((SELECT s FROM ch_hist_stream));
SELECT split_part(ch_decode(s), ':', 1) AS sqlstate FROM ch_hist_stream;
RESET promread.max_memory;
SELECT ch_decode_memory(string_agg(f, ''::bytea ORDER BY i)) FROM ch_thousands;
-- a histogram of a chunk is made JSON only within
-- promread.max_histogram_buckets (22023), as one of a SAMPLES response:
-- what its text and parse take is not counted
SET promread.max_histogram_buckets = 100;
SELECT ch_decode(s) FROM ch_hist_stream;
RESET promread.max_histogram_buckets;

DROP TABLE ch_zeros, ch_thousands, ch_empty_samples, ch_hist, ch_hist_stream;
DROP FUNCTION ch_decode_memory;

DROP TABLE golden, ch_b, rr, rr_other, rr_values, ch_rr_big, ch_rr_far, ch_stream;
DROP TYPE rr_env;
DROP FUNCTION ch_varint, ch_int64, ch_fields, ch_crc32c, ch_frames,
	ch_int, ch_len, ch_frame, ch_message, ch_try, ch_headers, ch_compare,
	ch_same, ch_same_raw, ch_decode, wire_varint, snappy_literal,
	wire_field, wire_matcher, wire_query;

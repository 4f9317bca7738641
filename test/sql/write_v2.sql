-- Remote write 2.0: prom_remote_write(request, content_type) decodes an
-- io.prometheus.write.v2.Request (symbols, label references, per-series
-- metadata) into what a 1.0 request gives, refuses a bad request whole
-- with a class-22 SQLSTATE, an unknown proto with PT415, and answers the
-- X-Prometheus-Remote-Write-*-Written counts in response.headers.
SET timezone = 'UTC';
SET datestyle = 'ISO';
\set abs_srcdir `pwd` '/test'
\set wire_helpers :abs_srcdir '/fixtures/wire.sql'
\i :wire_helpers
CREATE SCHEMA wv2;
SET promread.write_schema = wv2;
\set v2 'application/x-protobuf;proto=io.prometheus.write.v2.Request'

-- a request (snappy block) of symbols and series, built from the spec:
-- Request { repeated string symbols = 4; repeated TimeSeries timeseries = 5 }
CREATE FUNCTION v2_request(symbols text[], VARIADIC series bytea[])
	RETURNS bytea LANGUAGE sql IMMUTABLE AS $$
	SELECT snappy_literal(
		coalesce((SELECT string_agg(wire_field(4, convert_to(s, 'UTF8')), ''::bytea ORDER BY i)
				  FROM unnest(symbols) WITH ORDINALITY AS u(s, i)), '')
		|| coalesce((SELECT string_agg(wire_field(5, t), ''::bytea ORDER BY i)
					 FROM unnest(series) WITH ORDINALITY AS u(t, i)), ''))
$$;
-- TimeSeries.labels_refs = 1, packed
CREATE FUNCTION v2_refs(VARIADIC refs int[]) RETURNS bytea
	LANGUAGE sql IMMUTABLE AS $$
	SELECT wire_field(1, coalesce((SELECT string_agg(wire_varint(r), ''::bytea ORDER BY i)
		FROM unnest(refs) WITH ORDINALITY AS u(r, i)), ''))
$$;
-- TimeSeries.samples = 2: Sample { double value = 1; int64 timestamp = 2 }
CREATE FUNCTION v2_sample(ms bigint, value float8) RETURNS bytea
	LANGUAGE sql IMMUTABLE AS $$
	SELECT wire_field(2, '\x09'::bytea
		|| decode((SELECT string_agg(lpad(to_hex(get_byte(float8send(value), i)), 2, '0'), '' ORDER BY i DESC)
				   FROM generate_series(0, 7) i), 'hex')
		|| '\x10'::bytea || wire_varint(ms))
$$;
-- TimeSeries.metadata = 5: Metadata { type = 1; help_ref = 3; unit_ref = 4 }
CREATE FUNCTION v2_metadata(type int, help_ref int, unit_ref int) RETURNS bytea
	LANGUAGE sql IMMUTABLE AS $$
	SELECT wire_field(5, '\x08'::bytea || wire_varint(type) || '\x18'::bytea
		|| wire_varint(help_ref) || '\x20'::bytea || wire_varint(unit_ref))
$$;
-- the SQLSTATE and message of writing a request, or ok and the headers
CREATE FUNCTION try_v2(request bytea, content_type text) RETURNS text
	LANGUAGE plpgsql AS $$
BEGIN
	PERFORM set_config('response.headers', '', true);
	PERFORM prom_remote_write(request, content_type);
	RETURN 'ok ' || current_setting('response.headers');
EXCEPTION WHEN others THEN
	RETURN SQLSTATE || ': ' || SQLERRM;
END $$;

-- symbols: 0 "", 1 __name__, 2 v2_temp, 3 host, 4 a, 5 b, 6 help, 7 celsius
\set syms '''{"",__name__,v2_temp,host,a,b,"Temperature.",celsius}'''
-- two series of a new metric, with metadata: written, counted
SELECT try_v2(v2_request(:syms,
	v2_refs(1, 2, 3, 4) || v2_sample(1000, 1.5) || v2_sample(2000, 2.5) || v2_metadata(2, 6, 7),
	v2_refs(3, 5, 1, 2) || v2_sample(1000, -0.25)), :'v2');
SELECT * FROM wv2.v2_temp ORDER BY host, ts;
SELECT metric, type, help, unit FROM prom_metric_metadata WHERE metric = 'v2_temp';

-- each refusal: class 22, nothing written (the count stays 3)
SELECT try_v2(v2_request(:syms, v2_refs(1, 2, 3, 99) || v2_sample(3000, 1)), :'v2');
SELECT try_v2(v2_request(:syms, v2_refs(1, 2, 3) || v2_sample(3000, 1)), :'v2');
SELECT try_v2(v2_request('{x,__name__,v2_temp}', v2_refs(1, 2) || v2_sample(3000, 1)), :'v2');
SELECT try_v2(v2_request(:syms, v2_refs(1, 2) || v2_sample(3000, 1) || wire_field(3, '')), :'v2');
SELECT try_v2(v2_request(:syms, v2_refs(3, 4) || v2_sample(3000, 1)), :'v2');
SELECT try_v2(v2_request(:syms, v2_refs(1, 2, 3, 4, 3, 5) || v2_sample(3000, 1)), :'v2');
SELECT try_v2(v2_request(:syms, v2_refs(1, 2) || v2_sample(3000, 1) || v2_metadata(9, 0, 0)), :'v2');
SELECT try_v2(v2_request(:syms, v2_refs(1, 2) || v2_sample(3000, 1) || v2_metadata(1, 60, 0)), :'v2');
SELECT try_v2(snappy_literal(wire_field(4, '') || wire_field(4, '\xff'::bytea)
	|| wire_field(5, v2_refs(1, 1) || v2_sample(3000, 1))), :'v2');
-- not a Request (a field 5 whose length runs past the end): 22P03
SELECT try_v2(snappy_literal(decode('2aff', 'hex')), :'v2');
-- a valid series beside an invalid one: nothing of the request written
SELECT try_v2(v2_request(:syms, v2_refs(1, 2, 3, 4) || v2_sample(3000, 1),
	v2_refs(1, 2, 3, 4, 3) || v2_sample(3000, 1)), :'v2');
SELECT count(*) FROM wv2.v2_temp;

-- symbols are checked when a reference uses them, once each for all the
-- references: an unreferenced invalid one is no error; text valid as a
-- label value is still checked as a label name; and a 1 MB symbol that
-- 2,000 series refer to is read once, not once a reference (4 GB)
SELECT try_v2(snappy_literal(wire_field(4, '') || wire_field(4, '\xff'::bytea)
	|| wire_field(4, '__name__') || wire_field(4, 'v2_temp') || wire_field(4, 'host')
	|| wire_field(5, v2_refs(2, 3, 4, 3) || v2_sample(3000, 1))), :'v2');
SELECT try_v2(v2_request('{"",__name__,v2_temp,host,x-y}',
	v2_refs(1, 2, 3, 4) || v2_sample(4000, 1),
	v2_refs(1, 2, 4, 2) || v2_sample(4000, 1)), :'v2');
-- a snappy block of data as literals of at most 65536 bytes
CREATE FUNCTION snappy_literals(data bytea) RETURNS bytea
	LANGUAGE sql IMMUTABLE AS $$
	SELECT wire_varint(length(data)) || string_agg('\xf4'::bytea
		|| set_byte(set_byte('\x0000'::bytea, 0, (n - 1) % 256), 1, (n - 1) / 256)
		|| substr(data, o, n), ''::bytea ORDER BY o)
	FROM (SELECT o, least(65536, length(data) - o + 1) AS n
		  FROM generate_series(1, length(data), 65536) o) AS chunks
$$;
-- symbols: 0 "", 1 __name__, 2 v2_big, 3 trace_id, 4 a 1 MB value, 5 1x
CREATE TEMP TABLE big_request AS
SELECT wire_field(4, '') || wire_field(4, '__name__') || wire_field(4, 'v2_big')
	|| wire_field(4, 'trace_id') || wire_field(4, convert_to(repeat('a', 1000000), 'UTF8'))
	|| wire_field(4, '1x') AS symbols,
	(SELECT string_agg(wire_field(5, v2_refs(1, 2, 3, 4) || v2_sample(i * 1000, i)),
					   ''::bytea ORDER BY i)
	 FROM generate_series(1, 2000) i) AS labelled,
	(SELECT string_agg(wire_field(5, v2_refs(1, 2) || v2_sample(i * 1000, i)
							|| wire_field(4, v2_refs(3, 4))), ''::bytea ORDER BY i)
	 FROM generate_series(1, 2000) i) AS exemplified;
-- as a label value of 2,000 series and a last one with an invalid metric
-- name: refused, naming that series (the 2 GB of values the series borrow
-- are charged to promread.max_memory, raised for this)
SET promread.max_memory = '3GB';
SELECT try_v2(snappy_literals(symbols || labelled
	|| wire_field(5, v2_refs(1, 5) || v2_sample(1000, 1))), :'v2')
FROM big_request;
-- the same 2,000 series within 1 GB (the default): refused, as writing
-- would copy the value for each series
SET promread.max_memory = '1GB';
SELECT try_v2(snappy_literals(symbols || labelled), :'v2') FROM big_request;
RESET promread.max_memory;
-- as an exemplar label value of 2,000 series: the samples written, the
-- exemplars (over 128 characters) dropped
SELECT try_v2(snappy_literals(symbols || exemplified), :'v2') FROM big_request;
SELECT count(*), sum(value), min(ts), max(ts) FROM wv2.v2_big;
DROP TABLE big_request;

-- a native histogram (an empty one) of a float metric: the metric refused
-- (22023), nothing written (suite write_histograms writes histograms)
SELECT try_v2(v2_request(:syms, v2_refs(1, 2) || wire_field(3, '')), :'v2');

-- an unknown proto: PT415, which PostgREST answers with 415
SELECT try_v2(v2_request(:syms, v2_refs(1, 2) || v2_sample(3000, 1)),
	'application/x-protobuf;proto=io.prometheus.write.v3.Request');
-- 1.0 by content type, by its absence and by default; its counts too
SELECT try_v2(prom_write_request('[{"labels": {"__name__": "v2_temp", "host": "c"}, "samples": [[5000, 7]]}]'),
	'application/x-protobuf;proto=prometheus.WriteRequest');
SELECT try_v2(prom_write_request('[{"labels": {"__name__": "v2_temp", "host": "c"}, "samples": [[6000, 8]]}]'),
	'application/x-protobuf');
SELECT prom_remote_write(prom_write_request('[{"labels": {"__name__": "v2_temp", "host": "c"}, "samples": [[7000, 9]]}]'));
SELECT prom_remote_write(NULL);
SELECT count(*) FROM wv2.v2_temp;

DELETE FROM prom_metric_metadata_catalog;
DROP SCHEMA wv2 CASCADE;
DROP FUNCTION try_v2, v2_request, v2_refs, v2_sample, v2_metadata, snappy_literals,
	wire_varint, snappy_literal, wire_field, wire_matcher, wire_query;

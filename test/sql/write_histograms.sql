-- Remote write of native histograms, exemplars and start timestamps, in
-- 1.0 (prom_write_request) and 2.0 (built here from the specification):
-- histograms of every kind stored bit for bit, histogram metrics created,
-- float and histogram samples never mixed in a metric, hostile histograms
-- refused with nothing written, exemplars stored beside created metrics
-- with their privileges, start timestamps dropped and counted, and every
-- count in the response headers.
SET timezone = 'UTC';
SET datestyle = 'ISO';
\set abs_srcdir `pwd` '/test'
\set wire_helpers :abs_srcdir '/fixtures/wire.sql'
\i :wire_helpers
CREATE SCHEMA wh;
SET promread.write_schema = wh;
-- the tables of row storage, which this suite inspects and alters
-- (write_chunks covers chunk storage, remote write's default)
SET promread.write_storage = rows;
\set v2 'application/x-protobuf;proto=io.prometheus.write.v2.Request'

-- The wire format, from the protobuf encoding document: a field's tag, a
-- double (fixed64, little-endian; "StaleNaN" and "NaN:0x..." give those
-- bits, which float8 input cannot), a zigzag varint (sint32, sint64).
CREATE FUNCTION wire_tag(number int, wiretype int) RETURNS bytea
	LANGUAGE sql IMMUTABLE AS $$ SELECT wire_varint(number * 8 + wiretype) $$;
CREATE FUNCTION wire_double(v jsonb) RETURNS bytea LANGUAGE sql IMMUTABLE AS $$
	SELECT decode((SELECT string_agg(substr(bits, 2 * i + 1, 2), '' ORDER BY i DESC)
				   FROM generate_series(0, 7) i), 'hex')
	FROM (SELECT CASE
		WHEN v #>> '{}' = 'StaleNaN' THEN '7ff0000000000002'
		WHEN v #>> '{}' LIKE 'NaN:0x%' THEN substr(v #>> '{}', 7)
		ELSE encode(float8send((v #>> '{}')::float8), 'hex') END) AS b(bits)
$$;
CREATE FUNCTION wire_zigzag(n numeric) RETURNS bytea LANGUAGE sql IMMUTABLE AS $$
	SELECT wire_varint(CASE WHEN n >= 0 THEN 2 * n ELSE -2 * n - 1 END)
$$;

-- A Histogram message from the JSON that prom_write_request takes (the
-- field names of prompb.Histogram), encoded field by field: so the same
-- JSON is written through 1.0 and 2.0.
CREATE FUNCTION v2_histogram(h jsonb) RETURNS bytea LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE
	m bytea := '';
	side text;
	n int;
BEGIN
	IF h ? 'count_int' THEN m := m || wire_tag(1, 0) || wire_varint((h->>'count_int')::numeric); END IF;
	IF h ? 'count_float' THEN m := m || wire_tag(2, 1) || wire_double(h->'count_float'); END IF;
	IF h ? 'sum' THEN m := m || wire_tag(3, 1) || wire_double(h->'sum'); END IF;
	IF h ? 'schema' THEN m := m || wire_tag(4, 0) || wire_zigzag((h->>'schema')::numeric); END IF;
	IF h ? 'zero_threshold' THEN m := m || wire_tag(5, 1) || wire_double(h->'zero_threshold'); END IF;
	IF h ? 'zero_count_int' THEN m := m || wire_tag(6, 0) || wire_varint((h->>'zero_count_int')::numeric); END IF;
	IF h ? 'zero_count_float' THEN m := m || wire_tag(7, 1) || wire_double(h->'zero_count_float'); END IF;
	FOREACH side IN ARRAY ARRAY['negative', 'positive'] LOOP
		n := CASE side WHEN 'negative' THEN 8 ELSE 11 END;
		m := m || coalesce((SELECT string_agg(wire_field(n, wire_tag(1, 0) || wire_zigzag((s->>0)::numeric)
				|| wire_tag(2, 0) || wire_varint((s->>1)::numeric)), ''::bytea ORDER BY i)
			FROM jsonb_array_elements(h->(side || '_spans')) WITH ORDINALITY AS u(s, i)), '');
		IF h ? (side || '_deltas') THEN
			m := m || wire_field(n + 1, coalesce((SELECT string_agg(wire_zigzag(d::numeric), ''::bytea ORDER BY i)
				FROM jsonb_array_elements_text(h->(side || '_deltas')) WITH ORDINALITY AS u(d, i)), ''));
		END IF;
		IF h ? (side || '_counts') THEN
			m := m || wire_field(n + 2, coalesce((SELECT string_agg(wire_double(c), ''::bytea ORDER BY i)
				FROM jsonb_array_elements(h->(side || '_counts')) WITH ORDINALITY AS u(c, i)), ''));
		END IF;
	END LOOP;
	IF h ? 'reset_hint' THEN m := m || wire_tag(14, 0) || wire_varint((h->>'reset_hint')::numeric); END IF;
	IF h ? 'timestamp' THEN m := m || wire_tag(15, 0) || wire_varint((h->>'timestamp')::numeric); END IF;
	IF h ? 'custom_values' THEN
		m := m || wire_field(16, coalesce((SELECT string_agg(wire_double(c), ''::bytea ORDER BY i)
			FROM jsonb_array_elements(h->'custom_values') WITH ORDINALITY AS u(c, i)), ''));
	END IF;
	IF h ? 'start_timestamp' THEN m := m || wire_tag(17, 0) || wire_varint((h->>'start_timestamp')::numeric); END IF;
	RETURN m;
END $$;

-- A 2.0 Request of symbols and series (as in suite write_v2).
CREATE FUNCTION v2_request(symbols text[], VARIADIC series bytea[])
	RETURNS bytea LANGUAGE sql IMMUTABLE AS $$
	SELECT snappy_literal(
		coalesce((SELECT string_agg(wire_field(4, convert_to(s, 'UTF8')), ''::bytea ORDER BY i)
				  FROM unnest(symbols) WITH ORDINALITY AS u(s, i)), '')
		|| coalesce((SELECT string_agg(wire_field(5, t), ''::bytea ORDER BY i)
					 FROM unnest(series) WITH ORDINALITY AS u(t, i)), ''))
$$;
CREATE FUNCTION v2_refs(VARIADIC refs int[]) RETURNS bytea LANGUAGE sql IMMUTABLE AS $$
	SELECT wire_field(1, coalesce((SELECT string_agg(wire_varint(r), ''::bytea ORDER BY i)
		FROM unnest(refs) WITH ORDINALITY AS u(r, i)), ''))
$$;
-- TimeSeries.histograms = 3, one field per histogram of a JSON array
CREATE FUNCTION v2_histograms(hs jsonb) RETURNS bytea LANGUAGE sql IMMUTABLE AS $$
	SELECT coalesce(string_agg(wire_field(3, v2_histogram(h)), ''::bytea ORDER BY i), '')
	FROM jsonb_array_elements(hs) WITH ORDINALITY AS u(h, i)
$$;
-- TimeSeries.samples = 2 with Sample.start_timestamp = 3
CREATE FUNCTION v2_sample(ms bigint, value float8, start_ms bigint) RETURNS bytea
	LANGUAGE sql IMMUTABLE AS $$
	SELECT wire_field(2, wire_tag(1, 1) || wire_double(to_jsonb(value))
		|| wire_tag(2, 0) || wire_varint(ms) || wire_tag(3, 0) || wire_varint(start_ms))
$$;
-- TimeSeries.exemplars = 4: Exemplar { labels_refs = 1; value = 2; timestamp = 3 }
CREATE FUNCTION v2_exemplar(refs int[], value float8, ms bigint) RETURNS bytea
	LANGUAGE sql IMMUTABLE AS $$
	SELECT wire_field(4, v2_refs(VARIADIC refs) || wire_tag(2, 1)
		|| wire_double(to_jsonb(value)) || wire_tag(3, 0) || wire_varint(ms))
$$;

-- Write a request; 'ok' and the response headers, 'refused' (a metric
-- refused: response.status 400) and the headers, or the SQLSTATE and
-- message of the request's refusal.
CREATE FUNCTION try_write(request bytea, content_type text DEFAULT NULL) RETURNS text
	LANGUAGE plpgsql AS $$
BEGIN
	PERFORM set_config('response.headers', '', true);
	PERFORM set_config('response.status', '', true);
	PERFORM prom_remote_write(request, content_type);
	RETURN CASE current_setting('response.status') WHEN '400' THEN 'refused ' ELSE 'ok ' END
		|| current_setting('response.headers');
EXCEPTION WHEN others THEN
	RETURN SQLSTATE || ': ' || SQLERRM;
END $$;

-- Histograms of every kind, keyed by name: integer (exponential, both
-- signs, a zero bucket, schema -4 and 8), float, custom buckets of both
-- kinds, a gauge histogram, a stale marker (sum 0x7ff0000000000002), NaN
-- and infinite sums, an empty one, and counts past 2^53.
CREATE TABLE kinds (name text PRIMARY KEY, h jsonb);
INSERT INTO kinds VALUES
 ('int', '{"count_int": 13, "sum": 18.4, "schema": 1, "zero_threshold": 0.001, "zero_count_int": 2,
   "positive_spans": [[0, 2], [1, 2]], "positive_deltas": [1, 1, -1, 0],
   "negative_spans": [[-2, 1], [2, 1]], "negative_deltas": [2, 2], "reset_hint": 2}'),
 ('int_schemas', '{"count_int": 3, "sum": -0.5, "schema": -4, "positive_spans": [[-3, 1]], "positive_deltas": [3], "reset_hint": 1}'),
 ('int_fine', '{"count_int": 1, "sum": 1e-300, "schema": 8, "negative_spans": [[2147483646, 1]], "negative_deltas": [1]}'),
 ('float', '{"count_float": 7.5, "sum": -3.25, "schema": 3, "zero_threshold": 1e-128, "zero_count_float": 0.5,
   "positive_spans": [[0, 3]], "positive_counts": [1.25, 0, 4.75], "negative_spans": [[0, 1]], "negative_counts": [1], "reset_hint": 3}'),
 ('custom_int', '{"count_int": 6, "sum": 100, "schema": -53, "custom_values": [-1, 0.5, 10, 1e308],
   "positive_spans": [[0, 2], [2, 1]], "positive_deltas": [2, 1, -2]}'),
 ('custom_float', '{"count_float": 2.5, "sum": 4, "schema": -53, "custom_values": [1],
   "positive_spans": [[1, 1]], "positive_counts": [2.5]}'),
 ('stale', '{"count_int": 0, "sum": "StaleNaN", "schema": 0}'),
 ('stale_float', '{"count_float": 0, "sum": "StaleNaN", "schema": 0}'),
 ('nan_sum', '{"count_float": 1, "sum": "NaN", "schema": 0, "positive_spans": [[0, 1]], "positive_counts": ["NaN"]}'),
 ('inf_sum', '{"count_int": 1, "sum": "-Inf", "schema": 0, "zero_count_int": 1}'),
 ('empty', '{}'),
 ('huge', '{"count_int": 9007199254740993, "sum": 1, "schema": 0, "positive_spans": [[0, 1]], "positive_deltas": [9007199254740993]}');

-- 1.0: a series per kind of one new metric, created with a prom_histogram
-- value column, the counts in the headers
SELECT try_write(prom_write_request(jsonb_agg(jsonb_build_object(
	'labels', jsonb_build_object('__name__', 'wh_v1', 'kind', name),
	'histograms', jsonb_build_array(h || '{"timestamp": 1700000000000}')) ORDER BY name)))
FROM kinds;
\d wh.wh_v1
SELECT metric, relation, value_column FROM prom_metrics WHERE metric = 'wh_v1';
-- each as its text: every field as sent
SELECT kind, ts, value FROM wh.wh_v1 ORDER BY kind;
-- 2.0: the same JSON encoded here from the specification; the same values
-- bit for bit (prom_histogram's = compares bits)
SELECT try_write(v2_request(ARRAY['', '__name__', 'wh_v2', 'kind'] || array_agg(name ORDER BY name),
	VARIADIC array_agg(v2_refs(1, 2, 3, 3 + row_number) || v2_histograms(
		jsonb_build_array(h || '{"timestamp": 1700000000000}'))
		ORDER BY name)), :'v2')
FROM (SELECT name, h, row_number() OVER (ORDER BY name)::int FROM kinds) k;
SELECT count(*) AS kinds, count(*) FILTER (WHERE a.value = b.value) AS equal,
	count(*) FILTER (WHERE a.value::text = b.value::text) AS equal_text,
	count(*) FILTER (WHERE a.value = a.value::text::prom_histogram) AS text_reads_back
FROM wh.wh_v1 a JOIN wh.wh_v2 b USING (kind, ts);
-- written through INSERT rather than COPY (a value column of a domain over
-- prom_histogram, which COPY's binary input does not take): the same values
SELECT try_write(prom_write_request('[{"labels": {"__name__": "wh_dom", "kind": "x"}, "histograms": [{"timestamp": 1}]}]')) IS NOT NULL AS created;
CREATE DOMAIN wh.hist_domain AS prom_histogram CHECK (VALUE IS NOT NULL);
ALTER TABLE wh.wh_dom ALTER COLUMN value TYPE wh.hist_domain;
SELECT try_write(prom_write_request(jsonb_agg(jsonb_build_object(
	'labels', jsonb_build_object('__name__', 'wh_dom', 'kind', name),
	'histograms', jsonb_build_array(h || '{"timestamp": 1700000000000}')) ORDER BY name)))
FROM kinds;
SELECT count(*) AS kinds, count(*) FILTER (WHERE a.value = b.value) AS equal
FROM wh.wh_v1 a JOIN wh.wh_dom b USING (kind, ts);
-- the stale marker's sum kept as its bits
SELECT value::text::jsonb->>'sum' AS stale_sum FROM wh.wh_v2 WHERE kind = 'stale';

-- the same request again: the same rows again, as float writes (a read
-- keeps the last of equal times), and the same counts
SELECT try_write(prom_write_request(jsonb_agg(jsonb_build_object(
	'labels', jsonb_build_object('__name__', 'wh_v1', 'kind', name),
	'histograms', jsonb_build_array(h || '{"timestamp": 1700000000000}')) ORDER BY name)))
FROM kinds;
SELECT count(*) AS twice, count(DISTINCT (kind, ts, value::text)) AS distinct_rows FROM wh.wh_v1;

-- mixing: a float sample of a histogram metric, a histogram of a float
-- metric, both in one metric of 1.0: that metric refused (22023), the
-- others written
SELECT try_write(prom_write_request('[
  {"labels": {"__name__": "wh_v1", "kind": "x"}, "samples": [[1700000060000, 1]]},
  {"labels": {"__name__": "wh_float"}, "samples": [[1700000060000, 1]]}]'));
SELECT try_write(prom_write_request('[
  {"labels": {"__name__": "wh_float"}, "histograms": [{"timestamp": 1700000120000}]}]'));
SELECT try_write(prom_write_request('[
  {"labels": {"__name__": "wh_mixed", "a": "1"}, "samples": [[1700000060000, 1]]},
  {"labels": {"__name__": "wh_mixed", "a": "2"}, "histograms": [{"timestamp": 1700000060000}]}]'));
SELECT count(*) AS unchanged FROM wh.wh_v1;
SELECT count(*) AS one FROM wh.wh_float;
SELECT to_regclass('wh.wh_mixed') AS not_created;
-- 2.0: a series of both samples and histograms refuses the request whole
SELECT try_write(v2_request('{"",__name__,wh_v2,wh_float}',
	v2_refs(1, 3) || v2_sample(1700000180000, 2, 0),
	v2_refs(1, 2) || v2_sample(1700000180000, 1, 0) || v2_histograms('[{"timestamp": 1700000180000}]')), :'v2');
SELECT count(*) AS still_one FROM wh.wh_float;

-- hostile histograms: each refuses the request (22023), nothing written
CREATE TABLE hostile (name text, h jsonb);
INSERT INTO hostile VALUES
 ('spans past the buckets', '{"count_int": 1, "positive_spans": [[0, 3]], "positive_deltas": [1]}'),
 ('buckets past the spans', '{"count_int": 2, "positive_spans": [[0, 1]], "positive_deltas": [1, 0]}'),
 ('a huge span', '{"count_int": 1, "positive_spans": [[0, 4294967295]], "positive_deltas": [1]}'),
 ('negative offset later', '{"count_int": 2, "positive_spans": [[0, 1], [-1, 1]], "positive_deltas": [1, 0]}'),
 ('schema 9', '{"schema": 9}'),
 ('schema -5', '{"schema": -5}'),
 ('schema 2^31 - 1', '{"schema": 2147483647}'),
 ('schema -53 wrapped', '{"schema": 65483}'),
 ('integer with counts', '{"count_int": 1, "positive_spans": [[0, 1]], "positive_counts": [1]}'),
 ('integer with float zero count', '{"count_int": 1, "zero_count_float": 1}'),
 ('float with deltas', '{"count_float": 1, "positive_spans": [[0, 1]], "positive_deltas": [1]}'),
 ('float with integer zero count', '{"count_float": 1, "zero_count_int": 1}'),
 ('no count but float buckets', '{"positive_spans": [[0, 1]], "positive_counts": [1]}'),
 ('count not the buckets''', '{"count_int": 5, "positive_spans": [[0, 1]], "positive_deltas": [1]}'),
 ('negative bucket', '{"count_int": 0, "positive_spans": [[0, 2]], "positive_deltas": [1, -2]}'),
 ('negative float count', '{"count_float": -1}'),
 ('reset hint 4', '{"reset_hint": 4}'),
 ('custom bounds not rising', '{"schema": -53, "custom_values": [2, 1]}'),
 ('custom with negative buckets', '{"schema": -53, "count_int": 1, "negative_spans": [[0, 1]], "negative_deltas": [1]}'),
 ('custom bounds with exponential schema', '{"schema": 0, "custom_values": [1]}');
SELECT name, try_write(prom_write_request(jsonb_build_array(jsonb_build_object(
	'labels', '{"__name__": "wh_hostile"}'::jsonb,
	'histograms', jsonb_build_array(h || '{"timestamp": 1700000000000}'))))) AS v1,
	try_write(v2_request('{"",__name__,wh_hostile}', v2_refs(1, 2)
		|| v2_histograms(jsonb_build_array(h || '{"timestamp": 1700000000000}'))), :'v2') = 
	try_write(prom_write_request(jsonb_build_array(jsonb_build_object(
	'labels', '{"__name__": "wh_hostile"}'::jsonb,
	'histograms', jsonb_build_array(h || '{"timestamp": 1700000000000}'))))) AS v2_same
FROM hostile ORDER BY name;
SELECT to_regclass('wh.wh_hostile') AS nothing_created;
-- a valid histogram beside a hostile one: nothing of the request written
SELECT try_write(prom_write_request('[
  {"labels": {"__name__": "wh_v1", "kind": "good"}, "histograms": [{"timestamp": 1700000240000}]},
  {"labels": {"__name__": "wh_v1", "kind": "bad"}, "histograms": [{"timestamp": 1700000240000, "schema": 99}]}]'));
SELECT count(*) AS unchanged FROM wh.wh_v1;
-- more buckets than promread.max_histogram_buckets: refused before the
-- value is built; a million-bucket histogram within promread.max_memory
-- refused too, not an OOM
SET promread.max_histogram_buckets = 3;
SELECT try_write(prom_write_request('[{"labels": {"__name__": "wh_v1", "kind": "big"},
  "histograms": [{"timestamp": 1, "count_int": 4, "positive_spans": [[0, 4]], "positive_deltas": [1, 0, 0, 0]}]}]'));
RESET promread.max_histogram_buckets;
SELECT try_write(prom_write_request(jsonb_build_array(jsonb_build_object(
	'labels', '{"__name__": "wh_v1", "kind": "million"}'::jsonb,
	'histograms', jsonb_build_array(jsonb_build_object('timestamp', 1, 'count_int', 1000000,
		'positive_spans', '[[0, 1000000]]'::jsonb,
		'positive_deltas', (SELECT jsonb_agg(CASE WHEN i = 1 THEN 1 ELSE 0 END) FROM generate_series(1, 1000000) i)))))));
SET promread.max_memory = '2MB';
SELECT try_write(prom_write_request(jsonb_build_array(jsonb_build_object(
	'labels', '{"__name__": "wh_v1", "kind": "million"}'::jsonb,
	'histograms', (SELECT jsonb_agg(jsonb_build_object('timestamp', t, 'count_int', 1000,
		'positive_spans', '[[0, 1000]]'::jsonb,
		'positive_deltas', (SELECT jsonb_agg(CASE WHEN i = 1 THEN 1 ELSE 0 END) FROM generate_series(1, 1000) i)))
		FROM generate_series(1, 300) t)))));
RESET promread.max_memory;
SELECT count(*) AS unchanged FROM wh.wh_v1;

-- a table a user registered with a prom_histogram value column takes
-- histograms (and refuses float samples); it has no exemplar table: its
-- exemplars are dropped and not counted
CREATE TABLE wh.user_hist (t timestamptz, h prom_histogram, job text);
SELECT prom_register('wh.user_hist', 'wh_user_hist');
SELECT try_write(prom_write_request('[{"labels": {"__name__": "wh_user_hist", "job": "j"},
  "histograms": [{"timestamp": 1700000000000, "count_int": 1, "zero_count_int": 1}],
  "exemplars": [{"labels": {"trace_id": "t1"}, "value": 0.1, "timestamp": 1700000000000}]}]'));
SELECT try_write(prom_write_request('[{"labels": {"__name__": "wh_user_hist", "job": "j"},
  "samples": [[1700000001000, 1]]}]'));
SELECT t, h, job FROM wh.user_hist;
-- a metric a user registered has no exemplar table: its samples written,
-- its exemplars dropped and not counted
CREATE TABLE wh.user_float (t timestamptz, v float8, job text);
SELECT prom_register('wh.user_float', 'wh_user', 't', 'v', '{job}');
SELECT try_write(prom_write_request('[{"labels": {"__name__": "wh_user", "job": "j"},
  "samples": [[1700000000000, 1]],
  "exemplars": [{"labels": {"trace_id": "t1"}, "value": 0.1, "timestamp": 1700000000000}]}]'));
SELECT t, v, job FROM wh.user_float;

-- exemplars: 1.0 and 2.0, of float and histogram metrics, stored beside
-- the metrics remote write created, with the series' labels
SELECT try_write(prom_write_request('[
  {"labels": {"__name__": "wh_float", "job": "a"}, "samples": [[1700000300000, 2]],
   "exemplars": [{"labels": {"trace_id": "abc", "span_id": "1"}, "value": 1.5, "timestamp": 1700000299000},
                 {"value": "StaleNaN", "timestamp": 1700000299500}]},
  {"labels": {"__name__": "wh_v1", "kind": "int"}, "histograms": [{"timestamp": 1700000300000}],
   "exemplars": [{"labels": {"trace_id": "def"}, "value": 0.25, "timestamp": 1700000300000}]}]'));
SELECT try_write(v2_request('{"",__name__,wh_v2,kind,float,trace_id,xyz}',
	v2_refs(1, 2, 3, 4) || v2_histograms('[{"timestamp": 1700000300000, "count_float": 0}]')
		|| v2_exemplar('{5,6}', 3.5, 1700000300000),
	-- exemplars without a sample
	v2_refs(1, 2, 3, 4) || v2_exemplar('{}', -1, 1700000300001)), :'v2');
SELECT * FROM prom_exemplars ORDER BY metric;
SELECT ts, value, series, labels FROM wh."wh_float#exemplars" ORDER BY ts;
SELECT ts, value, series, labels FROM wh."wh_v1#exemplars" ORDER BY ts;
SELECT ts, value, series, labels FROM wh."wh_v2#exemplars" ORDER BY ts;
-- the stale marker's bits kept
SELECT encode(float8send(value), 'hex') FROM wh."wh_float#exemplars" WHERE labels = '{}';
-- sent again: the same exemplars, counted as written again
SELECT try_write(v2_request('{"",__name__,wh_v2,kind,float,trace_id,xyz}',
	v2_refs(1, 2, 3, 4) || v2_exemplar('{5,6}', 3.5, 1700000300000)), :'v2');
SELECT count(*) AS two FROM wh."wh_v2#exemplars";
-- exemplars Prometheus drops (label names and values past 128 characters,
-- an invalid or repeated label name): dropped with a NOTICE, not counted
SELECT try_write(prom_write_request(jsonb_build_array(jsonb_build_object(
	'labels', '{"__name__": "wh_float", "job": "a"}'::jsonb,
	'exemplars', jsonb_build_array(
		jsonb_build_object('labels', jsonb_build_object('trace_id', repeat('é', 120)), 'value', 1, 'timestamp', 1),
		jsonb_build_object('labels', jsonb_build_object('trace_id', repeat('é', 121)), 'value', 2, 'timestamp', 2),
		jsonb_build_object('labels', '{"0bad": "x"}'::jsonb, 'value', 3, 'timestamp', 3))))));
SELECT try_write(v2_request('{"",__name__,wh_float,a}',
	v2_refs(1, 2) || v2_exemplar('{3,3,3,3}', 4, 4)), :'v2');
SELECT value, length(labels->>'trace_id') FROM wh."wh_float#exemplars" WHERE ts < '1971-01-01' ORDER BY ts;

-- exemplar privileges: the exemplar table is the owner's, as the metric's
-- table; a role that may not read the samples may not read the exemplars
SELECT relname, pg_get_userbyid(relowner) AS owner, relacl
FROM pg_class WHERE relnamespace = 'wh'::regnamespace AND relname IN ('wh_float', 'wh_float#exemplars')
ORDER BY relname;
CREATE ROLE wh_reader;
CREATE ROLE wh_writer;
GRANT USAGE ON SCHEMA wh TO wh_reader, wh_writer;
SET ROLE wh_reader;
SELECT count(*) FROM wh."wh_float#exemplars";
RESET ROLE;
-- a metric gets its exemplar table with its first exemplar, with the
-- privileges its table has then, not the schema's defaults
ALTER DEFAULT PRIVILEGES IN SCHEMA wh GRANT SELECT ON TABLES TO wh_reader;
SELECT try_write(prom_write_request('[{"labels": {"__name__": "wh_granted"}, "samples": [[1700000400000, 1]]}]')) IS NOT NULL AS written;
SELECT count(*) AS no_exemplar_table_yet FROM prom_exemplars WHERE metric = 'wh_granted';
REVOKE SELECT ON wh.wh_granted FROM wh_reader;
GRANT INSERT ON wh.wh_granted TO wh_writer;
SELECT try_write(prom_write_request('[{"labels": {"__name__": "wh_granted"}, "samples": [[1700000401000, 2]],
  "exemplars": [{"value": 2, "timestamp": 1700000401000}]}]'));
ALTER DEFAULT PRIVILEGES IN SCHEMA wh REVOKE SELECT ON TABLES FROM wh_reader;
-- (the grants to others: the owner's own privileges differ between majors)
SELECT relname, array(SELECT format('%s=%s', pg_get_userbyid(a.grantee), a.privilege_type)
	FROM aclexplode(relacl) a WHERE a.grantee <> relowner ORDER BY 1) AS grants
FROM pg_class
WHERE relnamespace = 'wh'::regnamespace AND relname IN ('wh_granted', 'wh_granted#exemplars')
ORDER BY relname;
SELECT count(DISTINCT relacl::text) = 1 AS same_privileges FROM pg_class
WHERE relnamespace = 'wh'::regnamespace AND relname IN ('wh_granted', 'wh_granted#exemplars');
-- a writer that may insert samples but does not own the table: the samples
-- written, the exemplars not counted, and no exemplar table made for them
GRANT INSERT ON wh.wh_float TO wh_writer;
SET ROLE wh_writer;
SELECT try_write(prom_write_request('[{"labels": {"__name__": "wh_float", "job": "a"}, "samples": [[1700000400000, 3]],
  "exemplars": [{"value": 9, "timestamp": 1700000400000}]}]'));
RESET ROLE;
SELECT count(*) AS none FROM wh."wh_float#exemplars" WHERE value = 9;
-- registering the metric again forgets its exemplar table; dropping a
-- metric's table drops its exemplars
SELECT prom_register('wh.wh_float');
SELECT metric FROM prom_exemplars ORDER BY metric;
DROP TABLE wh.wh_v2;
SELECT metric FROM prom_exemplars ORDER BY metric;
SELECT to_regclass('wh."wh_v2#exemplars"') AS dropped;

-- start timestamps: dropped, counted in X-Promread-Start-Timestamps-Dropped
-- and a NOTICE; the samples and histograms written
SELECT try_write(v2_request('{"",__name__,wh_float,wh_v1,kind,st}',
	v2_refs(1, 2) || v2_sample(1700000500000, 5, 1699999999000) || v2_sample(1700000501000, 6, 0),
	v2_refs(1, 3, 4, 5) || v2_histograms('[{"timestamp": 1700000500000, "start_timestamp": 1699999999000}]')), :'v2');
-- and the created_timestamp (field 6) of senders before Prometheus 3.8
SELECT try_write(v2_request('{"",__name__,wh_float}',
	v2_refs(1, 2) || v2_sample(1700000502000, 7, 0) || wire_tag(6, 0) || wire_varint(1699999999000)), :'v2');
SELECT ts, value FROM wh.wh_float WHERE ts >= '2023-11-14 22:21:40' ORDER BY ts;
SELECT kind, value FROM wh.wh_v1 WHERE kind = 'st';

DROP OWNED BY wh_reader, wh_writer;
DROP ROLE wh_reader;
DROP ROLE wh_writer;

DROP SCHEMA wh CASCADE;
DROP TABLE kinds, hostile;
DROP FUNCTION try_write, v2_request, v2_refs, v2_histograms, v2_histogram, v2_sample,
	v2_exemplar, wire_tag, wire_double, wire_zigzag,
	wire_varint, snappy_literal, wire_field, wire_matcher, wire_query;

-- Reading native histograms: the value column inferred at registration,
-- prom_series, both response types through prom_read_response_json, the
-- shard aggregates, and the refusals (an ambiguous value column, the memory
-- and frame limits, histograms through shards); test/scripts/
-- histogram-chunk-check checks every field of many more, bit for bit.
SET timezone = 'UTC';

-- Registration: a prom_histogram column is a value column, inferred as a
-- float8 one is; a relation with both must name its value column.
CREATE TABLE hlat (t timestamptz, job text, h prom_histogram);
SELECT prom_register('hlat');
SELECT metric, value_column, label_columns FROM prom_metrics WHERE metric = 'hlat';
CREATE TABLE hboth (t timestamptz, job text, v float8, h prom_histogram);
SELECT prom_register('hboth');
SELECT prom_register('hboth', value_column => 'h');
SELECT value_column, label_columns FROM prom_metrics WHERE metric = 'hboth';
-- a domain over prom_histogram is inferred too, and read through its base
CREATE DOMAIN hsome_histogram AS prom_histogram;
CREATE TABLE hdom (t timestamptz, job text, h hsome_histogram);
SELECT prom_register('hdom');
-- a histogram column is no label and no time
CREATE TABLE hnot_time (t prom_histogram, v float8);
SELECT prom_register('hnot_time');
SELECT prom_register('hnot_time', time_column => 't');

INSERT INTO hlat VALUES
	('2024-01-01 00:00:00', 'a', '{"kind":"integer","schema":3,"zero_threshold":1e-128,"zero_count":2,"count":8,"sum":12.5,"positive_spans":[[0,2],[1,1]],"positive_deltas":[1,2,-1],"reset_hint":"unknown"}'),
	('2024-01-01 00:00:15', 'a', '{"kind":"integer","schema":3,"zero_threshold":1e-128,"zero_count":3,"count":10,"sum":14.5,"positive_spans":[[0,2],[1,1]],"positive_deltas":[2,1,-1],"reset_hint":"no"}'),
	-- a counter reset: the count goes down
	('2024-01-01 00:00:30', 'a', '{"kind":"integer","schema":3,"zero_threshold":1e-128,"zero_count":0,"count":1,"sum":0.5,"positive_spans":[[0,1]],"positive_deltas":[1],"reset_hint":"no"}'),
	-- a stale marker
	('2024-01-01 00:00:45', 'a', '{"kind":"integer","sum":"NaN:0x7ff0000000000002"}'),
	('2024-01-01 00:00:00', 'b', '{"kind":"float","schema":-53,"count":6,"sum":40,"positive_spans":[[0,2],[1,1]],"positive_counts":[1,2,3],"custom_values":[-5,0.5,10],"reset_hint":"gauge"}'),
	('2024-01-01 00:00:15', 'b', '{"kind":"float","schema":-53,"count":7,"sum":41,"positive_spans":[[0,2],[1,1]],"positive_counts":[2,2,3],"custom_values":[-5,0.5,10],"reset_hint":"gauge"}'),
	-- no value: no sample
	('2024-01-01 00:00:30', 'b', NULL);
INSERT INTO hdom VALUES ('2024-01-01 00:01:00', 'c', '{"count":1,"zero_count":1}'),
	-- two of one millisecond: the one read last is kept, as of floats
	('2024-01-01 00:00:30', 'c', '{"count":2,"zero_count":2}'),
	('2024-01-01 00:00:30', 'c', '{"count":3,"zero_count":3}');
INSERT INTO hboth VALUES ('2024-01-01 00:00:00', 'd', 1.5,
	'{"kind":"float","count":-0,"zero_threshold":-0,"sum":"-Inf"}');

-- prom_series: histograms for series of histograms, values for the others
CREATE TABLE hcpu (t timestamptz, host text, v float8);
SELECT prom_register('hcpu');
INSERT INTO hcpu VALUES ('2024-01-01 00:00:00', 'x', 0.25);
SELECT labels, ts, value, histograms
FROM prom_series('{__name__=~"hlat|hcpu|hdom|hboth"}', '2024-01-01', '2024-01-02');
SELECT labels, unnest(histograms)::text::jsonb ->> 'count' AS count
FROM prom_series('hlat', '2024-01-01', '2024-01-02');

-- SAMPLES answers: TimeSeries.histograms, every field as stored
SELECT prom_read_response_json(prom_remote_read(prom_read_request(
	'{__name__=~"hlat|hcpu"}', '2024-01-01', '2024-01-02')));
SELECT prom_read_response_json(prom_remote_read(prom_read_request(
	'{__name__=~"hdom|hboth"}', '2024-01-01', '2024-01-02')));

-- STREAMED_XOR_CHUNKS answers: HISTOGRAM and FLOAT_HISTOGRAM chunks, and
-- what a chunk carries of the hints: its first sample's from the chunk's
-- header (hlat's job a: unknown, then "yes" where the count went down,
-- which begins a chunk, then unknown for the stale marker, a chunk of its
-- own), "gauge" on every sample of a gauge's chunk, else unknown
SELECT prom_read_response_json(prom_remote_read(prom_read_request(
	'{__name__=~"hlat|hcpu|hdom|hboth"}', '2024-01-01', '2024-01-02',
	response_types => '{streamed_xor_chunks}')));

-- prom_explain is unchanged and works on a metric of histograms
SELECT count(*) > 0 FROM prom_explain('hlat', '2024-01-01', '2024-01-02');

-- The shard aggregates take histograms: the same answers as the scans'
SELECT prom_read_response_json(prom_read_response_agg(t, h, 'job', job, '__name__', 'hlat'))
	= prom_read_response_json(prom_remote_read(prom_read_request('hlat', '2024-01-01', '2024-01-02')))
FROM hlat;
SELECT prom_read_response_json(prom_chunked_response_agg(t, h, 'job', job, '__name__', 'hlat'))
	= prom_read_response_json(prom_remote_read(prom_read_request('hlat', '2024-01-01', '2024-01-02',
		response_types => '{streamed_xor_chunks}')))
FROM hlat;
SELECT prom_read_response_json(prom_chunked_response_agg(extract(epoch FROM t)::bigint * 1000, h, 'job', job))
FROM hlat WHERE job = 'b';

-- Limits: histograms count against promread.max_memory (53200) and a frame
-- against promread.max_frame_bytes (54000)
CREATE TABLE hwide (t timestamptz, h prom_histogram);
SELECT prom_register('hwide');
INSERT INTO hwide
SELECT '2024-01-01'::timestamptz + i * interval '1 s',
	('{"count":1000,"positive_spans":[[0,1000]],"positive_deltas":[1'
	 || repeat(',0', 999) || ']}')::prom_histogram
FROM generate_series(1, 300) i;
\set VERBOSITY terse
SET promread.max_memory = '1MB';
SELECT length(prom_remote_read(prom_read_request('hwide', '2024-01-01', '2024-01-02'))) > 0;
RESET promread.max_memory;
SET promread.max_frame_bytes = 1000;
SELECT length(prom_remote_read(prom_read_request('hwide', '2024-01-01', '2024-01-02',
	response_types => '{streamed_xor_chunks}'))) > 0;
RESET promread.max_frame_bytes;
\set VERBOSITY default
SELECT length(prom_remote_read(prom_read_request('hwide', '2024-01-01', '2024-01-02',
	response_types => '{streamed_xor_chunks}'))) > 0;

-- A relation of histograms with partitions on a server that lists promread
-- is refused: shards do not send histograms yet (0A000)
CREATE EXTENSION postgres_fdw;
DO $$
BEGIN
	EXECUTE format('CREATE SERVER regress_hr_loopback FOREIGN DATA WRAPPER postgres_fdw '
				   'OPTIONS (host %L, port %L, dbname %L, extensions %L)',
				   coalesce(nullif(split_part(current_setting('unix_socket_directories'), ',', 1), ''),
							'localhost'),
				   current_setting('port'), current_database(), 'promread');
	EXECUTE format('CREATE USER MAPPING FOR PUBLIC SERVER regress_hr_loopback '
				   'OPTIONS (user %L, password_required %L)', current_user, 'false');
END $$;
CREATE TABLE hsharded (t timestamptz, job text, h prom_histogram) PARTITION BY LIST (job);
CREATE TABLE hsharded_far_rows (t timestamptz, job text, h prom_histogram);
CREATE FOREIGN TABLE hsharded_far PARTITION OF hsharded FOR VALUES IN ('far')
	SERVER regress_hr_loopback OPTIONS (table_name 'hsharded_far_rows');
INSERT INTO hsharded_far_rows VALUES ('2024-01-01', 'far', '{"count":1,"zero_count":1}');
SELECT prom_register('hsharded');
\set VERBOSITY terse
SELECT prom_read_response_json(prom_remote_read(prom_read_request('hsharded', '2024-01-01', '2024-01-02')));
\set VERBOSITY default
SELECT prom_unregister('hsharded');
DROP TABLE hsharded, hsharded_far_rows;
DROP USER MAPPING FOR PUBLIC SERVER regress_hr_loopback;
DROP EXTENSION postgres_fdw CASCADE;

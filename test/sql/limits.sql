-- Limits: each one reached is an error with its SQLSTATE, and the backend
-- reads again at once.
SET timezone = 'UTC';
SET datestyle = 'ISO';
\set VERBOSITY sqlstate
CREATE TABLE one_row (t timestamptz, host text, v float8);
INSERT INTO one_row VALUES ('2024-01-01 00:00:01', 'a', 1), ('2024-01-01 00:00:02', 'a', 2),
	('2024-01-01 00:00:03', 'b', 3), ('2024-01-01 00:00:04', 'b', 4);
SELECT prom_register('one_row');

-- more than 65,535 metrics in one query (54000); a query of 65,535 is read
INSERT INTO prom_metric_catalog
	SELECT 'many_' || i, 'one_row', 't', 'v', '{host}' FROM generate_series(1, 65536) i;
SELECT prom_remote_read(prom_read_request('{__name__=~"many_.*"}', '2024-01-01', '2024-01-02'));
DELETE FROM prom_metric_catalog WHERE metric = 'many_65536';
SELECT jsonb_array_length(prom_read_response_json(prom_remote_read(prom_read_request(
	'{__name__=~"many_.*", host="b"}', '2024-01-01', '2024-01-02')))->'results'->0->'timeseries');
DELETE FROM prom_metric_catalog WHERE metric LIKE 'many\_%';

-- more than 65,535 lists of label names in one aggregate (54000)
SELECT length(prom_read_response_agg(t, v, 'l' || i, 'x'))
FROM generate_series(1, 65536) i, one_row WHERE host = 'a' AND v = 1;

-- promread.max_samples: in a read, in prom_series and in the aggregate
SET promread.max_samples = 3;
SELECT prom_remote_read(prom_read_request('one_row', '2024-01-01', '2024-01-02'));
SELECT * FROM prom_series('one_row', '2024-01-01', '2024-01-02');
SELECT prom_read_response_agg(t, v, '__name__', 'x') FROM one_row;
SET promread.max_samples = 4;
SELECT prom_read_response_json(prom_read_response_agg(t, v, '__name__', 'x')) FROM one_row;
SELECT labels, value FROM prom_series('one_row', '2024-01-01', '2024-01-02');
RESET promread.max_samples;

-- promread.max_memory: the series sets of a read
SET promread.max_memory = '1MB';
SELECT length(prom_read_response_agg(t, v, 'host', 'h' || i))
FROM generate_series(1, 100000) i, one_row;
RESET promread.max_memory;
SELECT labels, value FROM prom_series('one_row', '2024-01-01', '2024-01-02');

-- a selector holds at most 1,000 matchers, the metric name included, as a
-- remote-read query does (54000)
SELECT count(*) FROM prom_series('{' ||
	(SELECT string_agg('l' || i || '="x"', ',') FROM generate_series(1, 1000) i) || '}',
	'2024-01-01', '2024-01-02');
SELECT count(*) FROM prom_series('{' ||
	(SELECT string_agg('l' || i || '="x"', ',') FROM generate_series(1, 1001) i) || '}',
	'2024-01-01', '2024-01-02');
SELECT count(*) FROM prom_series('one_row{' ||
	(SELECT string_agg('l' || i || '="x"', ',') FROM generate_series(1, 1000) i) || '}',
	'2024-01-01', '2024-01-02');
SELECT prom_read_request('one_row{' ||
	(SELECT string_agg('l' || i || '="x"', ',') FROM generate_series(1, 1000) i) || '}',
	'2024-01-01', '2024-01-02');

-- the literal sets a selector's regex matchers keep (10,000 literals, about
-- 1.5 MB, each) count toward promread.max_memory (53200)
SET promread.max_memory = '1MB';
SELECT count(*) FROM prom_series('{' ||
	(SELECT string_agg('l=~"x{90}[0-9]{4}"', ',') FROM generate_series(1, 100)) || '}',
	'2024-01-01', '2024-01-02');
SELECT length(prom_read_request('{l=~"x{90}[0-9]{4}"}', '2024-01-01', '2024-01-02'));
RESET promread.max_memory;
SELECT count(*) FROM prom_series('{' ||
	(SELECT string_agg('l=~"x{90}[0-9]{4}"', ',') FROM generate_series(1, 3)) || '}',
	'2024-01-01', '2024-01-02');

DROP TABLE one_row;

-- Demo data: a day of 15-second samples for a few realistic metrics.
CREATE EXTENSION IF NOT EXISTS promread;

CREATE TYPE http_method AS ENUM ('GET', 'POST', 'PUT', 'DELETE');

-- a counter per host, cpu and mode
CREATE TABLE node_cpu_seconds_total (
	ts timestamptz NOT NULL, instance text NOT NULL, job text NOT NULL,
	cpu text NOT NULL, mode text NOT NULL, value double precision NOT NULL);
INSERT INTO node_cpu_seconds_total
	SELECT t, 'host-' || h || ':9100', 'node', c::text, m,
		extract(epoch FROM t - date_trunc('day', now()) + interval '1 day')
			* CASE m WHEN 'idle' THEN 0.7 WHEN 'user' THEN 0.2 ELSE 0.1 END
			* (1 + h * 0.01)
	FROM generate_series(date_trunc('minute', now()) - interval '1 day',
			date_trunc('minute', now()), interval '15 seconds') t,
		generate_series(1, 3) h, generate_series(0, 1) c,
		unnest(ARRAY['idle', 'user', 'system']) m;
CREATE INDEX ON node_cpu_seconds_total (ts);

-- a gauge per host; NULL where a host has no rack
CREATE TABLE node_memory_available_bytes (
	ts timestamptz NOT NULL, instance text NOT NULL, job text NOT NULL,
	rack text, value double precision NOT NULL);
INSERT INTO node_memory_available_bytes
	SELECT t, 'host-' || h || ':9100', 'node', CASE WHEN h < 3 THEN 'r' || h END,
		4e9 + 1e9 * sin(extract(epoch FROM t) / 3600 + h)
	FROM generate_series(date_trunc('minute', now()) - interval '1 day',
			date_trunc('minute', now()), interval '15 seconds') t,
		generate_series(1, 3) h;
CREATE INDEX ON node_memory_available_bytes (ts);

-- a counter with an enum label
CREATE TABLE http_requests_total (
	ts timestamptz NOT NULL, instance text NOT NULL, job text NOT NULL,
	method http_method NOT NULL, status text NOT NULL,
	value double precision NOT NULL);
INSERT INTO http_requests_total
	SELECT t, 'web-' || h || ':8080', 'web', m, s,
		floor(extract(epoch FROM t - (date_trunc('minute', now()) - interval '1 day'))
			* CASE s WHEN '200' THEN 5 ELSE 0.1 END
			* CASE m WHEN 'GET' THEN 1 ELSE 0.2 END * h)
	FROM generate_series(date_trunc('minute', now()) - interval '1 day',
			date_trunc('minute', now()), interval '15 seconds') t,
		generate_series(1, 2) h, unnest(enum_range(NULL::http_method)) m,
		unnest(ARRAY['200', '500']) s;
CREATE INDEX ON http_requests_total (ts);

SELECT prom_register('node_cpu_seconds_total');
SELECT prom_register('node_memory_available_bytes');
SELECT prom_register('http_requests_total');
ANALYZE;

-- The staleness marker that ends a native-histogram series: Prometheus
-- remote-writes it as a float sample (it logs the marker before its TSDB
-- turns it into a histogram's), in the request of the series' last
-- histograms or in a later one.  A histogram metric stores each as the
-- TSDB does, a histogram whose sum is the stale NaN, counted as a sample
-- written; any other float sample of a histogram metric is still refused.
SET timezone = 'UTC';
CREATE SCHEMA whs;
SET promread.write_schema = whs;
-- a write's status and its *-Written headers
CREATE FUNCTION write(request bytea) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
	PERFORM set_config('response.headers', '', true);
	PERFORM set_config('response.status', '', true);
	PERFORM prom_remote_write(request);
	RETURN CASE current_setting('response.status') WHEN '400' THEN 'refused ' ELSE 'ok ' END
		|| (SELECT string_agg(h::text, ' ') FROM jsonb_array_elements(
				current_setting('response.headers')::jsonb) AS u(h)
			WHERE h::text LIKE '%Written%');
END $$;

-- the marker beside the series' histogram, in one request: the metric is
-- created as a histogram metric
SELECT write(prom_write_request('[
  {"labels": {"__name__": "whs_h", "a": "1"},
   "histograms": [{"timestamp": 1700000000000, "count_int": 1, "sum": 0.5, "schema": 0,
                   "positive_spans": [[0, 1]], "positive_deltas": [1]}],
   "samples": [[1700000001000, "StaleNaN"]]}]'));
-- the marker alone, in a later request, and a float metric's marker beside it
SELECT write(prom_write_request('[
  {"labels": {"__name__": "whs_h", "a": "2"}, "samples": [[1700000002000, "StaleNaN"]]},
  {"labels": {"__name__": "whs_f"}, "samples": [[1700000002000, 1], [1700000003000, "StaleNaN"]]}]'));
SELECT ts, a, value::text FROM whs.whs_h ORDER BY ts;
SELECT ts, float8send(value) FROM whs.whs_f ORDER BY ts;
-- any other float sample of a histogram metric is refused, with the
-- histograms beside it, and nothing of the metric written
SELECT write(prom_write_request('[
  {"labels": {"__name__": "whs_h", "a": "3"}, "samples": [[1700000004000, 1]]}]'));
SELECT write(prom_write_request('[
  {"labels": {"__name__": "whs_h", "a": "4"},
   "histograms": [{"timestamp": 1700000005000, "count_int": 0, "sum": 0, "schema": 0}],
   "samples": [[1700000006000, "StaleNaN"], [1700000007000, "NaN"]]}]'));
SELECT count(*) AS still_three FROM whs.whs_h;

DROP SCHEMA whs CASCADE;
DROP FUNCTION write(bytea);

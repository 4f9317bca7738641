-- The prom_histogram type: its text form, read back bit for bit; its binary
-- form, read back through COPY (FORMAT binary) since the receive function
-- takes a message SQL cannot make; every refusal of Prometheus's validation
-- and of the text and binary forms, with its SQLSTATE; the size limit.

-- The SQLSTATE and message of an input's refusal, or 'accepted'.
CREATE FUNCTION refusal(input text) RETURNS text AS $$
BEGIN
	PERFORM input::prom_histogram;
	RETURN 'accepted';
EXCEPTION WHEN others THEN
	RETURN SQLSTATE || ' ' || SQLERRM;
END
$$ LANGUAGE plpgsql;

-- The value whose binary form is the bytes b: a COPY (FORMAT binary) of one
-- row of one column, written by printf (octal escapes, so every byte).
CREATE TABLE received_box (h prom_histogram);
CREATE FUNCTION received(b bytea) RETURNS prom_histogram AS $$
DECLARE
	copy bytea := '\x5047434f50590aff0d0a00'::bytea || '\x0000000000000000'::bytea
		|| '\x0001'::bytea || int4send(length(b)) || b || '\xffff'::bytea;
	command text;
	result prom_histogram;
BEGIN
	SELECT 'printf ''' || string_agg('\' || (get_byte(copy, i) >> 6)::text
			|| ((get_byte(copy, i) >> 3) & 7)::text || (get_byte(copy, i) & 7)::text,
			'' ORDER BY i) || ''''
		INTO command FROM generate_series(0, length(copy) - 1) i;
	TRUNCATE received_box;
	EXECUTE format('COPY received_box FROM PROGRAM %L (FORMAT binary)', command);
	SELECT h INTO result FROM received_box;
	RETURN result;
END
$$ LANGUAGE plpgsql;

-- The SQLSTATE and message of the refusal of a binary form, or 'accepted'.
CREATE FUNCTION binary_refusal(b bytea) RETURNS text AS $$
BEGIN
	PERFORM received(b);
	RETURN 'accepted';
EXCEPTION WHEN others THEN
	RETURN SQLSTATE || ' ' || SQLERRM;
END
$$ LANGUAGE plpgsql;

CREATE TABLE h (name text PRIMARY KEY, h prom_histogram);
INSERT INTO h VALUES
	-- Prometheus's own example: 2 in the zero bucket, 1, 3 and 2 above
	('integer', '{"kind":"integer","schema":3,"zero_threshold":1e-128,"zero_count":2,"count":8,"sum":12.5,"positive_spans":[[0,2],[1,1]],"positive_deltas":[1,2,-1],"negative_spans":[],"negative_deltas":[],"reset_hint":"unknown"}'),
	-- every default
	('empty', '{}'),
	-- keys in another order, both signs, a gap, a negative first offset
	('both signs', '{"reset_hint":"no","negative_deltas":[4,-4,1],"negative_spans":[[-2,1],[3,2]],"positive_deltas":[3],"positive_spans":[[-1,1]],"count":9,"zero_count":1,"schema":-4,"sum":-1.25,"zero_threshold":0.001}'),
	-- a NaN sum allows more observations than buckets hold
	('nan sum', '{"count":5,"sum":"NaN","positive_spans":[[0,1]],"positive_deltas":[2]}'),
	-- the stale marker and another NaN payload, -0, infinities, extremes
	('stale', '{"kind":"float","sum":"NaN:0x7ff0000000000002","count":"NaN:0xfff8000000000001","zero_threshold":-0,"zero_count":5e-324,"positive_spans":[[2147483646,1]],"positive_counts":[1.7976931348623157e308],"reset_hint":"gauge"}'),
	('float', '{"kind":"float","schema":8,"zero_threshold":2.938735877055719e-39,"zero_count":0.5,"count":"+Inf","sum":"-Inf","positive_spans":[[0,2]],"positive_counts":[0.1,"+Inf"],"negative_spans":[[5,1]],"negative_counts":[0.30000000000000004],"reset_hint":"yes"}'),
	('custom', '{"kind":"float","schema":-53,"count":6,"sum":40,"positive_spans":[[0,2],[1,1]],"positive_counts":[1,2,3],"custom_values":[-5,0.5,10]}'),
	('custom integer', '{"schema":-53,"count":4,"sum":1,"positive_spans":[[3,1]],"positive_deltas":[4],"custom_values":[1,2,3]}'),
	-- counts as large as uint64 and int64 hold
	('large', '{"count":18446744073709551615,"sum":"NaN","positive_spans":[[0,2]],"positive_deltas":[9223372036854775807,0]}');

-- the text form, keys in order, and read back the same bit for bit
SELECT name, h FROM h ORDER BY name;
SELECT name, h::text::prom_histogram = h AS same, h::text::prom_histogram::text = h::text AS same_text
FROM h ORDER BY name;
-- valid JSON: it casts to jsonb
SELECT name, h::text::jsonb -> 'sum' AS sum, jsonb_typeof(h::text::jsonb -> 'positive_spans') AS spans
FROM h ORDER BY name;
-- the same through the binary form; the stale marker's bits are kept
SELECT name, received(prom_histogram_send(h)) = h AS same FROM h ORDER BY name;
SELECT received(prom_histogram_send(h)) FROM h WHERE name = 'stale';
SELECT encode(prom_histogram_send(h), 'hex') FROM h WHERE name = 'integer';

-- equality is bit for bit, and hashes
SELECT a.name, b.name FROM h a JOIN h b ON a.h = b.h ORDER BY 1, 2;
SELECT count(*) FROM h a JOIN h b ON a.h <> b.h;
SELECT '{"kind":"float","sum":0}'::prom_histogram = '{"kind":"float","sum":-0}' AS zero_is_not_minus_zero,
	'{"kind":"float","sum":"NaN"}'::prom_histogram = '{"kind":"float","sum":"NaN"}' AS nan_is_nan,
	'{"kind":"float","sum":"NaN"}'::prom_histogram = '{"kind":"float","sum":"NaN:0x7ff0000000000002"}' AS nan_is_stale;
SET enable_sort = off;
SELECT count(*) FROM (SELECT h FROM (SELECT h FROM h UNION ALL SELECT h FROM h) s
	GROUP BY h HAVING count(*) = 2) g;
SELECT count(*) FROM (SELECT h FROM h UNION SELECT h FROM h) s;
RESET enable_sort;

-- refusals of the text form: 22P02, saying what is wrong
SELECT input, refusal(input) FROM (VALUES
	('not json'),
	('[1]'),
	('1'),
	('{"foo":1}'),
	('{"count":1,"count":1}'),
	('{"kind":"counter"}'),
	('{"kind":1}'),
	('{"kind":"float","positive_deltas":[1]}'),
	('{"kind":"integer","negative_counts":[1]}'),
	('{"schema":"3"}'),
	('{"schema":1.5}'),
	('{"schema":40000}'),
	('{"count":-1}'),
	('{"count":18446744073709551616}'),
	('{"count":1e3}'),
	('{"sum":"nan"}'),
	('{"sum":"Infinity"}'),
	('{"sum":"NaN:0x3ff0000000000000"}'),
	('{"sum":"NaN:0x7ff00000000002"}'),
	('{"sum":1e999}'),
	('{"sum":null}'),
	('{"sum":[1]}'),
	('{"sum":{"a":1}}'),
	('{"positive_spans":1}'),
	('{"positive_spans":[1]}'),
	('{"positive_spans":[[0]]}'),
	('{"positive_spans":[[0,1,2]]}'),
	('{"positive_spans":[[[0],1]]}'),
	('{"positive_spans":[[0,-1]]}'),
	('{"positive_spans":[[2147483648,1]]}'),
	('{"positive_deltas":[[1]]}'),
	('{"positive_deltas":[9223372036854775808]}'),
	('{"reset_hint":"maybe"}')
) v(input);

-- refusals of Prometheus's validation: 22023, saying what is wrong
SELECT input, refusal(input) FROM (VALUES
	('{"schema":9}'),
	('{"schema":-5}'),
	('{"schema":-52}'),
	('{"positive_spans":[[0,2]],"positive_deltas":[1],"count":1}'),
	('{"negative_spans":[[0,1]],"negative_deltas":[1,1],"count":3}'),
	('{"positive_spans":[[0,1],[-1,1]],"positive_deltas":[1,0],"count":2}'),
	('{"positive_spans":[[-2147483648,1]],"positive_deltas":[1],"count":1}'),
	('{"positive_spans":[[2147483647,2]],"positive_deltas":[1,0],"count":2}'),
	('{"positive_spans":[[0,2]],"positive_deltas":[1,-2],"count":0}'),
	('{"positive_spans":[[0,2]],"positive_deltas":[9223372036854775807,1],"sum":"NaN"}'),
	('{"positive_spans":[[0,2]],"positive_deltas":[9223372036854775807,0],"zero_count":18446744073709551615,"sum":"NaN"}'),
	('{"positive_spans":[[0,1]],"positive_deltas":[2],"count":3}'),
	('{"positive_spans":[[0,1]],"positive_deltas":[2],"count":1,"sum":"NaN"}'),
	('{"zero_count":1}'),
	('{"kind":"float","count":-1}'),
	('{"kind":"float","zero_count":-0.5}'),
	('{"kind":"float","positive_spans":[[0,1]],"positive_counts":[-1]}'),
	('{"kind":"float","negative_spans":[[0,1]],"negative_counts":["-Inf"]}'),
	('{"custom_values":[1]}'),
	('{"schema":-53,"custom_values":[1,"NaN"]}'),
	('{"schema":-53,"custom_values":[1,1]}'),
	('{"schema":-53,"custom_values":[2,1]}'),
	('{"schema":-53,"custom_values":[1,"+Inf"]}'),
	('{"schema":-53,"custom_values":[1],"positive_spans":[[-1,1]],"positive_deltas":[1],"count":1}'),
	('{"schema":-53,"custom_values":[1],"positive_spans":[[1,2]],"positive_deltas":[1,0],"count":2}'),
	('{"schema":-53,"custom_values":[1],"positive_spans":[[0,1]],"positive_deltas":[1],"count":2}'),
	('{"schema":-53,"zero_count":1,"count":1}'),
	('{"schema":-53,"zero_threshold":0.5}'),
	('{"schema":-53,"kind":"float","zero_count":"NaN"}'),
	('{"schema":-53,"negative_spans":[[0,0]]}'),
	('{"schema":-53,"kind":"float","negative_counts":[1]}')
) v(input);
-- what Prometheus accepts at the edges: a custom span reaching the implied
-- +Inf bucket, NaN float counts, a negative zero threshold, -Inf bounds
SELECT input, refusal(input) FROM (VALUES
	('{"schema":-53,"custom_values":[1],"positive_spans":[[1,1]],"positive_deltas":[1],"count":1}'),
	('{"kind":"float","count":"NaN","zero_count":"NaN","positive_spans":[[0,1]],"positive_counts":["NaN"]}'),
	('{"zero_threshold":-1}'),
	('{"schema":-53,"custom_values":["-Inf",0]}'),
	('{"positive_spans":[[0,0],[0,1]],"positive_deltas":[1],"count":1}')
) v(input);

-- the size limit: buckets of both signs, spans, custom values; a bomb is
-- refused before its elements are all read
SET promread.max_histogram_buckets = 3;
SELECT input, refusal(input) FROM (VALUES
	('{"positive_spans":[[0,2]],"positive_deltas":[1,0],"negative_spans":[[0,1]],"negative_deltas":[1],"count":3}'),
	('{"positive_spans":[[0,2]],"positive_deltas":[1,0],"negative_spans":[[0,2]],"negative_deltas":[1,0],"count":4}'),
	('{"positive_spans":[[0,0],[0,0]],"negative_spans":[[0,0],[0,0]]}'),
	('{"schema":-53,"custom_values":[1,2,3,4]}')
) v(input);
SELECT refusal('{"positive_deltas":[' || repeat('0,', 1000000) || '0]}');
SELECT binary_refusal(prom_histogram_send(h)) FROM h WHERE name = 'both signs';
RESET promread.max_histogram_buckets;

-- refusals of the binary form: the header's counts announce more than the
-- limit (refused before allocating) or than the message holds; bytes no
-- text form can make (an unknown kind or hint); Prometheus's validation
SELECT what, binary_refusal(b) FROM (
	SELECT 'bomb', overlay(prom_histogram_send(h) PLACING '\x7fffffff'::bytea FROM 13)
	FROM h WHERE name = 'integer'
	UNION ALL
	SELECT 'short', substring(prom_histogram_send(h) FROM 1 FOR length(prom_histogram_send(h)) - 1)
	FROM h WHERE name = 'integer'
	UNION ALL
	SELECT 'long', prom_histogram_send(h) || '\x00'::bytea FROM h WHERE name = 'integer'
	UNION ALL
	SELECT 'kind', overlay(prom_histogram_send(h) PLACING '\x02'::bytea FROM 1)
	FROM h WHERE name = 'integer'
	UNION ALL
	SELECT 'hint', overlay(prom_histogram_send(h) PLACING '\x04'::bytea FROM 2)
	FROM h WHERE name = 'integer'
	UNION ALL
	SELECT 'schema', overlay(prom_histogram_send(h) PLACING '\x0009'::bytea FROM 3)
	FROM h WHERE name = 'integer'
	UNION ALL
	SELECT 'count', overlay(prom_histogram_send(h) PLACING '\x0000000000000009'::bytea FROM 25)
	FROM h WHERE name = 'integer'
	UNION ALL
	SELECT 'empty', ''::bytea
) v(what, b);

-- PromQL's functions (test/scripts/histogram-functions-check compares them
-- with Prometheus on random histograms; these are fixed answers).  The
-- buckets with observations, as Prometheus's API lists them: deltas
-- resolved, the zero bucket between the signs, bounds of schema 3 (base
-- 2^(1/8)), a bound inside the zero bucket moved to its threshold (so a
-- bucket wholly inside it gets bounds in the wrong order, as in Prometheus)
SELECT * FROM prom_histogram_buckets('{"schema":3,"zero_threshold":1,"zero_count":2,"count":13,"sum":12.5,"positive_spans":[[-1,2],[1,1]],"positive_deltas":[1,2,-1],"negative_spans":[[0,2]],"negative_deltas":[5,-5]}');
SELECT name, b.* FROM h, prom_histogram_buckets(h) b
WHERE name IN ('both signs', 'custom', 'custom integer', 'empty') ORDER BY name, lower;
SELECT name, prom_histogram_count(h), prom_histogram_sum(h), prom_histogram_avg(h),
	prom_histogram_stddev(h), prom_histogram_stdvar(h)
FROM h ORDER BY name;
-- quantiles: exponential interpolation in exponential buckets, linear in
-- the zero bucket and custom buckets, -Inf below 0, +Inf above 1, NaN
SELECT name, q, prom_histogram_quantile(q, h)
FROM h, unnest('{-0.5,0,0.1,0.5,0.9,1,1.5,NaN}'::float8[]) q
WHERE name IN ('integer', 'both signs', 'custom', 'custom integer', 'empty', 'nan sum')
ORDER BY name, q;
-- fractions: infinite bounds, around zero, reversed, NaN
SELECT name, lower, upper, prom_histogram_fraction(lower, upper, h)
FROM h, (VALUES ('-Infinity'::float8, 'Infinity'::float8), ('-Infinity', 0), (0, 'Infinity'),
	(-0.5, 0.5), (1, 1.2), (2, 1), ('NaN', 1)) r(lower, upper)
WHERE name IN ('integer', 'both signs', 'custom', 'empty')
ORDER BY name, lower, upper;

DROP TABLE h, received_box;
DROP FUNCTION refusal(text), received(bytea), binary_refusal(bytea);

-- Every encoder's bytes, fixed: a change to any of them shows here, even one
-- that promread's own decoders would share.  The rows hold values whose
-- bits matter (Prometheus's stale marker, a NaN with another payload, -0,
-- +Inf) and a time before 1970; test/fixtures/exact_values.copy holds them
-- in COPY's binary format (SQL has no literal for a NaN's payload).  The
-- expected bytes were decoded with Python's protobuf when they were fixed:
-- the stale marker 0x7ff0000000000002, -0 0x8000000000000000, +Inf, 1.5,
-- 0xfff8000000000001 and 2.0 at -1 ms.
SET timezone = 'UTC';
SET datestyle = 'ISO';
CREATE TABLE exact (t timestamptz, host text, v float8);
\set abs_srcdir `pwd` '/test'
\set exact_values :abs_srcdir '/fixtures/exact_values.copy'
COPY exact FROM :'exact_values' (FORMAT binary);
SELECT prom_register('exact');
SELECT host, t, float8send(v) FROM exact ORDER BY host, t;

-- SAMPLES: a snappy-compressed ReadResponse
SELECT encode(prom_remote_read(prom_read_request('exact', '1969-12-31', '2024-01-02')), 'hex');
-- STREAMED_XOR_CHUNKS: frames of XOR chunks
SELECT encode(prom_remote_read(prom_read_request('exact', '1969-12-31', '2024-01-02',
	'{streamed_xor_chunks}')), 'hex');
-- the aggregate: the same bytes as SAMPLES
SELECT encode(prom_read_response_agg(t, v, '__name__', 'exact', 'host', host), 'hex')
FROM exact;
-- a request as Prometheus would send it
SELECT encode(prom_read_request(ARRAY['exact{host=~"a|b"}', '{__name__="exact", host!="c"}'],
	'1969-12-31', '2024-01-02', '{streamed_xor_chunks,samples}'), 'hex');

DROP TABLE exact;

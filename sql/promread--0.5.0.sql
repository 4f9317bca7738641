/* promread 0.5.0: PostgreSQL tables read as Prometheus series */

\echo Use "CREATE EXTENSION promread" to load this file. \quit

DO $$
BEGIN
	IF pg_catalog.getdatabaseencoding() OPERATOR(pg_catalog.<>) 'UTF8' THEN
		RAISE EXCEPTION 'promread requires a UTF8 database, not %',
			pg_catalog.getdatabaseencoding()
			USING ERRCODE = 'feature_not_supported',
				  HINT = 'Prometheus label values are UTF-8; create the database with ENCODING ''UTF8''.';
	END IF;
END
$$;

--
-- The metric catalog.  Written by prom_register and prom_unregister, which
-- check that the caller owns the relation; nobody else may write it.
--
CREATE TABLE prom_metric_catalog (
	metric text PRIMARY KEY
		CHECK (metric OPERATOR(pg_catalog.~) '^[a-zA-Z_:][a-zA-Z0-9_:]*$'),
	relation regclass NOT NULL,
	time_column name NOT NULL,
	value_column name NOT NULL,
	label_columns name[] NOT NULL,
	created_by_write boolean NOT NULL DEFAULT false,
	-- the label each of label_columns holds; NULL: the columns' names
	label_names text[]
		CHECK (pg_catalog.cardinality(label_names) OPERATOR(pg_catalog.=)
			pg_catalog.cardinality(label_columns)),
	-- a jsonb column of the labels that have no column of their own
	overflow_column name
);
REVOKE ALL ON prom_metric_catalog FROM PUBLIC;
SELECT pg_catalog.pg_extension_config_dump('prom_metric_catalog', '');

CREATE VIEW prom_metrics AS
	SELECT metric, relation, time_column, value_column, label_columns,
		created_by_write,
		COALESCE(label_names,
			label_columns::pg_catalog.text[]) AS label_names,
		overflow_column
	FROM prom_metric_catalog;
GRANT SELECT ON prom_metrics TO PUBLIC;

--
-- The metadata of metric families, as remote write last sent it.  Written
-- by prom_remote_write only; writer is the role that wrote it.
--
CREATE TABLE prom_metric_metadata_catalog (
	metric text PRIMARY KEY,
	type text NOT NULL,
	help text NOT NULL,
	unit text NOT NULL,
	writer regrole NOT NULL
);
REVOKE ALL ON prom_metric_metadata_catalog FROM PUBLIC;
SELECT pg_catalog.pg_extension_config_dump('prom_metric_metadata_catalog', '');

CREATE VIEW prom_metric_metadata AS
	SELECT metric, type, help, unit, writer
	FROM prom_metric_metadata_catalog;
GRANT SELECT ON prom_metric_metadata TO PUBLIC;

--
-- The exemplar tables of metrics that remote write created: written by
-- prom_remote_write with a metric's first exemplar (the table is the metric
-- table's owner's), forgotten when the metric is registered again or
-- unregistered.
--
CREATE TABLE prom_exemplar_catalog (
	metric text PRIMARY KEY,
	relation regclass NOT NULL
);
REVOKE ALL ON prom_exemplar_catalog FROM PUBLIC;
SELECT pg_catalog.pg_extension_config_dump('prom_exemplar_catalog', '');

CREATE VIEW prom_exemplars AS
	SELECT metric, relation FROM prom_exemplar_catalog;
GRANT SELECT ON prom_exemplars TO PUBLIC;

--
-- Metrics stored as Prometheus chunks (docs/chunk-storage.md): the tables
-- behind a metric's registered view.  Written by prom_create_metric and
-- remote write; an entry counts only while its metric is registered to its
-- relation (the view), and goes when the metric is unregistered or one of
-- its relations is dropped.
--
CREATE TABLE prom_storage_catalog (
	metric text PRIMARY KEY,
	relation regclass NOT NULL,
	series regclass NOT NULL,
	chunks regclass NOT NULL,
	head regclass NOT NULL,
	-- chunks and head rows older than this are dropped; NULL: kept
	retention interval,
	-- the table of samples that arrived for windows compacted already
	-- (NULL: none, for a layout made by hand)
	late regclass,
	-- head rows before this time (ms) are in chunks; NULL: none is
	compacted_before bigint
);
REVOKE ALL ON prom_storage_catalog FROM PUBLIC;
SELECT pg_catalog.pg_extension_config_dump('prom_storage_catalog', '');

CREATE VIEW prom_metric_storage AS
	SELECT metric, relation, series, chunks, head, retention, late,
		compacted_before
	FROM prom_storage_catalog;
GRANT SELECT ON prom_metric_storage TO PUBLIC;

CREATE FUNCTION prom_register(relation regclass, metric text DEFAULT NULL,
		time_column name DEFAULT NULL, value_column name DEFAULT NULL,
		label_columns name[] DEFAULT NULL)
	RETURNS text
	AS 'MODULE_PATHNAME', 'prom_register'
	LANGUAGE C VOLATILE;

CREATE FUNCTION prom_unregister(metric text)
	RETURNS boolean
	AS 'MODULE_PATHNAME', 'prom_unregister'
	LANGUAGE C STRICT VOLATILE;

-- Entries of dropped relations go with them (exemplar and storage tables too).
CREATE FUNCTION prom_catalog_forget_dropped()
	RETURNS event_trigger
	LANGUAGE plpgsql SECURITY DEFINER
	SET search_path = pg_catalog, pg_temp
	AS $$
BEGIN
	DELETE FROM @extschema@.prom_metric_catalog AS c
	USING pg_catalog.pg_event_trigger_dropped_objects() AS d
	WHERE d.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_class'::pg_catalog.regclass
	  AND d.objsubid OPERATOR(pg_catalog.=) 0
	  AND c.relation::pg_catalog.oid OPERATOR(pg_catalog.=) d.objid;
	DELETE FROM @extschema@.prom_exemplar_catalog AS c
	USING pg_catalog.pg_event_trigger_dropped_objects() AS d
	WHERE d.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_class'::pg_catalog.regclass
	  AND d.objsubid OPERATOR(pg_catalog.=) 0
	  AND c.relation::pg_catalog.oid OPERATOR(pg_catalog.=) d.objid;
	DELETE FROM @extschema@.prom_storage_catalog AS c
	USING pg_catalog.pg_event_trigger_dropped_objects() AS d
	WHERE d.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_class'::pg_catalog.regclass
	  AND d.objsubid OPERATOR(pg_catalog.=) 0
	  AND d.objid OPERATOR(pg_catalog.=) ANY (ARRAY[c.relation, c.series,
		c.chunks, c.head, c.late]::pg_catalog.oid[]);
END
$$;
REVOKE ALL ON FUNCTION prom_catalog_forget_dropped() FROM PUBLIC;
CREATE EVENT TRIGGER prom_catalog_forget_dropped ON sql_drop
	EXECUTE FUNCTION prom_catalog_forget_dropped();

CREATE FUNCTION prom_explain(selector text, start_time timestamptz,
		end_time timestamptz, "analyze" boolean DEFAULT false)
	RETURNS SETOF text
	AS 'MODULE_PATHNAME', 'prom_explain'
	LANGUAGE C STRICT VOLATILE;

CREATE FUNCTION prom_regex_match_support(internal)
	RETURNS internal
	AS 'MODULE_PATHNAME', 'prom_regex_match_support'
	LANGUAGE C STRICT;

CREATE FUNCTION prom_regex_match(pattern text, value text)
	RETURNS boolean
	AS 'MODULE_PATHNAME', 'prom_regex_match'
	LANGUAGE C STRICT IMMUTABLE PARALLEL SAFE
	SUPPORT prom_regex_match_support;

-- Evaluated once a scan (an index condition of prom_regex_match): it
-- costs a descent of the index per value.  VOLATILE, so that the planner
-- does not run it to estimate the condition's selectivity; its query uses
-- the scan's snapshot all the same.
CREATE FUNCTION prom_regex_label_values(relation regclass, label text,
		pattern text)
	RETURNS text[]
	AS 'MODULE_PATHNAME', 'prom_regex_label_values'
	LANGUAGE C STRICT VOLATILE PARALLEL RESTRICTED COST 10000;

-- The role a scan of a view's relation checks it as, passed by
-- prom_regex_match's index condition so that the listing reads the rows
-- that scan may read.  Only the planner makes its values: the input
-- function refuses every text, and there is no binary input.
CREATE TYPE prom_scan_role;

CREATE FUNCTION prom_scan_role_in(cstring)
	RETURNS prom_scan_role
	AS 'MODULE_PATHNAME', 'prom_scan_role_in'
	LANGUAGE C STRICT IMMUTABLE PARALLEL SAFE;

CREATE FUNCTION prom_scan_role_out(prom_scan_role)
	RETURNS cstring
	AS 'MODULE_PATHNAME', 'prom_scan_role_out'
	LANGUAGE C STRICT STABLE PARALLEL SAFE;

CREATE TYPE prom_scan_role (
	INPUT = prom_scan_role_in,
	OUTPUT = prom_scan_role_out,
	INTERNALLENGTH = 4,
	PASSEDBYVALUE,
	ALIGNMENT = int4
);

CREATE FUNCTION prom_regex_label_values(relation regclass, label text,
		pattern text, scan_role prom_scan_role)
	RETURNS text[]
	AS 'MODULE_PATHNAME', 'prom_regex_label_values'
	LANGUAGE C STRICT VOLATILE PARALLEL RESTRICTED COST 10000;

CREATE FUNCTION prom_regex_translate(pattern text)
	RETURNS text
	AS 'MODULE_PATHNAME', 'prom_regex_translate'
	LANGUAGE C STRICT IMMUTABLE PARALLEL SAFE;

--
-- Native histograms
--

-- A native histogram: every field of prompb.Histogram but its timestamp,
-- kept bit for bit.  Its text form is a JSON object,
-- {"kind":"integer","schema":3,...}, that casts to jsonb through text.
CREATE TYPE prom_histogram;

CREATE FUNCTION prom_histogram_in(cstring)
	RETURNS prom_histogram
	AS 'MODULE_PATHNAME', 'prom_histogram_in'
	LANGUAGE C STRICT STABLE PARALLEL SAFE;

CREATE FUNCTION prom_histogram_out(prom_histogram)
	RETURNS cstring
	AS 'MODULE_PATHNAME', 'prom_histogram_out'
	LANGUAGE C STRICT IMMUTABLE PARALLEL SAFE;

CREATE FUNCTION prom_histogram_recv(internal)
	RETURNS prom_histogram
	AS 'MODULE_PATHNAME', 'prom_histogram_recv'
	LANGUAGE C STRICT STABLE PARALLEL SAFE;

CREATE FUNCTION prom_histogram_send(prom_histogram)
	RETURNS bytea
	AS 'MODULE_PATHNAME', 'prom_histogram_send'
	LANGUAGE C STRICT IMMUTABLE PARALLEL SAFE;

CREATE TYPE prom_histogram (
	INPUT = prom_histogram_in,
	OUTPUT = prom_histogram_out,
	RECEIVE = prom_histogram_recv,
	SEND = prom_histogram_send,
	INTERNALLENGTH = VARIABLE,
	ALIGNMENT = double,
	STORAGE = extended
);

-- Equality is bit for bit: NaNs of the same bits are equal, 0 and -0 not.
CREATE FUNCTION prom_histogram_eq(prom_histogram, prom_histogram)
	RETURNS boolean
	AS 'MODULE_PATHNAME', 'prom_histogram_eq'
	LANGUAGE C STRICT IMMUTABLE PARALLEL SAFE;

CREATE FUNCTION prom_histogram_ne(prom_histogram, prom_histogram)
	RETURNS boolean
	AS 'MODULE_PATHNAME', 'prom_histogram_ne'
	LANGUAGE C STRICT IMMUTABLE PARALLEL SAFE;

CREATE FUNCTION prom_histogram_hash(prom_histogram)
	RETURNS integer
	AS 'MODULE_PATHNAME', 'prom_histogram_hash'
	LANGUAGE C STRICT IMMUTABLE PARALLEL SAFE;

CREATE OPERATOR = (
	LEFTARG = prom_histogram,
	RIGHTARG = prom_histogram,
	FUNCTION = prom_histogram_eq,
	COMMUTATOR = =,
	NEGATOR = <>,
	RESTRICT = eqsel,
	JOIN = eqjoinsel,
	HASHES
);

CREATE OPERATOR <> (
	LEFTARG = prom_histogram,
	RIGHTARG = prom_histogram,
	FUNCTION = prom_histogram_ne,
	COMMUTATOR = <>,
	NEGATOR = =,
	RESTRICT = neqsel,
	JOIN = neqjoinsel
);

CREATE OPERATOR CLASS prom_histogram_ops
	DEFAULT FOR TYPE prom_histogram USING hash AS
		OPERATOR 1 = (prom_histogram, prom_histogram),
		FUNCTION 1 prom_histogram_hash(prom_histogram);

-- PromQL's histogram functions, giving Prometheus's answers bit for bit
CREATE FUNCTION prom_histogram_count(h prom_histogram)
	RETURNS double precision
	AS 'MODULE_PATHNAME', 'prom_histogram_count'
	LANGUAGE C STRICT IMMUTABLE PARALLEL SAFE;

CREATE FUNCTION prom_histogram_sum(h prom_histogram)
	RETURNS double precision
	AS 'MODULE_PATHNAME', 'prom_histogram_sum'
	LANGUAGE C STRICT IMMUTABLE PARALLEL SAFE;

CREATE FUNCTION prom_histogram_avg(h prom_histogram)
	RETURNS double precision
	AS 'MODULE_PATHNAME', 'prom_histogram_avg'
	LANGUAGE C STRICT IMMUTABLE PARALLEL SAFE;

CREATE FUNCTION prom_histogram_stddev(h prom_histogram)
	RETURNS double precision
	AS 'MODULE_PATHNAME', 'prom_histogram_stddev'
	LANGUAGE C STRICT IMMUTABLE PARALLEL SAFE;

CREATE FUNCTION prom_histogram_stdvar(h prom_histogram)
	RETURNS double precision
	AS 'MODULE_PATHNAME', 'prom_histogram_stdvar'
	LANGUAGE C STRICT IMMUTABLE PARALLEL SAFE;

CREATE FUNCTION prom_histogram_quantile(q double precision, h prom_histogram)
	RETURNS double precision
	AS 'MODULE_PATHNAME', 'prom_histogram_quantile'
	LANGUAGE C STRICT IMMUTABLE PARALLEL SAFE;

CREATE FUNCTION prom_histogram_fraction(lower double precision,
		upper double precision, h prom_histogram)
	RETURNS double precision
	AS 'MODULE_PATHNAME', 'prom_histogram_fraction'
	LANGUAGE C STRICT IMMUTABLE PARALLEL SAFE;

-- The buckets with observations, ascending, counts absolute, the zero
-- bucket among them: as Prometheus's HTTP API lists a histogram's buckets
CREATE FUNCTION prom_histogram_buckets(h prom_histogram)
	RETURNS TABLE (lower double precision, upper double precision,
		count double precision)
	AS 'MODULE_PATHNAME', 'prom_histogram_buckets'
	LANGUAGE C STRICT IMMUTABLE PARALLEL SAFE ROWS 20;

--
-- Remote read
--
CREATE FUNCTION prom_remote_read(request bytea)
	RETURNS bytea
	AS 'MODULE_PATHNAME', 'prom_remote_read'
	LANGUAGE C STRICT STABLE;

-- content_type: the request's Content-Type, which names the protocol
-- version (NULL: remote write 1.0); not STRICT, for its default
CREATE FUNCTION prom_remote_write(request bytea, content_type text DEFAULT NULL)
	RETURNS void
	AS 'MODULE_PATHNAME', 'prom_remote_write'
	LANGUAGE C VOLATILE;

CREATE FUNCTION prom_write_request(series jsonb)
	RETURNS bytea
	AS 'MODULE_PATHNAME', 'prom_write_request'
	LANGUAGE C STRICT IMMUTABLE PARALLEL SAFE;

CREATE FUNCTION prom_read_request(selector text, start_time timestamptz,
		end_time timestamptz, response_types text[] DEFAULT '{samples}')
	RETURNS bytea
	AS 'MODULE_PATHNAME', 'prom_read_request'
	LANGUAGE C STRICT IMMUTABLE PARALLEL SAFE;

CREATE FUNCTION prom_read_request(selectors text[], start_time timestamptz,
		end_time timestamptz, response_types text[] DEFAULT '{samples}')
	RETURNS bytea
	AS 'MODULE_PATHNAME', 'prom_read_request_multi'
	LANGUAGE C STRICT IMMUTABLE PARALLEL SAFE;

CREATE FUNCTION prom_read_request_json(request bytea)
	RETURNS jsonb
	AS 'MODULE_PATHNAME', 'prom_read_request_json'
	LANGUAGE C STRICT IMMUTABLE PARALLEL SAFE;

CREATE FUNCTION prom_read_response_json(response bytea)
	RETURNS jsonb
	AS 'MODULE_PATHNAME', 'prom_read_response_json'
	LANGUAGE C STRICT IMMUTABLE PARALLEL SAFE;

CREATE FUNCTION prom_read_response_agg_transfn(internal, timestamptz,
		double precision, VARIADIC "any")
	RETURNS internal
	AS 'MODULE_PATHNAME', 'prom_read_response_agg_transfn'
	LANGUAGE C PARALLEL SAFE;

CREATE FUNCTION prom_read_response_agg_finalfn(internal)
	RETURNS bytea
	AS 'MODULE_PATHNAME', 'prom_read_response_agg_finalfn'
	LANGUAGE C PARALLEL SAFE;

CREATE FUNCTION prom_read_response_agg_combinefn(internal, internal)
	RETURNS internal
	AS 'MODULE_PATHNAME', 'prom_read_response_agg_combinefn'
	LANGUAGE C PARALLEL SAFE;

CREATE FUNCTION prom_read_response_agg_serialfn(internal)
	RETURNS bytea
	AS 'MODULE_PATHNAME', 'prom_read_response_agg_serialfn'
	LANGUAGE C STRICT PARALLEL SAFE;

CREATE FUNCTION prom_read_response_agg_deserialfn(bytea, internal)
	RETURNS internal
	AS 'MODULE_PATHNAME', 'prom_read_response_agg_deserialfn'
	LANGUAGE C STRICT PARALLEL SAFE;

CREATE AGGREGATE prom_read_response_agg(ts timestamptz,
		value double precision, VARIADIC labels "any") (
	SFUNC = prom_read_response_agg_transfn,
	STYPE = internal,
	FINALFUNC = prom_read_response_agg_finalfn,
	FINALFUNC_MODIFY = READ_WRITE,
	COMBINEFUNC = prom_read_response_agg_combinefn,
	SERIALFUNC = prom_read_response_agg_serialfn,
	DESERIALFUNC = prom_read_response_agg_deserialfn,
	PARALLEL = SAFE
);

-- The transition function for times given as timestamp (read as UTC) or as
-- a bigint of ms since the Unix epoch.
CREATE FUNCTION prom_read_response_agg_transfn(internal, timestamp,
		double precision, VARIADIC "any")
	RETURNS internal
	AS 'MODULE_PATHNAME', 'prom_read_response_agg_transfn'
	LANGUAGE C PARALLEL SAFE;

CREATE FUNCTION prom_read_response_agg_transfn(internal, bigint,
		double precision, VARIADIC "any")
	RETURNS internal
	AS 'MODULE_PATHNAME', 'prom_read_response_agg_transfn'
	LANGUAGE C PARALLEL SAFE;

CREATE FUNCTION prom_chunked_response_agg_finalfn(internal)
	RETURNS bytea
	AS 'MODULE_PATHNAME', 'prom_chunked_response_agg_finalfn'
	LANGUAGE C PARALLEL SAFE;

CREATE AGGREGATE prom_chunked_response_agg(ts timestamptz,
		value double precision, VARIADIC labels "any") (
	SFUNC = prom_read_response_agg_transfn,
	STYPE = internal,
	FINALFUNC = prom_chunked_response_agg_finalfn,
	FINALFUNC_MODIFY = READ_WRITE,
	COMBINEFUNC = prom_read_response_agg_combinefn,
	SERIALFUNC = prom_read_response_agg_serialfn,
	DESERIALFUNC = prom_read_response_agg_deserialfn,
	PARALLEL = SAFE
);

CREATE AGGREGATE prom_chunked_response_agg(ts timestamp,
		value double precision, VARIADIC labels "any") (
	SFUNC = prom_read_response_agg_transfn,
	STYPE = internal,
	FINALFUNC = prom_chunked_response_agg_finalfn,
	FINALFUNC_MODIFY = READ_WRITE,
	COMBINEFUNC = prom_read_response_agg_combinefn,
	SERIALFUNC = prom_read_response_agg_serialfn,
	DESERIALFUNC = prom_read_response_agg_deserialfn,
	PARALLEL = SAFE
);

CREATE AGGREGATE prom_chunked_response_agg(ts bigint,
		value double precision, VARIADIC labels "any") (
	SFUNC = prom_read_response_agg_transfn,
	STYPE = internal,
	FINALFUNC = prom_chunked_response_agg_finalfn,
	FINALFUNC_MODIFY = READ_WRITE,
	COMBINEFUNC = prom_read_response_agg_combinefn,
	SERIALFUNC = prom_read_response_agg_serialfn,
	DESERIALFUNC = prom_read_response_agg_deserialfn,
	PARALLEL = SAFE
);

--
-- Native histograms, read
--

-- The series of a selector: a series of floats has its values and NULL
-- histograms, a series of native histograms NULL values and its histograms.
CREATE FUNCTION prom_series(selector text, start_time timestamptz,
		end_time timestamptz)
	RETURNS TABLE (labels jsonb, ts timestamptz[], value double precision[],
		histograms prom_histogram[])
	AS 'MODULE_PATHNAME', 'prom_series'
	LANGUAGE C STRICT STABLE PARALLEL RESTRICTED ROWS 100;

-- The shard aggregates over native histograms: every series of the answer
-- holds histograms.
CREATE FUNCTION prom_read_response_agg_transfn(internal, timestamptz,
		prom_histogram, VARIADIC "any")
	RETURNS internal
	AS 'MODULE_PATHNAME', 'prom_read_response_agg_transfn'
	LANGUAGE C PARALLEL SAFE;

CREATE FUNCTION prom_read_response_agg_transfn(internal, timestamp,
		prom_histogram, VARIADIC "any")
	RETURNS internal
	AS 'MODULE_PATHNAME', 'prom_read_response_agg_transfn'
	LANGUAGE C PARALLEL SAFE;

CREATE FUNCTION prom_read_response_agg_transfn(internal, bigint,
		prom_histogram, VARIADIC "any")
	RETURNS internal
	AS 'MODULE_PATHNAME', 'prom_read_response_agg_transfn'
	LANGUAGE C PARALLEL SAFE;

CREATE AGGREGATE prom_read_response_agg(ts timestamptz,
		value prom_histogram, VARIADIC labels "any") (
	SFUNC = prom_read_response_agg_transfn,
	STYPE = internal,
	FINALFUNC = prom_read_response_agg_finalfn,
	FINALFUNC_MODIFY = READ_WRITE,
	COMBINEFUNC = prom_read_response_agg_combinefn,
	SERIALFUNC = prom_read_response_agg_serialfn,
	DESERIALFUNC = prom_read_response_agg_deserialfn,
	PARALLEL = SAFE
);

CREATE AGGREGATE prom_chunked_response_agg(ts timestamptz,
		value prom_histogram, VARIADIC labels "any") (
	SFUNC = prom_read_response_agg_transfn,
	STYPE = internal,
	FINALFUNC = prom_chunked_response_agg_finalfn,
	FINALFUNC_MODIFY = READ_WRITE,
	COMBINEFUNC = prom_read_response_agg_combinefn,
	SERIALFUNC = prom_read_response_agg_serialfn,
	DESERIALFUNC = prom_read_response_agg_deserialfn,
	PARALLEL = SAFE
);

CREATE AGGREGATE prom_chunked_response_agg(ts timestamp,
		value prom_histogram, VARIADIC labels "any") (
	SFUNC = prom_read_response_agg_transfn,
	STYPE = internal,
	FINALFUNC = prom_chunked_response_agg_finalfn,
	FINALFUNC_MODIFY = READ_WRITE,
	COMBINEFUNC = prom_read_response_agg_combinefn,
	SERIALFUNC = prom_read_response_agg_serialfn,
	DESERIALFUNC = prom_read_response_agg_deserialfn,
	PARALLEL = SAFE
);

CREATE AGGREGATE prom_chunked_response_agg(ts bigint,
		value prom_histogram, VARIADIC labels "any") (
	SFUNC = prom_read_response_agg_transfn,
	STYPE = internal,
	FINALFUNC = prom_chunked_response_agg_finalfn,
	FINALFUNC_MODIFY = READ_WRITE,
	COMBINEFUNC = prom_read_response_agg_combinefn,
	SERIALFUNC = prom_read_response_agg_serialfn,
	DESERIALFUNC = prom_read_response_agg_deserialfn,
	PARALLEL = SAFE
);

--
-- Chunk storage (docs/chunk-storage.md)
--

-- The samples of a stored chunk: an XOR chunk's floats, a histogram (2) or
-- float histogram (3) chunk's histograms; bytes that are no such chunk
-- raise 22P03.
CREATE FUNCTION prom_chunk_samples(chunk bytea)
	RETURNS TABLE (ts timestamptz, value double precision)
	AS 'MODULE_PATHNAME', 'prom_chunk_samples'
	LANGUAGE C STRICT IMMUTABLE PARALLEL SAFE ROWS 120;

CREATE FUNCTION prom_chunk_histograms(encoding smallint, chunk bytea)
	RETURNS TABLE (ts timestamptz, value prom_histogram)
	AS 'MODULE_PATHNAME', 'prom_chunk_histograms'
	LANGUAGE C STRICT IMMUTABLE PARALLEL SAFE ROWS 120;

-- A chunk's number of samples (its first two bytes), of any encoding
CREATE FUNCTION prom_chunk_sample_count(chunk bytea)
	RETURNS integer
	AS 'MODULE_PATHNAME', 'prom_chunk_sample_count'
	LANGUAGE C STRICT IMMUTABLE PARALLEL SAFE;

-- Create a metric in the first schema of search_path: in chunk storage, its
-- tables "m#series", "m#chunks" and "m#head" and the view "m" it returns;
-- in row storage, its table "m" (as remote write creates one).
CREATE FUNCTION prom_create_metric(metric text, labels text[] DEFAULT '{}',
		storage text DEFAULT 'chunks',
		value_type regtype DEFAULT 'double precision')
	RETURNS regclass
	AS 'MODULE_PATHNAME', 'prom_create_metric'
	LANGUAGE C VOLATILE;

-- The partition of a chunk metric's chunks for the UTC day of t, created
-- when missing (compaction calls it)
CREATE FUNCTION prom_chunk_partition(metric text, t timestamptz)
	RETURNS regclass
	AS 'MODULE_PATHNAME', 'prom_chunk_partition'
	LANGUAGE C STRICT VOLATILE;

-- The series, samples and bytes on disk (tables, indexes, TOAST, every
-- partition; NULL for a relation without storage, such as a view) of each
-- registered metric.  Counting reads all of a metric's rows: a scan of its
-- table, or of its series, head rows and chunks' first bytes; the counts
-- are NULL where the caller may not read them.  Given a metric, only its.
CREATE FUNCTION prom_get_metric_sizes(only_metric text DEFAULT NULL)
	RETURNS TABLE (metric text, storage text, series bigint, samples bigint,
		bytes bigint, bytes_per_sample double precision)
	LANGUAGE plpgsql STABLE
	SET search_path = pg_catalog, pg_temp
	AS $$
DECLARE
	m record;
	tables regclass[];
	labels text;
	defaults oid[];
BEGIN
	FOR m IN
		SELECT c.metric, c.relation, c.label_columns, c.overflow_column,
			s.series AS series_table, s.chunks, s.head, s.late,
			coalesce(s.compacted_before, -9223372036854775808) AS compacted_before
		FROM @extschema@.prom_metrics AS c
		LEFT JOIN @extschema@.prom_metric_storage AS s
			ON s.metric OPERATOR(pg_catalog.=) c.metric
			AND s.relation OPERATOR(pg_catalog.=) c.relation
		WHERE only_metric IS NULL OR c.metric OPERATOR(pg_catalog.=) only_metric
		ORDER BY c.metric
	LOOP
		metric := m.metric;
		series := NULL;
		samples := NULL;
		bytes := NULL;
		-- Measured in a subtransaction that is then rolled back (PR000,
		-- raised and caught here; variables keep what they held), so that
		-- the locks its statements took go before the next metric:
		-- thousands of metrics would fill the lock table every session
		-- shares.
		BEGIN
			IF m.series_table IS NOT NULL THEN
				storage := 'chunks';
				tables := ARRAY[m.series_table, m.chunks, m.head, m.late];
				IF has_table_privilege(m.series_table, 'SELECT')
					AND has_table_privilege(m.chunks, 'SELECT')
					AND has_table_privilege(m.head, 'SELECT')
					AND (m.late IS NULL OR has_table_privilege(m.late, 'SELECT')) THEN
					-- rows of the head's window partitions before compacted_before
					-- are in chunks already; its default partition's are not
					SELECT coalesce(array_agg(r.oid), '{}')
					INTO defaults
					FROM pg_inherits AS i JOIN pg_class AS r ON r.oid OPERATOR(pg_catalog.=) i.inhrelid
					WHERE i.inhparent OPERATOR(pg_catalog.=) m.head
					  AND pg_get_expr(r.relpartbound, r.oid) OPERATOR(pg_catalog.=) 'DEFAULT';
					EXECUTE format('SELECT (SELECT count(*) FROM %s),'
						' (SELECT count(*) FROM %s WHERE t OPERATOR(pg_catalog.>=) %s'
						' OR tableoid OPERATOR(pg_catalog.=) ANY (%L::pg_catalog.oid[]))'
						' OPERATOR(pg_catalog.+) (SELECT count(*) FROM %s)'
						' OPERATOR(pg_catalog.+) (SELECT'
						' coalesce(sum(@extschema@.prom_chunk_sample_count(chunk)), 0)'
						' FROM %s)::bigint', m.series_table, m.head, m.compacted_before,
						defaults, coalesce(m.late::text, '(SELECT WHERE false) AS none'), m.chunks)
						INTO series, samples;
				END IF;
			ELSE
				storage := 'rows';
				tables := ARRAY[m.relation];
				IF has_table_privilege(m.relation, 'SELECT') THEN
					SELECT string_agg(quote_ident(l), ', ')
					INTO labels
					FROM unnest(m.label_columns::text[] || m.overflow_column::text) AS l;
					EXECUTE format('SELECT %s, count(*) FROM %s',
						CASE WHEN labels IS NULL
							THEN 'least(count(*), 1)'
							ELSE format('count(DISTINCT ROW(%s))', labels) END,
						m.relation)
						INTO series, samples;
				END IF;
			END IF;
			SELECT sum(pg_total_relation_size(r.oid))::bigint
			INTO bytes
			FROM pg_class AS r
			WHERE r.relkind IN ('r', 'm')
			  AND (r.oid OPERATOR(pg_catalog.=) ANY (tables::oid[])
				OR r.oid IN (SELECT p.relid
							 FROM unnest(tables) AS t, pg_partition_tree(t) AS p));
			RAISE SQLSTATE 'PR000';
		EXCEPTION
			WHEN SQLSTATE 'PR000' THEN
				NULL;
			WHEN undefined_table THEN
				NULL;			-- dropped meanwhile: listed without figures
		END;
		bytes_per_sample := bytes::float8 / nullif(samples, 0);
		RETURN NEXT;
	END LOOP;
END
$$;

CREATE VIEW prom_metric_sizes AS
	SELECT metric, storage, series, samples, bytes, bytes_per_sample
	FROM prom_get_metric_sizes();
GRANT SELECT ON prom_metric_sizes TO PUBLIC;
-- Compaction of metrics in chunk storage: head rows moved into chunks by
-- 2-hour windows, retention carried out (docs/chunk-storage.md).
CREATE FUNCTION prom_compact(metric text DEFAULT NULL)
	RETURNS bigint
	AS 'MODULE_PATHNAME', 'prom_compact'
	LANGUAGE C VOLATILE;

-- Compaction of every metric the caller owns, each in a transaction of its
-- own (CALL it outside a transaction block, as pg_cron does): the locks
-- and work of one metric are let go at its commit, so that thousands of
-- metrics neither fill the lock table nor keep one transaction open.  A
-- metric's failure is a WARNING and the next is compacted; the call then
-- ends with an error that counts them.  No SET clause: a procedure with
-- one cannot commit, so every name is qualified.
CREATE PROCEDURE prom_compact_proc(INOUT chunks bigint DEFAULT NULL)
	LANGUAGE plpgsql
	AS $$
DECLARE
	m text;
	tried integer := 0;
	failed integer := 0;
	first_state text;
BEGIN
	chunks := 0;
	FOR m IN
		SELECT s.metric
		FROM @extschema@.prom_metric_storage s
			JOIN pg_catalog.pg_class c ON c.oid = s.relation
		WHERE s.late IS NOT NULL
			AND pg_catalog.pg_has_role(c.relowner, 'USAGE')
		ORDER BY s.metric
	LOOP
		tried := tried OPERATOR(pg_catalog.+) 1;
		BEGIN
			chunks := chunks OPERATOR(pg_catalog.+) @extschema@.prom_compact(m);
		EXCEPTION
			WHEN undefined_object OR wrong_object_type THEN
				NULL;			-- unregistered or registered anew meanwhile
			WHEN OTHERS THEN
				-- a metric given to another role meanwhile is not the
				-- caller's to compact any more: skipped, as a dropped one
				IF SQLSTATE OPERATOR(pg_catalog.<>) '42501' OR EXISTS (
					SELECT FROM @extschema@.prom_metric_storage s
						JOIN pg_catalog.pg_class c ON c.oid = s.relation
					WHERE s.metric OPERATOR(pg_catalog.=) m
						AND pg_catalog.pg_has_role(c.relowner, 'USAGE'))
				THEN
					failed := failed OPERATOR(pg_catalog.+) 1;
					first_state := coalesce(first_state, SQLSTATE);
					RAISE WARNING 'compaction of metric "%" failed: %', m, SQLERRM
						USING ERRCODE = SQLSTATE;
				END IF;
		END;
		COMMIT;
	END LOOP;
	IF failed OPERATOR(pg_catalog.>) 0 THEN
		RAISE EXCEPTION 'compaction failed for % of % metrics', failed, tried
			USING ERRCODE = first_state,
				HINT = 'The WARNINGs before this name them; the other metrics were compacted.';
	END IF;
END
$$;

-- A metric's retention (NULL: keep everything), which prom_compact carries out.
CREATE FUNCTION prom_set_retention(metric text, retention interval)
	RETURNS void
	AS 'MODULE_PATHNAME', 'prom_set_retention'
	LANGUAGE C VOLATILE;

-- Move a metric in row storage to chunk storage (docs/chunk-storage.md).
CREATE FUNCTION prom_convert_metric(metric text)
	RETURNS regclass
	AS 'MODULE_PATHNAME', 'prom_convert_metric'
	LANGUAGE C STRICT VOLATILE;

-- The statement trigger of a metric's series table (m#series) after UPDATE
-- and DELETE: the series ids remote write caches for the table are dropped
-- in every backend (docs/chunk-storage.md, "Writing").
CREATE FUNCTION prom_series_changed()
	RETURNS trigger
	AS 'MODULE_PATHNAME', 'prom_series_changed'
	LANGUAGE C VOLATILE;

-- The time (ms since the Unix epoch) before which a chunk metric's head rows
-- are in its chunks, as the caller's snapshot sees it (the least bigint when
-- none is, or head is not its head): the metric's view reads the head from
-- it (docs/chunk-storage.md).
CREATE FUNCTION prom_head_compacted_before(metric text, head regclass)
	RETURNS bigint
	AS 'MODULE_PATHNAME', 'prom_head_compacted_before'
	LANGUAGE C STRICT STABLE PARALLEL SAFE;

/* promread 0.3.1 to 0.4.0: prom_remote_write reads remote write 2.0 too,
   the version named by its new content_type argument; the prom_histogram
   type of native histograms, which it stores, read by prom_series (a new
   column) and the shard aggregates (new overloads); exemplars, in the
   exemplar tables that prom_exemplars names */
\echo Use "ALTER EXTENSION promread UPDATE TO '0.4.0'" to load this file. \quit

-- content_type: the request's Content-Type, which names the protocol
-- version (NULL: remote write 1.0); not STRICT, for its default
CREATE FUNCTION prom_remote_write(request bytea, content_type text DEFAULT NULL)
	RETURNS void
	AS 'MODULE_PATHNAME', 'prom_remote_write'
	LANGUAGE C VOLATILE;

-- The new function keeps the old one's EXECUTE grants: a deployment that
-- revoked it from PUBLIC (docs/deployment.md, "Who may write what") must
-- not find it open again after the update.
DO $$
DECLARE
	old regprocedure := 'prom_remote_write(bytea)'::regprocedure;
	new regprocedure := 'prom_remote_write(bytea, text)'::regprocedure;
	grantee oid;
BEGIN
	IF (SELECT proacl FROM pg_catalog.pg_proc WHERE oid = old) IS NULL THEN
		RETURN;					-- the default: EXECUTE for PUBLIC
	END IF;
	EXECUTE pg_catalog.format('REVOKE ALL ON FUNCTION %s FROM PUBLIC', new);
	FOR grantee IN
		SELECT a.grantee FROM pg_catalog.pg_proc p,
			LATERAL pg_catalog.aclexplode(p.proacl) a
		WHERE p.oid = old AND a.privilege_type = 'EXECUTE' AND a.grantee <> p.proowner
	LOOP
		EXECUTE pg_catalog.format('GRANT EXECUTE ON FUNCTION %s TO %s', new,
			CASE WHEN grantee = 0 THEN 'PUBLIC'
				 ELSE pg_catalog.quote_ident(pg_catalog.pg_get_userbyid(grantee)) END);
	END LOOP;
END
$$;

DROP FUNCTION prom_remote_write(bytea);

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

--
-- Native histograms, read
--

-- prom_series gains a column, histograms: its return type changes, so it
-- is made anew, keeping the old one's EXECUTE grants.  The series of a
-- selector: a series of floats has its values and NULL
-- histograms, a series of native histograms NULL values and its histograms.
DO $$
DECLARE
	acl aclitem[] := (SELECT proacl FROM pg_catalog.pg_proc
		WHERE oid = 'prom_series(text, timestamptz, timestamptz)'::regprocedure);
	item record;
BEGIN
	DROP FUNCTION prom_series(text, timestamptz, timestamptz);
	EXECUTE $create$
CREATE FUNCTION prom_series(selector text, start_time timestamptz,
		end_time timestamptz)
	RETURNS TABLE (labels jsonb, ts timestamptz[], value double precision[],
		histograms prom_histogram[])
	AS 'MODULE_PATHNAME', 'prom_series'
	LANGUAGE C STRICT STABLE PARALLEL RESTRICTED ROWS 100
	$create$;
	IF acl IS NULL THEN
		RETURN;					-- the default: EXECUTE for PUBLIC
	END IF;
	REVOKE ALL ON FUNCTION prom_series(text, timestamptz, timestamptz) FROM PUBLIC;
	FOR item IN SELECT * FROM pg_catalog.aclexplode(acl)
		WHERE privilege_type = 'EXECUTE'
	LOOP
		EXECUTE pg_catalog.format('GRANT EXECUTE ON FUNCTION prom_series(text, timestamptz, timestamptz) TO %s',
			CASE WHEN item.grantee = 0 THEN 'PUBLIC'
				 ELSE pg_catalog.quote_ident(pg_catalog.pg_get_userbyid(item.grantee)) END);
	END LOOP;
END
$$;

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

-- Entries of dropped relations go with them (exemplar tables too).
CREATE OR REPLACE FUNCTION prom_catalog_forget_dropped()
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
END
$$;

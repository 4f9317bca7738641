/* promread 0.2.0 to 0.3.0 */

\echo Use "ALTER EXTENSION promread UPDATE TO '0.3.0'" to load this file. \quit

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

-- prom_regex_match's planner support: its selectivity, and an index
-- condition over the values a regex accepts.
CREATE FUNCTION prom_regex_match_support(internal)
	RETURNS internal
	AS 'MODULE_PATHNAME', 'prom_regex_match_support'
	LANGUAGE C STRICT;

ALTER FUNCTION prom_regex_match(text, text) SUPPORT prom_regex_match_support;

-- Evaluated once a scan (an index condition of prom_regex_match): it
-- costs a descent of the index per value.  VOLATILE, so that the planner
-- does not run it to estimate the condition's selectivity; its query uses
-- the scan's snapshot all the same.
CREATE FUNCTION prom_regex_label_values(relation regclass, label text,
		pattern text)
	RETURNS text[]
	AS 'MODULE_PATHNAME', 'prom_regex_label_values'
	LANGUAGE C STRICT VOLATILE PARALLEL RESTRICTED COST 10000;

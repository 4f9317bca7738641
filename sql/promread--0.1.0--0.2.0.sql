/* promread 0.1.0 to 0.2.0 */

\echo Use "ALTER EXTENSION promread UPDATE TO '0.2.0'" to load this file. \quit

CREATE FUNCTION prom_explain(selector text, start_time timestamptz,
		end_time timestamptz, "analyze" boolean DEFAULT false)
	RETURNS SETOF text
	AS 'MODULE_PATHNAME', 'prom_explain'
	LANGUAGE C STRICT VOLATILE;

CREATE FUNCTION prom_regex_match(pattern text, value text)
	RETURNS boolean
	AS 'MODULE_PATHNAME', 'prom_regex_match'
	LANGUAGE C STRICT IMMUTABLE PARALLEL SAFE;

/* promread 0.3.1 to 0.4.0: prom_remote_write reads remote write 2.0 too,
   the version named by its new content_type argument */
\echo Use "ALTER EXTENSION promread UPDATE TO '0.4.0'" to load this file. \quit

DROP FUNCTION prom_remote_write(bytea);

-- content_type: the request's Content-Type, which names the protocol
-- version (NULL: remote write 1.0); not STRICT, for its default
CREATE FUNCTION prom_remote_write(request bytea, content_type text DEFAULT NULL)
	RETURNS void
	AS 'MODULE_PATHNAME', 'prom_remote_write'
	LANGUAGE C VOLATILE;

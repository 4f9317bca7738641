/* promread 0.4.0 to 0.5.0: metrics stored as Prometheus chunks
   (docs/chunk-storage.md): the storage catalog and the functions that
   create, write, compact and read such metrics */
\echo Use "ALTER EXTENSION promread UPDATE TO '0.5.0'" to load this file. \quit

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
	retention interval
);
REVOKE ALL ON prom_storage_catalog FROM PUBLIC;
SELECT pg_catalog.pg_extension_config_dump('prom_storage_catalog', '');

CREATE VIEW prom_metric_storage AS
	SELECT metric, relation, series, chunks, head, retention
	FROM prom_storage_catalog;
GRANT SELECT ON prom_metric_storage TO PUBLIC;

-- Entries of dropped relations go with them (exemplar and storage tables too).
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
	DELETE FROM @extschema@.prom_storage_catalog AS c
	USING pg_catalog.pg_event_trigger_dropped_objects() AS d
	WHERE d.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_class'::pg_catalog.regclass
	  AND d.objsubid OPERATOR(pg_catalog.=) 0
	  AND d.objid OPERATOR(pg_catalog.=) ANY (ARRAY[c.relation, c.series,
		c.chunks, c.head]::pg_catalog.oid[]);
END
$$;

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

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

-- Compaction of metrics in chunk storage: head rows moved into chunks by
-- 2-hour windows, retention carried out (docs/chunk-storage.md).
CREATE FUNCTION prom_compact(metric text DEFAULT NULL)
	RETURNS bigint
	AS 'MODULE_PATHNAME', 'prom_compact'
	LANGUAGE C VOLATILE;

-- A metric's retention (NULL: keep everything), which prom_compact carries out.
CREATE FUNCTION prom_set_retention(metric text, retention interval)
	RETURNS void
	AS 'MODULE_PATHNAME', 'prom_set_retention'
	LANGUAGE C VOLATILE;

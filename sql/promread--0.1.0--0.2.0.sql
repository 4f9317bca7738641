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

ALTER TABLE prom_metric_catalog
	ADD COLUMN created_by_write boolean NOT NULL DEFAULT false;
CREATE OR REPLACE VIEW prom_metrics AS
	SELECT metric, relation, time_column, value_column, label_columns,
		created_by_write
	FROM prom_metric_catalog;

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

CREATE FUNCTION prom_remote_write(request bytea)
	RETURNS void
	AS 'MODULE_PATHNAME', 'prom_remote_write'
	LANGUAGE C STRICT VOLATILE;

CREATE FUNCTION prom_write_request(series jsonb)
	RETURNS bytea
	AS 'MODULE_PATHNAME', 'prom_write_request'
	LANGUAGE C STRICT IMMUTABLE PARALLEL SAFE;

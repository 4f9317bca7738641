/* promread 0.3.0 to 0.3.1 */

\echo Use "ALTER EXTENSION promread UPDATE TO '0.3.1'" to load this file. \quit

-- Label names are data: the catalog maps each label to the column that holds
-- it (label_names; NULL, as in existing registrations: the columns' names),
-- and names the jsonb column of the labels that have no column of their own.
ALTER TABLE prom_metric_catalog ADD COLUMN label_names text[]
	CHECK (pg_catalog.cardinality(label_names) OPERATOR(pg_catalog.=)
		pg_catalog.cardinality(label_columns));
ALTER TABLE prom_metric_catalog ADD COLUMN overflow_column name;

CREATE OR REPLACE VIEW prom_metrics AS
	SELECT metric, relation, time_column, value_column, label_columns,
		created_by_write,
		COALESCE(label_names,
			label_columns::pg_catalog.text[]) AS label_names,
		overflow_column
	FROM prom_metric_catalog;

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

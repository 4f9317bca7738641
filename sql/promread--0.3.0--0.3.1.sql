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

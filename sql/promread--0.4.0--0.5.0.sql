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
		c.chunks, c.head, c.late]::pg_catalog.oid[]);
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

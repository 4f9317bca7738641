-- promread's remote-read and remote-write endpoints, exposed by PostgREST
-- (v12 or later).
--
-- Load it as a superuser (or a role with CREATEROLE that owns the metric
-- tables) in the database where promread is installed:
--
--   psql -d metrics -v ON_ERROR_STOP=1 -f deploy/postgrest/api.sql
--
-- It creates, when missing, four roles (roles are shared by the cluster's
-- databases, so loading it in several databases is fine):
--
--   web_anon       PostgREST's db-anon-role: requests without a token
--   prom_reader    the role that reading tokens name in their "role" claim
--   prom_writer    the role that Prometheus's remote write token names
--   authenticator  the role PostgREST logs in as (db-uri); it may only switch
--                  to the three roles above.  Give it a password yourself:
--                  \password authenticator
--
-- and a schema "api" (PostgREST's db-schemas) holding only what PostgREST
-- exposes: the functions api.prom_remote_read(bytea) and
-- api.prom_remote_write(bytea), which PostgREST serves at POST
-- /rpc/prom_remote_read and /rpc/prom_remote_write, and the domain api."*/*"
-- that the first returns.  It can be loaded again (after an upgrade, say):
-- it replaces the functions.
--
-- Which metric tables each role may read is your decision; nothing here
-- grants SELECT on them.  For example:
--
--   GRANT SELECT ON node_cpu_seconds_total, http_requests_total TO prom_reader;
--   GRANT SELECT ON node_cpu_seconds_total TO web_anon;  -- readable without a token
--
-- Remote write inserts as prom_writer: grant it INSERT on the tables you
-- registered, and CREATE on the schema where it creates the tables of new
-- metrics (promread.write_schema, "public" unless set), whose readers you
-- name in advance.  For example:
--
--   GRANT INSERT ON http_requests_total TO prom_writer;
--   GRANT CREATE ON SCHEMA public TO prom_writer;
--   ALTER DEFAULT PRIVILEGES FOR ROLE prom_writer IN SCHEMA public
--       GRANT SELECT ON TABLES TO prom_reader;
--
-- Row-level security applies as usual, with the token's claims at hand, for
-- example one tenant's rows per token (see docs/deployment.md):
--
--   ALTER TABLE http_requests_total ENABLE ROW LEVEL SECURITY;
--   CREATE POLICY tenant_rows ON http_requests_total FOR SELECT
--       TO prom_reader, web_anon
--       USING (tenant = nullif(current_setting('request.jwt.claims', true), '')::jsonb ->> 'tenant');

DO $$
BEGIN
	IF NOT EXISTS (SELECT FROM pg_catalog.pg_roles WHERE rolname = 'web_anon') THEN
		CREATE ROLE web_anon NOLOGIN;
	END IF;
	IF NOT EXISTS (SELECT FROM pg_catalog.pg_roles WHERE rolname = 'prom_reader') THEN
		CREATE ROLE prom_reader NOLOGIN;
	END IF;
	IF NOT EXISTS (SELECT FROM pg_catalog.pg_roles WHERE rolname = 'prom_writer') THEN
		CREATE ROLE prom_writer NOLOGIN;
	END IF;
	IF NOT EXISTS (SELECT FROM pg_catalog.pg_roles WHERE rolname = 'authenticator') THEN
		CREATE ROLE authenticator LOGIN NOINHERIT NOSUPERUSER NOCREATEDB NOCREATEROLE;
	END IF;
END
$$;
GRANT web_anon TO authenticator;
GRANT prom_reader TO authenticator;
GRANT prom_writer TO authenticator;

CREATE SCHEMA IF NOT EXISTS api;
REVOKE ALL ON SCHEMA api FROM PUBLIC;
GRANT USAGE ON SCHEMA api TO web_anon, prom_reader, prom_writer;

-- With no Accept header (Prometheus sends none), PostgREST sends the raw
-- bytes of a function that returns a domain named "*/*"; the Content-Type
-- and Content-Encoding come from the response.headers that
-- prom_remote_read sets.
DO $$
BEGIN
	IF NOT EXISTS (SELECT FROM pg_catalog.pg_type
			WHERE typname = '*/*' AND typnamespace = 'api'::pg_catalog.regnamespace) THEN
		CREATE DOMAIN api."*/*" AS bytea;
	END IF;
END
$$;

-- The wrapper: ONE UNNAMED bytea parameter, so that PostgREST passes the
-- request body to it as is (when the Content-Type is
-- application/octet-stream, which nginx sets).  STABLE, so that PostgREST
-- runs it in a READ ONLY transaction.  Not SECURITY DEFINER: promread reads
-- the metric tables as the role of the token, with its privileges and
-- row-level security.  The call names the schema where promread is
-- installed, so it does not depend on the search_path.  PL/pgSQL, not SQL:
-- a SQL function is inlined where it is planned, and PostgREST prepares
-- its statements once a connection for every role, so EXECUTE on the
-- wrapper would be checked only for the role that planned it.
DO $$
DECLARE
	ext_schema name;
BEGIN
	SELECT n.nspname INTO ext_schema
	FROM pg_catalog.pg_extension e
	JOIN pg_catalog.pg_namespace n ON n.oid = e.extnamespace
	WHERE e.extname = 'promread';
	IF NOT FOUND THEN
		RAISE EXCEPTION 'promread is not installed in database %', pg_catalog.current_database()
			USING HINT = 'Run CREATE EXTENSION promread; first.';
	END IF;
	EXECUTE pg_catalog.format(
		'CREATE OR REPLACE FUNCTION api.prom_remote_read(bytea) RETURNS api."*/*" '
		'LANGUAGE plpgsql STABLE AS %L',
		pg_catalog.format('BEGIN RETURN %I.prom_remote_read($1)::api."*/*"; END', ext_schema));
	-- VOLATILE, so that PostgREST runs it in a READ WRITE transaction;
	-- returning void, it is answered 204 No Content
	-- the protocol version is named by the request's Content-Type, which
	-- nginx forwards in X-Promread-Content-Type (PostgREST needs
	-- application/octet-stream in Content-Type itself); a Content-Encoding
	-- other than snappy is 415, as the remote write specification asks
	EXECUTE pg_catalog.format(
		'CREATE OR REPLACE FUNCTION api.prom_remote_write(bytea) RETURNS void '
		'LANGUAGE plpgsql VOLATILE AS %L',
		pg_catalog.format($body$
DECLARE
	headers json := NULLIF(pg_catalog.current_setting('request.headers', true), '')::json;
BEGIN
	IF pg_catalog.lower(coalesce(headers->>'content-encoding', 'snappy')) <> 'snappy' THEN
		RAISE EXCEPTION 'remote write request of unsupported Content-Encoding "%%"',
			headers->>'content-encoding'
			USING ERRCODE = 'PT415', HINT = 'Remote write requests are snappy-compressed.';
	END IF;
	PERFORM %I.prom_remote_write($1, headers->>'x-promread-content-type');
END
$body$, ext_schema));
	EXECUTE pg_catalog.format('GRANT USAGE ON SCHEMA %I TO web_anon, prom_reader, prom_writer',
							  ext_schema);
	-- explicitly, so that the endpoint keeps working where EXECUTE on it
	-- was revoked from PUBLIC
	EXECUTE pg_catalog.format('GRANT EXECUTE ON FUNCTION %I.prom_remote_write(bytea, text) TO prom_writer',
							  ext_schema);
END
$$;
COMMENT ON FUNCTION api.prom_remote_read(bytea) IS
	'Prometheus remote read: POST /rpc/prom_remote_read, through nginx at /api/v1/read';
REVOKE ALL ON FUNCTION api.prom_remote_read(bytea) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION api.prom_remote_read(bytea) TO web_anon, prom_reader;
COMMENT ON FUNCTION api.prom_remote_write(bytea) IS
	'Prometheus remote write: POST /rpc/prom_remote_write, through nginx at /api/v1/write';
REVOKE ALL ON FUNCTION api.prom_remote_write(bytea) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION api.prom_remote_write(bytea) TO prom_writer;

// Command postgrest-standin is a TEST STAND-IN for PostgREST.  It is not
// PostgREST.
//
// Production deployments of promread run PostgREST itself (v12 or later)
// behind nginx, as docs/deployment.md describes.  PostgREST is packaged
// neither for Debian 12 nor for npm, so promread's tests, the demo and the
// benchmarks put this program in its place (scripts/lib/standin.py builds
// it once per machine).  It honours, exactly, the part of PostgREST's
// contract that the remote-read and remote-write endpoints rely on: calling
// a function with one unnamed bytea parameter.
//
//	postgrest-standin [CONFIG] [--db-uri URI] [--port PORT]
//
// CONFIG is a PostgREST configuration file (by default
// deploy/postgrest/postgrest.conf of the working directory).  As with PostgREST, every setting may be
// overridden by an environment variable PGRST_<NAME> (db-uri: PGRST_DB_URI);
// --db-uri and --port override those.  Settings read: db-uri, db-schemas,
// db-anon-role, db-extra-search-path, db-pool, db-pool-acquisition-timeout,
// jwt-secret, jwt-secret-is-base64, server-host, server-port.
//
// What it does, per request, as PostgREST does:
//
//   - POST /rpc/<fn> calls <fn> of the first schema of db-schemas (or of the
//     schema a Content-Profile header names).  Functions are known from a
//     schema cache read at start (reloaded on SIGUSR1), so unknown functions
//     (404 PGRST202) and bodies of the wrong Content-Type (400 PGRST102) are
//     refused before any SQL runs: a function with one unnamed bytea
//     parameter receives the raw body only when the Content-Type is
//     application/octet-stream.
//   - Authorization: Bearer <JWT>, HS256 with jwt-secret.  A bad token is
//     refused with 401 and PostgREST's JSON (PGRST301 for a malformed token
//     or a bad signature, PGRST303 for an expired one, with a
//     WWW-Authenticate header); the role is the token's "role" claim, or
//     db-anon-role without a token (without one either: 401 PGRST302).
//   - On a pooled connection (db-pool of them): BEGIN ISOLATION LEVEL READ
//     COMMITTED READ ONLY (READ WRITE for a VOLATILE function); then, in one
//     statement, transaction-local set_config of search_path (the schema,
//     then db-extra-search-path), role, request.jwt.claims, request.method,
//     request.path, request.headers (JSON, lower-cased names) and
//     request.cookies; then SELECT "schema"."fn"($1) with the body as a
//     binary bytea parameter (and the result in binary); then
//     current_setting('response.headers', true) and
//     current_setting('response.status', true), applied to the response;
//     COMMIT.  The five statements go in one round trip (a pipeline; after an
//     error the server skips the rest, and the transaction is rolled back);
//     all but the call are prepared once a connection (the call is planned
//     each time, so that EXECUTE on the function is checked for each
//     request's role, even where the function is inlined).
//   - HTTP/1.1 connections are kept alive (nginx's upstream keepalive reuses
//     them); each request's log line says which of its connection's it was
//     (request=N).
//   - A function returning a domain named "*/*" sends its raw bytes (with
//     Content-Type application/octet-stream unless response.headers says
//     otherwise); a function returning void is answered 204 No Content
//     without a body; other functions send their result as JSON.
//   - SQL errors: JSON {code, details, hint, message} with PostgREST's status
//     for the SQLSTATE (pgErrorStatus), Proxy-Status header included.
//
// What it does not do (PostgREST does): tables and views, GET on functions,
// functions taking JSON arguments, OpenAPI (GET / answers a short JSON
// description instead), Prefer headers, JWKS and audiences, the admin
// server, schema-cache reloads by NOTIFY.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"
)

var logger = log.New(os.Stderr, "postgrest-standin: ", 0)

// defaultConfig is the deployment's file, from the top of a checkout.
const defaultConfig = "deploy/postgrest/postgrest.conf"

// parseArguments reads [CONFIG] [--db-uri URI] [--port PORT], the flags
// before or after the file.
func parseArguments() (configPath, dbURI string, port int) {
	flags := flag.NewFlagSet("postgrest-standin", flag.ExitOnError)
	uri := flags.String("db-uri", "", "overrides db-uri (and PGRST_DB_URI)")
	portFlag := flags.Int("port", -1, "overrides server-port (and PGRST_SERVER_PORT)")
	args := os.Args[1:]
	configPath = defaultConfig
	for {
		flags.Parse(args)
		args = flags.Args()
		if len(args) == 0 {
			break
		}
		configPath = args[0]
		args = args[1:]
	}
	return configPath, *uri, *portFlag
}

func main() {
	configPath, dbURI, port := parseArguments()
	cfg, err := readConfig(configPath)
	if err != nil {
		logger.Fatal(err)
	}
	if dbURI != "" {
		cfg.dbURI = dbURI
	}
	if port >= 0 {
		cfg.port = port
	}

	pool := newPool(cfg.dbURI, cfg.pool, cfg.acquisitionTimeout)
	cache := &schemaCache{pool: pool, schemas: cfg.schemas}
	for delay := 200 * time.Millisecond; ; delay = min(delay*2, 5*time.Second) {
		err := cache.load()
		if err == nil {
			break
		}
		logger.Printf("schema cache not loaded (%v); retrying", err)
		time.Sleep(delay)
	}

	listener, err := net.Listen("tcp", net.JoinHostPort(cfg.host, strconv.Itoa(cfg.port)))
	if err != nil {
		logger.Fatal(err)
	}
	server := &http.Server{
		Handler:     &handler{cfg: cfg, pool: pool, cache: cache},
		ConnContext: countRequests,
		ErrorLog:    logger,
	}

	signals := make(chan os.Signal, 4)
	signal.Notify(signals, syscall.SIGUSR1, syscall.SIGTERM, syscall.SIGINT)
	go func() {
		for s := range signals {
			if s == syscall.SIGUSR1 {
				go func() {
					if err := cache.load(); err != nil {
						logger.Printf("schema cache not reloaded: %v", err)
					}
				}()
				continue
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			if server.Shutdown(ctx) != nil {
				server.Close()
			}
			cancel()
			return
		}
	}()

	logger.Printf("listening on %s (a test stand-in for PostgREST, not PostgREST)",
		listener.Addr())
	if err := server.Serve(listener); !errors.Is(err, http.ErrServerClosed) {
		logger.Fatal(err)
	}
	pool.closeIdle()
	fmt.Fprintln(os.Stderr, "postgrest-standin: stopped")
}

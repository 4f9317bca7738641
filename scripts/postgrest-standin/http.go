package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// handler answers the HTTP requests.
type handler struct {
	cfg   *config
	pool  *pool
	cache *schemaCache
}

type connectionCounter struct{}

// countRequests gives each HTTP connection a count of its POSTs, for the
// log's request=N (nginx's kept-alive connections).
func countRequests(ctx context.Context, _ net.Conn) context.Context {
	return context.WithValue(ctx, connectionCounter{}, new(int))
}

// marshal is JSON as PostgREST sends it (no HTML escaping, no newline).
func marshal(value any) []byte {
	var out bytes.Buffer
	encoder := json.NewEncoder(&out)
	encoder.SetEscapeHTML(false)
	encoder.Encode(value)
	return bytes.TrimSuffix(out.Bytes(), []byte("\n"))
}

// send answers with a status, headers and a body.
func send(w http.ResponseWriter, status int, body []byte, headers [][2]string) {
	for _, h := range headers {
		w.Header().Set(h[0], h[1])
	}
	if status != http.StatusNoContent {
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	}
	w.WriteHeader(status)
	if status != http.StatusNoContent {
		w.Write(body)
	}
}

// sendError answers with PostgREST's JSON error.
func sendError(w http.ResponseWriter, e *apiError) {
	body := marshal(map[string]*string{"code": &e.code, "details": e.details, "hint": e.hint,
		"message": &e.message})
	headers := append([][2]string{{"Content-Type", "application/json; charset=utf-8"},
		{"Proxy-Status", "PostgREST; error=" + e.code}}, e.headers...)
	send(w, e.status, body, headers)
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Server", "postgrest-standin")
	switch {
	case r.Method == http.MethodPost:
		h.post(w, r)
	case r.Method == http.MethodGet && r.URL.Path == "/":
		rpc := []string{}
		for _, name := range h.cache.names(h.cfg.schemas[0]) {
			rpc = append(rpc, "/rpc/"+name)
		}
		send(w, 200, marshal(map[string]any{
			"info": "postgrest-standin: a test stand-in for PostgREST, not PostgREST",
			"rpc":  rpc}), [][2]string{{"Content-Type", "application/json; charset=utf-8"}})
	default:
		io.Copy(io.Discard, r.Body)
		sendError(w, &apiError{status: 405, code: "PGRST101",
			message: "The stand-in serves only POST on /rpc/<function>"})
	}
}

// post calls a function and logs the request.
func (h *handler) post(w http.ResponseWriter, r *http.Request) {
	started := time.Now()
	served := r.Context().Value(connectionCounter{}).(*int)
	*served++
	role, status := "-", 0
	body, err := io.ReadAll(r.Body)
	if err != nil {
		status = 400
		sendError(w, &apiError{status: 400, code: "PGRST102", message: "Cannot read the body",
			details: optional(err.Error())})
	} else if role, status, err = h.rpc(w, r, body); err != nil {
		apiErr := err.(*apiError)
		status = apiErr.status
		sendError(w, apiErr)
	}
	host, _, _ := net.SplitHostPort(r.RemoteAddr)
	logger.Printf("%s POST %s %d %.1fms role=%s request=%d", host, r.URL.Path, status,
		float64(time.Since(started).Microseconds())/1000, role, *served)
}

// quoteIdent quotes an SQL identifier.
func quoteIdent(name string) string {
	return `"` + strings.ReplaceAll(name, `"`, `""`) + `"`
}

// authenticate gives the request's role, its claims and whether it is
// other than the anonymous role.
func (h *handler) authenticate(r *http.Request) (string, map[string]any, bool, *apiError) {
	var claims map[string]any
	authorization := r.Header.Get("Authorization")
	if len(authorization) >= 7 && strings.EqualFold(authorization[:7], "bearer ") {
		var apiErr *apiError
		if claims, apiErr = verifyJWT(strings.TrimSpace(authorization[7:]), h.cfg.jwtSecret); apiErr != nil {
			return "", nil, false, apiErr
		}
	}
	role, isString := claims["role"].(string)
	if !isString {
		if h.cfg.anonRole == "" {
			return "", nil, false, &apiError{status: 401, code: "PGRST302",
				message: "Anonymous access is disabled",
				headers: [][2]string{{"WWW-Authenticate", "Bearer"}}}
		}
		role = h.cfg.anonRole
	}
	if claims == nil {
		claims = map[string]any{"role": role}
	}
	return role, claims, role != h.cfg.anonRole, nil
}

// requestSettings are request.headers (lower-cased names, repeated ones
// joined) and request.cookies, as JSON.
func requestSettings(r *http.Request) (headers, cookies []byte) {
	joined := map[string]string{"host": r.Host}
	for name, values := range r.Header {
		joined[strings.ToLower(name)] = strings.Join(values, ", ")
	}
	jar := map[string]string{}
	for _, cookie := range r.Cookies() {
		jar[cookie.Name] = cookie.Value
	}
	return marshal(joined), marshal(jar)
}

// responseHeaders applies the response.headers setting (a JSON array of
// one-key objects) over the defaults.
func responseHeaders(headers [][2]string, setting []byte) ([][2]string, *apiError) {
	if len(setting) == 0 {
		return headers, nil
	}
	var items []map[string]any
	invalid := json.Unmarshal(setting, &items) != nil
	for _, item := range items {
		if len(item) != 1 {
			invalid = true
		}
		for key, value := range item {
			text, isString := value.(string)
			invalid = invalid || !isString
			headers = append(headers, [2]string{key, text})
		}
	}
	if invalid {
		return nil, &apiError{status: 500, code: "PGRST111", message: "response.headers guc " +
			"must be a JSON array composed of objects with a single key and a string value"}
	}
	return headers, nil
}

// rpc calls the function of POST /rpc/<fn> with the body and answers.  It
// returns the role and the status answered, or an *apiError to answer.
func (h *handler) rpc(w http.ResponseWriter, r *http.Request, body []byte) (string, int, error) {
	path := r.URL.Path
	name, found := strings.CutPrefix(path, "/rpc/")
	if !found || name == "" || strings.Contains(name, "/") {
		return "-", 0, &apiError{status: 404, code: "PGRST125",
			message: "Invalid path specified in request URL"}
	}
	schema := h.cfg.schemas[0]
	if profile, given := r.Header["Content-Profile"]; given {
		schema = profile[0]
		known := false
		for _, s := range h.cfg.schemas {
			known = known || s == schema
		}
		if !known {
			return "-", 0, &apiError{status: 406, code: "PGRST106", message: "The schema must " +
				"be one of the following: " + strings.Join(h.cfg.schemas, ", ")}
		}
	}
	fn, known := h.cache.get(schema, name)
	if !known {
		return "-", 0, &apiError{status: 404, code: "PGRST202",
			message: fmt.Sprintf("Could not find the function %s.%s in the schema cache",
				schema, name),
			hint: optional("The stand-in knows only functions with one unnamed bytea parameter.")}
	}
	mediaType, _, _ := strings.Cut(r.Header.Get("Content-Type"), ";")
	mediaType = strings.ToLower(strings.TrimSpace(mediaType))
	if mediaType != "application/octet-stream" {
		return "-", 0, &apiError{status: 400, code: "PGRST102", message: "Empty or invalid json",
			details: optional(fmt.Sprintf("A function with one unnamed bytea parameter takes "+
				"a body of Content-Type application/octet-stream, not %q.", mediaType))}
	}
	role, claims, authenticated, apiErr := h.authenticate(r)
	if apiErr != nil {
		return "-", 0, apiErr
	}

	searchPath := quoteIdent(schema)
	for _, s := range h.cfg.extraSearchPath {
		searchPath += ", " + quoteIdent(s)
	}
	headersJSON, cookiesJSON := requestSettings(r)
	call := fmt.Sprintf("SELECT %s.%s($1)", quoteIdent(schema), quoteIdent(name))
	if !fn.raw && !fn.void {
		call = fmt.Sprintf("SELECT pg_catalog.to_json(%s.%s($1))::text", quoteIdent(schema),
			quoteIdent(name))
	}
	access := "READ ONLY"
	if fn.volatile {
		access = "READ WRITE"
	}
	statements := []statement{
		{sql: "BEGIN ISOLATION LEVEL READ COMMITTED " + access, prepare: true},
		{sql: setConfigSQL, prepare: true, values: [][]byte{[]byte(searchPath), []byte(role),
			marshal(claims), []byte("POST"), []byte(path), headersJSON, cookiesJSON}},
		// the call planned each time: a plan kept across requests would
		// keep a SQL function inlined for a role that may not call it
		{sql: call, values: [][]byte{body}, types: []uint32{byteaOID}, binary: true,
			binaryResult: fn.raw, columns: 1},
		{sql: responseSettingsSQL, columns: 2, prepare: true},
		{sql: "COMMIT", prepare: true},
	}
	c, apiErr := h.pool.acquire()
	if apiErr != nil {
		return role, 0, apiErr
	}
	rows, serverError, err := c.run(statements)
	h.pool.release(c, err != nil)
	if err != nil {
		return role, 0, &apiError{status: 503, code: "PGRST001",
			message: "Database client error. Retrying the connection.",
			details: optional(err.Error())}
	}
	if serverError != nil {
		return role, 0, &apiError{
			status: pgErrorStatus(serverError.Code, serverError.Message, authenticated),
			code:   serverError.Code, message: serverError.Message,
			details: optional(serverError.Detail), hint: optional(serverError.Hint)}
	}
	result, settingHeaders, settingStatus := rows[2][0], rows[3][0], rows[3][1]

	status := 200
	var headers [][2]string
	switch {
	case fn.void:
		status, result = 204, nil
	case fn.raw:
		headers = [][2]string{{"Content-Type", "application/octet-stream"}}
	default:
		headers = [][2]string{{"Content-Type", "application/json; charset=utf-8"}}
		if result == nil {
			result = []byte("null")
		}
	}
	if headers, apiErr = responseHeaders(headers, settingHeaders); apiErr != nil {
		return role, 0, apiErr
	}
	if len(settingStatus) > 0 {
		var err error
		if status, err = strconv.Atoi(string(settingStatus)); err != nil || status < 100 ||
			status > 599 {
			return role, 0, &apiError{status: 500, code: "PGRST112",
				message: "response.status guc must be a valid status code"}
		}
	}
	send(w, status, result, headers)
	return role, status, nil
}

const setConfigSQL = "SELECT pg_catalog.set_config('search_path', $1, true), " +
	"pg_catalog.set_config('role', $2, true), " +
	"pg_catalog.set_config('request.jwt.claims', $3, true), " +
	"pg_catalog.set_config('request.method', $4, true), " +
	"pg_catalog.set_config('request.path', $5, true), " +
	"pg_catalog.set_config('request.headers', $6, true), " +
	"pg_catalog.set_config('request.cookies', $7, true)"

const responseSettingsSQL = "SELECT pg_catalog.current_setting('response.headers', true), " +
	"pg_catalog.current_setting('response.status', true)"

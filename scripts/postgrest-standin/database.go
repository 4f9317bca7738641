package main

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

const byteaOID = 17

// statement is one statement of a request: its SQL, parameter values (nil
// for NULL), their types (0: inferred), whether they and the result are
// binary, how many columns of its first row are wanted, and whether it is
// prepared once a connection (or parsed and planned each time).
type statement struct {
	sql          string
	values       [][]byte
	types        []uint32
	binary       bool
	binaryResult bool
	columns      int
	prepare      bool
}

// formats is a statement's parameter and result format codes.
func (s *statement) formats() (params, results []int16) {
	code := func(binary bool) int16 {
		if binary {
			return 1
		}
		return 0
	}
	params = make([]int16, len(s.values))
	for i := range params {
		params[i] = code(s.binary)
	}
	return params, []int16{code(s.binaryResult)}
}

// connection is a pooled connection and the statements prepared on it so
// far, by SQL text: each is parsed and planned once a connection, as
// PostgREST's prepared statements are.
type connection struct {
	pg       *pgconn.PgConn
	prepared map[string]string
	names    int // statement names given, prepared or not
}

// errConnectionLost wraps whatever broke a connection mid-request.
type errConnectionLost struct{ err error }

func (e errConnectionLost) Error() string { return e.err.Error() }

// firstRow copies the wanted columns of a result's first row (nil for
// NULL), then reads the result to its end.
func firstRow(result *pgconn.ResultReader, columns int) ([][]byte, error) {
	row := make([][]byte, columns)
	if result.NextRow() {
		for i, value := range result.Values()[:columns] {
			if value != nil {
				row[i] = append(make([]byte, 0, len(value)), value...)
			}
		}
	}
	_, err := result.Close()
	return row, err
}

// run runs the statements of a transaction in one round trip (a pipeline):
// the first row of each, and the first error the server sent (or nil).
// After an error the server skips the rest, and the transaction is rolled
// back.  Any other failure is an errConnectionLost.
func (c *connection) run(statements []statement) ([][][]byte, *pgconn.PgError, error) {
	ctx := context.Background()
	pipeline := c.pg.StartPipeline(ctx)
	type expected struct {
		index     int
		preparing string // the name it is being prepared under, or "" for its execution
	}
	var queue []expected
	for i := range statements {
		s := &statements[i]
		params, results := s.formats()
		if !s.prepare {
			pipeline.SendQueryParams(s.sql, s.values, s.types, params, results)
			queue = append(queue, expected{i, ""})
			continue
		}
		name, known := c.prepared[s.sql]
		if !known {
			c.names++
			name = fmt.Sprintf("standin_%d", c.names)
			pipeline.SendPrepare(name, s.sql, s.types)
			queue = append(queue, expected{i, name})
		}
		pipeline.SendQueryPrepared(name, s.values, params, results)
		queue = append(queue, expected{i, ""})
	}
	rows := make([][][]byte, len(statements))
	var serverError *pgconn.PgError
	err := pipeline.Sync()
	for _, e := range queue {
		if err != nil {
			break
		}
		var result any
		if result, err = pipeline.GetResults(); err != nil {
			break
		}
		switch r := result.(type) {
		case *pgconn.StatementDescription:
			c.prepared[statements[e.index].sql] = e.preparing
		case *pgconn.ResultReader:
			rows[e.index], err = firstRow(r, statements[e.index].columns)
		default:
			err = fmt.Errorf("pipeline: unexpected %T", result)
		}
	}
	if errors.As(err, &serverError) {
		err = nil // the server skipped the rest: only the sync is left
	}
	if err == nil {
		var result any
		result, err = pipeline.GetResults()
		if _, synced := result.(*pgconn.PipelineSync); err == nil && !synced {
			err = fmt.Errorf("pipeline: expected the sync, not %T", result)
		}
	}
	if closeErr := pipeline.Close(); err == nil && closeErr != nil &&
		!errors.As(closeErr, new(*pgconn.PgError)) {
		err = closeErr
	}
	if err == nil && serverError != nil && c.pg.TxStatus() != 'I' {
		_, err = c.pg.Exec(ctx, "ROLLBACK").ReadAll()
	}
	if err != nil {
		return nil, nil, errConnectionLost{err}
	}
	return rows, serverError, nil
}

// pool holds up to size connections, connected on first use; the most
// recently used idle one is taken first, so that a few stay warm.
type pool struct {
	dsn     string
	timeout time.Duration
	slots   chan struct{} // one token a connection in use
	mu      sync.Mutex
	idle    []*connection
}

func newPool(dsn string, size int, timeout time.Duration) *pool {
	return &pool{dsn: dsn, timeout: timeout, slots: make(chan struct{}, size)}
}

// acquire takes a slot (or times out as PostgREST does) and an idle
// connection, or connects.
func (p *pool) acquire() (*connection, *apiError) {
	select {
	case p.slots <- struct{}{}:
	default:
		timer := time.NewTimer(p.timeout)
		defer timer.Stop()
		select {
		case p.slots <- struct{}{}:
		case <-timer.C:
			return nil, &apiError{status: 504, code: "PGRST003",
				message: "Timed out acquiring connection from connection pool."}
		}
	}
	p.mu.Lock()
	for len(p.idle) > 0 {
		c := p.idle[len(p.idle)-1]
		p.idle = p.idle[:len(p.idle)-1]
		if !c.pg.IsClosed() {
			p.mu.Unlock()
			return c, nil
		}
	}
	p.mu.Unlock()
	pg, err := pgconn.Connect(context.Background(), p.dsn)
	if err != nil {
		<-p.slots
		logger.Printf("cannot connect: %v", err)
		return nil, &apiError{status: 503, code: "PGRST000",
			message: "Database connection error. Retrying the connection.",
			details: optional(err.Error())}
	}
	return &connection{pg: pg, prepared: map[string]string{}}, nil
}

// release gives a connection back, or closes it if it broke.
func (p *pool) release(c *connection, broken bool) {
	if broken || c.pg.IsClosed() {
		c.pg.Close(context.Background())
	} else {
		p.mu.Lock()
		p.idle = append(p.idle, c)
		p.mu.Unlock()
	}
	<-p.slots
}

// closeIdle closes the idle connections, at exit.
func (p *pool) closeIdle() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.idle {
		c.pg.Close(context.Background())
	}
	p.idle = nil
}

// function is what the schema cache knows of a callable function.
type function struct {
	volatile bool // VOLATILE: called in a READ WRITE transaction
	raw      bool // returns the domain "*/*": its bytes are the answer
	void     bool // returns void: 204 without a body
}

const schemaCacheSQL = `
SELECT n.nspname, p.proname, p.provolatile = 'v',
       rt.typtype = 'd' AND rt.typname = '*/*',
       rt.oid = 'pg_catalog.void'::pg_catalog.regtype
FROM pg_catalog.pg_proc p
JOIN pg_catalog.pg_namespace n ON n.oid = p.pronamespace
JOIN pg_catalog.pg_type rt ON rt.oid = p.prorettype
WHERE n.nspname = ANY($1::pg_catalog.text[])
  AND p.prokind = 'f' AND NOT p.proretset
  AND p.pronargs = 1 AND p.proargtypes[0] = 'pg_catalog.bytea'::pg_catalog.regtype
  AND (p.proargnames IS NULL OR p.proargnames[1] = '')`

// schemaCache holds the functions PostgREST would call with the raw body,
// by schema and name.
type schemaCache struct {
	pool      *pool
	schemas   []string
	mu        sync.RWMutex
	functions map[[2]string]function
}

// textArray is a text[] literal of the items.
func textArray(items []string) string {
	quoted := make([]string, len(items))
	for i, item := range items {
		item = strings.ReplaceAll(item, `\`, `\\`)
		quoted[i] = `"` + strings.ReplaceAll(item, `"`, `\"`) + `"`
	}
	return "{" + strings.Join(quoted, ",") + "}"
}

// load reads the functions anew.
func (cache *schemaCache) load() error {
	c, apiErr := cache.pool.acquire()
	if apiErr != nil {
		return apiErr
	}
	result := c.pg.ExecParams(context.Background(), schemaCacheSQL,
		[][]byte{[]byte(textArray(cache.schemas))}, nil, nil, nil).Read()
	if result.Err != nil {
		cache.pool.release(c, true)
		return result.Err
	}
	cache.pool.release(c, false)
	functions := map[[2]string]function{}
	var names []string
	for _, row := range result.Rows {
		key := [2]string{string(row[0]), string(row[1])}
		functions[key] = function{volatile: string(row[2]) == "t", raw: string(row[3]) == "t",
			void: string(row[4]) == "t"}
		names = append(names, key[0]+"."+key[1])
	}
	cache.mu.Lock()
	cache.functions = functions
	cache.mu.Unlock()
	sort.Strings(names)
	if len(names) == 0 {
		names = []string{"no functions"}
	}
	logger.Printf("schema cache loaded: %s", strings.Join(names, ", "))
	return nil
}

// get is the function of that schema and name, if there is one.
func (cache *schemaCache) get(schema, name string) (function, bool) {
	cache.mu.RLock()
	defer cache.mu.RUnlock()
	f, ok := cache.functions[[2]string{schema, name}]
	return f, ok
}

// names are the functions of a schema, sorted.
func (cache *schemaCache) names(schema string) []string {
	cache.mu.RLock()
	defer cache.mu.RUnlock()
	var out []string
	for key := range cache.functions {
		if key[0] == schema {
			out = append(out, key[1])
		}
	}
	sort.Strings(out)
	return out
}

package sqlite

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"strings"
	"time"

	_ "modernc.org/sqlite" // registers the "sqlite" database/sql driver
)

// conn is one SQLite connection with its prepared statements, cached by
// stmtKey. It is used by one goroutine at a time: the writer connection by the
// writer goroutine and the Update function whose turn it is, a read connection
// by the View that took it from the pool.
//
// Statements run on the driver connection itself, not through database/sql:
// database/sql's statement path (locks, argument conversion, Rows and Scan)
// cost about as much as SQLite's own work for the store's small statements.
// database/sql opens and closes the connection and runs the migrations; the
// store holds the sql.Conn for the connection's whole life and never uses
// both at once, so keeping the driver connection Conn.Raw handed out is safe.
type conn struct {
	c     *sql.Conn
	dc    driver.Conn
	stmts map[stmtKey]driver.Stmt
	args  []driver.NamedValue // reused for each statement's arguments
}

func newConn(c *sql.Conn) (*conn, error) {
	var dc driver.Conn
	if err := c.Raw(func(d any) error {
		var ok bool
		dc, ok = d.(driver.Conn)
		if !ok {
			return fmt.Errorf("sqlite: driver connection %T", d)
		}
		return nil
	}); err != nil {
		return nil, err
	}
	return &conn{c: c, dc: dc, stmts: make(map[stmtKey]driver.Stmt)}, nil
}

// stmt returns the prepared statement for key, preparing it on first use.
func (c *conn) stmt(key stmtKey) (driver.Stmt, error) {
	if st, ok := c.stmts[key]; ok {
		return st, nil
	}
	st, err := c.dc.(driver.ConnPrepareContext).PrepareContext(context.Background(), key.sql())
	if err != nil {
		return nil, dbErr("prepare", err)
	}
	c.stmts[key] = st
	return st, nil
}

// named converts statement arguments for the driver (an int becomes an
// int64) into c.args.
func (c *conn) named(args []any) []driver.NamedValue {
	nv := c.args[:0]
	for i, a := range args {
		if n, ok := a.(int); ok {
			a = int64(n)
		}
		nv = append(nv, driver.NamedValue{Ordinal: i + 1, Value: a})
	}
	c.args = nv
	return nv
}

// exec runs a fixed statement and returns the number of rows it changed.
// Statements run without the caller's context (see query.go).
func (c *conn) exec(_ context.Context, f fixedStmt, args ...any) (int64, error) {
	st, err := c.stmt(stmtKey{fixed: f})
	if err != nil {
		return 0, err
	}
	res, err := st.(driver.StmtExecContext).ExecContext(context.Background(), c.named(args))
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

// query runs the statement of key and returns its rows, which the caller
// must close.
func (c *conn) query(key stmtKey, args []any) (driver.Rows, error) {
	st, err := c.stmt(key)
	if err != nil {
		return nil, err
	}
	return st.(driver.StmtQueryContext).QueryContext(context.Background(), c.named(args))
}

// close closes the statements and gives the connection back to its pool.
func (c *conn) close() error {
	var errs []error
	for _, st := range c.stmts {
		errs = append(errs, st.Close())
	}
	clear(c.stmts)
	errs = append(errs, c.c.Close())
	return errors.Join(errs...)
}

// dsn builds a modernc.org/sqlite data source name for the database file at
// path (absolute) with the given PRAGMAs. The path is a file: URI so that any
// character in it is escaped rather than taken for a query string.
func dsn(path string, pragmas ...string) string {
	p := filepath.ToSlash(path)
	if !strings.HasPrefix(p, "/") {
		p = "/" + p // a Windows drive path: file:///C:/...
	}
	q := url.Values{}
	for _, pr := range pragmas {
		q.Add("_pragma", pr)
	}
	u := url.URL{Scheme: "file", Path: p, RawQuery: q.Encode()}
	return u.String()
}

// openDB opens a database handle that keeps up to n connections.
func openDB(dsn string, n int) (*sql.DB, error) {
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("sqlite: open: %w", err)
	}
	db.SetMaxOpenConns(n)
	db.SetMaxIdleConns(n)
	db.SetConnMaxLifetime(0)
	db.SetConnMaxIdleTime(0)
	return db, nil
}

func busyPragma(d time.Duration) string {
	return fmt.Sprintf("busy_timeout(%d)", d.Milliseconds())
}

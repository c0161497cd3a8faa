package sqlite

import (
	"context"
	"database/sql"
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
type conn struct {
	c     *sql.Conn
	stmts map[stmtKey]*sql.Stmt
}

func newConn(c *sql.Conn) *conn {
	return &conn{c: c, stmts: make(map[stmtKey]*sql.Stmt)}
}

// stmt returns the prepared statement for key, preparing it on first use.
func (c *conn) stmt(key stmtKey) (*sql.Stmt, error) {
	if st, ok := c.stmts[key]; ok {
		return st, nil
	}
	st, err := c.c.PrepareContext(context.Background(), key.sql())
	if err != nil {
		return nil, dbErr("prepare", err)
	}
	c.stmts[key] = st
	return st, nil
}

// exec runs a fixed statement.
func (c *conn) exec(ctx context.Context, f fixedStmt, args ...any) (sql.Result, error) {
	st, err := c.stmt(stmtKey{fixed: f})
	if err != nil {
		return nil, err
	}
	return st.ExecContext(ctx, args...)
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

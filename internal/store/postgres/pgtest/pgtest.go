// Package pgtest gives a test a PostgreSQL schema of its own, in the
// database that HOIST_TEST_DATABASE_URL names, and drops it when the test
// ends. Without that variable, a test that needs PostgreSQL skips, saying
// which variable to set.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// Env names the variable holding the test database's connection string
// (a postgres:// URL or keyword=value pairs; the PG* variables fill in
// what it leaves out, so an empty value means the PG* variables alone).
const Env = "HOIST_TEST_DATABASE_URL"

// Skipped is the message of a test skipped for want of a database.
const Skipped = "PostgreSQL tests skipped: set " + Env + " to a connection string (empty: the PG* variables) of a database where tests may create schemas (CONTRIBUTING.md)"

// URL returns a connection string for a new, empty schema, dropped when t
// ends, or skips t when Env is not set.
func URL(t testing.TB) string {
	t.Helper()
	base, ok := os.LookupEnv(Env)
	if !ok {
		t.Skip(Skipped)
	}
	var b [6]byte
	_, _ = rand.Read(b[:])
	schema := "hoist_test_" + hex.EncodeToString(b[:])
	exec(t, base, "CREATE SCHEMA "+schema)
	t.Cleanup(func() { exec(t, base, "DROP SCHEMA "+schema+" CASCADE") })
	return WithParam(base, "search_path", schema)
}

// exec runs one statement on a connection of its own.
func exec(t testing.TB, connStr, sql string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := pgx.Connect(ctx, connStr)
	if err != nil {
		t.Fatalf("pgtest: connect to the database of %s: %v", Env, err)
	}
	defer c.Close(ctx)
	if _, err := c.Exec(ctx, sql); err != nil {
		t.Fatalf("pgtest: %s: %v", sql, err)
	}
}

// WithParam returns connStr with the parameter name set to value, in
// either form of connection string.
func WithParam(connStr, name, value string) string {
	if strings.HasPrefix(connStr, "postgres://") || strings.HasPrefix(connStr, "postgresql://") {
		if u, err := url.Parse(connStr); err == nil {
			q := u.Query()
			q.Set(name, value)
			u.RawQuery = q.Encode()
			return u.String()
		}
	}
	return strings.TrimSpace(connStr + " " + name + "=" + value)
}

// WaitFor polls cond every 20 ms until it holds, and fails t after 20 s:
// for what another replica's loop does on its own time (real time, not a
// test's clock).
func WaitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not after 20 s", what)
		}
		time.Sleep(20 * time.Millisecond) // polling interval, not a wait for time to pass
	}
}

// Package pgstore opens a PostgreSQL store for a test, on a schema of its
// own (pgtest.URL), closed when the test ends; the test skips without a
// test database. It is a package of its own because the postgres
// package's own tests use pgtest, which therefore cannot import postgres.
package pgstore

import (
	"testing"

	"github.com/hoistgg/hoist/internal/store/postgres"
	"github.com/hoistgg/hoist/internal/store/postgres/pgtest"
)

// Open returns a PostgreSQL store on a new, empty schema, closed when t
// ends, or skips t when no test database is set (pgtest.Env).
func Open(t testing.TB) *postgres.Store {
	t.Helper()
	st, err := postgres.Open(t.Context(), pgtest.URL(t), postgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

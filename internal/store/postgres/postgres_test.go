package postgres

import (
	"context"
	"testing"

	"github.com/hoistgg/hoist/internal/store"
	"github.com/hoistgg/hoist/internal/store/postgres/pgtest"
	"github.com/hoistgg/hoist/internal/store/storetest"
)

// openTest opens a store on a fresh schema, closed when t ends.
func openTest(t testing.TB, opts Options) *Store {
	t.Helper()
	s, err := Open(context.Background(), pgtest.URL(t), opts)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// TestConformance runs the store conformance suite, each test in a schema
// of its own; the suite's lease clock moves the database's by ClockShift.
func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T, env storetest.Env) store.Store {
		return openTest(t, Options{ClockShift: env.Elapsed})
	})
}

package metrics

import (
	"encoding/json"
	"testing"

	"github.com/hoistgg/hoist/internal/store"
	"github.com/hoistgg/hoist/internal/store/journal"
)

// openJournal opens a journal store in a temporary directory.
func openJournal(tb testing.TB) store.Store {
	tb.Helper()
	st, err := journal.Open(tb.TempDir(), journal.Options{BufferedWrites: true})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = st.Close() })
	return st
}

// mustJSON encodes v.
func mustJSON(tb testing.TB, v any) []byte {
	tb.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

package postgres

import (
	"testing"

	"github.com/hoistgg/hoist/internal/store/storetest"
)

// BenchmarkStore runs the shared store benchmarks (storetest.Benchmarks)
// on a schema of its own in the database of HOIST_TEST_DATABASE_URL. Each
// Update is one transaction and one COMMIT; PostgreSQL shares a WAL flush
// among the commits that wait for it at once.
func BenchmarkStore(b *testing.B) {
	storetest.Benchmarks(b, func(b *testing.B) storetest.Counted {
		s := openTest(b, Options{})
		return storetest.Counted{Store: s, Counters: func() (int64, int64) {
			st := s.Stats()
			return st.Commits, st.Commits
		}}
	})
}

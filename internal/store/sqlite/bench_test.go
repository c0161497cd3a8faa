package sqlite

import (
	"testing"

	"github.com/hoistgg/hoist/internal/store/storetest"
)

// BenchmarkStore runs the shared store benchmarks (storetest.Benchmarks).
func BenchmarkStore(b *testing.B) {
	storetest.Benchmarks(b, func(b *testing.B) storetest.Counted {
		s := openTemp(b)
		return storetest.Counted{Store: s, Counters: func() (int64, int64) {
			st := s.Stats()
			return st.Batches, st.Updates
		}}
	})
}

package journal

import (
	"testing"

	"github.com/hoistgg/hoist/internal/store/storetest"
)

// BenchmarkStore runs the shared store benchmarks (storetest.Benchmarks).
func BenchmarkStore(b *testing.B) {
	storetest.Benchmarks(b, func(b *testing.B) storetest.Counted {
		s, err := Open(b.TempDir(), Options{})
		if err != nil {
			b.Fatalf("Open: %v", err)
		}
		b.Cleanup(func() { s.Close() })
		return storetest.Counted{Store: s, Counters: func() (int64, int64) {
			st := s.Stats()
			return st.Batches, st.Updates
		}}
	})
}

package store_test

import (
	"context"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hoistgg/hoist/internal/clock"
	"github.com/hoistgg/hoist/internal/store"
)

var manualStart = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

// TestLoopsRunOnAdvance: a leased and a sharded loop on a manual clock run
// a pass at once on an advance, even one shorter than their interval, and
// still run every interval of real time.
func TestLoopsRunOnAdvance(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := clock.NewManual(manualStart)
		var leased, sharded atomic.Int32
		go store.RunLeased(t.Context(), &leaseStore{}, store.Loop{Name: "l", Holder: "a", Interval: time.Minute,
			TTL: time.Hour, Clock: m, Work: func(context.Context) error { leased.Add(1); return nil }})
		go store.RunSharded(t.Context(), newMemLeases(), store.ShardedLoop{Name: "s", Holder: "a",
			Interval: time.Minute, TTL: time.Hour, Clock: m,
			Keys: func(context.Context) ([]string, error) { return []string{"k"}, nil },
			Work: func(context.Context, *store.Held) error { sharded.Add(1); return nil }})
		synctest.Wait()
		if _, err := m.Advance(30 * time.Second); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if l, s := leased.Load(), sharded.Load(); l != 1 || s != 1 {
			t.Fatalf("after an advance of 30s: the leased loop ran %d times, the sharded one %d; want 1 and 1", l, s)
		}
		time.Sleep(time.Minute)
		synctest.Wait()
		if l, s := leased.Load(), sharded.Load(); l != 2 || s != 2 {
			t.Fatalf("after a minute of real time: %d and %d passes, want 2 and 2", l, s)
		}
	})
}

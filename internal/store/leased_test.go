package store_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hoistgg/hoist/internal/store"
)

// leaseStore is a Store with only leases.
type leaseStore struct {
	store.Store
	mu      sync.Mutex
	holder  string
	expires time.Time
}

func (s *leaseStore) Lease(_ context.Context, name, holder string, now time.Time, ttl time.Duration) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.holder == holder || !now.Before(s.expires) {
		s.holder, s.expires = holder, now.Add(ttl)
		return true, nil
	}
	return false, nil
}

// TestRunLeased: of two replicas running the same loop, only the lease
// holder works; when it stops, the other takes over once the lease ran out.
func TestRunLeased(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := &leaseStore{}
		var runs [2]atomic.Int32
		ctxA, stopA := context.WithCancel(t.Context())
		ctxB, stopB := context.WithCancel(t.Context())
		defer stopB()
		loop := func(i int, holder string) store.Loop {
			return store.Loop{Name: "l", Holder: holder, Interval: time.Second, TTL: 5 * time.Second,
				Work: func(context.Context) error { runs[i].Add(1); return nil }}
		}
		go store.RunLeased(ctxA, st, loop(0, "a"))
		time.Sleep(500 * time.Millisecond) // a starts first
		go store.RunLeased(ctxB, st, loop(1, "b"))
		time.Sleep(10*time.Second + time.Millisecond)
		if a, b := runs[0].Load(), runs[1].Load(); a != 10 || b != 0 {
			t.Fatalf("while a holds the lease: a ran %d times, b %d; want 10 and 0", a, b)
		}
		stopA()
		time.Sleep(10 * time.Second)
		if b := runs[1].Load(); b < 4 || b > 6 {
			t.Fatalf("after a stopped and its lease ran out, b ran %d times in 10 s, want about 5", b)
		}
	})
}

// TestRunLeasedKick: a kick runs the work before the next tick.
func TestRunLeasedKick(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		kick := make(chan struct{}, 1)
		var runs atomic.Int32
		go store.RunLeased(t.Context(), &leaseStore{}, store.Loop{Name: "l", Holder: "a", Interval: time.Hour, Kick: kick,
			Work: func(context.Context) error { runs.Add(1); return nil }})
		kick <- struct{}{}
		synctest.Wait()
		if n := runs.Load(); n != 1 {
			t.Fatalf("ran %d times after one kick, want 1", n)
		}
	})
}

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

// leaseStore is a Store with only leases (AcquireLease, by time.Now: the
// bubble's clock).
type leaseStore struct {
	store.Store
	mu      sync.Mutex
	holder  string
	expires time.Time
	term    int64
}

func (s *leaseStore) AcquireLease(_ context.Context, name, holder string, ttl time.Duration) (store.Grant, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	if s.holder == holder || !now.Before(s.expires) {
		if s.holder != holder || !now.Before(s.expires) {
			s.term++
		}
		s.holder, s.expires = holder, now.Add(ttl)
		return store.Grant{Name: name, Holder: holder, Term: s.term, Expires: s.expires}, true, nil
	}
	return store.Grant{}, false, nil
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

// TestRunLeasedFenced: WorkFenced gets the lease's grant, its term the
// same while the holder renews it, a new one after another holder had it.
func TestRunLeasedFenced(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := &leaseStore{}
		var mu sync.Mutex
		var terms []int64
		ctxA, stopA := context.WithCancel(t.Context())
		go store.RunLeased(ctxA, st, store.Loop{Name: "l", Holder: "a", Interval: time.Second, TTL: 3 * time.Second,
			WorkFenced: func(_ context.Context, g store.Grant) error {
				mu.Lock()
				defer mu.Unlock()
				terms = append(terms, g.Term)
				return nil
			}})
		time.Sleep(3*time.Second + time.Millisecond)
		stopA()
		time.Sleep(5 * time.Second) // a's lease runs out
		if _, ok, _ := st.AcquireLease(t.Context(), "l", "b", time.Minute); !ok {
			t.Fatal("b could not take the lease")
		}
		mu.Lock()
		defer mu.Unlock()
		if len(terms) != 3 || terms[0] != 1 || terms[2] != 1 || st.term != 2 {
			t.Fatalf("terms %v (then %d), want a's three turns in term 1 and b's in 2", terms, st.term)
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

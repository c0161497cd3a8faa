package storetest

import (
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/hoistgg/hoist/internal/store"
)

var leaseTests = []test{
	{"Sequence", plain(testLeaseSequence)},
	{"NamesAreSeparate", plain(testLeaseNames)},
	{"OneHolderAtOnce", plain(testLeaseRace)},
}

// leaseEpoch is the fake clock's start; leases take "now" as an argument.
var leaseEpoch = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

func testLeaseSequence(t *testing.T, s store.Store) {
	const ttl = 10 * time.Second
	steps := []struct {
		holder string
		at     time.Duration
		want   bool
	}{
		{"A", 0, true},                                  // free: A takes it until 10s
		{"B", 1 * time.Second, false},                   // A holds it
		{"A", 5 * time.Second, true},                    // A renews until 15s
		{"B", 12 * time.Second, false},                  // still A's thanks to the renewal
		{"B", 16 * time.Second, true},                   // A's lease expired at 15s
		{"A", 17 * time.Second, false},                  // now B holds it
		{"B", 20 * time.Second, true},                   // B renews until 30s
		{"A", 30*time.Second - time.Millisecond, false}, // just before B's expiry
		{"A", 30*time.Second + time.Millisecond, true},  // just after it
	}
	for i, st := range steps {
		got, err := s.Lease(t.Context(), "reaper", st.holder, leaseEpoch.Add(st.at), ttl)
		if err != nil {
			t.Fatalf("step %d: Lease: %v", i, err)
		}
		if got != st.want {
			t.Errorf("step %d: %s at %v: got %v, want %v", i, st.holder, st.at, got, st.want)
		}
	}
}

func testLeaseNames(t *testing.T, s store.Store) {
	for _, name := range []string{"scaler", "reaper", "placer"} {
		ok, err := s.Lease(t.Context(), name, "holder-"+name, leaseEpoch, time.Minute)
		if err != nil || !ok {
			t.Errorf("Lease %s: %v %v, want true", name, ok, err)
		}
	}
	// Leases are not records.
	if n := count(t, s, store.Query{Kind: kindItem}); n != 0 {
		t.Errorf("leases show up as records: %d", n)
	}
}

func testLeaseRace(t *testing.T, s store.Store) {
	const n = 20
	got := make([]bool, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			ok, err := s.Lease(t.Context(), "singleton", "replica-"+strconv.Itoa(i), leaseEpoch, time.Minute)
			if err != nil {
				t.Errorf("Lease: %v", err)
			}
			got[i] = ok
		})
	}
	wg.Wait()
	holders := 0
	for _, ok := range got {
		if ok {
			holders++
		}
	}
	if holders != 1 {
		t.Errorf("%d replicas got the lease, want exactly 1", holders)
	}
}

package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/hoistgg/hoist/internal/store"
)

// LeaseFailover checks that a loop guarded by lease fails over: run
// starts the loop of a replica until its context ends. Replica a runs it
// for settle and must then hold the lease; a dies (its context ends, and
// it gives nothing up); replica b must take the lease over within 15 s.
// what names the loop in failures. It sleeps: call it inside a
// testing/synctest bubble, whose fake clock the sleeps advance.
func LeaseFailover(t *testing.T, st store.Store, lease, what string, settle time.Duration, run func(ctx context.Context, replica string)) {
	t.Helper()
	holder := func() string {
		gs, err := st.Leases(context.Background(), lease)
		if err != nil || len(gs) == 0 {
			return ""
		}
		return gs[0].Holder
	}
	ctxA, die := context.WithCancel(context.Background())
	doneA := make(chan struct{})
	go func() { defer close(doneA); run(ctxA, "a") }()
	time.Sleep(settle)
	if h := holder(); h != "a" {
		t.Fatalf("holder %q, want a", h)
	}
	die() // a's lease stays: it gives nothing up
	<-doneA
	ctxB, stopB := context.WithCancel(context.Background())
	doneB := make(chan struct{})
	go func() { defer close(doneB); run(ctxB, "b") }()
	died := time.Now()
	for holder() != "b" {
		if time.Since(died) > 15*time.Second {
			t.Fatalf("15 s after a died %s's lease is still %q's", what, holder())
		}
		time.Sleep(100 * time.Millisecond)
	}
	stopB()
	<-doneB
}

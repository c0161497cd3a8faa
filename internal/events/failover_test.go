package events

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hoistgg/hoist/internal/store/journal"
)

// TestHousekeepingFailover: when the replica running the housekeeping
// dies (its lease left held), another replica's takes it over within 15 s
// (it sends nothing, so its lease need not outlast a receiver's timeout).
func TestHousekeepingFailover(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st, err := journal.Open(t.TempDir(), journal.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		run := func(ctx context.Context, replica string) {
			_ = New(Config{Store: st, Region: "us-west-2", Account: "123456789012", Secret: secret, ReplicaID: replica}).Run(ctx)
		}
		holder := func() string {
			gs, err := st.Leases(context.Background(), leaseName)
			if err != nil || len(gs) == 0 {
				return ""
			}
			return gs[0].Holder
		}
		ctxA, die := context.WithCancel(context.Background())
		doneA := make(chan struct{})
		go func() { defer close(doneA); run(ctxA, "a") }()
		time.Sleep(3 * time.Second)
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
				t.Fatalf("15 s after a died the housekeeping's lease is still %q's", holder())
			}
			time.Sleep(100 * time.Millisecond)
		}
		stopB()
		<-doneB
	})
}

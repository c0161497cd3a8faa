package matchmaking

import (
	"context"
	"testing"
	"time"

	"github.com/hoistgg/hoist/internal/store"
	"github.com/hoistgg/hoist/internal/store/postgres"
	"github.com/hoistgg/hoist/internal/store/postgres/pgtest"
)

// TestStartWakesTheConfigurationHolderOnPostgres: a ticket started through
// replica A is taken up at once (QUEUED to SEARCHING) by the matchmaker of
// replica B, which holds the configuration's shard, although B's loop
// would not look again for an hour: A's StartMatchmaking wakes the holder
// after its commit.
func TestStartWakesTheConfigurationHolderOnPostgres(t *testing.T) {
	st, err := postgres.Open(t.Context(), pgtest.URL(t), postgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	h := &ticketHarness{configHarness: newConfigHarnessOn(t, st), rec: &recorder{}, placer: &fakePlacer{}}
	h.config("duel", nil)
	b := New(Config{Store: st, Region: "us-west-2", Account: "123456789012", Now: h.clock.Now,
		ReplicaID: "B", Interval: time.Hour})
	ctx, cancel := context.WithCancel(h.ctx)
	done := make(chan error, 1)
	go func() { done <- b.Run(ctx) }()
	aDone := make(chan struct{})
	go func() { h.svc.wake.Run(ctx); close(aDone) }() // replica A: its wakes, no loop
	t.Cleanup(func() { cancel(); <-done; <-aDone })
	waitFor(t, "B holds the configuration's shard", func() bool {
		gs, err := st.Leases(h.ctx, store.ShardLeasePrefix(loopName)+"duel")
		return err == nil && len(gs) == 1 && gs[0].Holder == "B"
	})
	h.start("duel", "t1", "a")
	waitFor(t, "the ticket SEARCHING", func() bool { return h.ticket("t1").Status == stSearching })
}

// waitFor waits up to 20 s (real time: another replica's loop) for cond.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not after 20 s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

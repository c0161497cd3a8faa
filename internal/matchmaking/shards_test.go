package matchmaking

import (
	"errors"
	"testing"
	"time"

	"github.com/hoistgg/hoist/internal/store"
)

// TestPassMatchesHeldConfigurationsOnly: a pass over the shards a replica
// holds matches the tickets of those configurations, fenced by their
// grants, and leaves the others' to the replicas holding them; a pass
// whose grant another replica has since taken over writes nothing.
func TestPassMatchesHeldConfigurationsOnly(t *testing.T) {
	h := newTicketHarness(t)
	h.config("duel", nil)
	h.config("other", nil)
	h.start("duel", "t1", "a")
	h.start("duel", "t2", "b")
	h.start("other", "t3", "c")
	h.start("other", "t4", "d")
	st := h.svc.cfg.Store
	lease := func(config, holder string, ttl time.Duration) store.Grant {
		g, ok, err := st.AcquireLease(h.ctx, store.ShardLeasePrefix(loopName)+config, holder, ttl)
		if err != nil || (ttl > 0 && !ok) {
			t.Fatalf("lease %s for %s: %v %v", config, holder, ok, err)
		}
		return g
	}
	g := lease("duel", "r1", time.Minute)
	for range 2 {
		if err := h.svc.processHeld(h.ctx, store.HeldOf(map[string]store.Grant{"duel": g})); err != nil {
			t.Fatal(err)
		}
		h.clock.Advance(1500 * time.Millisecond)
	}
	h.want("t1", stCompleted)
	h.want("t2", stCompleted)
	h.want("t3", stQueued)
	h.want("t4", stQueued)

	stale := lease("other", "r1", time.Minute)
	lease("other", "r1", 0)
	lease("other", "r2", time.Minute)
	err := h.svc.processHeld(h.ctx, store.HeldOf(map[string]store.Grant{"other": stale}))
	if !errors.Is(err, store.ErrLeaseLost) {
		t.Fatalf("a pass with a stale grant: %v, want ErrLeaseLost", err)
	}
	h.want("t3", stQueued)
	h.want("t4", stQueued)
}

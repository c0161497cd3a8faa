package placement

import (
	"errors"
	"testing"
	"time"

	"github.com/hoistgg/hoist/internal/api"
	"github.com/hoistgg/hoist/internal/store"
)

// TestPassPlacesHeldQueuesOnly: a pass over the shards a replica holds
// places the placements of those queues and leaves the others' to the
// replicas holding them.
func TestPassPlacesHeldQueuesOnly(t *testing.T) {
	h := newHarness(t)
	h.addFleet("fleet-a", "us-west-2")
	h.ready("fleet-a", "us-west-2", "p1", 7001)
	h.ready("fleet-a", "us-west-2", "p2", 7002)
	h.queue("q1", nil, fleetARN("fleet-a"))
	h.queue("q2", nil, fleetARN("fleet-a"))
	h.start("q1", "pl-1", nil)
	h.start("q2", "pl-2", nil)
	g, ok, err := h.st.AcquireLease(h.ctx, store.ShardLeasePrefix(loopName)+"q1", "r1", time.Minute)
	if err != nil || !ok {
		t.Fatalf("lease: %v %v", ok, err)
	}
	h.must(h.svc.processHeld(h.ctx, store.HeldOf(map[string]store.Grant{"q1": g})))
	if st := h.describe("pl-1").Status; st != api.GameSessionPlacementStateFulfilled {
		t.Errorf("the held queue's placement is %s, want FULFILLED", st)
	}
	if pl := h.describe("pl-2"); pl.Status != api.GameSessionPlacementStatePending || pl.GameSessionArn != nil {
		t.Errorf("the other queue's placement is %s (game session %v), want PENDING with no attempt", pl.Status, pl.GameSessionArn)
	}
}

// TestPassFencedByQueueLease: a pass holding a queue's grant that another
// replica has since taken over places nothing there: its write is refused
// (ErrLeaseLost) and the placement stays as it was.
func TestPassFencedByQueueLease(t *testing.T) {
	h := newHarness(t)
	h.addFleet("fleet-a", "us-west-2")
	h.ready("fleet-a", "us-west-2", "p1", 7001)
	h.queue("q1", nil, fleetARN("fleet-a"))
	h.start("q1", "pl-1", nil)
	name := store.ShardLeasePrefix(loopName) + "q1"
	stale, _, err := h.st.AcquireLease(h.ctx, name, "r1", time.Minute)
	h.must(err)
	_, _, err = h.st.AcquireLease(h.ctx, name, "r1", 0) // given up (or lapsed) ...
	h.must(err)
	if _, ok, err := h.st.AcquireLease(h.ctx, name, "r2", time.Minute); err != nil || !ok { // ... and taken over
		t.Fatalf("r2's lease: %v %v", ok, err)
	}
	err = h.svc.processHeld(h.ctx, store.HeldOf(map[string]store.Grant{"q1": stale}))
	if !errors.Is(err, store.ErrLeaseLost) {
		t.Fatalf("a pass with a stale grant: %v, want ErrLeaseLost", err)
	}
	if pl := h.describe("pl-1"); pl.Status != api.GameSessionPlacementStatePending || pl.GameSessionArn != nil {
		t.Errorf("after the refused pass the placement is %s (game session %v), want PENDING with no attempt", pl.Status, pl.GameSessionArn)
	}
}

package fleets

import (
	"errors"
	"testing"
	"time"

	"github.com/hoistgg/hoist/internal/api"
	"github.com/hoistgg/hoist/internal/store"
)

// TestReconcileFencedByFleetLease: a reconciler pass holding a fleet's
// grant that another replica has since taken over changes nothing for
// that fleet (ErrLeaseLost); with the current grant it moves the fleet on.
func TestReconcileFencedByFleetLease(t *testing.T) {
	h := newHarness(t)
	id := h.createFleet(ec2Input(1))
	name := store.ShardLeasePrefix(loopName) + id
	lease := func(holder string, ttl time.Duration) store.Grant {
		g, _, err := h.st.AcquireLease(h.ctx, name, holder, ttl)
		if err != nil {
			t.Fatal(err)
		}
		return g
	}
	stale := lease("replica-a", time.Minute)
	lease("replica-a", 0)
	current := lease("replica-b", time.Minute)
	before := h.status(id)
	err := h.svc.reconcileHeld(h.ctx, store.HeldOf(map[string]store.Grant{id: stale}))
	if !errors.Is(err, store.ErrLeaseLost) {
		t.Fatalf("a pass with a stale grant: %v, want ErrLeaseLost", err)
	}
	if got := h.status(id); got != before {
		t.Fatalf("after the refused pass the fleet is %s, want still %s", got, before)
	}
	if err := h.svc.reconcileHeld(h.ctx, store.HeldOf(map[string]store.Grant{id: current})); err != nil {
		t.Fatal(err)
	}
	if got := h.status(id); got == before || got == api.FleetStatusError {
		t.Fatalf("after the holder's pass the fleet is %s, want it moved on from %s", got, before)
	}
}

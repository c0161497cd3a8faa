package fleetiq

import (
	"testing"
	"time"

	"github.com/hoistgg/hoist/internal/api"
)

// These tests drive claim expiry and health expiry to the millisecond with
// the fake clock, calling Sweep directly (loop_test.go covers Run).

// sweep runs one sweep and fails the test on an error.
func (h *harness) sweep() {
	h.t.Helper()
	if err := h.svc.Sweep(h.ctx); err != nil {
		h.t.Fatalf("Sweep: %v", err)
	}
}

// TestSweepClaimBoundary: a claim holds for 60 s to the millisecond; the
// sweep leaves it alone at 59.999 s and releases it at 60.000 s.
func TestSweepClaimBoundary(t *testing.T) {
	h := newHarness(t, nil)
	h.group(seedGroup)
	h.register(seedGroup, seedServer, seedInstance)
	h.register(seedGroup, "gs-2", seedInstance)
	h.mustClaim(seedGroup, seedServer)
	h.clock.Advance(ClaimHold - time.Millisecond)
	h.sweep()
	if k := h.keys()[seedServer]; k != keyClaimed {
		t.Fatalf("swept at 59.999 s: key %q", k)
	}
	if g := h.describe(seedGroup, seedServer); g.ClaimStatus != api.GameServerClaimStatusClaimed {
		t.Fatalf("reads unclaimed at 59.999 s: %+v", g)
	}
	h.clock.Advance(time.Millisecond)
	h.sweep()
	if k := h.keys()[seedServer]; k != availableKey(seedInstance) {
		t.Fatalf("not released at 60 s: key %q", k)
	}
	g := h.describe(seedGroup, seedServer)
	if g.ClaimStatus != "" || !g.LastClaimTime.Equal(t0) || g.UtilizationStatus != api.GameServerUtilizationStatusAvailable {
		t.Errorf("after release: %+v", g)
	}
	h.checkCounts()
}

// TestSweepKeepsRenewedClaim: a claim that ran out and was claimed again
// (lazily, without a sweep in between) holds for its own 60 s; the sweep
// must not release it on the strength of the first claim.
func TestSweepKeepsRenewedClaim(t *testing.T) {
	h := newHarness(t, nil)
	h.group(seedGroup)
	h.register(seedGroup, seedServer, seedInstance)
	h.mustClaim(seedGroup, "")
	h.clock.Advance(ClaimHold)
	// Both ways of taking over an expired claim: by placement (which first
	// releases the group's expired claims) and by ID.
	if g := h.mustClaim(seedGroup, ""); !g.LastClaimTime.Equal(t0.Add(ClaimHold)) {
		t.Fatalf("re-claimed: %+v", g)
	}
	h.clock.Advance(ClaimHold)
	if g := h.mustClaim(seedGroup, seedServer); !g.LastClaimTime.Equal(t0.Add(2 * ClaimHold)) {
		t.Fatalf("re-claimed by ID: %+v", g)
	}
	h.clock.Advance(ClaimHold / 2)
	h.sweep()
	if g := h.describe(seedGroup, seedServer); g.ClaimStatus != api.GameServerClaimStatusClaimed {
		t.Fatalf("renewed claim released after 30 s: %+v", g)
	}
	h.checkCounts()
	h.clock.Advance(ClaimHold / 2)
	h.sweep()
	if k := h.keys()[seedServer]; k != availableKey(seedInstance) {
		t.Fatalf("renewed claim not released after its 60 s: key %q", k)
	}
	h.checkCounts()
}

// TestLazyClaimExpiryInLists: without any sweep, a claim older than 60 s
// reads as unclaimed in ListGameServers too.
func TestLazyClaimExpiryInLists(t *testing.T) {
	h := newHarness(t, nil)
	h.group(seedGroup)
	h.register(seedGroup, seedServer, seedInstance)
	h.mustClaim(seedGroup, "")
	list := func() api.GameServerClaimStatus {
		out, err := h.svc.ListGameServers(h.ctx, &api.ListGameServersInput{GameServerGroupName: api.String(seedGroup)})
		if err != nil || len(out.GameServers) != 1 {
			t.Fatalf("ListGameServers: %+v %v", out, err)
		}
		return out.GameServers[0].ClaimStatus
	}
	h.clock.Advance(ClaimHold - time.Millisecond)
	if s := list(); s != api.GameServerClaimStatusClaimed {
		t.Errorf("listed %q at 59.999 s", s)
	}
	h.clock.Advance(time.Millisecond)
	if s := list(); s != "" {
		t.Errorf("listed %q at 60 s", s)
	}
}

// TestHealthExpiryMillis: with HealthExpiry 250 ms, a game server is
// deregistered by the sweep exactly 250 ms after its last HEALTHY report
// (or its registration); utilization and data updates are no health
// reports; a claimed game server goes like any other and its ID is free
// again.
func TestHealthExpiryMillis(t *testing.T) {
	const expiry = 250 * time.Millisecond
	h := newHarness(t, func(c *Config) { c.HealthExpiry = expiry })
	h.group(seedGroup)
	h.register(seedGroup, "gs-reporting", seedInstance)
	h.register(seedGroup, "gs-updated", seedInstance)
	h.register(seedGroup, "gs-claimed", instanceN(2))
	h.mustClaim(seedGroup, "gs-claimed")
	update := func(in *api.UpdateGameServerInput) {
		t.Helper()
		in.GameServerGroupName = api.String(seedGroup)
		if _, err := h.svc.UpdateGameServer(h.ctx, in); err != nil {
			t.Fatal(err)
		}
	}
	h.clock.Advance(100 * time.Millisecond)
	update(&api.UpdateGameServerInput{GameServerId: api.String("gs-reporting"), HealthCheck: api.GameServerHealthCheckHealthy})
	update(&api.UpdateGameServerInput{GameServerId: api.String("gs-updated"), UtilizationStatus: api.GameServerUtilizationStatusUtilized,
		GameServerData: api.String("busy")})

	h.clock.Advance(expiry - 100*time.Millisecond - time.Millisecond) // 249 ms after registration
	h.sweep()
	for _, id := range []string{"gs-reporting", "gs-updated", "gs-claimed"} {
		if h.describe(seedGroup, id) == nil {
			t.Fatalf("%s deregistered 1 ms before its health expiry", id)
		}
	}
	h.clock.Advance(time.Millisecond) // 250 ms
	h.sweep()
	if h.describe(seedGroup, "gs-updated") != nil || h.describe(seedGroup, "gs-claimed") != nil {
		t.Fatal("game servers without a health report still registered at 250 ms")
	}
	if g := h.describe(seedGroup, "gs-reporting"); g == nil || !g.LastHealthCheckTime.Equal(t0.Add(100*time.Millisecond)) {
		t.Fatalf("the reporting game server: %+v", g)
	}
	h.checkCounts()
	if got := h.instances(seedGroup); len(got) != 1 || got[0] != seedInstance+"=ACTIVE" {
		t.Errorf("instances %v", got)
	}
	// Its deadline is 250 ms after its report.
	h.clock.Advance(100*time.Millisecond - time.Millisecond)
	h.sweep()
	if h.describe(seedGroup, "gs-reporting") == nil {
		t.Fatal("deregistered 1 ms before 250 ms after its report")
	}
	h.clock.Advance(time.Millisecond)
	h.sweep()
	if h.describe(seedGroup, "gs-reporting") != nil {
		t.Fatal("still registered 250 ms after its report")
	}
	h.checkCounts()
	if got := h.instances(seedGroup); len(got) != 0 {
		t.Errorf("instances %v", got)
	}
	// The IDs are free; a new registration starts a new deadline.
	h.register(seedGroup, "gs-claimed", instanceN(3))
	h.clock.Advance(expiry - time.Millisecond)
	h.sweep()
	if h.describe(seedGroup, "gs-claimed") == nil {
		t.Fatal("re-registered game server went early")
	}
	h.checkCounts()
}

// TestHealthExpiryBatches: more expired game servers than one sweep
// transaction handles all go in one Sweep, across instances.
func TestHealthExpiryBatches(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.HealthExpiry = time.Second })
	h.group(seedGroup)
	const n = 3*sweepBatch + 5
	for i := range n {
		h.register(seedGroup, "gs-"+instanceN(i), instanceN(i%7))
	}
	h.register(seedGroup, "gs-late", instanceN(1))
	h.clock.Advance(time.Second)
	// Registered at t0 + 1 s: due at t0 + 2 s.
	h.register(seedGroup, "gs-later", instanceN(2))
	h.sweep()
	out, err := h.svc.ListGameServers(h.ctx, &api.ListGameServersInput{GameServerGroupName: api.String(seedGroup)})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.GameServers) != 1 || *out.GameServers[0].GameServerId != "gs-later" {
		t.Errorf("%d game servers left after the sweep, want only gs-later", len(out.GameServers))
	}
	h.checkCounts()
}

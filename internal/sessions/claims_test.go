package sessions

import (
	"context"
	"testing"

	"github.com/hoistgg/hoist/internal/hosting"
	"github.com/hoistgg/hoist/internal/store"
	"github.com/hoistgg/hoist/internal/store/postgres/pgtest/pgstore"
)

// TestReadyHookWritesInUpdateOnPostgres: on PostgreSQL ProcessReady is a
// Claim that holds the process and lets the OnProcessReady hook (fleets:
// the location's first ready process makes it ACTIVE) read the fleet
// unheld; a hook that writes gets ErrRunInUpdate, and ProcessReady runs
// again in an Update, where the hook's write and the process's readiness
// commit together. A hook with nothing to write keeps the Claim.
func TestReadyHookWritesInUpdateOnPostgres(t *testing.T) {
	st := pgstore.Open(t)
	var calls []bool // whether each call's write went through
	h := newHarnessOn(t, st, func(c *Config) {
		c.Shared = true
		c.OnProcessReady = func(ctx context.Context, tx store.Tx, fleetID, loc string) error {
			if _, err := tx.Get(ctx, "Marker", fleetID); err == nil {
				calls = append(calls, false)
				return nil // already done: nothing to write
			}
			err := tx.Put(ctx, store.Record{Kind: "Marker", ID: fleetID, Data: []byte(`{}`)})
			calls = append(calls, err == nil)
			return err
		}
	})
	h.addFleet("fleet-1")
	h.addCompute("fleet-1", "i-1", "us-west-2")
	h.readyProcess("fleet-1", "i-1", "us-west-2", "proc-1", 7777)
	if len(calls) != 2 || calls[0] || !calls[1] {
		t.Fatalf("the first ProcessReady's hook calls (write kept?) = %v, want [false true]: refused in the Claim, done in the Update", calls)
	}
	if p := h.process("proc-1"); p.State != hosting.ProcessActive || p.Port != 7777 {
		t.Fatalf("process after ProcessReady = %+v", p)
	}
	calls = nil
	h.readyProcess("fleet-1", "i-1", "us-west-2", "proc-2", 7778)
	if len(calls) != 1 || calls[0] {
		t.Fatalf("the second ProcessReady's hook calls = %v, want one, in the Claim, writing nothing", calls)
	}
	if p := h.process("proc-2"); p.State != hosting.ProcessActive || p.Port != 7778 {
		t.Fatalf("process after ProcessReady = %+v", p)
	}
}

// TestDisconnectsOnPostgres: on PostgreSQL a disconnect is a Claim holding
// the process; the one that ends its process (an Anywhere game server
// closing its socket normally) runs again in an Update and ends it, as on
// the embedded stores; a managed process's disconnect only marks it.
func TestDisconnectsOnPostgres(t *testing.T) {
	st := pgstore.Open(t)
	h := newHarnessOn(t, st, func(c *Config) { c.Shared = true })
	h.addFleet("fleet-m")
	h.addCompute("fleet-m", "i-1", "us-west-2")
	h.addFleet("fleet-a", anywhere)
	h.addCompute("fleet-a", "c-1", "custom-home")
	m := h.readyProcess("fleet-m", "i-1", "us-west-2", "proc-m", 7777)
	a := h.readyProcess("fleet-a", "c-1", "custom-home", "proc-a", 7778)
	before := st.Stats()
	h.sdk.Disconnected(h.ctx, m, true)
	h.sdk.Disconnected(h.ctx, a, true)
	if p := h.process("proc-m"); p.State != hosting.ProcessActive || p.ConnectedTo != "" {
		t.Errorf("managed process after a normal disconnect: state %s, connected to %q; want ACTIVE, none", p.State, p.ConnectedTo)
	}
	if p := h.process("proc-a"); p.State != hosting.ProcessTerminated {
		t.Errorf("Anywhere process after a normal disconnect: state %s, want TERMINATED", p.State)
	}
	if r := st.Stats().Retries - before.Retries; r != 0 {
		t.Errorf("%d transactions ran again after a conflict, want 0", r)
	}
}

// TestActivationRoundTripsOnPostgres pins what ActivateGameSession costs
// on PostgreSQL: its process and game session read (and held) in one
// round trip, then the write with COMMIT; the game sessions of a
// placement read the placement and its queue too (placement's tests).
func TestActivationRoundTripsOnPostgres(t *testing.T) {
	st := pgstore.Open(t)
	h := newHarnessOn(t, st, func(c *Config) { c.Shared = true })
	h.addFleet("fleet-1")
	h.addCompute("fleet-1", "i-1", "us-west-2")
	c := h.readyProcess("fleet-1", "i-1", "us-west-2", "proc-1", 7777)
	gs, err := h.create("fleet-1")
	h.must(err)
	before := st.Stats().RoundTrips
	h.must(h.sdk.ActivateGameSession(h.ctx, c, *gs.GameSessionId))
	if got := st.Stats().RoundTrips - before; got != 2 {
		t.Errorf("ActivateGameSession: %d round trips, want 2", got)
	}
	if s := h.gameSession(*gs.GameSessionId); s.Session.Status != "ACTIVE" {
		t.Errorf("game session %s after its activation", s.Session.Status)
	}
}

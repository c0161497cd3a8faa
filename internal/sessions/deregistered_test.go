package sessions

import (
	"testing"
	"time"

	"github.com/hoistgg/hoist/internal/api"
	"github.com/hoistgg/hoist/internal/hosting"
	"github.com/hoistgg/hoist/internal/store"
)

// An Anywhere process whose compute was deregistered (DeregisterCompute, or
// its fleet deleted) is asked to end at its next health report, so that its
// game session does not stay ACTIVE on a compute that can no longer host it.
func TestDeregisteredComputeEndsItsProcess(t *testing.T) {
	h := newHarness(t)
	h.addFleet("fleet-1", anywhere)
	h.addCompute("fleet-1", "c-1", "custom-home", func(c *hosting.Compute) { c.Host = "" })
	c := conn("fleet-1", "c-1", "proc-1")
	h.must(h.sdk.Connected(h.ctx, c))
	h.must(h.sdk.ProcessReady(h.ctx, c, 7777, nil))
	gs, err := h.create("fleet-1", func(in *api.CreateGameSessionInput) { in.Location = api.String("custom-home") })
	h.must(err)
	id := api.ToString(gs.GameSessionId)
	h.must(h.sdk.ActivateGameSession(h.ctx, c, id))
	ps, err := h.svc.CreatePlayerSession(h.ctx, &api.CreatePlayerSessionInput{GameSessionId: gs.GameSessionId, PlayerId: api.String("p")})
	h.must(err)

	h.must(h.sdk.Heartbeat(h.ctx, c, true))
	if p := h.process("proc-1"); p.State != hosting.ProcessActive {
		t.Fatalf("a registered compute's process after a heartbeat: %s", p.State)
	}
	h.must(h.st.Update(h.ctx, func(tx store.Tx) error { return tx.Delete(h.ctx, hosting.KindCompute, "fleet-1/c-1") }))

	h.must(h.sdk.Heartbeat(h.ctx, c, true))
	if p := h.process("proc-1"); p.State != hosting.ProcessTerminating || p.EndReason != "compute deregistered" {
		t.Fatalf("after its compute was deregistered: %s %q", p.State, p.EndReason)
	}
	if h.msgr.last("proc-1", "TerminateProcess") == nil {
		t.Fatal("the process was not sent TerminateProcess")
	}
	if st := h.gameSession(id).Session.Status; st != api.GameSessionStatusTerminating {
		t.Fatalf("its game session = %s, want TERMINATING", st)
	}
	// Asked once: a further report sends nothing more.
	n := len(h.msgr.msgs)
	h.must(h.sdk.Heartbeat(h.ctx, c, true))
	if len(h.msgr.msgs) != n {
		t.Fatal("a TERMINATING process was asked to end again")
	}
	h.must(h.sdk.ProcessEnding(h.ctx, c))
	if st := h.gameSession(id).Session.Status; st != api.GameSessionStatusTerminated {
		t.Fatalf("after ProcessEnding its game session = %s", st)
	}
	if st := h.playerSession(api.ToString(ps.PlayerSession.PlayerSessionId)).Session.Status; st != api.PlayerSessionStatusCompleted {
		t.Fatalf("its player session = %s", st)
	}
	if len(h.host.ended()) != 0 {
		t.Fatal("ProcessHost called for an Anywhere process")
	}
}

// A managed process is left to its ProcessHost: a report after its
// instance record went changes nothing.
func TestDeregisteredInstanceLeavesManagedProcess(t *testing.T) {
	h := newHarness(t)
	h.addFleet("fleet-1")
	h.addCompute("fleet-1", "i-1", "us-west-2")
	c := h.readyProcess("fleet-1", "i-1", "us-west-2", "proc-1", 7777)
	h.must(h.st.Update(h.ctx, func(tx store.Tx) error { return tx.Delete(h.ctx, hosting.KindCompute, "fleet-1/i-1") }))
	h.must(h.sdk.Heartbeat(h.ctx, c, true))
	if p := h.process("proc-1"); p.State != hosting.ProcessActive {
		t.Fatalf("managed process after a heartbeat without its instance: %s", p.State)
	}
	if len(h.host.ended()) != 0 || h.msgr.last("proc-1", "TerminateProcess") != nil {
		t.Fatal("a managed process was ended by sessions")
	}
}

// A process whose game session was not activated in time is ended with a
// reason that begins with GameLift's event code (fleets records it as the
// fleet event) and names the game session.
func TestActivationTimeoutReason(t *testing.T) {
	h := newHarness(t)
	timeout := int32(5)
	h.addFleet("fleet-1", func(f *hosting.Fleet) { f.RuntimeConfiguration.GameSessionActivationTimeoutSeconds = &timeout })
	h.addCompute("fleet-1", "i-1", "us-west-2")
	h.readyProcess("fleet-1", "i-1", "us-west-2", "proc-1", 7777)
	gs, err := h.create("fleet-1")
	h.must(err)
	h.sweepAt(5 * time.Second)
	got := h.host.ended()
	want := "GAME_SESSION_ACTIVATION_TIMEOUT: game session " + api.ToString(gs.GameSessionId) + " was not activated in time"
	if len(got) != 1 || got[0].reason != want {
		t.Fatalf("ProcessHost calls = %v, want proc-1 ended with %q", got, want)
	}
}

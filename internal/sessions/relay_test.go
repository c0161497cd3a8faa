package sessions

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/hoistgg/hoist/internal/api"
	"github.com/hoistgg/hoist/internal/hosting"
	"github.com/hoistgg/hoist/internal/replicas"
	"github.com/hoistgg/hoist/internal/store"
)

// relayReplicas is replica r1 (h1) and replica r2 (h2) of sessions on one
// store, each with its inbox; r2's inbox delivers over h2's messenger
// (the sockets of r2).
func relayReplicas(t *testing.T) (h1, h2 *harness, in2 *replicas.Inbox) {
	h1 = newHarness(t, func(c *Config) { c.Inbox = replicas.New(replicas.Config{Store: c.Store, Self: "r1"}) })
	in2 = replicas.New(replicas.Config{Store: h1.st, Self: "r2"})
	h2 = newHarnessOn(t, h1.st, func(c *Config) { c.ReplicaID, c.Inbox = "r2", in2 })
	in2.Handle(replicas.TargetProcess, replicas.Route{Holder: ProcessHolder, Undelivered: h2.svc.Undelivered,
		Deliver: func(ctx context.Context, id string, body json.RawMessage) error {
			var msg hosting.Message
			if err := json.Unmarshal(body, &msg); err != nil {
				return err
			}
			return h2.msgr.SendToProcess(ctx, id, msg)
		}})
	return h1, h2, in2
}

// TestMessagesToAnotherReplicasProcess: with the process connected to r2,
// CreateGameSession and TerminateGameSession through r1 send nothing from
// r1: each writes its message into r2's inbox in its own transaction, and
// r2's inbox delivers them in order.
func TestMessagesToAnotherReplicasProcess(t *testing.T) {
	h1, h2, in2 := relayReplicas(t)
	h1.addFleet("fleet-1")
	h1.addCompute("fleet-1", "i-1", "us-west-2")
	h2.readyProcess("fleet-1", "i-1", "us-west-2", "p1", 7000)
	gs, err := h1.create("fleet-1")
	h1.must(err)
	id := api.ToString(gs.GameSessionId)
	_, err = h1.svc.TerminateGameSession(h1.ctx, &api.TerminateGameSessionInput{GameSessionId: gs.GameSessionId,
		TerminationMode: api.TerminationModeTriggerOnProcessTerminate})
	h1.must(err)
	if len(h1.msgr.msgs) != 0 {
		t.Fatalf("r1 sent %v itself", h1.msgr.msgs)
	}
	h1.must(in2.Pass(h1.ctx))
	if got := h2.msgr.msgs; len(got) != 2 || got[0].msg["Action"] != "CreateGameSession" || got[0].msg["GameSessionId"] != id ||
		got[1].msg["Action"] != "TerminateProcess" {
		t.Fatalf("r2 delivered %v; want CreateGameSession of %s, then TerminateProcess", got, id)
	}
}

// TestUndeliveredCreateGameSession: a CreateGameSession through r1 for a
// process of r2 that disconnects before r2 delivers it is dropped, and
// its game session goes to ERROR with the process freed, as when r1
// cannot send it itself.
func TestUndeliveredCreateGameSession(t *testing.T) {
	h1, h2, in2 := relayReplicas(t)
	h1.addFleet("fleet-1")
	h1.addCompute("fleet-1", "i-1", "us-west-2")
	c := h2.readyProcess("fleet-1", "i-1", "us-west-2", "p1", 7000)
	gs, err := h1.create("fleet-1")
	h1.must(err)
	h2.sdk.Disconnected(h2.ctx, c, false)
	h1.must(in2.Pass(h1.ctx))
	if len(h2.msgr.msgs) != 0 {
		t.Fatalf("r2 delivered %v to a disconnected process", h2.msgr.msgs)
	}
	if st := h1.gameSession(api.ToString(gs.GameSessionId)).Session.Status; st != api.GameSessionStatusError {
		t.Fatalf("game session %s, want ERROR", st)
	}
	if p := h1.process("p1"); p.GameSessionID != "" {
		t.Fatalf("process still holds game session %s", p.GameSessionID)
	}
}

// TestClearReplica: the processes of a dead replica count as
// disconnected once the janitor's clearer ran, unless the replica
// registered again.
func TestClearReplica(t *testing.T) {
	h1, h2, _ := relayReplicas(t)
	h1.addFleet("fleet-1")
	h1.addCompute("fleet-1", "i-1", "us-west-2")
	h2.readyProcess("fleet-1", "i-1", "us-west-2", "p1", 7000)
	h1.put(store.Record{Kind: replicas.KindReplica, ID: "r2"}, replicas.Record{ID: "r2", Term: 2})
	h1.must(h1.svc.ClearReplica(h1.ctx, replicas.Gone{ID: "r2", Term: 2}))
	if p := h1.process("p1"); p.ConnectedTo != "r2" {
		t.Fatalf("cleared a replica that is not gone: ConnectedTo %q", p.ConnectedTo)
	}
	h1.put(store.Record{Kind: replicas.KindReplica, ID: "r2"}, replicas.Record{ID: "r2", Term: 2, Gone: true})
	h1.must(h1.svc.ClearReplica(h1.ctx, replicas.Gone{ID: "r2", Term: 2}))
	if p := h1.process("p1"); p.ConnectedTo != "" || p.DisconnectedAt.IsZero() {
		t.Fatalf("process of the dead replica: ConnectedTo %q, DisconnectedAt %v", p.ConnectedTo, p.DisconnectedAt)
	}
	if _, err := h1.create("fleet-1"); err == nil {
		t.Fatal("a game session was placed on the dead replica's process")
	}
}

package sessions

import (
	"context"
	"testing"

	"github.com/hoistgg/hoist/internal/api"
	"github.com/hoistgg/hoist/internal/hosting"
	"github.com/hoistgg/hoist/internal/store"
)

// placementHook records the activations it is told about, and can fail.
type placementHook struct {
	got  []string
	fail error
}

func (p *placementHook) GameSessionActivatedTx(_ context.Context, _ store.Tx, gs *hosting.GameSession, _ bool) error {
	p.got = append(p.got, gs.PlacementID+" "+api.ToString(gs.Session.GameSessionId))
	return p.fail
}

// TestPlaceTx: a queue placement's game session is created on an idle
// process of the fleet location, without player sessions, inside the
// caller's transaction, and sent to the process once committed; without a
// free process, or on a fleet that is not ACTIVE, it fails as
// CreateGameSession does and writes nothing. Its activation is told to the
// PlacementHook in the activation's transaction (a hook error does not
// fail the activation), and AddPlacedPlayersTx then reserves its players.
func TestPlaceTx(t *testing.T) {
	h := newHarness(t)
	h.addFleet("fleet-1")
	h.addFleet("fleet-2", status(api.FleetStatusActivating))
	h.addCompute("fleet-1", "i-1", "us-east-1")
	c := h.readyProcess("fleet-1", "i-1", "us-east-1", "proc-1", 4000)
	hook := &placementHook{}
	h.svc.SetPlacementHook(hook)
	place := func(req PlaceRequest) (*Placed, error) {
		var p *Placed
		err := h.svc.Update(h.ctx, func(tx store.Tx) error {
			var err error
			p, err = h.svc.PlaceTx(h.ctx, tx, req)
			return err
		})
		return p, err
	}
	_, err := place(PlaceRequest{FleetID: "fleet-1", Location: "us-west-2", Token: "p0", MaximumPlayerSessionCount: 2})
	wantCode(t, err, "FleetCapacityExceededException")
	_, err = place(PlaceRequest{FleetID: "fleet-2", Location: "us-west-2", Token: "p0", MaximumPlayerSessionCount: 2})
	wantCode(t, err, "InvalidFleetStatusException")

	p, err := place(PlaceRequest{FleetID: "fleet-1", Location: "us-east-1", Token: "p1", PlacementID: "p1", MaximumPlayerSessionCount: 4,
		Name: api.String("match"), GameProperties: []api.GameProperty{{Key: api.String("k"), Value: api.String("v")}}})
	h.must(err)
	id := "arn:aws:gamelift:us-east-1::gamesession/fleet-1/p1"
	if api.ToString(p.GameSession.GameSessionId) != id || api.ToInt32(p.GameSession.Port) != 4000 ||
		api.ToInt32(p.GameSession.CurrentPlayerSessionCount) != 0 || len(p.PlayerSessions) != 0 ||
		p.GameSession.Status != api.GameSessionStatusActivating {
		t.Fatalf("placed: %+v", p)
	}
	if got := h.process("proc-1").GameSessionID; got != id {
		t.Fatalf("process hosts %q", got)
	}
	if m := h.msgr.last("proc-1", "CreateGameSession"); m != nil {
		t.Fatal("CreateGameSession sent before StartPlaced")
	}
	h.svc.StartPlaced(h.ctx, p)
	if m := h.msgr.last("proc-1", "CreateGameSession"); m == nil || m["GameSessionName"] != "match" {
		t.Fatalf("CreateGameSession: %v", m)
	}
	// The process is taken: the next placement finds none.
	_, err = place(PlaceRequest{FleetID: "fleet-1", Location: "us-east-1", Token: "p2", MaximumPlayerSessionCount: 2})
	wantCode(t, err, "FleetCapacityExceededException")

	// Player sessions only in an ACTIVE game session.
	add := func() (*Placed, error) {
		var out *Placed
		err := h.svc.Update(h.ctx, func(tx store.Tx) error {
			var err error
			out, err = h.svc.AddPlacedPlayersTx(h.ctx, tx, id, nil, []api.DesiredPlayerSession{{PlayerId: api.String("alice"), PlayerData: api.String("d")}})
			return err
		})
		return out, err
	}
	_, err = add()
	wantCode(t, err, "InvalidGameSessionStatusException")

	// A failing hook does not fail the activation: the game session is
	// activated without it (the placement loop fulfils the placement).
	hook.fail = api.NewInternalServiceException("hook failed")
	h.must(h.sdk.ActivateGameSession(h.ctx, c, id))
	if st := h.gameSession(id).Session.Status; st != api.GameSessionStatusActive {
		t.Fatalf("after an activation whose hook failed: %s", st)
	}
	if len(hook.got) != 1 || hook.got[0] != "p1 "+id {
		t.Fatalf("hook calls: %v", hook.got)
	}
	got, err := add()
	h.must(err)
	if len(got.PlayerSessions) != 1 || api.ToInt32(got.GameSession.CurrentPlayerSessionCount) != 1 {
		t.Fatalf("placed players: %+v", got)
	}
	if ps := h.playerSession(api.ToString(got.PlayerSessions[0].PlayerSessionId)); ps.Session.Status != api.PlayerSessionStatusReserved ||
		api.ToString(ps.Session.PlayerData) != "d" {
		t.Fatalf("player session: %+v", ps.Session)
	}
}

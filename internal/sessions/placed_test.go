package sessions

import (
	"testing"

	"github.com/hoistgg/hoist/internal/api"
	"github.com/hoistgg/hoist/internal/store"
)

// TestPlaceTx: a queue placement's game session is created on an idle
// process of the fleet location with its player sessions, inside the
// caller's transaction, and sent to the process once committed; without a
// free process, or on a fleet that is not ACTIVE, it fails as
// CreateGameSession does and writes nothing.
func TestPlaceTx(t *testing.T) {
	h := newHarness(t)
	h.addFleet("fleet-1")
	h.addFleet("fleet-2", status(api.FleetStatusActivating))
	h.addCompute("fleet-1", "i-1", "us-east-1")
	h.readyProcess("fleet-1", "i-1", "us-east-1", "proc-1", 4000)
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
	_, err = place(PlaceRequest{FleetID: "fleet-1", Location: "us-east-1", Token: "p0", MaximumPlayerSessionCount: 1,
		Players: []api.DesiredPlayerSession{{PlayerId: api.String("a")}, {PlayerId: api.String("b")}}})
	wantCode(t, err, "InvalidRequestException")

	p, err := place(PlaceRequest{FleetID: "fleet-1", Location: "us-east-1", Token: "p1", MaximumPlayerSessionCount: 4,
		Name: api.String("match"), GameProperties: []api.GameProperty{{Key: api.String("k"), Value: api.String("v")}},
		Players: []api.DesiredPlayerSession{{PlayerId: api.String("alice"), PlayerData: api.String("d")}}})
	h.must(err)
	id := "arn:aws:gamelift:us-east-1::gamesession/fleet-1/p1"
	if api.ToString(p.GameSession.GameSessionId) != id || api.ToInt32(p.GameSession.Port) != 4000 ||
		api.ToInt32(p.GameSession.CurrentPlayerSessionCount) != 1 || len(p.PlayerSessions) != 1 {
		t.Fatalf("placed: %+v", p)
	}
	if got := h.process("proc-1").GameSessionID; got != id {
		t.Fatalf("process hosts %q", got)
	}
	if ps := h.playerSession(api.ToString(p.PlayerSessions[0].PlayerSessionId)); ps.Session.Status != api.PlayerSessionStatusReserved ||
		api.ToString(ps.Session.PlayerData) != "d" {
		t.Fatalf("player session: %+v", ps.Session)
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
}

package placement

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hoistgg/hoist/internal/api"
	"github.com/hoistgg/hoist/internal/store"
)

// outcomes records what OnMatchPlacement is told, with the transaction's
// view of the placement at that moment.
type outcomes struct {
	mu   sync.Mutex
	got  []MatchOutcome
	fail error // returned once, then cleared
}

func (o *outcomes) hook(ctx context.Context, tx store.Tx, out MatchOutcome) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	if err := o.fail; err != nil {
		o.fail = nil
		return err
	}
	// The placement record in tx is already ended.
	p, err := getPlacement(ctx, tx, out.PlacementID)
	if err != nil {
		return err
	}
	if p.Placement.Status != out.Status {
		return errors.New("hook called before the placement was ended in its transaction")
	}
	o.got = append(o.got, out)
	return nil
}

func (o *outcomes) list() []MatchOutcome {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]MatchOutcome(nil), o.got...)
}

const matchData = `{"matchId":"m1","matchmakingConfigurationArn":"arn:aws:gamelift:us-west-2:123456789012:matchmakingconfiguration/duel","teams":[{"name":"red","players":[{"playerId":"alice","attributes":{}}]},{"name":"blue","players":[{"playerId":"bob","attributes":{}}]}],"autoBackfillMode":null}`

func matchReq(id, queue string) MatchRequest {
	return MatchRequest{PlacementID: id, QueueName: queue, MatchmakerData: matchData, GameSessionData: "gsd",
		GameProperties:            []api.GameProperty{{Key: api.String("mode"), Value: api.String("duel")}},
		MaximumPlayerSessionCount: 2,
		Players: []MatchPlayer{{PlayerID: "alice", LatencyInMs: map[string]int32{"us-west-2": 30, "us-east-1": 90}},
			{PlayerID: "bob", LatencyInMs: map[string]int32{"us-west-2": 40}}}}
}

// startMatch runs StartMatchPlacementTx in its own transaction, as the
// matchmaker does in its own.
func (h *harness) startMatch(req MatchRequest) error {
	h.t.Helper()
	err := h.st.Update(h.ctx, func(tx store.Tx) error { return h.svc.StartMatchPlacementTx(h.ctx, tx, req) })
	if err == nil {
		h.svc.Kick()
	}
	return err
}

func TestMatchPlacementFulfilled(t *testing.T) {
	h := newHarness(t)
	var o outcomes
	h.svc.SetOnMatchPlacement(o.hook)
	h.addFleet("fleet-a", "us-west-2", "us-east-1")
	h.queue("q", nil, fleetARN("fleet-a"))
	h.must(h.startMatch(matchReq("m1", "arn:aws:gamelift:us-west-2:123456789012:gamesessionqueue/q")))

	// Visible under its ID while PENDING, with the match's data and the
	// players' latencies.
	p := h.describe("m1")
	if p.Status != api.GameSessionPlacementStatePending || api.ToString(p.MatchmakerData) != matchData ||
		api.ToString(p.GameSessionQueueName) != "q" || len(p.PlayerLatencies) != 3 ||
		api.ToString(p.PlayerLatencies[0].PlayerId) != "alice" || api.ToString(p.PlayerLatencies[0].RegionIdentifier) != "us-east-1" {
		t.Fatalf("pending match placement = %+v", p)
	}
	h.process()
	if len(o.list()) != 0 {
		t.Fatalf("told of an outcome before the placement ended: %+v", o.list())
	}

	// Both locations have a process; the players' latencies choose us-west-2.
	h.ready("fleet-a", "us-east-1", "proc-east", 7000)
	h.ready("fleet-a", "us-west-2", "proc-west", 7777)
	h.clock.Advance(time.Second)
	h.process()
	p = h.describe("m1")
	if p.Status != api.GameSessionPlacementStateFulfilled || api.ToString(p.GameSessionRegion) != "us-west-2" || len(p.PlacedPlayerSessions) != 2 {
		t.Fatalf("placement = %+v", p)
	}
	got := o.list()
	if len(got) != 1 {
		t.Fatalf("outcomes = %+v", got)
	}
	out := got[0]
	if out.PlacementID != "m1" || out.Status != api.GameSessionPlacementStateFulfilled || out.GameSessionArn != api.ToString(p.GameSessionArn) ||
		out.IpAddress != "127.0.0.1" || out.DnsName != "us-west-2.hoist.test" || out.Port != 7777 || len(out.PlayerSessions) != 2 ||
		api.ToString(out.PlayerSessions[0].PlayerId) != "alice" || api.ToString(out.PlayerSessions[1].PlayerId) != "bob" ||
		!strings.HasPrefix(api.ToString(out.PlayerSessions[0].PlayerSessionId), "psess-") {
		t.Fatalf("outcome = %+v", out)
	}

	// The game session carries MatchmakerData; the process got it.
	gs, err := h.sess.DescribeGameSessions(h.ctx, &api.DescribeGameSessionsInput{GameSessionId: api.String(out.GameSessionArn)})
	h.must(err)
	if len(gs.GameSessions) != 1 || api.ToString(gs.GameSessions[0].MatchmakerData) != matchData ||
		api.ToString(gs.GameSessions[0].GameSessionData) != "gsd" || api.ToInt32(gs.GameSessions[0].CurrentPlayerSessionCount) != 2 {
		t.Fatalf("game session = %+v", gs.GameSessions)
	}
	msgs := h.msgr.msgs["proc-west"]
	if len(msgs) != 1 || msgs[0]["MatchmakerData"] != matchData || msgs[0]["GameProperties"].(map[string]string)["mode"] != "duel" {
		t.Fatalf("messages = %v", msgs)
	}
	ps, err := h.sess.DescribePlayerSessions(h.ctx, &api.DescribePlayerSessionsInput{GameSessionId: api.String(out.GameSessionArn)})
	h.must(err)
	if len(ps.PlayerSessions) != 2 || ps.PlayerSessions[0].Status != api.PlayerSessionStatusReserved {
		t.Fatalf("player sessions = %+v", ps.PlayerSessions)
	}
	// It is a placement of the queue like any other: its event is published.
	if ev := h.pub.details(t); len(ev) != 1 || ev[0]["type"] != "PlacementFulfilled" || ev[0]["placementId"] != "m1" {
		t.Fatalf("events = %v", ev)
	}
	// Its ID stays taken, for matches and plain placements alike.
	wantCode(t, h.startMatch(matchReq("m1", "q")), "InvalidRequestException")
	_, err = h.svc.StartGameSessionPlacement(h.ctx, &api.StartGameSessionPlacementInput{GameSessionQueueName: api.String("q"),
		PlacementId: api.String("m1"), MaximumPlayerSessionCount: api.Int32(2)})
	wantCode(t, err, "InvalidRequestException")
}

func TestMatchPlacementEnds(t *testing.T) {
	tests := map[string]struct {
		end  func(h *harness)
		want api.GameSessionPlacementState
	}{
		"timed out": {want: api.GameSessionPlacementStateTimedOut, end: func(h *harness) {
			h.clock.Advance(31 * time.Second)
			h.process()
		}},
		"queue deleted": {want: api.GameSessionPlacementStateFailed, end: func(h *harness) {
			_, err := h.svc.DeleteGameSessionQueue(h.ctx, &api.DeleteGameSessionQueueInput{Name: api.String("q")})
			h.must(err)
		}},
		"stopped": {want: api.GameSessionPlacementStateCancelled, end: func(h *harness) {
			_, err := h.svc.StopGameSessionPlacement(h.ctx, &api.StopGameSessionPlacementInput{PlacementId: api.String("m1")})
			h.must(err)
		}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			h := newHarness(t)
			var o outcomes
			h.svc.SetOnMatchPlacement(o.hook)
			h.addFleet("fleet-a", "us-west-2")
			h.queue("q", func(in *api.CreateGameSessionQueueInput) { in.TimeoutInSeconds = api.Int32(30) }, fleetARN("fleet-a"))
			h.must(h.startMatch(matchReq("m1", "q")))
			h.process() // no capacity
			tc.end(h)
			got := o.list()
			if len(got) != 1 || got[0].Status != tc.want || got[0].PlacementID != "m1" || got[0].GameSessionArn != "" || got[0].PlayerSessions != nil {
				t.Fatalf("outcomes = %+v, want one %s", got, tc.want)
			}
			if p := h.describe("m1"); p.Status != tc.want {
				t.Fatalf("placement = %s", p.Status)
			}
		})
	}
}

// TestMatchPlacementHookFails checks that the hook's error undoes the end
// of the placement but not the game session's activation: the placement
// stays PENDING with its ACTIVE game session, and the loop's next pass
// fulfils it (and tells the hook again).
func TestMatchPlacementHookFails(t *testing.T) {
	h := newHarness(t)
	o := outcomes{fail: errors.New("matchmaker store trouble")}
	h.svc.SetOnMatchPlacement(o.hook)
	h.addFleet("fleet-a", "us-west-2")
	h.queue("q", nil, fleetARN("fleet-a"))
	h.must(h.startMatch(matchReq("m1", "q")))
	h.ready("fleet-a", "us-west-2", "proc-1", 7777)
	h.process() // places and activates; the hook fails in the activation
	p := h.describe("m1")
	if p.Status != api.GameSessionPlacementStatePending || len(o.list()) != 0 {
		t.Fatalf("after a failed hook: %s, outcomes %+v", p.Status, o.list())
	}
	if gs := h.gameSession(api.ToString(p.GameSessionArn)); gs.Status != api.GameSessionStatusActive || api.ToInt32(gs.CurrentPlayerSessionCount) != 0 {
		t.Fatalf("game session after a failed hook: %s with %d players", gs.Status, api.ToInt32(gs.CurrentPlayerSessionCount))
	}
	h.process()
	if p := h.describe("m1"); p.Status != api.GameSessionPlacementStateFulfilled || len(o.list()) != 1 || len(p.PlacedPlayerSessions) != 2 {
		t.Fatalf("next pass: %s, outcomes %+v", p.Status, o.list())
	}
}

// TestPlainPlacementNotTold checks that plain placements never reach the
// hook.
func TestPlainPlacementNotTold(t *testing.T) {
	h := newHarness(t)
	var o outcomes
	h.svc.SetOnMatchPlacement(o.hook)
	h.addFleet("fleet-a", "us-west-2")
	h.queue("q", nil, fleetARN("fleet-a"))
	h.start("q", "p1", nil)
	h.ready("fleet-a", "us-west-2", "proc-1", 7777)
	h.process()
	if p := h.describe("p1"); p.Status != api.GameSessionPlacementStateFulfilled || p.MatchmakerData != nil || len(o.list()) != 0 {
		t.Fatalf("placement %+v, outcomes %+v", p, o.list())
	}
}

func TestStartMatchPlacementRefuses(t *testing.T) {
	h := newHarness(t)
	h.addFleet("fleet-a", "us-west-2")
	h.queue("q", nil, fleetARN("fleet-a"))
	tests := map[string]struct {
		mod  func(*MatchRequest)
		code string
		msg  string
	}{
		"no ID":                      {func(r *MatchRequest) { r.PlacementID = "" }, "InvalidRequestException", "PlacementId"},
		"ID too long":                {func(r *MatchRequest) { r.PlacementID = strings.Repeat("a", 49) }, "InvalidRequestException", "PlacementId"},
		"ID with a space":            {func(r *MatchRequest) { r.PlacementID = "a b" }, "InvalidRequestException", "PlacementId"},
		"unknown queue":              {func(r *MatchRequest) { r.QueueName = "nope" }, "NotFoundException", "nope"},
		"no queue":                   {func(r *MatchRequest) { r.QueueName = "" }, "InvalidRequestException", "GameSessionQueueName"},
		"too many players":           {func(r *MatchRequest) { r.MaximumPlayerSessionCount = 1 }, "InvalidRequestException", "MaximumPlayerSessionCount 1"},
		"max too big":                {func(r *MatchRequest) { r.MaximumPlayerSessionCount = 201 }, "InvalidRequestException", "out of range"},
		"player twice":               {func(r *MatchRequest) { r.Players[1].PlayerID = "alice" }, "InvalidRequestException", "Players[1]"},
		"player without ID":          {func(r *MatchRequest) { r.Players[0].PlayerID = "" }, "InvalidRequestException", "Players[0].PlayerId"},
		"negative latency":           {func(r *MatchRequest) { r.Players[1].LatencyInMs = map[string]int32{"us-west-2": -1} }, "InvalidRequestException", "Players[1].LatencyInMs"},
		"property twice":             {func(r *MatchRequest) { r.GameProperties = append(r.GameProperties, r.GameProperties[0]) }, "InvalidRequestException", "GameProperties[1]"},
		"matchmaker data too long":   {func(r *MatchRequest) { r.MatchmakerData = strings.Repeat("x", 390001) }, "InvalidRequestException", "MatchmakerData"},
		"game session data too long": {func(r *MatchRequest) { r.GameSessionData = strings.Repeat("x", 262145) }, "InvalidRequestException", "GameSessionData"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			req := matchReq("m-"+strings.ReplaceAll(name, " ", "-"), "q")
			tc.mod(&req)
			err := h.startMatch(req)
			wantCode(t, err, tc.code)
			if !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("error %q does not name %q", err, tc.msg)
			}
		})
	}
	// Nothing was written by a refused request.
	n := 0
	h.must(h.st.View(h.ctx, func(tx store.Tx) error {
		var err error
		n, err = tx.Count(h.ctx, store.Query{Kind: KindPlacement})
		return err
	}))
	if n != 0 {
		t.Fatalf("%d placements stored", n)
	}
}

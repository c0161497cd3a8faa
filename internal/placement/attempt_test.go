package placement

import (
	"strings"
	"testing"
	"time"

	"github.com/hoistgg/hoist/internal/api"
)

func TestJudge(t *testing.T) {
	deadline := t0.Add(time.Minute)
	gs := func(st api.GameSessionStatus, reason api.GameSessionStatusReason) *api.GameSession {
		return &api.GameSession{Status: st, StatusReason: reason}
	}
	tests := []struct {
		name string
		gs   *api.GameSession
		late bool
		want attemptAction
	}{
		{"activating", gs(api.GameSessionStatusActivating, ""), false, attemptWait},
		{"activating past the deadline", gs(api.GameSessionStatusActivating, ""), true, attemptTimedOut},
		{"active", gs(api.GameSessionStatusActive, ""), false, attemptFulfil},
		{"active past the deadline", gs(api.GameSessionStatusActive, ""), true, attemptFulfil},
		{"activation timed out", gs(api.GameSessionStatusTerminated, ""), false, attemptRetry},
		{"process crashed", gs(api.GameSessionStatusError, ""), false, attemptRetry},
		{"failed past the deadline", gs(api.GameSessionStatusError, ""), true, attemptTimedOut},
		{"gone", nil, false, attemptRetry},
		{"force terminated", gs(api.GameSessionStatusTerminating, api.GameSessionStatusReasonForceTerminated), false, attemptFail},
		{"terminated on request", gs(api.GameSessionStatusTerminated, api.GameSessionStatusReasonTriggeredOnProcessTerminate), true, attemptFail},
		{"terminating without a request", gs(api.GameSessionStatusTerminating, ""), false, attemptWait},
	}
	for _, tc := range tests {
		now := t0
		if tc.late {
			now = deadline
		}
		if got := judge(tc.gs, deadline, now); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

// eventTypes lists the types of the events published so far.
func (h *harness) eventTypes() []string {
	var out []string
	for _, d := range h.pub.details(h.t) {
		out = append(out, d["type"].(string)+" "+d["placementId"].(string))
	}
	return out
}

// TestPlacementPendingUntilActive: the placement stays PENDING while its
// game session activates, showing where that game session is but no player
// sessions, and with no event; the activation fulfils it in the same
// transaction, with the player sessions created then.
func TestPlacementPendingUntilActive(t *testing.T) {
	h := newHarness(t)
	h.addFleet("fleet-a", "us-west-2")
	h.queue("q", nil, fleetARN("fleet-a"))
	h.readyDud("fleet-a", "us-west-2", "proc-1", 7777)
	h.start("q", "p1", func(in *api.StartGameSessionPlacementInput) {
		in.DesiredPlayerSessions = []api.DesiredPlayerSession{{PlayerId: api.String("alice")}}
	})
	h.process()
	p := h.describe("p1")
	gsID := "arn:aws:gamelift:us-west-2::gamesession/fleet-a/p1"
	if p.Status != api.GameSessionPlacementStatePending || api.ToString(p.GameSessionArn) != gsID || api.ToInt32(p.Port) != 7777 ||
		api.ToString(p.GameSessionRegion) != "us-west-2" || len(p.PlacedPlayerSessions) != 0 || p.EndTime != nil {
		t.Fatalf("while activating: %+v", p)
	}
	if gs := h.gameSession(gsID); gs.Status != api.GameSessionStatusActivating || api.ToInt32(gs.CurrentPlayerSessionCount) != 0 {
		t.Fatalf("game session while activating: %s with %d players", gs.Status, api.ToInt32(gs.CurrentPlayerSessionCount))
	}
	h.clock.Advance(time.Second)
	h.process() // nothing changes while it activates
	if ev := h.eventTypes(); len(ev) != 0 {
		t.Fatalf("events while activating: %v", ev)
	}
	h.must(h.activateNow("proc-1", gsID))
	p = h.describe("p1")
	if p.Status != api.GameSessionPlacementStateFulfilled || api.ToString(p.GameSessionArn) != gsID || len(p.PlacedPlayerSessions) != 1 ||
		p.EndTime == nil || !p.EndTime.Equal(t0.Add(time.Second)) {
		t.Fatalf("after the activation: %+v", p)
	}
	if gs := h.gameSession(gsID); gs.Status != api.GameSessionStatusActive || api.ToInt32(gs.CurrentPlayerSessionCount) != 1 {
		t.Fatalf("game session: %s with %d players", gs.Status, api.ToInt32(gs.CurrentPlayerSessionCount))
	}
	if ev := h.eventTypes(); len(ev) != 1 || ev[0] != "PlacementFulfilled p1" {
		t.Fatalf("events: %v", ev)
	}
}

// TestPlacementPlacedAgain: a game session that does not activate in time,
// and one whose process crashes, make the placement try another process,
// in another fleet location first; it is fulfilled there, with one event.
func TestPlacementPlacedAgain(t *testing.T) {
	for name, fail := range map[string]func(h *harness, gsID string){
		"activation timeout": func(h *harness, _ string) {
			h.clock.Advance(301 * time.Second) // the fleet's activation timeout (default 300 s)
			h.must(h.sess.Sweep(h.ctx))
		},
		"process crashed": func(h *harness, _ string) {
			h.must(h.sess.ProcessExited(h.ctx, "dud-1", 3, ""))
		},
	} {
		t.Run(name, func(t *testing.T) {
			h := newHarness(t)
			h.addFleet("fleet-a", "us-west-2")
			h.addFleet("fleet-b", "us-west-2")
			h.queue("q", nil, fleetARN("fleet-a"), fleetARN("fleet-b"))
			h.readyDud("fleet-a", "us-west-2", "dud-1", 1)
			h.start("q", "p1", func(in *api.StartGameSessionPlacementInput) {
				in.DesiredPlayerSessions = []api.DesiredPlayerSession{{PlayerId: api.String("alice")}}
			})
			h.process()
			first := api.ToString(h.describe("p1").GameSessionArn)
			if !strings.HasSuffix(first, "/fleet-a/p1") {
				t.Fatalf("first attempt: %s", first)
			}
			fail(h, first)
			// fleet-a has another free process, but the failed location is
			// tried last.
			h.readyDud("fleet-a", "us-west-2", "dud-2", 2)
			h.ready("fleet-b", "us-west-2", "good", 3)
			h.process()
			p := h.describe("p1")
			second := api.ToString(p.GameSessionArn)
			if p.Status != api.GameSessionPlacementStateFulfilled || !strings.Contains(second, "/fleet-b/") || second == first ||
				strings.HasSuffix(second, "/p1") || len(p.PlacedPlayerSessions) != 1 {
				t.Fatalf("placed again: %+v", p)
			}
			if st := h.gameSession(first).Status; st != api.GameSessionStatusTerminated && st != api.GameSessionStatusError {
				t.Fatalf("the first attempt's game session is %s", st)
			}
			if len(h.msgr.msgs["dud-2"]) != 0 {
				t.Fatal("the failed location was tried again first")
			}
			if ev := h.eventTypes(); len(ev) != 1 || ev[0] != "PlacementFulfilled p1" {
				t.Fatalf("events: %v", ev)
			}
		})
	}
}

// TestPlacementTimedOutWhileActivating: a placement whose game session is
// still activating at its deadline is TIMED_OUT, says where no game is,
// and a late activation leaves it so, without player sessions.
func TestPlacementTimedOutWhileActivating(t *testing.T) {
	h := newHarness(t)
	h.addFleet("fleet-a", "us-west-2")
	h.queue("q", func(in *api.CreateGameSessionQueueInput) { in.TimeoutInSeconds = api.Int32(10) }, fleetARN("fleet-a"))
	h.readyDud("fleet-a", "us-west-2", "proc-1", 1)
	h.start("q", "p1", func(in *api.StartGameSessionPlacementInput) {
		in.DesiredPlayerSessions = []api.DesiredPlayerSession{{PlayerId: api.String("alice")}}
	})
	h.process()
	gsID := api.ToString(h.describe("p1").GameSessionArn)
	h.clock.Advance(10 * time.Second)
	h.process()
	p := h.describe("p1")
	if p.Status != api.GameSessionPlacementStateTimedOut || p.GameSessionArn != nil || p.Port != nil || len(p.PlacedPlayerSessions) != 0 {
		t.Fatalf("at the deadline: %+v", p)
	}
	h.must(h.activateNow("proc-1", gsID))
	if st := h.describe("p1").Status; st != api.GameSessionPlacementStateTimedOut {
		t.Fatalf("after a late activation: %s", st)
	}
	if gs := h.gameSession(gsID); gs.Status != api.GameSessionStatusActive || api.ToInt32(gs.CurrentPlayerSessionCount) != 0 {
		t.Fatalf("late game session: %s with %d players", gs.Status, api.ToInt32(gs.CurrentPlayerSessionCount))
	}
	if ev := h.eventTypes(); len(ev) != 1 || ev[0] != "PlacementTimedOut p1" {
		t.Fatalf("events: %v", ev)
	}
}

// TestPlacementFailedWhenTerminated: TerminateGameSession on the game
// session of a placement's attempt fails the placement (GameLift's FAILED:
// "the game session terminated before the placement process was
// completed"), with PlacementFailed; it is not placed again.
func TestPlacementFailedWhenTerminated(t *testing.T) {
	h := newHarness(t)
	h.addFleet("fleet-a", "us-west-2")
	h.queue("q", nil, fleetARN("fleet-a"))
	h.readyDud("fleet-a", "us-west-2", "proc-1", 1)
	h.ready("fleet-a", "us-west-2", "proc-2", 2)
	h.start("q", "p1", nil)
	h.process()
	gsID := api.ToString(h.describe("p1").GameSessionArn)
	if gsID == "" || len(h.msgr.msgs["proc-1"]) != 1 {
		t.Fatalf("the attempt is not on the dud process: %s, %v", gsID, h.msgr.msgs)
	}
	_, err := h.sess.TerminateGameSession(h.ctx, &api.TerminateGameSessionInput{GameSessionId: api.String(gsID),
		TerminationMode: api.TerminationModeTriggerOnProcessTerminate})
	h.must(err)
	h.process()
	if p := h.describe("p1"); p.Status != api.GameSessionPlacementStateFailed || p.GameSessionArn != nil {
		t.Fatalf("after TerminateGameSession: %+v", p)
	}
	if len(h.msgr.msgs["proc-2"]) != 0 {
		t.Fatal("a terminated attempt was placed again")
	}
	if ev := h.eventTypes(); len(ev) != 1 || ev[0] != "PlacementFailed p1" {
		t.Fatalf("events: %v", ev)
	}
}

// TestMatchPlacementWaitsForActivation: a match's placement tells
// OnMatchPlacement (where FlexMatch completes the tickets) only when its
// game session is ACTIVE, with the player sessions created then.
func TestMatchPlacementWaitsForActivation(t *testing.T) {
	h := newHarness(t)
	var o outcomes
	h.svc.SetOnMatchPlacement(o.hook)
	h.addFleet("fleet-a", "us-west-2")
	h.queue("q", nil, fleetARN("fleet-a"))
	h.readyDud("fleet-a", "us-west-2", "proc-1", 7777)
	h.must(h.startMatch(matchReq("m1", "q")))
	h.process()
	if got := o.list(); len(got) != 0 {
		t.Fatalf("told before the activation: %+v", got)
	}
	gsID := api.ToString(h.describe("m1").GameSessionArn)
	h.must(h.activateNow("proc-1", gsID))
	got := o.list()
	if len(got) != 1 || got[0].Status != api.GameSessionPlacementStateFulfilled || got[0].GameSessionArn != gsID || len(got[0].PlayerSessions) != 2 {
		t.Fatalf("outcomes: %+v", got)
	}
}

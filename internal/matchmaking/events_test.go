package matchmaking

import (
	"testing"
	"time"

	"github.com/hoistgg/hoist/internal/api"
	"github.com/hoistgg/hoist/internal/store"
)

// answers returns each player's "accepted" in an event's tickets and in
// its gameSessionInfo ("-" for none), which must agree.
func answers(t *testing.T, d eventDetail) map[string]string {
	t.Helper()
	out := map[string]string{}
	show := func(a *bool) string {
		switch {
		case a == nil:
			return "-"
		case *a:
			return "true"
		}
		return "false"
	}
	for _, tk := range d.Tickets {
		for _, p := range tk.Players {
			out[p.PlayerID] = show(p.Accepted)
		}
	}
	for _, p := range d.GameSessionInfo.Players {
		if out[p.PlayerID] != show(p.Accepted) {
			t.Errorf("%s: player %s accepted %s in gameSessionInfo, %s in tickets", d.Type, p.PlayerID, show(p.Accepted), out[p.PlayerID])
		}
	}
	return out
}

// TestAcceptMatchEvents: AcceptMatch lists the answers of the players who
// answered only (GameLift: "Missing data means that AcceptMatch hasn't
// been called for that player"), AcceptMatchCompleted none; a ticket back
// in SEARCHING says why in StatusReason and StatusMessage, until it is in a
// match again.
func TestAcceptMatchEvents(t *testing.T) {
	h := newTicketHarness(t)
	h.config("duel", acceptConfig)
	h.start("duel", "t1", "a")
	h.start("duel", "t2", "b")
	h.process()
	h.rec.take(t)
	if err := h.accept("t1", api.AcceptanceTypeAccept, "a"); err != nil {
		t.Fatal(err)
	}
	ds := h.rec.take(t)
	if got := answers(t, ds[0]); ds[0].Type != evAcceptMatch || got["a"] != "true" || got["b"] != "-" {
		t.Fatalf("AcceptMatch after a accepted: %s %v", ds[0].Type, got)
	}
	if err := h.accept("t2", api.AcceptanceTypeReject, "b"); err != nil {
		t.Fatal(err)
	}
	ds = h.rec.take(t)
	if got := answers(t, ds[0]); ds[0].Type != evAcceptMatch || got["a"] != "true" || got["b"] != "false" {
		t.Fatalf("AcceptMatch after b rejected: %s %v", ds[0].Type, got)
	}
	if got := answers(t, ds[1]); ds[1].Type != evAcceptCompleted || got["a"] != "-" || got["b"] != "-" {
		t.Fatalf("AcceptMatchCompleted: %s %v", ds[1].Type, got)
	}
	tk := h.want("t1", stSearching)
	if api.ToString(tk.StatusReason) != reasonAcceptanceRejected || api.ToString(tk.StatusMessage) == "" {
		t.Fatalf("searching again after a rejection: %q %q", api.ToString(tk.StatusReason), api.ToString(tk.StatusMessage))
	}
	// In a match again: the reason is gone.
	h.start("duel", "t3", "c")
	h.process()
	if tk := h.want("t1", stAccept); tk.StatusReason != nil || tk.StatusMessage != nil {
		t.Fatalf("in a new match: %q %q", api.ToString(tk.StatusReason), api.ToString(tk.StatusMessage))
	}
	// The acceptance times out with t1 accepted: t1 searches again, and says so.
	if err := h.accept("t1", api.AcceptanceTypeAccept, "a"); err != nil {
		t.Fatal(err)
	}
	h.clock.Advance(10 * time.Second)
	h.process()
	if tk := h.want("t1", stSearching); api.ToString(tk.StatusReason) != reasonAcceptanceTimedOut {
		t.Fatalf("searching again after a timeout: %q", api.ToString(tk.StatusReason))
	}
	h.want("t3", stCancelled)
}

// skillBody is a 1v1 whose players' skills must be within 5, and a rule
// every match keeps.
const skillBody = `{"name":"fair","ruleLanguageVersion":"1.0",
 "playerAttributes":[{"name":"skill","type":"number","default":10}],
 "teams":[{"name":"red","minPlayers":1,"maxPlayers":1},{"name":"blue","minPlayers":1,"maxPlayers":1}],
 "rules":[{"name":"Anyone","type":"comparison","measurements":"avg(teams[*].players.attributes[skill])","referenceValue":0,"operation":">="},
  {"name":"FairSkill","type":"distance","measurements":"flatten(teams[*].players.attributes[skill])","maxDistance":5}]}`

// TestTimedOutEventMetrics: a ticket that times out without a match
// reports, per rule of the rule set, how the rules went for the candidate
// matches the matcher's passes found for it (MatchmakingTimedOut's
// ruleEvaluationMetrics).
func TestTimedOutEventMetrics(t *testing.T) {
	h := newTicketHarness(t)
	if _, err := h.svc.CreateMatchmakingRuleSet(h.ctx, &api.CreateMatchmakingRuleSetInput{Name: cfgStr("fair"), RuleSetBody: cfgStr(skillBody)}); err != nil {
		t.Fatal(err)
	}
	h.config("fair", func(in *api.CreateMatchmakingConfigurationInput) {
		in.RuleSetName, in.RequestTimeoutSeconds = cfgStr("fair"), cfgI32(10)
	})
	for id, skill := range map[string]float64{"t1": 10, "t2": 50} {
		if _, err := h.svc.StartMatchmaking(h.ctx, &api.StartMatchmakingInput{ConfigurationName: cfgStr("fair"), TicketId: cfgStr(id),
			Players: []api.Player{{PlayerId: cfgStr("p-" + id), PlayerAttributes: map[string]api.AttributeValue{"skill": {N: &skill}}}}}); err != nil {
			t.Fatal(err)
		}
	}
	for range 3 {
		h.process()
		h.clock.Advance(time.Second)
	}
	h.rec.take(t)
	h.clock.Advance(10 * time.Second)
	h.process()
	ds := h.rec.take(t)
	if len(ds) != 2 || ds[0].Type != evTimedOut || ds[0].Reason != "TimedOut" {
		t.Fatalf("events %s", evTypes(ds))
	}
	m := ds[0].RuleEvaluationMetrics
	if len(m) != 2 || m[0] != (eventMetric{"Anyone", 3, 0}) || m[1] != (eventMetric{"FairSkill", 0, 3}) {
		t.Fatalf("ruleEvaluationMetrics %+v", m)
	}
}

// TestFailedEventReasons: MatchmakingFailed carries a reason code and the
// match's ID.
func TestFailedEventReasons(t *testing.T) {
	for st, want := range map[api.GameSessionPlacementState]string{
		api.GameSessionPlacementStateTimedOut:  failPlacementTimedOut,
		api.GameSessionPlacementStateCancelled: failPlacementCancelled,
		api.GameSessionPlacementStateFailed:    failPlacementFailed,
	} {
		t.Run(string(st), func(t *testing.T) {
			h := newTicketHarness(t)
			h.config("duel", withQueue)
			h.start("duel", "t1", "a")
			h.start("duel", "t2", "b")
			h.process()
			id := h.placer.reqs[0].PlacementID
			h.rec.take(t)
			if err := h.st.Update(h.ctx, func(tx store.Tx) error {
				return h.svc.OnMatchPlacement(h.ctx, tx, MatchOutcome{PlacementID: id, Status: st})
			}); err != nil {
				t.Fatal(err)
			}
			ds := h.rec.take(t)
			if len(ds) != 2 || ds[0].Type != evFailed || ds[0].Reason != want || ds[0].MatchID != id || ds[0].Message == "" {
				t.Fatalf("events %+v", ds)
			}
		})
	}
	h := newTicketHarness(t)
	h.config("duel", withQueue)
	h.placer.err = api.NewNotFoundException("game session queue q1 does not exist")
	h.start("duel", "t1", "a")
	h.start("duel", "t2", "b")
	h.process()
	ds := h.rec.take(t)
	last := ds[len(ds)-1]
	if last.Type != evFailed || last.Reason != failQueueNotAccessible || last.MatchID == "" {
		t.Fatalf("a queue that refuses the match: %+v", last)
	}
}

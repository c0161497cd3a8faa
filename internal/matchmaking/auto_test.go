package matchmaking

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hoistgg/hoist/internal/api"
	"github.com/hoistgg/hoist/internal/store"
)

// duoBody is a 1v1 to 2v2 rule set: two tickets make a match with two
// open slots.
const duoBody = `{"name":"duo","ruleLanguageVersion":"1.0",
 "playerAttributes":[{"name":"skill","type":"number","default":10}],
 "teams":[{"name":"red","minPlayers":1,"maxPlayers":2},{"name":"blue","minPlayers":1,"maxPlayers":2}]}`

// autoHarness is a ticket harness with an AUTOMATIC WITH_QUEUE
// configuration "auto" of the duo rule set and a fake game session
// backfiller.
func newAutoHarness(t *testing.T) (*ticketHarness, *fakeBackfiller) {
	h := newTicketHarness(t)
	fb := &fakeBackfiller{}
	h.svc.cfg.Backfiller = fb
	if _, err := h.svc.CreateMatchmakingRuleSet(h.ctx, &api.CreateMatchmakingRuleSetInput{Name: cfgStr("duo"), RuleSetBody: cfgStr(duoBody)}); err != nil {
		t.Fatal(err)
	}
	h.config("auto", func(in *api.CreateMatchmakingConfigurationInput) {
		withQueue(in)
		in.RuleSetName, in.BackfillMode = cfgStr("duo"), api.BackfillModeAutomatic
	})
	return h, fb
}

// placed places the match the fake placer was last asked for on game
// session gsArn, with a player session per player.
func (h *ticketHarness) placed(gs string) MatchRequest {
	h.t.Helper()
	req := h.placer.reqs[len(h.placer.reqs)-1]
	out := MatchOutcome{PlacementID: req.PlacementID, Status: api.GameSessionPlacementStateFulfilled, GameSessionArn: gs,
		IpAddress: "127.0.0.1", DnsName: "localhost", Port: 7000}
	for _, p := range req.Players {
		out.PlayerSessions = append(out.PlayerSessions, api.PlacedPlayerSession{PlayerId: cfgStr(p.PlayerID), PlayerSessionId: cfgStr("psess-" + p.PlayerID)})
	}
	if err := h.st.Update(h.ctx, func(tx store.Tx) error { return h.svc.OnMatchPlacement(h.ctx, tx, out) }); err != nil {
		h.t.Fatal(err)
	}
	return req
}

func autoIDOf(t *testing.T, data string) (id, mode string) {
	t.Helper()
	var d matchData
	if err := json.Unmarshal([]byte(data), &d); err != nil {
		t.Fatal(err)
	}
	return d.AutoBackfillID, d.AutoBackfillMode
}

func (h *ticketHarness) ticketPlayers(id string) []string {
	var out []string
	for _, p := range h.ticket(id).Players {
		out = append(out, api.ToString(p.PlayerId)+"@"+api.ToString(p.Team))
	}
	slices.Sort(out)
	return out
}

func TestAutoBackfill(t *testing.T) {
	h, fb := newAutoHarness(t)
	h.start("auto", "t1", "a")
	h.start("auto", "t2", "b")
	h.process()
	req := h.placer.reqs[0]
	auto, mode := autoIDOf(t, req.MatchmakerData)
	if auto == "" || mode != "AUTOMATIC" {
		t.Fatalf("MatchmakerData of a match with open slots: %s", req.MatchmakerData)
	}
	if _, err := h.svc.DescribeMatchmaking(h.ctx, &api.DescribeMatchmakingInput{TicketIds: []string{auto}}); err != nil {
		t.Fatal(err)
	}

	// Placed with 2 of 4 players: the ticket named in the match data
	// starts, with both players on their teams.
	h.placed(gsArn)
	h.want("t1", stCompleted)
	bf := h.want(auto, stQueued)
	if bf.GameSessionConnectionInfo != nil || len(bf.Players) != 2 || api.ToString(bf.Players[0].Team) == "" ||
		bf.Players[0].LatencyInMs["us-west-2"] != 20 || bf.Players[0].PlayerAttributes["skill"].N == nil {
		t.Fatalf("automatic backfill ticket %+v", bf)
	}

	// A new player fills a slot; the next ticket (3 of 4) is named in the
	// new match data and starts.
	h.clock.Advance(time.Millisecond)
	h.start("auto", "t3", "c")
	h.process()
	h.want(auto, stCompleted)
	h.want("t3", stCompleted)
	if len(fb.reqs) != 1 || fb.reqs[0].TicketID != auto || strings.Join(fb.reqs[0].Players, ",") != "c" {
		t.Fatalf("backfills %+v", fb.reqs)
	}
	next, _ := autoIDOf(t, fb.reqs[0].MatchmakerData)
	if next == "" || next == auto || len(h.want(next, stQueued).Players) != 3 {
		t.Fatalf("next automatic ticket %q: %s", next, fb.reqs[0].MatchmakerData)
	}

	// The last slot fills: no ticket follows.
	h.clock.Advance(time.Millisecond)
	h.start("auto", "t4", "d")
	h.process()
	h.want(next, stCompleted)
	if last, _ := autoIDOf(t, fb.reqs[1].MatchmakerData); last != "" {
		t.Fatalf("a full session has automatic ticket %q", last)
	}
	n := h.n

	// A player leaves: a ticket starts for the open slot, without him.
	hook := func(fn func(tx store.Tx) error) {
		t.Helper()
		if err := h.st.Update(h.ctx, fn); err != nil {
			t.Fatal(err)
		}
	}
	hook(func(tx store.Tx) error { return h.svc.PlayerLeftTx(h.ctx, tx, gsArn, "b") })
	if h.n != n+1 {
		t.Fatalf("no ticket after a player left")
	}
	left := h.idAt(n + 1)
	if got := h.ticketPlayers(left); len(got) != 3 || slices.ContainsFunc(got, func(s string) bool { return strings.HasPrefix(s, "b@") }) {
		t.Fatalf("ticket after b left: %v", got)
	}
	// Another leaves: the active ticket is replaced by one without her.
	hook(func(tx store.Tx) error { return h.svc.PlayerLeftTx(h.ctx, tx, gsArn, "c") })
	h.want(left, stCancelled)
	second := h.idAt(n + 2)
	if got := h.ticketPlayers(second); len(got) != 2 {
		t.Fatalf("ticket after c left: %v", got)
	}
	// A player of no roster, or of another session, changes nothing.
	hook(func(tx store.Tx) error { return h.svc.PlayerLeftTx(h.ctx, tx, gsArn, "zed") })
	hook(func(tx store.Tx) error { return h.svc.PlayerLeftTx(h.ctx, tx, gsArn+"-other", "a") })
	if h.n != n+2 {
		t.Fatalf("tickets started for players of no roster")
	}

	// A ticket that times out is followed by another while slots are open.
	h.clock.Advance(61 * time.Second)
	h.process()
	h.want(second, stTimedOut)
	third := h.idAt(n + 3)
	h.want(third, stQueued)

	// The game session ends: its ticket is cancelled and no other starts.
	hook(func(tx store.Tx) error { return h.svc.GameSessionEndedTx(h.ctx, tx, gsArn) })
	h.want(third, stCancelled)
	hook(func(tx store.Tx) error { return h.svc.PlayerLeftTx(h.ctx, tx, gsArn, "a") })
	hook(func(tx store.Tx) error { return h.svc.GameSessionEndedTx(h.ctx, tx, gsArn) })
	if h.n != n+3 {
		t.Fatalf("tickets started after the session ended")
	}
}

// idAt is the n-th ID the harness generated.
func (h *ticketHarness) idAt(n int) string { return "id-" + strconv.Itoa(n) }

func TestAutoBackfillFullMatchAndManual(t *testing.T) {
	h, _ := newAutoHarness(t)
	// A full 2v2: no automatic ticket, though the session is recorded.
	for _, p := range []string{"a", "b", "c", "d"} {
		h.start("auto", "t-"+p, p)
	}
	h.process()
	if id, mode := autoIDOf(t, h.placer.reqs[0].MatchmakerData); id != "" || mode != "AUTOMATIC" {
		t.Fatalf("full match data %s", h.placer.reqs[0].MatchmakerData)
	}
	n := h.n
	h.placed(gsArn)
	if h.n != n {
		t.Fatal("a full session got an automatic ticket")
	}
	// A player leaves it: now it gets one.
	if err := h.st.Update(h.ctx, func(tx store.Tx) error { return h.svc.PlayerLeftTx(h.ctx, tx, gsArn, "a") }); err != nil {
		t.Fatal(err)
	}
	if got := h.ticketPlayers(h.idAt(n + 1)); len(got) != 3 {
		t.Fatalf("ticket after a left: %v", got)
	}
	// When everyone has left, the last ticket is cancelled and none follows.
	for _, p := range []string{"b", "c", "d"} {
		if err := h.st.Update(h.ctx, func(tx store.Tx) error { return h.svc.PlayerLeftTx(h.ctx, tx, gsArn, p) }); err != nil {
			t.Fatal(err)
		}
	}
	h.want(h.idAt(n+3), stCancelled)
	if h.n != n+3 {
		t.Fatalf("%d tickets after everyone left, want 3", h.n-n)
	}

	// MANUAL sessions are not recorded: nothing follows a player leaving.
	h.config("manual", func(in *api.CreateMatchmakingConfigurationInput) { withQueue(in); in.RuleSetName = cfgStr("duo") })
	h.start("manual", "m1", "x")
	h.start("manual", "m2", "y")
	h.process()
	if id, mode := autoIDOf(t, h.placer.reqs[1].MatchmakerData); id != "" || mode != "" {
		t.Fatalf("MANUAL match data %s", h.placer.reqs[1].MatchmakerData)
	}
	h.placed(gsArn + "-2")
	n = h.n
	if err := h.st.Update(h.ctx, func(tx store.Tx) error { return h.svc.PlayerLeftTx(h.ctx, tx, gsArn+"-2", "x") }); err != nil {
		t.Fatal(err)
	}
	if h.n != n {
		t.Fatal("a MANUAL session got an automatic ticket")
	}
}

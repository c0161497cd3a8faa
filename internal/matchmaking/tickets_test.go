package matchmaking

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hoistgg/hoist/internal/api"
	"github.com/hoistgg/hoist/internal/events"
	"github.com/hoistgg/hoist/internal/store"
)

// recorder is a Publisher that keeps every event.
type recorder struct {
	mu  sync.Mutex
	evs []events.Event
}

func (r *recorder) Publish(_ context.Context, _ store.Tx, e events.Event) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.evs = append(r.evs, e)
	return nil
}

// types returns the detail types published so far, and forgets them.
func (r *recorder) take(t *testing.T) []eventDetail {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []eventDetail
	for _, e := range r.evs {
		var d eventDetail
		if err := json.Unmarshal(e.Detail, &d); err != nil {
			t.Fatal(err)
		}
		if e.DetailType != events.DetailTypeMatchmaking || len(e.Resources) != 1 || !strings.HasSuffix(e.Resources[0], ":matchmakingconfiguration/"+cfgName(e.Resources[0])) {
			t.Errorf("event envelope %+v", e)
		}
		out = append(out, d)
	}
	r.evs = nil
	return out
}

func cfgName(a string) string { return a[strings.LastIndex(a, "/")+1:] }

func evTypes(ds []eventDetail) string {
	var s []string
	for _, d := range ds {
		s = append(s, d.Type)
	}
	return strings.Join(s, ",")
}

// fakePlacer records the matches it is asked to place.
type fakePlacer struct {
	reqs  []MatchRequest
	err   error
	kicks int
}

func (p *fakePlacer) Kick() { p.kicks++ }

func (p *fakePlacer) StartMatchPlacementTx(_ context.Context, _ store.Tx, req MatchRequest) error {
	if p.err != nil {
		return p.err
	}
	p.reqs = append(p.reqs, req)
	return nil
}

type ticketHarness struct {
	*configHarness
	rec    *recorder
	placer *fakePlacer
	n      int
}

func newTicketHarness(t testing.TB) *ticketHarness {
	h := &ticketHarness{configHarness: newConfigHarness(t), rec: &recorder{}, placer: &fakePlacer{}}
	h.svc.cfg.Publisher = h.rec
	h.svc.cfg.Placer = h.placer
	h.svc.cfg.NewID = func() string { h.n++; return fmt.Sprintf("id-%d", h.n) }
	return h
}

// config creates a configuration of rule set rs1 (1v1).
func (h *ticketHarness) config(name string, mod func(*api.CreateMatchmakingConfigurationInput)) {
	h.t.Helper()
	in := cfgStandalone(name)
	in.CustomEventData = cfgStr("ced")
	in.NotificationTarget = cfgStr("arn:aws:sns:us-west-2:123456789012:mm")
	if mod != nil {
		mod(in)
	}
	if _, err := h.svc.CreateMatchmakingConfiguration(h.ctx, in); err != nil {
		h.t.Fatal(err)
	}
}

func (h *ticketHarness) start(config, id string, players ...string) {
	h.t.Helper()
	in := &api.StartMatchmakingInput{ConfigurationName: cfgStr(config), TicketId: cfgStr(id)}
	for _, p := range players {
		in.Players = append(in.Players, api.Player{PlayerId: cfgStr(p), LatencyInMs: map[string]int32{"us-west-2": 20},
			PlayerAttributes: map[string]api.AttributeValue{"skill": {N: new(12.0)}}})
	}
	out, err := h.svc.StartMatchmaking(h.ctx, in)
	if err != nil {
		h.t.Fatal(err)
	}
	if out.MatchmakingTicket.Status != stQueued || *out.MatchmakingTicket.TicketId != id {
		h.t.Fatalf("started %+v", out.MatchmakingTicket)
	}
}

func (h *ticketHarness) process() {
	h.t.Helper()
	if err := h.svc.Process(h.ctx); err != nil {
		h.t.Fatal(err)
	}
}

func (h *ticketHarness) ticket(id string) api.MatchmakingTicket {
	h.t.Helper()
	out, err := h.svc.DescribeMatchmaking(h.ctx, &api.DescribeMatchmakingInput{TicketIds: []string{id}})
	if err != nil || len(out.TicketList) != 1 {
		h.t.Fatalf("describe %s: %+v %v", id, out, err)
	}
	return out.TicketList[0]
}

func (h *ticketHarness) want(id string, st api.MatchmakingConfigurationStatus) api.MatchmakingTicket {
	h.t.Helper()
	tk := h.ticket(id)
	if tk.Status != st {
		h.t.Fatalf("ticket %s is %s (%s), want %s", id, tk.Status, api.ToString(tk.StatusMessage), st)
	}
	return tk
}

func (h *ticketHarness) accept(id string, typ api.AcceptanceType, players ...string) error {
	_, err := h.svc.AcceptMatch(h.ctx, &api.AcceptMatchInput{TicketId: cfgStr(id), PlayerIds: players, AcceptanceType: typ})
	return err
}

func TestStandaloneMatch(t *testing.T) {
	h := newTicketHarness(t)
	h.config("duel", nil)
	h.start("duel", "t1", "a")
	h.process()
	h.want("t1", stSearching)
	if got := evTypes(h.rec.take(t)); got != "MatchmakingSearching" {
		t.Fatalf("events %s", got)
	}
	h.clock.Advance(1500 * time.Millisecond)
	h.start("duel", "t2", "b")
	h.process()
	t1, t2 := h.want("t1", stCompleted), h.want("t2", stCompleted)
	teams := api.ToString(t1.Players[0].Team) + "," + api.ToString(t2.Players[0].Team)
	if teams != "red,blue" && teams != "blue,red" {
		t.Fatalf("teams %s", teams)
	}
	if t1.EndTime == nil || !t1.EndTime.Time.Equal(h.clock.Now()) || t1.GameSessionConnectionInfo != nil {
		t.Fatalf("completed ticket %+v", t1)
	}
	ds := h.rec.take(t)
	if got := evTypes(ds); got != "MatchmakingSearching,PotentialMatchCreated,MatchmakingSucceeded" {
		t.Fatalf("events %s", got)
	}
	pm := ds[1]
	if pm.MatchID == "" || pm.AcceptanceRequired == nil || *pm.AcceptanceRequired || len(pm.Tickets) != 2 ||
		pm.CustomEventData != "ced" || len(pm.GameSessionInfo.Players) != 2 || pm.GameSessionInfo.Players[0].Team == "" {
		t.Fatalf("PotentialMatchCreated %+v", pm)
	}
	if ds[2].MatchID != pm.MatchID || ds[2].Tickets[0].StartTime == "" {
		t.Fatalf("MatchmakingSucceeded %+v", ds[2])
	}
	// Nothing left to do.
	h.process()
	if evs := h.rec.take(t); len(evs) != 0 {
		t.Fatalf("more events %s", evTypes(evs))
	}
}

func TestStartMatchmakingRefusals(t *testing.T) {
	h := newTicketHarness(t)
	h.config("duel", nil)
	p := func(id string) api.Player { return api.Player{PlayerId: cfgStr(id)} }
	eleven := make([]api.Player, 11)
	for i := range eleven {
		eleven[i] = p(fmt.Sprint("p", i))
	}
	for _, c := range []struct {
		name string
		in   api.StartMatchmakingInput
		want string
	}{
		{"no players", api.StartMatchmakingInput{}, "Players has 0 entries"},
		{"eleven players", api.StartMatchmakingInput{Players: eleven}, "Players has 11 entries"},
		{"repeated player", api.StartMatchmakingInput{Players: []api.Player{p("a"), p("a")}}, "Players[1].PlayerId"},
		{"no player ID", api.StartMatchmakingInput{Players: []api.Player{{}}}, "Players[0].PlayerId is required"},
		{"ticket ID", api.StartMatchmakingInput{TicketId: cfgStr("a b"), Players: []api.Player{p("a")}}, "TicketId"},
		{"long ticket ID", api.StartMatchmakingInput{TicketId: cfgStr(strings.Repeat("t", 129)), Players: []api.Player{p("a")}}, "TicketId"},
		{"attribute type", api.StartMatchmakingInput{Players: []api.Player{{PlayerId: cfgStr("a"),
			PlayerAttributes: map[string]api.AttributeValue{"skill": {S: cfgStr("high")}}}}}, "Players[0].PlayerAttributes[skill]"},
		{"two values", api.StartMatchmakingInput{Players: []api.Player{{PlayerId: cfgStr("a"),
			PlayerAttributes: map[string]api.AttributeValue{"x": {S: cfgStr("a"), N: new(1.0)}}}}}, "Players[0].PlayerAttributes[x]: exactly one"},
		{"long string", api.StartMatchmakingInput{Players: []api.Player{{PlayerId: cfgStr("a"),
			PlayerAttributes: map[string]api.AttributeValue{"x": {S: cfgStr(strings.Repeat("s", 101))}}}}}, "Players[0].PlayerAttributes[x]: the value S is 101"},
		{"negative latency", api.StartMatchmakingInput{Players: []api.Player{{PlayerId: cfgStr("a"),
			LatencyInMs: map[string]int32{"r": -1}}}}, "Players[0].LatencyInMs[r]"},
	} {
		in := c.in
		in.ConfigurationName = cfgStr("duel")
		_, err := h.svc.StartMatchmaking(h.ctx, &in)
		cfgWantInvalid(t, c.name, err, c.want)
	}
	_, err := h.svc.StartMatchmaking(h.ctx, &api.StartMatchmakingInput{ConfigurationName: cfgStr("nope"), Players: []api.Player{p("a")}})
	var nf *api.NotFoundException
	if !errors.As(err, &nf) {
		t.Fatalf("unknown configuration: %v", err)
	}
	// A generated ID; a used ID, ended or not, cannot be reused.
	out, err := h.svc.StartMatchmaking(h.ctx, &api.StartMatchmakingInput{ConfigurationName: cfgStr("duel"), Players: []api.Player{p("a")}})
	if err != nil || !strings.HasPrefix(*out.MatchmakingTicket.TicketId, "id-") || *out.MatchmakingTicket.ConfigurationArn != h.svc.configARN("duel") {
		t.Fatalf("generated ID: %+v %v", *out.MatchmakingTicket, err)
	}
	id := *out.MatchmakingTicket.TicketId
	if _, err := h.svc.StopMatchmaking(h.ctx, &api.StopMatchmakingInput{TicketId: &id}); err != nil {
		t.Fatal(err)
	}
	_, err = h.svc.StartMatchmaking(h.ctx, &api.StartMatchmakingInput{ConfigurationName: cfgStr("duel"), TicketId: &id, Players: []api.Player{p("a")}})
	cfgWantInvalid(t, "reused ID", err, "already used")
	_, err = h.svc.DescribeMatchmaking(h.ctx, &api.DescribeMatchmakingInput{TicketIds: strings.Split("a,b,c,d,e,f,g,h,i,j,k", ",")})
	cfgWantInvalid(t, "describe 11", err, "TicketIds")
	d, err := h.svc.DescribeMatchmaking(h.ctx, &api.DescribeMatchmakingInput{TicketIds: []string{"nope", id}})
	if err != nil || len(d.TicketList) != 1 || d.TicketList[0].Status != stCancelled {
		t.Fatalf("describe: %+v %v", d, err)
	}
}

func TestStopMatchmaking(t *testing.T) {
	h := newTicketHarness(t)
	h.config("duel", nil)
	h.start("duel", "t1", "a")
	_, err := h.svc.DeleteMatchmakingConfiguration(h.ctx, &api.DeleteMatchmakingConfigurationInput{Name: cfgStr("duel")})
	cfgWantInvalid(t, "delete with a ticket", err, "1 active matchmaking tickets")
	h.process()
	if out, err := h.svc.StopMatchmaking(h.ctx, &api.StopMatchmakingInput{TicketId: cfgStr("t1")}); err != nil || out == nil {
		t.Fatal(err)
	}
	tk := h.want("t1", stCancelled)
	if tk.EndTime == nil || api.ToString(tk.StatusReason) != "CANCELLED" {
		t.Fatalf("cancelled %+v", tk)
	}
	ds := h.rec.take(t)
	if got := evTypes(ds); got != "MatchmakingSearching,MatchmakingCancelled" || ds[1].Reason != "Cancelled" {
		t.Fatalf("events %s %+v", got, ds)
	}
	_, err = h.svc.StopMatchmaking(h.ctx, &api.StopMatchmakingInput{TicketId: cfgStr("t1")})
	cfgWantInvalid(t, "stop twice", err, "CANCELLED")
	_, err = h.svc.StopMatchmaking(h.ctx, &api.StopMatchmakingInput{TicketId: cfgStr("nope")})
	var nf *api.NotFoundException
	if !errors.As(err, &nf) {
		t.Fatalf("stop unknown: %v", err)
	}
	if _, err := h.svc.DeleteMatchmakingConfiguration(h.ctx, &api.DeleteMatchmakingConfigurationInput{Name: cfgStr("duel")}); err != nil {
		t.Fatal(err)
	}
}

func TestRequestTimeout(t *testing.T) {
	h := newTicketHarness(t)
	h.config("duel", func(in *api.CreateMatchmakingConfigurationInput) { in.RequestTimeoutSeconds = cfgI32(1) })
	h.start("duel", "t1", "a")
	h.process()
	h.clock.Advance(999 * time.Millisecond)
	h.process()
	h.want("t1", stSearching)
	h.start("duel", "t2", "b") // QUEUED past t1's deadline: t1 cannot be matched
	h.clock.Advance(time.Millisecond)
	h.process()
	tk := h.want("t1", stTimedOut)
	if api.ToString(tk.StatusReason) != "TIMED_OUT" {
		t.Fatalf("timed out %+v", tk)
	}
	h.want("t2", stSearching)
	if got := evTypes(h.rec.take(t)); got != "MatchmakingSearching,MatchmakingSearching,MatchmakingTimedOut" {
		t.Fatalf("events %s", got)
	}
}

func acceptConfig(in *api.CreateMatchmakingConfigurationInput) {
	in.AcceptanceRequired, in.AcceptanceTimeoutSeconds = cfgYes(), cfgI32(10)
}

func TestAcceptAll(t *testing.T) {
	h := newTicketHarness(t)
	h.config("duel", acceptConfig)
	h.start("duel", "t1", "a")
	h.start("duel", "t2", "b")
	cfgWantInvalid(t, "accept while queued", h.accept("t1", api.AcceptanceTypeAccept, "a"), "REQUIRES_ACCEPTANCE")
	h.process()
	h.want("t1", stAccept)
	tk := h.want("t2", stAccept)
	if api.ToString(tk.Players[0].Team) == "" {
		t.Fatalf("no team: %+v", tk)
	}
	ds := h.rec.take(t)
	if got := evTypes(ds); got != "MatchmakingSearching,MatchmakingSearching,PotentialMatchCreated" || ds[2].AcceptanceTimeout != 10 || !*ds[2].AcceptanceRequired {
		t.Fatalf("events %s %+v", evTypes(ds), ds)
	}
	cfgWantInvalid(t, "someone else's player", h.accept("t1", api.AcceptanceTypeAccept, "b"), "PlayerIds[0]")
	if err := h.accept("t1", api.AcceptanceTypeAccept, "a"); err != nil {
		t.Fatal(err)
	}
	h.want("t1", stAccept)
	if err := h.accept("t2", api.AcceptanceTypeAccept, "b"); err != nil {
		t.Fatal(err)
	}
	h.want("t1", stCompleted)
	h.want("t2", stCompleted)
	ds = h.rec.take(t)
	if got := evTypes(ds); got != "AcceptMatch,AcceptMatch,AcceptMatchCompleted,MatchmakingSucceeded" || ds[2].Acceptance != "Accepted" {
		t.Fatalf("events %s", got)
	}
	if a := ds[0].Tickets[0].Players[0].Accepted; a == nil {
		t.Fatalf("AcceptMatch without accepted: %+v", ds[0])
	}
}

func TestAcceptReject(t *testing.T) {
	h := newTicketHarness(t)
	h.config("duel", acceptConfig)
	h.start("duel", "t1", "a")
	h.start("duel", "t2", "b")
	h.process()
	h.rec.take(t)
	if err := h.accept("t1", api.AcceptanceTypeAccept, "a"); err != nil {
		t.Fatal(err)
	}
	if err := h.accept("t2", api.AcceptanceTypeReject, "b"); err != nil {
		t.Fatal(err)
	}
	tk := h.want("t1", stSearching)
	if tk.Players[0].Team != nil {
		t.Fatalf("team kept: %+v", tk)
	}
	h.want("t2", stCancelled)
	ds := h.rec.take(t)
	if got := evTypes(ds); got != "AcceptMatch,AcceptMatch,AcceptMatchCompleted,MatchmakingSearching,MatchmakingCancelled" || ds[2].Acceptance != "Rejected" {
		t.Fatalf("events %s", got)
	}
	// t1 matches again with a newcomer.
	h.start("duel", "t3", "c")
	h.process()
	h.want("t1", stAccept)
	h.want("t3", stAccept)
	// Stopping a ticket of a match waiting for acceptance is a rejection.
	if _, err := h.svc.StopMatchmaking(h.ctx, &api.StopMatchmakingInput{TicketId: cfgStr("t3")}); err != nil {
		t.Fatal(err)
	}
	h.want("t1", stSearching)
	h.want("t3", stCancelled)
}

func TestAcceptTimeout(t *testing.T) {
	h := newTicketHarness(t)
	h.config("duel", acceptConfig)
	h.start("duel", "t1", "a")
	h.start("duel", "t2", "b")
	h.process()
	if err := h.accept("t2", api.AcceptanceTypeAccept, "b"); err != nil {
		t.Fatal(err)
	}
	h.rec.take(t)
	h.clock.Advance(9999 * time.Millisecond)
	h.process()
	h.want("t1", stAccept)
	h.clock.Advance(time.Millisecond)
	h.process()
	h.want("t1", stCancelled)
	h.want("t2", stSearching)
	ds := h.rec.take(t)
	if got := evTypes(ds); got != "AcceptMatchCompleted,MatchmakingCancelled,MatchmakingSearching" || ds[0].Acceptance != "TimedOut" {
		t.Fatalf("events %s", got)
	}
}

func withQueue(in *api.CreateMatchmakingConfigurationInput) {
	in.FlexMatchMode, in.GameSessionQueueArns = api.FlexMatchModeWithQueue, []string{"q1"}
	in.AdditionalPlayerCount, in.GameSessionData = cfgI32(2), cfgStr("gsd")
	in.GameProperties = []api.GameProperty{{Key: cfgStr("k"), Value: cfgStr("v")}}
}

func TestWithQueue(t *testing.T) {
	h := newTicketHarness(t)
	h.config("duel", withQueue)
	h.start("duel", "t1", "a")
	h.start("duel", "t2", "b")
	h.process()
	h.want("t1", stPlacing)
	h.want("t2", stPlacing)
	if len(h.placer.reqs) != 1 || h.placer.kicks != 1 {
		t.Fatalf("placements %+v", h.placer.reqs)
	}
	req := h.placer.reqs[0]
	if req.QueueName != "q1" || req.MaximumPlayerSessionCount != 4 || req.GameSessionData != "gsd" || len(req.GameProperties) != 1 ||
		len(req.Players) != 2 || req.Players[0].LatencyInMs["us-west-2"] != 20 {
		t.Fatalf("request %+v", req)
	}
	var md struct {
		MatchID string `json:"matchId"`
		Arn     string `json:"matchmakingConfigurationArn"`
		Teams   []struct {
			Name    string `json:"name"`
			Players []struct {
				PlayerID   string `json:"playerId"`
				Attributes map[string]struct {
					Type  string  `json:"attributeType"`
					Value float64 `json:"valueAttribute"`
				} `json:"attributes"`
			} `json:"players"`
		} `json:"teams"`
	}
	if err := json.Unmarshal([]byte(req.MatchmakerData), &md); err != nil {
		t.Fatal(err)
	}
	if md.MatchID != req.PlacementID || md.Arn != h.svc.configARN("duel") || len(md.Teams) != 2 || md.Teams[0].Name != "red" ||
		md.Teams[0].Players[0].Attributes["skill"].Type != "DOUBLE" || md.Teams[0].Players[0].Attributes["skill"].Value != 12 {
		t.Fatalf("MatchmakerData %s", req.MatchmakerData)
	}
	cfgWantInvalid(t, "stop while placing", func() error {
		_, err := h.svc.StopMatchmaking(h.ctx, &api.StopMatchmakingInput{TicketId: cfgStr("t1")})
		return err
	}(), "PLACING")
	h.rec.take(t)
	err := h.st.Update(h.ctx, func(tx store.Tx) error {
		return h.svc.OnMatchPlacement(h.ctx, tx, MatchOutcome{PlacementID: req.PlacementID, Status: api.GameSessionPlacementStateFulfilled,
			GameSessionArn: "gsarn", IpAddress: "127.0.0.1", DnsName: "localhost", Port: 7777,
			PlayerSessions: []api.PlacedPlayerSession{{PlayerId: cfgStr("a"), PlayerSessionId: cfgStr("psess-a")}, {PlayerId: cfgStr("b"), PlayerSessionId: cfgStr("psess-b")}}})
	})
	if err != nil {
		t.Fatal(err)
	}
	tk := h.want("t1", stCompleted)
	ci := tk.GameSessionConnectionInfo
	if ci == nil || *ci.GameSessionArn != "gsarn" || *ci.Port != 7777 || len(ci.MatchedPlayerSessions) != 1 || *ci.MatchedPlayerSessions[0].PlayerSessionId != "psess-a" {
		t.Fatalf("connection info %+v", ci)
	}
	ds := h.rec.take(t)
	if got := evTypes(ds); got != "MatchmakingSucceeded" || ds[0].GameSessionInfo.GameSessionArn != "gsarn" || ds[0].GameSessionInfo.Players[0].PlayerSessionID == "" {
		t.Fatalf("events %s %+v", got, ds)
	}
	// A placement that is not a match's is ignored.
	if err := h.st.Update(h.ctx, func(tx store.Tx) error {
		return h.svc.OnMatchPlacement(h.ctx, tx, MatchOutcome{PlacementID: "other", Status: api.GameSessionPlacementStateFulfilled})
	}); err != nil {
		t.Fatal(err)
	}
}

func TestWithQueueFailures(t *testing.T) {
	h := newTicketHarness(t)
	h.config("duel", withQueue)
	h.start("duel", "t1", "a")
	h.start("duel", "t2", "b")
	h.process()
	id := h.placer.reqs[0].PlacementID
	if err := h.st.Update(h.ctx, func(tx store.Tx) error {
		return h.svc.OnMatchPlacement(h.ctx, tx, MatchOutcome{PlacementID: id, Status: api.GameSessionPlacementStateTimedOut})
	}); err != nil {
		t.Fatal(err)
	}
	tk := h.want("t1", stFailed)
	if !strings.Contains(api.ToString(tk.StatusMessage), "TIMED_OUT") {
		t.Fatalf("failed %+v", tk)
	}
	// The placer refuses: FAILED at once.
	h.placer.err = api.NewNotFoundException("game session queue q1 does not exist")
	h.start("duel", "t3", "c")
	h.start("duel", "t4", "d")
	h.process()
	h.want("t3", stFailed)
	// No placer at all.
	h.svc.cfg.Placer = nil
	h.start("duel", "t5", "e")
	h.start("duel", "t6", "f")
	h.process()
	tk = h.want("t6", stFailed)
	if !strings.Contains(api.ToString(tk.StatusMessage), "WITH_QUEUE") {
		t.Fatalf("failed %+v", tk)
	}
	ds := h.rec.take(t)
	if n := strings.Count(evTypes(ds), "MatchmakingFailed"); n != 6 {
		t.Fatalf("events %s", evTypes(ds))
	}
}

// TestUnparsableRuleSet: a stored rule set this Hoist cannot parse (as
// after an upgrade of the rule language) stops matching for its
// configurations, but their tickets still search and time out.
func TestUnparsableRuleSet(t *testing.T) {
	h := newTicketHarness(t)
	h.config("duel", func(in *api.CreateMatchmakingConfigurationInput) { in.RequestTimeoutSeconds = cfgI32(1) })
	h.start("duel", "t1", "a")
	err := h.st.Update(h.ctx, func(tx store.Tx) error {
		if err := tx.Delete(h.ctx, KindRuleSet, "rs1"); err != nil {
			return err
		}
		return tx.Insert(h.ctx, store.Record{Kind: KindRuleSet, ID: "rs1", Data: []byte(`{"RuleSetName":"rs1","RuleSetBody":"{}"}`)})
	})
	if err != nil {
		t.Fatal(err)
	}
	_, err = h.svc.StartMatchmaking(h.ctx, &api.StartMatchmakingInput{ConfigurationName: cfgStr("duel"), Players: []api.Player{{PlayerId: cfgStr("b")}}})
	cfgWantInvalid(t, "start", err, "the rule set rs1 of matchmaking configuration duel cannot be used: RuleSetBody: ")
	if err := h.svc.Process(h.ctx); err == nil || !strings.Contains(err.Error(), "RuleSetBody") {
		t.Fatalf("pass: %v", err)
	}
	h.want("t1", stSearching)
	h.clock.Advance(time.Second)
	_ = h.svc.Process(h.ctx)
	h.want("t1", stTimedOut)
}

// TestTicketRetention: an ended ticket is described for TicketRetention,
// then removed (with its backfill index entry).
func TestTicketRetention(t *testing.T) {
	h := newTicketHarness(t)
	h.config("duel", nil)
	h.start("duel", "t1", "a")
	h.start("duel", "t2", "b")
	if err := h.backfill("duel", gsArn, "bf", "c"); err != nil {
		t.Fatal(err)
	}
	h.process()
	h.clock.Advance(time.Minute) // the lonely ticket times out
	h.process()
	for _, id := range []string{"t1", "t2", "bf"} {
		if st := h.ticket(id).Status; isActive(st) {
			t.Fatalf("ticket %s is %s", id, st)
		}
	}
	h.clock.Advance(TicketRetention - time.Minute)
	h.process()
	h.ticket("t1")
	h.clock.Advance(2 * time.Minute)
	h.process()
	out, err := h.svc.DescribeMatchmaking(h.ctx, &api.DescribeMatchmakingInput{TicketIds: []string{"t1", "t2", "bf"}})
	if err != nil || len(out.TicketList) != 0 {
		t.Fatalf("after the retention: %+v %v", out, err)
	}
	err = h.st.View(h.ctx, func(tx store.Tx) error {
		n, err := tx.Count(h.ctx, store.Query{Kind: KindBackfill})
		if n != 0 {
			t.Errorf("%d backfill index records left", n)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestEstimatedWait: without recent matches there is no estimate; then
// EstimatedWaitTime (seconds, rounded up) and estimatedWaitMillis follow
// the waits of the matched tickets, for 10 minutes.
func TestEstimatedWait(t *testing.T) {
	h := newTicketHarness(t)
	h.config("duel", nil)
	h.start("duel", "t1", "a")
	h.process()
	if tk := h.ticket("t1"); tk.EstimatedWaitTime != nil {
		t.Fatalf("an estimate without data: %+v", tk)
	}
	if ds := h.rec.take(t); ds[0].EstimatedWaitMillis != "NOT_AVAILABLE" {
		t.Fatalf("searching %+v", ds[0])
	}
	h.clock.Advance(1500 * time.Millisecond)
	h.start("duel", "t2", "b")
	h.process() // waits 1.5 s and 0: 750 ms
	h.rec.take(t)
	out, err := h.svc.StartMatchmaking(h.ctx, &api.StartMatchmakingInput{ConfigurationName: cfgStr("duel"), TicketId: cfgStr("t3"),
		Players: []api.Player{{PlayerId: cfgStr("c")}}})
	if err != nil || out.MatchmakingTicket.EstimatedWaitTime == nil || *out.MatchmakingTicket.EstimatedWaitTime != 1 {
		t.Fatalf("start: %+v %v", out, err)
	}
	h.process()
	if ds := h.rec.take(t); ds[0].EstimatedWaitMillis != "750" {
		t.Fatalf("searching %+v", ds[0])
	}
	if tk := h.want("t3", stSearching); tk.EstimatedWaitTime == nil || *tk.EstimatedWaitTime != 1 {
		t.Fatalf("describe %+v", tk)
	}
	if tk := h.want("t1", stCompleted); tk.EstimatedWaitTime != nil {
		t.Fatalf("an estimate on a completed ticket: %+v", tk)
	}
	h.clock.Advance(waitFresh)
	if tk := h.ticket("t3"); tk.EstimatedWaitTime != nil {
		t.Fatalf("a stale estimate: %+v", tk)
	}
}

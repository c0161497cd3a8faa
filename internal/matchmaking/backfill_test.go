package matchmaking

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/hoistgg/hoist/internal/api"
	"github.com/hoistgg/hoist/internal/store"
)

// fakeBackfiller records backfills and their ends.
type fakeBackfiller struct {
	reqs     []SessionBackfill
	ended    []string // "<game session> <ticket> <reason>"
	notified int
	err      error
}

func (f *fakeBackfiller) BackfillTx(_ context.Context, _ store.Tx, b SessionBackfill) (*SessionBackfilled, error) {
	if f.err != nil {
		return nil, f.err
	}
	f.reqs = append(f.reqs, b)
	out := &SessionBackfilled{GameSessionArn: b.GameSessionArn, IpAddress: "127.0.0.1", DnsName: "localhost", Port: 7000,
		Notify: func(context.Context) { f.notified++ }}
	for _, p := range b.Players {
		out.PlayerSessions = append(out.PlayerSessions, api.PlacedPlayerSession{PlayerId: cfgStr(p), PlayerSessionId: cfgStr("psess-" + p)})
	}
	return out, nil
}

func (f *fakeBackfiller) BackfillEnded(_ context.Context, gs, ticket, reason string) {
	f.ended = append(f.ended, gs+" "+ticket+" "+reason)
}

func (h *ticketHarness) backfill(config, gs, id string, players ...string) error {
	in := &api.StartMatchBackfillInput{ConfigurationName: cfgStr(config), TicketId: cfgStr(id)}
	if gs != "" {
		in.GameSessionArn = cfgStr(gs)
	}
	for _, p := range players {
		in.Players = append(in.Players, api.Player{PlayerId: cfgStr(p), Team: cfgStr("red"),
			PlayerAttributes: map[string]api.AttributeValue{"skill": {N: new(12.0)}}})
	}
	out, err := h.svc.StartMatchBackfill(h.ctx, in)
	if err == nil && (out.MatchmakingTicket.Status != stQueued || api.ToString(out.MatchmakingTicket.Players[0].Team) != "red") {
		h.t.Fatalf("backfill ticket %+v", out.MatchmakingTicket)
	}
	return err
}

const gsArn = "arn:aws:gamelift:us-west-2::gamesession/fleet-1/gs-1"

func TestBackfillStandalone(t *testing.T) {
	h := newTicketHarness(t)
	h.config("duel", nil)
	if err := h.backfill("duel", "", "bf1", "a"); err != nil {
		t.Fatal(err)
	}
	h.clock.Advance(time.Millisecond)
	h.start("duel", "t2", "b")
	h.process()
	bf := h.want("bf1", stCompleted)
	t2 := h.want("t2", stCompleted)
	if api.ToString(bf.Players[0].Team) != "red" || api.ToString(t2.Players[0].Team) != "blue" {
		t.Fatalf("teams %+v %+v", bf.Players, t2.Players)
	}
}

func TestBackfillWithQueue(t *testing.T) {
	h := newTicketHarness(t)
	fb := &fakeBackfiller{}
	h.svc.cfg.Backfiller = fb
	h.config("duel", withQueue)
	if err := h.backfill("duel", gsArn, "bf1", "a"); err != nil {
		t.Fatal(err)
	}
	h.clock.Advance(time.Millisecond)
	h.start("duel", "t2", "b")
	h.process()
	h.want("bf1", stCompleted)
	t2 := h.want("t2", stCompleted)
	ci := t2.GameSessionConnectionInfo
	if ci == nil || *ci.GameSessionArn != gsArn || len(ci.MatchedPlayerSessions) != 1 || *ci.MatchedPlayerSessions[0].PlayerSessionId != "psess-b" {
		t.Fatalf("connection info %+v", ci)
	}
	if len(fb.reqs) != 1 || strings.Join(fb.reqs[0].Players, ",") != "b" || fb.reqs[0].TicketID != "bf1" || fb.notified != 1 ||
		!strings.Contains(fb.reqs[0].MatchmakerData, `"playerId":"a"`) || len(h.placer.reqs) != 0 {
		t.Fatalf("backfills %+v notified %d placements %d", fb.reqs, fb.notified, len(h.placer.reqs))
	}

	// A newer request of the game session replaces the older; a lonely
	// backfill times out; a refused one fails. The server hears of each.
	if err := h.backfill("duel", gsArn, "bf2", "a"); err != nil {
		t.Fatal(err)
	}
	if err := h.backfill("duel", gsArn, "bf3", "a"); err != nil {
		t.Fatal(err)
	}
	h.want("bf2", stCancelled)
	h.clock.Advance(60 * time.Second)
	h.process()
	h.want("bf3", stTimedOut)
	fb.err = api.NewNotFoundException("game session gs-1 does not exist")
	if err := h.backfill("duel", gsArn, "bf4", "a"); err != nil {
		t.Fatal(err)
	}
	h.clock.Advance(time.Millisecond)
	h.start("duel", "t5", "e")
	h.process()
	h.want("bf4", stFailed)
	h.want("t5", stFailed)
	want := gsArn + " bf2 BACKFILL_CANCELLED," + gsArn + " bf3 BACKFILL_TIMED_OUT," + gsArn + " bf4 BACKFILL_FAILED"
	if got := strings.Join(fb.ended, ","); got != want {
		t.Fatalf("ended %s, want %s", got, want)
	}
}

func TestBackfillAcceptance(t *testing.T) {
	h := newTicketHarness(t)
	h.config("duel", acceptConfig)
	if err := h.backfill("duel", "", "bf1", "a"); err != nil {
		t.Fatal(err)
	}
	h.clock.Advance(time.Millisecond)
	h.start("duel", "t2", "b")
	h.process()
	h.want("bf1", stAccept)
	// Only the new player accepts.
	if err := h.accept("t2", api.AcceptanceTypeAccept, "b"); err != nil {
		t.Fatal(err)
	}
	h.want("bf1", stCompleted)
	h.want("t2", stCompleted)
	// A new player who rejects: the backfill searches again, its team kept.
	if err := h.backfill("duel", "", "bf3", "a"); err != nil {
		t.Fatal(err)
	}
	h.clock.Advance(time.Millisecond)
	h.start("duel", "t4", "c")
	h.process()
	if err := h.accept("t4", api.AcceptanceTypeReject, "c"); err != nil {
		t.Fatal(err)
	}
	if tk := h.want("bf3", stSearching); api.ToString(tk.Players[0].Team) != "red" {
		t.Fatalf("backfill ticket %+v", tk)
	}
}

func TestBackfillRefusals(t *testing.T) {
	h := newTicketHarness(t)
	h.config("duel", nil)
	h.config("queued", withQueue)
	many := make([]string, 200)
	for i := range many {
		many[i] = fmt.Sprint("p", i)
	}
	cfgWantInvalid(t, "200 players", h.backfill("duel", "", "x", many...), "Players has 200 entries")
	_, err := h.svc.StartMatchBackfill(h.ctx, &api.StartMatchBackfillInput{ConfigurationName: cfgStr("duel"), Players: []api.Player{{PlayerId: cfgStr("a")}}})
	cfgWantInvalid(t, "no team", err, "Players[0].Team is required")
	cfgWantInvalid(t, "WITH_QUEUE without a game session", h.backfill("queued", "", "x", "a"), "GameSessionArn is required")
	h.start("duel", "used", "a")
	cfgWantInvalid(t, "a used ID", h.backfill("duel", "", "used", "a"), "already used")
	_, err = h.svc.StartMatchBackfill(h.ctx, &api.StartMatchBackfillInput{ConfigurationName: cfgStr("nope"), Players: []api.Player{{PlayerId: cfgStr("a"), Team: cfgStr("red")}}})
	if _, ok := err.(*api.NotFoundException); !ok {
		t.Fatalf("unknown configuration: %v", err)
	}
}

// TestBackfillFromServer: the calls a server process's StartMatchBackfill
// and StopMatchBackfill make.
func TestBackfillFromServer(t *testing.T) {
	h := newTicketHarness(t)
	fb := &fakeBackfiller{}
	h.svc.cfg.Backfiller = fb
	h.config("duel", withQueue)
	players := []api.Player{{PlayerId: cfgStr("a"), Team: cfgStr("red")}}
	if _, err := h.svc.StartBackfill(h.ctx, "duel", "", "", players); err == nil {
		t.Fatal("a backfill without a game session")
	}
	id, err := h.svc.StartBackfill(h.ctx, h.svc.configARN("duel"), gsArn, "", players)
	if err != nil || !strings.HasPrefix(id, "id-") {
		t.Fatalf("start: %q %v", id, err)
	}
	h.want(id, stQueued)
	var nf *api.NotFoundException
	if err := h.svc.StopBackfill(h.ctx, "duel", "other-session", id); !errors.As(err, &nf) {
		t.Fatalf("stop of another session's ticket: %v", err)
	}
	if err := h.svc.StopBackfill(h.ctx, h.svc.configARN("duel"), gsArn, id); err != nil {
		t.Fatal(err)
	}
	h.want(id, stCancelled)
	cfgWantInvalid(t, "stop twice", h.svc.StopBackfill(h.ctx, "duel", gsArn, id), "CANCELLED")
	if got := strings.Join(fb.ended, ","); got != gsArn+" "+id+" BACKFILL_CANCELLED" {
		t.Fatalf("ended %s", got)
	}
}

package sessions

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/hoistgg/hoist/internal/api"
	"github.com/hoistgg/hoist/internal/hosting"
	"github.com/hoistgg/hoist/internal/store"
)

const (
	matchData  = `{"matchId":"m1","teams":[{"name":"red","players":[{"playerId":"alice"}]}]}`
	matchData2 = `{"matchId":"m1","teams":[{"name":"red","players":[{"playerId":"alice"},{"playerId":"carol"}]}]}`
)

// matchSession places a FlexMatch game session (MatchmakerData set, alice
// reserved) on a new ready process and activates it.
func (h *harness) matchSession(pid string, max int32) (string, hosting.Conn) {
	h.t.Helper()
	h.addFleet("fleet-1")
	h.addCompute("fleet-1", "i-1", "us-west-2")
	c := h.readyProcess("fleet-1", "i-1", "us-west-2", pid, 7777)
	var p *Placed
	h.must(h.svc.Update(h.ctx, func(tx store.Tx) error {
		var err error
		p, err = h.svc.PlaceTx(h.ctx, tx, PlaceRequest{FleetID: "fleet-1", Location: "us-west-2", Token: "m1",
			MaximumPlayerSessionCount: max, MatchmakerData: api.String(matchData),
			GameProperties: []api.GameProperty{{Key: api.String("mode"), Value: api.String("duel")}}})
		return err
	}))
	h.svc.StartPlaced(h.ctx, p)
	id := api.ToString(p.GameSession.GameSessionId)
	if m := h.msgr.last(pid, "CreateGameSession"); m == nil || m["MatchmakerData"] != matchData {
		h.t.Fatalf("CreateGameSession = %v", m)
	}
	h.must(h.sdk.ActivateGameSession(h.ctx, c, id))
	h.must(h.svc.Update(h.ctx, func(tx store.Tx) error {
		_, err := h.svc.AddPlacedPlayersTx(h.ctx, tx, id, nil, []api.DesiredPlayerSession{{PlayerId: api.String("alice")}})
		return err
	}))
	return id, c
}

func (h *harness) backfill(b Backfill) (*Backfilled, error) {
	var out *Backfilled
	err := h.svc.Update(h.ctx, func(tx store.Tx) error {
		var err error
		out, err = h.svc.BackfillTx(h.ctx, tx, b)
		return err
	})
	return out, err
}

// TestBackfill: a successful backfill sets the new MatchmakerData and
// reserves the new players in the caller's transaction; only after the
// commit, SendBackfilled sends the process UpdateGameSession with the game
// session and MATCHMAKING_DATA_UPDATED.
func TestBackfill(t *testing.T) {
	h := newHarness(t)
	id, _ := h.matchSession("proc-1", 3)
	b, err := h.backfill(Backfill{GameSessionID: id, TicketID: "bf-1", MatchmakerData: matchData2,
		Players: []api.DesiredPlayerSession{{PlayerId: api.String("carol"), PlayerData: api.String("c")}}})
	h.must(err)
	if len(b.PlayerSessions) != 1 || api.ToString(b.PlayerSessions[0].PlayerId) != "carol" || b.PlayerSessions[0].Status != api.PlayerSessionStatusReserved {
		t.Fatalf("player sessions = %+v", b.PlayerSessions)
	}
	gs := h.gameSession(id)
	if api.ToString(gs.Session.MatchmakerData) != matchData2 || api.ToInt32(gs.Session.CurrentPlayerSessionCount) != 2 {
		t.Fatalf("game session = %+v", gs.Session)
	}
	ps := h.playerSession(api.ToString(b.PlayerSessions[0].PlayerSessionId))
	if ps.Session.Status != api.PlayerSessionStatusReserved || api.ToString(ps.Session.PlayerData) != "c" {
		t.Fatalf("carol = %+v", ps.Session)
	}
	// DescribeGameSessions shows the new data.
	out, err := h.svc.DescribeGameSessions(h.ctx, &api.DescribeGameSessionsInput{GameSessionId: api.String(id)})
	h.must(err)
	if api.ToString(out.GameSessions[0].MatchmakerData) != matchData2 {
		t.Fatalf("described = %s", api.ToString(out.GameSessions[0].MatchmakerData))
	}
	if h.msgr.last("proc-1", "UpdateGameSession") != nil {
		t.Fatal("UpdateGameSession sent before SendBackfilled")
	}
	h.must(h.svc.SendBackfilled(h.ctx, b))
	want := hosting.Message{"Action": "UpdateGameSession", "UpdateReason": "MATCHMAKING_DATA_UPDATED", "BackfillTicketId": "bf-1",
		"GameSession": map[string]any{"GameSessionId": id, "Name": "", "FleetId": "fleet-1", "Location": "us-west-2",
			"MaximumPlayerSessionCount": int32(3), "IpAddress": "127.0.0.1", "Port": int32(7777), "DnsName": "i-1.hoist.test",
			"GameSessionData": "", "MatchmakerData": matchData2, "GameProperties": map[string]string{"mode": "duel"},
			"Status": "ACTIVE", "StatusReason": ""}}
	if got := h.msgr.last("proc-1", "UpdateGameSession"); !reflect.DeepEqual(got, want) {
		t.Fatalf("UpdateGameSession = %#v\nwant %#v", got, want)
	}
	// SearchGameSessions sees the new player count.
	sr, err := h.svc.SearchGameSessions(h.ctx, &api.SearchGameSessionsInput{FleetId: api.String("fleet-1"),
		FilterExpression: api.String("playerSessionCount = 2")})
	h.must(err)
	if len(sr.GameSessions) != 1 {
		t.Fatalf("search = %+v", sr.GameSessions)
	}
}

// TestBackfillRefused: every refusal writes nothing.
func TestBackfillRefused(t *testing.T) {
	h := newHarness(t)
	id, c := h.matchSession("proc-1", 2)
	carol := []api.DesiredPlayerSession{{PlayerId: api.String("carol")}}
	tests := []struct {
		name string
		b    Backfill
		code string
		msg  string
	}{
		{"unknown game session", Backfill{GameSessionID: id + "x", MatchmakerData: matchData2, Players: carol}, "NotFoundException", "does not exist"},
		{"no match data", Backfill{GameSessionID: id, Players: carol}, "InvalidRequestException", "MatchmakerData"},
		{"match data too long", Backfill{GameSessionID: id, MatchmakerData: strings.Repeat("x", 390001), Players: carol}, "InvalidRequestException", "MatchmakerData"},
		{"no slot", Backfill{GameSessionID: id, MatchmakerData: matchData2,
			Players: []api.DesiredPlayerSession{{PlayerId: api.String("carol")}, {PlayerId: api.String("dave")}}}, "GameSessionFullException", "no room"},
		{"player twice", Backfill{GameSessionID: id, MatchmakerData: matchData2,
			Players: []api.DesiredPlayerSession{{PlayerId: api.String("carol")}, {PlayerId: api.String("carol")}}}, "InvalidRequestException", "Players[1]"},
		{"player without ID", Backfill{GameSessionID: id, MatchmakerData: matchData2,
			Players: []api.DesiredPlayerSession{{}}}, "InvalidRequestException", "Players[0].PlayerId"},
	}
	for _, tc := range tests {
		_, err := h.backfill(tc.b)
		wantCode(t, err, tc.code)
		if !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("%s: %q does not say %q", tc.name, err, tc.msg)
		}
	}
	// DENY_ALL is full, as for CreatePlayerSessions.
	h.must(h.sdk.UpdatePlayerSessionCreationPolicy(h.ctx, c, id, api.PlayerSessionCreationPolicyDenyAll))
	_, err := h.backfill(Backfill{GameSessionID: id, MatchmakerData: matchData2, Players: carol})
	wantCode(t, err, "GameSessionFullException")
	if gs := h.gameSession(id); api.ToString(gs.Session.MatchmakerData) != matchData || api.ToInt32(gs.Session.CurrentPlayerSessionCount) != 1 {
		t.Fatalf("a refused backfill wrote %+v", gs.Session)
	}

	// A game session that FlexMatch did not create cannot be backfilled.
	h.addCompute("fleet-1", "i-2", "us-west-2")
	h.readyProcess("fleet-1", "i-2", "us-west-2", "proc-2", 7778)
	plain, err := h.create("fleet-1")
	h.must(err)
	h.must(h.sdk.ActivateGameSession(h.ctx, conn("fleet-1", "i-2", "proc-2"), api.ToString(plain.GameSessionId)))
	_, err = h.backfill(Backfill{GameSessionID: api.ToString(plain.GameSessionId), MatchmakerData: matchData2, Players: carol})
	wantCode(t, err, "InvalidRequestException")
}

// TestBackfillEnded: the process is told of a backfill that ended without
// players, with its ticket ID and the game session unchanged.
func TestBackfillEnded(t *testing.T) {
	h := newHarness(t)
	id, _ := h.matchSession("proc-1", 3)
	for _, r := range []UpdateReason{BackfillFailed, BackfillTimedOut, BackfillCancelled} {
		h.must(h.svc.SendBackfillEnded(h.ctx, id, "bf-"+string(r), r))
		m := h.msgr.last("proc-1", "UpdateGameSession")
		gs, _ := m["GameSession"].(map[string]any)
		if m["UpdateReason"] != string(r) || m["BackfillTicketId"] != "bf-"+string(r) || gs["MatchmakerData"] != matchData || gs["GameSessionId"] != id {
			t.Fatalf("%s: %v", r, m)
		}
	}
	wantCode(t, h.svc.SendBackfillEnded(h.ctx, id, "t", MatchmakingDataUpdated), "InvalidRequestException")
	wantCode(t, h.svc.SendBackfillEnded(h.ctx, id+"x", "t", BackfillFailed), "NotFoundException")
}

// TestCheckGameSessionHost: the host check the SDK endpoint makes before a
// backfill request.
func TestCheckGameSessionHost(t *testing.T) {
	h := newHarness(t)
	id, c := h.matchSession("proc-1", 3)
	h.must(h.sdk.CheckGameSessionHost(h.ctx, c, id))
	h.addCompute("fleet-1", "i-2", "us-west-2")
	other := h.readyProcess("fleet-1", "i-2", "us-west-2", "proc-2", 7778)
	wantSDK(t, h.sdk.CheckGameSessionHost(h.ctx, other, id), 403)
	wantSDK(t, h.sdk.CheckGameSessionHost(h.ctx, c, id+"x"), 404)
	// Not ACTIVE: 400.
	gs, err := h.create("fleet-1")
	h.must(err)
	wantSDK(t, h.sdk.CheckGameSessionHost(h.ctx, other, api.ToString(gs.GameSessionId)), 400)
}

// fakeMatchHook records what sessions tells matchmaking.
type fakeMatchHook struct {
	calls []string
	err   error
}

func (f *fakeMatchHook) PlayerLeftTx(_ context.Context, _ store.Tx, gs, player string) error {
	f.calls = append(f.calls, "left "+gs+" "+player)
	return f.err
}

func (f *fakeMatchHook) GameSessionEndedTx(_ context.Context, _ store.Tx, gs string) error {
	f.calls = append(f.calls, "ended "+gs)
	return f.err
}

// TestMatchHook: a player leaving a FlexMatch game session and the
// session ending are told to the MatchHook in their transactions (an error
// of the hook aborts them); other game sessions are not.
func TestMatchHook(t *testing.T) {
	h := newHarness(t)
	hook := &fakeMatchHook{}
	h.svc.SetMatchHook(hook)
	id, c := h.matchSession("proc-1", 3)
	b, err := h.backfill(Backfill{GameSessionID: id, TicketID: "bf-1", MatchmakerData: matchData2,
		Players: []api.DesiredPlayerSession{{PlayerId: api.String("carol")}}})
	h.must(err)
	carol := api.ToString(b.PlayerSessions[0].PlayerSessionId)
	h.must(h.sdk.AcceptPlayerSession(h.ctx, c, id, carol))

	hook.err = errors.New("store failed")
	if err := h.sdk.RemovePlayerSession(h.ctx, c, id, carol); err == nil {
		t.Fatal("RemovePlayerSession succeeded though the hook failed")
	}
	if st := h.playerSession(carol).Session.Status; st != api.PlayerSessionStatusActive {
		t.Fatalf("carol after a failed removal: %s", st)
	}
	hook.err = nil
	h.must(h.sdk.RemovePlayerSession(h.ctx, c, id, carol))
	h.must(h.sdk.ProcessEnding(h.ctx, c))
	want := []string{"left " + id + " carol", "left " + id + " carol", "ended " + id}
	if !reflect.DeepEqual(hook.calls, want) {
		t.Fatalf("hook calls %q, want %q", hook.calls, want)
	}

	// A game session without MatchmakerData is not FlexMatch's.
	hook.calls = nil
	h.addCompute("fleet-1", "i-2", "us-west-2")
	c2 := h.readyProcess("fleet-1", "i-2", "us-west-2", "proc-2", 7778)
	gs, err := h.create("fleet-1")
	h.must(err)
	h.must(h.sdk.ActivateGameSession(h.ctx, c2, api.ToString(gs.GameSessionId)))
	h.must(h.sdk.ProcessEnding(h.ctx, c2))
	if len(hook.calls) != 0 {
		t.Fatalf("hook calls for a game session of no match: %q", hook.calls)
	}
}

package sessions

import (
	"fmt"
	"reflect"
	"testing"

	"github.com/hoistgg/hoist/internal/api"
	"github.com/hoistgg/hoist/internal/hosting"
)

// activeSession readies a process and returns its ACTIVE game session.
func (h *harness) activeSession(fleetID, compute, pid string, maxPlayers int32) (hosting.Conn, string) {
	h.t.Helper()
	c := h.readyProcess(fleetID, compute, "us-west-2", pid, 7777)
	gs, err := h.create(fleetID, func(in *api.CreateGameSessionInput) { in.MaximumPlayerSessionCount = &maxPlayers })
	h.must(err)
	id := api.ToString(gs.GameSessionId)
	h.must(h.sdk.ActivateGameSession(h.ctx, c, id))
	return c, id
}

func (h *harness) reserve(gsID string, players ...string) ([]string, error) {
	out, err := h.svc.CreatePlayerSessions(h.ctx, &api.CreatePlayerSessionsInput{GameSessionId: &gsID, PlayerIds: players})
	if err != nil {
		return nil, err
	}
	var ids []string
	for _, ps := range out.PlayerSessions {
		ids = append(ids, api.ToString(ps.PlayerSessionId))
	}
	return ids, nil
}

func TestCreatePlayerSessionsErrors(t *testing.T) {
	h := newHarness(t)
	h.addFleet("fleet-1")
	h.addCompute("fleet-1", "i-1", "us-west-2")
	c, id := h.activeSession("fleet-1", "i-1", "proc-1", 2)
	h.readyProcess("fleet-1", "i-1", "us-west-2", "proc-2", 7778)
	activating, err := h.create("fleet-1")
	h.must(err)

	tests := map[string]struct {
		in   api.CreatePlayerSessionsInput
		code string
	}{
		"too many":        {api.CreatePlayerSessionsInput{GameSessionId: &id, PlayerIds: []string{"a", "b", "c"}}, "GameSessionFullException"},
		"duplicate":       {api.CreatePlayerSessionsInput{GameSessionId: &id, PlayerIds: []string{"a", "a"}}, "InvalidRequestException"},
		"none":            {api.CreatePlayerSessionsInput{GameSessionId: &id}, "InvalidRequestException"},
		"26":              {api.CreatePlayerSessionsInput{GameSessionId: &id, PlayerIds: make([]string, 26)}, "InvalidRequestException"},
		"stray data":      {api.CreatePlayerSessionsInput{GameSessionId: &id, PlayerIds: []string{"a"}, PlayerDataMap: map[string]string{"z": "x"}}, "InvalidRequestException"},
		"unknown session": {api.CreatePlayerSessionsInput{GameSessionId: api.String(id + "x"), PlayerIds: []string{"a"}}, "NotFoundException"},
		"not active":      {api.CreatePlayerSessionsInput{GameSessionId: activating.GameSessionId, PlayerIds: []string{"a"}}, "InvalidGameSessionStatusException"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			_, err := h.svc.CreatePlayerSessions(h.ctx, &tc.in)
			wantCode(t, err, tc.code)
		})
	}
	if n := api.ToInt32(h.gameSession(id).Session.CurrentPlayerSessionCount); n != 0 {
		t.Fatalf("refused requests took %d slots", n)
	}

	// Full: two slots, two players; a leaving player frees a slot.
	ids, err := h.reserve(id, "a", "b")
	h.must(err)
	_, err = h.svc.CreatePlayerSession(h.ctx, &api.CreatePlayerSessionInput{GameSessionId: &id, PlayerId: api.String("c")})
	wantCode(t, err, "GameSessionFullException")
	h.must(h.sdk.RemovePlayerSession(h.ctx, c, id, ids[0]))
	_, err = h.svc.CreatePlayerSession(h.ctx, &api.CreatePlayerSessionInput{GameSessionId: &id, PlayerId: api.String("c")})
	h.must(err)

	// DENY_ALL, set by the API or by the process.
	h.must(h.sdk.RemovePlayerSession(h.ctx, c, id, ids[1]))
	_, err = h.svc.UpdateGameSession(h.ctx, &api.UpdateGameSessionInput{GameSessionId: &id,
		PlayerSessionCreationPolicy: api.PlayerSessionCreationPolicyDenyAll})
	h.must(err)
	_, err = h.reserve(id, "d")
	wantCode(t, err, "GameSessionFullException")
	h.must(h.sdk.UpdatePlayerSessionCreationPolicy(h.ctx, c, id, api.PlayerSessionCreationPolicyAcceptAll))
	_, err = h.reserve(id, "d")
	h.must(err)
	h.must(h.sdk.UpdatePlayerSessionCreationPolicy(h.ctx, c, id, api.PlayerSessionCreationPolicyDenyAll))
	if p := h.gameSession(id).Session.PlayerSessionCreationPolicy; p != api.PlayerSessionCreationPolicyDenyAll {
		t.Fatalf("policy = %s", p)
	}
}

func TestDescribePlayerSessions(t *testing.T) {
	h := newHarness(t)
	h.addFleet("fleet-1")
	h.addFleet("fleet-2")
	h.addCompute("fleet-1", "i-1", "us-west-2")
	h.addCompute("fleet-2", "i-1", "us-west-2")
	c1, g1 := h.activeSession("fleet-1", "i-1", "proc-1", 10)
	_, g2 := h.activeSession("fleet-2", "i-1", "proc-2", 10)
	p1, err := h.reserve(g1, "alice", "bob", "carol")
	h.must(err)
	p2, err := h.reserve(g2, "alice")
	h.must(err)
	h.must(h.sdk.AcceptPlayerSession(h.ctx, c1, g1, p1[1]))

	describe := func(in api.DescribePlayerSessionsInput) []string {
		t.Helper()
		var all []string
		for range 10 {
			out, err := h.svc.DescribePlayerSessions(h.ctx, &in)
			h.must(err)
			for _, ps := range out.PlayerSessions {
				all = append(all, api.ToString(ps.PlayerSessionId))
			}
			if out.NextToken == nil {
				return all
			}
			in.NextToken = out.NextToken
		}
		t.Fatal("paging did not end")
		return nil
	}
	tests := map[string]struct {
		in   api.DescribePlayerSessionsInput
		want []string
	}{
		"game session":        {api.DescribePlayerSessionsInput{GameSessionId: &g1}, p1},
		"game session paged":  {api.DescribePlayerSessionsInput{GameSessionId: &g1, Limit: api.Int32(2)}, p1},
		"status filter":       {api.DescribePlayerSessionsInput{GameSessionId: &g1, PlayerSessionStatusFilter: api.String("ACTIVE")}, p1[1:2]},
		"player":              {api.DescribePlayerSessionsInput{PlayerId: api.String("alice")}, []string{p1[0], p2[0]}},
		"player paged":        {api.DescribePlayerSessionsInput{PlayerId: api.String("alice"), Limit: api.Int32(1)}, []string{p1[0], p2[0]}},
		"player ignores":      {api.DescribePlayerSessionsInput{PlayerId: api.String("bob"), PlayerSessionStatusFilter: api.String("RESERVED")}, p1[1:2]},
		"player session":      {api.DescribePlayerSessionsInput{PlayerSessionId: &p1[2]}, p1[2:]},
		"session ignores":     {api.DescribePlayerSessionsInput{PlayerSessionId: &p1[1], PlayerSessionStatusFilter: api.String("RESERVED")}, p1[1:2]},
		"player without any ": {api.DescribePlayerSessionsInput{PlayerId: api.String("zed")}, nil},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := describe(tc.in); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
		})
	}
	for name, in := range map[string]api.DescribePlayerSessionsInput{
		"none": {}, "two": {GameSessionId: &g1, PlayerId: api.String("alice")},
		"bad filter": {GameSessionId: &g1, PlayerSessionStatusFilter: api.String("GONE")},
	} {
		t.Run("error/"+name, func(t *testing.T) {
			_, err := h.svc.DescribePlayerSessions(h.ctx, &in)
			wantCode(t, err, "InvalidRequestException")
		})
	}

	t.Run("sdk", func(t *testing.T) {
		res, err := h.sdk.DescribePlayerSessions(h.ctx, c1, hosting.DescribePlayerSessionsRequest{PlayerID: "alice"})
		h.must(err)
		list := res["PlayerSessions"].([]map[string]any)
		if len(list) != 1 || list[0]["PlayerSessionId"] != p1[0] {
			t.Fatalf("a process saw another fleet's player sessions: %v", list)
		}
		ps := list[0]
		if ps["Status"] != "RESERVED" || ps["Port"] != int32(7777) || ps["CreationTime"] != t0.UnixMilli() ||
			ps["TerminationTime"] != int64(0) || ps["FleetId"] != "fleet-1" || ps["GameSessionId"] != g1 {
			t.Fatalf("SDK player session = %v", ps)
		}
		_, err = h.sdk.DescribePlayerSessions(h.ctx, c1, hosting.DescribePlayerSessionsRequest{GameSessionID: g2})
		wantSDK(t, err, 404)
		_, err = h.sdk.DescribePlayerSessions(h.ctx, c1, hosting.DescribePlayerSessionsRequest{})
		wantSDK(t, err, 400)
		res, err = h.sdk.DescribePlayerSessions(h.ctx, c1, hosting.DescribePlayerSessionsRequest{GameSessionID: g1, Limit: 2})
		h.must(err)
		if n := len(res["PlayerSessions"].([]map[string]any)); n != 2 || res["NextToken"] == nil {
			t.Fatalf("limited SDK answer: %d sessions, NextToken %v", n, res["NextToken"])
		}
	})
}

func TestGetPlayerConnectionDetails(t *testing.T) {
	h := newHarness(t)
	h.addFleet("fleet-1")
	h.addCompute("fleet-1", "i-1", "us-west-2")
	_, id := h.activeSession("fleet-1", "i-1", "proc-1", 10)
	out, err := h.svc.GetPlayerConnectionDetails(h.ctx, &api.GetPlayerConnectionDetailsInput{GameSessionId: &id, PlayerIds: []string{"a", "b"}})
	h.must(err)
	if len(out.PlayerConnectionDetails) != 2 || api.ToString(out.GameSessionId) != id {
		t.Fatalf("details = %+v", out)
	}
	d := out.PlayerConnectionDetails[1]
	if api.ToString(d.PlayerId) != "b" || len(d.Endpoints) != 1 || api.ToString(d.Endpoints[0].IpAddress) != "127.0.0.1" ||
		api.ToInt32(d.Endpoints[0].Port) != 7777 || d.PlayerGatewayToken != nil {
		t.Fatalf("detail = %+v", d)
	}
	_, err = h.svc.GetPlayerConnectionDetails(h.ctx, &api.GetPlayerConnectionDetailsInput{GameSessionId: api.String(id + "x"), PlayerIds: []string{"a"}})
	wantCode(t, err, "NotFoundException")
}

// TestWrongProcess: a process may act only on its own game session and
// that session's player sessions.
func TestWrongProcess(t *testing.T) {
	h := newHarness(t)
	h.addFleet("fleet-1")
	h.addCompute("fleet-1", "i-1", "us-west-2")
	c1, g1 := h.activeSession("fleet-1", "i-1", "proc-1", 10)
	c2 := h.readyProcess("fleet-1", "i-1", "us-west-2", "proc-2", 7778)
	gs2, err := h.create("fleet-1")
	h.must(err)
	g2 := api.ToString(gs2.GameSessionId)
	h.must(h.sdk.ActivateGameSession(h.ctx, c2, g2))
	p1, err := h.reserve(g1, "alice")
	h.must(err)
	p2, err := h.reserve(g2, "bob")
	h.must(err)
	stranger := conn("fleet-1", "i-9", "proc-1") // right process ID, wrong compute

	tests := map[string]struct {
		call   func() error
		status int
	}{
		"activate another's":      {func() error { return h.sdk.ActivateGameSession(h.ctx, c2, g1) }, 403},
		"activate unknown":        {func() error { return h.sdk.ActivateGameSession(h.ctx, c2, g1+"x") }, 404},
		"activate twice is fine":  {func() error { return h.sdk.ActivateGameSession(h.ctx, c1, g1) }, 0},
		"accept in another's":     {func() error { return h.sdk.AcceptPlayerSession(h.ctx, c2, g1, p1[0]) }, 403},
		"accept other session's":  {func() error { return h.sdk.AcceptPlayerSession(h.ctx, c1, g1, p2[0]) }, 400},
		"accept unknown":          {func() error { return h.sdk.AcceptPlayerSession(h.ctx, c1, g1, "psess-x") }, 404},
		"remove in another's":     {func() error { return h.sdk.RemovePlayerSession(h.ctx, c2, g1, p1[0]) }, 403},
		"policy of another's":     {func() error { return h.sdk.UpdatePlayerSessionCreationPolicy(h.ctx, c2, g1, "DENY_ALL") }, 403},
		"bad policy":              {func() error { return h.sdk.UpdatePlayerSessionCreationPolicy(h.ctx, c1, g1, "SOME") }, 400},
		"token for other compute": {func() error { return h.sdk.ActivateGameSession(h.ctx, stranger, g1) }, 403},
		"connect as another's":    {func() error { return h.sdk.Connected(h.ctx, stranger) }, 403},
		"bad port":                {func() error { return h.sdk.ProcessReady(h.ctx, c1, 60001, nil) }, 400},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			err := tc.call()
			if tc.status == 0 {
				h.must(err)
				return
			}
			wantSDK(t, err, tc.status)
		})
	}
	// Accept twice: the second finds it ACTIVE, not RESERVED.
	h.must(h.sdk.AcceptPlayerSession(h.ctx, c1, g1, p1[0]))
	wantSDK(t, h.sdk.AcceptPlayerSession(h.ctx, c1, g1, p1[0]), 400)
	h.must(h.sdk.RemovePlayerSession(h.ctx, c1, g1, p1[0]))
	wantSDK(t, h.sdk.RemovePlayerSession(h.ctx, c1, g1, p1[0]), 400)
}

// TestPlayerSlotsUnderLoad: concurrent reservations never exceed the
// maximum.
func TestPlayerSlotsUnderLoad(t *testing.T) {
	h := newHarness(t)
	h.addFleet("fleet-1")
	h.addCompute("fleet-1", "i-1", "us-west-2")
	_, id := h.activeSession("fleet-1", "i-1", "proc-1", 10)
	errs := make(chan error, 30)
	for i := range 30 {
		go func() {
			_, err := h.reserve(id, fmt.Sprintf("p%d", i))
			errs <- err
		}()
	}
	ok := 0
	for range 30 {
		if err := <-errs; err == nil {
			ok++
		} else {
			wantCode(t, err, "GameSessionFullException")
		}
	}
	if n := api.ToInt32(h.gameSession(id).Session.CurrentPlayerSessionCount); ok != 10 || n != 10 {
		t.Fatalf("%d reservations succeeded, count %d; want 10", ok, n)
	}
}

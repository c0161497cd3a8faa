package sessions

import (
	"reflect"
	"strings"
	"testing"

	"github.com/hoistgg/hoist/internal/api"
	"github.com/hoistgg/hoist/internal/hosting"
)

// TestFlow follows one game session through its whole life: a process gets
// ready, a game session is placed on it and activated, players reserve,
// join and leave, and the session ends when the process does.
func TestFlow(t *testing.T) {
	h := newHarness(t)
	h.addFleet("fleet-1")
	h.addCompute("fleet-1", "i-1", "us-west-2")
	c := h.readyProcess("fleet-1", "i-1", "us-west-2", "proc-1", 7777)
	if got := h.ready; len(got) != 1 || got[0] != "fleet-1/us-west-2" {
		t.Fatalf("OnProcessReady calls = %v", got)
	}
	p := h.process("proc-1")
	if p.State != hosting.ProcessActive || !placeable(p) || p.Port != 7777 || p.SDKVersion != "5.6.0" {
		t.Fatalf("process after ProcessReady = %+v", p)
	}

	gs, err := h.create("fleet-1", func(in *api.CreateGameSessionInput) {
		in.Name = api.String("match")
		in.GameSessionData = api.String("data")
		in.GameProperties = []api.GameProperty{{Key: api.String("mode"), Value: api.String("ctf")}}
	})
	h.must(err)
	id := api.ToString(gs.GameSessionId)
	if !strings.HasPrefix(id, "arn:aws:gamelift:us-west-2::gamesession/fleet-1/gsess-") {
		t.Fatalf("GameSessionId = %s", id)
	}
	if gs.Status != api.GameSessionStatusActivating || api.ToString(gs.IpAddress) != "127.0.0.1" ||
		api.ToString(gs.DnsName) != "i-1.hoist.test" || api.ToInt32(gs.Port) != 7777 ||
		api.ToString(gs.ComputeName) != "i-1" || api.ToString(gs.Location) != "us-west-2" ||
		gs.PlayerSessionCreationPolicy != api.PlayerSessionCreationPolicyAcceptAll {
		t.Fatalf("created game session = %+v", gs)
	}
	msg := h.msgr.last("proc-1", "CreateGameSession")
	want := hosting.Message{"Action": "CreateGameSession", "GameSessionId": id, "GameSessionName": "match",
		"GameSessionData": "data", "MatchmakerData": "", "MaximumPlayerSessionCount": int32(4), "Port": int32(7777),
		"IpAddress": "127.0.0.1", "DnsName": "i-1.hoist.test", "GameProperties": map[string]string{"mode": "ctf"}}
	if !reflect.DeepEqual(msg, want) {
		t.Fatalf("CreateGameSession message = %#v\nwant %#v", msg, want)
	}
	if placeable(h.process("proc-1")) {
		t.Fatal("process still idle after placement")
	}
	if det := h.gameSession(id); det.ProtectionPolicy != api.ProtectionPolicyFullprotection {
		t.Fatalf("protection = %s, want the fleet's FullProtection", det.ProtectionPolicy)
	}

	h.must(h.sdk.ActivateGameSession(h.ctx, c, id))
	if st := h.gameSession(id).Session.Status; st != api.GameSessionStatusActive {
		t.Fatalf("status after ActivateGameSession = %s", st)
	}

	out, err := h.svc.CreatePlayerSessions(h.ctx, &api.CreatePlayerSessionsInput{GameSessionId: &id,
		PlayerIds: []string{"alice", "bob"}, PlayerDataMap: map[string]string{"bob": "blue"}})
	h.must(err)
	alice, bob := api.ToString(out.PlayerSessions[0].PlayerSessionId), api.ToString(out.PlayerSessions[1].PlayerSessionId)
	if out.PlayerSessions[1].Status != api.PlayerSessionStatusReserved || api.ToString(out.PlayerSessions[1].PlayerData) != "blue" ||
		api.ToInt32(out.PlayerSessions[0].Port) != 7777 {
		t.Fatalf("player sessions = %+v", out.PlayerSessions)
	}
	if n := api.ToInt32(h.gameSession(id).Session.CurrentPlayerSessionCount); n != 2 {
		t.Fatalf("CurrentPlayerSessionCount = %d, want 2", n)
	}
	h.must(h.sdk.AcceptPlayerSession(h.ctx, c, id, alice))
	h.must(h.sdk.AcceptPlayerSession(h.ctx, c, id, bob))
	h.must(h.sdk.RemovePlayerSession(h.ctx, c, id, bob))
	if st := h.playerSession(bob).Session.Status; st != api.PlayerSessionStatusCompleted {
		t.Fatalf("bob after RemovePlayerSession = %s", st)
	}
	if n := api.ToInt32(h.gameSession(id).Session.CurrentPlayerSessionCount); n != 1 {
		t.Fatalf("CurrentPlayerSessionCount = %d, want 1", n)
	}

	tout, err := h.svc.TerminateGameSession(h.ctx, &api.TerminateGameSessionInput{GameSessionId: &id,
		TerminationMode: api.TerminationModeTriggerOnProcessTerminate})
	h.must(err)
	if tout.GameSession.Status != api.GameSessionStatusTerminating ||
		tout.GameSession.StatusReason != api.GameSessionStatusReasonTriggeredOnProcessTerminate {
		t.Fatalf("after TerminateGameSession: %s %s", tout.GameSession.Status, tout.GameSession.StatusReason)
	}
	if m := h.msgr.last("proc-1", "TerminateProcess"); m == nil {
		t.Fatal("no TerminateProcess sent")
	}
	h.must(h.sdk.ProcessEnding(h.ctx, c))
	final := h.gameSession(id).Session
	if final.Status != api.GameSessionStatusTerminated || final.StatusReason != api.GameSessionStatusReasonTriggeredOnProcessTerminate ||
		final.TerminationTime == nil || api.ToInt32(final.CurrentPlayerSessionCount) != 0 {
		t.Fatalf("after ProcessEnding: %+v", final)
	}
	if st := h.playerSession(alice).Session.Status; st != api.PlayerSessionStatusCompleted {
		t.Fatalf("alice after ProcessEnding = %s", st)
	}
	h.must(h.svc.ProcessExited(h.ctx, "proc-1", 0, ""))
	if p := h.process("proc-1"); p.State != hosting.ProcessTerminated || p.EndReason != "TerminateGameSession" {
		t.Fatalf("process after exit = %s %q", p.State, p.EndReason)
	}
	if len(h.host.ended()) != 0 {
		t.Fatalf("ProcessHost asked to end a process that ended by itself: %v", h.host.ended())
	}
}

// TestDescribeGameSessions checks the filters and paging.
func TestDescribeGameSessions(t *testing.T) {
	h := newHarness(t)
	h.addFleet("fleet-1")
	h.addCompute("fleet-1", "i-1", "us-west-2")
	h.addCompute("fleet-1", "i-2", "us-east-1")
	var ids []string
	for i, loc := range []string{"us-west-2", "us-west-2", "us-east-1", "us-west-2", "us-east-1"} {
		comp := map[string]string{"us-west-2": "i-1", "us-east-1": "i-2"}[loc]
		pid := "proc-" + string(rune('a'+i))
		h.readyProcess("fleet-1", comp, loc, pid, int32(7000+i))
		gs, err := h.create("fleet-1", func(in *api.CreateGameSessionInput) { in.Location = api.String(loc) })
		h.must(err)
		ids = append(ids, api.ToString(gs.GameSessionId))
	}
	h.must(h.sdk.ActivateGameSession(h.ctx, conn("fleet-1", "i-1", "proc-a"), ids[0]))

	list := func(in api.DescribeGameSessionsInput) ([]string, string) {
		t.Helper()
		out, err := h.svc.DescribeGameSessions(h.ctx, &in)
		h.must(err)
		var got []string
		for _, g := range out.GameSessions {
			got = append(got, api.ToString(g.GameSessionId))
		}
		return got, api.ToString(out.NextToken)
	}
	tests := map[string]struct {
		in   api.DescribeGameSessionsInput
		want []string
	}{
		"fleet":          {api.DescribeGameSessionsInput{FleetId: api.String("fleet-1")}, ids},
		"fleet arn":      {api.DescribeGameSessionsInput{FleetId: api.String("arn:aws:gamelift:us-west-2:123456789012:fleet/fleet-1")}, ids},
		"location":       {api.DescribeGameSessionsInput{FleetId: api.String("fleet-1"), Location: api.String("us-east-1")}, []string{ids[2], ids[4]}},
		"status":         {api.DescribeGameSessionsInput{FleetId: api.String("fleet-1"), StatusFilter: api.String("ACTIVE")}, []string{ids[0]}},
		"by id":          {api.DescribeGameSessionsInput{GameSessionId: api.String(ids[3])}, []string{ids[3]}},
		"by id filtered": {api.DescribeGameSessionsInput{GameSessionId: api.String(ids[3]), StatusFilter: api.String("ACTIVE")}, nil},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, _ := list(tc.in)
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
		})
	}
	t.Run("pages", func(t *testing.T) {
		var all []string
		in := api.DescribeGameSessionsInput{FleetId: api.String("fleet-1"), Location: api.String("us-west-2"), Limit: api.Int32(2)}
		for range 5 {
			got, next := list(in)
			all = append(all, got...)
			if next == "" {
				break
			}
			in.NextToken = &next
		}
		if want := []string{ids[0], ids[1], ids[3]}; !reflect.DeepEqual(all, want) {
			t.Fatalf("paged %v, want %v", all, want)
		}
	})
	errs := map[string]struct {
		in   api.DescribeGameSessionsInput
		code string
	}{
		"none":          {api.DescribeGameSessionsInput{}, "InvalidRequestException"},
		"two":           {api.DescribeGameSessionsInput{FleetId: api.String("fleet-1"), GameSessionId: &ids[0]}, "InvalidRequestException"},
		"bad status":    {api.DescribeGameSessionsInput{FleetId: api.String("fleet-1"), StatusFilter: api.String("DONE")}, "InvalidRequestException"},
		"bad location":  {api.DescribeGameSessionsInput{FleetId: api.String("fleet-1"), Location: api.String("eu-west-1")}, "InvalidRequestException"},
		"unknown fleet": {api.DescribeGameSessionsInput{FleetId: api.String("fleet-9")}, "NotFoundException"},
		"unknown id":    {api.DescribeGameSessionsInput{GameSessionId: api.String("arn:aws:gamelift:us-west-2::gamesession/fleet-1/x")}, "NotFoundException"},
		"bad token":     {api.DescribeGameSessionsInput{FleetId: api.String("fleet-1"), NextToken: api.String("nonsense")}, "InvalidRequestException"},
		"alias":         {api.DescribeGameSessionsInput{AliasId: api.String("alias-1")}, "InvalidRequestException"},
	}
	for name, tc := range errs {
		t.Run("error/"+name, func(t *testing.T) {
			_, err := h.svc.DescribeGameSessions(h.ctx, &tc.in)
			wantCode(t, err, tc.code)
		})
	}
	t.Run("details", func(t *testing.T) {
		out, err := h.svc.DescribeGameSessionDetails(h.ctx, &api.DescribeGameSessionDetailsInput{GameSessionId: &ids[0]})
		h.must(err)
		if len(out.GameSessionDetails) != 1 || out.GameSessionDetails[0].ProtectionPolicy != api.ProtectionPolicyFullprotection {
			t.Fatalf("details = %+v", out.GameSessionDetails)
		}
	})
}

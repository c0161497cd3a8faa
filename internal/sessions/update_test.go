package sessions

import (
	"reflect"
	"testing"

	"github.com/hoistgg/hoist/internal/api"
)

func TestUpdateGameSession(t *testing.T) {
	h := newHarness(t)
	h.addFleet("fleet-1")
	h.addCompute("fleet-1", "i-1", "us-west-2")
	c := h.readyProcess("fleet-1", "i-1", "us-west-2", "proc-1", 7777)
	gs, err := h.create("fleet-1", func(in *api.CreateGameSessionInput) {
		in.GameProperties = []api.GameProperty{{Key: api.String("mode"), Value: api.String("ctf")}, {Key: api.String("map"), Value: api.String("dust")}}
	})
	h.must(err)
	id := api.ToString(gs.GameSessionId)
	out, err := h.svc.UpdateGameSession(h.ctx, &api.UpdateGameSessionInput{GameSessionId: &id,
		Name: api.String("renamed"), MaximumPlayerSessionCount: api.Int32(8), ProtectionPolicy: api.ProtectionPolicyNoprotection,
		GameProperties: []api.GameProperty{{Key: api.String("map"), Value: api.String("nuke")}, {Key: api.String("rank"), Value: api.String("gold")}}})
	h.must(err)
	got := out.GameSession
	wantProps := []api.GameProperty{{Key: api.String("mode"), Value: api.String("ctf")}, {Key: api.String("map"), Value: api.String("nuke")},
		{Key: api.String("rank"), Value: api.String("gold")}}
	if api.ToString(got.Name) != "renamed" || api.ToInt32(got.MaximumPlayerSessionCount) != 8 || !reflect.DeepEqual(got.GameProperties, wantProps) {
		t.Fatalf("updated = %+v", got)
	}
	if p := h.gameSession(id).ProtectionPolicy; p != api.ProtectionPolicyNoprotection {
		t.Fatalf("protection = %s", p)
	}
	if m := h.msgr.last("proc-1", "UpdateGameSession"); m != nil {
		t.Fatal("UpdateGameSession sent to the process (GameLift sends it only for backfill)")
	}
	for name, tc := range map[string]struct {
		in   api.UpdateGameSessionInput
		code string
	}{
		"unknown":   {api.UpdateGameSessionInput{GameSessionId: api.String(id + "x")}, "NotFoundException"},
		"too many":  {api.UpdateGameSessionInput{GameSessionId: &id, MaximumPlayerSessionCount: api.Int32(201)}, "InvalidRequestException"},
		"duplicate": {api.UpdateGameSessionInput{GameSessionId: &id, GameProperties: []api.GameProperty{{Key: api.String("a"), Value: api.String("")}, {Key: api.String("a"), Value: api.String("")}}}, "InvalidRequestException"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := h.svc.UpdateGameSession(h.ctx, &tc.in)
			wantCode(t, err, tc.code)
		})
	}
	h.must(h.sdk.ProcessEnding(h.ctx, c))
	_, err = h.svc.UpdateGameSession(h.ctx, &api.UpdateGameSessionInput{GameSessionId: &id, Name: api.String("late")})
	wantCode(t, err, "InvalidGameSessionStatusException")
}

package matchmaking

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/hoistgg/hoist/internal/api"
)

// FuzzValidateRuleSet: any RuleSetBody is valid or InvalidRequestException
// whose message starts "RuleSetBody"; never a panic, never another error.
func FuzzValidateRuleSet(f *testing.F) {
	f.Add(duelBody)
	f.Add(`{"ruleLanguageVersion":"1.0","teams":[]}`)
	f.Add(`{"ruleLanguageVersion":"1.0","teams":[{"name":"a","minPlayers":3,"maxPlayers":2}]}`)
	f.Add(`{`)
	f.Add(``)
	f.Add(`null`)
	f.Add(`{"ruleLanguageVersion":"1.0","teams":[{"name":"a","maxPlayers":1}],"rules":[{"name":"r","type":"latency","maxLatency":50}]}`)
	svc := New(Config{})
	f.Fuzz(func(t *testing.T, body string) {
		out, err := svc.ValidateMatchmakingRuleSet(context.Background(), &api.ValidateMatchmakingRuleSetInput{RuleSetBody: &body})
		if err == nil {
			if out == nil || out.Valid == nil || !*out.Valid {
				t.Fatalf("%q: no error and not valid: %+v", body, out)
			}
			return
		}
		var ir *api.InvalidRequestException
		if !errors.As(err, &ir) || len(err.Error()) == 0 {
			t.Fatalf("%q: %v", body, err)
		}
	})
}

// FuzzStartMatchmakingPlayers: any Players (as JSON) is queued or refused
// with InvalidRequestException; never a panic, never another error, and a
// queued ticket is QUEUED with the players given.
func FuzzStartMatchmakingPlayers(f *testing.F) {
	f.Add(`[{"PlayerId":"a","PlayerAttributes":{"skill":{"N":3}},"LatencyInMs":{"us-west-2":20}}]`)
	f.Add(`[{"PlayerId":"a"},{"PlayerId":"a"}]`)
	f.Add(`[{"PlayerId":"a","PlayerAttributes":{"skill":{"S":"x"}}}]`)
	f.Add(`[{"PlayerId":"a","PlayerAttributes":{"x":{"S":"x","N":1}}}]`)
	f.Add(`[{"PlayerId":"a","PlayerAttributes":{"m":{"SDM":{"a":1}}},"Team":"red"}]`)
	f.Add(`[]`)
	h := newTicketHarness(f)
	h.config("duel", nil)
	f.Fuzz(func(t *testing.T, players string) {
		var ps []api.Player
		if json.Unmarshal([]byte(players), &ps) != nil {
			return
		}
		out, err := h.svc.StartMatchmaking(h.ctx, &api.StartMatchmakingInput{ConfigurationName: cfgStr("duel"), Players: ps})
		if err != nil {
			var ir *api.InvalidRequestException
			if !errors.As(err, &ir) {
				t.Fatalf("%s: %v", players, err)
			}
			return
		}
		tk := out.MatchmakingTicket
		if tk.Status != stQueued || len(tk.Players) != len(ps) {
			t.Fatalf("%s: %+v", players, tk)
		}
		for _, p := range tk.Players {
			if p.Team != nil {
				t.Fatalf("%s: a team kept: %+v", players, tk)
			}
		}
	})
}

package matchmaking

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"testing"

	"github.com/hoistgg/hoist/internal/api"
	"github.com/hoistgg/hoist/internal/store"
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
// queued ticket is QUEUED with the players given. Its record decodes, and
// its Size (spliced into the record's JSON) is the record's size without
// it, which is what the configuration's ticket bytes grew by.
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
		before := fuzzBytes(t, h)
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
		var rec store.Record
		var st ticketRecord
		err = h.st.View(h.ctx, func(tx store.Tx) (err error) {
			if rec, err = tx.Get(h.ctx, KindTicket, api.ToString(tk.TicketId)); err != nil {
				return err
			}
			return decodeTicket(rec, &st)
		})
		if err != nil {
			t.Fatalf("%s: the stored ticket: %v", players, err)
		}
		without := len(rec.Data) + len(rec.ID) - len(`,"size":`+strconv.FormatInt(st.Size, 10))
		if st.Size != int64(without) || fuzzBytes(t, h)-before != st.Size || len(st.Ticket.Players) != len(ps) {
			t.Fatalf("%s: Size %d, record of %d bytes without it, count grew by %d: %s", players, st.Size, without, fuzzBytes(t, h)-before, rec.Data)
		}
	})
}

// fuzzBytes reads the ticket bytes of the configuration duel.
func fuzzBytes(t *testing.T, h *ticketHarness) int64 {
	var n int64
	err := h.st.View(h.ctx, func(tx store.Tx) (err error) { n, err = ticketBytes(h.ctx, tx, "duel"); return err })
	if err != nil {
		t.Fatal(err)
	}
	return n
}

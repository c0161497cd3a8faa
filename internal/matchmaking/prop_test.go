package matchmaking

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/hoistgg/hoist/internal/api"
	"github.com/hoistgg/hoist/internal/store"
)

// TestRandomOperations drives tickets of two configurations (one with
// acceptance) through random starts, stops, acceptances, rejections,
// matchmaker passes and clock steps, and checks after every step that no
// ticket is in two matches, that a match waiting for acceptance and its
// tickets agree, and that no ticket outlives its deadline by more than a
// pass.
func TestRandomOperations(t *testing.T) {
	for seed := range uint64(8) {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) { randomRun(t, seed) })
	}
}

func randomRun(t *testing.T, seed uint64) {
	h := newTicketHarness(t)
	h.config("plain", func(in *api.CreateMatchmakingConfigurationInput) { in.RequestTimeoutSeconds = cfgI32(3) })
	h.config("accept", func(in *api.CreateMatchmakingConfigurationInput) {
		in.RequestTimeoutSeconds = cfgI32(5)
		in.AcceptanceRequired, in.AcceptanceTimeoutSeconds = cfgYes(), cfgI32(1)
	})
	rng := rand.New(rand.NewPCG(seed, 7))
	var ids []string
	succeeded := map[string]string{} // ticket -> match
	for step := range 400 {
		switch r := rng.IntN(10); {
		case r < 4:
			id := fmt.Sprint("t", step)
			cfg := []string{"plain", "accept"}[rng.IntN(2)]
			var players []string
			for k := range 1 + rng.IntN(2) {
				players = append(players, fmt.Sprint(id, "-p", k))
			}
			h.start(cfg, id, players...)
			ids = append(ids, id)
		case r < 5 && len(ids) > 0:
			_, _ = h.svc.StopMatchmaking(h.ctx, &api.StopMatchmakingInput{TicketId: cfgStr(ids[rng.IntN(len(ids))])})
		case r < 7 && len(ids) > 0:
			tk := h.ticket(ids[rng.IntN(len(ids))])
			typ := api.AcceptanceTypeAccept
			if rng.IntN(4) == 0 {
				typ = api.AcceptanceTypeReject
			}
			_ = h.accept(*tk.TicketId, typ, *tk.Players[rng.IntN(len(tk.Players))].PlayerId)
		case r < 9:
			h.process()
		default:
			h.clock.Advance(time.Duration(rng.IntN(700)) * time.Millisecond)
		}
		for _, d := range h.rec.take(t) {
			if d.Type != evSucceeded {
				continue
			}
			for _, tk := range d.Tickets {
				if m, ok := succeeded[tk.TicketID]; ok {
					t.Fatalf("step %d: ticket %s succeeded in match %s and %s", step, tk.TicketID, m, d.MatchID)
				}
				succeeded[tk.TicketID] = d.MatchID
			}
		}
		checkInvariants(t, h, step)
	}
	// Everything ends: past every deadline, two passes leave no ticket
	// active.
	h.clock.Advance(10 * time.Second)
	h.process()
	h.process()
	for _, id := range ids {
		if st := h.ticket(id).Status; isActive(st) {
			t.Fatalf("ticket %s still %s", id, st)
		}
	}
}

func checkInvariants(t *testing.T, h *ticketHarness, step int) {
	t.Helper()
	now := h.clock.Now()
	err := h.st.View(h.ctx, func(tx store.Tx) error {
		recs, _, err := tx.List(h.ctx, store.Query{Kind: KindTicket, Order: store.OrderID})
		if err != nil {
			return err
		}
		inMatch := map[string]string{}
		for _, rec := range recs {
			tk := new(ticketRecord)
			if err := decodeTicket(rec, tk); err != nil {
				return err
			}
			st := tk.Ticket.Status
			if rec.Key != string(st) {
				t.Fatalf("step %d: ticket %s record key %s, status %s", step, tk.id(), rec.Key, st)
			}
			if (st == stQueued || st == stSearching) && now.Sub(tk.Deadline) > 700*time.Millisecond*3 {
				t.Fatalf("step %d: ticket %s %s long past its deadline", step, tk.id(), st)
			}
			if st == stAccept {
				m, err := getMatch(h.ctx, tx, tk.MatchID)
				if err != nil {
					t.Fatalf("step %d: ticket %s waits for acceptance of match %s: %v", step, tk.id(), tk.MatchID, err)
				}
				if prev, ok := inMatch[tk.id()]; ok && prev != m.ID {
					t.Fatalf("step %d: ticket %s in two matches", step, tk.id())
				}
				inMatch[tk.id()] = m.ID
				for _, p := range tk.Ticket.Players {
					if p.Team == nil {
						t.Fatalf("step %d: ticket %s in a match without a team", step, tk.id())
					}
				}
			}
			if st == stCompleted && tk.Ticket.Players[0].Team == nil {
				t.Fatalf("step %d: completed ticket %s without a team", step, tk.id())
			}
		}
		ms, _, err := tx.List(h.ctx, store.Query{Kind: KindMatch, Order: store.OrderID})
		if err != nil {
			return err
		}
		for _, rec := range ms {
			m := new(matchRecord)
			if err := store.Decode(rec, m); err != nil {
				return err
			}
			ts, err := matchTickets(h.ctx, tx, m, stAccept)
			if err != nil {
				return err
			}
			if len(ts) != len(m.Tickets) {
				t.Fatalf("step %d: match %s has %d tickets, %d of them waiting for acceptance", step, m.ID, len(m.Tickets), len(ts))
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

package matchmaking

import (
	"fmt"
	"testing"

	"github.com/hoistgg/hoist/internal/api"
)

// BenchmarkProcessIdlePool measures one matchmaker pass over 10,000
// SEARCHING tickets that form no match (parties of two for a 1v1 rule
// set): the cost of the pass itself (listing, the pool cache, the matcher
// call) when nothing changes.
func BenchmarkProcessIdlePool(b *testing.B) {
	h := newTicketHarness(b)
	h.config("duel", nil)
	for i := range 10000 {
		h.start("duel", fmt.Sprint("t", i), fmt.Sprint("a", i), fmt.Sprint("b", i))
	}
	h.process()
	h.rec.evs = nil
	b.ResetTimer()
	for b.Loop() {
		if err := h.svc.Process(h.ctx); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkLoopPass measures one matchmaker pass over 50 SEARCHING
// tickets of 10 players that form no match, once the pool is decoded:
// "small" tickets (a number attribute and one latency per player, about
// 1 KB each) and "maximal" ones (every attribute and latency at its
// limit: maximalPlayers, about 1.3 MB each, the most a configuration
// takes within MaxTicketBytes). The two cost the same: a pass lists the
// records without their data and decodes only those it has not seen.
func BenchmarkLoopPass(b *testing.B) {
	for _, tc := range []struct {
		name    string
		players func(i int) []api.Player
	}{
		{"small", smallPlayers},
		{"maximal", func(i int) []api.Player { return maximalPlayers(i, 10) }},
	} {
		b.Run(tc.name, func(b *testing.B) {
			h := newTicketHarness(b)
			h.searchingConfig("c")
			for i := range 50 {
				if _, err := h.svc.StartMatchmaking(h.ctx, &api.StartMatchmakingInput{ConfigurationName: cfgStr("c"),
					TicketId: cfgStr(fmt.Sprintf("t%04d", i)), Players: tc.players(i)}); err != nil {
					b.Fatal(err)
				}
			}
			h.process()
			h.process()
			h.rec.evs = nil
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				if err := h.svc.Process(h.ctx); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

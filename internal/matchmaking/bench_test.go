package matchmaking

import (
	"fmt"
	"testing"
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

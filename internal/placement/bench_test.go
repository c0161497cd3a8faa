package placement

import (
	"sync"
	"testing"

	"github.com/hoistgg/hoist/internal/api"
	"github.com/hoistgg/hoist/internal/store/journal"
)

// BenchmarkFulfil measures pending placements fulfilled onto idle
// processes: b.N placements, b.N processes, one Process pass placing
// their game sessions, each process activating its game session as soon as
// it is sent (on its own goroutine, as a game server does), which fulfils
// the placement; on the journal store with direct (synchronous) writes,
// Hoist's default. The time runs until every placement is FULFILLED.
func BenchmarkFulfil(b *testing.B) {
	h := newHarnessWith(b, journal.Options{})
	var activations sync.WaitGroup
	h.msgr.onCreate = func(pid, gameSessionID string) {
		activations.Go(func() { h.activate(pid, gameSessionID) })
	}
	h.addFleet("fleet-a", "us-west-2")
	h.queue("q", nil, fleetARN("fleet-a"))
	for i := range b.N {
		h.ready("fleet-a", "us-west-2", "proc-"+itoa(i), int32(1000+i%50000))
		h.start("q", "p-"+itoa(i), nil)
	}
	b.ResetTimer()
	h.process()
	activations.Wait()
	b.StopTimer()
	if n := h.counts()[api.GameSessionPlacementStateFulfilled]; n != b.N {
		b.Fatalf("fulfilled %d of %d", n, b.N)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "placements/s")
}

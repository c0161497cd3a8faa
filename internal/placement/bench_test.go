package placement

import (
	"testing"

	"github.com/hoistgg/hoist/internal/api"
	"github.com/hoistgg/hoist/internal/store/journal"
)

// BenchmarkFulfil measures the loop fulfilling pending placements onto
// idle processes: b.N placements, b.N processes, one Process pass, on the
// journal store with direct (synchronous) writes, Hoist's default.
func BenchmarkFulfil(b *testing.B) {
	h := newHarnessWith(b, journal.Options{})
	h.addFleet("fleet-a", "us-west-2")
	h.queue("q", nil, fleetARN("fleet-a"))
	for i := range b.N {
		h.ready("fleet-a", "us-west-2", "proc-"+itoa(i), int32(1000+i%50000))
		h.start("q", "p-"+itoa(i), nil)
	}
	b.ResetTimer()
	h.process()
	b.StopTimer()
	if n := h.counts()[api.GameSessionPlacementStateFulfilled]; n != b.N {
		b.Fatalf("fulfilled %d of %d", n, b.N)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "placements/s")
}

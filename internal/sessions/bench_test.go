package sessions

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/hoistgg/hoist/internal/api"
	"github.com/hoistgg/hoist/internal/hosting"
)

// BenchmarkCreateToActive measures CreateGameSession-to-ACTIVE at the
// service level over the SQLite store: the fake process activates its game
// session as soon as CreateGameSession reaches it, so one operation is the
// placement transaction, the message, and the activation transaction.
// Reports p50/p99 latency per operation.
//
//	go test -run '^$' -bench CreateToActive -benchtime 2000x ./internal/sessions/
func BenchmarkCreateToActive(b *testing.B) {
	for _, clients := range []int{1, 16} {
		b.Run(fmt.Sprintf("clients=%d", clients), func(b *testing.B) {
			h := newHarness(b, func(c *Config) { c.Now = time.Now })
			h.addFleet("fleet-1")
			h.addCompute("fleet-1", "i-1", "us-west-2")
			for i := range b.N {
				h.readyProcess("fleet-1", "i-1", "us-west-2", fmt.Sprintf("proc-%d", i), 7000)
			}
			h.msgr.onSend = func(pid string, msg hosting.Message) {
				if msg["Action"] == "CreateGameSession" {
					h.must(h.sdk.ActivateGameSession(h.ctx, conn("fleet-1", "i-1", pid), msg["GameSessionId"].(string)))
				}
			}
			lat := make([]time.Duration, b.N)
			next := make(chan int, b.N)
			for i := range b.N {
				next <- i
			}
			close(next)
			b.ResetTimer()
			var wg sync.WaitGroup
			for range clients {
				wg.Go(func() {
					for i := range next {
						start := time.Now()
						gs, err := h.create("fleet-1")
						if err != nil {
							b.Error(err)
							return
						}
						lat[i] = time.Since(start)
						if gs.Status != api.GameSessionStatusActivating {
							b.Errorf("status %s", gs.Status)
						}
					}
				})
			}
			wg.Wait()
			b.StopTimer()
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
			b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
		})
	}
}

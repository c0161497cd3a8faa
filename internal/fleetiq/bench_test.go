package fleetiq

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hoistgg/hoist/internal/api"
)

// BenchmarkClaim: 10,000 game servers on 100 instances; each parallel
// caller loops claim -> UTILIZED -> AVAILABLE. One op is one such cycle
// (three store transactions); claims/s is reported.
func BenchmarkClaim(b *testing.B) {
	for _, callers := range []int{1, 16, 64} {
		b.Run(fmt.Sprintf("callers=%d", callers), func(b *testing.B) {
			h := newHarness(b, func(c *Config) { c.Now = time.Now })
			h.group(seedGroup)
			registerMany(b, h, 10_000, 100)
			var next atomic.Int64
			var wg sync.WaitGroup
			b.ResetTimer()
			start := time.Now()
			for range callers {
				wg.Go(func() {
					for next.Add(1) <= int64(b.N) {
						claimCycle(b, h)
					}
				})
			}
			wg.Wait()
			b.StopTimer()
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "claims/s")
		})
	}
}

// claimCycle claims a game server, marks it UTILIZED, then AVAILABLE again.
func claimCycle(b *testing.B, h *harness) {
	out, err := h.svc.ClaimGameServer(h.ctx, &api.ClaimGameServerInput{GameServerGroupName: api.String(seedGroup)})
	if err != nil {
		b.Error(err)
		return
	}
	for _, st := range []api.GameServerUtilizationStatus{api.GameServerUtilizationStatusUtilized, api.GameServerUtilizationStatusAvailable} {
		_, err := h.svc.UpdateGameServer(h.ctx, &api.UpdateGameServerInput{GameServerGroupName: api.String(seedGroup),
			GameServerId: out.GameServer.GameServerId, UtilizationStatus: st})
		if err != nil {
			b.Error(err)
			return
		}
	}
}

// registerMany registers n game servers spread over instances instances,
// from 64 goroutines.
func registerMany(b testing.TB, h *harness, n, instances int) {
	var next atomic.Int64
	var wg sync.WaitGroup
	for range 64 {
		wg.Go(func() {
			for i := next.Add(1) - 1; i < int64(n); i = next.Add(1) - 1 {
				_, err := h.svc.RegisterGameServer(h.ctx, &api.RegisterGameServerInput{
					GameServerGroupName: api.String(seedGroup), GameServerId: api.String(fmt.Sprintf("gs-%06d", i)),
					InstanceId: api.String(instanceN(int(i) % instances)), ConnectionInfo: api.String("192.0.2.0:7777")})
				if err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
}

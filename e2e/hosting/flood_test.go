//go:build linux

package hosting

import (
	"context"
	"errors"
	"flag"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hoistgg/hoist/e2e/sdkclient"
	"github.com/hoistgg/hoist/e2e/sysinfo"
)

var floodUnbounded = flag.Bool("flood.unbounded", false,
	"TestHeartbeatFloodCPU: also flood a Hoist started with --sdk-message-rate 0 and report both (docs/security.md)")

// floodFor is how long TestHeartbeatFloodCPU floods.
const floodFor = 5 * time.Second

// TestHeartbeatFloodCPU: a game server's socket sends heartbeats back to
// back, 8 in flight, for 5 s, against the real Hoist. It is served the
// burst and then --sdk-message-rate (10) a second, the rest answered 429,
// and Hoist spends a small part of a core on it. Before the bound every
// heartbeat was served, each a store transaction (73,000 in 10 s cost 0.8
// cores). With -flood.unbounded it also floods a Hoist without the bound,
// for comparison.
func TestHeartbeatFloodCPU(t *testing.T) {
	bounded := flood(t)
	t.Logf("bounded: %d served, %d answered 429, Hoist %.2f cores", bounded.served, bounded.throttled, bounded.cores)
	if max := int64(30 + 10*floodFor/time.Second + 10); bounded.served > max {
		t.Errorf("%d heartbeats served in %s, want at most %d", bounded.served, floodFor, max)
	}
	if bounded.throttled == 0 || bounded.cores > 0.25 {
		t.Errorf("flood: %d answered 429, Hoist used %.2f cores; want 429s and under 0.25 cores", bounded.throttled, bounded.cores)
	}
	if *floodUnbounded {
		u := flood(t, "--sdk-message-rate", "0")
		t.Logf("unbounded: %d served, %d answered 429, Hoist %.2f cores", u.served, u.throttled, u.cores)
	}
}

// floodResult is what one flood did.
type floodResult struct {
	served, throttled int64
	cores             float64
}

// flood starts a Hoist with args, connects one process of an Anywhere
// compute and floods it with heartbeats for floodFor.
func flood(t *testing.T, args ...string) floodResult {
	e := startHoistWith(t, args)
	tok := anywhereTokens(t, e, 1)[0]
	ctx, cancel := context.WithTimeout(e.ctx, time.Minute)
	defer cancel()
	c, err := sdkclient.Dial(ctx, tok.endpoint, sdkclient.Query("flood-1", tok.compute, tok.fleetID, tok.token), sdkclient.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Drop()
	if _, err := c.Call(ctx, "ActivateServerProcess", map[string]any{"SdkVersion": sdkclient.SDKVersion,
		"SdkLanguage": sdkclient.SDKLanguage, "Port": 7777, "LogPaths": []string{}}); err != nil {
		t.Fatal(err)
	}
	before, _ := sysinfo.ReadStat(e.h.PID())
	start := time.Now()
	var r floodResult
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for time.Since(start) < floodFor {
				_, err := c.Call(ctx, "HeartbeatServerProcess", map[string]any{"HealthStatus": true})
				var se *sdkclient.StatusError
				switch {
				case err == nil:
					atomic.AddInt64(&r.served, 1)
				case errors.As(err, &se) && se.StatusCode == http.StatusTooManyRequests:
					atomic.AddInt64(&r.throttled, 1)
				default:
					t.Errorf("heartbeat: %v", err)
					return
				}
			}
		})
	}
	wg.Wait()
	after, _ := sysinfo.ReadStat(e.h.PID())
	r.cores = float64(after.Ticks-before.Ticks) / sysinfo.TicksPerSecond / time.Since(start).Seconds()
	return r
}

package sessions

import (
	"context"
	"testing"

	"github.com/hoistgg/hoist/internal/api"
	"github.com/hoistgg/hoist/internal/hosting"
	"github.com/hoistgg/hoist/internal/store"
)

// TestLostInstanceEndsInterrupted: the ACTIVE game session of a process
// whose instance is lost with its host (Config.InstanceLost) ends
// TERMINATED with StatusReason INTERRUPTED when the process ends first
// (ProcessEnding, or its exit), before fleets reports the loss: the agent
// of a host removed with hoist admin remove-host --force stops its
// processes as soon as its connection is refused, and e2e/hosts
// TestPoolHostOnLoopback/remove saw the game session end with no reason
// when that came first. A process whose instance is not lost ends its
// game session without a reason.
func TestLostInstanceEndsInterrupted(t *testing.T) {
	for _, tc := range []struct {
		name string
		host string
		end  func(h *harness, c hosting.Conn)
		want api.GameSessionStatusReason
	}{
		{"ProcessEnding, host removed", "pool-gone", func(h *harness, c hosting.Conn) { h.must(h.sdk.ProcessEnding(h.ctx, c)) },
			api.GameSessionStatusReasonInterrupted},
		{"exit, host removed", "pool-gone", func(h *harness, c hosting.Conn) { h.must(h.svc.ProcessExited(h.ctx, c.ProcessID, 0, "")) },
			api.GameSessionStatusReasonInterrupted},
		{"ProcessEnding, host there", "pool-ok", func(h *harness, c hosting.Conn) { h.must(h.sdk.ProcessEnding(h.ctx, c)) }, ""},
		{"exit, host there", "pool-ok", func(h *harness, c hosting.Conn) { h.must(h.svc.ProcessExited(h.ctx, c.ProcessID, 0, "")) }, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, func(cfg *Config) {
				cfg.InstanceLost = func(_ context.Context, _ store.Tx, c *hosting.Compute) (bool, error) {
					return c.Host == "pool-gone", nil
				}
			})
			h.addFleet("fleet-1")
			h.addCompute("fleet-1", "i-1", "us-west-2", func(c *hosting.Compute) { c.Host = tc.host })
			c := h.readyProcess("fleet-1", "i-1", "us-west-2", "proc-1", 7777)
			gs, err := h.create("fleet-1")
			h.must(err)
			id := api.ToString(gs.GameSessionId)
			h.must(h.sdk.ActivateGameSession(h.ctx, c, id))
			tc.end(h, c)
			final := h.gameSession(id).Session
			if final.Status != api.GameSessionStatusTerminated || final.StatusReason != tc.want {
				t.Fatalf("game session ended %s %q, want TERMINATED %q", final.Status, final.StatusReason, tc.want)
			}
		})
	}
}

package matchmaking

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hoistgg/hoist/internal/api"
)

// TestRunKickedAndTimed: in a synctest bubble, Run matches two tickets as
// soon as StartMatchmaking kicks it (no time passes), and times out a
// lonely ticket on its own ticks.
func TestRunKickedAndTimed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newTicketHarness(t)
		h.svc.cfg.Now = time.Now
		h.config("duel", func(in *api.CreateMatchmakingConfigurationInput) { in.RequestTimeoutSeconds = cfgI32(2) })
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error)
		go func() { done <- h.svc.Run(ctx) }()

		h.start("duel", "t1", "a")
		h.start("duel", "t2", "b")
		synctest.Wait()
		t0 := time.Now()
		// The kick of t2 may have come while the pass of t1's kick ran; at
		// most one interval later every ticket has been matched.
		for h.ticket("t2").Status != stCompleted {
			time.Sleep(DefaultInterval)
			synctest.Wait()
		}
		if waited := time.Since(t0); waited > DefaultInterval {
			t.Fatalf("matched after %v", waited)
		}
		h.want("t1", stCompleted)

		h.start("duel", "t3", "c")
		synctest.Wait()
		h.want("t3", stSearching)
		time.Sleep(2*time.Second - time.Millisecond)
		synctest.Wait()
		h.want("t3", stSearching)
		time.Sleep(DefaultInterval + time.Millisecond)
		synctest.Wait()
		h.want("t3", stTimedOut)
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
}

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

// TestPassWorkShared: a pass of the loop spends one work budget over all
// configurations. With a budget of one unit, the first configuration's
// matching spends it; the second only has its tickets moved to SEARCHING,
// and the next pass matches it first.
func TestPassWorkShared(t *testing.T) {
	h := newTicketHarness(t)
	h.svc.passWork = 1
	h.config("a-duel", nil)
	h.config("b-duel", nil)
	h.start("a-duel", "a1", "p1")
	h.start("a-duel", "a2", "p2")
	h.start("b-duel", "b1", "p3")
	h.start("b-duel", "b2", "p4")
	h.process()
	h.want("a1", stCompleted)
	h.want("b1", stSearching)
	h.want("b2", stSearching)
	h.start("a-duel", "a3", "p5")
	h.start("a-duel", "a4", "p6")
	h.process()
	h.want("b1", stCompleted)
	h.want("b2", stCompleted)
	h.want("a3", stSearching)
	h.process()
	h.want("a3", stCompleted)
	h.want("a4", stCompleted)
}

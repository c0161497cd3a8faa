package matchmaking

import (
	"context"
	"fmt"
	"runtime"
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

// passAllocs starts n tickets of players(i) in a configuration whose rule
// set never matches them, makes two passes (the first moves them to
// SEARCHING and keeps them decoded), and returns the bytes and objects
// one more pass allocates, averaged over five.
func passAllocs(t *testing.T, n int, players func(i int) []api.Player) (bytes, objects uint64) {
	h := newTicketHarness(t)
	h.searchingConfig("c")
	for i := range n {
		if _, err := h.svc.StartMatchmaking(h.ctx, &api.StartMatchmakingInput{ConfigurationName: cfgStr("c"),
			TicketId: cfgStr(fmt.Sprintf("t%04d", i)), Players: players(i)}); err != nil {
			t.Fatal(err)
		}
	}
	h.process()
	h.process()
	h.want("t0000", stSearching)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range 5 {
		h.process()
	}
	runtime.ReadMemStats(&after)
	return (after.TotalAlloc - before.TotalAlloc) / 5, (after.Mallocs - before.Mallocs) / 5
}

// TestPassCostIndependentOfAttributeSize: once the pool's tickets are
// decoded, a pass over 50 tickets at every limit (about 1.3 MB each)
// allocates about what a pass over 50 small tickets does: a pass lists
// the tickets' records without their data and reads none it has seen.
// (Before, each pass copied every record and compared it with the copy
// the pool kept: 64 MiB a pass here.)
func TestPassCostIndependentOfAttributeSize(t *testing.T) {
	smallB, smallN := passAllocs(t, 50, smallPlayers)
	bigB, bigN := passAllocs(t, 50, func(i int) []api.Player { return maximalPlayers(i, 10) })
	t.Logf("a pass over 50 small tickets: %d B in %d objects; over 50 maximal ones: %d B in %d objects", smallB, smallN, bigB, bigN)
	if bigB > 2*smallB+64<<10 || bigN > 2*smallN+100 {
		t.Errorf("a pass over maximal tickets allocates %d B in %d objects, over small ones %d B in %d: want about the same", bigB, bigN, smallB, smallN)
	}
}

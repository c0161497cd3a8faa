package sessions

import (
	"testing"
	"time"

	"github.com/hoistgg/hoist/internal/api"
	"github.com/hoistgg/hoist/internal/clocktest"
)

// TestProcessHealthOnItsOwnClock: with a game clock apart from the
// processes' clock (a manual clock: Config.ProcessNow stays on real
// time), an hour of game time times out a reservation but no process's
// health: the silent process is not ended until its own clock passes
// three heartbeat windows.
func TestProcessHealthOnItsOwnClock(t *testing.T) {
	wall := clocktest.New(t0)
	h := newHarness(t, func(c *Config) { c.ProcessNow = wall.Now })
	h.addFleet("fleet-1")
	h.addCompute("fleet-1", "i-1", "us-west-2")
	_, id := h.activeSession("fleet-1", "i-1", "proc-1", 2)
	reserved, err := h.reserve(id, "a")
	h.must(err)

	h.sweepAt(time.Hour) // the game clock only
	if st := h.playerSession(reserved[0]).Session.Status; st != api.PlayerSessionStatusTimedout {
		t.Fatalf("an hour of game time later the reservation is %s, want TIMEDOUT", st)
	}
	if ended := h.host.ended(); len(ended) != 0 {
		t.Fatalf("an hour of game time ended the process: %v", ended)
	}
	wall.Advance(3 * 70 * time.Second) // three missed reports on the processes' clock
	h.must(h.svc.Sweep(h.ctx))
	if ended := h.host.ended(); len(ended) != 1 || ended[0].reason != "SERVER_PROCESS_TERMINATED_UNHEALTHY" {
		t.Fatalf("after three silent heartbeat windows of its own clock: %v, want the process ended unhealthy", ended)
	}
}

//go:build linux

package main

import (
	"testing"

	"github.com/hoistgg/hoist/e2e/loadreport"
	"github.com/hoistgg/hoist/e2e/netns"
)

// tinyRun runs the load program with args in a tiny configuration against
// the Hoist binary the e2e tests build, and returns its JSON report.
func tinyRun(t *testing.T, args ...string) *Report {
	t.Helper()
	rep, _ := loadreport.RunForTest[Report](t, run, append(args, loadreport.TinyRunArgs(t)...)...)
	if rep.Machine.CPUs == 0 || rep.Medians == nil {
		t.Errorf("report without machine or medians: %+v", rep)
	}
	return rep
}

// TestTinyHeartbeats: 5 simulated hosts enrol, connect and heartbeat every
// second for 2 s; Hoist's CPU and memory are read.
func TestTinyHeartbeats(t *testing.T) {
	t.Parallel()
	rep := tinyRun(t, "-scenario", "heartbeats", "-hosts", "5", "-window", "2s", "-timings", "hosts.heartbeat=1s")
	if len(rep.Heartbeats) != 1 {
		t.Fatalf("%d phases", len(rep.Heartbeats))
	}
	p := rep.Heartbeats[0]
	// Hoist's CPU time is read in clock ticks (10 ms): 10 heartbeats may
	// cost less than one, so HoistCores may be 0 here.
	if p.Heartbeats < 5 || p.IntervalS != 1 || p.Heartbeat.P50 <= 0 || p.HoistCores < 0 || p.RSSAfterMiB <= 0 || p.HeapAfterMiB <= 0 {
		t.Errorf("phase: %+v", p)
	}
}

// TestTinySessions: game sessions alternately on Hoist's machine and on a
// pool host on loopback, seen ACTIVE through the game servers' logs.
func TestTinySessions(t *testing.T) {
	t.Parallel()
	rep := tinyRun(t, "-scenario", "sessions", "-remote", "loopback", "-processes", "2", "-rate", "20", "-duration", "2s")
	if len(rep.Sessions) != 1 {
		t.Fatalf("%d runs", len(rep.Sessions))
	}
	r := rep.Sessions[0]
	for _, st := range []SessionStats{r.Local, r.Remote} {
		if st.CreateToActive.Count == 0 || st.CreateToActive.P50 <= 0 || st.CreateCall.P50 <= 0 {
			t.Errorf("run: %+v", r)
		}
	}
}

// TestTinyAgents: the agents' memory at rest, without waiting.
func TestTinyAgents(t *testing.T) {
	t.Parallel()
	rep := tinyRun(t, "-scenario", "agents", "-settle", "0s")
	if len(rep.Agents) != 1 {
		t.Fatalf("%d runs", len(rep.Agents))
	}
	r := rep.Agents[0]
	if r.PoolIdle.RSSMiB <= 0 || r.PoolTwo.RSSMiB <= 0 || r.AnywhereTwo.RSSMiB <= 0 {
		t.Errorf("run: %+v", r)
	}
}

// TestTinyFleet: one fleet over three network-namespace hosts and one on
// Hoist's machine, timed to ACTIVE (root only).
func TestTinyFleet(t *testing.T) {
	netns.Require(t)
	t.Parallel()
	rep := tinyRun(t, "-scenario", "fleet")
	if len(rep.Fleet) != 1 {
		t.Fatalf("%d runs", len(rep.Fleet))
	}
	r := rep.Fleet[0]
	if r.Hosts.AllActiveS <= 0 || r.Local.AllActiveS <= 0 || r.Hosts.FleetActiveS > r.Hosts.AllActiveS {
		t.Errorf("run: %+v", r)
	}
}

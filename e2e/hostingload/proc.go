//go:build linux

package main

import (
	"os"
	"strconv"
	"strings"

	"github.com/hoistgg/hoist/e2e/sysinfo"
)

// cpuSample is a reading of the CPU time of the machine, of this program,
// of Hoist (hoist serve and its local agent) and of Hoist's server
// processes.
type cpuSample struct {
	machine, self, hoist int64
	// reaped is the time of Hoist's children that have exited (and been
	// waited for); live that of each live child.
	reaped int64
	live   map[int]int64
}

func sampleCPU(hoistPID int) cpuSample {
	s := cpuSample{live: map[int]int64{}}
	s.machine, _ = sysinfo.MachineTicks()
	if st, ok := sysinfo.ReadStat(os.Getpid()); ok {
		s.self = st.Ticks
	}
	if st, ok := sysinfo.ReadStat(hoistPID); ok {
		s.hoist, s.reaped = st.Ticks, st.CTicks
	}
	// Hoist's local agent (--local-hosting agent) is a child of hoist serve
	// and counts as Hoist; the game servers are its descendants (each
	// under its init). A descendant that ended is in its parent's
	// children time.
	parents := []int{hoistPID}
	for len(parents) > 0 {
		var next []int
		for _, p := range parents {
			for _, c := range sysinfo.Children(p) {
				st, ok := sysinfo.ReadStat(c)
				if !ok {
					continue
				}
				if p == hoistPID && isLocalAgent(c) {
					s.hoist += st.Ticks
				} else {
					s.live[c] = st.Ticks
				}
				s.reaped += st.CTicks
				next = append(next, c)
			}
		}
		parents = next
	}
	return s
}

// isLocalAgent reports whether process pid is a local agent (hoist agent
// --local).
func isLocalAgent(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	return err == nil && strings.Contains(string(b), "agent\x00--local")
}

// CPUUse is how busy the machine was during a measurement, in cores.
type CPUUse struct {
	// Machine counts every process; Hoist, GameServers (Hoist's server
	// processes, those that ended during the window included, from
	// Hoist's children time) and Load (this program) are parts of it;
	// Other is the rest (other work on the machine, the kernel's threads).
	Machine     float64 `json:"machine_cores"`
	Hoist       float64 `json:"hoist_cores"`
	GameServers float64 `json:"game_server_cores"`
	Load        float64 `json:"load_program_cores"`
	Other       float64 `json:"other_cores"`
}

// cpuUse compares two samples taken seconds apart. A server process alive
// at both counts its difference; one that started in between counts all
// its time; one that ended in between is in Hoist's children time (with
// the time it ran before a, a small overcount).
func cpuUse(a, b cpuSample, seconds float64) CPUUse {
	ticks := seconds * sysinfo.TicksPerSecond
	gs := b.reaped - a.reaped
	for pid, t := range b.live {
		gs += t - a.live[pid]
	}
	u := CPUUse{Machine: float64(b.machine-a.machine) / ticks, Hoist: float64(b.hoist-a.hoist) / ticks,
		GameServers: float64(gs) / ticks, Load: float64(b.self-a.self) / ticks}
	u.Other = max(0, u.Machine-u.Hoist-u.GameServers-u.Load)
	return u
}

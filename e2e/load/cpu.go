package main

import "github.com/hoistgg/hoist/e2e/sysinfo"

// cpuSample is a reading of the machine's and some processes' CPU time, in
// clock ticks (USER_HZ, 100 per second on Linux).
type cpuSample struct {
	busy, total int64 // all CPUs, from /proc/stat
	procs       []int64
}

func sampleCPU(pids ...int) cpuSample {
	var s cpuSample
	s.busy, s.total = sysinfo.MachineTicks()
	for _, pid := range pids {
		st, _ := sysinfo.ReadStat(pid)
		s.procs = append(s.procs, st.Ticks)
	}
	return s
}

// CPUUse is how busy the machine was during a measurement, in cores.
type CPUUse struct {
	// Machine is the busy time of every process on the machine.
	Machine float64 `json:"machine_cores"`
	// Server and Client are the server processes' and the load
	// generator's; Other is the rest (other engineers' work, the kernel's
	// threads, and PostgreSQL's processes with -store postgres).
	Server float64 `json:"server_cores"`
	Client float64 `json:"client_cores"`
	Other  float64 `json:"other_cores"`
}

// cpuUse compares two samples of (self, servers...) taken seconds apart;
// Server is the servers' sum (the replicas of a cluster).
func cpuUse(a, b cpuSample, seconds float64) CPUUse {
	ticks := seconds * sysinfo.TicksPerSecond
	u := CPUUse{Machine: float64(b.busy-a.busy) / ticks}
	if len(a.procs) >= 2 && len(b.procs) == len(a.procs) {
		u.Client = float64(b.procs[0]-a.procs[0]) / ticks
		for i := 1; i < len(a.procs); i++ {
			u.Server += float64(b.procs[i]-a.procs[i]) / ticks
		}
	}
	u.Other = max(0, u.Machine-u.Client-u.Server)
	return u
}

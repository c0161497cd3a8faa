package main

import (
	"bufio"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"syscall"
)

// Machine describes where a run took place (no paths, no host names).
type Machine struct {
	CPUs      int    `json:"cpus"`
	CPUModel  string `json:"cpu_model"`
	MemoryGiB string `json:"memory_gib"`
	Go        string `json:"go"`
	Kernel    string `json:"kernel"`
	// DataFS is the file system type of the directory holding Hoist's data
	// (fsync cost depends on it).
	DataFS string `json:"data_fs"`
	// LoadAvg is /proc/loadavg's 1-minute figure when the run started.
	LoadAvg string `json:"loadavg_at_start"`
}

func describeMachine(dataParent string) Machine {
	m := Machine{CPUs: runtime.NumCPU(), Go: runtime.Version(), CPUModel: "unknown", MemoryGiB: "unknown"}
	if f, err := os.Open("/proc/cpuinfo"); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
				m.CPUModel = strings.TrimSpace(v)
				break
			}
		}
		f.Close()
	}
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		for line := range strings.SplitSeq(string(b), "\n") {
			if rest, ok := strings.CutPrefix(line, "MemTotal:"); ok {
				f := strings.Fields(rest)
				if kb, err := strconv.ParseFloat(f[0], 64); err == nil {
					m.MemoryGiB = fmt.Sprintf("%.1f", kb/(1<<20))
				}
			}
		}
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = strings.TrimSpace(string(b))
	}
	m.LoadAvg = loadAvg()
	dir := dataParent
	if dir == "" {
		dir = os.TempDir()
	}
	var st syscall.Statfs_t
	if syscall.Statfs(dir, &st) == nil {
		m.DataFS = fsName(int64(st.Type))
	}
	return m
}

func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return ""
	}
	return f[0]
}

func fsName(magic int64) string {
	switch magic {
	case 0xEF53:
		return "ext4"
	case 0x58465342:
		return "xfs"
	case 0x9123683E:
		return "btrfs"
	case 0x01021994:
		return "tmpfs"
	case 0x794C7630:
		return "overlayfs"
	case 0x2FC12FC1:
		return "zfs"
	}
	return fmt.Sprintf("0x%x", magic)
}

// cpuSample is a reading of the machine's and some processes' CPU time, in
// clock ticks (USER_HZ, 100 per second on Linux).
type cpuSample struct {
	busy, total int64 // all CPUs, from /proc/stat
	procs       []int64
}

const ticksPerSecond = 100

func sampleCPU(pids ...int) cpuSample {
	var s cpuSample
	if b, err := os.ReadFile("/proc/stat"); err == nil {
		line, _, _ := strings.Cut(string(b), "\n")
		f := strings.Fields(line)
		// cpu user nice system idle iowait irq softirq steal ...
		for i := 1; i < len(f) && i <= 8; i++ {
			v, _ := strconv.ParseInt(f[i], 10, 64)
			s.total += v
			if i != 4 && i != 5 {
				s.busy += v
			}
		}
	}
	for _, pid := range pids {
		s.procs = append(s.procs, procTicks(pid))
	}
	return s
}

// procTicks is a process's user+system time (all its threads).
func procTicks(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// The command name may hold spaces: fields count from after ")".
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(s[i+1:])
	// f[0] is state (field 3); utime is field 14, stime field 15.
	if len(f) < 13 {
		return 0
	}
	u, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return u + st
}

// CPUUse is how busy the machine was during a measurement, in cores.
type CPUUse struct {
	// Machine is the busy time of every process on the machine.
	Machine float64 `json:"machine_cores"`
	// Server and Client are the server process's and the load
	// generator's; Other is the rest (other engineers' work, the kernel's
	// threads).
	Server float64 `json:"server_cores"`
	Client float64 `json:"client_cores"`
	Other  float64 `json:"other_cores"`
}

// cpuUse compares two samples of (self, server) taken seconds apart.
func cpuUse(a, b cpuSample, seconds float64) CPUUse {
	ticks := seconds * ticksPerSecond
	u := CPUUse{Machine: float64(b.busy-a.busy) / ticks}
	if len(a.procs) == 2 && len(b.procs) == 2 {
		u.Client = float64(b.procs[0]-a.procs[0]) / ticks
		u.Server = float64(b.procs[1]-a.procs[1]) / ticks
	}
	u.Other = max(0, u.Machine-u.Client-u.Server)
	return u
}

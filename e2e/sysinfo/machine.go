// Package sysinfo holds what Hoist's load programs (e2e/load,
// e2e/hostingload) share: a description of the machine a run took place on
// and readings of processes' CPU time and memory from /proc. Off Linux the
// readings are zero.
package sysinfo

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

// DescribeMachine describes this machine; dataParent is where Hoist's data
// directories go (the system's temporary directory when empty).
func DescribeMachine(dataParent string) Machine {
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
	if kb := MemInfo("MemTotal:"); kb > 0 {
		m.MemoryGiB = fmt.Sprintf("%.1f", float64(kb)/(1<<20))
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

// String is the machine as a report's line says it: "machine: 2 CPUs
// (model), 7.8 GiB, go1.x, kernel k, data on ext4, load average 0.5 at
// start".
func (m Machine) String() string {
	return fmt.Sprintf("machine: %d CPUs (%s), %s GiB, %s, kernel %s, data on %s, load average %s at start",
		m.CPUs, m.CPUModel, m.MemoryGiB, m.Go, m.Kernel, m.DataFS, m.LoadAvg)
}

// MemInfo returns a /proc/meminfo field ("MemAvailable:") in KiB.
func MemInfo(field string) int64 {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, field); ok {
			if f := strings.Fields(rest); len(f) > 0 {
				kb, _ := strconv.ParseInt(f[0], 10, 64)
				return kb
			}
		}
	}
	return 0
}

func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	if f := strings.Fields(string(b)); len(f) > 0 {
		return f[0]
	}
	return ""
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

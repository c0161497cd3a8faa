//go:build linux

package main

import (
	"bufio"
	"fmt"
	"math"
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
	// DataFS is the file system of Hoist's data directories.
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
	if kb := meminfo("MemTotal:"); kb > 0 {
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

// meminfo returns a /proc/meminfo field in KiB.
func meminfo(field string) int64 {
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
	}
	return fmt.Sprintf("0x%x", magic)
}

// ticksPerSecond is USER_HZ (100 on Linux).
const ticksPerSecond = 100

// procStat is what /proc/<pid>/stat says about one process.
type procStat struct {
	ppid    int
	ticks   int64 // user + system time of the process (all threads)
	cticks  int64 // user + system time of its waited-for children
	threads int
}

func readStat(pid int) (procStat, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return procStat{}, false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')') // the command may hold spaces
	if i < 0 {
		return procStat{}, false
	}
	f := strings.Fields(s[i+1:])
	// f[0] is field 3 (state): ppid is field 4, utime 14, stime 15,
	// cutime 16, cstime 17, num_threads 20.
	if len(f) < 18 {
		return procStat{}, false
	}
	num := func(k int) int64 { v, _ := strconv.ParseInt(f[k-3], 10, 64); return v }
	return procStat{ppid: int(num(4)), ticks: num(14) + num(15), cticks: num(16) + num(17), threads: int(num(20))}, true
}

// children returns the PIDs of the live processes whose parent is pid.
func children(pid int) []int {
	var out []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		c, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if st, ok := readStat(c); ok && st.ppid == pid {
			out = append(out, c)
		}
	}
	return out
}

// memory returns a process's resident set and proportional set size in
// KiB (PSS divides shared pages, such as the game server's executable,
// among the processes that map them).
func memory(pid int) (rssKiB, pssKiB int64) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/smaps_rollup")
	if err != nil {
		return 0, 0
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		v, _ := strconv.ParseInt(f[1], 10, 64)
		switch f[0] {
		case "Rss:":
			rssKiB = v
		case "Pss:":
			pssKiB = v
		}
	}
	return rssKiB, pssKiB
}

// peakRSS returns a process's peak resident set (VmHWM) in KiB.
func peakRSS(pid int) int64 {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			if f := strings.Fields(rest); len(f) > 0 {
				v, _ := strconv.ParseInt(f[0], 10, 64)
				return v
			}
		}
	}
	return 0
}

// machineTicks returns the busy and total ticks of all CPUs (/proc/stat).
func machineTicks() (busy, total int64) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, 0
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	// cpu user nice system idle iowait irq softirq steal ...
	for i := 1; i < len(f) && i <= 8; i++ {
		v, _ := strconv.ParseInt(f[i], 10, 64)
		total += v
		if i != 4 && i != 5 {
			busy += v
		}
	}
	return busy, total
}

// cpuSample is a reading of the CPU time of the machine, of this program,
// of Hoist and of Hoist's server processes.
type cpuSample struct {
	machine, self, hoist int64
	// reaped is the time of Hoist's children that have exited (and been
	// waited for); live that of each live child.
	reaped int64
	live   map[int]int64
}

func sampleCPU(hoistPID int) cpuSample {
	s := cpuSample{live: map[int]int64{}}
	s.machine, _ = machineTicks()
	if st, ok := readStat(os.Getpid()); ok {
		s.self = st.ticks
	}
	if st, ok := readStat(hoistPID); ok {
		s.hoist, s.reaped = st.ticks, st.cticks
	}
	for _, c := range children(hoistPID) {
		if st, ok := readStat(c); ok {
			s.live[c] = st.ticks
		}
	}
	return s
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
	ticks := seconds * ticksPerSecond
	gs := b.reaped - a.reaped
	for pid, t := range b.live {
		gs += t - a.live[pid]
	}
	u := CPUUse{Machine: float64(b.machine-a.machine) / ticks, Hoist: float64(b.hoist-a.hoist) / ticks,
		GameServers: float64(gs) / ticks, Load: float64(b.self-a.self) / ticks}
	u.Other = max(0, u.Machine-u.Hoist-u.GameServers-u.Load)
	return u
}

// openFiles counts a process's open file descriptors.
func openFiles(pid int) int {
	entries, err := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/fd")
	if err != nil {
		return 0
	}
	return len(entries)
}

// threadUse returns how many threads the machine runs and how many it may
// run: the least of kernel.pid_max, kernel.threads-max and this user's
// RLIMIT_NPROC (every thread takes an ID below pid_max).
func threadUse() (used, limit int) {
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		// "0.10 0.20 0.30 2/345 6789": 345 threads exist.
		if f := strings.Fields(string(b)); len(f) > 3 {
			if _, total, ok := strings.Cut(f[3], "/"); ok {
				used, _ = strconv.Atoi(total)
			}
		}
	}
	limit = math.MaxInt
	for _, p := range []string{"/proc/sys/kernel/pid_max", "/proc/sys/kernel/threads-max"} {
		if b, err := os.ReadFile(p); err == nil {
			if v, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && v < limit {
				limit = v
			}
		}
	}
	var rl syscall.Rlimit
	if syscall.Getrlimit(rlimitNPROC, &rl) == nil && rl.Cur < uint64(limit) {
		limit = int(rl.Cur)
	}
	return used, limit
}

// rlimitNPROC is RLIMIT_NPROC on Linux.
const rlimitNPROC = 6

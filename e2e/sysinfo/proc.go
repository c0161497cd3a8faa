package sysinfo

import (
	"math"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// TicksPerSecond is USER_HZ (100 on Linux).
const TicksPerSecond = 100

// ProcStat is what /proc/<pid>/stat says about one process.
type ProcStat struct {
	PPID    int
	Ticks   int64 // user + system time of the process (all threads)
	CTicks  int64 // user + system time of its waited-for children
	Threads int
}

// ReadStat reads /proc/<pid>/stat; false when the process is gone.
func ReadStat(pid int) (ProcStat, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return ProcStat{}, false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')') // the command may hold spaces
	if i < 0 {
		return ProcStat{}, false
	}
	f := strings.Fields(s[i+1:])
	// f[0] is field 3 (state): ppid is field 4, utime 14, stime 15,
	// cutime 16, cstime 17, num_threads 20.
	if len(f) < 18 {
		return ProcStat{}, false
	}
	num := func(k int) int64 { v, _ := strconv.ParseInt(f[k-3], 10, 64); return v }
	return ProcStat{PPID: int(num(4)), Ticks: num(14) + num(15), CTicks: num(16) + num(17), Threads: int(num(20))}, true
}

// Children returns the PIDs of the live processes whose parent is pid.
func Children(pid int) []int {
	var out []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		c, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if st, ok := ReadStat(c); ok && st.PPID == pid {
			out = append(out, c)
		}
	}
	return out
}

// Memory returns a process's resident set and proportional set size in
// KiB (PSS divides shared pages, such as the game server's executable,
// among the processes that map them).
func Memory(pid int) (rssKiB, pssKiB int64) {
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

// PeakRSS returns a process's peak resident set (VmHWM) in KiB.
func PeakRSS(pid int) int64 {
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

// MachineTicks returns the busy and total ticks of all CPUs (/proc/stat).
func MachineTicks() (busy, total int64) {
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

// OpenFiles counts a process's open file descriptors.
func OpenFiles(pid int) int {
	entries, err := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/fd")
	if err != nil {
		return 0
	}
	return len(entries)
}

// ThreadUse returns how many threads the machine runs and how many it may
// run: the least of kernel.pid_max, kernel.threads-max and this user's
// RLIMIT_NPROC (every thread takes an ID below pid_max).
func ThreadUse() (used, limit int) {
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

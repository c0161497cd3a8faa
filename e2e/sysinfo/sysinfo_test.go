package sysinfo

import (
	"os"
	"runtime"
	"testing"
)

func TestReadings(t *testing.T) {
	m := DescribeMachine(t.TempDir())
	if m.CPUs != runtime.NumCPU() || m.Go != runtime.Version() {
		t.Fatalf("DescribeMachine = %+v", m)
	}
	if runtime.GOOS != "linux" {
		t.Skip("the /proc readings are Linux's")
	}
	if m.MemoryGiB == "unknown" || m.Kernel == "" || m.DataFS == "" || m.LoadAvg == "" {
		t.Errorf("DescribeMachine = %+v: a field is missing", m)
	}
	st, ok := ReadStat(os.Getpid())
	if !ok || st.PPID != os.Getppid() || st.Threads < 1 {
		t.Errorf("ReadStat(self) = %+v, %v", st, ok)
	}
	if busy, total := MachineTicks(); busy <= 0 || total < busy {
		t.Errorf("MachineTicks = %d, %d", busy, total)
	}
	if rss, pss := Memory(os.Getpid()); rss <= 0 || pss <= 0 || PeakRSS(os.Getpid()) < rss {
		t.Errorf("Memory = %d, %d; PeakRSS = %d", rss, pss, PeakRSS(os.Getpid()))
	}
	if OpenFiles(os.Getpid()) < 3 || MemInfo("MemAvailable:") <= 0 {
		t.Errorf("OpenFiles = %d, MemAvailable = %d", OpenFiles(os.Getpid()), MemInfo("MemAvailable:"))
	}
	if used, limit := ThreadUse(); used < 1 || limit < used {
		t.Errorf("ThreadUse = %d, %d", used, limit)
	}
	if _, ok := ReadStat(-1); ok {
		t.Error("ReadStat(-1) found a process")
	}
	if got := fsName(0xEF53); got != "ext4" {
		t.Errorf("fsName(ext4) = %q", got)
	}
}

func TestMachineString(t *testing.T) {
	m := Machine{CPUs: 2, CPUModel: "cpu", MemoryGiB: "7.8", Go: "go1.26", Kernel: "6.1", DataFS: "ext4", LoadAvg: "0.50"}
	want := "machine: 2 CPUs (cpu), 7.8 GiB, go1.26, kernel 6.1, data on ext4, load average 0.50 at start"
	if got := m.String(); got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
}

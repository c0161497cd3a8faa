//go:build linux

package local

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestParseProcStat(t *testing.T) {
	// The command name may hold spaces and parentheses.
	line := "4242 (a) b (c) S 1 4240 4240 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 987654 1000 200 18446744073709551615\n"
	st, ok := parseProcStat(line)
	if !ok || st.PGID != 4240 || st.Start != 987654 {
		t.Errorf("parseProcStat = %+v, %v; want pgid 4240, start 987654", st, ok)
	}
	for _, bad := range []string{"", "1 (x) S 1 2", "1 x S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20"} {
		if _, ok := parseProcStat(bad); ok {
			t.Errorf("parseProcStat(%q) accepted", bad)
		}
	}
	self, ok := readProcStat(os.Getpid())
	if pg := syscall.Getpgrp(); !ok || self.PGID != pg || self.Start == 0 {
		t.Errorf("readProcStat(self) = %+v, %v; want pgid %d", self, ok, pg)
	}
}

func TestParseGroupRecord(t *testing.T) {
	rec := groupRecord{PGID: 4240, Start: 987654, Boot: "0f0e-11"}
	got, err := parseGroupRecord(rec.String())
	if err != nil || got != rec {
		t.Errorf("round trip = %+v, %v", got, err)
	}
	for _, bad := range []string{"", "1 2 b", "x 2 b", "10 -2 b", "10 2", "10 2 b c"} {
		if _, err := parseGroupRecord(bad); err == nil {
			t.Errorf("parseGroupRecord(%q) accepted", bad)
		}
	}
}

// orphanGroup starts a process group as a wrapper script that starts a
// child without exec and exits, leaving the child in the group (as a
// server process leaves one when Hoist is killed: its parent-death signal
// ends the wrapper only). It returns the group's ID, the leader's start
// time and the child's PID.
func orphanGroup(t *testing.T) (pgid int, start uint64, child int) {
	t.Helper()
	pidFile := filepath.Join(t.TempDir(), "child")
	cmd := exec.Command("/bin/sh", "-c", `sleep 600 </dev/null >/dev/null 2>&1 & echo $! > "$1"; read x; exit 0`, "sh", pidFile)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pgid = cmd.Process.Pid
	start, ok := processStart(pgid)
	if !ok {
		t.Fatal("no start time for the wrapper")
	}
	for deadline := time.Now().Add(10 * time.Second); ; {
		b, _ := os.ReadFile(pidFile) // absent or empty until the wrapper writes it
		var err error
		if child, err = strconv.Atoi(strings.TrimSpace(string(b))); err == nil && child > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the wrapper did not start its child")
		}
		time.Sleep(5 * time.Millisecond) // polling for the file, not waiting for time
	}
	t.Cleanup(func() { syscall.Kill(-pgid, syscall.SIGKILL) })
	stdin.Close() // the wrapper ends; its child stays in the group
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	return pgid, start, child
}

// childGone reports whether pid has ended (it is a child of this test's
// process only if the test binary is a subreaper; reap it then).
func childGone(pid int) bool {
	var ws syscall.WaitStatus
	syscall.Wait4(pid, &ws, syscall.WNOHANG, nil)
	if _, ok := readProcStat(pid); !ok {
		return true
	}
	b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	i := strings.LastIndexByte(string(b), ')')
	return i > 0 && i+2 < len(b) && (b[i+2] == 'Z' || b[i+2] == 'X')
}

func waitGone(t *testing.T, pid int) bool {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); {
		if childGone(pid) {
			return true
		}
		time.Sleep(5 * time.Millisecond) // polling, not waiting for time
	}
	return false
}

// TestNewKillsLeftoverGroups: a process group recorded by an earlier run
// (Hoist killed: the wrapper it started died, its child lives on) is
// killed when a provider starts on the same directory, also with
// KeepDirs, and its record is removed. Groups whose ID was reused are not
// acted on: one with a member older than the recorded leader, and one
// whose leader lives with another start time.
func TestNewKillsLeftoverGroups(t *testing.T) {
	dir := t.TempDir()
	boot := bootID()
	if boot == "" {
		t.Skip("no boot ID")
	}
	ours, start, child := orphanGroup(t)
	reused, rstart, other := orphanGroup(t)
	leader := exec.Command("sleep", "600")
	leader.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := leader.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { leader.Process.Kill(); leader.Wait() })
	lstart, _ := processStart(leader.Process.Pid)
	gdir := filepath.Join(dir, groupsDir)
	for _, r := range []groupRecord{{ours, start, boot}, {reused, rstart + 1_000_000, boot},
		{leader.Process.Pid, lstart + 1, boot}} {
		if err := writeSynced(gdir, filepath.Join(gdir, strconv.Itoa(r.PGID)), []byte(r.String())); err != nil {
			t.Fatal(err)
		}
	}
	if childGone(child) || childGone(other) {
		t.Fatal("the children ended before the test")
	}
	p, err := New(Config{Dir: dir, KeepDirs: true})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if !waitGone(t, child) {
		t.Errorf("the leftover child %d of group %d still runs", child, ours)
	}
	if childGone(other) {
		t.Errorf("the child %d of a group with a member older than the recorded leader was killed", other)
	}
	if !alive(leader.Process.Pid) {
		t.Errorf("a live leader with another start time than recorded was killed")
	}
	if left, _ := os.ReadDir(gdir); len(left) != 0 {
		t.Errorf("records left after start: %v", left)
	}
}

// TestProcessGroupRecordAndReap: a running process's group (under an init,
// the init's) is recorded under the instances directory, and forgotten
// when the process has ended; a child it left behind (the wrapper exited
// without exec) is killed and reaped (by its init, or by Hoist as a
// subreaper when processes are not confined): no zombie is left.
func TestProcessGroupRecordAndReap(t *testing.T) {
	t.Parallel()
	for name, direct := range map[string]bool{"confined": false, "direct": true} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			testProcessGroupRecordAndReap(t, direct)
		})
	}
}

func testProcessGroupRecordAndReap(t *testing.T, direct bool) {
	f := newFixture(t, func(c *Config) { c.noConfine = direct })
	f.script("server.sh", "sleep 600 </dev/null >/dev/null 2>&1 &\nreport child $GAMELIFT_SDK_PROCESS_ID $!\n"+
		"report started $GAMELIFT_SDK_PROCESS_ID $$\nread x </dev/null\nsleep 0.2\nexit 3\n")
	r := f.start("fleet-1", "i-1", sp("/local/game/server.sh", "", 1))
	p := r.waitStarts(1)[0]
	pid, child := f.leader(p.ProcessID), r.b.childOf(t, p.ProcessID)
	if (pid == r.b.pid(t, p.ProcessID)) != direct {
		t.Errorf("the group leader %d is the process %d: want that only when not confined", pid, r.b.pid(t, p.ProcessID))
	}
	rec, err := os.ReadFile(filepath.Join(f.cfg.Dir, groupsDir, strconv.Itoa(pid)))
	if err != nil {
		t.Fatalf("no record of process group %d: %v", pid, err)
	}
	if g, err := parseGroupRecord(string(rec)); err != nil || g.PGID != pid || g.Boot != bootID() {
		t.Errorf("record %q: %+v, %v", rec, g, err)
	}
	r.waitExit(p.ProcessID)
	if _, err := os.Stat(filepath.Join(f.cfg.Dir, groupsDir, strconv.Itoa(pid))); !os.IsNotExist(err) {
		t.Errorf("the record of ended group %d is still there (%v)", pid, err)
	}
	// The child was killed and, a child of this process (the subreaper)
	// once its parent ended, reaped: /proc no longer has it, not even as
	// a zombie.
	for deadline := time.Now().Add(waitLimit); ; {
		if _, err := os.Stat("/proc/" + strconv.Itoa(child)); os.IsNotExist(err) {
			break
		}
		if time.Now().After(deadline) {
			b, _ := os.ReadFile("/proc/" + strconv.Itoa(child) + "/stat")
			t.Fatalf("the left child %d is still in /proc: %s", child, b)
		}
		time.Sleep(5 * time.Millisecond) // polling, not waiting for time
	}
	if err := f.p.StopInstance("i-1", "done"); err != nil {
		t.Fatal(err)
	}
	r.waitStopped()
}

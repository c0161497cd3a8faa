//go:build linux

package local

import (
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hoistgg/hoist/internal/fleets"
)

// detacher starts two children that leave the server process behind, and
// reports their pids: one in a session and process group of its own
// (setsid), one double-forked (its parent exits at once, so it is nobody's
// child); then it runs as sleeper.
const detacher = "export R\n" +
	"( setsid sh -c 'echo \"detached $GAMELIFT_SDK_PROCESS_ID $$\" > \"$R\"; exec sleep 1000' & )\n" +
	"( sh -c 'echo \"double $GAMELIFT_SDK_PROCESS_ID $$\" > \"$R\"; exec sleep 1000' & )\n"

// reported returns the pid a script reported as "<kind> <process ID> <pid>".
func (b *board) reported(t *testing.T, kind, processID string) int {
	t.Helper()
	var pid int
	b.waitFor(t, kind+" of "+processID, func() bool {
		for _, l := range b.lines {
			if len(l) == 3 && l[0] == kind && l[1] == processID {
				pid, _ = strconv.Atoi(l[2])
				return true
			}
		}
		return false
	})
	return pid
}

// confinedFixture is a fixture whose processes run under their init, or
// skips the test where the system gives no namespaces.
func confinedFixture(t *testing.T, mod func(*Config)) *fixture {
	t.Helper()
	f := newFixture(t, mod)
	if f.p.confine == nil {
		t.Skip("this system gives processes no namespaces of their own")
	}
	return f
}

// TestDetachedProcessesEnd: what a server process started in a session of
// its own (setsid) or double-forked ends when the process is stopped, when
// it exits by itself, and when its instance is stopped.
func TestDetachedProcessesEnd(t *testing.T) {
	t.Parallel()
	f := confinedFixture(t, nil)
	f.script("server.sh", detacher+sleeper)
	// exits.sh exits by itself once the test has seen its children (the
	// file "$R.exit-<process ID>" appears), not after a fixed time that a
	// loaded machine could let pass before the test looks.
	f.script("exits.sh", detacher+"report started $GAMELIFT_SDK_PROCESS_ID $$\n"+
		"while [ ! -e \"$R.exit-$GAMELIFT_SDK_PROCESS_ID\" ]; do sleep 0.05; done\nexit 0\n")
	r := f.start("fleet-1", "i-1", sp("/local/game/server.sh", "", 1), sp("/local/game/exits.sh", "", 1))
	starts := r.waitStarts(2)
	children := func(id string) []int {
		pids := []int{f.b.reported(t, "detached", id), f.b.reported(t, "double", id)}
		for _, pid := range pids {
			if !alive(pid) {
				t.Fatalf("the child %d of %s is not running", pid, id)
			}
		}
		return pids
	}
	for _, s := range starts {
		kids := children(s.ProcessID)
		switch s.LaunchPath {
		case "/local/game/exits.sh":
			if err := os.WriteFile(f.fifo+".exit-"+s.ProcessID, nil, 0o644); err != nil {
				t.Fatal(err)
			}
			r.waitExit(s.ProcessID)
		default:
			if err := f.p.StopProcess(s.ProcessID, "stopped"); err != nil {
				t.Fatal(err)
			}
			r.waitExit(s.ProcessID)
		}
		waitDead(t, kids...)
	}
	next := r.waitStarts(4)[2:]
	var kids []int
	for _, s := range next {
		kids = append(kids, children(s.ProcessID)...)
	}
	if err := f.p.StopInstance("i-1", "fleet deleted"); err != nil {
		t.Fatal(err)
	}
	r.waitStopped()
	waitDead(t, kids...)
}

// TestWhatAServerProcessSees: only the processes of its own namespace:
// not Hoist, whose environment it cannot read, nor another instance's
// processes.
func TestWhatAServerProcessSees(t *testing.T) {
	t.Parallel()
	f := confinedFixture(t, nil)
	f.script("other.sh", sleeper)
	f.script("probe.sh", `{ for p in /proc/[0-9]*; do tr '\0' ' ' < $p/cmdline; echo; done
cat /proc/`+strconv.Itoa(os.Getpid())+`/environ >/dev/null 2>&1 && echo READ-HOIST-ENVIRON
} > "view-$GAMELIFT_SDK_PROCESS_ID" 2>/dev/null
`+sleeper)
	r1 := f.start("fleet-1", "i-1", sp("/local/game/other.sh", "", 1))
	r1.waitStarts(1)
	r2 := f.start("fleet-2", "i-2", sp("/local/game/probe.sh", "", 1))
	p := r2.waitStarts(1)[0]
	view, err := os.ReadFile(filepath.Join(f.p.Layout("fleet-2", "i-2").GameRoot, "view-"+p.ProcessID))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(view)), "\n")
	for _, l := range lines {
		if strings.Contains(l, "sleep") || strings.Contains(l, "READ") || strings.Contains(l, filepath.Base(os.Args[0])) {
			t.Errorf("the server process sees %q", l)
		}
	}
	if len(lines) > 5 {
		t.Errorf("the server process sees %d processes: %q", len(lines), lines)
	}
}

// TestKilledHoistLeavesNothing: a provider (a helper process of this test
// binary) is killed with SIGKILL while its server process runs with a
// setsid and a double-forked child: none of them is left, before and
// after a provider starts again on the same directory.
func TestKilledHoistLeavesNothing(t *testing.T) {
	if dir := os.Getenv("HOIST_TEST_PROVIDER_DIR"); dir != "" {
		runHelperProvider(t, dir, os.Getenv("HOIST_TEST_PROVIDER_BUILD"))
		return
	}
	t.Parallel()
	f := confinedFixture(t, nil)
	f.script("server.sh", detacher+sleeper)
	dir := filepath.Join(f.cfg.Dir, "helper") // under the fixture's, where the board finds processes
	helper := exec.Command(os.Args[0], "-test.run=^TestKilledHoistLeavesNothing$")
	helper.Env = append(os.Environ(), "HOIST_TEST_PROVIDER_DIR="+dir, "HOIST_TEST_PROVIDER_BUILD="+f.build)
	stdin, err := helper.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	helper.Stdout, helper.Stderr = os.Stderr, os.Stderr
	if err := helper.Start(); err != nil {
		t.Fatal(err)
	}
	defer stdin.Close()
	var id string
	f.b.waitFor(t, "the helper's server process", func() bool {
		for _, l := range f.b.lines {
			if l[0] == "started" {
				id = l[1]
				return true
			}
		}
		return false
	})
	pids := []int{f.b.pid(t, id), f.b.reported(t, "detached", id), f.b.reported(t, "double", id)}
	for _, pid := range pids {
		if !alive(pid) {
			t.Fatalf("process %d of the helper is not running", pid)
		}
	}
	if err := helper.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	helper.Wait()
	waitDead(t, pids...)
	p, err := New(Config{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	p.Close()
	waitDead(t, pids...)
}

// runHelperProvider is TestKilledHoistLeavesNothing's helper: a provider
// on dir running one instance of build, until it is killed.
func runHelperProvider(t *testing.T, dir, build string) {
	p, err := New(Config{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	spec := fleets.InstanceSpec{InstanceRef: fleets.InstanceRef{FleetID: "fleet-1", InstanceID: "i-1"}, BuildDir: build,
		RuntimeConfiguration: rc(sp("/local/game/server.sh", "", 1))}
	if err := p.StartInstance(context.Background(), spec, nopHooks{}); err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, os.Stdin) // until the test kills this process
}

// nopHooks ignores what an instance reports.
type nopHooks struct{}

func (nopHooks) StepStarted(context.Context, fleets.Step)            {}
func (nopHooks) StepFailed(context.Context, fleets.Step, error)      {}
func (nopHooks) ProcessStarted(context.Context, fleets.ProcessStart) {}
func (nopHooks) LaunchFailed(context.Context, string, error)         {}
func (nopHooks) ProcessExited(context.Context, fleets.ProcessExit)   {}
func (nopHooks) AskToEnd(context.Context, string, time.Time) error   { return nil }
func (nopHooks) InstanceStopped(context.Context)                     {}

// runAs starts `sleep 1000` as uid (in a session of its own, as a
// detached leftover), with flags for clone, and returns it; the test's end
// kills it.
func runAs(t *testing.T, uid int, cloneflags uintptr) *exec.Cmd {
	t.Helper()
	cmd := exec.Command("sleep", "1000")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Cloneflags: cloneflags,
		Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(uid), Groups: []uint32{}}}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return cmd
}

// uidOf returns the real UID of a process (-1 if gone).
func uidOf(pid int) int {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return -1
	}
	st, ok := parseProcStatus(string(b))
	if !ok {
		return -1
	}
	return st.UIDs[0]
}

// TestSlotAccounts: an instance gets the lowest slot whose account no
// other Hoist holds (its lock); what still runs as that account in
// Hoist's PID namespace (left by an earlier instance) is killed before the
// instance's first process starts; the held account's processes, and
// processes of the UID in another PID namespace (a container's), are left
// alone.
func TestSlotAccounts(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: the test runs processes as other users")
	}
	f, _ := userFixture(t)
	held, err := lockAccount(f.cfg.AccountLockDir, testUID)
	if err != nil {
		t.Fatal(err)
	}
	otherHoists := runAs(t, testUID, 0)
	leftover := runAs(t, testUID+1, 0)
	container := runAs(t, testUID+1, syscall.CLONE_NEWPID)
	f.script("server.sh", sleeper)
	r := f.start("fleet-1", "i-1", sp("/local/game/server.sh", "", 1))
	p := r.waitStarts(1)[0]
	if got := uidOf(r.b.pid(t, p.ProcessID)); got != testUID+1 {
		t.Errorf("the server process runs as %d, want slot 1's %d (slot 0 is held by another Hoist)", got, testUID+1)
	}
	if alive(leftover.Process.Pid) {
		t.Errorf("a process left running as slot 1's account still runs after an instance took the slot")
	}
	if !alive(otherHoists.Process.Pid) || !alive(container.Process.Pid) {
		t.Errorf("a process of another Hoist's account, or of another PID namespace, was killed")
	}
	if err := f.p.StopInstance("i-1", "done"); err != nil {
		t.Fatal(err)
	}
	r.waitStopped()
	held.Close()
	r2 := f.start("fleet-1", "i-2", sp("/local/game/server.sh", "", 1))
	p2 := r2.waitStarts(1)[0]
	if got := uidOf(r2.b.pid(t, p2.ProcessID)); got != testUID {
		t.Errorf("once released, slot 0's account is not used: the process runs as %d", got)
	}
	if alive(otherHoists.Process.Pid) {
		t.Errorf("what ran as slot 0's account still runs after an instance took it")
	}
}

// TestNewEndsLeftoverAccounts: when a provider starts, what runs as an
// account with a lock file (a Hoist used it since boot) that no Hoist
// holds is killed; a held account's processes are left alone.
func TestNewEndsLeftoverAccounts(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: the test runs processes as other users")
	}
	locks := t.TempDir()
	for _, uid := range []int{testUID + 5, testUID + 6} {
		l, err := lockAccount(locks, uid)
		if err != nil {
			t.Fatal(err)
		}
		l.Close()
	}
	held, err := lockAccount(locks, testUID+6)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	leftover, running := runAs(t, testUID+5, 0), runAs(t, testUID+6, 0)
	p, err := New(Config{Dir: filepath.Join(t.TempDir(), "instances"), AccountLockDir: locks,
		Users: func(slot int) (*User, error) {
			return &User{Name: "test", UID: testUID + slot, GID: testUID + slot}, nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if alive(leftover.Process.Pid) {
		t.Errorf("a process of an account no Hoist holds still runs after New")
	}
	if !alive(running.Process.Pid) {
		t.Errorf("a process of an account another Hoist holds was killed")
	}
}

func TestParseProcStatus(t *testing.T) {
	st, ok := parseProcStatus("Name:\tsleep\nState:\tS (sleeping)\nTgid:\t7\nUid:\t1000\t1001\t1002\t1003\nGid:\t5\t5\t5\t5\n")
	if !ok || st.State != 'S' || st.UIDs != [4]int{1000, 1001, 1002, 1003} || !st.runsAs(1002) || st.runsAs(1003) {
		t.Errorf("parseProcStatus = %+v, %v", st, ok)
	}
	for _, bad := range []string{"", "State:\tS\n", "Uid:\t1 2 3 4\n", "State:\tSS\nUid:\t1 2 3 4\n", "State:\tS\nUid:\t1 2 3\n",
		"State:\tS\nUid:\t1 2 3 -4\n"} {
		if st, ok := parseProcStatus(bad); ok {
			t.Errorf("parseProcStatus(%q) = %+v", bad, st)
		}
	}
	self, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	if st, ok := parseProcStatus(string(self)); !ok || st.UIDs[0] != os.Getuid() || st.State == 'Z' {
		t.Errorf("own status: %+v, %v", st, ok)
	}
}

// FuzzParseProcStatus: any text is read without panicking, and what is
// read is a state and four non-negative UIDs.
func FuzzParseProcStatus(f *testing.F) {
	f.Add("State:\tS (sleeping)\nUid:\t0\t0\t0\t0\n")
	f.Add("Uid:\t1\t2\t3\t4\nState:\tZ (zombie)")
	f.Fuzz(func(t *testing.T, s string) {
		st, ok := parseProcStatus(s)
		if !ok {
			return
		}
		for _, u := range st.UIDs {
			if u < 0 {
				t.Errorf("parseProcStatus(%q) = %+v", s, st)
			}
		}
	})
}

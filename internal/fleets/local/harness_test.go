//go:build linux

package local

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hoistgg/hoist/internal/api"
	"github.com/hoistgg/hoist/internal/fleets"
)

// The tests of this package run real OS processes: /bin/sh scripts written
// into a temporary build. A script reports to the test through a FIFO (one
// line per write, e.g. "started <process ID> <pid>"), so tests wait for
// events, never for time to pass; the hooks an instance reports are
// recorded on the same board.

// waitLimit bounds every wait for an event.
const waitLimit = 10 * time.Second

// board collects what the instances of a fixture report (hooks and script
// lines) and wakes waiters on every change.
type board struct {
	mu      sync.Mutex
	changed chan struct{}
	lines   [][]string
	pidOf   map[string]int // process ID -> pid of its leader ("started" lines)
	pids    []int          // every pid a script reported
	recs    []*recorder
}

func (b *board) update(fn func()) {
	b.mu.Lock()
	defer b.mu.Unlock()
	fn()
	close(b.changed)
	b.changed = make(chan struct{})
}

// waitFor waits until cond (called with b.mu held) holds.
func (b *board) waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.NewTimer(waitLimit)
	defer deadline.Stop()
	for {
		b.mu.Lock()
		ok, ch := cond(), b.changed
		b.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-ch:
		case <-deadline.C:
			t.Fatalf("timed out waiting for %s\n%s", what, b.dump())
		}
	}
}

// dump describes everything reported so far.
func (b *board) dump() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	var s strings.Builder
	for _, r := range b.recs {
		fmt.Fprintf(&s, "instance %s: %s\n", r.id, strings.Join(r.log, "; "))
	}
	for _, l := range b.lines {
		fmt.Fprintf(&s, "script: %s\n", strings.Join(l, " "))
	}
	return s.String()
}

// pid returns the pid a process reported.
func (b *board) pid(t *testing.T, processID string) int {
	t.Helper()
	var pid int
	b.waitFor(t, "process "+processID+" to report its pid", func() bool {
		pid = b.pidOf[processID]
		return pid != 0
	})
	return pid
}

// allPIDs returns every pid a script reported so far.
func (b *board) allPIDs() []int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.pids)
}

// childOf returns the pid of the child a process reported.
func (b *board) childOf(t *testing.T, processID string) int {
	t.Helper()
	var pid int
	b.waitFor(t, "process "+processID+" to report its child", func() bool {
		for _, l := range b.lines {
			if l[0] == "child" && l[1] == processID {
				pid, _ = strconv.Atoi(l[2])
				return true
			}
		}
		return false
	})
	return pid
}

// askMode is what happens when the provider asks a process to end
// (Hooks.AskToEnd).
type askMode int

const (
	// askTerm: the process is told and ends (it gets SIGTERM, as a game
	// server that calls ProcessEnding and exits).
	askTerm askMode = iota
	// askIgnored: the process is told and does nothing.
	askIgnored
	// askFails: the process cannot be told (not connected).
	askFails
)

type stepFail struct {
	step fleets.Step
	err  error
}

type launchFail struct {
	launchPath string
	err        error
	at         time.Time
}

type ask struct {
	processID string
	deadline  time.Time
	at        time.Time
}

// recorder is the fleets.Hooks of one instance: it records every report
// on its board and notes breaches of the Hooks contract.
type recorder struct {
	b    *board
	t    *testing.T
	id   string
	mode askMode

	// guarded by b.mu
	log         []string
	steps       []fleets.Step
	stepFails   []stepFail
	starts      []fleets.ProcessStart
	exits       []fleets.ProcessExit
	exitAt      map[string]time.Time
	launchFails []launchFail
	asks        []ask
	stopped     bool
	problems    []string
}

var _ fleets.Hooks = (*recorder)(nil)

func (r *recorder) note(format string, a ...any) {
	msg := fmt.Sprintf(format, a...)
	r.log = append(r.log, msg)
	if r.stopped {
		r.problems = append(r.problems, "reported after InstanceStopped: "+msg)
	}
}

func (r *recorder) StepStarted(_ context.Context, step fleets.Step) {
	r.b.update(func() {
		r.note("step %s", step)
		if len(r.starts) > 0 || len(r.stepFails) > 0 {
			r.problems = append(r.problems, "step "+string(step)+" after a process or a failure")
		}
		r.steps = append(r.steps, step)
	})
}

func (r *recorder) StepFailed(_ context.Context, step fleets.Step, err error) {
	r.b.update(func() {
		r.note("step %s failed: %v", step, err)
		r.stepFails = append(r.stepFails, stepFail{step, err})
	})
}

func (r *recorder) ProcessStarted(_ context.Context, p fleets.ProcessStart) {
	r.b.update(func() {
		r.note("started %s %s %q", p.ProcessID, p.LaunchPath, p.Parameters)
		if slices.ContainsFunc(r.starts, func(s fleets.ProcessStart) bool { return s.ProcessID == p.ProcessID }) {
			r.problems = append(r.problems, "process "+p.ProcessID+" started twice")
		}
		r.starts = append(r.starts, p)
	})
}

func (r *recorder) LaunchFailed(_ context.Context, launchPath string, err error) {
	r.b.update(func() {
		r.note("launch of %s failed: %v", launchPath, err)
		r.launchFails = append(r.launchFails, launchFail{launchPath, err, time.Now()})
	})
}

func (r *recorder) ProcessExited(_ context.Context, e fleets.ProcessExit) {
	r.b.update(func() {
		r.note("exited %+v", e)
		if r.start(e.ProcessID) == nil {
			r.problems = append(r.problems, "process "+e.ProcessID+" exited but was not started")
		}
		if _, ok := r.exitAt[e.ProcessID]; ok {
			r.problems = append(r.problems, "process "+e.ProcessID+" exited twice")
		}
		r.exits = append(r.exits, e)
		r.exitAt[e.ProcessID] = time.Now()
	})
}

func (r *recorder) AskToEnd(_ context.Context, processID string, deadline time.Time) error {
	var pid int
	r.b.update(func() {
		r.note("asked %s to end", processID)
		r.asks = append(r.asks, ask{processID, deadline, time.Now()})
		pid = r.b.pidOf[processID]
	})
	switch r.mode {
	case askFails:
		return fmt.Errorf("process %s is not connected", processID)
	case askTerm:
		if pid > 0 {
			_ = syscall.Kill(pid, syscall.SIGTERM)
		}
	}
	return nil
}

func (r *recorder) InstanceStopped(context.Context) {
	r.b.update(func() {
		r.note("instance stopped")
		for _, s := range r.starts {
			if _, ok := r.exitAt[s.ProcessID]; !ok {
				r.problems = append(r.problems, "InstanceStopped before process "+s.ProcessID+" exited")
			}
		}
		r.stopped = true
	})
}

// start returns the start of a process (nil if none); b.mu must be held.
func (r *recorder) start(id string) *fleets.ProcessStart {
	for i := range r.starts {
		if r.starts[i].ProcessID == id {
			return &r.starts[i]
		}
	}
	return nil
}

// exit returns the exit of a process (nil if none); b.mu must be held.
func (r *recorder) exit(id string) *fleets.ProcessExit {
	for i := range r.exits {
		if r.exits[i].ProcessID == id {
			return &r.exits[i]
		}
	}
	return nil
}

// waitStarts waits for n processes to have started and reported their
// pids, and returns the first n starts.
func (r *recorder) waitStarts(n int) []fleets.ProcessStart {
	r.t.Helper()
	var out []fleets.ProcessStart
	r.b.waitFor(r.t, fmt.Sprintf("%d processes of %s to start", n, r.id), func() bool {
		if len(r.starts) < n {
			return false
		}
		for _, s := range r.starts[:n] {
			if r.b.pidOf[s.ProcessID] == 0 {
				return false
			}
		}
		out = slices.Clone(r.starts[:n])
		return true
	})
	return out
}

// waitExit waits for a process to exit and returns how, and when it was
// reported.
func (r *recorder) waitExit(id string) (fleets.ProcessExit, time.Time) {
	r.t.Helper()
	var e fleets.ProcessExit
	var at time.Time
	r.b.waitFor(r.t, "process "+id+" to exit", func() bool {
		if p := r.exit(id); p != nil {
			e, at = *p, r.exitAt[id]
			return true
		}
		return false
	})
	return e, at
}

// waitStopped waits for InstanceStopped.
func (r *recorder) waitStopped() {
	r.t.Helper()
	r.b.waitFor(r.t, "instance "+r.id+" to stop", func() bool { return r.stopped })
}

// snapshot runs fn with the board locked.
func (r *recorder) snapshot(fn func()) {
	r.b.mu.Lock()
	defer r.b.mu.Unlock()
	fn()
}

// fixture is a Provider over a temporary directory, a build to write
// scripts into, and the report FIFO.
type fixture struct {
	t     *testing.T
	p     *Provider
	cfg   Config
	build string
	fifo  string
	b     *board
	// ask is the askMode of the instances started next.
	ask askMode
}

// newFixture returns a provider with short timers (mod adjusts them).
func newFixture(t *testing.T, mod func(*Config)) *fixture {
	t.Helper()
	cfg := Config{Dir: filepath.Join(t.TempDir(), "instances"), Stagger: time.Millisecond,
		TerminateGrace: time.Hour, ShutdownGrace: 200 * time.Millisecond, KillGrace: time.Hour,
		MinUptime: time.Hour, CrashBackoff: 50 * time.Millisecond, MaxBackoff: 200 * time.Millisecond,
		InstallTimeout: time.Minute}
	if mod != nil {
		mod(&cfg)
	}
	p, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{t: t, p: p, cfg: p.cfg, build: t.TempDir(), fifo: filepath.Join(t.TempDir(), "report"),
		b: &board{changed: make(chan struct{}), pidOf: map[string]int{}}}
	if err := syscall.Mkfifo(f.fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	// Opened read-write, the FIFO never reports end of file and writers
	// never block on opening it.
	fh, err := os.OpenFile(f.fifo, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	read := make(chan struct{})
	go func() {
		defer close(read)
		sc := bufio.NewScanner(fh)
		for sc.Scan() {
			fields := strings.Fields(sc.Text())
			if len(fields) == 0 {
				continue
			}
			if len(fields) == 3 {
				if pid, err := strconv.Atoi(fields[2]); err == nil {
					fields[2] = strconv.Itoa(hostPID(pid, fields[1], f.cfg.Dir))
				}
			}
			f.b.update(func() {
				f.b.lines = append(f.b.lines, fields)
				if len(fields) == 3 {
					if pid, err := strconv.Atoi(fields[2]); err == nil {
						f.b.pids = append(f.b.pids, pid)
						if fields[0] == "started" {
							f.b.pidOf[fields[1]] = pid
						}
					}
				}
			})
		}
	}()
	t.Cleanup(func() {
		f.close()
		f.b.mu.Lock()
		pids := slices.Clone(f.b.pids)
		for _, r := range f.b.recs {
			for _, p := range r.problems {
				t.Errorf("instance %s: %s", r.id, p)
			}
			if !r.stopped {
				t.Errorf("instance %s never reported InstanceStopped", r.id)
			}
		}
		f.b.mu.Unlock()
		waitDead(t, pids...)
		fh.Close()
		<-read
	})
	return f
}

// close closes the provider, failing the test if that takes too long.
func (f *fixture) close() time.Duration {
	f.t.Helper()
	start := time.Now()
	done := make(chan error, 1)
	go func() { done <- f.p.Close() }()
	timer := time.NewTimer(waitLimit)
	defer timer.Stop()
	select {
	case err := <-done:
		if err != nil {
			f.t.Errorf("Close: %v", err)
		}
	case <-timer.C:
		f.t.Fatalf("Close did not return within %s\n%s", waitLimit, f.b.dump())
	}
	return time.Since(start)
}

// script writes an executable shell script into the build; it can report
// with `report WORDS...` and knows $R, the FIFO.
func (f *fixture) script(name, body string) {
	f.t.Helper()
	text := "#!/bin/sh\nR=" + shellQuote(f.fifo) + "\nreport() { echo \"$*\" > \"$R\"; }\n" + body
	f.file(name, text, 0o755)
}

// file writes a file into the build.
func (f *fixture) file(name, content string, mode os.FileMode) {
	f.t.Helper()
	writeTree(f.t, f.build, map[string]string{name: content}, map[string]os.FileMode{name: mode})
}

// Script bodies.
const (
	// sleeper reports and sleeps; SIGTERM ends it.
	sleeper = "report started $GAMELIFT_SDK_PROCESS_ID $$\nexec sleep 600\n"
	// stubborn ignores SIGTERM and forks a child that ignores it too.
	stubborn = "trap '' TERM\nsleep 600 &\nreport child $GAMELIFT_SDK_PROCESS_ID $!\n" +
		"report started $GAMELIFT_SDK_PROCESS_ID $$\nwait\n"
)

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// recorder returns a new recorder on the fixture's board.
func (f *fixture) recorder(instanceID string) *recorder {
	r := &recorder{b: f.b, t: f.t, id: instanceID, mode: f.ask, exitAt: map[string]time.Time{}}
	f.b.update(func() { f.b.recs = append(f.b.recs, r) })
	return r
}

// spec is an instance spec of the fixture's build.
func (f *fixture) spec(fleetID, instanceID string, sps ...api.ServerProcess) fleets.InstanceSpec {
	return fleets.InstanceSpec{InstanceRef: fleets.InstanceRef{FleetID: fleetID, InstanceID: instanceID, Location: "us-west-2"},
		BuildDir: f.build, RuntimeConfiguration: api.RuntimeConfiguration{ServerProcesses: sps}}
}

// start starts an instance of the fixture's build.
func (f *fixture) start(fleetID, instanceID string, sps ...api.ServerProcess) *recorder {
	f.t.Helper()
	return f.startSpec(f.spec(fleetID, instanceID, sps...))
}

func (f *fixture) startSpec(spec fleets.InstanceSpec) *recorder {
	f.t.Helper()
	r := f.recorder(spec.InstanceID)
	if err := f.p.StartInstance(context.Background(), spec, r); err != nil {
		f.t.Fatal(err)
	}
	return r
}

// instance returns the provider's running instance (nil once it is gone).
func (f *fixture) instance(id string) *instance {
	f.p.mu.Lock()
	defer f.p.mu.Unlock()
	return f.p.instances[id]
}

// hostPID returns the PID in the test's namespace of the process of the
// instances under dir that reported pid ($$ of a script): under an init,
// that is its PID in its own namespace. The process is the one whose
// innermost PID is pid, whose working directory is under dir and, unless
// processID is "-", whose GAMELIFT_SDK_PROCESS_ID is processID. It returns
// -1 when there is none (it has ended) or more than one.
func hostPID(pid int, processID, dir string) int {
	if real, err := filepath.EvalSymlinks(dir); err == nil {
		dir = real
	}
	found := -1
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		hp, err := strconv.Atoi(e.Name())
		if err != nil || innermostPID(hp) != pid {
			continue
		}
		cwd, err := os.Readlink("/proc/" + e.Name() + "/cwd")
		if err != nil || !strings.HasPrefix(cwd, dir+"/") {
			continue
		}
		if processID != "-" {
			env := procEnviron(e.Name())
			if !bytes.Contains(append([]byte{0}, env...), []byte("\x00GAMELIFT_SDK_PROCESS_ID="+processID+"\x00")) {
				continue
			}
		}
		if found != -1 {
			return -1
		}
		found = hp
	}
	return found
}

// procEnviron reads a process's environment. A process in the middle of
// an exec (a script that reported its PID and then runs `exec sleep`)
// shows an empty one for an instant, so an empty read is tried again
// for up to 50 ms while the process exists.
func procEnviron(pid string) []byte {
	for range 50 {
		env, err := os.ReadFile("/proc/" + pid + "/environ")
		if len(env) > 0 || (err != nil && errors.Is(err, fs.ErrNotExist)) {
			return env
		}
		time.Sleep(time.Millisecond) // polling interval, not a wait for time to pass
	}
	return nil
}

// innermostPID returns a process's PID in its own PID namespace (the last
// of the NSpid line of its status), or 0.
func innermostPID(pid int) int {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0
	}
	for line := range strings.Lines(string(b)) {
		if rest, ok := strings.CutPrefix(line, "NSpid:"); ok {
			f := strings.Fields(rest)
			if len(f) == 0 {
				return 0
			}
			n, _ := strconv.Atoi(f[len(f)-1])
			return n
		}
	}
	return 0
}

// leader returns the PID of what the provider started for a running
// process: its init, or the process itself when not confined.
func (f *fixture) leader(processID string) int {
	f.p.mu.Lock()
	in := f.p.processes[processID]
	f.p.mu.Unlock()
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.procs[processID].child.pid()
}

// alive reports whether a process exists and is not a zombie.
func alive(pid int) bool {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(data, ')')
	if i < 0 || i+2 >= len(data) {
		return true
	}
	return data[i+2] != 'Z' && data[i+2] != 'X'
}

// waitDead waits until none of pids is alive (a killed process may take a
// moment to die; its death is not an event the test can wait on).
func waitDead(t *testing.T, pids ...int) {
	t.Helper()
	deadline := time.Now().Add(waitLimit)
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for {
		var left []int
		for _, pid := range pids {
			if alive(pid) {
				left = append(left, pid)
			}
		}
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("processes %v are still alive", left)
		}
		<-tick.C
	}
}

func rc(sps ...api.ServerProcess) api.RuntimeConfiguration {
	return api.RuntimeConfiguration{ServerProcesses: sps}
}

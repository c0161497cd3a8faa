package local

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/hoistgg/hoist/internal/fleets"
)

// process is one running server process.
type process struct {
	id      string
	slot    slot
	child   child // the process, or the init that runs it
	started time.Time
	exited  chan struct{} // closed once it ended and was reported
	forget  func()        // forgets the record of its process group

	mu         sync.Mutex
	stopReason string // set when Hoist asked it to end
	killed     bool
	ending     bool
}

// launch starts one server process of a slot. A launch that fails is
// reported (LaunchFailed) and the slot waits before trying again.
func (in *instance) launch(s slot) {
	now := time.Now()
	in.mu.Lock()
	in.lastLaunch = now
	in.mu.Unlock()
	id := "process-" + in.p.cfg.NewID()
	if in.p.cfg.HostPaths {
		id = in.p.cfg.NewID()
	}
	in.p.addProcess(id, in) // before it starts: it may connect at once
	pr, err := in.start(id, s)
	if err != nil {
		in.p.removeProcess(id)
		in.failed(s, now)
		in.hooks.LaunchFailed(in.ctx, s.LaunchPath, &fleets.LaunchPathError{LaunchPath: s.LaunchPath, Err: err})
		return
	}
	in.mu.Lock()
	in.procs[id] = pr
	// The stagger counts from when the process started: a slow fork and
	// exec must not bring the next launch closer.
	in.lastLaunch = pr.started
	in.mu.Unlock()
	in.hooks.ProcessStarted(in.ctx, fleets.ProcessStart{ProcessID: id, LaunchPath: s.LaunchPath,
		Parameters: s.Parameters, OutputPath: in.outputPath(id), StartedAt: pr.started})
	go in.wait(pr)
}

func (in *instance) outputPath(id string) string {
	return filepath.Join(in.layout.Dir, "logs", id+".log")
}

// start starts a process in its own process group (under its init, in
// namespaces of its own, when the provider confines processes), its output
// in its log file.
func (in *instance) start(id string, s slot) (*process, error) {
	path, dir, err := in.launchPath(s.LaunchPath)
	if err != nil {
		return nil, err
	}
	out, err := os.OpenFile(in.outputPath(id), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	defer out.Close() // the child has its own descriptor
	for attempt := 1; ; attempt++ {
		cmd := exec.Command(path, splitParameters(s.Parameters)...)
		cmd.Dir, cmd.Stdout, cmd.Stderr = dir, out, out
		cmd.Env = processEnv(in.p.path, in.home(), in.env(), id)
		setProcAttr(cmd, in.account())
		ch, err := in.p.startChild(cmd)
		if err == nil {
			started := time.Now()
			forget := in.p.recordGroup(ch.pid())
			return &process{id: id, slot: s, child: ch, started: started, exited: make(chan struct{}), forget: forget}, nil
		}
		// ETXTBSY: a process forked elsewhere in Hoist (another instance's
		// launch) while the build's files were being written still holds a
		// copy of a write descriptor of this executable until it execs;
		// the Go runtime cannot prevent it (golang/go#22315). It clears in
		// milliseconds.
		if !errors.Is(err, syscall.ETXTBSY) || attempt == textBusyAttempts {
			return nil, err
		}
		time.Sleep(time.Duration(attempt) * 5 * time.Millisecond)
	}
}

// launchPath returns the file a launch path names and the directory its
// process starts in: under the game root; with HostPaths, the absolute
// path itself, started in home/.
func (in *instance) launchPath(lp string) (path, dir string, err error) {
	if !in.p.cfg.HostPaths {
		path, err = hostPath(in.layout.GameRoot, lp)
		return path, in.layout.GameRoot, err
	}
	if !filepath.IsAbs(lp) || filepath.Clean(lp) != lp {
		return "", "", errors.New("is not an absolute, clean path on this host")
	}
	return lp, in.home(), nil
}

// env is the instance's environment for its processes (UpdateEnv changes
// it).
func (in *instance) env() []string {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.spec.Env
}

// textBusyAttempts bounds the launches tried while the executable is busy
// (about a quarter of a second in all).
const textBusyAttempts = 10

// wait waits for a process to end, kills whatever it left in its process
// group (and reaps what of it Hoist inherited), and reports the exit.
func (in *instance) wait(pr *process) {
	st, err := pr.child.wait()
	_ = signalGroup(pr.child.pid(), killSignal)
	reapGroup(pr.child.pid())
	pr.forget()
	now := time.Now()
	if err != nil {
		in.p.log.Warn("local: waiting for a process", "process", pr.id, "err", err)
	}
	e := fleets.ProcessExit{ProcessID: pr.id, ExitCode: st.code, Signal: st.signal, Uptime: now.Sub(pr.started)}
	pr.mu.Lock()
	e.StopReason, e.Killed = pr.stopReason, pr.killed
	pr.mu.Unlock()
	if e.StopReason == "" && e.Uptime < in.p.cfg.MinUptime && e.ExitCode != 0 {
		in.failed(pr.slot, now)
	} else if e.StopReason == "" {
		in.mu.Lock()
		delete(in.failures, pr.slot)
		in.mu.Unlock()
	}
	in.mu.Lock()
	delete(in.procs, pr.id)
	in.mu.Unlock()
	in.p.removeProcess(pr.id)
	in.hooks.ProcessExited(in.ctx, e)
	close(pr.exited)
	in.signal()
}

// endProcess ends a process: it is asked to end (TerminateProcess) and
// killed with its process group if it has not ended within the grace
// period; if it cannot be asked, it gets SIGTERM and KillGrace. For a
// process that is already ending, force kills it at once (a second
// StopProcess); otherwise it keeps its deadline, shortened to the current
// grace from now if that is sooner (StopInstance, Close).
func (in *instance) endProcess(pr *process, reason string, force bool) {
	pr.mu.Lock()
	again := pr.ending
	pr.ending = true
	if pr.stopReason == "" {
		pr.stopReason = reason
	}
	pr.mu.Unlock()
	grace := in.p.grace()
	switch {
	case again && force:
		in.kill(pr)
		return
	case again:
		go in.killAfter(pr, grace)
		return
	}
	go func() {
		if err := in.hooks.AskToEnd(in.ctx, pr.id, time.Now().Add(grace)); err != nil {
			_ = signalGroup(pr.child.pid(), termSignal)
			grace = min(grace, in.p.cfg.KillGrace)
		}
		in.killAfter(pr, grace)
	}()
}

// killAfter kills a process's group unless it ends within grace.
func (in *instance) killAfter(pr *process, grace time.Duration) {
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-pr.exited:
	case <-t.C:
		in.kill(pr)
	}
}

// kill kills a process's whole group.
func (in *instance) kill(pr *process) {
	pr.mu.Lock()
	pr.killed = true
	pr.mu.Unlock()
	select {
	case <-pr.exited:
	default:
		_ = signalGroup(pr.child.pid(), killSignal)
	}
}

package local

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"time"

	"github.com/hoistgg/hoist/internal/api"
	"github.com/hoistgg/hoist/internal/fleets"
)

// instance is one running instance: its setup, then a supervisor loop that
// keeps the runtime configuration's processes running until it is stopped.
type instance struct {
	p      *Provider
	spec   fleets.InstanceSpec
	hooks  fleets.Hooks
	layout fleets.InstanceLayout
	ctx    context.Context // for hooks; never canceled
	// stopCtx is canceled when the instance is asked to stop (it ends the
	// build copy and the install script early).
	stopCtx    context.Context
	cancelStop context.CancelFunc
	wake       chan struct{}
	done       chan struct{}
	// slot is the instance's user slot (Config.Users; -1 until
	// takeAccount gives it one), accountLock its account's lock.
	slot        int
	accountLock io.Closer

	mu         sync.Mutex
	user       *User // the slot's account, set by placeBuild (nil: Hoist's user)
	rc         api.RuntimeConfiguration
	procs      map[string]*process
	stopping   bool
	stopReason string
	notBefore  map[slot]time.Time
	failures   map[slot]int
	lastLaunch time.Time
}

func newInstance(p *Provider, spec fleets.InstanceSpec, hooks fleets.Hooks) *instance {
	stopCtx, cancel := context.WithCancel(context.Background())
	return &instance{p: p, spec: spec, hooks: hooks, layout: p.Layout(spec.FleetID, spec.InstanceID),
		ctx: context.Background(), stopCtx: stopCtx, cancelStop: cancel, slot: -1,
		wake: make(chan struct{}, 1), done: make(chan struct{}),
		rc: spec.RuntimeConfiguration, procs: map[string]*process{},
		notBefore: map[slot]time.Time{}, failures: map[slot]int{}}
}

// signal wakes the supervisor loop.
func (in *instance) signal() {
	select {
	case in.wake <- struct{}{}:
	default:
	}
}

func (in *instance) setRuntime(rc api.RuntimeConfiguration) {
	in.mu.Lock()
	changed := !reflect.DeepEqual(in.rc, rc)
	in.rc = rc
	in.mu.Unlock()
	if changed {
		in.signal()
	}
}

// stop asks the instance to stop; the first reason given is kept.
func (in *instance) stop(reason string) {
	in.mu.Lock()
	if !in.stopping {
		in.stopping, in.stopReason = true, reason
	}
	in.mu.Unlock()
	in.cancelStop()
	in.signal()
}

func (in *instance) isStopping() bool {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.stopping
}

// run sets the instance up, supervises its processes, and tears it down.
func (in *instance) run() {
	defer close(in.done)
	if step, err := in.setup(); err != nil {
		if !in.isStopping() {
			in.hooks.StepFailed(in.ctx, step, err)
		}
	} else {
		in.supervise()
	}
	in.stopAll()
	if in.accountLock != nil {
		in.accountLock.Close() // no process of the instance is left
	}
	if !in.p.cfg.KeepDirs {
		if err := os.RemoveAll(in.layout.Dir); err != nil {
			in.p.log.Warn("local: removing an instance directory", "instance", in.spec.InstanceID, "err", err)
		}
	}
	in.p.removeInstance(in.spec.InstanceID)
	in.hooks.InstanceStopped(in.ctx)
}

// errStopped ends setup when the instance is stopped meanwhile.
var errStopped = errors.New("local: the instance was stopped")

// setup places the build, runs its install script, checks the launch paths
// and writes the certificate files. It returns the step that failed.
func (in *instance) setup() (fleets.Step, error) {
	steps := []struct {
		step fleets.Step
		run  func() error
	}{
		{fleets.StepDownload, in.placeBuild},
		{fleets.StepInstall, in.install},
		{fleets.StepValidate, in.validate},
		{fleets.StepBuild, in.prepare},
	}
	for _, s := range steps {
		if in.isStopping() {
			return s.step, errStopped
		}
		if s.step == fleets.StepInstall && !in.hasInstallScript() {
			continue
		}
		in.hooks.StepStarted(in.ctx, s.step)
		if err := s.run(); err != nil {
			return s.step, err
		}
	}
	if in.isStopping() {
		return fleets.StepActivate, errStopped
	}
	in.hooks.StepStarted(in.ctx, fleets.StepActivate)
	return "", nil
}

// placeBuild makes the instance's directories and copies the build into
// game/. With Config.Users, the fleet's and the instance's directories are
// root's and traversable only (0711), logs/ is root's alone (0700: Hoist
// writes there, and must not follow links a game could plant), and game/
// and home/ are the instance's account's (0700).
func (in *instance) placeBuild() error {
	if in.p.cfg.Users != nil {
		if err := in.takeAccount(); err != nil {
			return err
		}
	}
	u := in.account()
	for _, d := range []string{filepath.Join(in.layout.Dir, "logs"), in.home()} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	if u != nil {
		for d, mode := range map[string]os.FileMode{filepath.Dir(in.layout.Dir): 0o711, in.layout.Dir: 0o711,
			filepath.Join(in.layout.Dir, "logs"): 0o700, in.home(): 0o700} {
			if err := os.Chmod(d, mode); err != nil {
				return err
			}
		}
	}
	if in.p.cfg.HostPaths {
		if u == nil {
			return nil
		}
		return os.Lchown(in.home(), u.UID, u.GID)
	}
	// The walk does not follow symbolic links: resolve a build directory
	// that is one.
	src, err := filepath.EvalSymlinks(in.spec.BuildDir)
	if err != nil {
		return err
	}
	// Hard links would give the user the build's own files.
	if err := copyTree(in.stopCtx, src, in.layout.GameRoot, in.p.cfg.LinkBuild && u == nil); err != nil {
		return err
	}
	if u == nil {
		return nil
	}
	if err := os.Chmod(in.layout.GameRoot, 0o700); err != nil {
		return err
	}
	if err := chownTree(in.layout.GameRoot, u); err != nil {
		return err
	}
	return os.Lchown(in.home(), u.UID, u.GID)
}

// account is the user the instance's processes run as (nil: Hoist's).
func (in *instance) account() *User {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.user
}

// home is the HOME of the instance's processes.
func (in *instance) home() string { return filepath.Join(in.layout.Dir, "home") }

// installScript is the script GameLift runs once per instance on Linux
// builds, at the build's root.
const installScript = "install.sh"

func (in *instance) hasInstallScript() bool {
	st, err := os.Stat(filepath.Join(in.layout.GameRoot, installScript))
	return err == nil && st.Mode().IsRegular()
}

// install runs the build's install script with sh, in the game root, its
// output in logs/install.log. A failure's error ends with the end of that
// output (the instance's directory is removed after a failed setup).
func (in *instance) install() error {
	ctx, cancel := context.WithTimeout(in.stopCtx, in.p.cfg.InstallTimeout)
	defer cancel()
	logFile := filepath.Join(in.layout.Dir, "logs", "install.log")
	out, err := os.Create(logFile)
	if err != nil {
		return err
	}
	defer out.Close()
	cmd := exec.Command("/bin/sh", installScript)
	cmd.Dir, cmd.Stdout, cmd.Stderr = in.layout.GameRoot, out, out
	cmd.Env = baseEnv(in.p.path, in.home())
	setProcAttr(cmd, in.account())
	ch, err := in.p.startChild(cmd)
	if err == nil {
		pid := ch.pid()
		forget := in.p.recordGroup(pid)
		cancel := context.AfterFunc(ctx, func() { _ = signalGroup(pid, killSignal) })
		var st exitStatus
		if st, err = ch.wait(); err == nil {
			err = st.err()
		}
		cancel()
		_ = signalGroup(pid, killSignal)
		reapGroup(pid)
		forget()
	}
	if ctx.Err() == context.DeadlineExceeded {
		return fmt.Errorf("%s did not finish within %s%s", installScript, in.p.cfg.InstallTimeout, outputTail(logFile))
	}
	if err != nil {
		return fmt.Errorf("%s: %w%s", installScript, err, outputTail(logFile))
	}
	return nil
}

// tailSize is how much of a failed install script's output its error
// quotes.
const tailSize = 512

// outputTail returns the last tailSize bytes of a file as
// `; output ends with "..."` ("" when the file is empty or unreadable).
func outputTail(file string) string {
	f, err := os.Open(file)
	if err != nil {
		return ""
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil || st.Size() == 0 {
		return ""
	}
	off := max(st.Size()-tailSize, 0)
	buf := make([]byte, st.Size()-off)
	n, _ := f.ReadAt(buf, off)
	text := strings.TrimSpace(strings.ToValidUTF8(string(buf[:n]), "?"))
	if text == "" {
		return ""
	}
	return fmt.Sprintf("; output ends with %q", text)
}

// validate checks that every launch path names a file in the build (with
// HostPaths, each launch checks its own).
func (in *instance) validate() error {
	if in.p.cfg.HostPaths {
		return nil
	}
	for _, w := range wants(in.runtime()) {
		if err := in.checkLaunchPath(w.Slot.LaunchPath); err != nil {
			return &fleets.LaunchPathError{LaunchPath: w.Slot.LaunchPath, Err: err}
		}
	}
	return nil
}

// checkLaunchPath checks that a launch path is a regular file inside the
// game root (symbolic links resolved).
func (in *instance) checkLaunchPath(lp string) error {
	p, err := hostPath(in.layout.GameRoot, lp)
	if err != nil {
		return err
	}
	real, err := filepath.EvalSymlinks(p)
	if err != nil {
		return errors.New("does not exist in the build")
	}
	root, err := filepath.EvalSymlinks(in.layout.GameRoot)
	if err != nil {
		return err
	}
	if rel, err := filepath.Rel(root, real); err != nil || !filepath.IsLocal(rel) {
		return errors.New("leads out of the game directory")
	}
	st, err := os.Stat(real)
	if err != nil || !st.Mode().IsRegular() {
		return errors.New("is not a file")
	}
	return nil
}

// prepare writes the instance's certificate files.
func (in *instance) prepare() error {
	c := in.spec.Certificate
	if c == nil {
		return nil
	}
	dir := in.layout.CertificateDir
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	files := map[string][]byte{"certificate.pem": c.Certificate, "certificateChain.pem": c.Chain,
		"privateKey.pem": c.PrivateKey, "rootCertificate.pem": c.Root}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			return err
		}
	}
	if u := in.account(); u != nil {
		return chownTree(dir, u)
	}
	return nil
}

func (in *instance) runtime() api.RuntimeConfiguration {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.rc
}

// supervise keeps the runtime configuration's processes running until the
// instance is stopped.
func (in *instance) supervise() {
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		in.mu.Lock()
		if in.stopping {
			in.mu.Unlock()
			return
		}
		s, ok, wait := nextLaunch(in.planInput(time.Now()))
		in.mu.Unlock()
		if ok {
			in.launch(s)
			continue
		}
		if wait <= 0 {
			wait = time.Hour
		}
		timer.Reset(wait)
		select {
		case <-in.wake:
		case <-timer.C:
		}
	}
}

// planInput snapshots the supervisor's state; in.mu must be held.
func (in *instance) planInput(now time.Time) planInput {
	running := map[slot]int{}
	for _, pr := range in.procs {
		running[pr.slot]++
	}
	return planInput{Now: now, Wants: wants(in.rc), Running: running, NotBefore: in.notBefore,
		LastLaunch: in.lastLaunch, Stagger: in.p.cfg.Stagger}
}

// failed records that a slot's process failed (crashed early, or could not
// start): the slot waits before launching again.
func (in *instance) failed(s slot, now time.Time) {
	in.mu.Lock()
	in.failures[s]++
	in.notBefore[s] = now.Add(backoff(in.failures[s], in.p.cfg.CrashBackoff, in.p.cfg.MaxBackoff))
	in.mu.Unlock()
}

// stopAll ends every process (TerminateProcess, grace, kill) and waits for
// them.
func (in *instance) stopAll() {
	in.mu.Lock()
	reason := in.stopReason
	procs := make([]*process, 0, len(in.procs))
	for _, pr := range in.procs {
		procs = append(procs, pr)
	}
	in.mu.Unlock()
	for _, pr := range procs {
		in.endProcess(pr, reason, false)
	}
	for _, pr := range procs {
		<-pr.exited
	}
}

// hurry gives the processes that are already ending at most the current
// grace (ShutdownGrace once Close runs) before they are killed.
func (in *instance) hurry() {
	in.mu.Lock()
	procs := make([]*process, 0, len(in.procs))
	for _, pr := range in.procs {
		procs = append(procs, pr)
	}
	in.mu.Unlock()
	grace := in.p.grace()
	for _, pr := range procs {
		pr.mu.Lock()
		ending := pr.ending
		pr.mu.Unlock()
		if ending {
			go in.killAfter(pr, grace)
		}
	}
}

// killProcess kills one process of this instance at once, without asking
// it to end; false if it has none of that ID.
func (in *instance) killProcess(id, reason string) bool {
	in.mu.Lock()
	pr := in.procs[id]
	in.mu.Unlock()
	if pr == nil {
		return false
	}
	pr.mu.Lock()
	pr.ending = true
	if pr.stopReason == "" {
		pr.stopReason = reason
	}
	pr.mu.Unlock()
	in.kill(pr)
	return true
}

// stopProcess ends one process of this instance; false if it has none of
// that ID.
func (in *instance) stopProcess(id, reason string) bool {
	in.mu.Lock()
	pr := in.procs[id]
	in.mu.Unlock()
	if pr == nil {
		return false
	}
	in.endProcess(pr, reason, true)
	return true
}

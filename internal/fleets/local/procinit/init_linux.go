//go:build linux

package procinit

import (
	"errors"
	"io"
	"os"
	"os/signal"
	"runtime"
	"syscall"
)

// init turns the process into the init when it was started as one, before
// main (or a test binary's TestMain) runs.
func init() {
	if len(os.Args) == 2 && os.Args[0] == argv0 && (os.Args[1] == modeRun || os.Args[1] == modeProbe) {
		os.Exit(runInit(os.Args[1]))
	}
}

// Exit statuses of the init itself (the process's own status goes in its
// report).
const (
	initOK       = 0
	initFailed   = 125 // the process could not be started
	initNoReport = 126 // the report pipe is missing
)

// prctl options and values the init uses.
const (
	prSetDumpable        = 4
	prCapAmbient         = 47
	prCapAmbientClearAll = 4
)

// forwarded are the signals the init passes on to the process's group.
var forwarded = []os.Signal{syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP, syscall.SIGQUIT,
	syscall.SIGUSR1, syscall.SIGUSR2}

// runInit is the init: it reads the spec, sets the namespaces up, runs the
// process (in modeRun) and reports.
func runInit(mode string) int {
	runtime.GOMAXPROCS(1)
	// Nothing the process starts may inherit the pipes to Hoist, nor read
	// or trace the init (it runs as the same user when Hoist is not root).
	syscall.CloseOnExec(specFD)
	syscall.CloseOnExec(statusFD)
	_, _, _ = syscall.RawSyscall(syscall.SYS_PRCTL, prSetDumpable, 0, 0)
	var st syscall.Stat_t
	if syscall.Fstat(statusFD, &st) != nil {
		return initNoReport
	}
	out := os.NewFile(statusFD, "report")
	say := func(r report) { _, _ = io.WriteString(out, r.String()) }
	fail := func(step string, err error) int {
		var errno syscall.Errno
		if !errors.As(err, &errno) {
			errno = syscall.EINVAL
		}
		say(report{Kind: reportFailed, Step: step, N: int(errno)})
		return initFailed
	}
	sp, err := readSpec(os.NewFile(specFD, "spec"))
	if err != nil {
		return fail("spec", err)
	}
	if step, err := setUpNamespaces(); err != nil {
		return fail(step, err)
	}
	if mode == modeProbe {
		say(report{Kind: reportStarted})
		return initOK
	}
	// Signals that come before the handler is set would be dropped (PID 1
	// ignores what it does not handle): set it before the process starts.
	sigs := make(chan os.Signal, 16)
	signal.Notify(sigs, forwarded...)
	pid, err := startProcess(sp)
	if err != nil {
		return fail("exec", err)
	}
	say(report{Kind: reportStarted, N: pid})
	ended := make(chan syscall.WaitStatus, 1)
	go reap(pid, ended)
	for {
		select {
		case sig := <-sigs:
			s := sig.(syscall.Signal)
			if syscall.Kill(-pid, s) != nil {
				_ = syscall.Kill(pid, s)
			}
		case ws := <-ended:
			if ws.Signaled() {
				say(report{Kind: reportSignaled, N: int(ws.Signal())})
			} else {
				say(report{Kind: reportExited, N: ws.ExitStatus()})
			}
			// The kernel kills what is left in the namespace when its
			// init exits.
			return initOK
		}
	}
}

// readSpec reads and closes the spec pipe.
func readSpec(f *os.File) (*spec, error) {
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxSpec+1))
	if err != nil {
		return nil, err
	}
	return decodeSpec(data)
}

// setUpNamespaces makes every mount private to the namespace (so that what
// follows does not reach the host) and mounts a /proc that shows only the
// namespace's processes. It returns the step that failed.
func setUpNamespaces() (string, error) {
	if err := syscall.Mount("", "/", "", syscall.MS_REC|syscall.MS_PRIVATE, ""); err != nil {
		return "mount-private", err
	}
	if err := syscall.Mount("proc", "/proc", "proc", syscall.MS_NOSUID|syscall.MS_NODEV|syscall.MS_NOEXEC, ""); err != nil {
		return "mount-proc", err
	}
	return "", nil
}

// startProcess starts the spec's process in a process group of its own,
// its standard descriptors the init's, with no capability (Hoist gave the
// init an ambient one when Hoist is not root: it must not pass on).
func startProcess(sp *spec) (int, error) {
	_, _, errno := syscall.RawSyscall6(syscall.SYS_PRCTL, prCapAmbient, prCapAmbientClearAll, 0, 0, 0, 0)
	if errno != 0 && errno != syscall.EINVAL { // EINVAL: no ambient capabilities (before Linux 4.3)
		return 0, errno
	}
	attr := &syscall.SysProcAttr{Setpgid: true}
	if c := sp.Credential; c != nil {
		attr.Credential = &syscall.Credential{Uid: c.UID, Gid: c.GID, Groups: c.Groups}
		if attr.Credential.Groups == nil {
			attr.Credential.Groups = []uint32{}
		}
	}
	return syscall.ForkExec(sp.Path, sp.Args, &syscall.ProcAttr{Dir: sp.Dir, Env: sp.Env,
		Files: []uintptr{0, 1, 2}, Sys: attr})
}

// reap waits for every child of the init (orphans of the namespace come to
// it) and sends the process's status when it ends.
func reap(pid int, ended chan<- syscall.WaitStatus) {
	for {
		var ws syscall.WaitStatus
		got, err := syscall.Wait4(-1, &ws, 0, nil)
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if err != nil { // ECHILD: the process is gone unseen; cannot happen
			ended <- syscall.WaitStatus(0x7f00) // exit code 127
			return
		}
		if got == pid {
			ended <- ws
			return
		}
	}
}

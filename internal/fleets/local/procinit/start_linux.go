//go:build linux

package procinit

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"time"
)

// startTimeout bounds how long an init may take to start its process.
const startTimeout = 30 * time.Second

// capSysAdmin is CAP_SYS_ADMIN, which mounting /proc needs.
const capSysAdmin = 21

// Confiner starts commands under an init in namespaces of their own.
type Confiner struct {
	// userNS: Hoist is not root, so the init gets a user namespace too,
	// where Hoist's user and group map to themselves, and CAP_SYS_ADMIN
	// (ambient) to mount /proc; the process runs as Hoist's user, with no
	// capability.
	userNS   bool
	uid, gid int
}

// New returns a Confiner once an init could set its namespaces up on this
// system; the error says why not (no namespaces for this user, a kernel
// without them, a /proc that cannot be mounted in a user namespace).
func New() (*Confiner, error) {
	c := &Confiner{userNS: os.Geteuid() != 0, uid: os.Geteuid(), gid: os.Getegid()}
	if err := c.probe(); err != nil {
		return nil, err
	}
	return c, nil
}

// UserNamespace reports whether the inits get a user namespace (Hoist is
// not root).
func (c *Confiner) UserNamespace() bool { return c.userNS }

// probe starts an init that only sets its namespaces up.
func (c *Confiner) probe() error {
	p, err := c.start(&exec.Cmd{Path: "/bin/true", Args: []string{"true"}, Env: []string{}}, modeProbe)
	if err != nil {
		return err
	}
	defer p.pipe.Close()
	return p.Init.Wait()
}

// Process is a command running under its init.
type Process struct {
	// Init is the init's command: its PID leads the process group to
	// signal. SIGTERM (and the other signals the init forwards) reach the
	// process's own group; SIGKILL ends the init, and the kernel then
	// kills everything in the namespace.
	Init   *exec.Cmd
	path   string
	report *bufio.Reader
	pipe   *os.File
}

// Exit is how a process ended: Code, or -1 and the Signal that ended it.
type Exit struct {
	Code   int
	Signal syscall.Signal
}

// Start starts cmd under an init, with cmd's Path, Args, Env, Dir, Stdin,
// Stdout, Stderr and SysProcAttr.Credential (the rest of its SysProcAttr is
// the init's business: the process gets a process group of its own), and
// returns once the process runs. When it could not be started, the error
// is what exec.Cmd.Start would have returned (an *os.PathError with the
// errno). cmd itself is not started.
func (c *Confiner) Start(cmd *exec.Cmd) (*Process, error) {
	return c.start(cmd, modeRun)
}

// start starts an init in mode for cmd: it sends the spec and waits for
// the first report.
func (c *Confiner) start(cmd *exec.Cmd, mode string) (*Process, error) {
	sp, err := specOf(cmd)
	if err != nil {
		return nil, err
	}
	specR, specW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	defer specR.Close()
	defer specW.Close()
	repR, repW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	defer repW.Close()
	ini := &exec.Cmd{Path: "/proc/self/exe", Args: []string{argv0, mode}, Env: []string{}, Dir: "/",
		Stdin: cmd.Stdin, Stdout: cmd.Stdout, Stderr: cmd.Stderr,
		ExtraFiles: []*os.File{specR, repW}, SysProcAttr: c.attr()}
	if err := ini.Start(); err != nil {
		repR.Close()
		return nil, fmt.Errorf("starting the process init: %w", err)
	}
	specR.Close()
	repW.Close()
	p := &Process{Init: ini, path: cmd.Path, report: bufio.NewReaderSize(repR, maxReport), pipe: repR}
	_, werr := specW.Write(sp)
	specW.Close()
	_ = repR.SetReadDeadline(time.Now().Add(startTimeout))
	r, err := p.next()
	_ = repR.SetReadDeadline(time.Time{})
	if err == nil && r.Kind == reportStarted {
		return p, nil
	}
	if err == nil {
		err = p.failure(r)
	} else if werr != nil {
		err = fmt.Errorf("the process init did not start the process: %w (writing its spec: %v)", err, werr)
	} else {
		err = fmt.Errorf("the process init did not start the process: %w", err)
	}
	_ = syscall.Kill(-ini.Process.Pid, syscall.SIGKILL)
	_ = ini.Wait()
	repR.Close()
	return nil, err
}

// attr is the init's SysProcAttr.
func (c *Confiner) attr() *syscall.SysProcAttr {
	a := &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL,
		Cloneflags: syscall.CLONE_NEWPID | syscall.CLONE_NEWNS}
	if c.userNS {
		a.Cloneflags |= syscall.CLONE_NEWUSER
		a.UidMappings = []syscall.SysProcIDMap{{ContainerID: c.uid, HostID: c.uid, Size: 1}}
		a.GidMappings = []syscall.SysProcIDMap{{ContainerID: c.gid, HostID: c.gid, Size: 1}}
		a.GidMappingsEnableSetgroups = false
		a.AmbientCaps = []uintptr{capSysAdmin}
	}
	return a
}

// specOf encodes what the init is to run.
func specOf(cmd *exec.Cmd) ([]byte, error) {
	if cmd.Env == nil {
		return nil, errors.New("procinit: the command has no environment (an empty one must be given)")
	}
	sp := spec{Path: cmd.Path, Args: cmd.Args, Env: cmd.Env, Dir: cmd.Dir}
	if len(sp.Args) == 0 {
		sp.Args = []string{cmd.Path}
	}
	if a := cmd.SysProcAttr; a != nil && a.Credential != nil {
		sp.Credential = &credential{UID: a.Credential.Uid, GID: a.Credential.Gid, Groups: a.Credential.Groups}
	}
	data, err := json.Marshal(sp)
	if err != nil {
		return nil, err
	}
	if len(data) > maxSpec {
		return nil, fmt.Errorf("procinit: the command's arguments and environment take %d bytes, more than %d", len(data), maxSpec)
	}
	return data, nil
}

// next reads the next report.
func (p *Process) next() (report, error) {
	line, err := p.report.ReadSlice('\n')
	if errors.Is(err, bufio.ErrBufferFull) {
		return report{}, errors.New("a report line is too long")
	}
	if err != nil {
		return report{}, err
	}
	return parseReport(string(line[:len(line)-1]))
}

// failure is the error of a "failed" report.
func (p *Process) failure(r report) error {
	if r.Kind != reportFailed {
		return fmt.Errorf("the process init reported %q before starting the process", r.Kind)
	}
	errno := syscall.Errno(r.N)
	if r.Step == "exec" {
		return &os.PathError{Op: "fork/exec", Path: p.path, Err: errno}
	}
	return fmt.Errorf("the process init could not %s: %w", r.Step, errno)
}

// Wait waits for the init to end and returns how the process ended. When
// the init was killed (SIGKILL, by Hoist) before it could report, the
// kernel killed the process: it ended by SIGKILL. An error means the init
// ended otherwise without a report; Exit is then the init's own status.
func (p *Process) Wait() (Exit, error) {
	werr := p.Init.Wait()
	defer p.pipe.Close()
	// The init is gone, so the pipe ends (another fork of Hoist may hold
	// its write end for the moment before its exec).
	_ = p.pipe.SetReadDeadline(time.Now().Add(5 * time.Second))
	var last *report
	for {
		r, err := p.next()
		if err != nil {
			break
		}
		if r.Kind == reportExited || r.Kind == reportSignaled {
			last = &r
		}
	}
	switch {
	case last != nil && last.Kind == reportExited:
		return Exit{Code: last.N}, nil
	case last != nil:
		return Exit{Code: -1, Signal: syscall.Signal(last.N)}, nil
	}
	st := p.Init.ProcessState
	if st == nil {
		return Exit{Code: -1, Signal: syscall.SIGKILL}, fmt.Errorf("waiting for the process init: %w", werr)
	}
	ws := st.Sys().(syscall.WaitStatus)
	if ws.Signaled() {
		var err error
		if ws.Signal() != syscall.SIGKILL {
			err = fmt.Errorf("the process init ended by %v without a report", ws.Signal())
		}
		return Exit{Code: -1, Signal: syscall.SIGKILL}, err
	}
	return Exit{Code: ws.ExitStatus()}, fmt.Errorf("the process init exited with status %d without a report", ws.ExitStatus())
}

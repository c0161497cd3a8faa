package local

import (
	"errors"
	"os/exec"
	"strconv"
)

// child is what the provider started for a server process or an install
// script: the process itself, or the init that runs it in namespaces of its
// own (Linux; see confineChild).
type child interface {
	// pid is the PID of what the provider started: it leads the process
	// group the provider signals.
	pid() int
	// wait waits for the process to end and says how. An error means it
	// could not be known; the status is then the best guess.
	wait() (exitStatus, error)
}

// exitStatus is how a process ended: its exit code, or -1 and the name of
// the signal that ended it.
type exitStatus struct {
	code   int
	signal string
}

// err is the status as exec.ExitError words it (nil for exit code 0).
func (s exitStatus) err() error {
	switch {
	case s.signal != "":
		return errors.New("signal: " + s.signal)
	case s.code != 0:
		return errors.New("exit status " + strconv.Itoa(s.code))
	}
	return nil
}

// directChild is a process the provider started itself.
type directChild struct{ cmd *exec.Cmd }

// pid is the process's own PID.
func (c directChild) pid() int { return c.cmd.Process.Pid }

// wait waits for the process and reads its status.
func (c directChild) wait() (exitStatus, error) {
	err := c.cmd.Wait()
	st := c.cmd.ProcessState
	if st == nil {
		return exitStatus{code: -1}, err
	}
	return exitStatus{code: st.ExitCode(), signal: exitSignal(st)}, nil
}

// startChild starts cmd, which setProcAttr prepared: under an init in
// namespaces of its own when the provider confines processes, else itself.
func (p *Provider) startChild(cmd *exec.Cmd) (child, error) {
	if p.confine != nil {
		return p.confine(cmd)
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	return directChild{cmd}, nil
}

//go:build windows

package local

import (
	"os"
	"os/exec"
)

// Windows has no process groups to signal: a process is killed alone.
const (
	termSignal = 0
	killSignal = 1
)

// setProcAttr runs a process as Hoist's own user: Windows has no
// Credential to switch to.
func setProcAttr(*exec.Cmd, *User) {}

func setUmask(int) int { return 0 }

// signalGroup kills the process pid (Windows cannot deliver SIGTERM).
func signalGroup(pid int, sig int) error {
	if sig == termSignal {
		return nil
	}
	p, err := os.FindProcess(pid)
	if err != nil {
		return err
	}
	return p.Kill()
}

func exitSignal(*os.ProcessState) string { return "" }

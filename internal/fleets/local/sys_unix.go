//go:build unix

package local

import (
	"os"
	"os/exec"
	"syscall"
)

const (
	termSignal = syscall.SIGTERM
	killSignal = syscall.SIGKILL
)

// setProcAttr puts a process in its own process group (so that its
// children can be signalled with it), runs it as u (when not nil: its UID
// and GID, no supplementary groups) and, where the system allows, has it
// killed if Hoist dies.
func setProcAttr(cmd *exec.Cmd, u *User) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if u != nil {
		cmd.SysProcAttr.Credential = &syscall.Credential{Uid: uint32(u.UID), Gid: uint32(u.GID), Groups: []uint32{}}
	}
	setDeathSignal(cmd.SysProcAttr)
}

// setUmask sets the process's file mode creation mask and returns the
// previous one.
func setUmask(mask int) int { return syscall.Umask(mask) }

// signalGroup signals the process group led by pid.
func signalGroup(pid int, sig syscall.Signal) error {
	return syscall.Kill(-pid, sig)
}

// exitSignal names the signal that ended a process ("" if it exited).
func exitSignal(st *os.ProcessState) string {
	if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return ws.Signal().String()
	}
	return ""
}

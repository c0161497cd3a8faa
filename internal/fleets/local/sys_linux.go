//go:build linux

package local

import "syscall"

// setDeathSignal has the kernel kill a server process if Hoist dies without
// stopping it (kill -9). Its own children are not covered: they are killed
// with its process group when Hoist stops it.
func setDeathSignal(a *syscall.SysProcAttr) { a.Pdeathsig = syscall.SIGKILL }

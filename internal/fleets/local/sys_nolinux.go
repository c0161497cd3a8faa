//go:build unix && !linux

package local

import "syscall"

// setDeathSignal does nothing where the system has no parent-death signal.
func setDeathSignal(*syscall.SysProcAttr) {}

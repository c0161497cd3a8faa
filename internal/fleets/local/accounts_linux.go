//go:build linux

package local

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// lockAccount takes the lock of the account uid (a file named by the UID
// in dir), without waiting: errAccountBusy if another Hoist holds it.
func lockAccount(dir string, uid int) (io.Closer, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(filepath.Join(dir, strconv.Itoa(uid)), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, errAccountBusy
		}
		return nil, err
	}
	return f, nil
}

// endLeftoverAccounts ends, when the provider starts, what still runs as an
// account a Hoist used since boot (it has a lock file in dir) that no Hoist
// holds now: an instance that used it is gone.
func endLeftoverAccounts(dir string, log *slog.Logger) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		if !os.IsNotExist(err) {
			log.Warn("local: reading the account locks", "dir", dir, "err", err)
		}
		return
	}
	for _, e := range entries {
		uid, err := strconv.Atoi(e.Name())
		if err != nil || uid <= 0 {
			continue
		}
		lock, err := lockAccount(dir, uid)
		if err != nil {
			continue // held by a running Hoist
		}
		n, err := endProcessesOf(uid)
		lock.Close()
		if n > 0 {
			log.Warn("local: killed what an earlier run left running as a server process account", "uid", uid, "processes", n)
		}
		if err != nil {
			log.Error("local: processes of a server process account do not end", "uid", uid, "err", err)
		}
	}
}

// endWait bounds how long endProcessesOf waits for killed processes to go.
const endWait = 10 * time.Second

// endProcessesOf kills every process of Hoist's PID namespace that runs as
// uid (real, effective or saved UID; zombies aside: they run nothing) and
// waits until none is left; it returns how many it killed. It never acts
// on root or on Hoist's own UID. Processes in other PID namespaces are
// left alone: Hoist's confined processes end with their init, and another
// namespace may be a container's, whose users' UIDs may be the same
// numbers.
func endProcessesOf(uid int) (int, error) {
	if uid <= 0 || uid == os.Getuid() || uid == os.Geteuid() {
		return 0, nil
	}
	ns, err := os.Readlink("/proc/self/ns/pid")
	if err != nil {
		return 0, err
	}
	killed := map[int]bool{}
	deadline := time.Now().Add(endWait)
	for {
		pids := processesOf(uid, ns)
		if len(pids) == 0 {
			return len(killed), nil
		}
		if time.Now().After(deadline) {
			return len(killed), fmt.Errorf("processes %v of UID %d did not end within %s", pids, uid, endWait)
		}
		for _, pid := range pids {
			if syscall.Kill(pid, syscall.SIGKILL) == nil {
				killed[pid] = true
			}
		}
		time.Sleep(10 * time.Millisecond) // a killed process takes a moment to go
	}
}

// processesOf lists the live processes of PID namespace ns that run as uid.
func processesOf(uid int, ns string) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var out []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/status")
		if err != nil {
			continue
		}
		st, ok := parseProcStatus(string(b))
		if !ok || st.State == 'Z' || st.State == 'X' || !st.runsAs(uid) {
			continue
		}
		if pns, err := os.Readlink("/proc/" + e.Name() + "/ns/pid"); err == nil && pns == ns {
			out = append(out, pid)
		}
	}
	return out
}

// procStatus is what the provider reads of /proc/<pid>/status.
type procStatus struct {
	State byte
	UIDs  [4]int // real, effective, saved, file system
}

// runsAs reports whether the process's real, effective or saved UID is
// uid.
func (s procStatus) runsAs(uid int) bool {
	return s.UIDs[0] == uid || s.UIDs[1] == uid || s.UIDs[2] == uid
}

// parseProcStatus reads the State and Uid lines of /proc/<pid>/status.
func parseProcStatus(s string) (procStatus, bool) {
	var st procStatus
	var haveState, haveUIDs bool
	for line := range strings.Lines(s) {
		key, val, ok := strings.Cut(strings.TrimSuffix(line, "\n"), ":")
		if !ok {
			continue
		}
		f := strings.Fields(val)
		switch key {
		case "State":
			if len(f) == 0 || len(f[0]) != 1 {
				return procStatus{}, false
			}
			st.State, haveState = f[0][0], true
		case "Uid":
			if len(f) != 4 {
				return procStatus{}, false
			}
			for i, v := range f {
				n, err := strconv.Atoi(v)
				if err != nil || n < 0 {
					return procStatus{}, false
				}
				st.UIDs[i] = n
			}
			haveUIDs = true
		}
	}
	return st, haveState && haveUIDs
}

//go:build linux

package local

import (
	"errors"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// procStat is what the provider reads of /proc/<pid>/stat.
type procStat struct {
	PGID  int
	Start uint64 // clock ticks after boot
}

// parseProcStat reads a /proc/<pid>/stat line. The command name (field 2)
// is in parentheses and may hold anything, so fields are counted from the
// last ')'.
func parseProcStat(s string) (procStat, bool) {
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return procStat{}, false
	}
	f := strings.Fields(s[i+1:])
	// f[0] is field 3 (state): pgrp is field 5, starttime field 22.
	if len(f) < 20 {
		return procStat{}, false
	}
	pgid, err1 := strconv.Atoi(f[2])
	start, err2 := strconv.ParseUint(f[19], 10, 64)
	if err1 != nil || err2 != nil {
		return procStat{}, false
	}
	return procStat{PGID: pgid, Start: start}, true
}

func readProcStat(pid int) (procStat, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return procStat{}, false
	}
	return parseProcStat(string(b))
}

// processStart returns when pid started (clock ticks after boot).
func processStart(pid int) (uint64, bool) {
	st, ok := readProcStat(pid)
	return st.Start, ok
}

// bootID identifies the current boot ("" if unknown).
func bootID() string {
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// killGroupIfOurs kills the process group of rec if it still is the one
// recorded, and returns how many processes it had (0: none, or not ours).
//
// Linux does not give a PID to a new process while a process group of
// that ID exists, so while any member of the group is left the ID is
// still ours, unless the group died out and a new process reused the ID
// and made a group of it: then that process, or what it started, started
// after it; a leader alive with another start time, or a member started
// before the recorded leader, means the group is not ours.
func killGroupIfOurs(rec groupRecord) int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0
	}
	members := 0
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		st, ok := readProcStat(pid)
		if !ok || st.PGID != rec.PGID {
			continue
		}
		if (pid == rec.PGID && st.Start != rec.Start) || st.Start < rec.Start {
			return 0
		}
		members++
	}
	if members == 0 {
		return 0
	}
	if err := syscall.Kill(-rec.PGID, syscall.SIGKILL); err != nil {
		return 0
	}
	return members
}

// prSetChildSubreaper is prctl's PR_SET_CHILD_SUBREAPER.
const prSetChildSubreaper = 36

// becomeSubreaper makes Hoist the parent of whatever its server processes
// leave when they end (orphans are reparented to the nearest subreaper,
// not to init), so that they stay in reach; Hoist reaps them when their
// group ends (reapGroup).
func becomeSubreaper() error {
	_, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, prSetChildSubreaper, 1, 0)
	if errno != 0 {
		return errno
	}
	return nil
}

// reapGroup waits for every child of Hoist in process group pgid (the
// leader was waited for already; the rest were killed): the orphans a
// subreaper inherits would otherwise stay zombies. A member's own children
// are reparented to Hoist before the member can be reaped, so when no
// child of the group is left, none will come.
func reapGroup(pgid int) {
	for {
		var ws syscall.WaitStatus
		_, err := syscall.Wait4(-pgid, &ws, 0, nil)
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if err != nil { // ECHILD: none left
			return
		}
	}
}

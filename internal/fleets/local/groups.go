package local

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// groupsDir is the directory of Config.Dir where the provider records the
// process group of every process it starts (one file per group, named by
// its ID), so that a Hoist killed without stopping them can end what they
// left running when it starts again (killLeftoverGroups).
const groupsDir = ".groups"

// groupRecord identifies a process group Hoist started: the ID of its
// leader (the process Hoist started), when that process started (clock
// ticks after boot, /proc/<pid>/stat) and the boot it started in, so that
// a PID the system has since given to another process is never taken for
// it.
type groupRecord struct {
	PGID  int
	Start uint64
	Boot  string
}

func (r groupRecord) String() string {
	return fmt.Sprintf("%d %d %s\n", r.PGID, r.Start, r.Boot)
}

func parseGroupRecord(s string) (groupRecord, error) {
	f := strings.Fields(s)
	if len(f) != 3 {
		return groupRecord{}, fmt.Errorf("want 3 fields, got %d", len(f))
	}
	pgid, err := strconv.Atoi(f[0])
	if err != nil || pgid <= 1 {
		return groupRecord{}, fmt.Errorf("bad process group %q", f[0])
	}
	start, err := strconv.ParseUint(f[1], 10, 64)
	if err != nil {
		return groupRecord{}, fmt.Errorf("bad start time %q", f[1])
	}
	return groupRecord{PGID: pgid, Start: start, Boot: f[2]}, nil
}

// recordGroup durably records the process group led by pid (a process
// just started in its own group) and returns the function that forgets it
// once the group is gone. Where the system cannot say when a process
// started, nothing is recorded.
func (p *Provider) recordGroup(pid int) (forget func()) {
	start, ok := processStart(pid)
	boot := bootID()
	if !ok || boot == "" {
		return func() {}
	}
	dir := filepath.Join(p.cfg.Dir, groupsDir)
	file := filepath.Join(dir, strconv.Itoa(pid))
	rec := groupRecord{PGID: pid, Start: start, Boot: boot}
	if err := writeSynced(dir, file, []byte(rec.String())); err != nil {
		p.log.Warn("local: recording a process group", "pgid", pid, "err", err)
		return func() {}
	}
	return func() {
		if err := os.Remove(file); err != nil && !os.IsNotExist(err) {
			p.log.Warn("local: forgetting a process group", "pgid", pid, "err", err)
		}
	}
}

// writeSynced writes a file and syncs it and its directory.
func writeSynced(dir, file string, data []byte) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	f, err := os.OpenFile(file, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// killLeftoverGroups kills the process groups an earlier run recorded in
// dir and did not end (Hoist was killed: the kernel killed the processes
// it started, by their parent-death signal, but not what they started),
// then forgets them. A group is killed only if it still is the one
// recorded: its leader, if alive, started when recorded, and every member
// started no earlier than that, in the same boot.
func killLeftoverGroups(dir string, log *slog.Logger) {
	gdir := filepath.Join(dir, groupsDir)
	entries, err := os.ReadDir(gdir)
	if err != nil {
		if !os.IsNotExist(err) {
			log.Warn("local: reading the process group records", "err", err)
		}
		return
	}
	boot := bootID()
	for _, e := range entries {
		file := filepath.Join(gdir, e.Name())
		data, err := os.ReadFile(file)
		if err == nil {
			var rec groupRecord
			if rec, err = parseGroupRecord(string(data)); err == nil && rec.Boot == boot {
				if n := killGroupIfOurs(rec); n > 0 {
					log.Info("local: killed what a server process of an earlier run left running",
						"pgid", rec.PGID, "processes", n)
				}
			}
		}
		if err != nil {
			log.Warn("local: a process group record is unreadable", "file", e.Name(), "err", err)
		}
		if err := os.Remove(file); err != nil {
			log.Warn("local: removing a process group record", "file", e.Name(), "err", err)
		}
	}
}

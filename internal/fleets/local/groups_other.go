//go:build !linux

package local

// Only Linux says when a process started (/proc/<pid>/stat): elsewhere no
// process group is recorded, and none is killed at start.

func processStart(int) (uint64, bool) { return 0, false }

func bootID() string { return "" }

func killGroupIfOurs(groupRecord) int { return 0 }

// becomeSubreaper does nothing where the system has no subreapers.
func becomeSubreaper() error { return nil }

func reapGroup(int) {}

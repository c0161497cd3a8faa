//go:build linux

package local

import "testing"

// TestHasProcess: the provider knows a process on its instance while it
// runs, not on another instance, and not once it has ended.
func TestHasProcess(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	f.script("server.sh", sleeper)
	r := f.start("fleet-1", "i-1", sp("/local/game/server.sh", "", 1))
	p := r.waitStarts(1)[0]
	if !f.p.HasProcess("i-1", p.ProcessID) {
		t.Errorf("HasProcess(i-1, %s) = false for a running process", p.ProcessID)
	}
	if f.p.HasProcess("i-2", p.ProcessID) || f.p.HasProcess("i-1", "process-other") {
		t.Error("HasProcess is true for another instance or an unknown process")
	}
	if err := f.p.StopInstance("i-1", "done"); err != nil {
		t.Fatal(err)
	}
	r.waitStopped()
	if f.p.HasProcess("i-1", p.ProcessID) {
		t.Error("HasProcess is true for an ended process")
	}
}

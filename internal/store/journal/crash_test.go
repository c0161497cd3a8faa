package journal

import (
	"testing"

	"github.com/hoistgg/hoist/internal/store"
	"github.com/hoistgg/hoist/internal/store/storetest"
)

// crashEnv, when set, makes TestCrashChild the writing child process of
// TestCrashDurability; its value is the data directory.
const crashEnv = "HOIST_JOURNAL_CRASH_CHILD_DIR"

func openCrash(dir string) (store.Store, error) { return Open(dir, Options{}) }

// TestCrashDurability: every write acknowledged before a SIGKILL is there
// after reopening (storetest.CrashDurability).
func TestCrashDurability(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a child process")
	}
	storetest.CrashDurability(t, crashEnv, "TestCrashChild", openCrash)
}

// TestCrashChild is the child process of TestCrashDurability; it is skipped
// in a normal run.
func TestCrashChild(t *testing.T) { storetest.CrashChild(t, crashEnv, openCrash) }

package postgres

import (
	"context"
	"os"
	"testing"

	"github.com/hoistgg/hoist/internal/store"
	"github.com/hoistgg/hoist/internal/store/postgres/pgtest"
	"github.com/hoistgg/hoist/internal/store/storetest"
)

// crashEnv, when set, makes TestCrashChild the writing child process of
// TestCrashDurability; crashURLEnv holds the schema's connection string.
const (
	crashEnv    = "HOIST_PG_CRASH_CHILD_DIR"
	crashURLEnv = "HOIST_PG_CRASH_URL"
)

func openCrash(string) (store.Store, error) {
	return Open(context.Background(), os.Getenv(crashURLEnv), Options{})
}

// TestCrashDurability: every write a replica acknowledged before it was
// killed with SIGKILL is in the database (storetest.CrashDurability).
func TestCrashDurability(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a child process")
	}
	t.Setenv(crashURLEnv, pgtest.URL(t))
	storetest.CrashDurability(t, crashEnv, "TestCrashChild", openCrash)
}

// TestCrashChild is the child process of TestCrashDurability; it is skipped
// in a normal run.
func TestCrashChild(t *testing.T) { storetest.CrashChild(t, crashEnv, openCrash) }

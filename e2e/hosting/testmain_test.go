package hosting

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/hoistgg/hoist/e2e/hoisttest"
)

// TestMain removes the builds the tests made once they ran: Hoist's
// (hoisttest.Main) and the game server's (gameServer).
func TestMain(m *testing.M) {
	code := hoisttest.Main(m)
	if gsDir != "" {
		_ = os.RemoveAll(filepath.Dir(gsDir))
	}
	os.Exit(code)
}

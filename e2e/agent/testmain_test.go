package agent

import (
	"os"
	"testing"

	"github.com/hoistgg/hoist/e2e/hoisttest"
)

// TestMain removes the builds the tests made once they ran.
func TestMain(m *testing.M) { os.Exit(hoisttest.Main(m)) }

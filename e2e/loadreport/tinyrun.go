package loadreport

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/hoistgg/hoist/e2e/hoisttest"
)

// TinyRunArgs are the arguments a test's tiny run of a load tool adds: one
// run, the Hoist binary the e2e tests build, and a -data-parent the game
// user may pass through (run as root, Hoist and its agents run game
// servers as an unprivileged user, which must pass through the test's
// temporary directory, 0700).
func TinyRunArgs(t *testing.T) []string {
	t.Helper()
	parent := t.TempDir()
	if err := os.Chmod(filepath.Dir(parent), 0o711); err != nil {
		t.Fatal(err)
	}
	return []string{"-repeats", "1", "-hoist", hoisttest.Binary(t), "-data-parent", parent}
}

// RunForTest runs a load tool's run with args and -json, logs what it
// printed, fails the test unless it exits 0, and returns the JSON report
// and the printed one.
func RunForTest[R any](t *testing.T, run func(args []string, stdout, stderr io.Writer) int, args ...string) (*R, string) {
	t.Helper()
	out := filepath.Join(t.TempDir(), "report.json")
	var stdout, stderr bytes.Buffer
	code := run(append(args, "-json", out), &stdout, &stderr)
	t.Log(stdout.String())
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var rep R
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatalf("JSON report: %v\n%s", err, b)
	}
	return &rep, stdout.String()
}

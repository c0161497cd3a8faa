// Package pgfloor holds floor.sh, which measures what one PostgreSQL
// commits at most on the machine (docs/performance.md, "Claims on
// PostgreSQL"); this test runs it briefly so that the command the docs give
// keeps working.
package pgfloor

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/hoistgg/hoist/internal/store/postgres/pgtest"
)

// TestFloorRuns runs floor.sh for 1 s a shape, 4 connections, on the test
// database, and checks that it reports each shape's rate.
func TestFloorRuns(t *testing.T) {
	base, ok := os.LookupEnv(pgtest.Env)
	if !ok {
		t.Skip(pgtest.Skipped)
	}
	pgbench, _ := filepath.Glob("/usr/lib/postgresql/*/bin/pgbench")
	if _, err := exec.LookPath("pgbench"); err != nil && len(pgbench) == 0 {
		t.Skip("pgbench not installed (Debian: postgresql)")
	}
	cmd := exec.Command("bash", "floor.sh", base)
	cmd.Env = append(os.Environ(), "FLOOR_SECONDS=1", "FLOOR_CONNECTIONS=4")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("floor.sh: %v\n%s", err, out)
	}
	for _, shape := range []string{"one-statement +[1-9][0-9]* transactions/s", "read-then-write +[1-9][0-9]* transactions/s",
		`claim-cycle-in-sql +[1-9][0-9]* cycles/s \(three transactions each\)`} {
		if !regexp.MustCompile(`(?m)^` + shape + `$`).Match(out) {
			t.Errorf("floor.sh reported no rate for %s:\n%s", shape, out)
		}
	}
}

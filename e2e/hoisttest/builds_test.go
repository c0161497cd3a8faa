package hoisttest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestEveryE2EPackageRemovesItsBuilds: every e2e package whose tests use
// these helpers (directly, or through e2e/cluster or e2e/loadreport,
// which build Hoist with them) removes the builds once its tests ran
// (hoisttest.Main or RemoveBuilds from its TestMain); one that does not
// leaves a build of Hoist in the temporary directory on every run.
func TestEveryE2EPackageRemovesItsBuilds(t *testing.T) {
	root := filepath.Join(RepoRoot(), "e2e")
	dirs, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, d := range dirs {
		if !d.IsDir() || d.Name() == "hoisttest" {
			continue
		}
		files, _ := filepath.Glob(filepath.Join(root, d.Name(), "*_test.go"))
		uses, removes := false, false
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			src := string(b)
			for _, imp := range []string{"e2e/hoisttest\"", "e2e/cluster\"", "e2e/loadreport\""} {
				uses = uses || strings.Contains(src, "\"github.com/hoistgg/hoist/"+imp)
			}
			removes = removes || strings.Contains(src, "hoisttest.Main(") || strings.Contains(src, "hoisttest.RemoveBuilds()")
		}
		if !uses {
			continue
		}
		checked++
		if !removes {
			t.Errorf("e2e/%s: its tests build Hoist but no TestMain removes the builds (os.Exit(hoisttest.Main(m)))", d.Name())
		}
	}
	if checked == 0 {
		t.Fatal("no e2e package found")
	}
}

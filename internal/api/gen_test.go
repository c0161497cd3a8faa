package api_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hoistgg/hoist/internal/apigen"
)

// TestGeneratedCodeIsFresh proves the committed *_gen.go files are exactly what
// the generator writes from the pinned service model.
func TestGeneratedCodeIsFresh(t *testing.T) {
	m, err := apigen.PinnedModel()
	if err != nil {
		t.Fatal(err)
	}
	files, err := apigen.Generate(m)
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Operations) != 120 {
		t.Errorf("model has %d operations, want 120", len(m.Operations))
	}
	for name, want := range files {
		got, err := os.ReadFile(name)
		if err != nil {
			t.Fatalf("%s: %v (run go generate ./internal/api)", name, err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s is stale: run go generate ./internal/api", name)
		}
	}
	onDisk, _ := filepath.Glob("*_gen.go")
	if len(onDisk) != len(files) {
		t.Errorf("%d *_gen.go files on disk, generator writes %d", len(onDisk), len(files))
	}
}

// TestNoDocumentationText checks that no model documentation leaked into the
// generated code: the model's doc strings are HTML.
func TestNoDocumentationText(t *testing.T) {
	names, _ := filepath.Glob("*_gen.go")
	for _, n := range names {
		b, err := os.ReadFile(n)
		if err != nil {
			t.Fatal(err)
		}
		for _, marker := range []string{"<p>", "<code>", "Amazon GameLift Servers", "</a>"} {
			if strings.Contains(string(b), marker) {
				t.Errorf("%s contains %q: documentation text must not be generated", n, marker)
			}
		}
	}
}

package server

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestREADMEListsEveryDoc checks the README's documentation table against
// the files: every docs/*.md page has a row, and every row's page exists.
func TestREADMEListsEveryDoc(t *testing.T) {
	root := filepath.Join("..", "..")
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, table, ok := strings.Cut(string(readme), "\n## Documentation\n")
	if !ok {
		t.Fatal("README.md has no Documentation section")
	}
	table, _, _ = strings.Cut(table, "\n## ")
	row := regexp.MustCompile(`(?m)^\| \[([^\]]+)\]\(([^)]+)\) \|`)
	var listed []string
	for _, m := range row.FindAllStringSubmatch(table, -1) {
		if m[1] != m[2] {
			t.Errorf("README.md's documentation row [%s](%s): the text and the link differ", m[1], m[2])
		}
		if _, err := os.Stat(filepath.Join(root, m[2])); err != nil {
			t.Errorf("README.md lists %s, which does not exist", m[2])
		}
		listed = append(listed, m[2])
	}
	pages, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil || len(pages) == 0 {
		t.Fatalf("no docs/*.md (%v)", err)
	}
	for _, p := range pages {
		if page := "docs/" + filepath.Base(p); !slices.Contains(listed, page) {
			t.Errorf("README.md's documentation table has no row for %s", page)
		}
	}
}

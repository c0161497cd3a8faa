package local

import (
	"os"
	"path/filepath"
	"testing"
)

// TestNewRemovesLeftovers: instance directories an earlier run left behind
// (Hoist was killed) are removed when the provider starts, unless KeepDirs.
func TestNewRemovesLeftovers(t *testing.T) {
	for name, keep := range map[string]bool{"removed": false, "kept": true} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			old := filepath.Join(dir, "fleet-old", "i-0123456789abcdef0", "game")
			if err := os.MkdirAll(old, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(old, "server"), []byte("x"), 0o755); err != nil {
				t.Fatal(err)
			}
			p, err := New(Config{Dir: dir, KeepDirs: keep})
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			_, err = os.Stat(filepath.Join(dir, "fleet-old"))
			if keep != (err == nil) {
				t.Errorf("KeepDirs=%v: leftover stat err = %v", keep, err)
			}
		})
	}
}

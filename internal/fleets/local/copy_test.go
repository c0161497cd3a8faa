//go:build unix

package local

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// writeTree writes files (path -> content) under dir, with the given modes
// (0o644 when absent).
func writeTree(t *testing.T, dir string, files map[string]string, modes map[string]os.FileMode) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		mode, ok := modes[name]
		if !ok {
			mode = 0o644
		}
		if err := os.WriteFile(p, []byte(content), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil { // past the umask
			t.Fatal(err)
		}
	}
}

func TestCopyTree(t *testing.T) {
	src := t.TempDir()
	writeTree(t, src, map[string]string{"server": "#!/bin/sh\n", "data/map.txt": "map", "data/deep/x.cfg": "x"},
		map[string]os.FileMode{"server": 0o750, "data/map.txt": 0o600})
	outside := filepath.Join(t.TempDir(), "secret")
	writeTree(t, filepath.Dir(outside), map[string]string{"secret": "s"}, nil)
	for target, link := range map[string]string{
		"data/map.txt":       "inside",        // kept
		"../data/deep/x.cfg": "data/up",       // kept: climbs but stays inside
		"data":               "datadir",       // kept: a link to a directory
		"../../escape":       "escape",        // skipped: leaves the tree
		outside:              "absolute",      // skipped: absolute
		"missing":            "dangling_here", // kept: dangling but inside
	} {
		if err := os.Symlink(target, filepath.Join(src, filepath.FromSlash(link))); err != nil {
			t.Fatal(err)
		}
	}
	if err := syscall.Mkfifo(filepath.Join(src, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}

	for _, link := range []bool{false, true} {
		dst := filepath.Join(t.TempDir(), "game")
		if err := copyTree(context.Background(), src, dst, link); err != nil {
			t.Fatalf("copyTree(link=%v): %v", link, err)
		}
		for name, want := range map[string]string{"server": "#!/bin/sh\n", "data/map.txt": "map", "data/deep/x.cfg": "x",
			"inside": "map", "data/up": "x", "datadir/map.txt": "map"} {
			got, err := os.ReadFile(filepath.Join(dst, filepath.FromSlash(name)))
			if err != nil || string(got) != want {
				t.Errorf("link=%v: %s = %q, %v; want %q", link, name, got, err, want)
			}
		}
		for name, mode := range map[string]os.FileMode{"server": 0o750, "data/map.txt": 0o600} {
			st, err := os.Stat(filepath.Join(dst, name))
			if err != nil || st.Mode().Perm() != mode {
				t.Errorf("link=%v: %s has mode %v, %v; want %v", link, name, st.Mode().Perm(), err, mode)
			}
		}
		for _, name := range []string{"escape", "absolute", "fifo"} {
			if _, err := os.Lstat(filepath.Join(dst, name)); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("link=%v: %s was copied (%v)", link, name, err)
			}
		}
		if target, err := os.Readlink(filepath.Join(dst, "dangling_here")); err != nil || target != "missing" {
			t.Errorf("link=%v: dangling_here -> %q, %v", link, target, err)
		}
		a, _ := os.Stat(filepath.Join(src, "server"))
		b, _ := os.Stat(filepath.Join(dst, "server"))
		if os.SameFile(a, b) != link {
			t.Errorf("link=%v: the instance's server is the build's file: %v", link, os.SameFile(a, b))
		}
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := copyTree(ctx, src, filepath.Join(t.TempDir(), "game"), false); !errors.Is(err, context.Canceled) {
		t.Fatalf("copyTree with a canceled context = %v", err)
	}
	if err := copyTree(context.Background(), filepath.Join(src, "nope"), filepath.Join(t.TempDir(), "game"), false); err == nil {
		t.Fatal("copyTree of a missing build succeeded")
	}
}

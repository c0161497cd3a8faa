package server

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hoistgg/hoist/internal/config"
)

func newOnDir(t *testing.T, dir, storeKind string) (*Server, error) {
	t.Helper()
	cfg, err := config.Parse([]string{"--data-dir", dir, "--store", storeKind}, func(string) (string, bool) { return "", false }, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	return New(Options{Config: cfg, Addr: "127.0.0.1:1"})
}

// TestDataDirLock: a second Hoist on a running Hoist's data directory, with
// the other --store, refuses to start, names the flag and the directory,
// and touches nothing in it (before the lock covered the whole directory,
// it opened the other store and swept the first one's instance files).
func TestDataDirLock(t *testing.T) {
	for _, kinds := range [][2]string{{config.StoreJournal, config.StoreSQLite}, {config.StoreSQLite, config.StoreJournal}} {
		t.Run(kinds[0]+" then "+kinds[1], func(t *testing.T) {
			dir := t.TempDir()
			first, err := newOnDir(t, dir, kinds[0])
			if err != nil {
				t.Fatal(err)
			}
			defer first.Close(context.Background())
			// What the running Hoist has in its directory: an instance's
			// files and a blob.
			leftover := filepath.Join(dir, "instances", "i-running", "game.log")
			if err := os.MkdirAll(filepath.Dir(leftover), 0o750); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(leftover, []byte("in use"), 0o600); err != nil {
				t.Fatal(err)
			}
			before := listTree(t, dir)

			second, err := newOnDir(t, dir, kinds[1])
			if err == nil {
				second.Close(context.Background())
				t.Fatal("a second Hoist opened a data directory in use")
			}
			abs, _ := filepath.Abs(dir)
			if !strings.Contains(err.Error(), "--data-dir") || !strings.Contains(err.Error(), abs) {
				t.Errorf("error %q does not name --data-dir and %s", err, abs)
			}
			if after := listTree(t, dir); after != before {
				t.Errorf("the second Hoist changed the directory:\nbefore:\n%s\nafter:\n%s", before, after)
			}
			// Once the first is closed, the directory can be opened again.
			if err := first.Close(context.Background()); err != nil {
				t.Fatal(err)
			}
			again, err := newOnDir(t, dir, kinds[0])
			if err != nil {
				t.Fatalf("after the first closed: %v", err)
			}
			again.Close(context.Background())
		})
	}
}

// listTree lists every path under dir with its size.
func listTree(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	err := filepath.Walk(dir, func(path string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		fmt.Fprintf(&b, "%s %v %d %d\n", rel, info.Mode(), info.Size(), info.ModTime().UnixNano())
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}

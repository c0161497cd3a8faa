package api

import (
	"context"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hoistgg/hoist/e2e/hoisttest"
)

// TestSecondHoistOnTheDataDir: the real binary, twice on one data
// directory, the second with the other --store: the second exits with an
// error naming --data-dir and the directory and leaves the first's files
// alone; the first goes on serving, healthy and ready.
func TestSecondHoistOnTheDataDir(t *testing.T) {
	dir := t.TempDir()
	first := hoisttest.Start(t, hoisttest.Options{DataDir: dir})
	instance := filepath.Join(dir, "instances", "fleet-x", "i-running", "game", "server.bin")
	if err := os.MkdirAll(filepath.Dir(instance), 0o750); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(instance, []byte("running"), 0o600); err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, hoisttest.Binary(t), "serve", "--addr", "127.0.0.1:0", "--tls-addr", "",
		"--data-dir", dir, "--store", "sqlite")
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("the second Hoist ran on a data directory in use:\n%s", out)
	}
	t.Logf("second Hoist: %s", out)
	abs, _ := filepath.Abs(dir)
	if !strings.Contains(string(out), "--data-dir") || !strings.Contains(string(out), abs) {
		t.Errorf("the second Hoist's error does not name --data-dir and %s:\n%s", abs, out)
	}
	if b, err := os.ReadFile(instance); err != nil || string(b) != "running" {
		t.Errorf("the running Hoist's instance file: %q %v", b, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "hoist.db")); err == nil {
		t.Error("the second Hoist created a SQLite store")
	}
	for _, path := range []string{"/hoist/health", "/hoist/ready"} {
		resp, err := http.Get(first.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("first Hoist %s: %d %q", path, resp.StatusCode, body)
		}
	}
}

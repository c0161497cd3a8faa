package main

import (
	"io"
	"runtime/debug"
	"testing"

	"github.com/hoistgg/hoist/internal/config"
)

// TestMemoryLimit: --memory-limit becomes the runtime's memory limit; an
// unset one leaves the runtime's own.
func TestMemoryLimit(t *testing.T) {
	orig := debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetMemoryLimit(orig) })
	cfg, err := config.Parse([]string{"--memory-limit", "1536MiB"}, func(string) (string, bool) { return "", false }, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if !setMemoryLimit(cfg.MemoryLimit) {
		t.Fatal("setMemoryLimit did not apply a limit")
	}
	if got := debug.SetMemoryLimit(-1); got != 1536<<20 {
		t.Fatalf("runtime memory limit %d, want %d", got, int64(1536<<20))
	}
	debug.SetMemoryLimit(orig)
	if setMemoryLimit(0) || debug.SetMemoryLimit(-1) != orig {
		t.Fatal("an unset --memory-limit changed the runtime's limit")
	}
}

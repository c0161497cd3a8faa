package server

import (
	"testing"

	"github.com/hoistgg/hoist/internal/config"
)

// TestRelativeDataDirRefused: a data directory that is not absolute never
// reaches the paths handed to server processes (config.Parse makes it
// absolute; a Config made otherwise is refused).
func TestRelativeDataDirRefused(t *testing.T) {
	t.Chdir(t.TempDir())
	cfg := &config.Config{DataDir: config.DefaultDataDir, Region: "us-west-2", Account: "123456789012"}
	if srv, err := New(Options{Config: cfg, Addr: "127.0.0.1:1"}); err == nil {
		srv.Close(t.Context())
		t.Fatal("a relative data directory was accepted")
	}
}

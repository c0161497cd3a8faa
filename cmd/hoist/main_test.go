package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"net"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hoistgg/hoist/internal/config"
	"github.com/hoistgg/hoist/internal/server"
)

// runArgs runs the command line and returns its status, stdout and stderr.
func runArgs(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := run(args, &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

// cleanEnv unsets every HOIST_* setting of the test's environment, so that
// each test sees the defaults plus what it sets.
func cleanEnv(t *testing.T) {
	for _, s := range config.Settings() {
		if v, ok := os.LookupEnv(s.Env); ok {
			t.Setenv(s.Env, v) // restored after the test
			os.Unsetenv(s.Env)
		}
	}
	// hoist serve runs in this test binary, which cannot be started as
	// the local agent.
	t.Setenv("HOIST_LOCAL_HOSTING", config.LocalInProcess)
}

func TestHelpListsCommands(t *testing.T) {
	for _, arg := range []string{"--help", "-h", "help"} {
		code, stdout, _ := runArgs(t, arg)
		if code != 0 {
			t.Errorf("hoist %s: status %d, want 0", arg, code)
		}
		for _, cmd := range []string{"serve", "admin", "version"} {
			if !strings.Contains(stdout, "  "+cmd+" ") {
				t.Errorf("hoist %s does not list %s:\n%s", arg, cmd, stdout)
			}
		}
	}
}

func TestServeHelpListsSettings(t *testing.T) {
	cleanEnv(t)
	code, _, stderr := runArgs(t, "serve", "--help")
	if code != 0 {
		t.Errorf("status %d, want 0", code)
	}
	for _, s := range config.Settings() {
		// A boolean flag's line ends with its name (no "value").
		listed := strings.Contains(stderr, "-"+s.Flag+" ") || strings.Contains(stderr, "-"+s.Flag+"\n")
		if !strings.Contains(stderr, s.Env) || s.Flag != "" && !listed {
			t.Errorf("serve --help lacks %s (%s):\n%s", s.Flag, s.Env, stderr)
		}
	}
}

func TestVersion(t *testing.T) {
	for _, arg := range []string{"--version", "version"} {
		code, stdout, _ := runArgs(t, arg)
		if code != 0 || !strings.HasPrefix(stdout, "hoist ") || len(strings.TrimSpace(stdout)) <= len("hoist") {
			t.Errorf("hoist %s: status %d, %q", arg, code, stdout)
		}
	}
	old := version
	defer func() { version = old }()
	version = "v9.9.9"
	if _, stdout, _ := runArgs(t, "--version"); stdout != "hoist v9.9.9\n" {
		t.Errorf("with -X main.version: %q", stdout)
	}
}

func TestUnknownCommand(t *testing.T) {
	code, _, stderr := runArgs(t, "serf")
	if code != 2 || !strings.Contains(stderr, `unknown command "serf"`) || !strings.Contains(stderr, "serve") {
		t.Errorf("status %d, %q", code, stderr)
	}
}

// freePort returns a loopback address nothing listens on (now).
func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// assertReleased checks that a failed serve left nothing behind: the API
// port can be bound again and the data directory's store opened (its lock
// was released).
func assertReleased(t *testing.T, addr, dataDir string) {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Errorf("the API port is still bound: %v", err)
	} else {
		ln.Close()
	}
	cfg, err := config.Parse([]string{"--data-dir", dataDir, "--log-level", "error"}, func(string) (string, bool) { return "", false }, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := server.New(server.Options{Config: cfg, Addr: addr})
	if err != nil {
		t.Fatalf("the data directory is still held: %v", err)
	}
	if err := srv.Close(context.Background()); err != nil {
		t.Error(err)
	}
}

// TestServeReleasesEverythingOnFailure: a failure after the store opened
// closes the store (releasing its lock) and the listeners.
func TestServeReleasesEverythingOnFailure(t *testing.T) {
	cleanEnv(t)
	dir, addr := t.TempDir(), freePort(t)
	testHookServerOpened = func() error { return errors.New("injected failure") }
	defer func() { testHookServerOpened = nil }()
	code, _, stderr := runArgs(t, "serve", "--data-dir", dir, "--addr", addr, "--tls-addr", "127.0.0.1:0", "--log-level", "error")
	if code != 1 || !strings.Contains(stderr, "injected failure") {
		t.Fatalf("status %d, %q", code, stderr)
	}
	assertReleased(t, addr, dir)
}

// TestServeListenerInUse: a listener that cannot be bound is named, and
// the ones already bound are released.
func TestServeListenerInUse(t *testing.T) {
	cleanEnv(t)
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	dir, addr := t.TempDir(), freePort(t)
	code, _, stderr := runArgs(t, "serve", "--data-dir", dir, "--addr", addr, "--tls-addr", "", "--pprof-addr", busy.Addr().String(), "--log-level", "error")
	if code != 1 || !strings.Contains(stderr, "--pprof-addr") {
		t.Fatalf("status %d, %q", code, stderr)
	}
	assertReleased(t, addr, dir)
}

// TestDataDirErrorNamesFlagAndPath: a data directory that cannot be
// created is reported with the setting and the path.
func TestDataDirErrorNamesFlagAndPath(t *testing.T) {
	cleanEnv(t)
	file := filepath.Join(t.TempDir(), "not-a-dir")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	dataDir := filepath.Join(file, "data")
	code, _, stderr := runArgs(t, "serve", "--data-dir", dataDir, "--addr", "127.0.0.1:0", "--tls-addr", "", "--log-level", "error")
	if code != 1 || !strings.Contains(stderr, "--data-dir") || !strings.Contains(stderr, dataDir) {
		t.Errorf("status %d, %q", code, stderr)
	}
}

// TestServeFromEnvironmentAndStop serves with settings from the
// environment only (an empty HOIST_TLS_ADDR turns TLS off), then stops
// cleanly on SIGINT, as Ctrl-C does.
func TestServeFromEnvironmentAndStop(t *testing.T) {
	cleanEnv(t)
	dir := t.TempDir()
	ready := filepath.Join(dir, "ready.json")
	t.Setenv("HOIST_DATA_DIR", filepath.Join(dir, "data"))
	t.Setenv("HOIST_ADDR", "127.0.0.1:0")
	t.Setenv("HOIST_TLS_ADDR", "")
	t.Setenv("HOIST_READY_FILE", ready)
	t.Setenv("HOIST_LOG_LEVEL", "error")
	t.Setenv("HOIST_SHUTDOWN_GRACE", "5s")
	done := make(chan int, 1)
	var stderr bytes.Buffer
	go func() { done <- run(nil, &bytes.Buffer{}, &stderr) }()
	var addrs map[string]string
	deadline := time.Now().Add(30 * time.Second)
	for {
		b, err := os.ReadFile(ready)
		if err == nil && json.Unmarshal(b, &addrs) == nil {
			break
		}
		select {
		case code := <-done:
			t.Fatalf("hoist exited with %d: %s", code, stderr.String())
		case <-time.After(10 * time.Millisecond): // polling a file another goroutine writes
		}
		if time.Now().After(deadline) {
			t.Fatal("hoist did not write its ready file")
		}
	}
	if addrs["addr"] == "" || addrs["tls_addr"] != "" {
		t.Errorf("ready file %v: want an API address and no TLS listener", addrs)
	}
	if err := syscall.Kill(os.Getpid(), syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	select {
	case code := <-done:
		if code != 0 {
			t.Fatalf("status %d after SIGINT: %s", code, stderr.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("hoist did not stop on SIGINT")
	}
	assertReleased(t, addrs["addr"], filepath.Join(dir, "data"))
}

func TestAdminRegionLikeTheAWSCLI(t *testing.T) {
	tests := map[string]struct {
		env  map[string]string
		args []string
		want string
	}{
		"AWS_REGION first":           {env: map[string]string{"AWS_REGION": "eu-west-1", "AWS_DEFAULT_REGION": "ap-south-1"}, want: "eu-west-1"},
		"then AWS_DEFAULT_REGION":    {env: map[string]string{"AWS_DEFAULT_REGION": "ap-south-1"}, want: "ap-south-1"},
		"else Hoist's default":       {want: config.DefaultRegion},
		"the flag over the variable": {env: map[string]string{"AWS_REGION": "eu-west-1"}, args: []string{"--region", "us-east-1"}, want: "us-east-1"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			for _, k := range []string{"AWS_REGION", "AWS_DEFAULT_REGION"} {
				t.Setenv(k, tc.env[k])
			}
			fs := flag.NewFlagSet("t", flag.ContinueOnError)
			c := adminFlags(fs)
			if err := fs.Parse(tc.args); err != nil {
				t.Fatal(err)
			}
			if c.region != tc.want {
				t.Errorf("region %q, want %q", c.region, tc.want)
			}
		})
	}
}

// TestVersionFromBuildInfo: the version names the VCS revision (in full)
// and whether the tree was modified whenever the go command stamped them,
// and says why there is none when it did not.
func TestVersionFromBuildInfo(t *testing.T) {
	const rev = "0123abc4567890def0123abc4567890def012345"
	vcs := []debug.BuildSetting{{Key: "vcs", Value: "git"}, {Key: "vcs.revision", Value: rev},
		{Key: "vcs.time", Value: "2026-11-25T10:00:00Z"}, {Key: "vcs.modified", Value: "true"}}
	for name, tc := range map[string]struct {
		bi   debug.BuildInfo
		want string
	}{
		"go install @version": {bi: debug.BuildInfo{Main: debug.Module{Version: "v1.2.3"}}, want: "v1.2.3"},
		"a git clone (the go command's pseudo-version)": {bi: debug.BuildInfo{Main: debug.Module{Version: "v0.0.0-20261125100000-0123abc45678+dirty"}, Settings: vcs},
			want: "v0.0.0-20261125100000-0123abc45678+dirty (git " + rev + ", 2026-11-25T10:00:00Z, modified)"},
		"a git checkout": {bi: debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: vcs},
			want: "dev (git " + rev + ", 2026-11-25T10:00:00Z, modified)"},
		"clean checkout": {bi: debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: vcs[:3]},
			want: "dev (git " + rev + ", 2026-11-25T10:00:00Z)"},
		"no VCS information": {bi: debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, want: "dev " + noRevision},
	} {
		if got := versionFrom(&tc.bi); got != tc.want {
			t.Errorf("%s:\n got %q\nwant %q", name, got, tc.want)
		}
	}
}

package main

import (
	"bytes"
	"io"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/hoistgg/hoist/internal/config"
	"github.com/hoistgg/hoist/internal/server"
)

// adminEnv are the variables hoist admin reads: each test sets what it
// needs and sees the others unset.
var adminEnv = []string{"HOIST_ENDPOINT", "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_GAMELIFT", "AWS_ACCESS_KEY_ID",
	"AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_REGION", "AWS_DEFAULT_REGION"}

// unsetAdminEnv unsets adminEnv for the test (restored after it).
func unsetAdminEnv(t *testing.T) {
	for _, k := range adminEnv {
		t.Setenv(k, "")
		os.Unsetenv(k)
	}
}

// startHoist serves a Hoist in this process (env is its HOIST_*
// environment) and returns its URL.
func startHoist(t *testing.T, env map[string]string) string {
	t.Helper()
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	cfg, err := config.Parse([]string{"--data-dir", t.TempDir(), "--process-user", ""}, lookup, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := server.New(server.Options{Config: cfg, Addr: "127.0.0.1:1"})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(func() {
		ts.Close()
		_ = srv.Close(t.Context())
	})
	return ts.URL
}

const testResource = "arn:aws:gamelift:us-west-2:123456789012:gamesessionqueue/q"

// TestAdminWithoutAWSVariables: against a Hoist without credentials, hoist
// admin needs no AWS_* variable, and finds Hoist through $HOIST_ENDPOINT,
// else $AWS_ENDPOINT_URL_GAMELIFT, else $AWS_ENDPOINT_URL (as the aws CLI).
func TestAdminWithoutAWSVariables(t *testing.T) {
	url := startHoist(t, nil)
	for _, k := range []string{"HOIST_ENDPOINT", "AWS_ENDPOINT_URL_GAMELIFT", "AWS_ENDPOINT_URL"} {
		t.Run(k, func(t *testing.T) {
			unsetAdminEnv(t)
			t.Setenv(k, url)
			code, stdout, stderr := runArgs(t, "admin", "send-test-event", "--resource", testResource)
			if code != 0 || !strings.HasPrefix(stdout, "published event ") {
				t.Errorf("status %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
			}
		})
	}
	t.Run("HOIST_ENDPOINT first", func(t *testing.T) {
		unsetAdminEnv(t)
		t.Setenv("HOIST_ENDPOINT", url)
		t.Setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:1")
		if code, _, stderr := runArgs(t, "admin", "send-test-event", "--resource", testResource); code != 0 {
			t.Errorf("status %d: %s", code, stderr)
		}
	})
}

// TestAdminWithoutAKeyAgainstCredentials: a Hoist that verifies signatures
// refuses hoist admin without a key, and the error says what to set.
func TestAdminWithoutAKeyAgainstCredentials(t *testing.T) {
	url := startHoist(t, map[string]string{"HOIST_CREDENTIALS": "AKIDADMIN:admin-secret"})
	unsetAdminEnv(t)
	t.Setenv("HOIST_ENDPOINT", url)
	code, _, stderr := runArgs(t, "admin", "send-test-event", "--resource", testResource)
	if code != 1 || !strings.Contains(stderr, "$AWS_ACCESS_KEY_ID") || strings.Count(stderr, "\n") != 1 {
		t.Errorf("status %d, stderr %q: want 1 and one line saying to set $AWS_ACCESS_KEY_ID", code, stderr)
	}
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIDADMIN")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "admin-secret")
	var stdout bytes.Buffer
	if code := run([]string{"admin", "send-test-event", "--resource", testResource}, &stdout, io.Discard); code != 0 {
		t.Errorf("with the key: status %d", code)
	}
}

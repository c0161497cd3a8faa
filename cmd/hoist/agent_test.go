package main

import (
	"strings"
	"testing"
)

// TestAgentHelp: hoist help lists agent; hoist agent --help prints its
// usage and every flag, status 0.
func TestAgentHelp(t *testing.T) {
	if _, stdout, _ := runArgs(t, "help"); !strings.Contains(stdout, "  agent ") {
		t.Errorf("hoist help does not list agent:\n%s", stdout)
	}
	for _, args := range [][]string{{"agent", "--help"}, {"agent", "help"}} {
		code, _, stderr := runArgs(t, args...)
		if code != 0 || !strings.HasPrefix(stderr, "usage: hoist agent --endpoint URL --fleet ID --location LOCATION --ip ADDRESS") {
			t.Fatalf("hoist %s: status %d\n%s", strings.Join(args, " "), code, stderr)
		}
		for _, flag := range []string{"-endpoint", "-fleet", "-location", "-ip", "-compute-name", "-dns-name", "-ca-file",
			"-region", "-profile", "-data-dir", "-process-user", "-process-env", "-heartbeat-interval", "-terminate-grace"} {
			if !strings.Contains(stderr, "  "+flag+" ") {
				t.Errorf("hoist agent --help does not list %s", flag)
			}
		}
	}
}

// TestAgentUsageErrors: a missing or bad setting is one line naming it,
// status 2, before anything is contacted.
func TestAgentUsageErrors(t *testing.T) {
	t.Setenv("HOIST_ENDPOINT", "")
	t.Setenv("AWS_ENDPOINT_URL_GAMELIFT", "")
	t.Setenv("AWS_ENDPOINT_URL", "")
	base := []string{"--endpoint", "https://127.0.0.1:9443", "--fleet", "fleet-1", "--location", "custom-home", "--ip", "192.0.2.1"}
	without := func(flag string) []string {
		var out []string
		for i := 0; i < len(base); i += 2 {
			if base[i] != flag {
				out = append(out, base[i], base[i+1])
			}
		}
		return append([]string{"agent"}, out...)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{without("--endpoint"), "hoist agent: --endpoint is required"},
		{without("--fleet"), "hoist agent: --fleet is required"},
		{without("--location"), "hoist agent: --location is required"},
		{without("--ip"), "hoist agent: --ip is required"},
		{append([]string{"agent", "--endpoint", "127.0.0.1:9443"}, base[2:]...), `hoist agent: --endpoint "127.0.0.1:9443": want http(s)://HOST:PORT`},
		{append(append([]string{"agent"}, base...), "--heartbeat-interval", "0s"), "hoist agent: --heartbeat-interval and --terminate-grace must be positive"},
		{append(append([]string{"agent"}, base...), "extra"), `hoist agent: unexpected argument "extra"`},
	} {
		code, stdout, stderr := runArgs(t, tc.args...)
		if code != 2 || stdout != "" || strings.TrimSpace(stderr) != tc.want {
			t.Errorf("hoist %s: status %d, stderr %q; want 2 and %q", strings.Join(tc.args, " "), code, stderr, tc.want)
		}
	}
}

func TestComputeNameOf(t *testing.T) {
	for host, want := range map[string]string{"laptop-1": "laptop-1", "db.example.com": "db-example-com", "a_b c": "a-b-c"} {
		if got := computeNameOf(host); got != want {
			t.Errorf("computeNameOf(%q) = %q, want %q", host, got, want)
		}
	}
}

package main

import (
	"strings"
	"testing"
)

// TestBadFlagValueOneError: a bad setting is one line on stderr naming the
// flag, the value and what was expected (not the usage between two copies
// of the error), and exit status 2.
func TestBadFlagValueOneError(t *testing.T) {
	cleanEnv(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--addr=nonsense"}, `hoist: --addr "nonsense": want host:port`},
		{[]string{"--max-unpacked-size=12XB"}, `hoist: --max-unpacked-size "12XB": want a positive number of bytes`},
		{[]string{"serve", "--log-level", "loud"}, `hoist: --log-level "loud": want debug, info, warn or error`},
		{[]string{"serve", "--nope"}, `hoist: unknown flag --nope`},
	} {
		code, stdout, stderr := runArgs(t, tc.args...)
		if code != 2 || stdout != "" || strings.Count(stderr, "\n") != 1 || !strings.HasPrefix(stderr, tc.want) {
			t.Errorf("hoist %s: status %d, stderr:\n%s\nwant status 2 and one line starting %q", strings.Join(tc.args, " "), code, stderr, tc.want)
		}
	}
}

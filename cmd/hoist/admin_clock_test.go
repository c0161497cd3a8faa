package main

import (
	"strings"
	"testing"
	"time"
)

// TestAdminClock: hoist admin clock shows a manual clock standing still,
// advance moves it by exactly the duration (flags before or after the
// words), and a bad duration is refused before any call.
func TestAdminClock(t *testing.T) {
	url := startHoist(t, map[string]string{"HOIST_CLOCK": "manual"})
	unsetAdminEnv(t)
	show := func() time.Time {
		t.Helper()
		code, stdout, stderr := runArgs(t, "admin", "clock", "--endpoint", url)
		kind, at, _ := strings.Cut(strings.TrimSpace(stdout), " ")
		tm, err := time.Parse(time.RFC3339Nano, at)
		if code != 0 || kind != "manual" || err != nil {
			t.Fatalf("hoist admin clock: status %d, %q (%v)\nstderr: %s", code, stdout, err, stderr)
		}
		return tm
	}
	start := show()
	if again := show(); !again.Equal(start) {
		t.Fatalf("the manual clock moved on its own: %v, then %v", start, again)
	}
	code, stdout, stderr := runArgs(t, "admin", "clock", "advance", "90s", "--endpoint", url)
	if code != 0 || !strings.HasPrefix(stdout, "manual ") {
		t.Fatalf("advance 90s: status %d, %q\nstderr: %s", code, stdout, stderr)
	}
	if got := show(); got.Sub(start) != 90*time.Second {
		t.Fatalf("after advance 90s the clock moved by %v", got.Sub(start))
	}
	for _, bad := range []string{"0s", "soon", "-5s"} {
		if code, _, stderr := runArgs(t, "admin", "clock", "--endpoint", url, "advance", bad); code != 2 {
			t.Errorf("advance %s: status %d, want 2 (stderr %s)", bad, code, stderr)
		}
	}
	if got := show(); got.Sub(start) != 90*time.Second {
		t.Fatalf("refused advances moved the clock by %v", got.Sub(start)-90*time.Second)
	}
}

// TestAdminClockRealRefusesAdvance: a real clock is shown as such, and an
// advance is refused with an error naming the setting.
func TestAdminClockRealRefusesAdvance(t *testing.T) {
	url := startHoist(t, nil)
	unsetAdminEnv(t)
	code, stdout, _ := runArgs(t, "admin", "clock", "--endpoint", url)
	if code != 0 || !strings.HasPrefix(stdout, "real ") {
		t.Fatalf("hoist admin clock: status %d, %q", code, stdout)
	}
	code, _, stderr := runArgs(t, "admin", "clock", "--endpoint", url, "advance", "90s")
	if code != 1 || !strings.Contains(stderr, "InvalidRequestException") || !strings.Contains(stderr, "--clock manual") {
		t.Fatalf("advance on a real clock: status %d, stderr %q; want 1 and an InvalidRequestException naming --clock manual", code, stderr)
	}
}

package hoisttest

import (
	"strings"
	"testing"
	"time"
)

// Eventually polls cond every poll until it reports done, and fails t if
// timeout passes first; cond also returns what it saw, for the failure
// message.
func Eventually(t testing.TB, poll, timeout time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		ok, state := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not reached within %s; last seen: %s", what, timeout, state)
		}
		time.Sleep(poll) // polling interval, not a wait for time to pass
	}
}

// Tail returns the last lines of s.
func Tail(s string, lines int) string {
	ls := strings.Split(s, "\n")
	if len(ls) > lines {
		ls = ls[len(ls)-lines:]
	}
	return strings.Join(ls, "\n")
}

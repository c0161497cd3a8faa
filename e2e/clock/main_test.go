package clock_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	gl "github.com/aws/aws-sdk-go-v2/service/gamelift"

	"github.com/hoistgg/hoist/e2e/hoisttest"
)

// afterAdvance is how long, in wall time, an effect may take to follow an
// advance, and a timer may take in all from its start to its effect (the
// issue's bound: each passes in under a second of wall time).
const afterAdvance = time.Second

// startManual starts a Hoist with a manual clock for one test (its clock
// is the test's alone) and returns it with an aws-sdk-go-v2 client.
func startManual(t *testing.T, args ...string) (*hoisttest.Hoist, *gl.Client) {
	t.Helper()
	h := hoisttest.Start(t, hoisttest.Options{Args: append([]string{"--clock", "manual"}, args...)})
	return h, h.V2()
}

// runAdmin runs `hoist admin <args>` (the built binary) against h with the
// e2e credentials and returns its exit code and output.
func runAdmin(t *testing.T, h *hoisttest.Hoist, args ...string) (int, string, string) {
	t.Helper()
	full := append(append([]string{"admin"}, args...), "--endpoint", h.URL, "--region", hoisttest.Region,
		"--access-key-id", hoisttest.AccessKeyID, "--secret-access-key", hoisttest.SecretAccessKey)
	cmd := exec.CommandContext(t.Context(), hoisttest.Binary(t), full...)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "AWS_") && !strings.HasPrefix(kv, "HOIST_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return 0, stdout.String(), stderr.String()
	case errors.As(err, &exit):
		return exit.ExitCode(), stdout.String(), stderr.String()
	}
	t.Fatalf("hoist admin: %v", err)
	return 0, "", ""
}

// advance moves h's clock by d with `hoist admin clock advance` and
// returns the wall time at which the command was started.
func advance(t *testing.T, h *hoisttest.Hoist, d string) time.Time {
	t.Helper()
	start := time.Now()
	code, stdout, stderr := runAdmin(t, h, "clock", "advance", d)
	if code != 0 || !strings.HasPrefix(stdout, "manual ") {
		t.Fatalf("hoist admin clock advance %s: exit %d\n%s%s", d, code, stdout, stderr)
	}
	return start
}

// within polls cond (through the real client) until it holds, failing the
// test when it has not within afterAdvance of since; it returns how long
// it took.
func within(t *testing.T, since time.Time, what string, cond func(ctx context.Context) (bool, error)) time.Duration {
	t.Helper()
	ctx, cancel := context.WithDeadline(t.Context(), since.Add(afterAdvance))
	defer cancel()
	for {
		ok, err := cond(ctx)
		if ok {
			took := time.Since(since)
			t.Logf("%s %v after the advance", what, took.Round(time.Millisecond))
			return took
		}
		if ctx.Err() != nil {
			t.Fatalf("%s: not within %v of the advance (last error: %v)", what, afterAdvance, err)
		}
		time.Sleep(10 * time.Millisecond) // polling the API for a state, not waiting for time to pass
	}
}

// passedWithin fails the test unless what, started at began (the wall
// time just before the call that started the timer), took less than
// afterAdvance of wall time in all, every advance and check between
// included.
func passedWithin(t *testing.T, began time.Time, what string) {
	t.Helper()
	took := time.Since(began)
	t.Logf("%s passed in %v of wall time", what, took.Round(time.Millisecond))
	if took >= afterAdvance {
		t.Errorf("%s took %v of wall time, want under %v", what, took, afterAdvance)
	}
}

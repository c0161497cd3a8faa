package loadreport

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
)

// Config is a load tool's configuration as Main takes it.
type Config interface {
	// JSONPath is the -json file ("" for none).
	JSONPath() string
}

// Main is Run for a tool whose parse returns its configuration alone (the
// configuration names the -json file).
func Main[C Config, R Report](name string, args []string, stdout, stderr io.Writer,
	parse func(args []string, stderr io.Writer) (C, error),
	scenario func(ctx context.Context, cfg C, log io.Writer) (R, error)) int {
	withPath := func(args []string, stderr io.Writer) (C, string, error) {
		cfg, err := parse(args, stderr)
		if err != nil {
			return cfg, "", err
		}
		return cfg, cfg.JSONPath(), nil
	}
	return Run(name, args, stdout, stderr, withPath, scenario)
}

// IntList reads a flag's "1,2,3": positive whole numbers.
func IntList(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("%q is not a positive number", f)
		}
		out = append(out, n)
	}
	return out, nil
}

// Poll is the interval of WaitFor (not a stand-in for time passing: each
// wait ends as soon as its condition holds, or fails at its deadline).
const Poll = 100 * time.Millisecond

// WaitFor polls cond every Poll until it holds, fails or timeout passes;
// cond also returns what it saw, for the error, and what names the wait.
func WaitFor(ctx context.Context, timeout time.Duration, what string, cond func() (bool, string, error)) error {
	deadline := time.Now().Add(timeout)
	for {
		ok, state, err := cond()
		if err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		if ok {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s: not reached within %s (last seen: %s)", what, timeout, state)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(Poll):
		}
	}
}

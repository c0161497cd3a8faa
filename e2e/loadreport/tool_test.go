package loadreport

import (
	"context"
	"errors"
	"io"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

func TestIntList(t *testing.T) {
	if got, err := IntList("1, 8,64"); err != nil || !slices.Equal(got, []int{1, 8, 64}) {
		t.Fatalf("IntList = %v, %v", got, err)
	}
	for _, bad := range []string{"", "0", "1,x", "-2"} {
		if _, err := IntList(bad); err == nil {
			t.Errorf("IntList(%q): no error", bad)
		}
	}
}

func TestGroupByAndMedianOf(t *testing.T) {
	type run struct {
		clients int
		rate    float64
	}
	runs := []run{{8, 3}, {1, 10}, {8, 1}, {1, 30}, {8, 2}}
	order, groups := GroupBy(runs, func(r run) int { return r.clients })
	if !slices.Equal(order, []int{8, 1}) || len(groups[8]) != 3 || len(groups[1]) != 2 {
		t.Fatalf("GroupBy = %v, %v", order, groups)
	}
	rate := func(r run) float64 { return r.rate }
	if m := MedianOf(groups[8], rate); m != 2 {
		t.Errorf("MedianOf(8 clients) = %v, want 2", m)
	}
	if m := MedianOf(groups[1], rate); m != 20 {
		t.Errorf("MedianOf(1 client) = %v, want 20", m)
	}
	if m := MedianOf(nil, rate); m != 0 {
		t.Errorf("MedianOf(none) = %v", m)
	}
}

func TestWaitFor(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		calls := 0
		err := WaitFor(t.Context(), time.Second, "third call", func() (bool, string, error) {
			calls++
			return calls == 3, "", nil
		})
		if err != nil || calls != 3 {
			t.Fatalf("WaitFor = %v after %d calls", err, calls)
		}
		err = WaitFor(t.Context(), time.Second, "never", func() (bool, string, error) { return false, "still 0", nil })
		if err == nil || !strings.Contains(err.Error(), "never: not reached within 1s (last seen: still 0)") {
			t.Fatalf("WaitFor past its deadline = %v", err)
		}
		boom := errors.New("boom")
		if err := WaitFor(t.Context(), time.Second, "x", func() (bool, string, error) { return false, "", boom }); !errors.Is(err, boom) {
			t.Fatalf("WaitFor with a failing condition = %v", err)
		}
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		if err := WaitFor(ctx, time.Minute, "x", func() (bool, string, error) { return false, "", nil }); !errors.Is(err, context.Canceled) {
			t.Fatalf("WaitFor with its context ended = %v", err)
		}
	})
}

type mainConfig struct{ json string }

func (c *mainConfig) JSONPath() string { return c.json }

func TestMainTakesTheJSONPath(t *testing.T) {
	parse := func(args []string, _ io.Writer) (*mainConfig, error) {
		if len(args) > 0 {
			return nil, errors.New("bad flag")
		}
		return &mainConfig{json: t.TempDir() + "/r.json"}, nil
	}
	var path string
	scenario := func(_ context.Context, c *mainConfig, _ io.Writer) (*report, error) {
		path = c.JSONPath()
		return &report{N: 1}, nil
	}
	var out, errw strings.Builder
	if code := Main("t", nil, &out, &errw, parse, scenario); code != 0 || path == "" {
		t.Fatalf("Main = %d (%q), path %q", code, errw.String(), path)
	}
	if code := Main("t", []string{"x"}, &out, &errw, parse, scenario); code != 2 {
		t.Fatalf("Main with bad flags = %d", code)
	}
}

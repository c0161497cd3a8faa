package loadreport

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestStatsAndMedian(t *testing.T) {
	var d []time.Duration
	for i := 100; i >= 1; i-- {
		d = append(d, time.Duration(i)*time.Millisecond)
	}
	s := Stats(d)
	if s.Count != 100 || s.P50 != 50 || s.P90 != 90 || s.P99 != 99 || s.Max != 100 {
		t.Fatalf("Stats = %+v", s)
	}
	if (Stats(nil) != OpStats{}) {
		t.Fatal("Stats(nil) not zero")
	}
	for _, tc := range []struct {
		v    []float64
		want float64
	}{{nil, 0}, {[]float64{3}, 3}, {[]float64{4, 1, 3}, 3}, {[]float64{4, 1, 3, 2}, 2.5}} {
		if got := Median(tc.v); got != tc.want {
			t.Errorf("Median(%v) = %v, want %v", tc.v, got, tc.want)
		}
	}
	if Plural(1, "run") != "1 run" || Plural(3, "run") != "3 runs" {
		t.Fatal("Plural")
	}
}

type report struct{ N int }

func (r *report) Print(w io.Writer) { io.WriteString(w, "printed\n") }

func TestRun(t *testing.T) {
	jsonPath := filepath.Join(t.TempDir(), "r.json")
	parse := func(args []string, _ io.Writer) (string, string, error) {
		if len(args) > 0 && args[0] == "-h" {
			return "", "", flag.ErrHelp
		}
		if len(args) > 0 && args[0] == "bad" {
			return "", "", errors.New("bad flag")
		}
		return "cfg", jsonPath, nil
	}
	ok := func(context.Context, string, io.Writer) (*report, error) { return &report{N: 7}, nil }
	failEarly := func(context.Context, string, io.Writer) (*report, error) { return nil, errors.New("no binary") }
	var out, errw bytes.Buffer
	if code := Run("t", nil, &out, &errw, parse, ok); code != 0 || out.String() != "printed\n" {
		t.Fatalf("ok run: %d %q %q", code, out.String(), errw.String())
	}
	if b, err := os.ReadFile(jsonPath); err != nil || !strings.Contains(string(b), `"N": 7`) {
		t.Fatalf("json: %s %v", b, err)
	}
	out.Reset()
	if code := Run("t", nil, &out, &errw, parse, failEarly); code != 1 || out.Len() != 0 || !strings.Contains(errw.String(), "t: no binary") {
		t.Fatalf("failed run: %d %q %q", code, out.String(), errw.String())
	}
	if code := Run("t", []string{"bad"}, &out, &errw, parse, ok); code != 2 {
		t.Fatalf("bad flags: %d", code)
	}
	if code := Run("t", []string{"-h"}, &out, &errw, parse, ok); code != 0 {
		t.Fatalf("help: %d", code)
	}
}

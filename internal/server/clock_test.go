package server

import (
	"context"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/hoistgg/hoist/internal/api"
	"github.com/hoistgg/hoist/internal/config"
)

// newWithClock composes a Hoist on dir with --clock kind.
func newWithClock(t testing.TB, dir, kind string) *Server {
	t.Helper()
	cfg, err := config.Parse([]string{"--data-dir", dir, "--clock", kind, "--process-user", ""},
		func(string) (string, bool) { return "", false }, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(Options{Config: cfg, Addr: "127.0.0.1:1"})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestManualClockKeptAcrossRestart: the manual clock's time is the
// store's: a restart keeps it, a restart with --clock real leaves it, and
// the next --clock manual takes it up again.
func TestManualClockKeptAcrossRestart(t *testing.T) {
	dir := t.TempDir()
	s := newWithClock(t, dir, config.ClockManual)
	start := s.describeClock()
	out, err := s.advanceClock(t.Context(), AdvanceClockInput{By: "90s"})
	if err != nil || out.Time.Sub(start.Time) != 90*time.Second {
		t.Fatalf("advance 90s: %+v, %v", out, err)
	}
	_ = s.Close(context.Background())
	for _, kind := range []string{config.ClockReal, config.ClockManual} {
		s = newWithClock(t, dir, kind)
		got := s.describeClock()
		_ = s.Close(context.Background())
		if got.Clock != kind {
			t.Fatalf("restarted with --clock %s: %+v", kind, got)
		}
		if kind == config.ClockManual && !got.Time.Equal(out.Time) {
			t.Fatalf("restarted: %v, want the stored %v", got.Time, out.Time)
		}
	}
}

// TestAdvanceClockRefusals: By must be a positive duration of at most ten
// years, and the clock stays before 2200; each refusal is
// InvalidRequestException naming By, and leaves the clock.
func TestAdvanceClockRefusals(t *testing.T) {
	s := newWithClock(t, t.TempDir(), config.ClockManual)
	defer s.Close(context.Background())
	start := s.now()
	for _, by := range []string{"", "0s", "-1s", "soon", "87601h", "1e9h"} {
		_, err := s.advanceClock(t.Context(), AdvanceClockInput{By: by})
		var ire *api.InvalidRequestException
		if !errors.As(err, &ire) {
			t.Fatalf("By %q: %v, want InvalidRequestException", by, err)
		}
		if !s.now().Equal(start) {
			t.Fatalf("By %q moved the clock", by)
		}
	}
	for {
		_, err := s.advanceClock(t.Context(), AdvanceClockInput{By: "87600h"})
		if err == nil {
			continue
		}
		var ire *api.InvalidRequestException
		if !errors.As(err, &ire) || s.now().After(clockEnd) {
			t.Fatalf("advancing to the end: %v at %v", err, s.now())
		}
		break
	}
}

// FuzzAdvanceClock: any AdvanceClock body is answered without a panic;
// the clock moves only on success, exactly by By, and never back.
func FuzzAdvanceClock(f *testing.F) {
	s := newWithClock(f, f.TempDir(), config.ClockManual)
	f.Cleanup(func() { _ = s.Close(context.Background()) })
	for _, seed := range []string{`{"By":"90s"}`, `{"By":"-5s"}`, `{"By":"1h30m"}`, `{}`, `{"By":1}`, `{"By":"90s","X":1}`, `[`} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		before := s.now()
		out, known, err := s.clockAdmin(context.Background(), "AdvanceClock", body)
		after := s.now()
		if !known {
			t.Fatal("AdvanceClock unknown")
		}
		if after.Before(before) {
			t.Fatalf("the clock went back: %v, then %v", before, after)
		}
		if err != nil {
			var ae api.Error
			if !errors.As(err, &ae) || !after.Equal(before) {
				t.Fatalf("refused with %v (modeled: %v), clock %v -> %v", err, errors.As(err, &ae), before, after)
			}
			return
		}
		d, _ := time.ParseDuration(decodeBy(t, body))
		if got := out.(ClockOutput).Time; !got.Equal(before.Add(d).UTC()) || !after.Equal(got) {
			t.Fatalf("advanced %s: %v -> %v (answered %v)", d, before, after, got)
		}
	})
}

// decodeBy reads By from an AdvanceClock body that was accepted.
func decodeBy(t *testing.T, body []byte) string {
	var in AdvanceClockInput
	if err := decodeAdmin(body, &in); err != nil {
		t.Fatalf("an accepted body does not decode: %v", err)
	}
	return in.By
}

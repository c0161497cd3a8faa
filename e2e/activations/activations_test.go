//go:build linux

package activations

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestSessionLine(t *testing.T) {
	const arn = "arn:aws:gamelift:us-west-2::gamesession/fleet-1/gsess-2"
	for _, tc := range []struct {
		line             string
		id               string
		ignored, matches bool
	}{
		{`time=2026-01-01T00:00:00.000Z level=INFO msg="game session activated" process=p-1 gameSession=` + arn, arn, false, true},
		{`time=2026-01-01T00:00:00.000Z level=INFO msg="game session activated" process=p-1 gameSession=` + arn + ` extra=1`, arn, false, true},
		{`level=INFO msg="game session activated" gameSession="a b\"c"`, `a b"c`, false, true},
		{`level=INFO msg="game session on a process that is not ready: ignored" process=p-1 gameSession=` + arn, arn, true, true},
		{`level=INFO msg="game session started" process=p-1 gameSession=` + arn, "", false, false},
		{`level=INFO msg="game session activated" process=p-1`, "", false, false},
		{`level=INFO msg="game session activated" gameSession="unterminated`, "", false, false},
	} {
		id, ignored, ok := sessionLine([]byte(tc.line))
		if id != tc.id || ignored != tc.ignored || ok != tc.matches {
			t.Errorf("%s: %q %v %v", tc.line, id, ignored, ok)
		}
	}
}

// TestWatcher follows log files written in pieces, a file created after
// the watch started, and an activation seen before anyone waits for it.
func TestWatcher(t *testing.T) {
	dir := t.TempDir()
	early, err := os.Create(filepath.Join(dir, "process-1.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer early.Close()
	early.WriteString("level=INFO msg=\"game session activated\" gameSession=gs-before\n")
	w, err := New()
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if err := w.Watch(dir); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Wait("gs-before", 5*time.Second); err != nil {
		t.Errorf("a line written before the watch: %v", err)
	}
	// A line in two writes.
	start := time.Now()
	early.WriteString("level=INFO msg=\"game session activated\" gameS")
	early.WriteString("ession=gs-split\n")
	at, err := w.Wait("gs-split", 5*time.Second)
	if err != nil || at.Before(start) {
		t.Errorf("a line written in two pieces: %v, %v", at, err)
	}
	late, err := os.Create(filepath.Join(dir, "process-2.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer late.Close()
	late.WriteString("level=INFO msg=\"game session on a process that is not ready: ignored\" gameSession=gs-ignored\n")
	if _, err := w.Wait("gs-ignored", 5*time.Second); err != ErrIgnored {
		t.Errorf("an ignored game session in a new file: %v", err)
	}
	if _, err := w.Wait("gs-never", 50*time.Millisecond); err == nil || err == ErrIgnored {
		t.Errorf("a game session never logged: %v", err)
	}
	// Not a .log file: not followed.
	os.WriteFile(filepath.Join(dir, "other.txt"), []byte("level=INFO msg=\"game session activated\" gameSession=gs-txt\n"), 0o644)
	late.WriteString("level=INFO msg=\"game session activated\" gameSession=gs-last\n")
	if _, err := w.Wait("gs-last", 5*time.Second); err != nil {
		t.Error(err)
	}
	if _, err := w.Wait("gs-txt", 50*time.Millisecond); err == nil {
		t.Error("a line of a file that is not a .log was seen")
	}
}

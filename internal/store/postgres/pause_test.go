//go:build linux

package postgres

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/hoistgg/hoist/internal/store"
	"github.com/hoistgg/hoist/internal/store/postgres/pgtest"
)

// The child process of TestPausedReplicaIsFenced: pauseURLEnv holds the
// schema's connection string, pauseModeEnv where it waits to be paused.
const (
	pauseURLEnv  = "HOIST_PG_PAUSE_URL"
	pauseModeEnv = "HOIST_PG_PAUSE_MODE"
)

// TestPausedReplicaIsFenced: a replica (a child process) takes a lease and
// starts a fenced Update; it is stopped with SIGSTOP past its lease's
// expiry, another replica takes the lease, and when the first is
// continued (SIGCONT) its commit fails and its write is not kept.
//
// "in function": stopped while its function runs (before the fence check).
// "before commit": stopped after the fence check, its transaction holding
// the lease row FOR SHARE: the successor waits until PostgreSQL ends the
// stopped replica's session (idle_in_transaction_session_timeout, 1s here).
func TestPausedReplicaIsFenced(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a child process")
	}
	for name, mode := range map[string]string{"in function": "fn", "before commit": "commit"} {
		t.Run(name, func(t *testing.T) { testPaused(t, mode) })
	}
}

func testPaused(t *testing.T, mode string) {
	url := pgtest.URL(t)
	child := startPaused(t, url, mode)
	if got := child.line(t); !strings.HasPrefix(got, "granted 1") {
		t.Fatalf("child: %q, want its grant", got)
	}
	if got := child.line(t); got != "waiting" {
		t.Fatalf("child: %q, want waiting", got)
	}
	child.stop(t)

	// The successor's clock is 11s ahead: the child's 10s lease has expired.
	s := openTestURL(t, url, Options{ClockShift: func() time.Duration { return 11 * time.Second }})
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	g, ok, err := s.AcquireLease(ctx, "loop", "successor", 10*time.Second)
	if err != nil || !ok || g.Term != 2 {
		t.Fatalf("successor's AcquireLease while the holder is stopped: %v %+v %v", ok, g, err)
	}
	child.resume(t)
	if got := child.line(t); got != "result lease lost" {
		t.Fatalf("the resumed holder's fenced Update: %q, want it refused as lease lost", got)
	}
	err = s.View(ctx, func(tx store.Tx) error {
		_, err := tx.Get(ctx, "K", "paused-write")
		return err
	})
	if !errors.Is(err, store.ErrNotFound) {
		t.Errorf("the paused holder's write: %v, want it absent", err)
	}
	err = s.UpdateFenced(ctx, g, func(tx store.Tx) error {
		return tx.Insert(ctx, store.Record{Kind: "K", ID: "successor-write"})
	})
	if err != nil {
		t.Errorf("the successor's fenced Update: %v", err)
	}
}

// openTestURL opens a store on url, closed when t ends.
func openTestURL(t *testing.T, url string, opts Options) *Store {
	t.Helper()
	s, err := Open(t.Context(), url, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// pausedChild is the running child process.
type pausedChild struct {
	cmd   *exec.Cmd
	in    io.WriteCloser
	out   *bufio.Scanner
	lines chan string
}

// startPaused starts this test binary as the child, running TestPausedChild.
func startPaused(t *testing.T, url, mode string) *pausedChild {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestPausedChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), pauseURLEnv+"="+url, pauseModeEnv+"="+mode)
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c := &pausedChild{cmd: cmd, in: in, out: bufio.NewScanner(out), lines: make(chan string, 16)}
	go func() {
		defer close(c.lines)
		for c.out.Scan() {
			if line, ok := strings.CutPrefix(c.out.Text(), "child: "); ok {
				c.lines <- line
			}
		}
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGCONT)
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	return c
}

// line returns the child's next line.
func (c *pausedChild) line(t *testing.T) string {
	t.Helper()
	select {
	case l, ok := <-c.lines:
		if !ok {
			t.Fatal("the child ended")
		}
		return l
	case <-time.After(time.Minute):
		t.Fatal("the child said nothing for a minute")
		return ""
	}
}

// stop sends SIGSTOP and waits until the child is stopped.
func (c *pausedChild) stop(t *testing.T) {
	t.Helper()
	if err := c.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	var info unix.Siginfo
	if err := unix.Waitid(unix.P_PID, c.cmd.Process.Pid, &info, unix.WSTOPPED|unix.WNOWAIT, nil); err != nil {
		t.Fatalf("waiting for the child to stop: %v", err)
	}
}

// resume lets the child's function go on (a line on its stdin, read once
// it runs again) and sends SIGCONT.
func (c *pausedChild) resume(t *testing.T) {
	t.Helper()
	if _, err := io.WriteString(c.in, "go\n"); err != nil {
		t.Fatal(err)
	}
	if err := c.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
}

// TestPausedChild is the child process of TestPausedReplicaIsFenced; it is
// skipped in a normal run. It takes the lease, says "waiting" where its
// mode says, waits for a line on stdin, and reports the fenced Update's
// outcome.
func TestPausedChild(t *testing.T) {
	url := os.Getenv(pauseURLEnv)
	if url == "" {
		t.Skip("child process of TestPausedReplicaIsFenced")
	}
	time.AfterFunc(2*time.Minute, func() { os.Exit(3) }) // never outlive the parent
	say := func(format string, args ...any) { fmt.Printf("child: "+format+"\n", args...) }
	stdin := bufio.NewReader(os.Stdin)
	wait := func() {
		say("waiting")
		_, _ = stdin.ReadString('\n')
	}
	mode := os.Getenv(pauseModeEnv)
	opts := Options{}
	waited := false
	if mode == "commit" {
		url = pgtest.WithParam(url, "idle_in_transaction_session_timeout", "1s")
		opts.beforeCommit = func() {
			if !waited {
				waited = true
				wait()
			}
		}
	}
	s, err := Open(context.Background(), url, opts)
	if err != nil {
		say("open: %v", err)
		os.Exit(2)
	}
	ctx := context.Background()
	g, ok, err := s.AcquireLease(ctx, "loop", "paused", 10*time.Second)
	if err != nil || !ok {
		say("lease: %v %v", ok, err)
		os.Exit(2)
	}
	say("granted %d", g.Term)
	err = s.UpdateFenced(ctx, g, func(tx store.Tx) error {
		if err := tx.Insert(ctx, store.Record{Kind: "K", ID: "paused-write"}); err != nil {
			return err
		}
		if mode == "fn" && !waited {
			waited = true
			wait()
		}
		return nil
	})
	switch {
	case errors.Is(err, store.ErrLeaseLost):
		say("result lease lost")
	default:
		say("result %v", err)
	}
}

package storetest

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hoistgg/hoist/internal/store"
)

// CrashDurability runs a child process (this test binary, running only the
// test named child, with the environment variable env set to the data
// directory) that writes through Updates and prints every ID right after its
// Update returned nil, kills it with SIGKILL in mid-flight, reopens the store
// with open and checks that every acknowledged write is there. (A kill loses
// what is only in the process, not what the kernel holds; power loss rests
// on the backend's fsync, not tested here.) The child test calls CrashChild.
func CrashDurability(t *testing.T, env, child string, open func(dir string) (store.Store, error)) {
	const killAfter = 1500 // acknowledgements
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^"+child+"$", "-test.count=1")
	cmd.Env = append(os.Environ(), env+"="+dir)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	acked := map[string]bool{}
	sc := bufio.NewScanner(stdout)
	killed := false
	for sc.Scan() {
		id, ok := strings.CutPrefix(sc.Text(), "ack ")
		if !ok {
			continue
		}
		acked[id] = true
		if len(acked) == killAfter && !killed {
			if err := cmd.Process.Kill(); err != nil {
				t.Fatal(err)
			}
			killed = true // keep reading: lines already in the pipe were acknowledged too
		}
	}
	_ = cmd.Wait()
	if !killed {
		t.Fatalf("child ended after %d acknowledgements; stderr:\n%s", len(acked), stderr.String())
	}

	s, err := open(dir)
	if err != nil {
		t.Fatalf("reopen after kill: %v", err)
	}
	defer s.Close()
	var missing []string
	err = s.View(context.Background(), func(tx store.Tx) error {
		for id := range acked {
			if _, err := tx.Get(context.Background(), "Crash", id); err != nil {
				missing = append(missing, id)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(missing) > 0 {
		t.Errorf("%d of %d acknowledged writes lost, e.g. %q", len(missing), len(acked), missing[0])
	}
	t.Logf("%d acknowledged writes, all present after SIGKILL", len(acked))
}

// CrashChild is the child process of CrashDurability; it skips the test
// unless env is set.
func CrashChild(t *testing.T, env string, open func(dir string) (store.Store, error)) {
	dir := os.Getenv(env)
	if dir == "" {
		t.Skip("child process of a crash test")
	}
	// Never outlive a parent that failed to kill us.
	time.AfterFunc(time.Minute, func() { os.Exit(3) })
	s, err := open(dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, "open:", err)
		os.Exit(2)
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			for i := 0; ; i++ {
				id := fmt.Sprintf("w%d-%d", w, i)
				err := s.Update(context.Background(), func(tx store.Tx) error {
					return tx.Insert(context.Background(), store.Record{Kind: "Crash", ID: id,
						Data: bytes.Repeat([]byte{'x'}, 200)})
				})
				if err != nil {
					fmt.Fprintln(os.Stderr, "update:", err)
					os.Exit(2)
				}
				mu.Lock()
				fmt.Fprintf(os.Stdout, "ack %s\n", id) // unbuffered: one write(2) per line
				mu.Unlock()
			}
		})
	}
	wg.Wait()
}

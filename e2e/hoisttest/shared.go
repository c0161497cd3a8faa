package hoisttest

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// BuildBinary builds cmd/hoist once per test binary, as Binary does, for
// callers without a testing.TB (TestMain).
func BuildBinary() (string, error) {
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "hoist-e2e-bin-")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "hoist")
		cmd := exec.Command("go", "build", "-o", binPath, "./cmd/hoist")
		cmd.Dir = RepoRoot()
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build ./cmd/hoist: %v\n%s", err, out)
		}
	})
	return binPath, buildErr
}

// mainTB stands in for a testing.TB in a Hoist started from TestMain: Stop
// reports a Hoist that would not stop on stderr.
type mainTB struct{ testing.TB }

func (mainTB) Errorf(format string, args ...any) { fmt.Fprintf(os.Stderr, format+"\n", args...) }

// StartShared starts Hoist as Start does, for one Hoist shared by every test
// of a test binary: call it from TestMain and call stop (SIGTERM, then
// remove the temporary directories) after m.Run. opts.DataDir, when given,
// is kept.
func StartShared(opts Options) (h *Hoist, stop func(), err error) {
	bin, err := BuildBinary()
	if err != nil {
		return nil, nil, err
	}
	tmp, err := os.MkdirTemp("", "hoist-e2e-shared-")
	if err != nil {
		return nil, nil, err
	}
	if opts.DataDir == "" {
		opts.DataDir = filepath.Join(tmp, "data")
	}
	ready := filepath.Join(tmp, "ready.json")
	args := append([]string{"serve", "--addr", "127.0.0.1:0", "--tls-addr", "127.0.0.1:0",
		"--data-dir", opts.DataDir, "--region", Region, "--account", Account}, opts.Args...)
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "HOIST_READY_FILE="+ready)
	if !opts.Unauthenticated {
		cmd.Env = append(cmd.Env, "HOIST_CREDENTIALS="+AccessKeyID+":"+SecretAccessKey)
	}
	cmd.Env = append(cmd.Env, opts.Env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	h = &Hoist{DataDir: opts.DataDir, cmd: cmd, log: &syncBuffer{}, done: make(chan struct{}), t: mainTB{}}
	cmd.Stdout, cmd.Stderr = h.log, h.log
	if err := cmd.Start(); err != nil {
		os.RemoveAll(tmp)
		return nil, nil, err
	}
	go func() { cmd.Wait(); close(h.done) }()
	stop = func() {
		h.Stop()
		os.RemoveAll(tmp)
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		b, err := os.ReadFile(ready)
		if err == nil {
			var addrs struct {
				Addr    string `json:"addr"`
				TLSAddr string `json:"tls_addr"`
			}
			if json.Unmarshal(b, &addrs) == nil {
				h.URL = "http://" + addrs.Addr
				if addrs.TLSAddr != "" {
					h.TLSURL = "https://" + addrs.TLSAddr
				}
				return h, stop, nil
			}
		}
		select {
		case <-h.done:
			stop()
			return nil, nil, errors.New("hoist exited before serving:\n" + h.log.String())
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			stop()
			return nil, nil, errors.New("hoist did not become ready:\n" + h.log.String())
		}
	}
}

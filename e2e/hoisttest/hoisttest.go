// Package hoisttest starts a real Hoist binary on a loopback port for
// end-to-end tests, and builds AWS SDK clients pointed at it.
package hoisttest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Test credentials used by the e2e suite (Hoist is started with them, so
// every request's SigV4 signature is really verified).
const (
	AccessKeyID     = "AKIDHOISTE2E"
	SecretAccessKey = "hoist-e2e-secret-key"
	Region          = "us-west-2"
	Account         = "123456789012"
)

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// RepoRoot returns the module root (the directory holding go.mod).
func RepoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
}

// Binary builds cmd/hoist once per test binary and returns its path.
func Binary(t testing.TB) string {
	t.Helper()
	bin, err := BuildBinary()
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

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

// Hoist is a running Hoist process.
type Hoist struct {
	// URL is the base URL of the API (http://127.0.0.1:port).
	URL string
	// TLSURL is the base URL of the TLS listener ("" when disabled).
	TLSURL string
	// DataDir is the data directory.
	DataDir string
	cmd     *exec.Cmd
	log     *syncBuffer
	done    chan struct{}
	t       testing.TB
}

// Options adjust a started Hoist.
type Options struct {
	// DataDir reuses a data directory (default: a new temp dir).
	DataDir string
	// Unauthenticated starts Hoist without credentials.
	Unauthenticated bool
	// Args and Env are added to the command line and environment.
	Args []string
	Env  []string
}

// Start runs Hoist on 127.0.0.1 with a random port and waits until it serves.
// It is stopped (SIGTERM) when the test ends.
func Start(t testing.TB, opts Options) *Hoist {
	t.Helper()
	bin := Binary(t)
	if opts.DataDir == "" {
		opts.DataDir = t.TempDir()
		// Run as root, Hoist runs server processes as an unprivileged user,
		// which must pass through the test's temporary directory (0700).
		_ = os.Chmod(filepath.Dir(opts.DataDir), 0o711)
	}
	h, err := launch(bin, opts, t.TempDir(), t)
	if h != nil {
		t.Cleanup(h.Stop)
	}
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// launch starts Hoist with opts (opts.DataDir set), writing its ready file
// in tmp, and waits until it serves. On an error after the process started
// it returns the Hoist too, so that the caller can stop it.
func launch(bin string, opts Options, tmp string, t testing.TB) (*Hoist, error) {
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
	h := &Hoist{DataDir: opts.DataDir, cmd: cmd, log: &syncBuffer{}, done: make(chan struct{}), t: t}
	cmd.Stdout, cmd.Stderr = h.log, h.log
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	go func() { cmd.Wait(); close(h.done) }()
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
				return h, nil
			}
		}
		select {
		case <-h.done:
			return h, errors.New("hoist exited before serving:\n" + h.log.String())
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return h, errors.New("hoist did not become ready:\n" + h.log.String())
		}
	}
}

// Log returns everything Hoist has logged so far.
func (h *Hoist) Log() string { return h.log.String() }

// Stop sends SIGTERM and waits for a clean exit (or kills after 30 s).
func (h *Hoist) Stop() {
	select {
	case <-h.done:
		return
	default:
	}
	_ = h.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-h.done:
	case <-time.After(30 * time.Second):
		_ = syscall.Kill(-h.cmd.Process.Pid, syscall.SIGKILL)
		<-h.done
		h.t.Errorf("hoist did not stop within 30s of SIGTERM:\n%s", h.log.String())
	}
}

// Kill sends SIGKILL to Hoist (not to the processes it hosts) and waits.
func (h *Hoist) Kill() {
	_ = h.cmd.Process.Signal(syscall.SIGKILL)
	<-h.done
}

// Exited reports whether the process has ended.
func (h *Hoist) Exited() bool {
	select {
	case <-h.done:
		return true
	default:
		return false
	}
}

// Context returns a context that ends with the test or after d.
func Context(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

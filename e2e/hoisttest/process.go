package hoisttest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"time"
)

// This file is the one way the e2e tests and the load tools (e2e/load,
// e2e/hostingload) build and launch a server process: Hoist, or the load
// tool's own ceiling server.

// ReadyEnv is the environment variable naming the ready file a launched
// process writes its addresses to ({"addr": ..., "tls_addr": ...}); Hoist
// reads HOIST_READY_FILE, which Launch sets too.
const ReadyEnv = "HOIST_READY_FILE"

// Process is a server process started by Launch.
type Process struct {
	// Name names the process in errors ("hoist", "ceiling").
	Name string
	// URL is http://<addr> of its plain listener.
	URL string
	// TLSURL is https://<tls_addr>, or "" when it has no TLS listener.
	TLSURL string
	cmd    *exec.Cmd
	out    *SyncBuffer
	done   chan struct{}
}

// Launch runs bin with args and env (added to this process's environment)
// in its own process group, writing its output to a buffer, and waits up to
// a minute until it has written its ready file in dir. On an error after
// the process started it is killed.
func Launch(name, bin string, args, env []string, dir string) (*Process, error) {
	return LaunchIn("", name, bin, args, env, dir)
}

// LaunchIn is Launch with the process's working directory (workDir; ""
// is this process's).
func LaunchIn(workDir, name, bin string, args, env []string, dir string) (*Process, error) {
	ready := filepath.Join(dir, "ready.json")
	cmd := exec.Command(bin, args...)
	cmd.Dir = workDir
	cmd.Env = append(append(os.Environ(), env...), ReadyEnv+"="+ready)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	p := &Process{Name: name, cmd: cmd, out: &SyncBuffer{}, done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = p.out, p.out
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	go func() { _ = cmd.Wait(); close(p.done) }()
	deadline := time.Now().Add(60 * time.Second)
	for {
		if b, err := os.ReadFile(ready); err == nil {
			var addrs struct {
				Addr    string `json:"addr"`
				TLSAddr string `json:"tls_addr"`
			}
			if json.Unmarshal(b, &addrs) == nil && addrs.Addr != "" {
				p.URL = "http://" + addrs.Addr
				if addrs.TLSAddr != "" {
					p.TLSURL = "https://" + addrs.TLSAddr
				}
				return p, nil
			}
		}
		select {
		case <-p.done:
			return nil, fmt.Errorf("%s exited before serving:\n%s", name, p.out.String())
		case <-time.After(20 * time.Millisecond): // polling a file the child writes
		}
		if time.Now().After(deadline) {
			p.KillGroup()
			return nil, fmt.Errorf("%s did not become ready within 60s:\n%s", name, p.out.String())
		}
	}
}

// PID returns the process ID.
func (p *Process) PID() int { return p.cmd.Process.Pid }

// Log returns everything the process has written so far.
func (p *Process) Log() string { return p.out.String() }

// LogTail returns the last lines of the log (for errors).
func (p *Process) LogTail(lines int) string { return Tail(p.out.String(), lines) }

// Stop sends SIGTERM and waits for the exit; after grace it kills the
// whole process group and reports that the process would not stop.
func (p *Process) Stop(grace time.Duration) error {
	return p.StopWith(syscall.SIGTERM, grace)
}

// StopWith sends sig and waits for the exit; after grace it kills the
// whole process group and reports that the process would not stop.
func (p *Process) StopWith(sig syscall.Signal, grace time.Duration) error {
	select {
	case <-p.done:
		return nil
	default:
	}
	_ = p.cmd.Process.Signal(sig)
	select {
	case <-p.done:
		return nil
	case <-time.After(grace):
		p.KillGroup()
		return fmt.Errorf("%s did not stop within %s of %s:\n%s", p.Name, grace, sig, p.LogTail(40))
	}
}

// Kill sends SIGKILL to the process only (not to what it started) and
// waits for it to end.
func (p *Process) Kill() {
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.done
}

// KillGroup sends SIGKILL to the process group and waits.
func (p *Process) KillGroup() {
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	<-p.done
}

// Exited reports whether the process has ended.
func (p *Process) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// ServeArgs returns the `hoist serve` arguments every launch shares:
// loopback ports chosen by the kernel, the data directory, the e2e region
// and account; tls says whether the TLS listener is on.
func ServeArgs(dataDir string, tls bool) []string {
	tlsAddr := ""
	if tls {
		tlsAddr = "127.0.0.1:0"
	}
	return []string{"serve", "--addr", "127.0.0.1:0", "--tls-addr", tlsAddr,
		"--data-dir", dataDir, "--region", Region, "--account", Account}
}

// CredentialsEnv is the environment that starts Hoist with the e2e
// credentials, so that every signature is verified.
func CredentialsEnv() []string {
	return []string{"HOIST_CREDENTIALS=" + AccessKeyID + ":" + SecretAccessKey}
}

// GoBuild builds pkg (./cmd/hoist, ./e2e/gameserver, ...) of the module
// into out.
func GoBuild(pkg, out string, flags ...string) error {
	args := append(append([]string{"build"}, flags...), "-o", out, pkg)
	cmd := exec.Command("go", args...)
	cmd.Dir = RepoRoot()
	if _, err := os.Stat(filepath.Join(cmd.Dir, "go.mod")); err != nil {
		return errNoModule
	}
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build %s: %v\n%s", pkg, err, b)
	}
	return nil
}

// FreeLoopbackAddr returns a loopback address with a port free right now.
func FreeLoopbackAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// SyncBuffer is a bytes.Buffer safe for concurrent writers and readers.
type SyncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *SyncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *SyncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

var errNoModule = errors.New("the Hoist module's source is not where this binary was built from: run the load tools with go run inside the module, or pass -hoist")

package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// server is a server process under load: Hoist or the ceiling.
type server struct {
	name string
	url  string
	cmd  *exec.Cmd
	out  *syncBuffer
	done chan struct{}
	dir  string // temporary directory removed by stop
}

// startProcess runs bin with args and env in its own process group, waits
// for it to write its address to a ready file and returns it.
func startProcess(name, bin string, args, env []string, dir string) (*server, error) {
	ready := filepath.Join(dir, "ready.json")
	cmd := exec.Command(bin, args...)
	cmd.Env = append(append(os.Environ(), env...), "HOIST_READY_FILE="+ready, readyEnv+"="+ready)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	s := &server{name: name, cmd: cmd, out: &syncBuffer{}, done: make(chan struct{}), dir: dir}
	cmd.Stdout, cmd.Stderr = s.out, s.out
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	go func() { _ = cmd.Wait(); close(s.done) }()
	deadline := time.Now().Add(60 * time.Second)
	for {
		if b, err := os.ReadFile(ready); err == nil {
			var addrs struct {
				Addr string `json:"addr"`
			}
			if json.Unmarshal(b, &addrs) == nil && addrs.Addr != "" {
				s.url = "http://" + addrs.Addr
				return s, nil
			}
		}
		select {
		case <-s.done:
			return nil, fmt.Errorf("%s exited before serving:\n%s", name, s.out.String())
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			s.stop()
			return nil, fmt.Errorf("%s did not become ready within 60s:\n%s", name, s.out.String())
		}
	}
}

func (s *server) pid() int { return s.cmd.Process.Pid }

// stop sends SIGTERM, waits for the exit (SIGKILL to the group after 30 s)
// and removes the temporary directory.
func (s *server) stop() error {
	var err error
	select {
	case <-s.done:
	default:
		_ = s.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-s.done:
		case <-time.After(30 * time.Second):
			_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
			<-s.done
			err = fmt.Errorf("%s did not stop within 30s of SIGTERM", s.name)
		}
	}
	if s.dir != "" {
		_ = os.RemoveAll(s.dir)
	}
	return err
}

// startCeiling starts this program again as the ceiling server.
func startCeiling() (*server, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "hoist-load-ceiling-")
	if err != nil {
		return nil, err
	}
	s, err := startProcess("ceiling", self, nil, []string{roleEnv + "=" + roleCeiling}, dir)
	if err != nil {
		os.RemoveAll(dir)
	}
	return s, err
}

// hoistOptions say how Hoist is started.
type hoistOptions struct {
	bin       string
	cred      credentials
	parentDir string // where the temporary data directory goes ("": the system's)
	pprofAddr string // --pprof-addr ("" for none)
	extraArgs []string
}

// startHoist starts the Hoist binary with credentials (so that every
// signature is verified), a new data directory and a loopback port.
func startHoist(o hoistOptions) (*server, error) {
	dir, err := os.MkdirTemp(o.parentDir, "hoist-load-")
	if err != nil {
		return nil, err
	}
	args := []string{"serve", "--addr", "127.0.0.1:0", "--tls-addr", "",
		"--data-dir", filepath.Join(dir, "data"), "--region", o.cred.Region, "--account", "123456789012",
		// The loop sends no health checks: keep the registered game
		// servers for the whole run.
		"--health-expiry", "24h"}
	if o.pprofAddr != "" {
		args = append(args, "--pprof-addr", o.pprofAddr)
	}
	args = append(args, o.extraArgs...)
	env := []string{"HOIST_CREDENTIALS=" + o.cred.AccessKeyID + ":" + o.cred.Secret}
	s, err := startProcess("hoist", o.bin, args, env, dir)
	if err != nil {
		os.RemoveAll(dir)
	}
	return s, err
}

// buildHoist builds cmd/hoist of the module in the current directory (or
// above) into dir and returns the binary's path.
func buildHoist(dir string) (string, error) {
	root, err := moduleRoot()
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "hoist")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/hoist")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build ./cmd/hoist: %v\n%s", err, out)
	}
	return bin, nil
}

// moduleRoot returns the directory of the go.mod of module
// github.com/hoistgg/hoist enclosing the working directory.
func moduleRoot() (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	mod := strings.TrimSpace(string(out))
	if mod == "" || mod == os.DevNull {
		return "", errors.New("run the load generator inside the Hoist module (go run ./e2e/load), or pass -hoist")
	}
	return filepath.Dir(mod), nil
}

// freeLoopbackAddr returns a loopback address with a port free right now.
func freeLoopbackAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
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

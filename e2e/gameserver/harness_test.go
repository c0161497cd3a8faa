package main

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hoistgg/hoist/internal/sdkconn"
	"github.com/hoistgg/hoist/internal/sdkconn/sdkconntest"
)

const (
	token  = "0123456789abcdef0123456789abcdef"
	token2 = "abcdefabcdefabcdefabcdefabcdef01"
	fleet  = "fleet-5c7f"
	host   = "i-0a1b2c3d"
	wait   = 20 * time.Second
)

var (
	buildOnce sync.Once
	binary    string
	buildErr  error
)

// gameServerBinary builds this command once per test binary.
func gameServerBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "hoist-gameserver-")
		if err != nil {
			buildErr = err
			return
		}
		binary = filepath.Join(dir, "gameserver")
		out, err := exec.Command("go", "build", "-o", binary, ".").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binary
}

func TestMain(m *testing.M) {
	code := m.Run()
	if binary != "" {
		os.RemoveAll(filepath.Dir(binary))
	}
	os.Exit(code)
}

// endpoint serves an SDK endpoint with fakes; token and token2 are both
// valid for fleet/host.
func endpoint(t *testing.T, fake *sdkconntest.API) *sdkconntest.Endpoint {
	t.Helper()
	if fake == nil {
		fake = &sdkconntest.API{}
	}
	return sdkconntest.Start(t, sdkconn.Config{API: fake}, sdkconntest.Tokens{
		token: {FleetID: fleet, ComputeName: host}, token2: {FleetID: fleet, ComputeName: host}})
}

// proc is a running game server.
type proc struct {
	cmd  *exec.Cmd
	dir  string
	out  *lines
	done chan struct{}
	code int
}

// start runs the game server for process pid against url, with fast
// timings and the extra environment and flags given.
func start(t *testing.T, url, pid string, env []string, args ...string) *proc {
	t.Helper()
	dir := t.TempDir()
	cmd := exec.Command(gameServerBinary(t), args...)
	cmd.Dir = dir
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"),
		"GAMELIFT_SDK_WEBSOCKET_URL=" + url, "GAMELIFT_SDK_AUTH_TOKEN=" + token,
		"GAMELIFT_SDK_PROCESS_ID=" + pid, "GAMELIFT_SDK_HOST_ID=" + host, "GAMELIFT_SDK_FLEET_ID=" + fleet,
		"HEALTHCHECK_INTERVAL=100ms", "HEALTHCHECK_MAX_JITTER=1ms", "SERVICE_CALL_TIMEOUT=5s",
		"DISCONNECT_WEBSOCKET_TIMEOUT=200ms", "HOIST_TEST_RECONNECT_INTERVAL=50ms"}, env...)
	p := &proc{cmd: cmd, dir: dir, out: newLines(), done: make(chan struct{})}
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	go p.out.read(pr)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		cmd.Wait()
		p.code = cmd.ProcessState.ExitCode()
		pw.Close()
		close(p.done)
	}()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-p.done
		if t.Failed() {
			t.Logf("game server output:\n%s", p.out.all())
		}
	})
	return p
}

// exitCode waits for the process to exit.
func (p *proc) exitCode(t *testing.T) int {
	t.Helper()
	select {
	case <-p.done:
		return p.code
	case <-time.After(wait):
		t.Fatal("the game server did not exit")
		return -1
	}
}

func (p *proc) signal(sig syscall.Signal) { p.cmd.Process.Signal(sig) }

// lines records a process's output and lets a test wait for a line.
type lines struct {
	mu      sync.Mutex
	text    []string
	changed chan struct{}
}

func newLines() *lines { return &lines{changed: make(chan struct{})} }

func (l *lines) read(r io.Reader) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		l.mu.Lock()
		l.text = append(l.text, sc.Text())
		close(l.changed)
		l.changed = make(chan struct{})
		l.mu.Unlock()
	}
}

func (l *lines) all() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.text, "\n")
}

// waitFor waits for a line containing every part.
func (l *lines) waitFor(t *testing.T, parts ...string) string {
	t.Helper()
	deadline := time.After(wait)
	for {
		l.mu.Lock()
		for _, line := range l.text {
			if containsAll(line, parts) {
				l.mu.Unlock()
				return line
			}
		}
		ch := l.changed
		l.mu.Unlock()
		select {
		case <-ch:
		case <-deadline:
			t.Fatalf("no output line with %q", parts)
			return ""
		}
	}
}

func containsAll(s string, parts []string) bool {
	for _, p := range parts {
		if !strings.Contains(s, p) {
			return false
		}
	}
	return true
}

// player is a TCP connection to the game server's player port.
type player struct {
	conn net.Conn
	r    *bufio.Reader
}

func dialPlayer(t *testing.T, port int32) *player {
	t.Helper()
	conn, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), wait)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return &player{conn: conn, r: bufio.NewReader(conn)}
}

func (p *player) say(t *testing.T, line string) string {
	t.Helper()
	p.conn.SetDeadline(time.Now().Add(wait))
	if _, err := fmt.Fprintln(p.conn, line); err != nil {
		t.Fatal(err)
	}
	reply, err := p.r.ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(reply)
}

// proxy forwards TCP connections to a target and can cut them all, to
// simulate a network drop (the service sees 1006, the SDK a broken read).
type proxy struct {
	ln     net.Listener
	target string
	mu     sync.Mutex
	conns  []net.Conn
}

func newProxy(t *testing.T, target string) *proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{ln: ln, target: target}
	go p.serve()
	t.Cleanup(func() { ln.Close(); p.cut() })
	return p
}

func (p *proxy) addr() string { return p.ln.Addr().String() }

func (p *proxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		up, err := net.Dial("tcp", p.target)
		if err != nil {
			c.Close()
			continue
		}
		p.mu.Lock()
		p.conns = append(p.conns, c, up)
		p.mu.Unlock()
		go func() { io.Copy(up, c); up.Close() }()
		go func() { io.Copy(c, up); c.Close() }()
	}
}

// cut closes every connection made so far.
func (p *proxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}

// count returns how many connections are open through the proxy.
func (p *proxy) count() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.conns)
}

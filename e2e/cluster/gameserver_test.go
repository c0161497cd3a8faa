package cluster_test

import (
	"errors"
	"io"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hoistgg/hoist/e2e/hoisttest"
)

// TestMain removes the game server's build once the tests ran.
func TestMain(m *testing.M) {
	os.Exit(hoisttest.Main(m))
}

// gameServer is a running test game server.
type gameServer struct {
	id   string
	cmd  *exec.Cmd
	out  *hoisttest.SyncBuffer
	done chan struct{}
	code int
}

// startGameServer runs the game server of an Anywhere compute connecting
// to endpoint (ws://.../sdk), heartbeating every 2 s and reconnecting
// 100 ms after a failed attempt; it is killed when the test ends.
func startGameServer(t *testing.T, endpoint, token, fleetID, compute, processID string) *gameServer {
	t.Helper()
	gs := &gameServer{id: processID, out: &hoisttest.SyncBuffer{}, done: make(chan struct{})}
	gs.cmd = exec.Command(hoisttest.GameServerBinary(t))
	gs.cmd.Dir = t.TempDir()
	gs.cmd.Env = []string{"PATH=" + os.Getenv("PATH"),
		"GAMELIFT_SDK_WEBSOCKET_URL=" + endpoint, "GAMELIFT_SDK_AUTH_TOKEN=" + token,
		"GAMELIFT_SDK_FLEET_ID=" + fleetID, "GAMELIFT_SDK_HOST_ID=" + compute, "GAMELIFT_SDK_PROCESS_ID=" + processID,
		"HEALTHCHECK_INTERVAL=2s", "HEALTHCHECK_MAX_JITTER=100ms", "HOIST_TEST_RECONNECT_INTERVAL=100ms"}
	gs.cmd.Stdout, gs.cmd.Stderr = gs.out, gs.out
	gs.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := gs.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		_ = gs.cmd.Wait()
		gs.code = gs.cmd.ProcessState.ExitCode()
		close(gs.done)
	}()
	t.Cleanup(func() {
		_ = syscall.Kill(-gs.cmd.Process.Pid, syscall.SIGKILL)
		<-gs.done
		if t.Failed() {
			t.Logf("game server %s output:\n%s", processID, gs.out.String())
		}
	})
	return gs
}

// exited reports whether the game server has ended, and its exit code.
func (gs *gameServer) exited() (bool, int) {
	select {
	case <-gs.done:
		return true, gs.code
	default:
		return false, 0
	}
}

// logged reports whether the game server's output has s.
func (gs *gameServer) logged(s string) bool { return strings.Contains(gs.out.String(), s) }

// proxy is a TCP proxy on a loopback port that sends each new connection
// to its current upstream: a game server connects through it, and when
// the replica it reached dies, its reconnect reaches another (as a load
// balancer in front of the replicas does). Connections to an upstream end
// with it.
type proxy struct {
	ln net.Listener
	mu sync.Mutex
	to string // host:port
	wg sync.WaitGroup
}

// newProxy listens on 127.0.0.1 and forwards to upstream; it is closed
// when the test ends.
func newProxy(t *testing.T, upstream string) *proxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{ln: ln, to: upstream}
	p.wg.Go(p.accept)
	t.Cleanup(func() { _ = ln.Close(); p.wg.Wait() })
	return p
}

// Addr is the proxy's host:port.
func (p *proxy) Addr() string { return p.ln.Addr().String() }

// Route sends the connections made from now on to upstream.
func (p *proxy) Route(upstream string) {
	p.mu.Lock()
	p.to = upstream
	p.mu.Unlock()
}

func (p *proxy) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		to := p.to
		p.mu.Unlock()
		p.wg.Go(func() { pipe(c, to) })
	}
}

// pipe copies between c and a new connection to upstream until either
// side ends, then closes both.
func pipe(c net.Conn, upstream string) {
	defer c.Close()
	u, err := net.DialTimeout("tcp", upstream, 5*time.Second)
	if err != nil {
		return
	}
	defer u.Close()
	done := make(chan struct{}, 2)
	cp := func(dst, src net.Conn) {
		_, err := io.Copy(dst, src)
		if err != nil && !errors.Is(err, net.ErrClosed) {
			_ = err // either side's end is the connection's end
		}
		done <- struct{}{}
	}
	go cp(u, c)
	go cp(c, u)
	<-done
}

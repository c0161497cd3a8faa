package netns

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Environment variables that make the test binary, run inside a host, a
// small helper instead of a test run (see TestMain).
const (
	envGet  = "HOIST_NETNS_TEST_GET"  // GET this URL, print the body
	envWait = "HOIST_NETNS_TEST_WAIT" // print the PID, wait for stdin to close
)

// TestMain runs the helper modes the tests start inside hosts, or the tests.
func TestMain(m *testing.M) {
	if url := os.Getenv(envGet); url != "" {
		os.Exit(get(url))
	}
	if os.Getenv(envWait) != "" {
		fmt.Println(os.Getpid())
		_, _ = io.Copy(io.Discard, os.Stdin)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// get fetches url without any proxy and prints its body; it returns the
// process's exit status.
func get(url string) int {
	c := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{Proxy: nil}}
	resp, err := c.Get(url)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer resp.Body.Close()
	if _, err := io.Copy(os.Stdout, resp.Body); err != nil {
		return 1
	}
	return 0
}

// TestHosts checks that hosts reach the bridge address and nothing else but
// their own loopback, that a link can be cut and restored, and that commands
// run inside a host.
func TestHosts(t *testing.T) {
	n := New(t, 2)
	a, b := n.Hosts[0], n.Hosts[1]
	echo := echoServer(t, netip.AddrPortFrom(n.Addr, 0).String())

	t.Run("bridge address reachable", func(t *testing.T) {
		for _, h := range n.Hosts {
			roundTrip(t, mustDial(t, h, echo), "hello")
		}
	})
	t.Run("only the bridge is routed", func(t *testing.T) { checkRoutes(t, n, a) })
	t.Run("loopbacks are private", func(t *testing.T) { checkLoopbacks(t, n, a, b) })
	t.Run("link down and up", func(t *testing.T) { checkLinkDownUp(t, echo, a, b) })
	t.Run("http from a host", func(t *testing.T) { checkHTTP(t, n, a) })
	t.Run("commands are killed and reaped", func(t *testing.T) { checkKill(t, b) })
}

// checkRoutes checks h has no route but the bridge's /24: no default route.
func checkRoutes(t *testing.T, n *Network, h *Host) {
	routes, err := namedListRoutes(h)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{n.Prefix.String()}; !slices.Equal(routes, want) {
		t.Errorf("routes in %s = %v, want %v", h.Name, routes, want)
	}
	for _, dst := range []string{"203.0.113.1", "2001:db8::1"} { // documentation ranges
		if err := ip("-n", h.Name, "route", "get", dst); err == nil {
			t.Errorf("%s has a route to %s", h.Name, dst)
		}
	}
}

// namedListRoutes returns the destinations of h's IPv4 and IPv6 main-table
// routes other than IPv6 link-local.
func namedListRoutes(h *Host) ([]string, error) {
	var dsts []string
	for _, family := range []string{"-4", "-6"} {
		out, err := ipOutput("-n", h.Name, family, "route", "show")
		if err != nil {
			return nil, err
		}
		for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			if f := strings.Fields(line); len(f) > 0 && f[0] != "fe80::/64" {
				dsts = append(dsts, f[0])
			}
		}
	}
	return dsts, nil
}

// checkLoopbacks checks that a listener on 127.0.0.1 in b or in the root
// namespace is not reachable from a.
func checkLoopbacks(t *testing.T, n *Network, a, b *Host) {
	lb, err := b.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer lb.Close()
	inB := lb.Addr().(*net.TCPAddr).AddrPort()
	mustDial(t, b, inB.String()).Close() // b itself reaches it
	refused(t, a, inB.String())
	refused(t, a, netip.AddrPortFrom(b.Addr, inB.Port()).String())

	lr, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer lr.Close()
	inRoot := lr.Addr().(*net.TCPAddr).AddrPort()
	refused(t, a, inRoot.String())
	refused(t, a, netip.AddrPortFrom(n.Addr, inRoot.Port()).String())
}

// checkLinkDownUp cuts a's link: a cannot connect, b still can, a's open
// connection survives; then restores it.
func checkLinkDownUp(t *testing.T, echo string, a, b *Host) {
	c := mustDial(t, a, echo)
	roundTrip(t, c, "before")
	a.LinkDown(t)
	// Packets are dropped silently, so the dial can only time out; the
	// deadline bounds how long the test waits for a failure that is certain.
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if c2, err := a.Dial(ctx, "tcp", echo); err == nil {
		c2.Close()
		t.Fatal("a connected with its link down")
	}
	roundTrip(t, mustDial(t, b, echo), "b is not cut")
	if _, err := c.Write([]byte("during")); err != nil { // buffered: the cable is out
		t.Fatal(err)
	}
	a.LinkUp(t)
	readExactly(t, c, "during") // TCP retransmits once the link is back
	roundTrip(t, mustDial(t, a, echo), "after")
}

// checkHTTP runs the test binary inside h as an HTTP client of a Go server
// listening on the bridge address.
func checkHTTP(t *testing.T, n *Network, h *Host) {
	addr := netip.AddrPortFrom(n.Addr, uint16(n.FreePort(t))).String()
	l, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "hello %s", r.RemoteAddr)
	})}
	go srv.Serve(l)
	defer srv.Close()
	cmd := h.Command(context.Background(), self(t))
	cmd.Env = append(os.Environ(), envGet+"=http://"+addr+"/")
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	if want := "hello " + h.Addr.String() + ":"; !strings.HasPrefix(string(out), want) {
		t.Errorf("body %q, want it to start %q", out, want)
	}
}

// checkKill checks that a command started in h is the process Command
// returns, that killing it ends it and Wait reaps it.
func checkKill(t *testing.T, h *Host) {
	cmd, pid, _ := startWaiter(t, h)
	if pid != cmd.Process.Pid {
		t.Errorf("the command's PID is %d, cmd.Process.Pid %d", pid, cmd.Process.Pid)
	}
	if pids := namespacePIDs(t, h); !slices.Equal(pids, []string{strconv.Itoa(pid)}) {
		t.Errorf("processes in %s = %v, want [%d]", h.Name, pids, pid)
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); !killed(err) {
		t.Errorf("Wait = %v, want killed", err)
	}
	if pids := namespacePIDs(t, h); len(pids) != 0 {
		t.Errorf("processes in %s after Wait: %v", h.Name, pids)
	}
}

// TestCleanupLeavesNothing checks that a network's cleanup removes its
// namespaces, interfaces and the processes still running in them.
func TestCleanupLeavesNothing(t *testing.T) {
	Require(t)
	var cmd *exec.Cmd
	var stdin io.Closer
	t.Run("network", func(t *testing.T) {
		n := New(t, 2)
		cmd, _, stdin = startWaiter(t, n.Hosts[1]) // left running on purpose
		n.Hosts[0].Delete(t)
		if left := owned(t); len(left) != 3 { // host 1's namespace and veth, the bridge
			t.Errorf("after deleting host 0: %v", left)
		}
	})
	if left := owned(t); len(left) != 0 {
		t.Errorf("left after cleanup: %v", left)
	}
	stdin.Close() // a waiter still alive now exits on its own, with status 0
	if err := cmd.Wait(); !killed(err) {
		t.Errorf("the process left in the host: Wait = %v, want killed", err)
	}
}

// TestTwoNetworks checks that networks get different subnets of 198.18.0.0/15.
func TestTwoNetworks(t *testing.T) {
	n1, n2 := New(t, 0), New(t, 0)
	if n1.Prefix == n2.Prefix || !space.Contains(n1.Addr) || !space.Contains(n2.Addr) {
		t.Errorf("subnets %v and %v", n1.Prefix, n2.Prefix)
	}
}

// TestSweep checks that the sweep removes what a dead process left and keeps
// what a live one owns.
func TestSweep(t *testing.T) {
	Require(t)
	dead := exec.Command(self(t), "-test.run=^$")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	stale := fmt.Sprintf("%s%d-", prefix, dead.Process.Pid)
	live := fmt.Sprintf("%s%d-live", prefix, os.Getpid())
	err := ipAll([]string{"netns", "add", stale + "1"}, []string{"netns", "add", live},
		[]string{"link", "add", stale + "1", "type", "veth", "peer", "name", "eth0", "netns", stale + "1"},
		[]string{"link", "add", stale + "2", "type", "bridge"})
	t.Cleanup(func() { _ = removeNamespace(live) })
	if err != nil {
		t.Fatal(err)
	}
	unlock, err := lock()
	if err != nil {
		t.Fatal(err)
	}
	sweep(t.Logf)
	unlock()
	all := slices.Concat(mustList(t, "netns", "list"), mustList(t, "link", "show"))
	if slices.ContainsFunc(all, func(s string) bool { return strings.HasPrefix(s, stale) }) {
		t.Errorf("stale names left: %v", all)
	}
	if !slices.Contains(all, live) {
		t.Errorf("the sweep removed %s, whose owner is alive", live)
	}
}

// echoServer serves TCP echo on addr until the test ends and returns its
// address.
func echoServer(t *testing.T, addr string) string {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() { _, _ = io.Copy(c, c); c.Close() }()
		}
	}()
	return l.Addr().String()
}

// mustDial connects from h to addr, closing the connection when t ends.
func mustDial(t *testing.T, h *Host, addr string) net.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := h.Dial(ctx, "tcp", addr)
	if err != nil {
		t.Fatalf("from %s: %v", h.Name, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// refused checks that connecting from h to addr is refused.
func refused(t *testing.T, h *Host, addr string) {
	t.Helper()
	c, err := h.Dial(context.Background(), "tcp", addr)
	if err == nil {
		c.Close()
	}
	if !errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("dial %s from %s: %v, want connection refused", addr, h.Name, err)
	}
}

// roundTrip sends msg over the echo connection c and checks it comes back.
func roundTrip(t *testing.T, c net.Conn, msg string) {
	t.Helper()
	if _, err := c.Write([]byte(msg)); err != nil {
		t.Fatal(err)
	}
	readExactly(t, c, msg)
}

// readExactly reads len(want) bytes from c and checks they are want.
func readExactly(t *testing.T, c net.Conn, want string) {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(30 * time.Second))
	got := make([]byte, len(want))
	if _, err := io.ReadFull(c, got); err != nil || string(got) != want {
		t.Fatalf("read %q, %v; want %q", got, err, want)
	}
}

// startWaiter starts the test binary in h as a process that waits for its
// standard input to close, and returns it with the PID it printed and its
// standard input (closed by Wait at the latest).
func startWaiter(t *testing.T, h *Host) (*exec.Cmd, int, io.Closer) {
	t.Helper()
	cmd := h.Command(context.Background(), self(t))
	cmd.Env = append(os.Environ(), envWait+"=1")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		t.Fatal(err)
	}
	return cmd, pid, stdin
}

// killed reports whether err, from Wait, says SIGKILL ended the process.
func killed(err error) bool {
	var exit *exec.ExitError
	return errors.As(err, &exit) && exit.Sys().(syscall.WaitStatus).Signal() == syscall.SIGKILL
}

// namespacePIDs lists the processes in h.
func namespacePIDs(t *testing.T, h *Host) []string {
	out, err := ipOutput("netns", "pids", h.Name)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Fields(string(out))
}

// owned lists the namespaces and interfaces this process made.
func owned(t *testing.T) []string {
	mine := fmt.Sprintf("%s%d-", prefix, os.Getpid())
	var out []string
	for _, name := range slices.Concat(mustList(t, "netns", "list"), mustList(t, "link", "show")) {
		if strings.HasPrefix(name, mine) {
			out = append(out, name)
		}
	}
	return out
}

// mustList returns namedList(args...) or fails t.
func mustList(t *testing.T, args ...string) []string {
	names, err := namedList(args...)
	if err != nil {
		t.Fatal(err)
	}
	return names
}

// self returns the path of the running test binary.
func self(t *testing.T) string {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return exe
}

package netns

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// netnsDir is where `ip netns` keeps its named namespaces.
const netnsDir = "/var/run/netns"

// Host is one network namespace on a Network: its eth0 holds Addr and is one
// end of a veth pair whose other end, also named Name, is a port of the
// bridge.
type Host struct {
	Name string     // the namespace's name, and its veth's name in the root namespace
	Addr netip.Addr // eth0's address

	deleteOnce sync.Once
	deleteErr  error
}

// AddHost creates a host with the next address (198.18.S.10, .11, ...) and
// appends it to n.Hosts; not safe to call concurrently on one Network.
func (n *Network) AddHost(t testing.TB) *Host {
	t.Helper()
	i := len(n.Hosts)
	if i >= 245 {
		t.Fatalf("netns: a network holds at most 245 hosts")
	}
	a := n.Prefix.Addr().As4()
	a[3] = byte(10 + i)
	h := &Host{Name: newName(), Addr: netip.AddrFrom4(a)}
	if err := ip("netns", "add", h.Name); err != nil {
		t.Fatal(err)
	}
	n.Hosts = append(n.Hosts, h)
	err := ipAll(
		[]string{"link", "add", h.Name, "type", "veth", "peer", "name", "eth0", "netns", h.Name},
		[]string{"link", "set", h.Name, "master", n.Bridge, "up"},
		[]string{"-n", h.Name, "addr", "add", netip.PrefixFrom(h.Addr, 24).String(), "dev", "eth0"},
		[]string{"-n", h.Name, "link", "set", "eth0", "up"},
		[]string{"-n", h.Name, "link", "set", "lo", "up"})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// Command returns a command that runs name with args inside h. `ip netns
// exec` replaces itself with the command, so cmd.Process is the command
// itself: killing it kills the command and Wait reaps it.
func (h *Host) Command(ctx context.Context, name string, args ...string) *exec.Cmd {
	return exec.CommandContext(ctx, "ip", append([]string{"netns", "exec", h.Name, name}, args...)...)
}

// Dial connects to addr (an IP address and port) from inside h.
func (h *Host) Dial(ctx context.Context, network, addr string) (net.Conn, error) {
	var c net.Conn
	err := h.enter(func() (err error) {
		c, err = (&net.Dialer{}).DialContext(ctx, network, addr)
		return err
	})
	return c, err
}

// Listen listens on addr (an IP address and port) inside h.
func (h *Host) Listen(network, addr string) (net.Listener, error) {
	var l net.Listener
	err := h.enter(func() (err error) {
		l, err = net.Listen(network, addr)
		return err
	})
	return l, err
}

// enter runs f on an OS thread moved into h's namespace, so the sockets f
// creates belong to h (a socket keeps the namespace it was created in). The
// thread goes back to its own namespace afterwards; if it cannot, it stays
// locked and Go ends it with the goroutine (a thread must never end
// otherwise: children started from it with a parent-death signal would get
// it).
func (h *Host) enter(f func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		back, err := h.runIn(f)
		if back {
			runtime.UnlockOSThread()
		}
		errc <- err
	}()
	return <-errc
}

// runIn switches the locked calling thread into h, runs f and switches back;
// back reports whether the thread is in its own namespace again.
func (h *Host) runIn(f func() error) (back bool, err error) {
	own, err := os.Open(fmt.Sprintf("/proc/self/task/%d/ns/net", unix.Gettid()))
	if err != nil {
		return true, err
	}
	defer own.Close()
	target, err := os.Open(filepath.Join(netnsDir, h.Name))
	if err != nil {
		return true, fmt.Errorf("netns: host %s: %w", h.Name, err)
	}
	defer target.Close()
	if err := unix.Setns(int(target.Fd()), unix.CLONE_NEWNET); err != nil {
		return true, fmt.Errorf("netns: entering %s: %w", h.Name, err)
	}
	err = f()
	return unix.Setns(int(own.Fd()), unix.CLONE_NEWNET) == nil, err
}

// LinkDown takes down the bridge's end of h's link, like pulling its cable:
// h's packets are dropped silently (no reset, no error), its connections stay
// open and resume on LinkUp if their own timeouts have not ended them.
func (h *Host) LinkDown(t testing.TB) {
	t.Helper()
	if err := ip("link", "set", h.Name, "down"); err != nil {
		t.Fatal(err)
	}
}

// LinkUp brings back the link LinkDown took down.
func (h *Host) LinkUp(t testing.TB) {
	t.Helper()
	if err := ip("link", "set", h.Name, "up"); err != nil {
		t.Fatal(err)
	}
}

// Delete kills every process in h and removes it (its veth pair and
// namespace); the Network's cleanup skips it afterwards.
func (h *Host) Delete(t testing.TB) {
	t.Helper()
	if err := h.delete(); err != nil {
		t.Fatal(err)
	}
}

// delete removes h once and returns the same result every time.
func (h *Host) delete() error {
	h.deleteOnce.Do(func() { h.deleteErr = removeNamespace(h.Name) })
	return h.deleteErr
}

// removeNamespace kills the processes in namespace name (never this one), deletes the veth of
// the same name in the root namespace if there is one, then the namespace
// (deleting the veth first makes its removal immediate: a namespace's own
// interfaces are destroyed in the background once it is gone).
func removeNamespace(name string) error {
	out, err := ipOutput("netns", "pids", name)
	if err != nil {
		return err
	}
	for _, f := range strings.Fields(string(out)) {
		if pid, err := strconv.Atoi(f); err == nil && pid != os.Getpid() {
			_ = syscall.Kill(pid, syscall.SIGKILL) // it may have ended already
		}
	}
	if err := ip("link", "del", name); err != nil && ip("link", "show", "dev", name) == nil {
		return err
	}
	return ip("netns", "del", name)
}

// Package netns gives end-to-end tests their own hosts: Linux network
// namespaces joined by veth pairs to a bridge the test creates in its own
// (the root) network namespace, with addresses the test assigns from
// 198.18.0.0/15 (RFC 2544's benchmarking range, never routed on the
// Internet).
//
//	root namespace                        host namespaces
//	  bridge hst<pid>-<n>  198.18.S.1/24 --+-- veth -- eth0 198.18.S.10/24 (host 0)
//	  (Hoist listens here)                 +-- veth -- eth0 198.18.S.11/24 (host 1)
//
// A test calls New, which skips it unless it runs as root with a usable
// `ip netns` (iproute2), then starts processes in a host with Host.Command,
// or opens sockets there with Host.Dial and Host.Listen. t.Cleanup removes
// the hosts and the bridge, pass or fail; New also sweeps what a killed
// earlier run left behind (names hst<pid>-<n> whose pid is no longer alive).
//
// # Safety
//
// A host has exactly two interfaces: its loopback and its eth0 on the test's
// bridge, and no route but the bridge's /24 (and IPv6 link-local on the
// bridge): no default route, IPv4 or IPv6. So a host never sends a packet
// addressed beyond the bridge, and the root namespace's forwarding, if on
// (Docker turns it on), has nothing to forward. The package sets up no NAT
// and no forwarding and changes nothing in the root namespace but its bridge
// and veths. Nothing a host runs reaches any address but its own loopback,
// the bridge's address and the other hosts on the bridge (a firewall's
// bridge filtering, if any, may drop host-to-host traffic).
//
// # Running Go code inside a host
//
// Host.Dial and Host.Listen cover sockets. To run more Go code there, run the
// test binary itself in the host: TestMain checks an environment variable
// before m.Run and, when it is set, acts as a small client and exits (see
// netns_test.go: TestMain and checkHTTP).
package netns

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
)

// prefix starts the name of every namespace and interface this package makes:
// hst<owner pid>-<sequence in base 36>.
const prefix = "hst"

// space is the range every bridge's /24 comes from.
var space = netip.MustParsePrefix("198.18.0.0/15")

// lockPath is the file whose exclusive flock serialises choosing a subnet
// and sweeping, across every test process on the machine.
const lockPath = "/run/hoist-netns.lock"

// seq numbers the names this process makes.
var seq atomic.Int64

var (
	probeOnce sync.Once
	probeErr  error
	sweepOnce sync.Once
)

// Network is a test's bridge and the hosts on it.
type Network struct {
	Bridge string       // the bridge's interface name in the root namespace
	Addr   netip.Addr   // the bridge's address: listen here to be reachable from hosts
	Prefix netip.Prefix // the bridge's /24
	Hosts  []*Host      // in the order they were added

	t testing.TB
}

// Require skips t unless this process can create network namespaces: it must
// run as root and `ip netns` (iproute2) must work.
func Require(t testing.TB) {
	t.Helper()
	how := "run them as root, e.g. `sudo go test ./e2e/...`"
	if os.Geteuid() != 0 {
		t.Skipf("host tests create network namespaces and need root: %s", how)
	}
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skipf("host tests need `ip` from iproute2 (apt-get install iproute2): %v", err)
	}
	probeOnce.Do(func() {
		name := newName()
		if probeErr = ip("netns", "add", name); probeErr == nil {
			probeErr = ip("netns", "del", name)
		}
	})
	if probeErr != nil {
		t.Skipf("host tests need `ip netns` to work (CAP_NET_ADMIN and CAP_SYS_ADMIN): %s: %v", how, probeErr)
	}
}

// New creates a bridge with a free /24 from 198.18.0.0/15 and hosts hosts on
// it; t.Cleanup removes them all. It skips t as Require does.
func New(t testing.TB, hosts int) *Network {
	t.Helper()
	Require(t)
	n := &Network{t: t, Bridge: newName()}
	if err := n.createBridge(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(n.remove)
	for range hosts {
		n.AddHost(t)
	}
	return n
}

// createBridge picks a /24 no address of the root namespace overlaps and
// brings the bridge up with its .1, holding the machine-wide lock so
// parallel test processes never pick the same one.
func (n *Network) createBridge() error {
	unlock, err := lock()
	if err != nil {
		return err
	}
	defer unlock()
	sweepOnce.Do(func() { sweep(n.t.Logf) })
	p, err := freeSubnet()
	if err != nil {
		return err
	}
	n.Prefix, n.Addr = p, p.Addr().Next()
	if err := ip("link", "add", n.Bridge, "type", "bridge"); err != nil {
		return err
	}
	err = ipAll(
		[]string{"addr", "add", netip.PrefixFrom(n.Addr, 24).String(), "dev", n.Bridge},
		[]string{"link", "set", n.Bridge, "up"})
	if err != nil {
		_ = ip("link", "del", n.Bridge) // best effort: the error above says what went wrong
	}
	return err
}

// remove deletes every host, then the bridge, reporting what failed.
func (n *Network) remove() {
	for _, h := range n.Hosts {
		if err := h.delete(); err != nil {
			n.t.Errorf("netns cleanup: %v", err)
		}
	}
	if err := ip("link", "del", n.Bridge); err != nil {
		n.t.Errorf("netns cleanup: %v", err)
	}
}

// FreePort returns a TCP port that was free on the bridge address a moment
// ago (another process may take it before the caller binds it).
func (n *Network) FreePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", netip.AddrPortFrom(n.Addr, 0).String())
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// freeSubnet returns the first /24 of space, from one derived from the PID,
// that overlaps no IPv4 address of the root namespace.
func freeSubnet() (netip.Prefix, error) {
	used, err := rootPrefixes()
	if err != nil {
		return netip.Prefix{}, err
	}
	base := space.Addr().As4()
	for i := range 512 {
		s := (os.Getpid() + i) % 512
		b := base
		b[1], b[2] = base[1]+byte(s/256), byte(s%256)
		p := netip.PrefixFrom(netip.AddrFrom4(b), 24)
		if !overlapsAny(p, used) {
			return p, nil
		}
	}
	return netip.Prefix{}, fmt.Errorf("netns: every /24 of %s is in use", space)
}

// overlapsAny reports whether p overlaps one of used.
func overlapsAny(p netip.Prefix, used []netip.Prefix) bool {
	for _, u := range used {
		if u.Overlaps(p) {
			return true
		}
	}
	return false
}

// rootPrefixes lists the IPv4 addresses (with their prefix lengths) of the
// root namespace's interfaces.
func rootPrefixes() ([]netip.Prefix, error) {
	out, err := ipOutput("-j", "-4", "addr", "show")
	if err != nil {
		return nil, err
	}
	var links []struct {
		AddrInfo []struct {
			Local     string `json:"local"`
			PrefixLen int    `json:"prefixlen"`
		} `json:"addr_info"`
	}
	if err := json.Unmarshal(out, &links); err != nil {
		return nil, fmt.Errorf("netns: ip -j addr show: %w", err)
	}
	var ps []netip.Prefix
	for _, l := range links {
		for _, a := range l.AddrInfo {
			if addr, err := netip.ParseAddr(a.Local); err == nil {
				ps = append(ps, netip.PrefixFrom(addr, a.PrefixLen).Masked())
			}
		}
	}
	return ps, nil
}

// lock takes the machine-wide lock and returns its release.
func lock() (func(), error) {
	f, err := os.OpenFile(lockPath, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("netns: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("netns: lock: %w", err)
	}
	return func() { f.Close() }, nil
}

// newName returns a fresh name for a namespace or interface, within the
// kernel's 15-byte limit on interface names.
func newName() string {
	name := prefix + strconv.Itoa(os.Getpid()) + "-" + strconv.FormatInt(seq.Add(1), 36)
	if len(name) > 15 {
		panic("netns: interface name too long: " + name)
	}
	return name
}

// ip runs `ip args...`, returning an error that holds its output.
func ip(args ...string) error {
	_, err := ipOutput(args...)
	return err
}

// ipAll runs each command in turn, stopping at the first error.
func ipAll(cmds ...[]string) error {
	for _, args := range cmds {
		if err := ip(args...); err != nil {
			return err
		}
	}
	return nil
}

// ipOutput runs `ip args...` and returns its standard output.
func ipOutput(args ...string) ([]byte, error) {
	var stdout, stderr bytes.Buffer
	cmd := exec.Command("ip", args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("netns: ip %s: %w: %s", strings.Join(args, " "), err,
			strings.TrimSpace(stderr.String()))
	}
	return stdout.Bytes(), nil
}

// Package cluster runs several Hoist replicas on one PostgreSQL database
// for end-to-end tests: the built binary (cmd/hoist) started N times with
// --store postgres on a schema of the test's own, each replica with its own
// data directory and loopback ports and the e2e credentials; an
// aws-sdk-go-v2 client that spreads its calls over the replicas; and what a
// test does to one replica: kill -9, SIGSTOP and SIGCONT, restart.
//
// Tests skip, naming the variable, when HOIST_TEST_DATABASE_URL is not set
// (internal/store/postgres/pgtest; CONTRIBUTING.md says how to run them).
package cluster

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	gl "github.com/aws/aws-sdk-go-v2/service/gamelift"
	smithyendpoints "github.com/aws/smithy-go/endpoints"

	"github.com/hoistgg/hoist/e2e/hoisttest"
	"github.com/hoistgg/hoist/internal/store/postgres/pgtest"
)

// Options adjust a started cluster.
type Options struct {
	// Replicas is how many to start (default 3).
	Replicas int
	// LocalHosting is each replica's --local-hosting (default "off": the
	// replicas share one machine, and each local agent would make it a
	// Local host of its own; API-only tests need none). A test of managed
	// fleets sets "in-process" (its instances end with their replica) or
	// "agent".
	LocalHosting string
	// TLS keeps each replica's TLS listener (default off, so SDK
	// endpoints are ws://; the replicas share the cluster's CA).
	TLS bool
	// Args and Env are added to every replica's command line and
	// environment (e.g. --webhooks, --timings).
	Args []string
	Env  []string
}

// Cluster is N Hoist replicas sharing one PostgreSQL schema.
type Cluster struct {
	t testing.TB
	// DatabaseURL is the connection string every replica is given (a
	// schema of the test's own, dropped after it; the PG* variables
	// fill in what it leaves out).
	DatabaseURL string
	// Replicas are named A, B, C, ... in start order.
	Replicas []*Replica
	opts     Options
	next     atomic.Uint64 // the round-robin client's counter
	storeState
}

// Replica is one Hoist process of the cluster.
type Replica struct {
	// Name is A, B, C, ...
	Name string
	// DataDir is its data directory (kept across Restart).
	DataDir string
	c       *Cluster

	mu      sync.Mutex
	proc    *hoisttest.Process
	addr    string // host:port of the plain listener, kept across Restart
	tlsAddr string
	down    bool // killed, stopped or paused: the round-robin client skips it
	paused  bool
}

// Start starts a cluster and waits until every replica serves; it is
// stopped when the test ends. Without HOIST_TEST_DATABASE_URL the test is
// skipped.
func Start(t testing.TB, opts Options) *Cluster {
	t.Helper()
	c := &Cluster{t: t, DatabaseURL: pgtest.URL(t), opts: opts}
	if c.opts.Replicas <= 0 {
		c.opts.Replicas = 3
	}
	if c.opts.LocalHosting == "" {
		c.opts.LocalHosting = "off"
	}
	base := t.TempDir()
	// Run as root, Hoist runs server processes as an unprivileged user,
	// which must pass through the test's temporary directory (0700).
	_ = os.Chmod(filepath.Dir(base), 0o711)
	_ = os.Chmod(base, 0o711)
	for i := range c.opts.Replicas {
		name := string(rune('A' + i))
		r := &Replica{Name: name, DataDir: filepath.Join(base, "replica-"+name), c: c, addr: "127.0.0.1:0"}
		if c.opts.TLS {
			r.tlsAddr = "127.0.0.1:0"
		}
		c.Replicas = append(c.Replicas, r)
	}
	// Replicas start one after the other: the first migrates the schema
	// (the others would wait for its advisory lock anyway).
	for _, r := range c.Replicas {
		if err := r.start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(r.stop) // before pgtest's cleanup drops the schema
	}
	return c
}

// start launches the replica's process on its data directory and
// addresses (the kernel's choice the first time, the same ones after).
func (r *Replica) start() error {
	bin, err := hoisttest.BuildBinary()
	if err != nil {
		return err
	}
	args := append(hoisttest.ServeArgs(r.DataDir, r.tlsAddr != ""),
		"--addr", r.addr, "--tls-addr", r.tlsAddr,
		"--store", "postgres", "--database-url", r.c.DatabaseURL, "--local-hosting", r.c.opts.LocalHosting)
	args = append(args, r.c.opts.Args...)
	env := append(hoisttest.CredentialsEnv(), r.c.opts.Env...)
	readyDir, err := os.MkdirTemp(filepath.Dir(r.DataDir), "ready-"+r.Name+"-")
	if err != nil {
		return err
	}
	p, err := hoisttest.Launch("hoist "+r.Name, bin, args, env, readyDir)
	if err != nil {
		return fmt.Errorf("replica %s: %w", r.Name, err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.proc, r.down, r.paused = p, false, false
	r.addr = strings.TrimPrefix(p.URL, "http://")
	if p.TLSURL != "" {
		r.tlsAddr = strings.TrimPrefix(p.TLSURL, "https://")
	}
	return nil
}

// stop ends the replica at the end of the test: SIGCONT if it is paused,
// then SIGINT (its game servers end too), then its local agent if one is
// left. A replica that would not stop fails the test.
func (r *Replica) stop() {
	r.mu.Lock()
	p, paused := r.proc, r.paused
	r.down, r.paused = true, false
	r.mu.Unlock()
	if p == nil {
		return
	}
	if paused {
		_ = syscall.Kill(p.PID(), syscall.SIGCONT)
	}
	if err := p.StopWith(syscall.SIGINT, 30*time.Second); err != nil {
		r.c.t.Errorf("replica %s: %v", r.Name, err)
	}
	if err := hoisttest.StopLocalAgent(r.DataDir, 30*time.Second); err != nil {
		r.c.t.Errorf("replica %s: %v", r.Name, err)
	}
	if r.c.t.Failed() {
		r.c.t.Logf("replica %s log (tail):\n%s", r.Name, p.LogTail(60))
	}
}

// URL is the replica's API endpoint (http://127.0.0.1:port).
func (r *Replica) URL() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return "http://" + r.addr
}

// Process is the replica's current process.
func (r *Replica) Process() *hoisttest.Process {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.proc
}

// Up reports whether the replica runs and is not paused.
func (r *Replica) Up() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return !r.down
}

// Kill sends SIGKILL to the replica's process (only: not to what it
// started, as when a machine's Hoist is killed) and waits for it to end.
func (r *Replica) Kill() {
	r.mu.Lock()
	r.down, r.paused = true, false // SIGKILL ends a stopped process too
	p := r.proc
	r.mu.Unlock()
	p.Kill()
}

// Stop stops the replica as a service manager does (SIGTERM) and waits
// for it to exit.
func (r *Replica) Stop() {
	r.mu.Lock()
	r.down = true
	p := r.proc
	r.mu.Unlock()
	if err := p.Stop(30 * time.Second); err != nil {
		r.c.t.Errorf("replica %s: %v", r.Name, err)
	}
}

// Pause stops the replica's process with SIGSTOP: it holds its
// connections and whatever it was doing (its store transactions too)
// until Resume.
func (r *Replica) Pause() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := syscall.Kill(r.proc.PID(), syscall.SIGSTOP); err != nil {
		r.c.t.Fatalf("SIGSTOP replica %s: %v", r.Name, err)
	}
	r.down, r.paused = true, true
}

// Resume continues a paused replica (SIGCONT).
func (r *Replica) Resume() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := syscall.Kill(r.proc.PID(), syscall.SIGCONT); err != nil {
		r.c.t.Fatalf("SIGCONT replica %s: %v", r.Name, err)
	}
	r.down, r.paused = false, false
}

// Restart starts a replica that was killed or stopped again, on the same
// data directory and addresses, and waits until it serves.
func (r *Replica) Restart() {
	r.c.t.Helper()
	if p := r.Process(); p != nil && !p.Exited() {
		r.c.t.Fatalf("replica %s still runs: Kill or Stop it first", r.Name)
	}
	if err := r.start(); err != nil {
		r.c.t.Fatal(err)
	}
}

// Client returns an aws-sdk-go-v2 GameLift client (the e2e credentials,
// no retries) whose calls go to the replicas that are up in turn, each
// call to the next (round robin).
func (c *Cluster) Client() *gl.Client {
	return hoisttest.NewV2("http://unused.invalid", hoisttest.AccessKeyID, hoisttest.SecretAccessKey, func(o *gl.Options) {
		o.BaseEndpoint = nil
		o.EndpointResolverV2 = roundRobin{c}
	})
}

// Up returns the replicas that are up, in order.
func (c *Cluster) Up() []*Replica {
	var up []*Replica
	for _, r := range c.Replicas {
		if r.Up() {
			up = append(up, r)
		}
	}
	return up
}

// roundRobin resolves each call's endpoint to the next replica that is
// up.
type roundRobin struct{ c *Cluster }

// ResolveEndpoint implements gl.EndpointResolverV2.
func (rr roundRobin) ResolveEndpoint(context.Context, gl.EndpointParameters) (smithyendpoints.Endpoint, error) {
	up := rr.c.Up()
	if len(up) == 0 {
		return smithyendpoints.Endpoint{}, fmt.Errorf("cluster: no replica is up")
	}
	u, err := url.Parse(up[int(rr.c.next.Add(1)-1)%len(up)].URL())
	if err != nil {
		return smithyendpoints.Endpoint{}, err
	}
	return smithyendpoints.Endpoint{URI: *u}, nil
}

// V2 returns an aws-sdk-go-v2 GameLift client of this replica alone.
func (r *Replica) V2() *gl.Client {
	return hoisttest.NewV2(r.URL(), hoisttest.AccessKeyID, hoisttest.SecretAccessKey)
}

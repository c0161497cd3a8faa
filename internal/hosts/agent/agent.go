// Package agent is the host side of pool hosts: `hoist agent --pool`. It
// enrols the machine with Hoist once (an enrolment token, kept credential
// in its state directory), holds a WebSocket to Hoist speaking the host
// protocol (internal/hosts/hostproto), and runs the instances Hoist places
// on it with the same provider Hoist runs its own with
// (internal/fleets/local): it downloads each instance's build from Hoist,
// and bridges the provider's Hooks to Hoist's messages.
//
//	Hoist --StartInstance--> Agent --download build--> local.Provider.StartInstance
//	local.Provider --Hooks--> bridge --queue (ordered, kept across reconnects)--> Hoist
//	Agent --Hello, Heartbeat (what runs)--> Hoist --(what should run)--> Agent ends the rest
//
// When Hoist cannot be reached the agent keeps its instances running and
// reconnects with capped, jittered backoff; on reconnect Hoist's answer to
// Hello tells it what to keep. docs/hosts.md describes it.
package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/hoistgg/hoist/internal/fleets/local"
)

// Config configures an Agent.
type Config struct {
	// Endpoint is Hoist's TLS listener, https://host:port.
	Endpoint string
	// Pool, Location, Address, DNSName and Instances are what the host
	// enrols with (only used to enrol).
	Pool, Location, Address, DNSName string
	Instances                        map[string]int
	// Token is the enrolment token (needed only to enrol).
	Token string
	// CAFile, when set, is trusted instead of the token's pin.
	CAFile string
	// Dir is the state directory: host.json, Hoist's CA, instances/,
	// builds/.
	Dir string
	// ProcessUser is the account server processes run as when the agent
	// runs as root (as hoist serve's --process-user).
	ProcessUser string
	// Provider overrides the local provider's settings (Dir and Users are
	// the agent's).
	Provider local.Config
	// MaxBuildSize bounds a build download and what it unpacks to
	// (default 20 GiB).
	MaxBuildSize int64
	// ReconnectMax caps the wait between two connection attempts
	// (default 30s); the first waits are shorter.
	ReconnectMax time.Duration
	// Version is the agent's version, for Hello.
	Version string
	// Local runs the agent as Hoist's own machine (`hoist agent --local`,
	// started by `hoist serve`): it does not enrol (hoist serve wrote its
	// credential in Dir and rewrites it at each start, so every connection
	// attempt reads it again), it may reach Hoist over plain HTTP on
	// loopback, it leaves the SDK URL Hoist gives its processes as it is,
	// and it obeys Retire.
	Local bool
	// OrphanTimeout, for a local agent, is how long it keeps its instances
	// running while no Hoist is connected: after it, it ends them and
	// exits (0: never).
	OrphanTimeout time.Duration
	Logger        *slog.Logger
}

// Agent is a running pool host agent.
type Agent struct {
	cfg Config
	log *slog.Logger
	// stateMu guards state: a local agent reads it again before each
	// connection attempt.
	stateMu sync.Mutex
	state   *State
	caPEM   []byte
	bundle  string // the CA bundle file server processes trust
	prov    *local.Provider
	rep     *reporter
	builds  *buildCache
	client  *http.Client // HTTPS to Hoist, trusting its CA only

	mu sync.Mutex
	// instances are those Hoist started here, by ID.
	instances map[string]*instance
	// conn is the current connection (nil while disconnected).
	conn *conn
	// retire ends Run (Retire from Hoist, local agents only).
	retire context.CancelCauseFunc
}

// New prepares an agent: it enrols the host if its state directory holds
// no credential yet, writes the CA bundle, and starts the local provider.
func New(ctx context.Context, cfg Config) (*Agent, error) {
	if err := cfg.check(); err != nil {
		return nil, err
	}
	dir, err := filepath.Abs(cfg.Dir)
	if err != nil {
		return nil, err
	}
	cfg.Dir = dir
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.MaxBuildSize <= 0 {
		cfg.MaxBuildSize = 20 << 30
	}
	if cfg.ReconnectMax <= 0 {
		cfg.ReconnectMax = 30 * time.Second
	}
	a := &Agent{cfg: cfg, log: cfg.Logger, instances: map[string]*instance{}}
	if err := a.loadOrEnrol(ctx); err != nil {
		return nil, err
	}
	if err := a.startProvider(); err != nil {
		return nil, err
	}
	a.rep = newReporter(a)
	a.builds = &buildCache{a: a, dir: filepath.Join(cfg.Dir, "builds"), busy: map[string]*sync.Mutex{}}
	return a, nil
}

// check checks the settings an agent cannot run without.
func (c *Config) check() error {
	if c.Local {
		if c.Dir == "" {
			return errors.New("--dir is required")
		}
		return nil // the endpoint is in Dir's host.json
	}
	u, err := url.Parse(c.Endpoint)
	switch {
	case c.Endpoint == "":
		return errors.New("--endpoint is required: Hoist's TLS address, e.g. https://198.18.0.1:9443")
	case err != nil || u.Scheme != "https" || u.Host == "" || (u.Path != "" && u.Path != "/"):
		return fmt.Errorf("--endpoint %q: want https://host:port (Hoist's TLS listener)", c.Endpoint)
	case c.Dir == "":
		return errors.New("--dir is required")
	}
	return nil
}

// loadOrEnrol reads the host's credential from the state directory, or
// enrols the host and keeps it there.
func (a *Agent) loadOrEnrol(ctx context.Context) error {
	st, err := LoadState(a.cfg.Dir)
	if err != nil {
		return err
	}
	var caPEM []byte
	if a.cfg.Local {
		if st == nil {
			return fmt.Errorf("%s holds no host credential: a local agent is started by hoist serve, which writes it", a.cfg.Dir)
		}
		if caPEM, err = os.ReadFile(filepath.Join(a.cfg.Dir, caFile)); err != nil {
			return err
		}
	} else if st == nil {
		if a.cfg.Token == "" {
			return fmt.Errorf("%s holds no host credential: give --enrolment-token to enrol this host", a.cfg.Dir)
		}
		if err := a.checkEnrolFlags(); err != nil {
			return err
		}
		if st, caPEM, err = a.enrol(ctx); err != nil {
			return err
		}
		if err := SaveState(a.cfg.Dir, st, caPEM); err != nil {
			return err
		}
		a.log.Info("agent: enrolled", "host", st.HostID, "pool", st.Pool, "location", st.Location)
	} else {
		if err := a.sameHost(st); err != nil {
			return err
		}
		if caPEM, err = os.ReadFile(filepath.Join(a.cfg.Dir, caFile)); err != nil {
			return err
		}
		a.log.Info("agent: enrolled before", "host", st.HostID, "pool", st.Pool, "location", st.Location)
	}
	a.stateMu.Lock()
	a.state, a.caPEM = st, caPEM
	a.stateMu.Unlock()
	tlsCfg, err := poolTLS(caPEM)
	if err != nil {
		return fmt.Errorf("%s: %w", filepath.Join(a.cfg.Dir, caFile), err)
	}
	a.client = &http.Client{Transport: &http.Transport{TLSClientConfig: tlsCfg, Proxy: nil}}
	return nil
}

// checkEnrolFlags checks the settings enrolment needs.
func (a *Agent) checkEnrolFlags() error {
	switch {
	case a.cfg.Pool == "":
		return errors.New("--pool is required to enrol")
	case a.cfg.Location == "":
		return errors.New("--location is required to enrol (the fleet location this host serves, e.g. us-west-2)")
	case a.cfg.Address == "":
		return errors.New("--address is required to enrol (the IP address players reach this host's game servers at)")
	case len(a.cfg.Instances) == 0:
		return errors.New("--instances is required to enrol, e.g. c5.large=4")
	}
	return nil
}

// sameHost refuses flags that contradict the enrolled host's.
func (a *Agent) sameHost(st *State) error {
	differs := func(flag, given, enrolled string) error {
		if given != "" && given != enrolled {
			return fmt.Errorf("%s is enrolled as host %s with %s %s, not %s: use another --dir (or remove %s) to enrol again",
				a.cfg.Dir, st.HostID, flag, enrolled, given, filepath.Join(a.cfg.Dir, stateFile))
		}
		return nil
	}
	return errors.Join(differs("--pool", a.cfg.Pool, st.Pool), differs("--location", a.cfg.Location, st.Location),
		differs("--address", a.cfg.Address, st.Address), differs("--endpoint", a.cfg.Endpoint, st.Endpoint))
}

// startProvider writes the CA bundle and starts the local provider (as
// unprivileged accounts when the agent runs as root).
func (a *Agent) startProvider() error {
	users, err := local.SetupUser(a.cfg.ProcessUser, a.cfg.Dir, a.log.With("component", "processes"))
	if err != nil {
		return err
	}
	if a.bundle, err = writeBundle(a.cfg.Dir, a.caPEM); err != nil {
		return err
	}
	pc := a.cfg.Provider
	pc.Dir, pc.Logger = filepath.Join(a.cfg.Dir, "instances"), a.log.With("component", "processes")
	pc.Users = nil
	if users != nil {
		pc.Users = users.User
	}
	a.prov, err = local.New(pc)
	return err
}

// url is an address on Hoist's TLS listener (a local agent's: the
// listener hoist serve named).
func (a *Agent) url(path string) string {
	return strings.TrimRight(a.creds().Endpoint, "/") + path
}

// creds returns the host's credential and Hoist's endpoint (before the
// host enrolled: the endpoint alone).
func (a *Agent) creds() State {
	a.stateMu.Lock()
	defer a.stateMu.Unlock()
	if a.state == nil {
		return State{Endpoint: a.cfg.Endpoint}
	}
	st := *a.state
	if st.Endpoint == "" {
		st.Endpoint = a.cfg.Endpoint
	}
	return st
}

// reloadLocal reads a local agent's credential and endpoint again: hoist
// serve rewrites them at each start.
func (a *Agent) reloadLocal() error {
	st, err := LoadState(a.cfg.Dir)
	if err != nil {
		return err
	}
	if st == nil {
		return fmt.Errorf("%s holds no host credential any more", a.cfg.Dir)
	}
	a.stateMu.Lock()
	a.state = st
	a.stateMu.Unlock()
	return nil
}

// HostID is the host's ID.
func (a *Agent) HostID() string { return a.creds().HostID }

// errRetired ends a local agent's Run when Hoist told it to retire.
var errRetired = errors.New("agent: Hoist told this local agent to retire")

// errOrphaned ends a local agent's Run once no Hoist was connected for
// its OrphanTimeout.
var errOrphaned = errors.New("agent: no Hoist connected for the orphan timeout")

// Retired reports whether Run ended because a local agent retired (Hoist
// told it) or was orphaned: the normal ends of a local agent.
func Retired(err error) bool { return errors.Is(err, errRetired) || errors.Is(err, errOrphaned) }

// Run connects to Hoist and serves it until ctx ends, reconnecting with
// backoff whenever the connection is lost; the instances keep running
// meanwhile. When ctx ends (or a local agent retires, or is orphaned),
// or Hoist refuses the host's credential (ErrRemoved), every instance is
// stopped. A local agent's Run returns the cause.
func (a *Agent) Run(ctx context.Context) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	a.retire = cancel
	go a.rep.run(ctx)
	failures := 0
	lastConnected := time.Now()
	for ctx.Err() == nil {
		hello, err := a.connect(ctx)
		if hello {
			failures, lastConnected = 0, time.Now()
		}
		if ctx.Err() != nil {
			break
		}
		if errors.Is(err, ErrRemoved) {
			a.log.Error("agent: this host was removed: stopping every instance", "err", err)
			return errors.Join(err, a.prov.Close())
		}
		if a.cfg.Local && a.cfg.OrphanTimeout > 0 && time.Since(lastConnected) > a.cfg.OrphanTimeout {
			cancel(errOrphaned)
			break
		}
		failures++
		wait := backoff(failures, a.cfg.ReconnectMax)
		a.log.Warn("agent: connection to Hoist lost; instances keep running", "err", err, "retryIn", wait.Round(time.Millisecond))
		select {
		case <-ctx.Done():
		case <-time.After(wait):
		}
	}
	cause := context.Cause(ctx)
	a.log.Info("agent: stopping every instance", "cause", cause)
	err := a.prov.Close()
	if a.cfg.Local && (errors.Is(cause, errRetired) || errors.Is(cause, errOrphaned)) {
		return errors.Join(cause, err)
	}
	return err
}

// backoff is the wait before connection attempt n (1 = the first retry):
// full jitter over an exponential ceiling (500ms doubling) capped at max.
func backoff(n int, max time.Duration) time.Duration {
	ceil := 500 * time.Millisecond << min(n-1, 20)
	ceil = min(ceil, max)
	return time.Duration(rand.Int64N(int64(ceil))) + time.Millisecond
}

// Package anywhere is hoist agent in Anywhere mode: it makes the host it
// runs on a compute of an ANYWHERE fleet, and runs that fleet's server
// processes there, speaking the GameLift Agent protocol
// (internal/agentproto) to the GameLiftAgentEndpoint exactly as Amazon's
// Java GameLift Agent does, so that it works against Hoist (and, by
// design, wherever that agent does).
//
//	RegisterCompute        the host (IP address, location, compute name)
//	GetComputeAuthToken    a token, refreshed 15 minutes before it expires (at most
//	                       half its life before), for the socket and for processes
//	connect                the agent endpoint; reconnects with backoff when the socket
//	                       drops, keeping every process; RefreshConnection opens a new one
//	SendHeartbeat          at once, then every HeartbeatInterval; the reply's Status
//	                       starts the processes (Initializing, Active), or ends them
//	                       (Terminating, Terminated); unhealthy processes are killed, and
//	                       so are those unregistered for 8 heartbeats in a row
//	processes              the runtime configuration's (DescribeRuntimeConfiguration,
//	                       again every RuntimeRefresh), run by internal/fleets/local as one
//	                       instance whose launch paths are this host's: in their own PID
//	                       namespace or process group, unprivileged when the agent is
//	                       root, relaunched with backoff when they end
//	NotifyServerProcessTermination  for each process that ends (or cannot start)
//	termination            on SIGTERM, StartComputeTermination or a Terminating reply:
//	                       a Terminating heartbeat (Hoist sends each process
//	                       TerminateProcess), a grace period, then the rest are killed;
//	                       a last Terminated heartbeat, then DeregisterCompute
package anywhere

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/hoistgg/hoist/internal/agentproto"
	"github.com/hoistgg/hoist/internal/api"
	"github.com/hoistgg/hoist/internal/fleets"
	"github.com/hoistgg/hoist/internal/fleets/local"
	"github.com/hoistgg/hoist/internal/ids"
	"github.com/hoistgg/hoist/internal/pki"
)

// Config configures an agent. Endpoint, FleetID, Location, IPAddress,
// ComputeName, AWS and Dir are required.
type Config struct {
	// Endpoint is the GameLift (Hoist) API's URL.
	Endpoint string
	// FleetID, Location (a custom location of the fleet), IPAddress,
	// ComputeName and DNSName (optional) are what RegisterCompute
	// registers.
	FleetID, Location, IPAddress, ComputeName, DNSName string
	// CAFile, when set, is a PEM file of CA certificates trusted besides
	// the system's for Hoist's TLS listener (API and agent endpoint); the
	// processes get the system's roots and these as SSL_CERT_FILE.
	CAFile string
	// AWS holds the credentials and region requests are signed with.
	AWS aws.Config
	// Dir is the agent's directory: the compute's instance directory (its
	// processes' home/ and captured output) and the CA bundle of processes.
	Dir string
	// ProcessUser, when the agent runs as root, is the unprivileged
	// account processes run as (created if missing); empty: as the agent's
	// own user.
	ProcessUser string
	// ProcessEnv is added to every process's environment (KEY=value).
	ProcessEnv []string
	// HeartbeatInterval is the time between heartbeats (default 60 s, the
	// Java agent's).
	HeartbeatInterval time.Duration
	// RuntimeRefresh is how often the runtime configuration is asked for
	// again (default 5 m, the Java agent's cache life).
	RuntimeRefresh time.Duration
	// TerminateGrace is how long processes have to end after the agent
	// began terminating before they are killed (default 5 m).
	TerminateGrace time.Duration
	// RefreshOverlap is how long the old socket stays open after a
	// RefreshConnection (default 5 m, the Java agent's).
	RefreshOverlap time.Duration
	// Local tunes the process supervisor (Stagger, CrashBackoff, ...); its
	// Dir, HostPaths, Users and TerminateGrace are set by the agent.
	Local  local.Config
	Logger *slog.Logger
}

// defaults checks the required fields and fills the defaults.
func (c *Config) defaults() error {
	for name, v := range map[string]string{"Endpoint": c.Endpoint, "FleetID": c.FleetID, "Location": c.Location,
		"IPAddress": c.IPAddress, "ComputeName": c.ComputeName, "Dir": c.Dir} {
		if v == "" {
			return fmt.Errorf("anywhere: Config.%s is required", name)
		}
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&c.HeartbeatInterval, time.Minute)
	def(&c.RuntimeRefresh, 5*time.Minute)
	def(&c.TerminateGrace, 5*time.Minute)
	def(&c.RefreshOverlap, 5*time.Minute)
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return nil
}

// Agent is one running agent.
type Agent struct {
	cfg      Config
	log      *slog.Logger
	gl       glClient
	tokens   *tokenSource
	provider *local.Provider
	conns    *connections
	sdkURL   string
	caBundle string // SSL_CERT_FILE of processes ("" without CAFile)

	mu           sync.Mutex
	status       string              // agentproto.Status*
	started      bool                // the instance was started
	running      map[string]bool     // processes started and not ended
	unregistered map[string]int      // heartbeats in a row that listed a process unregistered
	terminate    chan terminateOrder // the first order to terminate
	stopped      chan struct{}       // closed by InstanceStopped
	stopOnce     sync.Once
	told         sync.Once // the Terminating heartbeat was sent
}

// terminateOrder asks the agent to terminate, at once or gracefully.
type terminateOrder struct {
	now    bool
	reason string
}

// Run runs an agent until it terminates: ctx ending (SIGTERM) terminates it
// gracefully, as do StartComputeTermination and a Terminating reply. It
// returns nil once it terminated and deregistered its compute.
func Run(ctx context.Context, cfg Config) error {
	a, err := newAgent(cfg)
	if err != nil {
		return err
	}
	return a.run(ctx)
}

// newAgent returns an agent, not yet started.
func newAgent(cfg Config) (*Agent, error) {
	if err := cfg.defaults(); err != nil {
		return nil, err
	}
	httpClient, err := tlsClient(cfg.CAFile)
	if err != nil {
		return nil, err
	}
	a := &Agent{cfg: cfg, log: cfg.Logger, gl: newGameLift(cfg.AWS, cfg.Endpoint, httpClient),
		status: agentproto.StatusInitializing, running: map[string]bool{}, unregistered: map[string]int{},
		terminate: make(chan terminateOrder, 1), stopped: make(chan struct{})}
	a.tokens = &tokenSource{gl: a.gl, fleetID: cfg.FleetID, computeName: cfg.ComputeName, now: time.Now, mu: make(chan struct{}, 1)}
	a.conns = newConnections(a, httpClient)
	return a, nil
}

// run is the agent's life.
func (a *Agent) run(ctx context.Context) error {
	if err := a.prepare(); err != nil {
		return err
	}
	endpoints, err := a.register(ctx)
	if err != nil {
		return err
	}
	a.sdkURL = endpoints.sdk
	if _, err := a.tokens.get(ctx); err != nil {
		return err
	}
	loops, cancelLoops := context.WithCancel(context.Background())
	defer cancelLoops()
	go a.conns.supervise(loops, endpoints.agent)
	go a.heartbeats(loops)
	go a.refreshRuntime(loops)
	var order terminateOrder
	select {
	case <-ctx.Done():
		order = terminateOrder{reason: "the agent was asked to stop (SIGTERM)"}
	case order = <-a.terminate:
	}
	a.terminateCompute(order)
	cancelLoops()
	a.conns.closeAll()
	return nil
}

// prepare makes the agent's directory, the processes' CA bundle and the
// process supervisor.
func (a *Agent) prepare() error {
	if err := os.MkdirAll(a.cfg.Dir, 0o755); err != nil {
		return err
	}
	accounts, err := local.SetupUser(a.cfg.ProcessUser, a.cfg.Dir, a.log.With("component", "processes"))
	if err != nil {
		return err
	}
	if a.cfg.CAFile != "" {
		if a.caBundle, err = writeCABundle(a.cfg.Dir, a.cfg.CAFile); err != nil {
			return err
		}
	}
	lc := a.cfg.Local
	lc.Dir, lc.HostPaths, lc.TerminateGrace, lc.NewID = filepath.Join(a.cfg.Dir, "instances"), true, a.cfg.TerminateGrace, ids.UUID
	lc.Logger = a.log.With("component", "processes")
	if accounts != nil {
		lc.Users = accounts.User
	}
	a.provider, err = local.New(lc)
	return err
}

// writeCABundle writes the system's roots and the CA file into the agent's
// directory, readable by the processes' account: their SSL_CERT_FILE.
func writeCABundle(dir, caFile string) (string, error) {
	ca, err := os.ReadFile(caFile)
	if err != nil {
		return "", fmt.Errorf("--ca-file: %w", err)
	}
	path := filepath.Join(dir, "ca-bundle.pem")
	data := append(pki.SystemRootsPEM(os.Getenv), '\n')
	if err := os.WriteFile(path, append(data, ca...), 0o644); err != nil {
		return "", err
	}
	return path, os.Chmod(path, 0o644) // the umask may have taken bits
}

// endpointsOf are the URLs RegisterCompute names.
type endpointsOf struct{ sdk, agent string }

// register registers the compute, retrying while Hoist is not ready or
// unreachable.
func (a *Agent) register(ctx context.Context) (endpointsOf, error) {
	var out endpointsOf
	err := retry(ctx, a.log, "RegisterCompute", 8, func() error {
		c, err := a.gl.registerCompute(ctx, a.cfg)
		if err == nil {
			out = endpointsOf{sdk: aws.ToString(c.sdkEndpoint), agent: aws.ToString(c.agentEndpoint)}
			if out.agent == "" || out.sdk == "" {
				return permanent(errors.New("RegisterCompute named no GameLiftAgentEndpoint or GameLiftServiceSdkEndpoint"))
			}
		}
		return err
	})
	if err == nil {
		a.log.Info("agent: compute registered", "fleet", a.cfg.FleetID, "compute", a.cfg.ComputeName,
			"location", a.cfg.Location, "agentEndpoint", out.agent, "sdkEndpoint", out.sdk)
	}
	return out, err
}

// processEnv is the environment of processes (with the current token).
func (a *Agent) processEnv(token string) []string {
	env := []string{"GAMELIFT_SDK_WEBSOCKET_URL=" + a.sdkURL, "GAMELIFT_SDK_AUTH_TOKEN=" + token,
		"GAMELIFT_SDK_FLEET_ID=" + a.cfg.FleetID, "GAMELIFT_SDK_HOST_ID=" + a.cfg.ComputeName}
	if a.caBundle != "" {
		env = append(env, "SSL_CERT_FILE="+a.caBundle)
	}
	return append(env, a.cfg.ProcessEnv...)
}

// startProcesses starts the compute's instance with the fleet's runtime
// configuration (once); a failure is retried at the next heartbeat.
func (a *Agent) startProcesses(ctx context.Context) {
	a.mu.Lock()
	if a.started {
		a.mu.Unlock()
		return
	}
	a.mu.Unlock()
	rc, err := a.runtimeConfiguration(ctx)
	if err != nil {
		a.log.Warn("agent: DescribeRuntimeConfiguration failed; processes start after the next heartbeat", "err", err)
		return
	}
	token, err := a.tokens.get(ctx)
	if err != nil {
		a.log.Warn("agent: no auth token for processes", "err", err)
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.started || a.status == agentproto.StatusTerminating || a.status == agentproto.StatusTerminated {
		return
	}
	spec := fleets.InstanceSpec{InstanceRef: fleets.InstanceRef{FleetID: a.cfg.FleetID, InstanceID: a.cfg.ComputeName,
		Location: a.cfg.Location}, RuntimeConfiguration: rc, Env: a.processEnv(token)}
	if err := a.provider.StartInstance(context.Background(), spec, hooks{a}); err != nil {
		a.log.Error("agent: starting processes", "err", err)
		return
	}
	a.started = true
	a.log.Info("agent: running the runtime configuration", "serverProcesses", len(rc.ServerProcesses))
}

// runtimeConfiguration asks for the fleet's runtime configuration.
func (a *Agent) runtimeConfiguration(ctx context.Context) (api.RuntimeConfiguration, error) {
	var out agentproto.DescribeRuntimeConfigurationResponse
	if err := a.conns.call(ctx, agentproto.ActionDescribeRuntimeConfiguration, agentproto.DescribeRuntimeConfigurationRequest{}, &out); err != nil {
		return api.RuntimeConfiguration{}, err
	}
	rc := api.RuntimeConfiguration{GameSessionActivationTimeoutSeconds: out.GameSessionActivationTimeoutSeconds,
		MaxConcurrentGameSessionActivations: out.MaxConcurrentGameSessionActivations}
	for _, sp := range out.ServerProcesses {
		rc.ServerProcesses = append(rc.ServerProcesses, api.ServerProcess{LaunchPath: api.String(sp.LaunchPath),
			Parameters: api.String(sp.Parameters), ConcurrentExecutions: api.Int32(sp.ConcurrentExecutions)})
	}
	return rc, nil
}

// refreshRuntime asks for the runtime configuration again every
// RuntimeRefresh and gives it to the running instance.
func (a *Agent) refreshRuntime(ctx context.Context) {
	t := time.NewTicker(a.cfg.RuntimeRefresh)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if rc, err := a.runtimeConfiguration(ctx); err == nil {
			a.provider.UpdateRuntimeConfiguration(a.cfg.ComputeName, rc)
		} else {
			a.log.Info("agent: DescribeRuntimeConfiguration failed", "err", err)
		}
	}
}

// orderTermination asks the agent to terminate (the first order wins).
func (a *Agent) orderTermination(now bool, reason string) {
	select {
	case a.terminate <- terminateOrder{now: now, reason: reason}:
	default:
	}
}

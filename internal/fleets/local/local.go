// Package local is the compute provider that runs the instances of managed
// fleets on this machine: an instance is a directory holding a copy of the
// build (what the game sees as /local/game) and the server processes of the
// fleet's runtime configuration, started, watched and relaunched here.
//
// Each server process runs, on Linux, under an init of its own in PID and
// mount namespaces of its own (package procinit), so that nothing it starts
// outlives it and it sees no other process; elsewhere, or where the system
// cannot make the namespaces, in its own process group. It has its working
// directory at the instance's game root, the GAMELIFT_SDK_* environment the
// Server SDK's parameterless InitSDK reads, and its stdout and stderr in a
// file of the instance's logs directory. Ending a process asks it first
// (the SDK's TerminateProcess, through fleets.Hooks.AskToEnd), then kills
// its init (or its whole group) after a grace period; Close does that to
// every process and returns only when none is left.
//
// Layout of an instance (all under Config.Dir):
//
//	<fleet ID>/<instance ID>/
//	    game/            the build; /local/game/x maps to game/x
//	    home/            HOME of the instance's processes
//	    certificates/    TLS files of fleets with GENERATED certificates
//	    logs/            <process ID>.log per server process, install.log
package local

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"time"

	"github.com/hoistgg/hoist/internal/api"
	"github.com/hoistgg/hoist/internal/fleets"
	"github.com/hoistgg/hoist/internal/ids"
)

// Config configures a Provider. Dir is required.
type Config struct {
	// Dir holds the instances' directories.
	Dir string
	// Stagger is the least time between two launches on one instance.
	// Default 1s.
	Stagger time.Duration
	// TerminateGrace is how long a process has to end after it was sent
	// TerminateProcess, before it is killed. Default 5m (GameLift's wait).
	TerminateGrace time.Duration
	// ShutdownGrace replaces TerminateGrace while Close runs. Default 10s.
	ShutdownGrace time.Duration
	// KillGrace is how long a process that could not be sent
	// TerminateProcess (not connected) has after SIGTERM. Default 10s.
	KillGrace time.Duration
	// MinUptime: a process that ends unasked sooner than this, with a
	// non-zero exit status or by a signal, counts as a failure, and its
	// slot waits (CrashBackoff, doubling up to MaxBackoff) before launching
	// again (a quick exit with status 0 is a game that ended its session:
	// it is replaced after Stagger only). A process that could not be
	// started counts as a failure too. Defaults 10s, 1s, 1m.
	MinUptime, CrashBackoff, MaxBackoff time.Duration
	// InstallTimeout bounds the build's install script. Default 5m.
	InstallTimeout time.Duration
	// LinkBuild hard-links the build's files into instances instead of
	// copying them (faster, but a game that rewrites its own files in place
	// would change every instance's copy and the build).
	LinkBuild bool
	// KeepDirs keeps the directories of stopped instances, and those an
	// earlier run left in Dir (for debugging); by default New removes the
	// latter.
	KeepDirs bool
	// Users, when set, gives the unprivileged account the server processes
	// and install script of an instance run as (Hoist runs as root; see
	// SetupUser): each instance running at one time has its own slot (the
	// lowest free one, from 0, whose account no other Hoist holds and no
	// process runs as: see takeAccount), and Users gives the slot's
	// account, so that no two running instances share a UID. The
	// instance's game/, home/ and certificates/ are its account's, nothing
	// else of Hoist's is readable to it, and LinkBuild is ignored. Nil runs
	// them as Hoist's own user.
	Users func(slot int) (*User, error)
	// AccountLockDir holds a lock file per account UID, held by the Hoist
	// whose instance uses the account, so that Hoists on one machine never
	// share one (with Users only). Default /run/lock/hoist.
	AccountLockDir string
	// HostPaths says that launch paths are absolute paths on this machine
	// and instances have no build: hoist agent runs its Anywhere compute
	// as one instance. Nothing is placed in the instance (no build copy,
	// no install script, no launch path check: a launch path that cannot
	// be run fails its launch, reported by LaunchFailed and retried after
	// backoff); processes start in the instance's home/, and their IDs are
	// bare UUIDs, as the GameLift Agent's are.
	HostPaths bool
	// NewID returns a fresh random UUID for process IDs. Default
	// crypto/rand.
	NewID  func() string
	Logger *slog.Logger

	// noConfine starts processes directly, as where the system has no
	// namespaces (tests).
	noConfine bool
}

// Provider runs instances on this machine (fleets.ComputeProvider).
type Provider struct {
	cfg  Config
	log  *slog.Logger
	path string // Hoist's PATH, passed on to processes
	// confine starts a process under an init in namespaces of its own
	// (nil: processes are started directly).
	confine func(*exec.Cmd) (child, error)

	mu        sync.Mutex
	instances map[string]*instance
	processes map[string]*instance // process ID -> its instance
	slots     map[int]bool         // the user slots of running instances
	closing   bool
}

var (
	_ fleets.ComputeProvider = (*Provider)(nil)
	_ fleets.ProcessLister   = (*Provider)(nil)
)

// New returns a Provider.
func New(cfg Config) (*Provider, error) {
	if cfg.Dir == "" {
		return nil, errors.New("local: Config.Dir is required")
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&cfg.Stagger, time.Second)
	def(&cfg.TerminateGrace, 5*time.Minute)
	def(&cfg.ShutdownGrace, 10*time.Second)
	def(&cfg.KillGrace, 10*time.Second)
	def(&cfg.MinUptime, 10*time.Second)
	def(&cfg.CrashBackoff, time.Second)
	def(&cfg.MaxBackoff, time.Minute)
	def(&cfg.InstallTimeout, 5*time.Minute)
	if cfg.AccountLockDir == "" {
		cfg.AccountLockDir = defaultAccountLockDir
	}
	if cfg.NewID == nil {
		cfg.NewID = ids.UUID
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	// Server processes start in their game root, so a relative launch path
	// would be resolved from there: the instances' directory must be
	// absolute.
	dir, err := filepath.Abs(cfg.Dir)
	if err != nil {
		return nil, err
	}
	cfg.Dir = dir
	if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
		return nil, err
	}
	if cfg.Users != nil {
		// The users reach their instances by name, and list none.
		if err := os.Chmod(cfg.Dir, 0o711); err != nil {
			return nil, err
		}
	}
	if err := becomeSubreaper(); err != nil {
		cfg.Logger.Warn("local: cannot become a child subreaper: what server processes leave when they end goes to init", "err", err)
	}
	killLeftoverGroups(cfg.Dir, cfg.Logger)
	if cfg.Users != nil {
		endLeftoverAccounts(cfg.AccountLockDir, cfg.Logger)
	}
	if !cfg.KeepDirs {
		removeLeftovers(cfg.Dir, cfg.Logger)
	}
	return &Provider{cfg: cfg, log: cfg.Logger, path: os.Getenv("PATH"), confine: newConfiner(cfg, cfg.Logger),
		instances: map[string]*instance{}, processes: map[string]*instance{}, slots: map[int]bool{}}, nil
}

// removeLeftovers removes what instances of an earlier run left in dir: a
// new provider runs no instance yet, and the processes of the earlier one
// are gone (stopped by Close, or killed with Hoist by their parent-death
// signal, and what they left by killLeftoverGroups); fleets replaces the
// instances it finds lost.
func removeLeftovers(dir string, log *slog.Logger) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		log.Warn("local: reading the instances directory", "err", err)
		return
	}
	for _, e := range entries {
		if e.Name() == groupsDir {
			continue
		}
		if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
			log.Warn("local: removing an earlier run's instance files", "path", e.Name(), "err", err)
			continue
		}
		log.Info("local: removed an earlier run's instance files", "fleet", e.Name())
	}
}

// Layout returns where an instance keeps its files.
func (p *Provider) Layout(fleetID, instanceID string) fleets.InstanceLayout {
	return LayoutIn(p.cfg.Dir, fleetID, instanceID)
}

// LayoutIn is the Layout of a provider whose Config.Dir is dir (a pool
// host's, as it told Hoist).
func LayoutIn(dir, fleetID, instanceID string) fleets.InstanceLayout {
	d := filepath.Join(dir, fleetID, instanceID)
	return fleets.InstanceLayout{Dir: d, GameRoot: filepath.Join(d, "game"),
		CertificateDir: filepath.Join(d, "certificates")}
}

// StartInstance registers an instance and sets it up in the background.
func (p *Provider) StartInstance(ctx context.Context, spec fleets.InstanceSpec, hooks fleets.Hooks) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closing {
		return errors.New("local: the provider is closing")
	}
	if _, ok := p.instances[spec.InstanceID]; ok {
		return errors.New("local: instance " + spec.InstanceID + " already runs")
	}
	in := newInstance(p, spec, hooks)
	p.instances[spec.InstanceID] = in
	go in.run()
	return nil
}

// UpdateRuntimeConfiguration gives an instance a new runtime configuration.
func (p *Provider) UpdateRuntimeConfiguration(instanceID string, rc api.RuntimeConfiguration) {
	p.mu.Lock()
	in := p.instances[instanceID]
	p.mu.Unlock()
	if in != nil {
		in.setRuntime(rc)
	}
}

// UpdateEnv replaces the environment an instance's processes get besides
// their process ID (InstanceSpec.Env), for the processes launched from now
// on (hoist agent: a refreshed compute auth token).
func (p *Provider) UpdateEnv(instanceID string, env []string) {
	p.mu.Lock()
	in := p.instances[instanceID]
	p.mu.Unlock()
	if in != nil {
		in.mu.Lock()
		in.spec.Env = append([]string(nil), env...)
		in.mu.Unlock()
	}
}

// StopInstance stops an instance's processes and removes it.
func (p *Provider) StopInstance(instanceID, reason string) error {
	p.mu.Lock()
	in := p.instances[instanceID]
	p.mu.Unlock()
	if in == nil {
		return fleets.ErrUnknownInstance
	}
	in.stop(reason)
	return nil
}

// StopProcess ends one server process (a second call kills it at once).
func (p *Provider) StopProcess(processID, reason string) error {
	p.mu.Lock()
	in := p.processes[processID]
	p.mu.Unlock()
	if in == nil || !in.stopProcess(processID, reason) {
		return fleets.ErrUnknownProcess
	}
	return nil
}

// KillProcess kills one server process at once (fleets.ComputeProvider).
func (p *Provider) KillProcess(processID, reason string) error {
	p.mu.Lock()
	in := p.processes[processID]
	p.mu.Unlock()
	if in == nil || !in.killProcess(processID, reason) {
		return fleets.ErrUnknownProcess
	}
	return nil
}

// Instances lists the instances this provider runs.
func (p *Provider) Instances() []fleets.InstanceRef {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]fleets.InstanceRef, 0, len(p.instances))
	for _, in := range p.instances {
		out = append(out, in.spec.InstanceRef)
	}
	return out
}

// Close stops every instance (each process is sent TerminateProcess and
// killed after ShutdownGrace) and returns when no process is left.
func (p *Provider) Close() error {
	p.mu.Lock()
	p.closing = true
	all := make([]*instance, 0, len(p.instances))
	for _, in := range p.instances {
		all = append(all, in)
	}
	p.mu.Unlock()
	for _, in := range all {
		in.stop("Hoist is shutting down")
		// Processes already ending (StopProcess, or an instance stopped
		// before) have ShutdownGrace left at most.
		in.hurry()
	}
	for _, in := range all {
		<-in.done
	}
	return nil
}

// grace is how long a process asked to end may take.
func (p *Provider) grace() time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closing {
		return p.cfg.ShutdownGrace
	}
	return p.cfg.TerminateGrace
}

// HasProcess reports whether the provider launched processID on instance
// instanceID and has not yet reported it ended (fleets.ProcessLister). A
// process is known from just before it is started, so it can never
// connect before it is known.
func (p *Provider) HasProcess(instanceID, processID string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	in := p.processes[processID]
	return in != nil && in.spec.InstanceID == instanceID
}

func (p *Provider) addProcess(id string, in *instance) {
	p.mu.Lock()
	p.processes[id] = in
	p.mu.Unlock()
}

func (p *Provider) removeProcess(id string) {
	p.mu.Lock()
	delete(p.processes, id)
	p.mu.Unlock()
}

func (p *Provider) removeInstance(id string) {
	p.mu.Lock()
	if in := p.instances[id]; in != nil && in.slot >= 0 {
		delete(p.slots, in.slot)
	}
	delete(p.instances, id)
	p.mu.Unlock()
}

// Package hosts runs managed (EC2-style) fleets on machines other than
// Hoist's: pool hosts, each running `hoist agent --pool` (package agent).
//
// A host enrols once with an enrolment token the operator created
// (`hoist admin create-enrolment-token`), declaring its pool, location,
// address and capacity, and gets a host ID and secret (Hoist keeps only
// hashes of tokens and secrets). It then holds a WebSocket to Hoist
// (/hoist/host) speaking the host protocol (package hostproto).
//
// Service is the service side, and everything it needs is in the store
// (records Host, HostInstance, HostEnrolmentToken), so any replica can
// judge any host:
//
//	fleets reconciler --PlaceInstance--> chooser over Host records (pure: choose)
//	fleets --StartInstance/StopInstance/...--> Service (fleets.ComputeProvider)
//	     |-- the instance's host is this replica: the in-process provider
//	     `-- a pool host: a message through HostMessenger (its connection)
//	agent --Hello/Heartbeat--> LastSeen, the instances it runs; the reply
//	     lists the instances it should run (level-triggered)
//	agent --StepStarted/ProcessStarted/...--> the instance's fleets.Hooks
//	liveness loop (leased) --> a silent host is LOST; fleets then loses
//	     its instances (InstanceHost) and replaces them elsewhere
//
// docs/hosts.md describes pools, locations, the protocol, what happens
// when a host is lost, and the security model.
package hosts

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/hoistgg/hoist/internal/fleets"
	"github.com/hoistgg/hoist/internal/hosting"
	"github.com/hoistgg/hoist/internal/ids"
	"github.com/hoistgg/hoist/internal/replicas"
	"github.com/hoistgg/hoist/internal/store"
)

// Config configures a Service. Store and Local are required.
type Config struct {
	Store store.Store
	// Inbox, when set (several replicas on one store), carries messages
	// to the hosts connected to other replicas (relay.go).
	Inbox *replicas.Inbox
	// Local is this replica's in-process provider (internal/fleets/local):
	// it runs the instances of locations no host is enrolled in.
	Local fleets.ComputeProvider
	// NoInProcess: Local runs no new instance (--local-hosting agent or
	// off); a location no host serves then has no capacity.
	NoInProcess bool
	// ReplicaID names this replica: the host ID of the instances Local
	// runs, and the replica recorded as holding a host's connection.
	ReplicaID string
	// InstanceIP is the address of the instances Local runs.
	InstanceIP string
	// Locations are the locations a host may serve (the fleets' Region
	// and the AWS locations fleets may use).
	Locations []string
	// CACertificate is Hoist's CA certificate (PEM), given to hosts at
	// enrolment; CADER its DER (the enrolment token pins its SHA-256).
	CACertificate []byte
	CADER         []byte
	// CABundle is the path of Hoist's CA bundle on this machine
	// (SSL_CERT_FILE of local processes): it is taken out of what hosts
	// are sent, which write their own.
	CABundle string
	// BuildDir returns the directory of a READY build's files (builds).
	BuildDir func(ctx context.Context, buildID string) (string, error)
	// UploadDir holds what hosts upload until it is used.
	UploadDir string
	// GameSessionLogs records a game session's uploaded logs (sessions);
	// nil: uploads are refused.
	GameSessionLogs GameSessionLogs
	// Slots, when set, bounds the long-lived connections (shared with the
	// SDK endpoint).
	Slots Slots
	// Now is the clock (default time.Now); NewID makes host IDs (default
	// crypto/rand UUIDs).
	Now    func() time.Time
	NewID  func() string
	Logger *slog.Logger
	// Timings overrides the default timers.
	Timings Timings
	// HostReady, when set, is called after a host's Hello is accepted:
	// capacity may have come, so the fleets' reconciler should run now
	// rather than at its next interval (a fleet waiting for a host stays
	// NEW until then).
	HostReady func()
}

// GameSessionLogs is what hosts needs of sessions to keep a game
// session's logs uploaded by its host.
type GameSessionLogs interface {
	// LogDirFor returns where a game session's logs are kept.
	LogDirFor(gameSessionID string) string
	// SetCollectedLogs records that they are in dir.
	SetCollectedLogs(ctx context.Context, gameSessionID, dir string) error
}

// Slots counts long-lived connections against a bound (sdkconn.Slots).
type Slots interface {
	TryTake() bool
	Give()
}

// Timings are the hosts' timers.
type Timings struct {
	// HeartbeatMin is the least heartbeat interval (default 10s);
	// HeartbeatRate the most heartbeats a second of all hosts together
	// (default 50): the interval is max(HeartbeatMin, hosts / rate).
	HeartbeatMin  time.Duration
	HeartbeatRate float64
	// HeartbeatGrace is how long past its interval a host may be silent
	// before it is lost (default 20s).
	HeartbeatGrace time.Duration
	// StartGrace is how long after this replica starts no host is
	// declared lost, so agents can reconnect (default 60s).
	StartGrace time.Duration
	// Check is how often the liveness loop runs (default 2s).
	Check time.Duration
	// ReportWindow is how long a new instance may be missing from its
	// host's heartbeats before it counts as lost (default: HeartbeatMin).
	ReportWindow time.Duration
	// TokenRetention is how long expired enrolment tokens are kept
	// (default 24h).
	TokenRetention time.Duration
}

func (t Timings) withDefaults() Timings {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&t.HeartbeatMin, 10*time.Second)
	def(&t.HeartbeatGrace, 20*time.Second)
	def(&t.StartGrace, 60*time.Second)
	def(&t.Check, 2*time.Second)
	def(&t.ReportWindow, t.HeartbeatMin)
	def(&t.TokenRetention, 24*time.Hour)
	if t.HeartbeatRate <= 0 {
		t.HeartbeatRate = 50
	}
	return t
}

// Service is the service side of pool hosts: the compute provider that
// routes each instance to its host, the placer, the host protocol
// endpoint, the file routes, the liveness loop and the admin actions.
type Service struct {
	cfg     Config
	t       Timings
	log     *slog.Logger
	started time.Time
	// hooks makes an instance's Hooks (fleets.Service.HooksFor).
	hooks func(fleets.InstanceRef) fleets.Hooks
	// secrets makes the secrets of a start relayed from another replica
	// (fleets.Service.StartSecrets).
	secrets func(context.Context, fleets.InstanceRef, *fleets.CertificateRequest) ([]string, *fleets.CertificateFiles, error)
	// msgr delivers messages to hosts (the connections of this replica).
	msgr HostMessenger

	mu sync.Mutex
	// conns are the hosts connected to this replica, by host ID.
	conns map[string]*hostConn
	// instHooks are the Hooks of remote instances this replica reported
	// through (they keep what a setup step said across reports).
	instHooks map[string]fleets.Hooks
	// procStarted is closed and replaced whenever a host reports a
	// process start (HasProcess waits on it).
	procStarted chan struct{}
	// count caches the number of live hosts (for the heartbeat interval).
	count   int
	countAt time.Time
}

var (
	_ fleets.ComputeProvider = (*Service)(nil)
	_ fleets.ProcessLister   = (*Service)(nil)
	_ fleets.InstanceHosts   = (*Service)(nil)
	_ fleets.Placer          = (*Service)(nil)
)

// New returns a Service. SetHooks must be called before it serves.
func New(cfg Config) (*Service, error) {
	if cfg.Store == nil || cfg.Local == nil {
		return nil, errors.New("hosts: Config.Store and Config.Local are required")
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.NewID == nil {
		cfg.NewID = ids.UUID
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	s := &Service{cfg: cfg, t: cfg.Timings.withDefaults(), log: cfg.Logger, started: cfg.Now(),
		conns: map[string]*hostConn{}, instHooks: map[string]fleets.Hooks{}, procStarted: make(chan struct{})}
	s.msgr = localMessenger{s}
	if cfg.Inbox != nil {
		s.msgr = relayMessenger{s}
	}
	return s, nil
}

// SetHooks gives the Service the maker of instances' Hooks (fleets'
// HooksFor; fleets is made after the Service, which is its provider).
func (s *Service) SetHooks(f func(fleets.InstanceRef) fleets.Hooks) { s.hooks = f }

// SetStartSecrets gives the Service the maker of the secrets of starts
// other replicas relay here (fleets' StartSecrets), as SetHooks.
func (s *Service) SetStartSecrets(f func(context.Context, fleets.InstanceRef, *fleets.CertificateRequest) ([]string, *fleets.CertificateFiles, error)) {
	s.secrets = f
}

func (s *Service) now() time.Time { return s.cfg.Now().UTC().Truncate(time.Millisecond) }

// hooksOf returns the hooks of an instance a host reports about.
func (s *Service) hooksOf(ref fleets.InstanceRef) fleets.Hooks {
	s.mu.Lock()
	defer s.mu.Unlock()
	if h := s.instHooks[ref.InstanceID]; h != nil {
		return h
	}
	h := s.hooks(ref)
	s.instHooks[ref.InstanceID] = h
	return h
}

// forgetHooks forgets an instance's hooks once it is gone.
func (s *Service) forgetHooks(instanceID string) {
	s.mu.Lock()
	delete(s.instHooks, instanceID)
	s.mu.Unlock()
}

// isLocal reports whether a compute runs on this replica's in-process
// provider (records from before hosts name no host).
func (s *Service) isLocal(c *hosting.Compute) bool { return c.Host == "" || c.Host == s.cfg.ReplicaID }

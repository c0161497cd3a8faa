// Package fleets owns fleets, their locations, scaling policies and computes
// (the instances of managed EC2 fleets and the registered computes of
// Anywhere fleets): the GameLift fleet, location, capacity, scaling and
// compute operations, the compute auth tokens that server processes connect
// with (hosting.TokenVerifier), the hosting.ProcessHost that ends server
// processes, the hook that makes a fleet location ACTIVE when its first
// server process is ready, and the background reconciler that drives every
// fleet through its lifecycle and keeps its instance count at the desired
// capacity.
//
// Instances are run by a ComputeProvider; internal/fleets/local runs them as
// directories and OS processes on this machine. The reconciler's decisions
// are pure functions of the stored state and the time (decide, evaluate);
// the loop in Run only applies them. docs/fleets.md describes the
// lifecycles, events, scaling, tokens, the local provider and every place
// where Hoist decides what GameLift leaves open.
package fleets

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/hoistgg/hoist/internal/api"
	"github.com/hoistgg/hoist/internal/arn"
	"github.com/hoistgg/hoist/internal/clock"
	"github.com/hoistgg/hoist/internal/hosting"
	"github.com/hoistgg/hoist/internal/ids"
	"github.com/hoistgg/hoist/internal/store"
)

// Builds is what fleets needs of internal/builds.
type Builds interface {
	// Build returns the build as DescribeBuild reports it, or an
	// *api.NotFoundException when there is none.
	Build(ctx context.Context, tx store.Tx, buildID string) (api.Build, error)
	// FleetBuild returns the build as fleets already created from it see
	// it: like Build, but a build deleted while fleets use it stays READY
	// for them (its files are kept until the last such fleet is gone).
	FleetBuild(ctx context.Context, tx store.Tx, buildID string) (api.Build, error)
	// BuildDir returns the directory holding the build's unpacked files.
	BuildDir(ctx context.Context, buildID string) (string, error)
}

// Config configures a Service. Store is required; everything else has a
// usable default (without Builds and Provider only Anywhere fleets work).
type Config struct {
	Store store.Store
	// Region is the fleets' home Region and the Region in ARNs. Default
	// us-east-1.
	Region string
	// Account is the account in ARNs, arn:aws:gamelift:<Region>:<Account>:<type>/<id>
	// (GameLift's documented fleet ARNs leave it empty, the default).
	Account string
	// SetTags stores the tags given to CreateFleet and CreateLocation;
	// RemoveTags forgets a deleted resource's tags. Both optional.
	SetTags    func(ctx context.Context, tx store.Tx, arn string, tags []api.Tag) error
	RemoveTags func(ctx context.Context, tx store.Tx, arn string) error
	// Builds reads builds (required for EC2 fleets).
	Builds Builds
	// Events tells internal/sessions when a server process starts and ends.
	Events hosting.ProcessEvents
	// Messenger delivers TerminateProcess to server processes.
	Messenger hosting.Messenger
	// Provider runs the instances of managed fleets (required for EC2
	// fleets).
	Provider ComputeProvider
	// Placer, when set, chooses the host of each new instance
	// (internal/hosts); without it every instance runs on Provider here.
	Placer Placer
	// Now is the clock. Default time.Now.
	Now func() time.Time
	// TokenNow is the clock of compute auth tokens (their expiry). Default
	// Now. With a manual clock it stays on real time: the tokens' holders
	// (the Server SDK, the GameLift Agent) renew them on real time.
	TokenNow func() time.Time
	// Clock gives the background loops their tickers (nil: real time):
	// with a manual clock, an advance runs the passes due at once.
	Clock clock.Clock
	// NewID returns a fresh random UUID (fleet, event, process and instance
	// IDs derive from it). Default: crypto/rand.
	NewID  func() string
	Logger *slog.Logger
	// ReplicaID names this Hoist replica: the reconciler's shards (one per
	// fleet) are held by it and the instances it starts are recorded as
	// hosted by it. Replicas counts the replicas sharing the shards (nil:
	// this one alone).
	ReplicaID string
	Replicas  store.Replicas
	// SDKEndpoint is the Server SDK WebSocket URL server processes connect
	// to (e.g. ws://127.0.0.1:9080/sdk); AgentEndpoint is the GameLift Agent
	// endpoint RegisterCompute reports ("" reports none).
	SDKEndpoint   string
	AgentEndpoint string
	// SetupLogURL, when set, returns the download URL of an instance's
	// setup log: DescribeFleetEvents gives it as the PreSignedLogUrl of the
	// instance's creation events.
	SetupLogURL func(fleetID, instanceID string) string
	// ProcessLogURL, when set, returns the download URL of the kept output
	// of a fleet's server process: DescribeFleetEvents gives it as the
	// PreSignedLogUrl of the events about the process's end.
	ProcessLogURL func(fleetID, processID string) string
	// InstanceIP is the IP address of managed instances. Default 127.0.0.1.
	InstanceIP string
	// DNSDomain ends the DNS names of managed instances, after GameLift's
	// patterns: <instance ID>.<location>.<DNSDomain> on fleets with
	// GENERATED certificates, ec2-<IP, dashed>.<location>.compute.<DNSDomain>
	// on others. Default "localhost".
	DNSDomain string
	// DataDir holds the fleets' certificate authorities.
	DataDir string
	// CABundle, when set, is a PEM file of the system roots plus Hoist's
	// CA: server processes get it as SSL_CERT_FILE, so a Go game server
	// trusts Hoist's wss:// listener.
	CABundle string
	// CA signs the certificates of fleets with CertificateConfiguration
	// GENERATED (Hoist's one CA, internal/pki); nil refuses GENERATED.
	CA CertificateAuthority
	// ProcessEnv is added to the environment of every server process of a
	// managed fleet (e.g. HEALTHCHECK_INTERVAL=5 in tests).
	ProcessEnv []string
	// InstanceLimit is the most instances one fleet location may have
	// (DescribeEC2InstanceLimits). Default 20.
	InstanceLimit int32
	// Locations are the AWS locations fleets may use besides Region.
	// Default: the Regions GameLift hosts in (AWSLocations).
	Locations []string
	// Timings overrides the default timers (zero fields keep the default).
	Timings Timings
	// WrapHooks, when set, wraps every instance's Hooks before a provider
	// gets them (metrics count the processes they report).
	WrapHooks func(InstanceRef, Hooks) Hooks
}

// Timings are the reconciler's timers.
type Timings struct {
	// ReconcileInterval is how often the reconciler runs. Default 1s.
	ReconcileInterval time.Duration
	// LeaseTTL is how long a reconciler lease (a fleet's shard, the
	// housekeeping) lasts. Default 5 *
	// ReconcileInterval.
	LeaseTTL time.Duration
	// PolicyInterval is how often scaling policies are evaluated (one
	// evaluation period of a rule-based policy). Default 1m.
	PolicyInterval time.Duration
	// ScaleInPeriods is how many evaluations in a row a target-based
	// policy must want fewer instances before it scales in. Default 5.
	ScaleInPeriods int
	// TokenTTL is how long a compute auth token of an Anywhere compute
	// lasts. Default 3h. (Tokens of managed instances last as long as the
	// instance.)
	TokenTTL time.Duration
	// ActivationTimeout is how long a fleet location may stay in its
	// creation states (DOWNLOADING to ACTIVATING) before it goes to ERROR.
	// Default 30m.
	ActivationTimeout time.Duration
	// FirstReadyTimeout is how long a fleet location being created may
	// stay ACTIVATING with no server process ready before it goes to ERROR.
	// Default 10m: twice the time a process has to call ProcessReady
	// (sessions' ReadyTimeout), so each process gets its full allowance.
	FirstReadyTimeout time.Duration
	// LaunchBackoff is the wait before a location tries again after an
	// instance failed to start; it doubles per failure up to 5m.
	// Default 10s.
	LaunchBackoff time.Duration
	// Retention is how long a TERMINATED fleet (with its events) stays
	// visible. Default 24h.
	Retention time.Duration
}

func (t Timings) withDefaults() Timings {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&t.ReconcileInterval, time.Second)
	def(&t.LeaseTTL, 5*t.ReconcileInterval)
	def(&t.PolicyInterval, time.Minute)
	def(&t.TokenTTL, 3*time.Hour)
	def(&t.ActivationTimeout, 30*time.Minute)
	def(&t.FirstReadyTimeout, 10*time.Minute)
	def(&t.LaunchBackoff, 10*time.Second)
	def(&t.Retention, 24*time.Hour)
	if t.ScaleInPeriods <= 0 {
		t.ScaleInPeriods = 5
	}
	return t
}

// Service implements the fleet, location, scaling and compute operations of
// api.Service, hosting.TokenVerifier and hosting.ProcessHost.
type Service struct {
	cfg Config
	t   Timings
	log *slog.Logger
	// locations is the set of AWS locations (Region included).
	locations map[string]bool
	// kick wakes the reconciler early (API changes, instance reports).
	kick chan struct{}

	// certMu serializes issuing and reading fleet certificates.
	certMu sync.Mutex

	mu sync.Mutex
	// lastPolicyRun is when scaling policies were last evaluated on this
	// replica (only the lease holder evaluates).
	lastPolicyRun time.Time
	// backoff holds, per fleet location, when the next instance may be
	// started after a failure (rate limiting only: losing it on restart is
	// harmless).
	backoff map[string]backoffState
}

type backoffState struct {
	until    time.Time
	failures int
}

var (
	_ hosting.TokenVerifier    = (*Service)(nil)
	_ hosting.TokenIssuer      = (*Service)(nil)
	_ hosting.ProcessHost      = (*Service)(nil)
	_ hosting.ProcessReadyFunc = (*Service)(nil).OnProcessReady
)

// New returns a Service.
func New(cfg Config) (*Service, error) {
	if cfg.Store == nil {
		return nil, errors.New("fleets: Config.Store is required")
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.TokenNow == nil {
		cfg.TokenNow = cfg.Now
	}
	if cfg.NewID == nil {
		cfg.NewID = ids.UUID
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Region == "" {
		cfg.Region = "us-east-1"
	}
	if cfg.ReplicaID == "" {
		cfg.ReplicaID = "local"
	}
	if cfg.InstanceIP == "" {
		cfg.InstanceIP = "127.0.0.1"
	}
	if cfg.DNSDomain == "" {
		cfg.DNSDomain = "localhost"
	}
	if cfg.InstanceLimit <= 0 {
		cfg.InstanceLimit = 20
	}
	if cfg.Locations == nil {
		cfg.Locations = AWSLocations
	}
	s := &Service{cfg: cfg, t: cfg.Timings.withDefaults(), log: cfg.Logger,
		locations: map[string]bool{cfg.Region: true}, kick: make(chan struct{}, 1),
		backoff: map[string]backoffState{}}
	for _, l := range cfg.Locations {
		s.locations[l] = true
	}
	return s, nil
}

// AWSLocations are the Regions GameLift hosts managed fleets in, the default
// of Config.Locations.
var AWSLocations = []string{
	"af-south-1", "ap-east-1", "ap-northeast-1", "ap-northeast-2", "ap-northeast-3",
	"ap-south-1", "ap-southeast-1", "ap-southeast-2", "ca-central-1", "eu-central-1",
	"eu-north-1", "eu-south-1", "eu-west-1", "eu-west-2", "eu-west-3", "me-south-1",
	"sa-east-1", "us-east-1", "us-east-2", "us-west-1", "us-west-2",
}

// now returns the current time truncated to milliseconds, the precision
// GameLift reports.
func (s *Service) now() time.Time {
	return s.cfg.Now().UTC().Truncate(time.Millisecond)
}

// Wake asks the reconciler to run soon (a host came, with capacity a
// fleet may be waiting for).
func (s *Service) Wake() { s.wake() }

// tokenNow is the time of compute auth tokens (Config.TokenNow).
func (s *Service) tokenNow() time.Time {
	return s.cfg.TokenNow().UTC().Truncate(time.Millisecond)
}

// wake asks the reconciler to run soon.
func (s *Service) wake() {
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

// arn returns the ARN of a resource.
func (s *Service) arn(resourceType, id string) string {
	return arn.Builder{Region: s.cfg.Region, Account: s.cfg.Account}.ARN(resourceType, id)
}

// newInstanceID returns an EC2-style instance ID: "i-" and 17 hex digits.
func (s *Service) newInstanceID() string {
	h := ""
	for len(h) < 17 {
		for _, r := range s.cfg.NewID() {
			if r != '-' {
				h += string(r)
			}
		}
	}
	return "i-" + h[:17]
}

// Package sessions owns the state of server processes as they report it over
// the Server SDK, game sessions and player sessions: the GameLift operations
// on game and player sessions (CreateGameSession, DescribeGameSessions,
// CreatePlayerSessions, ...), the hosting.ProcessAPI that internal/sdkconn
// calls for each SDK message, the hosting.ProcessEvents that internal/fleets
// calls when an OS process starts or exits, and the background sweep that
// enforces every timer (activation and reservation timeouts, heartbeats,
// termination grace, record retention).
//
// Every change is one store transaction; side effects (messages to a process,
// asking the ProcessHost to end one, copying log files) happen only after the
// transaction commits. docs/sessions.md describes the lifecycles, the timings
// and each place where Hoist decides what GameLift leaves open.
package sessions

import (
	"context"
	"errors"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/hoistgg/hoist/internal/clock"
	"github.com/hoistgg/hoist/internal/hosting"
	"github.com/hoistgg/hoist/internal/ids"
	"github.com/hoistgg/hoist/internal/replicas"
	"github.com/hoistgg/hoist/internal/store"
)

// Config configures a Service. Store is required; everything else has a
// usable default.
type Config struct {
	Store store.Store
	// Region is the Region in the ARNs of game sessions in a fleet's home
	// Region or a custom location (arn:aws:gamelift:<Region>::gamesession/
	// <fleet ID>/<ID>); a session in a remote location carries that location.
	Region string
	// Messenger delivers messages to server processes.
	Messenger hosting.Messenger
	// Inbox, when set (several replicas on one store), carries the
	// messages for processes and agents connected to other replicas: they
	// are written in the transaction that decides them (relay.go).
	Inbox *replicas.Inbox
	// Host ends server processes of managed (EC2) fleets.
	Host hosting.ProcessHost
	// Agents, when set, reaches the GameLift Agents of Anywhere computes:
	// a process of a compute with an agent is killed through it
	// (ForceExitServerProcess) when its TerminateProcess grace is over, and
	// FORCE_TERMINATE is allowed on it.
	Agents hosting.ComputeAgents
	// OnProcessReady is called in the transaction that records a
	// ProcessReady (fleets moves the location ACTIVATING -> ACTIVE).
	OnProcessReady hosting.ProcessReadyFunc
	// InstanceLost, when set, reports in tx whether the instance of
	// compute c is lost with its pool host (removed, or LOST). A process of
	// such an instance that ends (ProcessEnding, exit) ends its ACTIVE game
	// session INTERRUPTED, as the fleets' report of the loss does: the
	// host's agent may stop the processes before that report.
	InstanceLost func(ctx context.Context, tx store.Tx, c *hosting.Compute) (bool, error)
	// ResolveAlias, when set, resolves an AliasId (ID or ARN) to a fleet ID;
	// without it AliasId is answered with InvalidRequestException.
	ResolveAlias func(ctx context.Context, tx store.Tx, aliasID string) (string, error)
	// Now is the clock. Default time.Now.
	Now func() time.Time
	// ProcessNow is the clock of server processes' health: readiness,
	// heartbeats, termination grace and the retention of ended processes.
	// Default Now. With a manual clock it stays on real time, since the
	// Server SDK's timers do (docs/clock.md).
	ProcessNow func() time.Time
	// Clock gives the background loops their tickers (nil: real time):
	// with a manual clock, an advance runs the passes due at once.
	Clock clock.Clock
	// NewID returns a fresh random ID (a UUID) for game and player sessions.
	// Default: crypto/rand.
	NewID  func() string
	Logger *slog.Logger
	// ReplicaID names this Hoist replica: processes connected here are
	// marked ConnectedTo it, the sweep runs under a lease held by it, and
	// logs are collected only for computes whose Host it is.
	ReplicaID string
	// LogURL returns the download URL of a game session's collected logs.
	LogURL func(gameSessionID string) string
	// RemoteLogs, when set, collects the logs of game sessions whose
	// compute's Host is not this replica (a pool host uploads them).
	RemoteLogs hosting.RemoteLogCollector
	// DataDir is where collected game session logs are kept.
	DataDir string
	// Timings overrides the default timers (zero fields keep the default).
	Timings Timings
	// Shared says that other Hoist replicas write the same store
	// (PostgreSQL): the search index then also follows the store's change
	// feed, so that it sees their game session writes (docs/sessions.md).
	// Off, it notes only this replica's own writes, which is exact with one
	// replica.
	Shared bool
}

// Timings are the timers the sweep enforces.
type Timings struct {
	// SweepInterval is how often the background sweep runs. Default 1s.
	SweepInterval time.Duration
	// LeaseTTL is how long the sweep lease lasts. Default 5 * SweepInterval.
	LeaseTTL time.Duration
	// Reservation is how long a player session stays RESERVED. Default 60s.
	Reservation time.Duration
	// ActivationTimeout applies when the fleet's runtime configuration sets
	// no GameSessionActivationTimeoutSeconds. Default 300s.
	ActivationTimeout time.Duration
	// HeartbeatInterval and HeartbeatJitter are the SDK's report period;
	// a report is missing once Interval+Jitter passed without one.
	// Defaults 60s and 10s.
	HeartbeatInterval time.Duration
	HeartbeatJitter   time.Duration
	// MaxBadReports is how many consecutive unhealthy or missing reports
	// end a process. Default 3.
	MaxBadReports int
	// ReadyTimeout is how long a process may stay LAUNCHING. Default 5m.
	ReadyTimeout time.Duration
	// TerminateGrace is how long a TERMINATING process has to end before
	// Hoist escalates. Default 5m.
	TerminateGrace time.Duration
	// CreatorRateWindow is the window in which a CreatorId may create one
	// game session on a fleet without a resource creation limit policy.
	// Default 1s.
	CreatorRateWindow time.Duration
	// SessionRetention is how long ended game sessions (and their player
	// sessions and idempotency tokens) are kept. Default 30 days.
	SessionRetention time.Duration
	// ProcessRetention is how long TERMINATED process records are kept.
	// Default 24h.
	ProcessRetention time.Duration
	// SearchFollow is how often, on a shared store (Config.Shared), the
	// search index reads the change feed between searches, so that a
	// search finds little to read. Default 1s.
	SearchFollow time.Duration
}

func (t Timings) withDefaults() Timings {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&t.SweepInterval, time.Second)
	def(&t.LeaseTTL, 5*t.SweepInterval)
	def(&t.Reservation, 60*time.Second)
	def(&t.ActivationTimeout, 300*time.Second)
	def(&t.HeartbeatInterval, 60*time.Second)
	def(&t.HeartbeatJitter, 10*time.Second)
	def(&t.ReadyTimeout, 5*time.Minute)
	def(&t.TerminateGrace, 5*time.Minute)
	def(&t.CreatorRateWindow, time.Second)
	def(&t.SessionRetention, 30*24*time.Hour)
	def(&t.ProcessRetention, 24*time.Hour)
	def(&t.SearchFollow, time.Second)
	if t.MaxBadReports <= 0 {
		t.MaxBadReports = 3
	}
	return t
}

// Service implements the game and player session operations of api.Service
// and hosting.ProcessEvents; ProcessAPI returns its hosting.ProcessAPI.
type Service struct {
	cfg Config
	t   Timings
	log *slog.Logger
	// search indexes ACTIVE game sessions for SearchGameSessions.
	search *searchIndex
	// match is told about FlexMatch game sessions (backfill.go).
	match atomic.Pointer[MatchHook]
	// placed is told when a placement's game session activates (placed.go).
	placed atomic.Pointer[PlacementHook]
}

var (
	_ hosting.ProcessAPI    = sdkAPI{}
	_ hosting.ProcessEvents = (*Service)(nil)
)

// New returns a Service.
func New(cfg Config) (*Service, error) {
	if cfg.Store == nil {
		return nil, errors.New("sessions: Config.Store is required")
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.ProcessNow == nil {
		cfg.ProcessNow = cfg.Now
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
	s := &Service{cfg: cfg, t: cfg.Timings.withDefaults(), log: cfg.Logger, search: newSearchIndex()}
	if cfg.Shared {
		// Every replica watches, so that each records its writes for the
		// others: before any write of this one.
		cfg.Store.Watch(hosting.KindGameSession)
		s.search.feed = true
	}
	s.cfg.Store = searchStore{Store: cfg.Store, idx: s.search} // keeps the search index current
	return s, nil
}

// now returns the current time truncated to milliseconds, the precision
// GameLift reports and the store ranks by.
func (s *Service) now() time.Time {
	return s.cfg.Now().UTC().Truncate(time.Millisecond)
}

// processNow is the time of server processes' health (Config.ProcessNow).
func (s *Service) processNow() time.Time {
	return s.cfg.ProcessNow().UTC().Truncate(time.Millisecond)
}

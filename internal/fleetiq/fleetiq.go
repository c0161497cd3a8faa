// Package fleetiq implements GameLift FleetIQ for Hoist: game server groups,
// the game servers that register in them, the instances those game servers
// run on, and ClaimGameServer, which hands an available game server to a
// game client or matchmaker.
//
// Hoist launches no EC2 instances. A group's instances are the instance IDs
// its game servers register with; the operator changes an instance's status
// (DRAINING, SPOT_TERMINATING) with SetInstanceStatus, where GameLift would
// react to Spot interruptions.
//
// # Records
//
//	GameServerGroup     ID name;            Key stored status; Rank next status change (ms)
//	GameServer          ID game server ID;  Parent group; Key "A/<instance>" | "C" | "U"; Rank see below
//	GameServerInstance  ID group+"/"+instance; Parent group; Key "<status>/<0|1>"; Rank minus its busy count
//	GameServerHealth    ID game server ID;  Parent group; Key "due"; Rank health deadline (ms)
//
// A game server is AVAILABLE and unclaimed (Key "A/<instance>", Rank its
// registration time), CLAIMED (Key "C", Rank when the claim ends) or
// UTILIZED (Key "U"). An instance counts its available and busy (claimed or
// utilized) game servers; its Key says its status and whether it has an
// available game server, its Rank how busy it is (negated). So a claim is
// two indexed reads of one row each: the best instance (List Key "ACTIVE/1"
// by Rank ascending, Limit 1) and its oldest available game server (List Key
// "A/<instance>" by Rank ascending, Limit 1). order_test.go states the order as
// a pure function (a test oracle); the tests check that the index follows it.
//
// Claims end lazily: a claim older than 60 seconds reads as unclaimed, a
// specific claim or an update takes it over at once, a claim that finds
// nothing available first releases the group's expired claims, and the
// background sweep (Run) releases the rest. docs/fleetiq.md has the details
// and every place where Hoist decides what GameLift leaves open.
package fleetiq

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"sync"
	"time"

	"github.com/hoistgg/hoist/internal/arn"
	"github.com/hoistgg/hoist/internal/clock"
	"github.com/hoistgg/hoist/internal/store"
	"github.com/hoistgg/hoist/internal/tags"
)

// ClaimHold is how long a claim lasts: fixed by GameLift, not configurable.
const ClaimHold = 60 * time.Second

// Defaults of Config.
const (
	DefaultHealthExpiry     = 5 * time.Minute
	DefaultStatusStep       = time.Second
	DefaultDeletedRetention = 5 * time.Minute
	DefaultSweepInterval    = time.Second
)

// Config configures a Service. Store is required; everything else has a
// usable default.
type Config struct {
	Store store.Store
	// Region and Account make the game server group ARNs (and the
	// synthesized Auto Scaling group ARNs).
	Region, Account string
	// Tags, when set, gets the "gameservergroup" resource type registered so
	// that TagResource and friends work on game server group ARNs.
	Tags *tags.Service
	// Now is the clock. Default time.Now.
	Now func() time.Time
	// Clock gives the background loops their tickers (nil: real time):
	// with a manual clock, an advance runs the passes due at once.
	Clock  clock.Clock
	Logger *slog.Logger
	// HealthExpiry: a game server that neither registered nor reported
	// HEALTHY within it is deregistered by the sweep. Default 5 minutes;
	// negative disables health expiry.
	HealthExpiry time.Duration
	// Timings overrides the default timers (zero fields keep the default).
	Timings Timings
	// ReplicaID holds the sweep's shards. Default: random. Replicas
	// counts the replicas sharing them (nil: this one alone).
	ReplicaID string
	Replicas  store.Replicas
}

// Timings are FleetIQ's timers.
type Timings struct {
	// StatusStep is how long a group spends in each transient status (NEW,
	// ACTIVATING; DELETE_SCHEDULED, DELETING). Default 1s; negative makes
	// the transitions immediate.
	StatusStep time.Duration
	// DeletedRetention is how long a DELETED group stays visible. Default 5
	// minutes.
	DeletedRetention time.Duration
	// SweepInterval is how often Run sweeps. Default 1s.
	SweepInterval time.Duration
}

// Service serves the FleetIQ operations. Its methods have the signatures of
// api.Service.
type Service struct {
	cfg Config
	log *slog.Logger
	// ranksDone holds the groups whose instance records the sweep found
	// all written with this Hoist's Rank (instanceRanksStep).
	ranksDone sync.Map
	// known: the instances of the game servers this replica has seen.
	known knownInstances
}

// New returns a Service.
func New(cfg Config) *Service {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.HealthExpiry == 0 {
		cfg.HealthExpiry = DefaultHealthExpiry
	}
	t := &cfg.Timings
	if t.StatusStep == 0 {
		t.StatusStep = DefaultStatusStep
	}
	if t.StatusStep < 0 {
		t.StatusStep = 0
	}
	if t.DeletedRetention <= 0 {
		t.DeletedRetention = DefaultDeletedRetention
	}
	if t.SweepInterval <= 0 {
		t.SweepInterval = DefaultSweepInterval
	}
	if cfg.ReplicaID == "" {
		var b [8]byte
		_, _ = rand.Read(b[:])
		cfg.ReplicaID = "fleetiq-" + hex.EncodeToString(b[:])
	}
	s := &Service{cfg: cfg, log: cfg.Logger}
	if cfg.Tags != nil {
		cfg.Tags.RegisterResource(arn.TypeGameServerGroup, s.groupExists)
	}
	return s
}

// now returns the clock's time in UTC, truncated to milliseconds (GameLift's
// precision, and the precision records keep).
func (s *Service) now() time.Time {
	return s.cfg.Now().UTC().Truncate(time.Millisecond)
}

// groupARN returns the ARN of the group named name.
func (s *Service) groupARN(name string) string {
	return s.arns().ARN(arn.TypeGameServerGroup, name)
}

// groupName returns the group name of a GameServerGroupName parameter (a
// name or an ARN).
func groupName(nameOrARN string) string {
	return arn.NameOrARN(nameOrARN, arn.TypeGameServerGroup)
}

// ms converts a time to epoch milliseconds (0 for the zero time).
func ms(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}

// fromMS converts epoch milliseconds back (0 is the zero time).
func fromMS(v int64) time.Time {
	if v == 0 {
		return time.Time{}
	}
	return time.UnixMilli(v).UTC()
}

// healthOn reports whether health expiry is enabled.
func (s *Service) healthOn() bool { return s.cfg.HealthExpiry > 0 }

// groupExists tells the tags registry whether a group exists (and is not
// being deleted).
func (s *Service) groupExists(ctx context.Context, tx store.Tx, name string) (bool, error) {
	g, err := loadGroup(ctx, tx, name)
	if err != nil || g == nil {
		return false, err
	}
	st := s.status(g, s.now())
	return !st.gone && st.live(), nil
}

// arns builds ARNs in the configured Region and account.
func (s *Service) arns() arn.Builder {
	return arn.Builder{Region: s.cfg.Region, Account: s.cfg.Account}
}

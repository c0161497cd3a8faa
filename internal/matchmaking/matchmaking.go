// Package matchmaking implements FlexMatch: matchmaking rule sets,
// matchmaking configurations, tickets and the matchmaker.
//
// Everything lives in the store (any replica answers any call); the
// matchmaker is sharded by configuration (store.RunSharded): each
// configuration's tickets are matched by the replica holding its shard's
// lease, its writes fenced by that lease; the removal of old tickets runs
// under a lease of its own, once cluster-wide.
//
// # Records
//
//	MatchmakingRuleSet        ID rule set name; Data the rule set (its JSON body and metadata)
//	MatchmakingConfiguration  ID configuration name; Key the rule set name (configurations using it)
//	MatchmakingTicket         ID ticket ID; Parent configuration name; Key status; Rank the
//	                          request deadline (Unix ms) while QUEUED or SEARCHING, the
//	                          acceptance deadline while REQUIRES_ACCEPTANCE, else the end time
//	MatchmakingBackfill       ID game session ARN; Data the ID of its latest backfill ticket
//	MatchmakingAutoBackfill   ID game session ARN; Parent configuration name; Data the roster
//	                          of a game session of an AUTOMATIC configuration's match (auto.go)
//	MatchmakingWait           ID configuration name; Data its recent wait (EstimatedWaitTime)
//	MatchmakingTicketBytes    ID configuration name; Data the bytes its active tickets hold
//	                          (ticketbytes.go)
//	MatchmakingMatch          ID match ID; Parent configuration name; Key matchAccepting or
//	                          matchPlacing; Rank the acceptance deadline (Unix ms); removed
//	                          once the match is decided
package matchmaking

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/hoistgg/hoist/internal/arn"
	"github.com/hoistgg/hoist/internal/clock"
	"github.com/hoistgg/hoist/internal/events"
	"github.com/hoistgg/hoist/internal/ids"
	"github.com/hoistgg/hoist/internal/store"
	"github.com/hoistgg/hoist/internal/tags"
)

// Record kinds.
const (
	KindRuleSet       store.Kind = "MatchmakingRuleSet"
	KindConfiguration store.Kind = "MatchmakingConfiguration"
	KindTicket        store.Kind = "MatchmakingTicket"
	KindMatch         store.Kind = "MatchmakingMatch"
)

// DefaultInterval is how often the matchmaker runs without a kick.
const DefaultInterval = 200 * time.Millisecond

// loopName names the matchmaker's shards (one per configuration);
// retentionLease is the lease the removal of old tickets runs under.
const (
	loopName       = "matchmaking"
	retentionLease = "matchmaking-retention"
)

// Config configures a Service. Store is required; everything else has a
// usable default.
type Config struct {
	Store store.Store
	// Region and Account make ARNs (arn.Builder).
	Region, Account string
	// Tags, when set, gets the matchmakingruleset and
	// matchmakingconfiguration resource types registered.
	Tags *tags.Service
	// QueueExists reports whether a game session queue (by name) exists,
	// for the GameSessionQueueArns of configurations. Nil: not checked.
	QueueExists func(ctx context.Context, tx store.Tx, name string) (bool, error)
	// Publisher records matchmaking events. Default events.Discard.
	Publisher events.Publisher
	// Placer places the matches of WITH_QUEUE configurations as game
	// sessions. Nil: such a match FAILS.
	Placer Placer
	// Backfiller adds the players of backfill matches of WITH_QUEUE
	// configurations to their game sessions. Nil: such a match FAILS.
	Backfiller SessionBackfiller
	// Interval is how often the matchmaker runs when nothing kicks it
	// (StartMatchmaking does). Default DefaultInterval.
	Interval time.Duration
	// ReplicaID holds the matchmaker's shards; Replicas counts the
	// replicas sharing them (nil: this one alone).
	ReplicaID string
	Replicas  store.Replicas
	// Shared says that other replicas write the store too (PostgreSQL):
	// a start reads its configuration's count before its transaction
	// (countsBefore).
	Shared bool
	// Now is the clock. Default time.Now.
	Now func() time.Time
	// Clock gives the background loops their tickers (nil: real time):
	// with a manual clock, an advance runs the passes due at once.
	Clock clock.Clock
	// NewID makes ticket and match IDs. Default ids.UUID.
	NewID  func() string
	Logger *slog.Logger
	// OnPass, when set, is told of each pass over a configuration.
	OnPass PassObserver
}

// Service serves the FlexMatch operations. Its methods have the signatures
// of api.Service.
type Service struct {
	cfg Config
	// activeTickets counts a configuration's active tickets (configs.go).
	activeTickets func(ctx context.Context, tx store.Tx, config string) (int, error)
	ruleSets      ruleSetCache
	counts        recentCounts // a shared store's counts, read for several starts (countsBefore)
	ruleSetNames  sync.Map     // configuration name -> the rule set it named when last read here (readForStart)
	pool          poolCache
	tally         ruleTally
	sweeper       sweeper
	kick          chan struct{}
	wake          *store.ShardWake // kicks the configuration's shard holder, on any replica
	log           *slog.Logger
	// matchFrom names the configuration the loop's next pass matches
	// first ("": the first by name); only the loop touches it.
	matchFrom string
	// passWork is the matcher's work budget of one loop pass (passWork;
	// tests lower it).
	passWork int
	// maxTicketBytes bounds a configuration's active tickets
	// (MaxTicketBytes; tests lower it).
	maxTicketBytes int64
}

// New returns a Service.
func New(cfg Config) *Service {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Publisher == nil {
		cfg.Publisher = events.Discard{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.NewID == nil {
		cfg.NewID = ids.UUID
	}
	if cfg.Interval <= 0 {
		cfg.Interval = DefaultInterval
	}
	if cfg.ReplicaID == "" {
		cfg.ReplicaID = "local"
	}
	s := &Service{cfg: cfg, activeTickets: activeTickets, kick: make(chan struct{}, 1), log: cfg.Logger, passWork: passWork,
		maxTicketBytes: MaxTicketBytes}
	s.wake = store.NewShardWake(cfg.Store, loopName, s.kick, cfg.Logger)
	if cfg.Tags != nil {
		cfg.Tags.RegisterResource(arn.TypeMatchmakingConfiguration, s.ConfigurationExists)
		cfg.Tags.RegisterResource(arn.TypeMatchmakingRuleSet, s.RuleSetExists)
	}
	return s
}

// now returns the clock's time truncated to milliseconds.
func (s *Service) now() time.Time { return s.cfg.Now().UTC().Truncate(time.Millisecond) }

// kickLoop wakes the matchmaker (without waiting).
func (s *Service) kickLoop() {
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

// Run runs the matchmaker until ctx ends, sharded by configuration, and
// the removal of old tickets under its own lease. A shard's lease lasts
// at least 5 s, longer than a matcher pass over a large pool takes.
// Beside it, the configurations' wakes (store.ShardWake): a ticket
// started on another replica kicks this one's pass when it holds the
// configuration.
func (s *Service) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	wg.Go(func() {
		_ = store.RunLeased(ctx, s.cfg.Store, store.Loop{Name: retentionLease, Holder: s.cfg.ReplicaID,
			Interval: retentionCheck, TTL: 5 * retentionCheck, Now: s.cfg.Now, Clock: s.cfg.Clock,
			Work: func(ctx context.Context) error { return s.sweepIfDue(ctx, s.now()) },
			Log:  s.log.With("loop", "matchmaking retention")})
	})
	wakes, stop := context.WithCancel(ctx)
	wg.Go(func() { s.wake.Run(wakes) })
	err := store.RunSharded(ctx, s.cfg.Store, store.ShardedLoop{Name: loopName, Holder: s.cfg.ReplicaID,
		Interval: s.cfg.Interval, TTL: max(5*s.cfg.Interval, 5*time.Second), Kick: s.kick,
		Keys: s.wake.Keys(s.configurationNames), Replicas: s.cfg.Replicas, Clock: s.cfg.Clock,
		Work: s.wake.Work(s.processHeld), Log: s.log.With("loop", "matchmaking")})
	stop()
	wg.Wait()
	return err
}

// retentionCheck is how often the retention loop looks whether a sweep is
// due (sweepEvery).
const retentionCheck = 2 * time.Second

// configurationNames lists every configuration's name: the matchmaker's
// shard keys.
func (s *Service) configurationNames(ctx context.Context) ([]string, error) {
	var names []string
	err := s.cfg.Store.View(ctx, func(tx store.Tx) error {
		names = names[:0]
		return store.Each(ctx, tx, store.Query{Kind: KindConfiguration, NoData: true}, func(r store.Record) error {
			names = append(names, r.ID)
			return nil
		})
	})
	return names, err
}

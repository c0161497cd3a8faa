// Package placement implements GameLift game session queues and game
// session placement: CreateGameSessionQueue, DescribeGameSessionQueues,
// UpdateGameSessionQueue, DeleteGameSessionQueue, StartGameSessionPlacement,
// DescribeGameSessionPlacement and StopGameSessionPlacement, the background
// loop that fulfils pending placements, and the queue placement events.
//
// # Records
//
//	GameSessionQueue      ID queue name
//	GameSessionPlacement  ID placement ID; Parent queue name; Key status;
//	                      Rank the placement's deadline (Unix ms) while PENDING,
//	                      else its end time
//
// Everything lives in the store, so any replica answers any call; the loop
// is sharded by queue (store.RunSharded): each queue's placements are
// handled by the replica holding its shard's lease, and its writes are
// fenced by that lease. The choice of a
// destination is a pure function (Choose) of the queue, a capacity snapshot
// read in the placement's transaction, the players' latencies and the time;
// the game session itself is created by internal/sessions (PlaceTx) in the
// same transaction, so no process is ever given two game sessions. The
// placement stays PENDING until that game session is ACTIVE: its
// activation fulfils the placement in the activation's transaction
// (GameSessionActivatedTx, the sessions.PlacementHook), and the loop follows
// every attempt in flight from the store, placing again when one ends
// without activating (attempt.go).
// docs/placement.md describes the behaviour and every place where Hoist
// decides what GameLift leaves open.
package placement

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hoistgg/hoist/internal/api"
	"github.com/hoistgg/hoist/internal/arn"
	"github.com/hoistgg/hoist/internal/clock"
	"github.com/hoistgg/hoist/internal/events"
	"github.com/hoistgg/hoist/internal/hosting"
	"github.com/hoistgg/hoist/internal/ids"
	"github.com/hoistgg/hoist/internal/sessions"
	"github.com/hoistgg/hoist/internal/store"
	"github.com/hoistgg/hoist/internal/tags"
)

// Record kinds.
const (
	KindQueue     store.Kind = "GameSessionQueue"
	KindPlacement store.Kind = "GameSessionPlacement"
)

// DefaultTimeout is a queue's TimeoutInSeconds when it is created without
// one (GameLift's documents say only that a default applies; Hoist uses
// the maximum).
const DefaultTimeout = 600

// loopName names the placement loop's shards (one per queue).
const loopName = "placement"

// Sessions is what placement needs of internal/sessions.
type Sessions interface {
	Update(ctx context.Context, fn func(tx store.Tx) error) error
	UpdateFenced(ctx context.Context, g store.Grant, fn func(tx store.Tx) error) error
	ClaimIn(ctx context.Context, g store.Grant, fn func(tx store.Tx) error) error
	PlaceTx(ctx context.Context, tx store.Tx, req sessions.PlaceRequest) (*sessions.Placed, error)
	GameSessionRefs(fleetIDOrARN, location, token string) []store.Ref
	StartPlaced(ctx context.Context, p *sessions.Placed)
	AddPlacedPlayersTx(ctx context.Context, tx store.Tx, gameSessionID string, known *hosting.GameSession, players []api.DesiredPlayerSession) (*sessions.Placed, error)
}

// Config configures a Service. Store and Sessions are required.
type Config struct {
	Store    store.Store
	Sessions Sessions
	// Region and Account make queue ARNs.
	Region, Account string
	// Tags, when set, gets the "gamesessionqueue" resource type registered.
	Tags *tags.Service
	// ResolveAlias resolves an alias ID or ARN to its fleet ID in tx (nil:
	// alias destinations are refused).
	ResolveAlias func(ctx context.Context, tx store.Tx, idOrARN string) (string, error)
	// AliasExists and FleetExists check destinations when a queue is
	// created or updated (nil: not checked).
	AliasExists, FleetExists func(ctx context.Context, tx store.Tx, id string) (bool, error)
	// Costs prices an hour of an instance for PriorityOrder COST, by
	// "<instance type>" or "<instance type>/<SPOT|ON_DEMAND>" (the latter
	// wins); unlisted instance types cost 0.
	Costs map[string]float64
	// OnMatchPlacement, when set, is called inside the transaction that
	// ends a match's placement (StartMatchPlacementTx): fulfilled, timed
	// out, cancelled or failed. SetOnMatchPlacement sets it later.
	OnMatchPlacement MatchPlacementFunc
	// Publisher records the queue placement events. Default events.Discard.
	Publisher events.Publisher
	// Interval is how often the loop retries pending placements. Default 1s.
	Interval time.Duration
	// ReplicaID holds the loop's shards; Replicas counts the replicas
	// sharing them (nil: this one alone).
	ReplicaID string
	Replicas  store.Replicas
	Now       func() time.Time
	// Clock gives the background loops their tickers (nil: real time):
	// with a manual clock, an advance runs the passes due at once.
	Clock  clock.Clock
	NewID  func() string
	Logger *slog.Logger
}

// Service serves the queue and placement operations; its methods have the
// signatures of api.Service.
type Service struct {
	cfg     Config
	log     *slog.Logger
	kick    chan struct{}
	wake    *store.ShardWake // kicks the queue's shard holder, on any replica
	onMatch atomic.Pointer[MatchPlacementFunc]
}

// New returns a Service.
func New(cfg Config) *Service {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.NewID == nil {
		cfg.NewID = ids.UUID
	}
	if cfg.Publisher == nil {
		cfg.Publisher = events.Discard{}
	}
	if cfg.Interval <= 0 {
		cfg.Interval = time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.ReplicaID == "" {
		cfg.ReplicaID = "local"
	}
	s := &Service{cfg: cfg, log: cfg.Logger, kick: make(chan struct{}, 1)}
	s.wake = store.NewShardWake(cfg.Store, loopName, s.kick, cfg.Logger)
	if cfg.OnMatchPlacement != nil {
		s.SetOnMatchPlacement(cfg.OnMatchPlacement)
	}
	if cfg.Tags != nil {
		cfg.Tags.RegisterResource(arn.TypeGameSessionQueue, s.Exists)
	}
	return s
}

// now returns the clock's time truncated to milliseconds.
func (s *Service) now() time.Time {
	return s.cfg.Now().UTC().Truncate(time.Millisecond)
}

func (s *Service) queueARN(name string) string {
	return arn.Builder{Region: s.cfg.Region, Account: s.cfg.Account}.ARN(arn.TypeGameSessionQueue, name)
}

// queueName returns the queue name a "name or ARN" parameter names.
func queueName(nameOrARN string) string {
	return arn.NameOrARN(nameOrARN, arn.TypeGameSessionQueue)
}

// Exists reports whether the queue a name or ARN names exists (for tags).
func (s *Service) Exists(ctx context.Context, tx store.Tx, nameOrARN string) (bool, error) {
	_, err := getQueue(ctx, tx, nameOrARN)
	if err == nil {
		return true, nil
	}
	var nf *api.NotFoundException
	if errors.As(err, &nf) {
		return false, nil
	}
	return false, err
}

// getQueue reads a queue; an unknown one is NotFoundException.
func getQueue(ctx context.Context, tx store.Tx, nameOrARN string) (*api.GameSessionQueue, error) {
	name := queueName(nameOrARN)
	q := new(api.GameSessionQueue)
	if _, err := store.GetJSON(ctx, tx, KindQueue, name, q); err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return nil, api.NewNotFoundException("game session queue %s does not exist", name)
		}
		return nil, err
	}
	return q, nil
}

// kickLoop wakes the loop (without waiting).
func (s *Service) kickLoop() {
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

// Run runs the placement loop until ctx ends, sharded by queue: each pass
// handles the pending placements of the queues whose shards this replica
// holds. Beside it, the queues' wakes (store.ShardWake): a placement
// started on another replica kicks this one's pass when it holds the
// queue.
func (s *Service) Run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Go(func() { s.wake.Run(ctx) })
	return store.RunSharded(ctx, s.cfg.Store, store.ShardedLoop{Name: loopName, Holder: s.cfg.ReplicaID,
		Interval: s.cfg.Interval, Kick: s.kick, Keys: s.wake.Keys(s.queueNames), Replicas: s.cfg.Replicas, Clock: s.cfg.Clock,
		Work: s.wake.Work(s.processHeld), Log: s.log.With("loop", "placement")})
}

// queueNames lists every queue's name: the loop's shard keys.
func (s *Service) queueNames(ctx context.Context) ([]string, error) {
	var names []string
	err := s.cfg.Store.View(ctx, func(tx store.Tx) error {
		names = names[:0]
		return store.Each(ctx, tx, store.Query{Kind: KindQueue, NoData: true}, func(r store.Record) error {
			names = append(names, r.ID)
			return nil
		})
	})
	return names, err
}

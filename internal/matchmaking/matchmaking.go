// Package matchmaking implements FlexMatch: matchmaking rule sets,
// matchmaking configurations, tickets and the matchmaker.
//
// Everything lives in the store (any replica answers any call); the
// matchmaker runs under a store lease, once cluster-wide.
//
// # Records
//
//	MatchmakingRuleSet        ID rule set name; Data the rule set (its JSON body and metadata)
//	MatchmakingConfiguration  ID configuration name; Key the rule set name (configurations using it)
package matchmaking

import (
	"context"
	"log/slog"
	"time"

	"github.com/hoistgg/hoist/internal/arn"
	"github.com/hoistgg/hoist/internal/events"
	"github.com/hoistgg/hoist/internal/store"
	"github.com/hoistgg/hoist/internal/tags"
)

// Record kinds.
const (
	KindRuleSet       store.Kind = "MatchmakingRuleSet"
	KindConfiguration store.Kind = "MatchmakingConfiguration"
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
	// Now is the clock. Default time.Now.
	Now    func() time.Time
	Logger *slog.Logger
}

// Service serves the FlexMatch operations. Its methods have the signatures
// of api.Service.
type Service struct {
	cfg Config
	// activeTickets counts a configuration's active tickets (configs.go).
	activeTickets func(ctx context.Context, tx store.Tx, config string) (int, error)
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
	s := &Service{cfg: cfg, activeTickets: activeTickets}
	if cfg.Tags != nil {
		cfg.Tags.RegisterResource(arn.TypeMatchmakingConfiguration, s.ConfigurationExists)
		cfg.Tags.RegisterResource(arn.TypeMatchmakingRuleSet, s.RuleSetExists)
	}
	return s
}

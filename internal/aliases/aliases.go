// Package aliases implements GameLift fleet aliases: CreateAlias,
// DescribeAlias, ListAliases, UpdateAlias, DeleteAlias and ResolveAlias, and
// the resolver every operation that accepts an AliasId uses (ResolveFleet).
//
// An alias names a fleet (routing strategy SIMPLE) or no fleet at all
// (TERMINAL): resolving a terminal alias answers
// TerminalRoutingStrategyException carrying the alias's message, which is
// how a game client is told, for example, that its version is retired.
//
// # Records
//
//	Alias  ID alias ID ("alias-<uuid>"); Parent name; Key routing type (SIMPLE | TERMINAL)
//
// Everything lives in the store, so any replica answers any call and the
// resolver is a single indexed read inside the caller's transaction.
// docs/aliases.md describes the behaviour and every place where Hoist
// decides what GameLift leaves open.
package aliases

import (
	"context"
	"errors"
	"time"

	"github.com/hoistgg/hoist/internal/api"
	"github.com/hoistgg/hoist/internal/arn"
	"github.com/hoistgg/hoist/internal/ids"
	"github.com/hoistgg/hoist/internal/store"
	"github.com/hoistgg/hoist/internal/tags"
)

// Kind is the store kind of alias records.
const Kind store.Kind = "Alias"

// IDPrefix starts every alias ID.
const IDPrefix = "alias-"

// defaultLimit is ListAliases' page size when the request gives no Limit.
const defaultLimit = 100

// FleetExistsFunc reports whether a fleet with this ID exists (and is not
// TERMINATED), inside the caller's transaction.
type FleetExistsFunc func(ctx context.Context, tx store.Tx, fleetID string) (bool, error)

// Config configures a Service. Store is required; everything else has a
// usable default.
type Config struct {
	Store store.Store
	// Region and Account make alias ARNs and the fleet ARNs ResolveAlias
	// returns: arn:aws:gamelift:<Region>:<Account>:alias/<ID>.
	Region, Account string
	// Tags, when set, gets the "alias" resource type registered so that
	// TagResource and friends work on alias ARNs.
	Tags *tags.Service
	// FleetExists checks the fleet of a SIMPLE routing strategy. Without it
	// any fleet ID is accepted.
	FleetExists FleetExistsFunc
	// Now is the clock. Default time.Now.
	Now func() time.Time
	// NewID returns a fresh UUID for alias IDs. Default: crypto/rand.
	NewID func() string
}

// Service serves the alias operations. Its methods have the signatures of
// api.Service.
type Service struct {
	cfg Config
}

// New returns a Service.
func New(cfg Config) *Service {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.NewID == nil {
		cfg.NewID = ids.UUID
	}
	s := &Service{cfg: cfg}
	if cfg.Tags != nil {
		cfg.Tags.RegisterResource(arn.TypeAlias, s.Exists)
	}
	return s
}

// now returns the clock's time truncated to milliseconds (GameLift's
// precision).
func (s *Service) now() time.Time {
	return s.cfg.Now().UTC().Truncate(time.Millisecond)
}

// arns builds ARNs in the configured Region and account.
func (s *Service) arns() arn.Builder {
	return arn.Builder{Region: s.cfg.Region, Account: s.cfg.Account}
}

// aliasARN returns the ARN of the alias with this ID.
func (s *Service) aliasARN(id string) string {
	return s.arns().ARN(arn.TypeAlias, id)
}

// Exists reports whether the alias with this ID (or ARN) exists, for the
// tagging operations.
func (s *Service) Exists(ctx context.Context, tx store.Tx, idOrARN string) (bool, error) {
	_, err := tx.Get(ctx, Kind, aliasIDOf(idOrARN))
	if errors.Is(err, store.ErrNotFound) {
		return false, nil
	}
	return err == nil, err
}

// aliasIDOf returns the alias ID an "alias ID or ARN" parameter names.
func aliasIDOf(idOrARN string) string {
	return arn.NameOrARN(idOrARN, arn.TypeAlias)
}

// Get reads the alias an ID or ARN names, in tx; an unknown alias answers
// *api.NotFoundException.
func Get(ctx context.Context, tx store.Tx, idOrARN string) (*api.Alias, error) {
	id := aliasIDOf(idOrARN)
	a := new(api.Alias)
	_, err := store.GetJSON(ctx, tx, Kind, id, a)
	if errors.Is(err, store.ErrNotFound) {
		return nil, api.NewNotFoundException("alias %s does not exist", id)
	}
	if err != nil {
		return nil, err
	}
	return a, nil
}

// ResolveFleet returns the fleet ID the alias an ID or ARN names routes to,
// in tx: *api.NotFoundException for an unknown alias,
// *api.TerminalRoutingStrategyException (with the alias's message) for a
// TERMINAL one. Game session operations, queues and placement call it
// wherever GameLift accepts an alias in place of a fleet. The fleet itself
// is not checked: the caller reads it and answers for it.
func ResolveFleet(ctx context.Context, tx store.Tx, idOrARN string) (string, error) {
	a, err := Get(ctx, tx, idOrARN)
	if err != nil {
		return "", err
	}
	return route(a)
}

// route is where a stored alias sends a request: its fleet ID, or the
// terminal exception.
func route(a *api.Alias) (string, error) {
	rs := a.RoutingStrategy
	if rs == nil || rs.Type == api.RoutingStrategyTypeTerminal {
		return "", terminal(a)
	}
	return api.ToString(rs.FleetId), nil
}

// terminal is the error a TERMINAL alias answers: its message, or (for an
// alias created without one) a sentence naming the alias.
func terminal(a *api.Alias) error {
	msg := ""
	if a.RoutingStrategy != nil {
		msg = api.ToString(a.RoutingStrategy.Message)
	}
	if msg == "" {
		msg = "alias " + api.ToString(a.AliasId) + " has a TERMINAL routing strategy and routes to no fleet"
	}
	return &api.TerminalRoutingStrategyException{Message: msg}
}

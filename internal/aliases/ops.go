package aliases

import (
	"context"

	"github.com/hoistgg/hoist/internal/api"
	"github.com/hoistgg/hoist/internal/arn"
	"github.com/hoistgg/hoist/internal/paging"
	"github.com/hoistgg/hoist/internal/store"
	"github.com/hoistgg/hoist/internal/tags"
)

// CreateAlias creates an alias with a SIMPLE or TERMINAL routing strategy.
func (s *Service) CreateAlias(ctx context.Context, in *api.CreateAliasInput) (*api.CreateAliasOutput, error) {
	if api.ToString(in.Name) == "" {
		return nil, api.NewInvalidRequestException("Name is required")
	}
	rs, err := checkRouting(in.RoutingStrategy)
	if err != nil {
		return nil, err
	}
	id := IDPrefix + s.cfg.NewID()
	now := s.now()
	a := &api.Alias{
		AliasId: api.String(id), AliasArn: api.String(s.aliasARN(id)), Name: in.Name,
		Description: in.Description, RoutingStrategy: rs,
		CreationTime: api.Time(now), LastUpdatedTime: api.Time(now),
	}
	err = s.cfg.Store.Update(ctx, func(tx store.Tx) error {
		if err := s.checkFleet(ctx, tx, rs); err != nil {
			return err
		}
		if len(in.Tags) > 0 {
			if err := tags.Set(ctx, tx, api.ToString(a.AliasArn), in.Tags); err != nil {
				return err
			}
		}
		return store.PutJSON(ctx, tx, record(a), a)
	})
	if err != nil {
		return nil, err
	}
	return &api.CreateAliasOutput{Alias: a}, nil
}

// record returns the store record of a (its Data is set by PutJSON).
func record(a *api.Alias) store.Record {
	return store.Record{Kind: Kind, ID: api.ToString(a.AliasId), Parent: api.ToString(a.Name),
		Key: string(a.RoutingStrategy.Type)}
}

// checkFleet checks that a SIMPLE strategy's fleet exists and is not
// TERMINATED. CreateAlias models no NotFoundException, so a missing fleet
// is an invalid request (for UpdateAlias too, where NotFoundException
// would read as "no such alias").
func (s *Service) checkFleet(ctx context.Context, tx store.Tx, rs *api.RoutingStrategy) error {
	if rs.Type != api.RoutingStrategyTypeSimple || s.cfg.FleetExists == nil {
		return nil
	}
	id := api.ToString(rs.FleetId)
	ok, err := s.cfg.FleetExists(ctx, tx, id)
	if err != nil {
		return err
	}
	if !ok {
		return api.NewInvalidRequestException("RoutingStrategy.FleetId: fleet %s does not exist", id)
	}
	return nil
}

// DescribeAlias returns one alias.
func (s *Service) DescribeAlias(ctx context.Context, in *api.DescribeAliasInput) (*api.DescribeAliasOutput, error) {
	var a *api.Alias
	err := s.cfg.Store.View(ctx, func(tx store.Tx) error {
		var err error
		a, err = Get(ctx, tx, api.ToString(in.AliasId))
		return err
	})
	if err != nil {
		return nil, err
	}
	return &api.DescribeAliasOutput{Alias: a}, nil
}

// ListAliases lists aliases in creation order, optionally only those of
// one routing type and those with exactly one name (both are indexed:
// Key and Parent of the records).
func (s *Service) ListAliases(ctx context.Context, in *api.ListAliasesInput) (*api.ListAliasesOutput, error) {
	q := store.Query{Kind: Kind, Order: store.OrderCreated}
	limit := defaultLimit
	if in.Limit != nil && *in.Limit > 0 {
		limit = int(*in.Limit)
	}
	if in.RoutingStrategyType != "" {
		q.Key, q.HasKey = string(in.RoutingStrategyType), true
	}
	if in.Name != nil {
		q.Parent, q.HasParent = *in.Name, true
	}
	out := &api.ListAliasesOutput{Aliases: []api.Alias{}}
	err := s.cfg.Store.View(ctx, func(tx store.Tx) error {
		out.Aliases, out.NextToken = out.Aliases[:0], nil
		recs, next, err := paging.Records(ctx, tx, q, api.ToString(in.NextToken), limit, nil)
		if err != nil {
			return paging.Err(err)
		}
		for _, rec := range recs {
			var a api.Alias
			if err := store.Decode(rec, &a); err != nil {
				return err
			}
			out.Aliases = append(out.Aliases, a)
		}
		out.NextToken = paging.Token(next)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// UpdateAlias changes an alias's name, description and routing strategy
// (each only when given) and sets LastUpdatedTime.
func (s *Service) UpdateAlias(ctx context.Context, in *api.UpdateAliasInput) (*api.UpdateAliasOutput, error) {
	var rs *api.RoutingStrategy
	if in.RoutingStrategy != nil {
		var err error
		if rs, err = checkRouting(in.RoutingStrategy); err != nil {
			return nil, err
		}
	}
	var a *api.Alias
	err := s.cfg.Store.Update(ctx, func(tx store.Tx) error {
		var err error
		if a, err = Get(ctx, tx, api.ToString(in.AliasId)); err != nil {
			return err
		}
		if rs != nil {
			if err := s.checkFleet(ctx, tx, rs); err != nil {
				return err
			}
			a.RoutingStrategy = rs
		}
		if in.Name != nil {
			a.Name = in.Name
		}
		if in.Description != nil {
			a.Description = in.Description
		}
		a.LastUpdatedTime = api.Time(s.now())
		return store.PutJSON(ctx, tx, record(a), a)
	})
	if err != nil {
		return nil, err
	}
	return &api.UpdateAliasOutput{Alias: a}, nil
}

// DeleteAlias deletes an alias and its tags.
func (s *Service) DeleteAlias(ctx context.Context, in *api.DeleteAliasInput) error {
	return s.cfg.Store.Update(ctx, func(tx store.Tx) error {
		a, err := Get(ctx, tx, api.ToString(in.AliasId))
		if err != nil {
			return err
		}
		if err := tx.Delete(ctx, Kind, api.ToString(a.AliasId)); err != nil {
			return err
		}
		return tags.DeleteAll(ctx, tx, api.ToString(a.AliasArn))
	})
}

// ResolveAlias returns the fleet a SIMPLE alias routes to; a TERMINAL alias
// answers TerminalRoutingStrategyException with its message.
func (s *Service) ResolveAlias(ctx context.Context, in *api.ResolveAliasInput) (*api.ResolveAliasOutput, error) {
	var fleetID string
	err := s.cfg.Store.View(ctx, func(tx store.Tx) error {
		var err error
		fleetID, err = ResolveFleet(ctx, tx, api.ToString(in.AliasId))
		return err
	})
	if err != nil {
		return nil, err
	}
	return &api.ResolveAliasOutput{FleetId: api.String(fleetID),
		FleetArn: api.String(s.arns().ARN(arn.TypeFleet, fleetID))}, nil
}

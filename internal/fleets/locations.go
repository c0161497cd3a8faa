package fleets

import (
	"context"
	"errors"
	"slices"
	"sort"

	"github.com/hoistgg/hoist/internal/api"
	"github.com/hoistgg/hoist/internal/hosting"
	"github.com/hoistgg/hoist/internal/paging"
	"github.com/hoistgg/hoist/internal/store"
)

// CreateLocation creates a custom location for ANYWHERE fleets (its name
// starts with "custom-").
func (s *Service) CreateLocation(ctx context.Context, in *api.CreateLocationInput) (*api.CreateLocationOutput, error) {
	name := api.ToString(in.LocationName)
	if !isCustomLocation(name) {
		return nil, api.NewInvalidRequestException("LocationName %q must start with custom-", name)
	}
	l := locationRec{Location: api.LocationModel{LocationName: api.String(name), LocationArn: api.String(s.arn("location", name))},
		CreationTime: s.now()}
	err := s.cfg.Store.Update(ctx, func(tx store.Tx) error {
		if _, err := getLocation(ctx, tx, name); err == nil {
			return api.NewConflictException("custom location %s already exists", name)
		} else if !errors.Is(err, store.ErrNotFound) {
			return err
		}
		if s.cfg.SetTags != nil && len(in.Tags) > 0 {
			if err := s.cfg.SetTags(ctx, tx, api.ToString(l.Location.LocationArn), in.Tags); err != nil {
				return err
			}
		}
		return store.PutJSON(ctx, tx, store.Record{Kind: hosting.KindLocation, ID: name}, &l)
	})
	if err != nil {
		return nil, err
	}
	return &api.CreateLocationOutput{Location: &l.Location}, nil
}

// DeleteLocation deletes a custom location no live fleet uses.
func (s *Service) DeleteLocation(ctx context.Context, in *api.DeleteLocationInput) (*api.DeleteLocationOutput, error) {
	name := locationName(api.ToString(in.LocationName))
	err := s.cfg.Store.Update(ctx, func(tx store.Tx) error {
		l, err := getLocation(ctx, tx, name)
		if err != nil {
			return notFoundLocation(err, name)
		}
		user, err := fleetUsing(ctx, tx, name)
		if err != nil {
			return err
		}
		if user != "" {
			return api.NewInvalidRequestException("custom location %s is used by fleet %s: delete that fleet (or its location) first", name, user)
		}
		if s.cfg.RemoveTags != nil {
			if err := s.cfg.RemoveTags(ctx, tx, api.ToString(l.Location.LocationArn)); err != nil {
				return err
			}
		}
		return tx.Delete(ctx, hosting.KindLocation, name)
	})
	if err != nil {
		return nil, err
	}
	return &api.DeleteLocationOutput{}, nil
}

// notFoundLocation turns a missing custom location into NotFoundException.
func notFoundLocation(err error, name string) error {
	if errors.Is(err, store.ErrNotFound) {
		return api.NewNotFoundException("custom location %s does not exist", name)
	}
	return err
}

// fleetUsing returns a fleet (not TERMINATED) that has a live location
// name, or "".
func fleetUsing(ctx context.Context, tx store.Tx, name string) (string, error) {
	user := ""
	err := store.Each(ctx, tx, store.Query{Kind: hosting.KindFleet}, func(r store.Record) error {
		if user != "" || r.Key == string(api.FleetStatusTerminated) {
			return nil
		}
		f := new(fleetRec)
		if err := store.Decode(r, f); err != nil {
			return err
		}
		if l := f.location(name); l != nil && l.Status != api.FleetStatusTerminated {
			user = f.id()
		}
		return nil
	})
	return user, err
}

// ListLocations lists the AWS locations Hoist hosts in (Hoist runs no ping
// beacons) and the custom locations, by name; Filters AWS or CUSTOM keep
// one kind.
func (s *Service) ListLocations(ctx context.Context, in *api.ListLocationsInput) (*api.ListLocationsOutput, error) {
	wantAWS := len(in.Filters) == 0 || slices.Contains(in.Filters, api.LocationFilterAws)
	wantCustom := len(in.Filters) == 0 || slices.Contains(in.Filters, api.LocationFilterCustom)
	var all []api.LocationModel
	if wantAWS {
		for name := range s.locations {
			all = append(all, api.LocationModel{LocationName: api.String(name)})
		}
	}
	if wantCustom {
		err := s.cfg.Store.View(ctx, func(tx store.Tx) error {
			return store.Each(ctx, tx, store.Query{Kind: hosting.KindLocation}, func(r store.Record) error {
				l := new(locationRec)
				if err := store.Decode(r, l); err != nil {
					return err
				}
				all = append(all, l.Location)
				return nil
			})
		})
		if err != nil {
			return nil, err
		}
	}
	sort.Slice(all, func(i, j int) bool { return api.ToString(all[i].LocationName) < api.ToString(all[j].LocationName) })
	all, next, err := paging.Sorted(all, func(l api.LocationModel) string { return api.ToString(l.LocationName) }, api.ToString(in.NextToken), pageSize(in.Limit, 100, 200))
	if err != nil {
		return nil, err
	}
	out := &api.ListLocationsOutput{Locations: all, NextToken: paging.Token(next)}
	if out.Locations == nil {
		out.Locations = []api.LocationModel{}
	}
	return out, nil
}

// DescribeEC2InstanceLimits reports, per instance type, Hoist's instance
// limit per fleet location (Config.InstanceLimit) and how many instances
// run, in the Region's home location or the given location. Without an
// instance type it reports the types in use (or every type when none is).
func (s *Service) DescribeEC2InstanceLimits(ctx context.Context, in *api.DescribeEC2InstanceLimitsInput) (*api.DescribeEC2InstanceLimitsOutput, error) {
	loc := api.ToString(in.Location)
	if loc == "" {
		loc = s.cfg.Region
	}
	if !s.locations[loc] {
		return nil, api.NewInvalidRequestException("location %s is not a location Hoist hosts in", loc)
	}
	counts := map[api.EC2InstanceType]int32{}
	err := s.cfg.Store.View(ctx, func(tx store.Tx) error {
		return store.Each(ctx, tx, store.Query{Kind: hosting.KindFleet}, func(r store.Record) error {
			f := new(fleetRec)
			if err := store.Decode(r, f); err != nil || f.anywhere() || f.status() == api.FleetStatusTerminated {
				return err
			}
			n, err := tx.Count(ctx, store.Query{Kind: hosting.KindCompute, Parent: f.id(), HasParent: true, Key: loc, HasKey: true})
			counts[f.Attributes.InstanceType] += int32(n)
			return err
		})
	})
	if err != nil {
		return nil, err
	}
	types := []api.EC2InstanceType{in.EC2InstanceType}
	if in.EC2InstanceType == "" {
		types = types[:0]
		for t := range counts {
			types = append(types, t)
		}
		if len(types) == 0 {
			types = api.EC2InstanceType("").Values()
		}
		slices.Sort(types)
	}
	out := &api.DescribeEC2InstanceLimitsOutput{EC2InstanceLimits: []api.EC2InstanceLimit{}}
	for _, t := range types {
		out.EC2InstanceLimits = append(out.EC2InstanceLimits, api.EC2InstanceLimit{EC2InstanceType: t, Location: api.String(loc),
			CurrentInstances: api.Int32(counts[t]), InstanceLimit: api.Int32(s.cfg.InstanceLimit)})
	}
	return out, nil
}

package fleets

import (
	"context"
	"slices"
	"sort"

	"github.com/hoistgg/hoist/internal/api"
	"github.com/hoistgg/hoist/internal/hosting"
	"github.com/hoistgg/hoist/internal/paging"
	"github.com/hoistgg/hoist/internal/store"
)

// defaultPage is the page size of list operations without a Limit.
const defaultPage = 50

// listFleets returns the fleets a Describe* or List call covers: the ones
// named (skipping unknown IDs; TERMINATED ones included), or else a page of
// every fleet that is not TERMINATED, ordered by ID, after the NextToken
// (an opaque token of the last ID of the previous page, paging.Sorted).
func listFleets(ctx context.Context, tx store.Tx, ids []string, limit *int32, token *string, keep func(*fleetRec) bool) ([]*fleetRec, *string, error) {
	var out []*fleetRec
	if len(ids) > 0 {
		for _, id := range ids {
			f, err := findFleet(ctx, tx, id, false)
			if _, nf := err.(*api.NotFoundException); nf {
				continue
			}
			if err != nil {
				return nil, nil, err
			}
			out = append(out, f)
		}
		return out, nil, nil
	}
	if _, err := paging.AfterKey(api.ToString(token)); err != nil {
		return nil, nil, err // before reading every fleet
	}
	err := store.Each(ctx, tx, store.Query{Kind: hosting.KindFleet}, func(r store.Record) error {
		if r.Key == string(api.FleetStatusTerminated) {
			return nil
		}
		f := new(fleetRec)
		if err := store.Decode(r, f); err != nil {
			return err
		}
		if keep == nil || keep(f) {
			out = append(out, f)
		}
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	sort.Slice(out, func(i, j int) bool { return out[i].id() < out[j].id() })
	out, next, err := paging.Sorted(out, (*fleetRec).id, api.ToString(token), pageSize(limit, defaultPage, 1000))
	return out, paging.Token(next), err
}

// ListFleets lists the IDs of the fleets that are not TERMINATED,
// optionally those running one build.
func (s *Service) ListFleets(ctx context.Context, in *api.ListFleetsInput) (*api.ListFleetsOutput, error) {
	if in.ScriptId != nil {
		return &api.ListFleetsOutput{FleetIds: []string{}}, nil // Hoist has no Realtime scripts
	}
	build := buildIDOf(api.ToString(in.BuildId))
	keep := func(f *fleetRec) bool { return build == "" || api.ToString(f.Attributes.BuildId) == build }
	out := &api.ListFleetsOutput{FleetIds: []string{}}
	err := s.cfg.Store.View(ctx, func(tx store.Tx) error {
		fs, next, err := listFleets(ctx, tx, nil, in.Limit, in.NextToken, keep)
		for _, f := range fs {
			out.FleetIds = append(out.FleetIds, f.id())
		}
		out.NextToken = next
		return err
	})
	return out, err
}

// DescribeFleetAttributes describes the named fleets, or every fleet.
func (s *Service) DescribeFleetAttributes(ctx context.Context, in *api.DescribeFleetAttributesInput) (*api.DescribeFleetAttributesOutput, error) {
	out := &api.DescribeFleetAttributesOutput{FleetAttributes: []api.FleetAttributes{}}
	err := s.cfg.Store.View(ctx, func(tx store.Tx) error {
		fs, next, err := listFleets(ctx, tx, in.FleetIds, in.Limit, in.NextToken, nil)
		for _, f := range fs {
			out.FleetAttributes = append(out.FleetAttributes, fleetAttributes(f))
		}
		out.NextToken = next
		return err
	})
	return out, err
}

// fleetAttributes is a fleet's FleetAttributes as described: StoppedActions
// are its home location's.
func fleetAttributes(f *fleetRec) api.FleetAttributes {
	a := f.Attributes
	if h := f.home(); h != nil {
		a.StoppedActions = h.Stopped
	}
	return a
}

// DescribeFleetCapacity describes the home location capacity of the named
// fleets, or of every fleet.
func (s *Service) DescribeFleetCapacity(ctx context.Context, in *api.DescribeFleetCapacityInput) (*api.DescribeFleetCapacityOutput, error) {
	rows, next, err := homeLocationRows(ctx, s, in.FleetIds, in.Limit, in.NextToken, capacityOf)
	if err != nil {
		return nil, err
	}
	return &api.DescribeFleetCapacityOutput{FleetCapacity: rows, NextToken: next}, nil
}

// homeLocationRows pages through the named fleets, or every fleet, and
// describes the home location of each with row.
func homeLocationRows[T any](ctx context.Context, s *Service, ids []string, limit *int32, token *string,
	row func(f *fleetRec, loc string, m *Metrics) T) ([]T, *string, error) {
	rows := []T{}
	var next *string
	err := s.cfg.Store.View(ctx, func(tx store.Tx) error {
		fs, n, err := listFleets(ctx, tx, ids, limit, token, nil)
		if err != nil {
			return err
		}
		for _, f := range fs {
			m, err := fleetMetrics(ctx, tx, &f.Fleet)
			if err != nil {
				return err
			}
			rows = append(rows, row(f, f.HomeLocation, m[f.HomeLocation]))
		}
		next = n
		return nil
	})
	return rows, next, err
}

// capacityOf is a location's FleetCapacity.
func capacityOf(f *fleetRec, loc string, m *Metrics) api.FleetCapacity {
	if m == nil {
		m = &Metrics{}
	}
	var des, lo, hi int32
	if l := f.location(loc); l != nil {
		des, lo, hi = l.Desired, l.Min, l.Max
	}
	return api.FleetCapacity{FleetId: f.Attributes.FleetId, FleetArn: f.Attributes.FleetArn,
		InstanceType: f.Attributes.InstanceType, Location: api.String(loc),
		InstanceCounts: &api.EC2InstanceCounts{
			DESIRED: api.Int32(des), MINIMUM: api.Int32(lo), MAXIMUM: api.Int32(hi),
			PENDING: api.Int32(int32(m.Pending)), ACTIVE: api.Int32(int32(m.Active)),
			IDLE: api.Int32(int32(m.IdleInstances)), TERMINATING: api.Int32(int32(m.Terminating)),
		}}
}

// DescribeFleetUtilization describes the home location utilization of the
// named fleets, or of every fleet.
func (s *Service) DescribeFleetUtilization(ctx context.Context, in *api.DescribeFleetUtilizationInput) (*api.DescribeFleetUtilizationOutput, error) {
	rows, next, err := homeLocationRows(ctx, s, in.FleetIds, in.Limit, in.NextToken, utilizationOf)
	if err != nil {
		return nil, err
	}
	return &api.DescribeFleetUtilizationOutput{FleetUtilization: rows, NextToken: next}, nil
}

// utilizationOf is a location's FleetUtilization.
func utilizationOf(f *fleetRec, loc string, m *Metrics) api.FleetUtilization {
	if m == nil {
		m = &Metrics{}
	}
	return api.FleetUtilization{FleetId: f.Attributes.FleetId, FleetArn: f.Attributes.FleetArn, Location: api.String(loc),
		ActiveServerProcessCount:  api.Int32(int32(m.ActiveServerProcesses)),
		ActiveGameSessionCount:    api.Int32(int32(m.ActiveGameSessions)),
		CurrentPlayerSessionCount: api.Int32(int32(m.CurrentPlayerSessions)),
		MaximumPlayerSessionCount: api.Int32(int32(m.MaximumPlayerSessions))}
}

// DescribeFleetLocationCapacity describes one location's capacity.
func (s *Service) DescribeFleetLocationCapacity(ctx context.Context, in *api.DescribeFleetLocationCapacityInput) (*api.DescribeFleetLocationCapacityOutput, error) {
	var out api.FleetCapacity
	err := s.cfg.Store.View(ctx, func(tx store.Tx) error {
		f, loc, m, err := locationMetrics(ctx, tx, api.ToString(in.FleetId), api.ToString(in.Location))
		if err == nil {
			out = capacityOf(f, loc, m)
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	return &api.DescribeFleetLocationCapacityOutput{FleetCapacity: &out}, nil
}

// DescribeFleetLocationUtilization describes one location's utilization.
func (s *Service) DescribeFleetLocationUtilization(ctx context.Context, in *api.DescribeFleetLocationUtilizationInput) (*api.DescribeFleetLocationUtilizationOutput, error) {
	var out api.FleetUtilization
	err := s.cfg.Store.View(ctx, func(tx store.Tx) error {
		f, loc, m, err := locationMetrics(ctx, tx, api.ToString(in.FleetId), api.ToString(in.Location))
		if err == nil {
			out = utilizationOf(f, loc, m)
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	return &api.DescribeFleetLocationUtilizationOutput{FleetUtilization: &out}, nil
}

// locationMetrics reads a fleet location and its metrics for an API call.
func locationMetrics(ctx context.Context, tx store.Tx, fleetID, loc string) (*fleetRec, string, *Metrics, error) {
	f, err := findFleet(ctx, tx, fleetID, true)
	if err != nil {
		return nil, "", nil, err
	}
	l, err := f.liveLocation(loc)
	if err != nil {
		return nil, "", nil, err
	}
	m, err := fleetMetrics(ctx, tx, &f.Fleet)
	if err != nil {
		return nil, "", nil, err
	}
	return f, l.Location, m[l.Location], nil
}

// DescribeFleetLocationAttributes describes a fleet's locations (the named
// ones, or all), in the fleet's order: home first.
func (s *Service) DescribeFleetLocationAttributes(ctx context.Context, in *api.DescribeFleetLocationAttributesInput) (*api.DescribeFleetLocationAttributesOutput, error) {
	var f *fleetRec
	err := s.cfg.Store.View(ctx, func(tx store.Tx) error {
		var err error
		f, err = findFleet(ctx, tx, api.ToString(in.FleetId), true)
		return err
	})
	if err != nil {
		return nil, err
	}
	want := map[string]bool{}
	for _, l := range in.Locations {
		want[l] = true
	}
	out := &api.DescribeFleetLocationAttributesOutput{FleetId: f.Attributes.FleetId, FleetArn: f.Attributes.FleetArn,
		LocationAttributes: []api.LocationAttributes{}}
	for _, l := range f.Locations {
		if len(want) > 0 && !want[l.Location] {
			continue
		}
		out.LocationAttributes = append(out.LocationAttributes, api.LocationAttributes{
			LocationState:  &api.LocationState{Location: api.String(l.Location), Status: l.Status},
			StoppedActions: l.Stopped, UpdateStatus: l.Update})
	}
	return pageLocations(out, in.Limit, in.NextToken)
}

// pageLocations pages location attributes in the fleet's order; NextToken
// is an opaque token of the last location shown (paging.KeyToken). A
// fleet keeps its deleted locations (TERMINATED), so the location a token
// names is always found.
func pageLocations(out *api.DescribeFleetLocationAttributesOutput, limit *int32, token *string) (*api.DescribeFleetLocationAttributesOutput, error) {
	all := out.LocationAttributes
	after, err := paging.AfterKey(api.ToString(token))
	if err != nil {
		return nil, err
	}
	if after != "" {
		i := slices.IndexFunc(all, func(la api.LocationAttributes) bool { return api.ToString(la.LocationState.Location) == after })
		if i < 0 {
			return nil, paging.Err(store.ErrInvalidCursor)
		}
		all = all[i+1:]
	}
	n := pageSize(limit, 100, 100)
	if len(all) > n {
		all = all[:n]
		out.NextToken = api.String(paging.KeyToken(api.ToString(all[n-1].LocationState.Location)))
	}
	out.LocationAttributes = all
	return out, nil
}

// DescribeFleetEvents lists a fleet's events in the order they happened,
// optionally between StartTime and EndTime (inclusive).
func (s *Service) DescribeFleetEvents(ctx context.Context, in *api.DescribeFleetEventsInput) (*api.DescribeFleetEventsOutput, error) {
	out := &api.DescribeFleetEventsOutput{Events: []api.Event{}}
	err := s.cfg.Store.View(ctx, func(tx store.Tx) error {
		f, err := findFleet(ctx, tx, api.ToString(in.FleetId), false)
		if err != nil {
			return err
		}
		q := store.Query{Kind: hosting.KindFleetEvent, Parent: f.id(), HasParent: true, Order: store.OrderCreated}
		_, next, err := paging.Records(ctx, tx, q, api.ToString(in.NextToken), pageSize(in.Limit, 100, 1000), func(r store.Record) (bool, error) {
			var ev hosting.FleetEvent
			if err := store.Decode(r, &ev); err != nil {
				return false, err
			}
			if !inRange(ev.Event.EventTime, in.StartTime, in.EndTime) {
				return false, nil
			}
			if ev.SetupLog != "" && s.cfg.SetupLogURL != nil {
				ev.Event.PreSignedLogUrl = api.String(s.cfg.SetupLogURL(f.id(), ev.SetupLog))
			}
			if ev.ProcessLog != "" && s.cfg.ProcessLogURL != nil {
				ev.Event.PreSignedLogUrl = api.String(s.cfg.ProcessLogURL(f.id(), ev.ProcessLog))
			}
			out.Events = append(out.Events, ev.Event)
			return true, nil
		})
		out.NextToken = paging.Token(next)
		return err
	})
	return out, err
}

// inRange reports whether t lies within [start, end] (nil bounds are open).
func inRange(t, start, end *api.Timestamp) bool {
	if t == nil {
		return true
	}
	if start != nil && t.Before(start.Time) {
		return false
	}
	return end == nil || !t.After(end.Time)
}

// DescribeFleetPortSettings describes a fleet's inbound permissions.
func (s *Service) DescribeFleetPortSettings(ctx context.Context, in *api.DescribeFleetPortSettingsInput) (*api.DescribeFleetPortSettingsOutput, error) {
	var out *api.DescribeFleetPortSettingsOutput
	err := s.cfg.Store.View(ctx, func(tx store.Tx) error {
		f, err := findFleet(ctx, tx, api.ToString(in.FleetId), true)
		if err != nil {
			return err
		}
		out = &api.DescribeFleetPortSettingsOutput{FleetId: f.Attributes.FleetId, FleetArn: f.Attributes.FleetArn,
			InboundPermissions: f.PortSettings}
		if out.InboundPermissions == nil {
			out.InboundPermissions = []api.IpPermission{}
		}
		if loc := api.ToString(in.Location); loc != "" {
			l, err := f.liveLocation(loc)
			if err != nil {
				return err
			}
			out.Location, out.UpdateStatus = api.String(l.Location), l.Update
		}
		return nil
	})
	return out, err
}

// DescribeRuntimeConfiguration describes a fleet's runtime configuration.
func (s *Service) DescribeRuntimeConfiguration(ctx context.Context, in *api.DescribeRuntimeConfigurationInput) (*api.DescribeRuntimeConfigurationOutput, error) {
	var rc api.RuntimeConfiguration
	err := s.cfg.Store.View(ctx, func(tx store.Tx) error {
		f, err := findFleet(ctx, tx, api.ToString(in.FleetId), true)
		if err == nil {
			rc = f.RuntimeConfiguration
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	if rc.ServerProcesses == nil {
		rc.ServerProcesses = []api.ServerProcess{}
	}
	return &api.DescribeRuntimeConfigurationOutput{RuntimeConfiguration: &rc}, nil
}

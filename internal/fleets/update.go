package fleets

import (
	"context"
	"slices"

	"github.com/hoistgg/hoist/internal/api"
	"github.com/hoistgg/hoist/internal/hosting"
	"github.com/hoistgg/hoist/internal/store"
)

// updateFleet runs fn on a live fleet in a transaction and stores it; fn
// returns the events to record.
func (s *Service) updateFleet(ctx context.Context, idOrARN string, fn func(tx store.Tx, f *fleetRec) error) (*fleetRec, error) {
	var f *fleetRec
	err := s.cfg.Store.Update(ctx, func(tx store.Tx) error {
		var err error
		if f, err = findFleet(ctx, tx, idOrARN, true); err != nil {
			return err
		}
		if err := fn(tx, f); err != nil {
			return err
		}
		return putFleet(ctx, tx, f)
	})
	if err != nil {
		return nil, err
	}
	s.wake()
	return f, nil
}

// notDeleting refuses changes to a fleet that is being deleted.
func notDeleting(f *fleetRec) error {
	if f.status() == api.FleetStatusDeleting {
		return api.NewInvalidFleetStatusException("fleet %s is DELETING", f.id())
	}
	return nil
}

// UpdateFleetAttributes changes a fleet's name, description, game session
// protection policy, resource creation limit policy, metric groups and
// Anywhere configuration.
func (s *Service) UpdateFleetAttributes(ctx context.Context, in *api.UpdateFleetAttributesInput) (*api.UpdateFleetAttributesOutput, error) {
	f, err := s.updateFleet(ctx, api.ToString(in.FleetId), func(tx store.Tx, f *fleetRec) error {
		if err := notDeleting(f); err != nil {
			return err
		}
		a := &f.Attributes
		if in.Name != nil {
			a.Name = in.Name
		}
		if in.Description != nil {
			a.Description = in.Description
		}
		if in.MetricGroups != nil {
			a.MetricGroups = in.MetricGroups
		}
		if in.ResourceCreationLimitPolicy != nil {
			a.ResourceCreationLimitPolicy = in.ResourceCreationLimitPolicy
		}
		if in.AnywhereConfiguration != nil {
			if !f.anywhere() {
				return api.NewInvalidRequestException("AnywhereConfiguration applies to ANYWHERE fleets only")
			}
			a.AnywhereConfiguration = in.AnywhereConfiguration
		}
		if p := in.NewGameSessionProtectionPolicy; p != "" && p != a.NewGameSessionProtectionPolicy {
			a.NewGameSessionProtectionPolicy = p
			return s.addEvent(ctx, tx, f.id(), api.EventCodeFleetNewGameSessionProtectionPolicyUpdated, s.now(),
				"New game sessions of fleet %s get protection policy %s", f.id(), p)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return &api.UpdateFleetAttributesOutput{FleetId: f.Attributes.FleetId, FleetArn: f.Attributes.FleetArn}, nil
}

// UpdateFleetCapacity changes a location's desired, minimum and maximum
// instance counts; the reconciler then starts or stops instances. The
// location must be ACTIVE, and MinSize <= DesiredInstances <= MaxSize.
func (s *Service) UpdateFleetCapacity(ctx context.Context, in *api.UpdateFleetCapacityInput) (*api.UpdateFleetCapacityOutput, error) {
	if mc := in.ManagedCapacityConfiguration; mc != nil && mc.ZeroCapacityStrategy != "" && mc.ZeroCapacityStrategy != api.ZeroCapacityStrategyManual {
		return nil, api.NewInvalidRequestException("ZeroCapacityStrategy %s is not supported by Hoist: use MANUAL", mc.ZeroCapacityStrategy)
	}
	var loc string
	f, err := s.updateFleet(ctx, api.ToString(in.FleetId), func(tx store.Tx, f *fleetRec) error {
		if f.anywhere() {
			return api.NewInvalidRequestException("fleet %s is an ANYWHERE fleet: its capacity is the computes you register", f.id())
		}
		l, err := f.liveLocation(api.ToString(in.Location))
		if err != nil {
			return err
		}
		loc = l.Location
		if l.Status != api.FleetStatusActive {
			return api.NewInvalidFleetStatusException("location %s of fleet %s is %s: capacity can be changed only when it is ACTIVE", loc, f.id(), l.Status)
		}
		return s.setCapacity(ctx, tx, f, l, in)
	})
	if err != nil {
		return nil, err
	}
	return &api.UpdateFleetCapacityOutput{FleetId: f.Attributes.FleetId, FleetArn: f.Attributes.FleetArn,
		Location: api.String(loc), ManagedCapacityConfiguration: in.ManagedCapacityConfiguration}, nil
}

// setCapacity applies new capacity settings to a location.
func (s *Service) setCapacity(ctx context.Context, tx store.Tx, f *fleetRec, l *hosting.FleetLocation, in *api.UpdateFleetCapacityInput) error {
	des, lo, hi := l.Desired, l.Min, l.Max
	if in.DesiredInstances != nil {
		des = *in.DesiredInstances
	}
	if in.MinSize != nil {
		lo = *in.MinSize
	}
	if in.MaxSize != nil {
		hi = *in.MaxSize
	}
	switch {
	case lo < 0 || lo > hi:
		return api.NewInvalidRequestException("MinSize %d and MaxSize %d: need 0 <= MinSize <= MaxSize", lo, hi)
	case des < lo || des > hi:
		return api.NewInvalidRequestException("DesiredInstances %d is outside MinSize %d to MaxSize %d", des, lo, hi)
	case des > s.cfg.InstanceLimit || hi > s.cfg.InstanceLimit:
		return api.NewLimitExceededException("a fleet location may have at most %d instances (DescribeEC2InstanceLimits)", s.cfg.InstanceLimit)
	}
	old := l.Desired
	l.Desired, l.Min, l.Max = des, lo, hi
	if des == old {
		return nil
	}
	return s.addEvent(ctx, tx, f.id(), api.EventCodeFleetScalingEvent, s.now(),
		"UpdateFleetCapacity changed the desired instances of location %s from %d to %d", l.Location, old, des)
}

// UpdateFleetPortSettings adds and removes inbound permissions. A
// permission to remove must match one the fleet has; one to add that it
// already has is ignored.
func (s *Service) UpdateFleetPortSettings(ctx context.Context, in *api.UpdateFleetPortSettingsInput) (*api.UpdateFleetPortSettingsOutput, error) {
	if err := checkPermissions("InboundPermissionAuthorizations", in.InboundPermissionAuthorizations); err != nil {
		return nil, err
	}
	if err := checkPermissions("InboundPermissionRevocations", in.InboundPermissionRevocations); err != nil {
		return nil, err
	}
	f, err := s.updateFleet(ctx, api.ToString(in.FleetId), func(tx store.Tx, f *fleetRec) error {
		if f.anywhere() {
			return api.NewInvalidRequestException("fleet %s is an ANYWHERE fleet: it has no port settings", f.id())
		}
		if err := notDeleting(f); err != nil {
			return err
		}
		perms, err := changePermissions(f.PortSettings, in.InboundPermissionAuthorizations, in.InboundPermissionRevocations)
		f.PortSettings = perms
		return err
	})
	if err != nil {
		return nil, err
	}
	return &api.UpdateFleetPortSettingsOutput{FleetId: f.Attributes.FleetId, FleetArn: f.Attributes.FleetArn}, nil
}

// changePermissions removes revoke from perms, then adds add.
func changePermissions(perms, add, revoke []api.IpPermission) ([]api.IpPermission, error) {
	out := slices.Clone(perms)
	for i, r := range revoke {
		j := slices.IndexFunc(out, func(p api.IpPermission) bool { return samePermission(p, r) })
		if j < 0 {
			return nil, api.NewInvalidRequestException("InboundPermissionRevocations[%d] matches no permission of the fleet", i)
		}
		out = slices.Delete(out, j, j+1)
	}
	for _, a := range add {
		if !slices.ContainsFunc(out, func(p api.IpPermission) bool { return samePermission(p, a) }) {
			out = append(out, a)
		}
	}
	if len(out) > maxPermissions {
		return nil, api.NewLimitExceededException("a fleet may have at most %d inbound permissions", maxPermissions)
	}
	return out, nil
}

// UpdateRuntimeConfiguration replaces a fleet's runtime configuration.
// Running server processes are left alone; replacements and new instances
// follow the new configuration.
func (s *Service) UpdateRuntimeConfiguration(ctx context.Context, in *api.UpdateRuntimeConfigurationInput) (*api.UpdateRuntimeConfigurationOutput, error) {
	f, err := s.updateFleet(ctx, api.ToString(in.FleetId), func(tx store.Tx, f *fleetRec) error {
		if err := notDeleting(f); err != nil {
			return err
		}
		if err := checkRuntime(in.RuntimeConfiguration, !f.anywhere(), f.Attributes.OperatingSystem); err != nil {
			return err
		}
		f.RuntimeConfiguration = *in.RuntimeConfiguration
		return nil
	})
	if err != nil {
		return nil, err
	}
	s.pushRuntime(ctx, f)
	rc := f.RuntimeConfiguration
	return &api.UpdateRuntimeConfigurationOutput{RuntimeConfiguration: &rc}, nil
}

// pushRuntime gives the fleet's instances its runtime configuration: every
// instance recorded for the fleet (from the store, so an instance just
// placed on a host that has not reported it yet gets it too); the
// provider routes each to its host. (With several replicas, instances
// another replica's hosts hold would need that replica to pick the change
// up: see docs/fleets.md.)
func (s *Service) pushRuntime(ctx context.Context, f *fleetRec) {
	if s.cfg.Provider == nil || f.anywhere() {
		return
	}
	var comps []*hosting.Compute
	err := s.cfg.Store.View(ctx, func(tx store.Tx) error {
		var err error
		comps, err = fleetComputes(ctx, tx, f.id(), "")
		return err
	})
	if err != nil {
		s.log.Warn("fleets: reading the instances to give a runtime configuration", "fleet", f.id(), "err", err)
		return
	}
	for _, c := range comps {
		if c.Status != api.ComputeStatusTerminating {
			s.cfg.Provider.UpdateRuntimeConfiguration(c.ComputeName, f.RuntimeConfiguration)
		}
	}
}

// StartFleetActions resumes a location's stopped actions (AUTO_SCALING).
func (s *Service) StartFleetActions(ctx context.Context, in *api.StartFleetActionsInput) (*api.StartFleetActionsOutput, error) {
	f, err := s.fleetActions(ctx, api.ToString(in.FleetId), api.ToString(in.Location), in.Actions, false)
	if err != nil {
		return nil, err
	}
	return &api.StartFleetActionsOutput{FleetId: f.Attributes.FleetId, FleetArn: f.Attributes.FleetArn}, nil
}

// StopFleetActions suspends actions (AUTO_SCALING: scaling policies are not
// evaluated) in a location; UpdateFleetCapacity still works.
func (s *Service) StopFleetActions(ctx context.Context, in *api.StopFleetActionsInput) (*api.StopFleetActionsOutput, error) {
	f, err := s.fleetActions(ctx, api.ToString(in.FleetId), api.ToString(in.Location), in.Actions, true)
	if err != nil {
		return nil, err
	}
	return &api.StopFleetActionsOutput{FleetId: f.Attributes.FleetId, FleetArn: f.Attributes.FleetArn}, nil
}

func (s *Service) fleetActions(ctx context.Context, id, loc string, actions []api.FleetAction, stop bool) (*fleetRec, error) {
	if len(actions) == 0 {
		return nil, api.NewInvalidRequestException("Actions must name at least one action (AUTO_SCALING)")
	}
	return s.updateFleet(ctx, id, func(tx store.Tx, f *fleetRec) error {
		if f.anywhere() {
			return api.NewInvalidRequestException("fleet %s is an ANYWHERE fleet: it has no fleet actions", f.id())
		}
		l, err := f.liveLocation(loc)
		if err != nil {
			return err
		}
		for _, a := range actions {
			has := slices.Contains(l.Stopped, a)
			switch {
			case stop && !has:
				l.Stopped = append(l.Stopped, a)
			case !stop && has:
				l.Stopped = slices.DeleteFunc(l.Stopped, func(x api.FleetAction) bool { return x == a })
			}
		}
		if len(l.Stopped) == 0 {
			l.Stopped = nil
		}
		if l.Location == f.HomeLocation {
			f.Attributes.StoppedActions = l.Stopped
		}
		return nil
	})
}

// CreateFleetLocations adds remote locations to an ACTIVE EC2 fleet (each
// NEW with one desired instance) or custom locations to an ANYWHERE fleet
// (ACTIVE at once).
func (s *Service) CreateFleetLocations(ctx context.Context, in *api.CreateFleetLocationsInput) (*api.CreateFleetLocationsOutput, error) {
	var added []api.LocationState
	f, err := s.updateFleet(ctx, api.ToString(in.FleetId), func(tx store.Tx, f *fleetRec) error {
		if f.status() != api.FleetStatusActive {
			return api.NewInvalidFleetStatusException("fleet %s is %s: locations can be added only to an ACTIVE fleet", f.id(), f.status())
		}
		added = nil
		for _, lc := range in.Locations {
			st, err := s.addLocation(ctx, tx, f, locationName(api.ToString(lc.Location)))
			if err != nil {
				return err
			}
			added = append(added, st)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return &api.CreateFleetLocationsOutput{FleetId: f.Attributes.FleetId, FleetArn: f.Attributes.FleetArn, LocationStates: added}, nil
}

// addLocation adds one location to a fleet.
func (s *Service) addLocation(ctx context.Context, tx store.Tx, f *fleetRec, name string) (api.LocationState, error) {
	now := s.now()
	if name == f.HomeLocation {
		return api.LocationState{}, api.NewInvalidRequestException("location %s is the fleet's home location", name)
	}
	if f.anywhere() {
		if !isCustomLocation(name) {
			return api.LocationState{}, api.NewInvalidRequestException("location %s is not a custom location", name)
		}
		if _, err := getLocation(ctx, tx, name); err != nil {
			return api.LocationState{}, notFoundLocation(err, name)
		}
	} else if err := s.checkRemoteLocation(f, name); err != nil {
		return api.LocationState{}, err
	}
	if l := f.location(name); l != nil && l.Status != api.FleetStatusTerminated {
		return api.LocationState{}, api.NewInvalidRequestException("fleet %s already has location %s", f.id(), name)
	}
	f.Locations = slices.DeleteFunc(f.Locations, func(l hosting.FleetLocation) bool { return l.Location == name })
	nl := newFleetLocation(name)
	if f.anywhere() {
		nl = hosting.FleetLocation{Location: name, Status: api.FleetStatusNew}
	}
	f.Locations = append(f.Locations, nl)
	if err := s.addEvent(ctx, tx, f.id(), api.EventCodeLocationStatePending, now, "Location %s of fleet %s was added", name, f.id()); err != nil {
		return api.LocationState{}, err
	}
	if f.anywhere() {
		if _, err := s.jumpLocation(ctx, tx, f, name, api.FleetStatusActive, now); err != nil {
			return api.LocationState{}, err
		}
	}
	l := f.location(name)
	return api.LocationState{Location: api.String(name), Status: l.Status}, nil
}

// DeleteFleetLocations removes remote locations: each goes DELETING, its
// instances are stopped, and it ends TERMINATED.
func (s *Service) DeleteFleetLocations(ctx context.Context, in *api.DeleteFleetLocationsInput) (*api.DeleteFleetLocationsOutput, error) {
	var states []api.LocationState
	f, err := s.updateFleet(ctx, api.ToString(in.FleetId), func(tx store.Tx, f *fleetRec) error {
		if err := notDeleting(f); err != nil {
			return err
		}
		states = nil
		for _, name := range in.Locations {
			name = locationName(name)
			if name == f.HomeLocation {
				return api.NewInvalidRequestException("location %s is the fleet's home location: delete the fleet instead", name)
			}
			l, err := f.liveLocation(name)
			if err != nil {
				return err
			}
			if _, err := s.moveLocation(ctx, tx, f, name, api.FleetStatusDeleting, s.now()); err != nil {
				return err
			}
			states = append(states, api.LocationState{Location: api.String(name), Status: l.Status})
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return &api.DeleteFleetLocationsOutput{FleetId: f.Attributes.FleetId, FleetArn: f.Attributes.FleetArn, LocationStates: states}, nil
}

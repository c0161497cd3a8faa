package fleets

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/hoistgg/hoist/internal/api"
	"github.com/hoistgg/hoist/internal/hosting"
	"github.com/hoistgg/hoist/internal/store"
)

// creationOrder is the order of a fleet location's creation states.
var creationOrder = []api.FleetStatus{
	api.FleetStatusNew, api.FleetStatusDownloading, api.FleetStatusValidating,
	api.FleetStatusBuilding, api.FleetStatusActivating, api.FleetStatusActive,
}

func creationIndex(st api.FleetStatus) int {
	for i, s := range creationOrder {
		if s == st {
			return i
		}
	}
	return -1
}

// creating reports whether st is a creation state (NEW to ACTIVATING).
func creating(st api.FleetStatus) bool {
	i := creationIndex(st)
	return i >= 0 && st != api.FleetStatusActive
}

// stepStatus is the status a creating location reaches when an instance
// starts a setup step.
func stepStatus(step Step) api.FleetStatus {
	switch step {
	case StepDownload, StepInstall:
		return api.FleetStatusDownloading
	case StepValidate:
		return api.FleetStatusValidating
	case StepBuild:
		return api.FleetStatusBuilding
	default:
		return api.FleetStatusActivating
	}
}

// path returns the statuses a location passes through to go from cur to
// target: every creation state in between when both are creation states
// (so that each transition is recorded), else just target. It is empty when
// target is not ahead of cur in the creation order, or equals cur.
func path(cur, target api.FleetStatus) []api.FleetStatus {
	if cur == target {
		return nil
	}
	ci, ti := creationIndex(cur), creationIndex(target)
	switch {
	case ci >= 0 && ti >= 0 && ti <= ci:
		return nil
	case ci >= 0 && ti >= 0:
		return append([]api.FleetStatus(nil), creationOrder[ci+1:ti+1]...)
	}
	return []api.FleetStatus{target}
}

// transitionEvent is the event code recording that a location entered
// status to: FLEET_STATE_* for the home location (the fleet's own status),
// LOCATION_STATE_* for a remote location.
func transitionEvent(home bool, to api.FleetStatus) api.EventCode {
	if home {
		switch to {
		case api.FleetStatusDownloading:
			return api.EventCodeFleetStateDownloading
		case api.FleetStatusValidating:
			return api.EventCodeFleetStateValidating
		case api.FleetStatusBuilding:
			return api.EventCodeFleetStateBuilding
		case api.FleetStatusActivating:
			return api.EventCodeFleetStateActivating
		case api.FleetStatusActive:
			return api.EventCodeFleetStateActive
		case api.FleetStatusError:
			return api.EventCodeFleetStateError
		case api.FleetStatusTerminated:
			return api.EventCodeFleetDeleted
		}
		return api.EventCodeGenericEvent // NEW, DELETING: GameLift has no code of their own
	}
	switch to {
	case api.FleetStatusNew:
		return api.EventCodeLocationStatePending
	case api.FleetStatusDownloading, api.FleetStatusValidating:
		return api.EventCodeLocationStateCreating
	case api.FleetStatusBuilding:
		return api.EventCodeLocationStateCreated
	case api.FleetStatusActivating:
		return api.EventCodeLocationStateActivating
	case api.FleetStatusActive:
		return api.EventCodeLocationStateActive
	case api.FleetStatusError:
		return api.EventCodeLocationStateError
	case api.FleetStatusDeleting:
		return api.EventCodeLocationStateDeleting
	case api.FleetStatusTerminated:
		return api.EventCodeLocationStateDeleted
	}
	return api.EventCodeGenericEvent
}

// moveLocation takes a fleet location to status target, recording an event
// for every status it passes through. The home location carries the fleet's
// own status with it. It reports whether anything changed.
func (s *Service) moveLocation(ctx context.Context, tx store.Tx, f *fleetRec, name string, target api.FleetStatus, now time.Time) (bool, error) {
	loc := f.location(name)
	if loc == nil {
		return false, nil
	}
	return s.stepLocation(ctx, tx, f, loc, path(loc.Status, target), now)
}

// jumpLocation takes a fleet location straight to status target (one
// transition, one event): Anywhere locations go from NEW to ACTIVE.
func (s *Service) jumpLocation(ctx context.Context, tx store.Tx, f *fleetRec, name string, target api.FleetStatus, now time.Time) (bool, error) {
	loc := f.location(name)
	if loc == nil || loc.Status == target {
		return false, nil
	}
	return s.stepLocation(ctx, tx, f, loc, []api.FleetStatus{target}, now)
}

// stepLocation moves a location through statuses, recording an event for
// each.
func (s *Service) stepLocation(ctx context.Context, tx store.Tx, f *fleetRec, loc *hosting.FleetLocation, steps []api.FleetStatus, now time.Time) (bool, error) {
	home := loc.Location == f.HomeLocation
	for _, to := range steps {
		from := loc.Status
		loc.Status = to
		var msg string
		if home {
			f.Attributes.Status = to
			msg = fmt.Sprintf("Fleet %s changed status from %s to %s", f.id(), from, to)
		} else {
			msg = fmt.Sprintf("Location %s of fleet %s changed status from %s to %s", loc.Location, f.id(), from, to)
		}
		if err := s.addEvent(ctx, tx, f.id(), transitionEvent(home, to), now, "%s", msg); err != nil {
			return false, err
		}
	}
	if len(steps) == 0 {
		return false, nil
	}
	if f.Own.Since == nil {
		f.Own.Since = map[string]time.Time{}
	}
	// The creation statuses share one clock (the activation timeout bounds
	// them together): it starts when the location leaves NEW.
	if _, ok := f.Own.Since[loc.Location]; !ok || !creating(loc.Status) || startedCreation(steps) {
		f.Own.Since[loc.Location] = now
	}
	f.Own.noteActivation(loc, steps, now)
	return true, nil
}

// noteActivation keeps what the activation rules need of a location being
// created: when it entered ACTIVATING, and its failed processes (forgotten
// when its creation begins or ends).
func (o *fleetOwn) noteActivation(loc *hosting.FleetLocation, steps []api.FleetStatus, now time.Time) {
	if !creating(loc.Status) || startedCreation(steps) {
		delete(o.ActivatingSince, loc.Location)
		delete(o.Failures, loc.Location)
	}
	if loc.Status == api.FleetStatusActivating && slices.Contains(steps, api.FleetStatusActivating) {
		if o.ActivatingSince == nil {
			o.ActivatingSince = map[string]time.Time{}
		}
		o.ActivatingSince[loc.Location] = now
	}
}

// startedCreation reports whether steps begin a location's creation (its
// first step leaves NEW, or ERROR for a retry).
func startedCreation(steps []api.FleetStatus) bool {
	return len(steps) > 0 && steps[0] == api.FleetStatusDownloading
}

// failLocation takes a fleet location that is being created to ERROR:
// first an event with the cause (code, message), then the status change.
// Locations past creation are left alone.
func (s *Service) failLocation(ctx context.Context, tx store.Tx, f *fleetRec, name string, code api.EventCode, now time.Time, format string, a ...any) error {
	loc := f.location(name)
	if loc == nil || !creating(loc.Status) {
		return nil
	}
	if err := s.addEvent(ctx, tx, f.id(), code, now, format, a...); err != nil {
		return err
	}
	_, err := s.moveLocation(ctx, tx, f, name, api.FleetStatusError, now)
	return err
}

// OnProcessReady is the hosting.ProcessReadyFunc sessions calls when a
// server process becomes ready: a fleet location still being created
// becomes ACTIVE (and with the home location, the fleet), and so do its
// PENDING instances that have a ready process, in the same transaction, so
// that DescribeFleetCapacity agrees with the status from that moment. It
// costs one read when there is nothing to do.
func (s *Service) OnProcessReady(ctx context.Context, tx store.Tx, fleetID, location string) error {
	f, err := getFleet(ctx, tx, fleetID)
	if err != nil {
		return ignoreNotFound(err)
	}
	loc := f.location(location)
	if loc == nil || !creating(loc.Status) {
		return nil
	}
	if _, err := s.moveLocation(ctx, tx, f, loc.Location, api.FleetStatusActive, s.now()); err != nil {
		return err
	}
	if !f.anywhere() {
		if err := s.activateReady(ctx, tx, f, loc.Location); err != nil {
			return err
		}
	}
	return putFleet(ctx, tx, f)
}

// activateReady makes the PENDING instances of a fleet location that have
// a ready process ACTIVE (what the reconciler's plan.Activate does on its
// next pass).
func (s *Service) activateReady(ctx context.Context, tx store.Tx, f *fleetRec, loc string) error {
	ready, err := readyComputes(ctx, tx, &f.Fleet)
	if err != nil {
		return err
	}
	comps, err := fleetComputes(ctx, tx, f.id(), loc)
	if err != nil {
		return err
	}
	for _, c := range comps {
		if c.Status != api.ComputeStatusPending || !ready[c.ComputeName] {
			continue
		}
		c.Status, c.InstanceStatus = api.ComputeStatusActive, api.InstanceStatusActive
		if err := putCompute(ctx, tx, c); err != nil {
			return err
		}
		s.clearBackoff(f.id(), loc) // harmless if the transaction is retried or fails
	}
	return nil
}

// locationStates returns the LocationState of every live location.
func locationStates(f *hosting.Fleet) []api.LocationState {
	out := make([]api.LocationState, 0, len(f.Locations))
	for _, l := range f.Locations {
		out = append(out, api.LocationState{Location: api.String(l.Location), Status: l.Status})
	}
	return out
}

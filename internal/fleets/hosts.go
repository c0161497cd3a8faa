package fleets

import (
	"context"
	"fmt"

	"github.com/hoistgg/hoist/internal/api"
	"github.com/hoistgg/hoist/internal/hosting"
	"github.com/hoistgg/hoist/internal/store"
)

// Placer chooses the host of each new instance of a managed fleet
// (internal/hosts implements it over the enrolled hosts). Without one,
// every instance runs on this replica's own provider, as before hosts.
type Placer interface {
	// PlaceInstance picks the host of a new instance, in the reconciler's
	// transaction tx, and records the choice there (so the next choice in
	// the same transaction sees it). A *NoCapacityError says that hosts
	// serve the location but none can take the instance now.
	PlaceInstance(ctx context.Context, tx store.Tx, req PlaceRequest) (Placement, error)
}

// PlaceRequest is a new instance to place.
type PlaceRequest struct {
	FleetID, InstanceID, Location string
	InstanceType                  api.EC2InstanceType
}

// Placement is where a new instance runs.
type Placement struct {
	// Host is the ID of the host that runs it (this replica's ID for the
	// in-process provider).
	Host string
	// IPAddress is the address of the instance, its game sessions and
	// player sessions (the host's); DNSName the host's own DNS name ("" if
	// it has none), which the instance's GENERATED certificate names.
	IPAddress string
	DNSName   string
	// Layout is where the instance keeps its files on its host.
	Layout InstanceLayout
}

// NoCapacityError: hosts serve the location, but none has room for the
// instance now (all full, lost, draining or disconnected).
type NoCapacityError struct {
	Location string
	// Reason says why, for the fleet event.
	Reason string
}

func (e *NoCapacityError) Error() string {
	return fmt.Sprintf("no host of location %s can take an instance: %s", e.Location, e.Reason)
}

// HostState is what the reconciler needs to know of an instance's host.
type HostState struct {
	// Lost, when not "", says why the instance is lost (its host was
	// declared lost, was removed, or no longer runs it).
	Lost string
	// Draining: its host drains; the instance takes no new game session,
	// is replaced elsewhere, and stops once it hosts none.
	Draining bool
}

// InstanceHosts is implemented by a provider whose instances may run on
// other hosts (internal/hosts): the reconciler asks it, in its
// transaction, about every instance not on this replica, so that any
// replica judges them from the store alone.
type InstanceHosts interface {
	InstanceHost(ctx context.Context, tx store.Tx, c *hosting.Compute) (HostState, error)
}

// HooksFor returns the Hooks of an instance, made from its reference
// alone: a provider reporting about an instance it did not get from
// StartInstance of this process (a host's agent, after Hoist restarted)
// reports through them.
func (s *Service) HooksFor(ref InstanceRef) Hooks {
	if s.cfg.WrapHooks != nil {
		return s.cfg.WrapHooks(ref, s.hooks(ref))
	}
	return s.hooks(ref)
}

// placeInstance returns where a new instance runs: the Placer's choice, or
// this replica's provider without one.
func (s *Service) placeInstance(ctx context.Context, tx store.Tx, f *fleetRec, id, loc string) (Placement, error) {
	if s.cfg.Placer != nil {
		return s.cfg.Placer.PlaceInstance(ctx, tx, PlaceRequest{FleetID: f.id(), InstanceID: id, Location: loc,
			InstanceType: f.Attributes.InstanceType})
	}
	return Placement{Host: s.cfg.ReplicaID, IPAddress: s.cfg.InstanceIP, Layout: s.cfg.Provider.Layout(f.id(), id)}, nil
}

// noCapacity records, once per episode, that a location could not get an
// instance: a FLEET_ACTIVATION_FAILED_NO_INSTANCES event (GameLift's code
// for a fleet that could not obtain instances). It reports whether the
// fleet record changed.
func (s *Service) noCapacity(ctx context.Context, tx store.Tx, f *fleetRec, nc *NoCapacityError) (bool, error) {
	if f.Own.NoCapacity[nc.Location] == nc.Reason {
		return false, nil
	}
	if f.Own.NoCapacity == nil {
		f.Own.NoCapacity = map[string]string{}
	}
	f.Own.NoCapacity[nc.Location] = nc.Reason
	return true, s.addEvent(ctx, tx, f.id(), api.EventCodeFleetActivationFailedNoInstances, s.now(),
		"Location %s of fleet %s gets no new instance: %s", nc.Location, f.id(), nc.Reason)
}

// hostStates fills in the host state of the computes on other hosts.
func (s *Service) hostStates(ctx context.Context, tx store.Tx, cs []computeView) error {
	ih, ok := s.cfg.Provider.(InstanceHosts)
	if !ok {
		return nil
	}
	for i := range cs {
		c := &cs[i]
		if c.Host == "" || c.Host == s.cfg.ReplicaID {
			continue
		}
		st, err := ih.InstanceHost(ctx, tx, &c.Compute)
		if err != nil {
			return err
		}
		c.Lost, c.HostDraining = st.Lost, st.Draining
	}
	return nil
}

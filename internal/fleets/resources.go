package fleets

import (
	"context"
	"errors"

	"github.com/hoistgg/hoist/internal/api"
	"github.com/hoistgg/hoist/internal/store"
)

// FleetExists reports whether the fleet with this ID exists and is not
// TERMINATED, for the tagging operations (TagResource and friends on a
// fleet ARN).
func (s *Service) FleetExists(ctx context.Context, tx store.Tx, fleetID string) (bool, error) {
	f, err := getFleet(ctx, tx, fleetIDOf(fleetID))
	if errors.Is(err, store.ErrNotFound) {
		return false, nil
	}
	return err == nil && f.status() != api.FleetStatusTerminated, err
}

// LocationExists reports whether the custom location with this name exists,
// for the tagging operations on a location ARN.
func (s *Service) LocationExists(ctx context.Context, tx store.Tx, name string) (bool, error) {
	_, err := getLocation(ctx, tx, locationName(name))
	if errors.Is(err, store.ErrNotFound) {
		return false, nil
	}
	return err == nil, err
}

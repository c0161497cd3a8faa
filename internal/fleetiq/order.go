package fleetiq

import (
	"slices"

	"github.com/hoistgg/hoist/internal/api"
)

// This file states, as pure functions, where ClaimGameServer places a claim.
// claim.go follows the same order through the store's indexes (instance Key
// "<status>/1" by Rank descending, then game server Key "A/<instance>" by
// Rank ascending); TestIndexFollowsOrder checks that the two agree.

// claimStatuses returns the instance statuses a claim may use, in the order
// they are tried. Without a filter only ACTIVE instances are used; a filter
// must contain ACTIVE and may add DRAINING, which is tried after ACTIVE.
// SPOT_TERMINATING instances are never used.
func claimStatuses(filter *api.ClaimFilterOption) ([]api.GameServerInstanceStatus, error) {
	if filter == nil || len(filter.InstanceStatuses) == 0 {
		return []api.GameServerInstanceStatus{api.GameServerInstanceStatusActive}, nil
	}
	if !slices.Contains(filter.InstanceStatuses, api.FilterInstanceStatusActive) {
		return nil, api.NewInvalidRequestException("FilterOption.InstanceStatuses must contain ACTIVE")
	}
	out := []api.GameServerInstanceStatus{api.GameServerInstanceStatusActive}
	if slices.Contains(filter.InstanceStatuses, api.FilterInstanceStatusDraining) {
		out = append(out, api.GameServerInstanceStatusDraining)
	}
	return out, nil
}

// candidate is what placement knows of an instance.
type candidate struct {
	ID        string
	Status    api.GameServerInstanceStatus
	Available int
	Busy      int
}

// instanceBefore reports whether a claim prefers instance a to b, given the
// statuses it may use (both must be usable):
//  1. status, in the order of statuses (ACTIVE before DRAINING);
//  2. more busy (claimed or utilized) game servers first, to pack game
//     sessions onto few instances and leave others empty for scale-in;
//  3. instance ID ascending (byte-wise).
func instanceBefore(a, b candidate, statuses []api.GameServerInstanceStatus) bool {
	if ia, ib := slices.Index(statuses, a.Status), slices.Index(statuses, b.Status); ia != ib {
		return ia < ib
	}
	if a.Busy != b.Busy {
		return a.Busy > b.Busy
	}
	return a.ID < b.ID
}

// pickInstance returns the instance a claim takes a game server from: the
// first, in instanceBefore's order, of those with an available game server
// and a usable status.
func pickInstance(cands []candidate, statuses []api.GameServerInstanceStatus) (candidate, bool) {
	var best candidate
	found := false
	for _, c := range cands {
		if c.Available <= 0 || !slices.Contains(statuses, c.Status) {
			continue
		}
		if !found || instanceBefore(c, best, statuses) {
			best, found = c, true
		}
	}
	return best, found
}

// serverBefore reports whether a claim prefers game server a to b on the
// same instance: the earliest registered first, then game server ID
// ascending.
func serverBefore(a, b *serverRec) bool {
	if a.Registered != b.Registered {
		return a.Registered < b.Registered
	}
	return a.ID < b.ID
}

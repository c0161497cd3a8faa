package fleetiq

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/hoistgg/hoist/internal/api"
	"github.com/hoistgg/hoist/internal/store"
)

// ClaimGameServer claims an available game server for 60 seconds (the
// order is stated as pure functions in order_test.go), or the game server GameServerId names. A claim
// that finds nothing available first releases the group's expired claims,
// then answers OutOfCapacityException. It runs as a store Claim: claims
// at once (on PostgreSQL) take different instances' game servers, each
// the first in the order that no other claim is taking, rather than all
// contending for the first.
func (s *Service) ClaimGameServer(ctx context.Context, in *api.ClaimGameServerInput) (*api.ClaimGameServerOutput, error) {
	statuses, err := claimStatuses(in.FilterOption)
	if err != nil {
		return nil, err
	}
	now := s.now()
	nameOrARN := api.ToString(in.GameServerGroupName)
	var g *serverRec
	for attempt := 0; ; attempt++ {
		err = s.cfg.Store.Claim(ctx, func(tx store.Tx) error {
			var err error
			if in.GameServerId != nil {
				g, err = s.claimOne(ctx, tx, nameOrARN, *in.GameServerId, statuses, in.GameServerData, now)
			} else {
				g, err = s.claimAny(ctx, tx, nameOrARN, statuses, in.GameServerData, now)
			}
			return err
		})
		if !errors.Is(err, errBusy) || attempt == busyAttempts {
			break
		}
		if err := busyPause(ctx, attempt); err != nil {
			return nil, err
		}
	}
	if errors.Is(err, errBusy) {
		g, err = nil, nil // what is available is still being taken: out of capacity
	}
	if err != nil {
		return nil, err
	}
	if g == nil {
		return nil, api.NewOutOfCapacityException("Game server group %s has no available game server to claim", nameOrARN)
	}
	s.known.note(g)
	return &api.ClaimGameServerOutput{GameServer: s.serverOut(g, now)}, nil
}

// claimAny claims the best available game server of a group. It returns nil
// (and no error, so that released claims are kept) when there is none.
func (s *Service) claimAny(ctx context.Context, tx store.Tx, nameOrARN string, statuses []api.GameServerInstanceStatus, data *string, now time.Time) (*serverRec, error) {
	name := groupName(nameOrARN)
	g, inst, err := place(ctx, tx, name, statuses)
	if err != nil || g != nil {
		if g != nil {
			err = takeClaim(ctx, tx, g, inst, false, data, now)
		}
		return g, err
	}
	// Nothing available: say why if the group is missing or going away,
	// else release its expired claims and look once more.
	_, st, err := s.findGroup(ctx, tx, nameOrARN, now)
	if err != nil {
		return nil, err
	}
	if err := checkClaimable(nameOrARN, st); err != nil {
		return nil, err
	}
	// (Passing over the claims other transactions hold: an update holding
	// one may wait for an instance this claim holds.)
	q := store.Query{Kind: kindServer, Parent: name, HasParent: true, Key: keyClaimed, HasKey: true, SkipHeld: true}
	released, err := releaseExpired(ctx, tx, q, now, memberBatch)
	if err != nil || released == 0 {
		return nil, err
	}
	if g, inst, err = place(ctx, tx, name, statuses); err != nil || g == nil {
		return nil, err
	}
	return g, takeClaim(ctx, tx, g, inst, false, data, now)
}

// checkClaimable refuses claims in a group that is being deleted.
func checkClaimable(nameOrARN string, st groupState) error {
	switch {
	case st.status == statusDeleted:
		return api.NewNotFoundException("Game server group %s not found (it was deleted)", nameOrARN)
	case !st.live():
		return api.NewConflictException("Game server group %s is being deleted (status %s)", nameOrARN, st.status)
	}
	return nil
}

// errBusy: the instances with an available game server are all held by
// other transactions at the moment (on PostgreSQL, in a store Claim); the
// claim runs again, in a new transaction, after a short pause.
var errBusy = errors.New("fleetiq: every instance with an available game server is being claimed from")

// busyAttempts bounds how many times a claim runs again for errBusy.
const busyAttempts = 50

// busyPause waits before the claim's next attempt: a random pause below
// min(5 ms, 100 µs << attempt), or until ctx ends.
func busyPause(ctx context.Context, attempt int) error {
	d := min(5*time.Millisecond, 100*time.Microsecond<<min(attempt, 8))
	t := time.NewTimer(rand.N(d) + time.Microsecond)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// place finds the game server a claim takes, in the order order_test.go states: for each
// usable status, the busiest instance with an available game server, then
// its oldest available game server: one store.FirstWithChild, on
// PostgreSQL one statement that reads the instances in order (one row
// each) until one has an available game server. In a store Claim, both
// pass over the records other transactions hold: an instance another
// claim is taking from gives way to the next, as does one whose
// available game servers are all being changed. When that leaves nothing
// while some instance counts available game servers, it returns errBusy:
// the claim runs again once the others are done. (It does not wait for a
// held instance instead: a claim holding one instance while waiting for
// another could deadlock with a claim doing the opposite. Nor for a game
// server: an update holds its game server, then its instance.)
func place(ctx context.Context, tx store.Tx, group string, statuses []api.GameServerInstanceStatus) (*serverRec, *instanceRec, error) {
	for _, st := range statuses {
		instRec, srvRec, found, err := store.FirstWithChild(ctx, tx, instanceQuery(group, st), serverQuery(group), len(instanceID(group, "")))
		if err != nil {
			return nil, nil, err
		}
		if !found {
			continue
		}
		inst, err := decode[instanceRec](instRec)
		if err != nil {
			return nil, nil, err
		}
		g, err := decode[serverRec](srvRec)
		return g, inst, err
	}
	for _, st := range statuses {
		n, err := tx.Count(ctx, store.Query{Kind: kindInstance, Parent: group, HasParent: true, Key: instanceKey(st, true), HasKey: true})
		if err != nil || n > 0 {
			if err == nil {
				err = errBusy
			}
			return nil, nil, err
		}
	}
	return nil, nil, nil
}

// instanceQuery lists a group's instances of one status that have an
// available game server, the busiest first (ties by instance ID), passing
// over those held: where a claim looks first. An instance's Rank is minus
// its busy count, so that this order is Rank ascending, the order of the
// store's index: PostgreSQL reads the instances in order and stops at the
// first not held, where Rank descending (ties by ID ascending, an order no
// index gives) read and sorted them all.
func instanceQuery(group string, st api.GameServerInstanceStatus) store.Query {
	return store.Query{Kind: kindInstance, Parent: group, HasParent: true,
		Key: instanceKey(st, true), HasKey: true, Order: store.OrderRankAsc, Limit: 1, SkipHeld: true}
}

// serverQuery is the child query of instanceQuery in a claim: an
// instance's available game servers (Key availableKey(instance ID), the
// instance ID the end of its record's ID: store.FirstWithChild's idFrom
// is len(instanceID(group, ""))), the oldest first, passing over those
// held.
func serverQuery(group string) store.Query {
	return store.Query{Kind: kindServer, Parent: group, HasParent: true,
		Key: availableKey(""), HasKey: true, Order: store.OrderRankAsc, SkipHeld: true}
}

// takeClaim claims g (which was busy as stored if wasBusy) on inst at now.
func takeClaim(ctx context.Context, tx store.Tx, g *serverRec, inst *instanceRec, wasBusy bool, data *string, now time.Time) error {
	g.Claimed, g.LastClaim = true, ms(now)
	if data != nil {
		g.Data = data
	}
	if err := putServer(ctx, tx, g); err != nil {
		return err
	}
	inst.count(wasBusy, true)
	return putInstance(ctx, tx, inst)
}

// claimOne claims the game server id, reading it with its instance in one
// round trip when this replica knows the instance (readWithInstance). It
// is a ConflictException when the
// game server is UTILIZED, already CLAIMED, or on an instance whose status
// the filter does not allow (a DRAINING instance without DRAINING in the
// filter; a SPOT_TERMINATING instance always).
func (s *Service) claimOne(ctx context.Context, tx store.Tx, nameOrARN, id string, statuses []api.GameServerInstanceStatus, data *string, now time.Time) (*serverRec, error) {
	g, inst, err := s.readWithInstance(ctx, tx, nameOrARN, id)
	if err != nil {
		return nil, err
	}
	wasBusy := g.busy()
	g.settle(now)
	switch {
	case g.Utilized:
		return nil, api.NewConflictException("Game server %s is UTILIZED", id)
	case g.Claimed:
		return nil, api.NewConflictException("Game server %s is already CLAIMED", id)
	}
	if inst == nil { // not known to this replica, or not the one it knew
		if inst, err = loadInstance(ctx, tx, g.Group, g.Instance); err != nil {
			return nil, err
		}
	}
	if inst == nil {
		return nil, fmt.Errorf("fleetiq: instance %s of game server %s missing", g.Instance, id)
	}
	if !slices.Contains(statuses, inst.Status) {
		return nil, api.NewConflictException("Game server %s runs on instance %s, which is %s; FilterOption.InstanceStatuses does not allow claiming there", id, inst.ID, inst.Status)
	}
	return g, takeClaim(ctx, tx, g, inst, wasBusy, data, now)
}

// expiredClaims returns q (whose Key must be keyClaimed) narrowed to claims
// that ended by now, at most limit of them.
func expiredClaims(q store.Query, now time.Time, limit int) store.Query {
	q.Order, q.RankMax, q.HasRankMax, q.Limit = store.OrderRankAsc, ms(now), true, limit
	return q
}

// releaseExpired ends the expired claims q selects (at most limit of them;
// q's Key must be keyClaimed) and returns how many it ended.
func releaseExpired(ctx context.Context, tx store.Tx, q store.Query, now time.Time, limit int) (int, error) {
	recs, _, err := tx.List(ctx, expiredClaims(q, now, limit))
	if err != nil {
		return 0, err
	}
	return releaseClaims(ctx, tx, recs, now)
}

// releaseClaims ends the claims of the listed game server records that
// ended by now and returns how many it ended.
func releaseClaims(ctx context.Context, tx store.Tx, recs []store.Record, now time.Time) (int, error) {
	n := 0
	for _, rec := range recs {
		g, err := decode[serverRec](rec)
		if err != nil {
			return n, err
		}
		wasBusy := g.busy()
		if !g.settle(now) {
			continue
		}
		if err := putServer(ctx, tx, g); err != nil {
			return n, err
		}
		if err := recount(ctx, tx, g, wasBusy); err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}

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

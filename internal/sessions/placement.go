package sessions

import (
	"context"
	"errors"

	"github.com/hoistgg/hoist/internal/api"
	"github.com/hoistgg/hoist/internal/hosting"
	"github.com/hoistgg/hoist/internal/store"
)

// placementPage is how many idle processes placement reads at a time when
// MaxConcurrentGameSessionActivations may rule some out (else it reads one).
const placementPage = 16

// ErrNeedsUpdate is PlaceTx's answer, in a Claim (PlaceRequest.Claimed),
// for a fleet whose MaxConcurrentGameSessionActivations limits its
// computes: counting a compute's ACTIVATING game sessions needs an
// Update's isolation. The caller places again in an Update.
var ErrNeedsUpdate = errors.New("sessions: a fleet with MaxConcurrentGameSessionActivations is placed on in an Update, not a Claim")

// placeTx finds the server process a new game session goes to: an idle,
// ready, connected process of the fleet location whose compute is below
// MaxConcurrentGameSessionActivations and not on a draining host. Candidates come in Rank order (the
// one whose last health report is oldest first): one index seek, however
// many processes the fleet has. In a Claim (claimed), the processes other
// Claims hold (those they are placing on) are passed over, so that
// placements at once take different processes, and the computes are read
// unheld (store.Unheld).
func (s *Service) placeTx(ctx context.Context, tx store.Tx, f *hosting.Fleet, location string, claimed bool) (*hosting.Process, *hosting.Compute, error) {
	fid := api.ToString(f.Attributes.FleetId)
	limit := int(api.ToInt32(f.RuntimeConfiguration.MaxConcurrentGameSessionActivations))
	if limit > 0 && claimed {
		return nil, nil, ErrNeedsUpdate
	}
	var activating map[string]int
	if limit > 0 {
		var err error
		if activating, err = activatingPerCompute(ctx, tx, fid); err != nil {
			return nil, nil, err
		}
	}
	q := store.Query{Kind: hosting.KindProcess, Parent: fid, HasParent: true,
		Key: hosting.ProcessKey(location, hosting.ProcessActive, true), HasKey: true,
		Order: store.OrderRankAsc, Limit: 1, SkipHeld: claimed}
	if limit > 0 {
		q.Limit = placementPage
	}
	proc, comp, throttled, err := s.findProcess(ctx, tx, q, activating, limit)
	if proc == nil && err == nil && claimed {
		// None free but perhaps some held: wait for their holders
		// (store.Store.Claim) before concluding there is none.
		q.SkipHeld = false
		proc, comp, throttled, err = s.findProcess(ctx, tx, q, activating, limit)
	}
	switch {
	case err != nil || proc != nil:
		return proc, comp, err
	case throttled:
		return nil, nil, api.NewFleetCapacityExceededException(
			"fleet %s has no server process free to host a game session in location %s: every instance with an idle process already activates %d game sessions (MaxConcurrentGameSessionActivations)",
			fid, location, limit)
	}
	return nil, nil, api.NewFleetCapacityExceededException(
		"fleet %s has no server process free to host a game session in location %s", fid, location)
}

// findProcess pages through q's idle processes for the first that may
// take a game session (nil if none) and its compute, and reports whether
// one was passed over for its compute's activations (limit).
func (s *Service) findProcess(ctx context.Context, tx store.Tx, q store.Query, activating map[string]int, limit int) (*hosting.Process, *hosting.Compute, bool, error) {
	fid := q.Parent
	throttled := false
	for {
		recs, next, err := tx.List(ctx, q)
		if err != nil {
			return nil, nil, false, err
		}
		cands := make([]*hosting.Process, 0, len(recs))
		for _, rec := range recs {
			p := new(hosting.Process)
			if err := store.Decode(rec, p); err != nil {
				return nil, nil, false, err
			}
			cands = append(cands, p)
		}
		for {
			i, blocked := pickProcess(cands, activating, limit)
			throttled = throttled || blocked
			if i < 0 {
				break
			}
			c, err := getCompute(ctx, store.Unheld(tx), fid, cands[i].ComputeName)
			if err == nil && !c.Draining {
				return cands[i], c, throttled, nil
			}
			if err != nil && !errors.Is(err, store.ErrNotFound) {
				return nil, nil, false, err
			}
			cands[i] = nil // its compute is gone, or its host drains: not a candidate
		}
		if next == "" {
			return nil, nil, throttled, nil
		}
		q.After = next
	}
}

// pickProcess returns the index of the first candidate that may take a game
// session (-1 if none) and whether a candidate was passed over because its
// compute reached limit ACTIVATING game sessions (limit 0: no limit). nil
// entries are skipped.
func pickProcess(cands []*hosting.Process, activating map[string]int, limit int) (int, bool) {
	blocked := false
	for i, p := range cands {
		if p == nil || !placeable(p) {
			continue
		}
		if limit > 0 && activating[p.ComputeName] >= limit {
			blocked = true
			continue
		}
		return i, blocked
	}
	return -1, blocked
}

// activatingPerCompute counts the fleet's ACTIVATING game sessions by compute.
func activatingPerCompute(ctx context.Context, tx store.Tx, fleetID string) (map[string]int, error) {
	out := make(map[string]int)
	q := store.Query{Kind: hosting.KindGameSession, Parent: fleetID, HasParent: true,
		Key: string(api.GameSessionStatusActivating), HasKey: true}
	recs, _, err := tx.List(ctx, q)
	if err != nil {
		return nil, err
	}
	for _, rec := range recs {
		gs := new(hosting.GameSession)
		if err := store.Decode(rec, gs); err != nil {
			return nil, err
		}
		out[api.ToString(gs.Session.ComputeName)]++
	}
	return out, nil
}

package placement

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/hoistgg/hoist/internal/api"
	"github.com/hoistgg/hoist/internal/arn"
	"github.com/hoistgg/hoist/internal/hosting"
	"github.com/hoistgg/hoist/internal/sessions"
	"github.com/hoistgg/hoist/internal/store"
)

// pendingPage is how many PENDING placements one read lists.
const pendingPage = 512

// workers is how many placements one pass attempts at once: their
// transactions are serialized by the store, and their commits share the
// store's group commit (one sync for many placements).
const workers = 16

// turn is the state of one pass of the loop: the queues' shards held,
// each queue's capacity snapshot, read once and kept current as
// placements consume it. mu guards the snapshots (workers share them).
type turn struct {
	held   *store.Held
	mu     sync.Mutex
	queues map[string]*queueState
}

type queueState struct {
	q    *api.GameSessionQueue // nil: the queue is gone
	snap []Destination
}

// Process makes one pass over the PENDING placements, handed to the
// workers oldest first: an attempt in flight is followed (its game session
// ACTIVE: FULFILLED; ended without activating: placed again; ended by
// TerminateGameSession: FAILED); a placement past its deadline ends
// TIMED_OUT; one without an attempt goes to the first candidate Choose
// gives that still has a free process; one without a candidate stays
// PENDING for the next pass. Tests call it directly with a fake clock: it
// handles every queue, unfenced; Run's passes (processHeld) handle the
// queues whose shards the replica holds.
func (s *Service) Process(ctx context.Context) error {
	return s.processHeld(ctx, nil)
}

// processHeld is Process over the placements of the queues held (nil:
// every queue, unfenced), each written under its queue's grant.
func (s *Service) processHeld(ctx context.Context, held *store.Held) error {
	var pending []*placementRecord
	q := store.Query{Kind: KindPlacement, Key: string(api.GameSessionPlacementStatePending), HasKey: true,
		Order: store.OrderCreated, Limit: pendingPage}
	err := s.cfg.Store.View(ctx, func(tx store.Tx) error {
		pending = pending[:0]
		q.After = ""
		for {
			recs, next, err := tx.List(ctx, q)
			if err != nil {
				return err
			}
			for _, rec := range recs {
				if held != nil && !held.Has(rec.Parent) {
					continue // another replica's queue
				}
				p := new(placementRecord)
				if err := store.Decode(rec, p); err != nil {
					return err
				}
				pending = append(pending, p)
			}
			if next == "" {
				return nil
			}
			q.After = next
		}
	})
	if err != nil {
		return err
	}
	t := &turn{held: held, queues: map[string]*queueState{}}
	var (
		mu   sync.Mutex
		errs []error
		wg   sync.WaitGroup
		next = make(chan *placementRecord)
	)
	for range min(workers, len(pending)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for p := range next {
				if err := s.attempt(ctx, t, p); err != nil && ctx.Err() == nil {
					mu.Lock()
					errs = append(errs, fmt.Errorf("placement %s: %w", p.id(), err))
					mu.Unlock()
				}
			}
		}()
	}
	for _, p := range pending { // oldest first
		if ctx.Err() != nil {
			break
		}
		next <- p
	}
	close(next)
	wg.Wait()
	return errors.Join(errs...)
}

// queueState returns the queue and its capacity snapshot for this turn
// (t.mu held).
func (s *Service) queueState(ctx context.Context, t *turn, name string) (*queueState, error) {
	if qs, ok := t.queues[name]; ok {
		return qs, nil
	}
	qs := new(queueState)
	err := s.cfg.Store.View(ctx, func(tx store.Tx) error {
		q, err := getQueue(ctx, tx, name)
		var nf *api.NotFoundException
		if errors.As(err, &nf) {
			return nil
		}
		if err != nil {
			return err
		}
		qs.q = q
		qs.snap, err = s.snapshot(ctx, tx, q)
		return err
	})
	if err != nil {
		return nil, err
	}
	t.queues[name] = qs
	return qs, nil
}

// snapshot reads the capacity of a queue's destinations. A destination
// whose fleet or alias is gone, whose alias is TERMINAL, or whose fleet
// an earlier destination already names, is left out.
func (s *Service) snapshot(ctx context.Context, tx store.Tx, q *api.GameSessionQueue) ([]Destination, error) {
	var out []Destination
	seen := map[string]bool{}
	for _, d := range q.Destinations {
		typ, id, err := destination(api.ToString(d.DestinationArn))
		if err != nil {
			continue
		}
		if typ == arn.TypeAlias {
			if s.cfg.ResolveAlias == nil {
				continue
			}
			if id, err = s.cfg.ResolveAlias(ctx, tx, id); err != nil {
				var ae api.Error
				if errors.As(err, &ae) {
					continue // unknown or TERMINAL alias: no destination
				}
				return nil, err
			}
		}
		if seen[id] {
			continue
		}
		seen[id] = true
		f := new(hosting.Fleet)
		if _, err := store.GetJSON(ctx, tx, hosting.KindFleet, id, f); err != nil {
			if errors.Is(err, store.ErrNotFound) {
				continue
			}
			return nil, err
		}
		if f.Attributes.Status == api.FleetStatusTerminated {
			continue
		}
		dest := Destination{FleetID: id}
		cost := s.cost(f)
		for _, l := range f.Locations {
			loc := Location{Name: l.Location, Cost: cost,
				Active: f.Attributes.Status == api.FleetStatusActive && (l.Status == "" || l.Status == api.FleetStatusActive)}
			if loc.Active {
				n, err := tx.Count(ctx, store.Query{Kind: hosting.KindProcess, Parent: id, HasParent: true,
					Key: hosting.ProcessKey(l.Location, hosting.ProcessActive, true), HasKey: true})
				if err != nil {
					return nil, err
				}
				loc.Idle = n
			}
			dest.Locations = append(dest.Locations, loc)
		}
		out = append(out, dest)
	}
	return out, nil
}

// cost is the configured hourly price of an instance of fleet f.
func (s *Service) cost(f *hosting.Fleet) float64 {
	it := string(f.Attributes.InstanceType)
	if v, ok := s.cfg.Costs[it+"/"+string(f.Attributes.FleetType)]; ok {
		return v
	}
	return s.cfg.Costs[it]
}

// grant returns the grant of a queue's shard in this pass (no term:
// Process, unfenced).
func (t *turn) grant(queue string) store.Grant {
	if t.held == nil {
		return store.Grant{}
	}
	g, _ := t.held.Grant(queue)
	return g
}

// update runs fn in a transaction of the sessions store fenced by g (a
// plain one when g has no term).
func (s *Service) update(ctx context.Context, g store.Grant, fn func(tx store.Tx) error) error {
	if g.Term == 0 {
		return s.cfg.Sessions.Update(ctx, fn)
	}
	return s.cfg.Sessions.UpdateFenced(ctx, g, fn)
}

// attempt follows one pending placement's attempt in flight (follow) and,
// when it has none (any more), places a game session for it or times it
// out, fenced by its queue's grant.
func (s *Service) attempt(ctx context.Context, t *turn, p *placementRecord) error {
	g := t.grant(p.queue())
	if p.Attempt != "" {
		again, err := s.follow(ctx, g, p)
		if err != nil || again == nil {
			return err
		}
		p = again
	}
	t.mu.Lock()
	qs, err := s.queueState(ctx, t, p.queue())
	if err != nil {
		t.mu.Unlock()
		return err
	}
	now := s.now()
	if !now.Before(p.Deadline) || qs.q == nil {
		t.mu.Unlock()
		return s.expire(ctx, g, qs.q, p)
	}
	req := Request{Queue: qs.q, Latencies: p.Placement.PlayerLatencies, Override: p.Placement.PriorityConfigurationOverride,
		Fallback: p.Fallback, Failed: p.Failed, Started: p.Placement.StartTime.Time, Now: now}
	cands := Choose(req, qs.snap)
	if len(cands) == 0 && s.fallsBack(p) {
		req.Fallback = true
		cands = Choose(req, qs.snap)
	}
	t.mu.Unlock()
	if len(cands) == 0 {
		if req.Fallback != p.Fallback {
			return s.markFallback(ctx, g, p)
		}
		return nil
	}
	placed, used, full, err := s.place(ctx, g, qs, p, cands, req.Fallback)
	if err != nil {
		return err
	}
	t.mu.Lock()
	for _, l := range full {
		l.Idle = 0 // full (or not ACTIVE) after all, for the rest of this turn
	}
	if used != nil && used.Idle > 0 {
		used.Idle--
	}
	t.mu.Unlock()
	if placed != nil {
		s.cfg.Sessions.StartPlaced(ctx, placed)
	}
	return nil
}

// expire ends a pending placement past its deadline TIMED_OUT, or FAILED
// when its queue is gone (q nil).
func (s *Service) expire(ctx context.Context, g store.Grant, q *api.GameSessionQueue, p *placementRecord) error {
	status := api.GameSessionPlacementStateTimedOut
	if q == nil {
		status = api.GameSessionPlacementStateFailed
	}
	return store.UpdateIn(ctx, s.cfg.Store, g, func(tx store.Tx) error {
		cur, err := getPlacement(ctx, tx, p.id())
		if err != nil || cur.Placement.Status != api.GameSessionPlacementStatePending {
			return err
		}
		return s.finishTx(ctx, tx, q, cur, status, nil)
	})
}

// place tries the candidates in order in one transaction of the sessions
// store: the first whose location has a free process gets a new game
// session, the placement's next attempt (it stays PENDING until that game
// session is ACTIVE). It returns the placed game session (nil if none),
// the snapshot entry it used and those found full. When every candidate
// of an override's single pass failed, the placement falls back
// (DEFAULT_AFTER_SINGLE_PASS). The transaction is a Claim (store.Claim):
// it holds the placement and the process it takes, and passes over the
// processes the pass's other attempts hold, so that attempts at once take
// different processes instead of conflicting over the first idle one; a
// destination fleet that limits its activations is placed on in an
// Update (sessions.ErrNeedsUpdate).
func (s *Service) place(ctx context.Context, g store.Grant, qs *queueState, p *placementRecord, cands []Candidate, fallback bool) (placed *sessions.Placed, used *Location, full []*Location, err error) {
	try := func(claimed bool) func(tx store.Tx) error {
		return func(tx store.Tx) error {
			var err error
			placed, used, full, err = s.placeTx(ctx, tx, qs, p, cands, fallback, claimed)
			return err
		}
	}
	err = s.cfg.Sessions.ClaimIn(ctx, g, try(true))
	if errors.Is(err, sessions.ErrNeedsUpdate) {
		err = s.update(ctx, g, try(false))
	}
	return placed, used, full, err
}

// placeTx is place's transaction (claimed: a Claim's).
func (s *Service) placeTx(ctx context.Context, tx store.Tx, qs *queueState, p *placementRecord, cands []Candidate, fallback, claimed bool) (placed *sessions.Placed, used *Location, full []*Location, err error) {
	// The placement, the first candidate's fleet and, for a first attempt
	// (whose game session's ID ends in the placement's), whether that ID
	// is taken, in one round trip.
	refs := []store.Ref{{Kind: KindPlacement, ID: p.id()}}
	var sessionRefs []store.Ref
	if len(cands) > 0 {
		refs = append(refs, sessions.FleetRef(cands[0].FleetID))
		if p.Attempts == 0 {
			sessionRefs = s.cfg.Sessions.GameSessionRefs(cands[0].FleetID, cands[0].Location, p.id())
			refs = append(refs, sessionRefs...)
		}
	}
	got, err := store.GetRefs(ctx, tx, refs)
	if err != nil {
		return nil, nil, nil, err
	}
	cur, err := placementFound(p.id(), got[0])
	if err != nil || cur.Placement.Status != api.GameSessionPlacementStatePending || cur.Attempt != "" {
		return nil, nil, nil, err
	}
	was := cur.Fallback
	cur.Fallback = fallback
	token := cur.id() // the first game session's ARN ends in the placement ID
	if cur.Attempts > 0 {
		token = s.cfg.NewID()
	}
	for i, c := range cands {
		req := sessions.PlaceRequest{FleetID: c.FleetID, Location: c.Location,
			Token: token, PlacementID: cur.id(), QueueName: cur.queue(),
			Name: cur.Placement.GameSessionName, GameSessionData: cur.Placement.GameSessionData,
			MaximumPlayerSessionCount: api.ToInt32(cur.Placement.MaximumPlayerSessionCount),
			GameProperties:            cur.Placement.GameProperties, MatchmakerData: cur.Placement.MatchmakerData,
			Claimed: claimed}
		if i == 0 {
			req.Fleet = &got[1] // read with the placement
			if token == p.id() && sessionRefs != nil {
				req.Sessions = make(map[string]bool, len(sessionRefs))
				for j, r := range sessionRefs {
					req.Sessions[r.ID] = got[2+j].Found
				}
			}
		}
		pl, err := s.cfg.Sessions.PlaceTx(ctx, tx, req)
		loc := qs.find(c.FleetID, c.Location)
		if err == nil {
			cur.startAttempt(pl)
			return pl, loc, full, putPlacement(ctx, tx, cur, false)
		}
		var ae api.Error
		if !errors.As(err, &ae) {
			return nil, nil, nil, err
		}
		if loc != nil {
			full = append(full, loc)
		}
	}
	if s.fallsBack(cur) {
		cur.Fallback = true // the override's pass failed
	}
	if cur.Fallback != was {
		return nil, nil, full, putPlacement(ctx, tx, cur, false)
	}
	return nil, nil, full, nil
}

// fallsBack reports whether p's override gives way to the queue's
// configuration once its single pass failed.
func (s *Service) fallsBack(p *placementRecord) bool {
	o := p.Placement.PriorityConfigurationOverride
	return !p.Fallback && o != nil && len(o.LocationOrder) > 0 &&
		o.PlacementFallbackStrategy != api.PlacementFallbackStrategyNone
}

// markFallback records that p's override pass failed.
func (s *Service) markFallback(ctx context.Context, g store.Grant, p *placementRecord) error {
	return store.UpdateIn(ctx, s.cfg.Store, g, func(tx store.Tx) error {
		cur, err := getPlacement(ctx, tx, p.id())
		if err != nil || cur.Placement.Status != api.GameSessionPlacementStatePending {
			return err
		}
		cur.Fallback = true
		return putPlacement(ctx, tx, cur, false)
	})
}

// find returns the snapshot entry of a fleet location.
func (qs *queueState) find(fleetID, loc string) *Location {
	for i := range qs.snap {
		if qs.snap[i].FleetID != fleetID {
			continue
		}
		for j := range qs.snap[i].Locations {
			if qs.snap[i].Locations[j].Name == loc {
				return &qs.snap[i].Locations[j]
			}
		}
	}
	return nil
}

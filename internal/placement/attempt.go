package placement

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/hoistgg/hoist/internal/api"
	"github.com/hoistgg/hoist/internal/hosting"
	"github.com/hoistgg/hoist/internal/sessions"
	"github.com/hoistgg/hoist/internal/store"
)

// A placement's attempts. A PENDING placement places a game session on a
// process (an attempt): the game session is ACTIVATING, the placement
// stays PENDING and shows where the game session is (GameLift: "may
// attempt to place a game session multiple times before succeeding. With
// each attempt it creates a GameSession object and updates this placement
// object"). The attempt's activation fulfils the placement in the same
// transaction (GameSessionActivatedTx), creating the player sessions then
// (GameLift creates them "only after a new game session is successfully
// placed"). The loop follows every attempt in flight from the store
// (judge): a game session that ends without activating (activation
// timeout, crash, ProcessEnding, undeliverable) makes the placement try
// another process; one ended by TerminateGameSession fails the placement;
// past the deadline the placement times out.

// attemptAction is what the loop does with a placement's attempt.
type attemptAction int

const (
	attemptWait     attemptAction = iota // still activating
	attemptFulfil                        // ACTIVE: FULFILLED
	attemptTimedOut                      // the deadline passed: TIMED_OUT
	attemptFail                          // ended by TerminateGameSession: FAILED
	attemptRetry                         // ended without activating: place again
)

// judge decides on a placement's attempt from its game session (nil when
// it no longer exists) and the placement's deadline. It is pure.
func judge(gs *api.GameSession, deadline, now time.Time) attemptAction {
	switch {
	case gs != nil && gs.Status == api.GameSessionStatusActive:
		return attemptFulfil
	case gs != nil && terminatedOnRequest(gs):
		return attemptFail
	case !now.Before(deadline):
		return attemptTimedOut
	case gs != nil && (gs.Status == api.GameSessionStatusActivating || gs.Status == api.GameSessionStatusTerminating):
		return attemptWait
	}
	return attemptRetry
}

// terminatedOnRequest reports whether a game session is ending or ended
// because of TerminateGameSession.
func terminatedOnRequest(gs *api.GameSession) bool {
	switch gs.StatusReason {
	case api.GameSessionStatusReasonForceTerminated, api.GameSessionStatusReasonTriggeredOnProcessTerminate:
		return gs.Status == api.GameSessionStatusTerminating || gs.Status == api.GameSessionStatusTerminated
	}
	return false
}

// attemptSession reads the game session of an attempt (nil when gone).
func attemptSession(ctx context.Context, tx store.Tx, id string) (*api.GameSession, error) {
	gs := new(hosting.GameSession)
	if _, err := store.GetJSON(ctx, tx, hosting.KindGameSession, id, gs); err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return nil, nil
		}
		return nil, err
	}
	return &gs.Session, nil
}

// follow handles p's attempt in flight, its writes fenced by g. It returns
// the placement to place again (nil when there is nothing more to do this
// pass). A look in a View finds the usual case, an attempt still
// activating, without a write.
func (s *Service) follow(ctx context.Context, g store.Grant, p *placementRecord) (*placementRecord, error) {
	var act attemptAction
	err := s.cfg.Store.View(ctx, func(tx store.Tx) error {
		gs, err := attemptSession(ctx, tx, p.Attempt)
		act = judge(gs, p.Deadline, s.now())
		return err
	})
	if err != nil || act == attemptWait {
		return nil, err
	}
	var again *placementRecord
	err = s.update(ctx, g, func(tx store.Tx) error {
		again = nil
		cur, err := getPlacement(ctx, tx, p.id())
		if err != nil || cur.Placement.Status != api.GameSessionPlacementStatePending || cur.Attempt == "" {
			return err
		}
		gs, err := attemptSession(ctx, tx, cur.Attempt)
		if err != nil {
			return err
		}
		q, err := queueOrNil(ctx, tx, cur.queue())
		if err != nil {
			return err
		}
		switch judge(gs, cur.Deadline, s.now()) {
		case attemptFulfil:
			return s.fulfilTx(ctx, tx, q, cur, nil)
		case attemptFail:
			return s.finishTx(ctx, tx, q, cur, api.GameSessionPlacementStateFailed, nil)
		case attemptTimedOut:
			return s.finishTx(ctx, tx, q, cur, api.GameSessionPlacementStateTimedOut, nil)
		case attemptRetry:
			cur.attemptFailed(gs)
			again = cur
			return putPlacement(ctx, tx, cur, false)
		}
		return nil
	})
	return again, err
}

// queueOrNil reads a queue; nil when it is gone.
func queueOrNil(ctx context.Context, tx store.Tx, name string) (*api.GameSessionQueue, error) {
	q, err := getQueue(ctx, tx, name)
	var nf *api.NotFoundException
	if errors.As(err, &nf) {
		return nil, nil
	}
	return q, err
}

// startAttempt records that placed is p's new attempt: the placement shows
// where its game session is, without player sessions.
func (p *placementRecord) startAttempt(placed *sessions.Placed) {
	gs := &placed.GameSession
	p.Attempt, p.Attempts = api.ToString(gs.GameSessionId), p.Attempts+1
	pl := &p.Placement
	pl.GameSessionArn, pl.GameSessionId = gs.GameSessionId, gs.GameSessionId
	pl.IpAddress, pl.DnsName, pl.Port, pl.GameSessionRegion = gs.IpAddress, gs.DnsName, gs.Port, gs.Location
}

// attemptFailed forgets p's attempt, whose game session gs (nil when gone)
// ended without activating, and notes its fleet location as failed.
func (p *placementRecord) attemptFailed(gs *api.GameSession) {
	p.Attempt = ""
	p.clearGameSession()
	if gs == nil {
		return
	}
	if k := api.ToString(gs.FleetId) + "/" + api.ToString(gs.Location); !slices.Contains(p.Failed, k) {
		p.Failed = append(p.Failed, k)
	}
}

// clearGameSession removes where a game session is from p's placement.
func (p *placementRecord) clearGameSession() {
	pl := &p.Placement
	pl.GameSessionArn, pl.GameSessionId, pl.IpAddress, pl.DnsName, pl.Port, pl.GameSessionRegion = nil, nil, nil, nil, nil, nil
}

// fulfilTx fulfils p, whose attempt's game session is ACTIVE, in tx: the
// player sessions are created, the placement is FULFILLED and its event
// published.
func (s *Service) fulfilTx(ctx context.Context, tx store.Tx, q *api.GameSessionQueue, p *placementRecord, known *hosting.GameSession) error {
	placed, err := s.cfg.Sessions.AddPlacedPlayersTx(ctx, tx, p.Attempt, known, p.Players)
	if err != nil {
		return err
	}
	return s.finishTx(ctx, tx, q, p, api.GameSessionPlacementStateFulfilled, placed)
}

// GameSessionActivatedTx fulfils the PENDING placement whose attempt is
// game session gs, in the transaction that activates it
// (sessions.PlacementHook). A placement that ended meanwhile, or moved on
// to another attempt, is left alone: the game session goes on without it.
// In a Claim (claimed) the placement is held and the queue read unheld
// (every activation of the queue reads it, none writes it); both are read
// in one round trip when the game session names the queue (store.GetRefs).
// A match's placement (its tickets) and an event that webhooks receive
// (its order key: events.Service.Orders) are fulfilled in an Update
// instead (sessions.ErrRunInUpdate).
func (s *Service) GameSessionActivatedTx(ctx context.Context, tx store.Tx, gs *hosting.GameSession, claimed bool) error {
	p, q, err := s.activatedReads(ctx, tx, gs)
	var nf *api.NotFoundException
	if errors.As(err, &nf) {
		return nil
	}
	if err != nil || p == nil {
		return err
	}
	if claimed && (p.Match || s.orders(q)) {
		return sessions.ErrRunInUpdate
	}
	return s.fulfilTx(ctx, tx, q, p, gs)
}

// activatedReads reads the placement of an activated game session (held)
// and its queue (unheld; nil when it is gone): p is nil when the
// placement is no longer PENDING with that attempt.
func (s *Service) activatedReads(ctx context.Context, tx store.Tx, gs *hosting.GameSession) (p *placementRecord, q *api.GameSessionQueue, err error) {
	pending := func(p *placementRecord) bool {
		return p.Placement.Status == api.GameSessionPlacementStatePending && p.Attempt == api.ToString(gs.Session.GameSessionId)
	}
	if gs.PlacementQueue == "" { // a game session of an earlier Hoist
		if p, err = getPlacement(ctx, tx, gs.PlacementID); err != nil || !pending(p) {
			return nil, nil, err
		}
		q, err = queueOrNil(ctx, store.Unheld(tx), p.queue())
		return p, q, err
	}
	got, err := store.GetRefs(ctx, tx, []store.Ref{{Kind: KindPlacement, ID: gs.PlacementID}, {Kind: KindQueue, ID: queueName(gs.PlacementQueue), Unheld: true}})
	if err != nil {
		return nil, nil, err
	}
	if p, err = placementFound(gs.PlacementID, got[0]); err != nil || !pending(p) {
		return nil, nil, err
	}
	q, err = store.GotJSON[api.GameSessionQueue](got[1])
	return p, q, err
}

// orders reports whether the Publisher takes an order key's next number
// for the events of q's topic (events.Service.Orders). Publishers without
// Orders (events.Discard, tests' recorders) write no shared record.
func (s *Service) orders(q *api.GameSessionQueue) bool {
	o, ok := s.cfg.Publisher.(interface{ Orders(topic string) bool })
	if !ok {
		return false
	}
	topic := ""
	if q != nil {
		topic = api.ToString(q.NotificationTarget)
	}
	return o.Orders(topic)
}

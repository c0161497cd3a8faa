package matchmaking

import (
	"context"
	"time"

	"github.com/hoistgg/hoist/internal/api"
	"github.com/hoistgg/hoist/internal/store"
)

// AcceptMatch records players' acceptance (or rejection) of the match
// their ticket is in. When every player of the match has accepted, the
// match goes on (COMPLETED or PLACING) in the same transaction; a
// rejection ends the match at once.
func (s *Service) AcceptMatch(ctx context.Context, in *api.AcceptMatchInput) (*api.AcceptMatchOutput, error) {
	if len(in.PlayerIds) == 0 {
		return nil, api.NewInvalidRequestException("PlayerIds is required")
	}
	if in.AcceptanceType != api.AcceptanceTypeAccept && in.AcceptanceType != api.AcceptanceTypeReject {
		return nil, api.NewInvalidRequestException("AcceptanceType %q is not ACCEPT or REJECT", in.AcceptanceType)
	}
	err := s.update(ctx, func(ctx context.Context, tx store.Tx) error {
		t, err := getTicket(ctx, tx, api.ToString(in.TicketId))
		if err != nil {
			return err
		}
		if t.Ticket.Status != stAccept {
			return api.NewInvalidRequestException("matchmaking ticket %s is %s: matches are accepted only while REQUIRES_ACCEPTANCE", t.id(), t.Ticket.Status)
		}
		for i, id := range in.PlayerIds {
			if !ticketHas(t, id) {
				return api.NewInvalidRequestException("PlayerIds[%d]: player %s is not on matchmaking ticket %s", i, id, t.id())
			}
		}
		c, err := getConfig(ctx, tx, t.config())
		if err != nil {
			return err
		}
		m, err := getMatch(ctx, tx, t.MatchID)
		if err != nil {
			return err
		}
		now := s.now()
		if in.AcceptanceType == api.AcceptanceTypeReject {
			ts, err := matchTickets(ctx, tx, m, stAccept)
			if err != nil {
				return err
			}
			d := s.detail(evAcceptMatch, c, ts)
			d.MatchID = m.ID
			markAnswers(d, ts, in.PlayerIds)
			if err := s.publish(ctx, tx, c, now, d); err != nil {
				return err
			}
			return s.failAcceptanceTx(ctx, tx, c, m, now, acceptRejected, map[string]bool{t.id(): true})
		}
		for _, id := range in.PlayerIds {
			if !containsStr(t.Accepted, id) {
				t.Accepted = append(t.Accepted, id)
			}
		}
		if err := putTicket(ctx, tx, t, m.AcceptDeadline.UnixMilli(), false); err != nil {
			return err
		}
		ts, err := matchTickets(ctx, tx, m, stAccept)
		if err != nil {
			return err
		}
		d := s.detail(evAcceptMatch, c, ts)
		d.MatchID = m.ID
		markAnswers(d, ts, nil)
		if err := s.publish(ctx, tx, c, now, d); err != nil {
			return err
		}
		for _, mt := range ts {
			if !allAccepted(mt) {
				return nil
			}
		}
		d = s.detail(evAcceptCompleted, c, ts)
		d.MatchID, d.Acceptance = m.ID, acceptAccepted
		if err := s.publish(ctx, tx, c, now, d); err != nil {
			return err
		}
		rs, err := s.ruleSetOf(ctx, tx, c)
		if err != nil {
			return err
		}
		return s.proceedTx(ctx, tx, c, rs, m, ts, now)
	})
	if err != nil {
		return nil, err
	}
	s.kickPlacer()
	return &api.AcceptMatchOutput{}, nil
}

func ticketHas(t *ticketRecord, playerID string) bool {
	for _, p := range t.Ticket.Players {
		if api.ToString(p.PlayerId) == playerID {
			return true
		}
	}
	return false
}

func allAccepted(t *ticketRecord) bool {
	for _, p := range t.Ticket.Players {
		if !containsStr(t.Accepted, api.ToString(p.PlayerId)) {
			return false
		}
	}
	return true
}

// failAcceptanceTx ends a match waiting for acceptance that will not be
// played: with acceptance Rejected, the tickets in losers are CANCELLED and
// the others go back to SEARCHING; with TimedOut, the tickets whose every
// player accepted go back to SEARCHING and the others are CANCELLED. A
// ticket back in SEARCHING says why in StatusReason and StatusMessage.
// AcceptMatchCompleted is published first, then each ticket's own event.
func (s *Service) failAcceptanceTx(ctx context.Context, tx store.Tx, c *api.MatchmakingConfiguration, m *matchRecord, now time.Time, acceptance string, losers map[string]bool) error {
	ts, err := matchTickets(ctx, tx, m, stAccept)
	if err != nil {
		return err
	}
	if err := tx.Delete(ctx, KindMatch, m.ID); err != nil {
		return err
	}
	d := s.detail(evAcceptCompleted, c, ts)
	d.MatchID, d.Acceptance = m.ID, acceptance
	if err := s.publish(ctx, tx, c, now, d); err != nil {
		return err
	}
	for _, t := range ts {
		lose := losers[t.id()]
		if acceptance == acceptTimedOut {
			lose = !allAccepted(t)
		}
		if lose {
			msg := "A player rejected the match."
			if acceptance == acceptTimedOut {
				msg = "A player did not accept the match in time."
			}
			if err := s.endTx(ctx, tx, c, t, stCancelled, "CANCELLED", msg, now, m.Metrics); err != nil {
				return err
			}
			continue
		}
		t.Ticket.Status, t.MatchID, t.Accepted = stSearching, "", nil
		t.Ticket.StatusReason, t.Ticket.StatusMessage = searchAgainReason(acceptance)
		if !t.Backfill {
			for i := range t.Ticket.Players {
				t.Ticket.Players[i].Team = nil
			}
		}
		if err := putTicket(ctx, tx, t, t.Deadline.UnixMilli(), false); err != nil {
			return err
		}
		est, err := estimate(ctx, tx, t.config(), now)
		if err != nil {
			return err
		}
		sd := s.detail(evSearching, c, []*ticketRecord{t})
		sd.EstimatedWaitMillis = estimatedMillis(est)
		if err := s.publish(ctx, tx, c, now, sd); err != nil {
			return err
		}
	}
	return nil
}

// The StatusReason of a ticket back in SEARCHING after its match failed to
// be accepted (GameLift documents the case, "a status reason may indicate
// when a ticket has returned to SEARCHING status after a proposed match
// fails to receive player acceptances", but no code; these are Hoist's).
const (
	reasonAcceptanceRejected = "ACCEPTANCE_REJECTED"
	reasonAcceptanceTimedOut = "ACCEPTANCE_TIMED_OUT"
)

// searchAgainReason is the StatusReason and StatusMessage of a ticket back
// in SEARCHING after a match's acceptance ended so.
func searchAgainReason(acceptance string) (*string, *string) {
	if acceptance == acceptTimedOut {
		return api.String(reasonAcceptanceTimedOut), api.String("The proposed match was not accepted by every player in time; searching again.")
	}
	return api.String(reasonAcceptanceRejected), api.String("A player of another ticket rejected the proposed match; searching again.")
}

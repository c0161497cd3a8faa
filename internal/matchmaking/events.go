package matchmaking

import (
	"context"
	"encoding/json"
	"time"

	"github.com/hoistgg/hoist/internal/api"
	"github.com/hoistgg/hoist/internal/events"
	"github.com/hoistgg/hoist/internal/flexmatch"
	"github.com/hoistgg/hoist/internal/store"
)

// Matchmaking event types (the detail's "type").
const (
	evSearching       = "MatchmakingSearching"
	evPotential       = "PotentialMatchCreated"
	evAcceptMatch     = "AcceptMatch"
	evAcceptCompleted = "AcceptMatchCompleted"
	evSucceeded       = "MatchmakingSucceeded"
	evTimedOut        = "MatchmakingTimedOut"
	evCancelled       = "MatchmakingCancelled"
	evFailed          = "MatchmakingFailed"
)

// The "reason" codes of MatchmakingFailed. GameLift's documents show
// UNEXPECTED_ERROR (a failure "due to the game session queue not
// accessible or to an internal error"); the others are Hoist's and say how
// the match's game session placement or backfill ended.
const (
	failUnexpected         = "UNEXPECTED_ERROR"
	failQueueNotAccessible = "QUEUE_NOT_ACCESSIBLE"
	failPlacementTimedOut  = "PLACEMENT_TIMED_OUT"
	failPlacementCancelled = "PLACEMENT_CANCELLED"
	failPlacementFailed    = "PLACEMENT_FAILED"
	failBackfillRefused    = "BACKFILL_REFUSED"
)

// placementFailure is the MatchmakingFailed reason of a match whose
// placement ended in status st (not FULFILLED).
func placementFailure(st api.GameSessionPlacementState) string {
	switch st {
	case api.GameSessionPlacementStateTimedOut:
		return failPlacementTimedOut
	case api.GameSessionPlacementStateCancelled:
		return failPlacementCancelled
	}
	return failPlacementFailed
}

// Values of AcceptMatchCompleted's "acceptance".
const (
	acceptAccepted = "Accepted"
	acceptRejected = "Rejected"
	acceptTimedOut = "TimedOut"
)

// eventDetail is the "detail" of a matchmaking event, in GameLift's field
// names.
type eventDetail struct {
	Type                  string        `json:"type"`
	Tickets               []eventTicket `json:"tickets"`
	EstimatedWaitMillis   string        `json:"estimatedWaitMillis,omitempty"`
	AcceptanceTimeout     int32         `json:"acceptanceTimeout,omitempty"`
	AcceptanceRequired    *bool         `json:"acceptanceRequired,omitempty"`
	RuleEvaluationMetrics []eventMetric `json:"ruleEvaluationMetrics,omitempty"`
	Acceptance            string        `json:"acceptance,omitempty"`
	Reason                string        `json:"reason,omitempty"`
	Message               string        `json:"message,omitempty"`
	MatchID               string        `json:"matchId,omitempty"`
	GameSessionInfo       eventSession  `json:"gameSessionInfo"`
	CustomEventData       string        `json:"customEventData,omitempty"`
}

type eventTicket struct {
	TicketID  string        `json:"ticketId"`
	StartTime string        `json:"startTime"`
	Players   []eventPlayer `json:"players"`
}

type eventPlayer struct {
	PlayerID        string `json:"playerId"`
	Team            string `json:"team,omitempty"`
	PlayerSessionID string `json:"playerSessionId,omitempty"`
	Accepted        *bool  `json:"accepted,omitempty"`
}

type eventSession struct {
	GameSessionArn string        `json:"gameSessionArn,omitempty"`
	IPAddress      string        `json:"ipAddress,omitempty"`
	DNSName        string        `json:"dnsName,omitempty"`
	Port           int32         `json:"port,omitempty"`
	Players        []eventPlayer `json:"players"`
}

type eventMetric struct {
	RuleName    string `json:"ruleName"`
	PassedCount int    `json:"passedCount"`
	FailedCount int    `json:"failedCount"`
}

func toMetrics(ms []flexmatch.RuleMetric) []eventMetric {
	var out []eventMetric
	for _, m := range ms {
		out = append(out, eventMetric{RuleName: m.Rule, PassedCount: m.Passed, FailedCount: m.Failed})
	}
	return out
}

// eventTimeFormat is how GameLift's events write times.
const eventTimeFormat = "2006-01-02T15:04:05.000Z"

// detail builds the detail of an event about tickets: each ticket with its
// players (team and player session as they stand), and every player in
// gameSessionInfo. Only AcceptMatch says who accepted (markAnswers).
func (s *Service) detail(typ string, c *api.MatchmakingConfiguration, ts []*ticketRecord) *eventDetail {
	d := &eventDetail{Type: typ, Tickets: make([]eventTicket, 0, len(ts)), CustomEventData: api.ToString(c.CustomEventData)}
	d.GameSessionInfo.Players = []eventPlayer{}
	for _, t := range ts {
		et := eventTicket{TicketID: t.id(), Players: make([]eventPlayer, 0, len(t.Ticket.Players))}
		if t.Ticket.StartTime != nil {
			et.StartTime = t.Ticket.StartTime.UTC().Format(eventTimeFormat)
		}
		var sessions map[string]string
		if ci := t.Ticket.GameSessionConnectionInfo; ci != nil {
			sessions = map[string]string{}
			for _, ps := range ci.MatchedPlayerSessions {
				sessions[api.ToString(ps.PlayerId)] = api.ToString(ps.PlayerSessionId)
			}
		}
		for _, p := range t.Ticket.Players {
			ep := eventPlayer{PlayerID: api.ToString(p.PlayerId), Team: api.ToString(p.Team), PlayerSessionID: sessions[api.ToString(p.PlayerId)]}
			et.Players = append(et.Players, ep)
			d.GameSessionInfo.Players = append(d.GameSessionInfo.Players, ep)
		}
		d.Tickets = append(d.Tickets, et)
	}
	return d
}

// markAnswers sets, in the detail of an AcceptMatch event about ts, the
// "accepted" of each player who has answered: true for those who accepted
// (the tickets' Accepted), false for those in rejected. A player who has
// not answered has none (GameLift: "Missing data means that AcceptMatch
// hasn't been called for that player").
func markAnswers(d *eventDetail, ts []*ticketRecord, rejected []string) {
	answer := map[string]bool{}
	for _, t := range ts {
		for _, id := range t.Accepted {
			answer[id] = true
		}
	}
	for _, id := range rejected {
		answer[id] = false
	}
	mark := func(ps []eventPlayer) {
		for i := range ps {
			if a, ok := answer[ps[i].PlayerID]; ok {
				ps[i].Accepted = &a
			}
		}
	}
	for i := range d.Tickets {
		mark(d.Tickets[i].Players)
	}
	mark(d.GameSessionInfo.Players)
}

func containsStr(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// publish records a matchmaking event of configuration c in tx: resources
// the configuration's ARN, to its NotificationTarget topic.
func (s *Service) publish(ctx context.Context, tx store.Tx, c *api.MatchmakingConfiguration, now time.Time, d *eventDetail) error {
	body, err := json.Marshal(d)
	if err != nil {
		return err
	}
	a := api.ToString(c.ConfigurationArn)
	return s.cfg.Publisher.Publish(ctx, tx, events.Event{DetailType: events.DetailTypeMatchmaking, Resources: []string{a},
		Time: now, Detail: body, Topic: api.ToString(c.NotificationTarget), OrderKey: a})
}

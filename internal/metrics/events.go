package metrics

import (
	"context"
	"encoding/json"
	"strings"
	"time"

	"github.com/hoistgg/hoist/internal/events"
	"github.com/hoistgg/hoist/internal/store"
)

// Publisher wraps the events.Publisher FlexMatch publishes its
// matchmaking events through: each event is counted (matches created,
// accepted, rejected, placed; tickets that failed, timed out or were
// cancelled; the times from a ticket's start) once the transaction it was
// published in has committed.
type Publisher struct {
	events.Publisher
	m *Metrics
}

// WrapPublisher returns p counting matchmaking events into m.
func (m *Metrics) WrapPublisher(p events.Publisher) *Publisher { return &Publisher{Publisher: p, m: m} }

// Publish publishes e, and counts it once tx commits.
func (p *Publisher) Publish(ctx context.Context, tx store.Tx, e events.Event) error {
	if err := p.Publisher.Publish(ctx, tx, e); err != nil {
		return err
	}
	if e.DetailType == events.DetailTypeMatchmaking && len(e.Resources) > 0 {
		var d matchmakingDetail
		if json.Unmarshal(e.Detail, &d) == nil {
			config := resourceName(e.Resources[0])
			countAfterCommit(tx, p.m, func(m *Metrics) { m.matchmakingEvent(config, e.Time, &d) })
		}
	}
	return nil
}

// matchmakingDetail is what the counts need of a matchmaking event's
// detail.
type matchmakingDetail struct {
	Type       string `json:"type"`
	Acceptance string `json:"acceptance"`
	Tickets    []struct {
		StartTime string `json:"startTime"`
	} `json:"tickets"`
}

// matchmakingEvent counts one matchmaking event of configuration config.
func (m *Metrics) matchmakingEvent(config string, at time.Time, d *matchmakingDetail) {
	g := &m.gl
	switch d.Type {
	case "PotentialMatchCreated":
		g.matchesCreated.WithLabelValues(config).Inc()
		d.observeWaits(g.timeToMatch.WithLabelValues(config), at)
	case "AcceptMatchCompleted":
		switch d.Acceptance {
		case "Accepted":
			g.matchesAccepted.WithLabelValues(config).Inc()
		case "Rejected":
			g.matchesRejected.WithLabelValues(config).Inc()
		case "TimedOut":
			g.matchAcceptancesTimedOut.WithLabelValues(config).Inc()
		}
	case "MatchmakingSucceeded":
		g.matchesPlaced.WithLabelValues(config).Inc()
		d.observeWaits(g.timeToTicketSuccess.WithLabelValues(config), at)
	case "MatchmakingTimedOut":
		g.ticketsTimedOut.WithLabelValues(config).Add(float64(len(d.Tickets)))
	case "MatchmakingFailed":
		g.ticketsFailed.WithLabelValues(config).Add(float64(len(d.Tickets)))
	case "MatchmakingCancelled":
		g.ticketsCanceled.WithLabelValues(config).Add(float64(len(d.Tickets)))
		d.observeWaits(g.timeToTicketCancel.WithLabelValues(config), at)
	}
}

// observeWaits observes, for each ticket of the event, the seconds from
// its start to at.
func (d *matchmakingDetail) observeWaits(h observer, at time.Time) {
	for _, t := range d.Tickets {
		start, err := time.Parse(time.RFC3339Nano, t.StartTime)
		if err == nil && !at.Before(start) {
			h.Observe(at.Sub(start).Seconds())
		}
	}
}

// resourceName returns the name at the end of an ARN's resource
// (matchmakingconfiguration/<name>), or the ARN itself.
func resourceName(arn string) string {
	if i := strings.LastIndexByte(arn, '/'); i >= 0 {
		return arn[i+1:]
	}
	return arn
}

// Package events carries GameLift's event notifications (queue placement
// events, matchmaking events) from the domain that causes them to the
// operator's webhooks and to the live event stream.
//
// A domain publishes an event inside the store transaction of the change
// it reports (an outbox), so the event is delivered if and only if the
// change commits, and survives a restart until it is delivered.
package events

import (
	"context"
	"encoding/json"
	"time"

	"github.com/hoistgg/hoist/internal/store"
)

// Event is one notification, before the envelope (version, source,
// account, region) is added.
type Event struct {
	// ID is the envelope's "id"; Publish fills it when empty. It must be
	// new (a UUID): an ID taken fails the transaction (store.InsertNew).
	ID string
	// DetailType is the envelope's "detail-type", e.g. "GameLift Queue
	// Placement Event" or "GameLift Matchmaking Event".
	DetailType string
	// Resources are the ARNs the event is about (the queue's, the
	// matchmaking configuration's).
	Resources []string
	// Time is when it happened.
	Time time.Time
	// Detail is the "detail" object, with its "type".
	Detail json.RawMessage
	// Topic is the SNS topic ARN of the resource's NotificationTarget ("":
	// none); the webhooks the operator maps to it receive the event.
	Topic string
	// OrderKey orders delivery: events with the same key (the resource's
	// ARN) are delivered in the order they were published.
	OrderKey string
}

// Publisher records events. Publish writes e in tx, the transaction of
// the change e reports.
type Publisher interface {
	Publish(ctx context.Context, tx store.Tx, e Event) error
}

// Discard is a Publisher that records nothing.
type Discard struct{}

// Publish does nothing.
func (Discard) Publish(context.Context, store.Tx, Event) error { return nil }

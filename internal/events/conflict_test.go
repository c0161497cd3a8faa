package events

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"

	"github.com/hoistgg/hoist/internal/store"
	"github.com/hoistgg/hoist/internal/store/journal"
	"github.com/hoistgg/hoist/internal/store/postgres/pgtest/pgstore"
)

// TestPublishWithoutWebhooksDoesNotConflict: on PostgreSQL, transactions
// publishing events about one resource at once (the placements of one
// queue, the tickets of one matchmaking configuration) to a topic without
// webhooks do not conflict: nothing they write is shared, so no
// serializable transaction runs again (and none runs alone, holding up
// every other write). Publish took the resource's delivery sequence
// number, a record every such transaction read and wrote, also when no
// webhook would deliver the event.
func TestPublishWithoutWebhooksDoesNotConflict(t *testing.T) {
	st := pgstore.Open(t)
	svc := replica(st, "replica-a")
	const writers, each = 16, 10
	res := "arn:aws:gamelift:us-west-2:123456789012:gamesessionqueue/busy"
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				err := st.Update(context.Background(), func(tx store.Tx) error {
					return svc.Publish(context.Background(), tx, Event{ID: fmt.Sprintf("ev-%d-%d", w, i),
						DetailType: DetailTypeQueuePlacement, Resources: []string{res},
						Detail: json.RawMessage(`{"type":"PlacementFulfilled"}`), Topic: "arn:aws:sns:us-west-2:123456789012:no-hooks"})
				})
				if err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if got := st.Stats(); got.Retries != 0 || got.Conflicts != 0 {
		t.Errorf("%d publishes at once about one resource: %d transactions ran again (%d gave up), want none", writers*each, got.Retries, got.Conflicts)
	}
	err := st.View(context.Background(), func(tx store.Tx) error {
		n, err := tx.Count(context.Background(), store.Query{Kind: kindEvent})
		if err == nil && n != writers*each {
			err = fmt.Errorf("%d events stored, want %d", n, writers*each)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestOrdersOnlyTopicsWithWebhooks: Orders, which tells a caller in a
// Claim (an activation fulfilling its placement) whether Publish would
// take an order key's next number, is true for a topic that webhooks
// receive and false for any other, the empty topic included.
func TestOrdersOnlyTopicsWithWebhooks(t *testing.T) {
	st, err := journal.Open(t.TempDir(), journal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	hooked := "arn:aws:sns:us-west-2:123456789012:hooked"
	svc := New(Config{Store: st, Region: "us-west-2", Account: "123456789012", Secret: secret, ReplicaID: "r1",
		Webhooks: map[string][]Webhook{hooked: {{URL: "http://127.0.0.1:1/hook"}}}})
	for topic, want := range map[string]bool{hooked: true, "arn:aws:sns:us-west-2:123456789012:other": false, "": false} {
		if got := svc.Orders(topic); got != want {
			t.Errorf("Orders(%q) = %v, want %v", topic, got, want)
		}
	}
}

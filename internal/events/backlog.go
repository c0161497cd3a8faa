package events

import (
	"context"

	"github.com/hoistgg/hoist/internal/store"
)

// Backlog counts the webhook deliveries waiting, every replica's (read in
// tx): the metric hoist_webhook_backlog.
func Backlog(ctx context.Context, tx store.Tx) (int, error) {
	return tx.Count(ctx, store.Query{Kind: kindDelivery})
}

package events

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/hoistgg/hoist/internal/store"
)

// Item is a stored event as the live stream reads it.
type Item struct {
	// Position orders events across the store (the store's insertion
	// order); the live stream sends it as the SSE id.
	Position int64
	ID       string
	// Resources are the envelope's resources.
	Resources []string
	// Body is the envelope.
	Body json.RawMessage
}

// Matches reports whether the event is about resource: one of its
// resources is resource, or is an ARN whose resource name (after the
// last '/') is resource. "" matches every event.
func (it Item) Matches(resource string) bool {
	if resource == "" {
		return true
	}
	for _, r := range it.Resources {
		if r == resource {
			return true
		}
		if i := strings.LastIndexByte(r, '/'); i >= 0 && strings.HasPrefix(r, "arn:") && r[i+1:] == resource {
			return true
		}
	}
	return false
}

// Latest returns the position of the newest stored event (0: none).
func (s *Service) Latest(ctx context.Context) (int64, error) {
	var pos int64
	err := s.cfg.Store.View(ctx, func(tx store.Tx) error {
		recs, _, err := tx.List(ctx, store.Query{Kind: kindEvent, Order: store.OrderCreated, Desc: true, Limit: 1})
		if err == nil && len(recs) > 0 {
			pos = recs[0].Seq
		}
		return err
	})
	return pos, err
}

// Read returns at most limit stored events after position after, in
// the order they were stored.
func (s *Service) Read(ctx context.Context, after int64, limit int) ([]Item, error) {
	var out []Item
	err := s.cfg.Store.View(ctx, func(tx store.Tx) error {
		out = out[:0]
		q := store.Query{Kind: kindEvent, Order: store.OrderCreated, Limit: limit}
		if after > 0 {
			q.After = store.EncodeCursor(store.OrderCreated, false, &store.Record{Seq: after})
		}
		recs, _, err := tx.List(ctx, q)
		if err != nil {
			return err
		}
		for _, r := range recs {
			body, err := eventBody(r.Data)
			if err != nil {
				return fmt.Errorf("event %s: %w", r.ID, err)
			}
			var env struct {
				Resources []string `json:"resources"`
			}
			_ = json.Unmarshal(body, &env)
			out = append(out, Item{Position: r.Seq, ID: r.ID, Resources: env.Resources, Body: body})
		}
		return nil
	})
	return out, err
}

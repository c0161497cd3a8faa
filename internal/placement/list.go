package placement

import (
	"context"

	"github.com/hoistgg/hoist/internal/api"
	"github.com/hoistgg/hoist/internal/paging"
	"github.com/hoistgg/hoist/internal/store"
)

// ListPlacements lists up to limit placements of a queue, newest first,
// after the cursor token ("" for the first page); it returns them and the
// cursor of the next page ("" at the end). GameLift has no such operation
// (DescribeGameSessionPlacement reads one): it serves the console.
func (s *Service) ListPlacements(ctx context.Context, queue, token string, limit int) ([]api.GameSessionPlacement, string, error) {
	var out []api.GameSessionPlacement
	var next string
	err := s.cfg.Store.View(ctx, func(tx store.Tx) error {
		q := store.Query{Kind: KindPlacement, Parent: queue, HasParent: true, Order: store.OrderCreated, Desc: true}
		recs, n, err := paging.Records(ctx, tx, q, token, limit, nil)
		if err != nil {
			return err
		}
		out, next = make([]api.GameSessionPlacement, 0, len(recs)), n
		for _, rec := range recs {
			var p placementRecord
			if err := store.Decode(rec, &p); err != nil {
				return err
			}
			out = append(out, p.Placement)
		}
		return nil
	})
	return out, next, err
}

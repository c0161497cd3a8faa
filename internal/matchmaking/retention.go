package matchmaking

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/hoistgg/hoist/internal/store"
)

// TicketRetention is how long an ended ticket (COMPLETED, FAILED,
// CANCELLED, TIMED_OUT) stays: DescribeMatchmaking shows it until then;
// afterwards it is removed, as if it never existed.
const TicketRetention = time.Hour

// sweepEvery is how often the matchmaker looks for tickets past their
// retention.
const sweepEvery = time.Minute

// sweeper remembers when the matchmaker last removed old tickets.
type sweeper struct {
	mu   sync.Mutex
	last time.Time
}

// due reports whether a sweep is due at now, and if so records it.
func (w *sweeper) due(now time.Time) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.last.IsZero() && now.Sub(w.last) < sweepEvery {
		return false
	}
	w.last = now
	return true
}

// sweep removes the tickets that ended more than TicketRetention ago, a
// batch per transaction, with the backfill index entries that name them.
func (s *Service) sweep(ctx context.Context, now time.Time) error {
	cutoff := now.Add(-TicketRetention).UnixMilli()
	for _, st := range []string{string(stCompleted), string(stFailed), string(stCancelled), string(stTimedOut)} {
		for {
			n := 0
			err := s.cfg.Store.Update(ctx, func(tx store.Tx) error {
				recs, _, err := tx.List(ctx, store.Query{Kind: KindTicket, Key: st, HasKey: true, Order: store.OrderRankAsc,
					RankMax: cutoff - 1, HasRankMax: true, Limit: batch})
				if err != nil {
					return err
				}
				n = len(recs)
				for _, rec := range recs {
					t := new(ticketRecord)
					if err := store.Decode(rec, t); err != nil {
						return err
					}
					if err := tx.Delete(ctx, KindTicket, rec.ID); err != nil {
						return err
					}
					if t.GameSessionArn == "" {
						continue
					}
					b, err := tx.Get(ctx, KindBackfill, t.GameSessionArn)
					if errors.Is(err, store.ErrNotFound) {
						continue
					}
					if err != nil {
						return err
					}
					if string(b.Data) == rec.ID {
						if err := tx.Delete(ctx, KindBackfill, t.GameSessionArn); err != nil {
							return err
						}
					}
				}
				return nil
			})
			if err != nil {
				return err
			}
			if n < batch || ctx.Err() != nil {
				break
			}
		}
	}
	return nil
}

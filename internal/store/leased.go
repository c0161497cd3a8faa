package store

import (
	"context"
	"log/slog"
	"time"

	"github.com/hoistgg/hoist/internal/clock"
)

// Loop is background work that runs on one replica at a time: every
// Interval (and whenever Kick fires) the replica renews or takes the lease
// Name for TTL (AcquireLease: measured by the store's clock) and, while it
// holds it, runs Work, or WorkFenced with its grant.
type Loop struct {
	// Name of the lease; Holder this replica's ID.
	Name, Holder string
	Interval     time.Duration
	// TTL of the lease; it should be several Intervals, so that a holder
	// keeps it across a slow run. Default 5 * Interval.
	TTL time.Duration
	// Kick, when set, wakes the loop early.
	Kick <-chan struct{}
	// Clock gives the loop its ticker (nil: real time): a manual clock's
	// also ticks when an advance passes its deadline, so that the work
	// due at the new time is done at once.
	Clock clock.Clock
	// Now is not used: the lease is measured by the store's clock (the
	// database's, with several replicas), not the replica's.
	Now func() time.Time
	// Work runs once per turn while the lease is held; its errors are
	// logged and the loop goes on.
	Work func(ctx context.Context) error
	// WorkFenced, when set, runs instead of Work, with the grant of the
	// lease, so that its writes can be fenced by it (Store.UpdateFenced).
	WorkFenced func(ctx context.Context, g Grant) error
	Log        *slog.Logger
}

// RunLeased runs l until ctx ends (then it returns nil).
func RunLeased(ctx context.Context, st Store, l Loop) error {
	if l.TTL <= 0 {
		l.TTL = 5 * l.Interval
	}
	if l.Log == nil {
		l.Log = slog.New(slog.DiscardHandler)
	}
	tick := clock.Or(l.Clock).NewTicker(l.Interval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		case <-l.Kick:
		}
		g, ok, err := st.AcquireLease(ctx, l.Name, l.Holder, l.TTL)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			l.Log.Warn("lease", "lease", l.Name, "err", err)
			continue
		}
		if !ok {
			continue
		}
		if l.WorkFenced != nil {
			err = l.WorkFenced(ctx, g)
		} else {
			err = l.Work(ctx)
		}
		if err != nil && ctx.Err() == nil {
			l.Log.Warn("background work", "lease", l.Name, "err", err)
		}
	}
}

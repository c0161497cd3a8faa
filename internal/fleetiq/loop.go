package fleetiq

import (
	"context"
	"errors"
	"time"

	"github.com/hoistgg/hoist/internal/store"
	"github.com/hoistgg/hoist/internal/tags"
)

// leaseName is the store lease the sweep runs under.
const leaseName = "fleetiq-sweep"

// sweepBatch is how many records one sweep transaction handles; sweepRounds
// caps the transactions per step and sweep (the next sweep continues).
const (
	sweepBatch  = 64
	sweepRounds = 64
)

// Run sweeps every SweepInterval while this replica holds the sweep lease,
// until ctx ends (then it returns nil).
func (s *Service) Run(ctx context.Context) error {
	tick := time.NewTicker(s.cfg.SweepInterval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
		ok, err := s.cfg.Store.Lease(ctx, leaseName, s.cfg.ReplicaID, s.cfg.Now(), 5*s.cfg.SweepInterval)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			s.log.Warn("fleetiq: sweep lease", "err", err)
			continue
		}
		if !ok {
			continue
		}
		if err := s.Sweep(ctx); err != nil && ctx.Err() == nil {
			s.log.Warn("fleetiq: sweep", "err", err)
		}
	}
}

// Sweep runs the background work once: it releases expired claims,
// deregisters game servers whose health expired, and stores each group's
// status progression (removing groups DELETED longer than the retention).
// Run calls it; tests call it directly with a fake clock.
func (s *Service) Sweep(ctx context.Context) error {
	return errors.Join(s.sweepClaims(ctx), s.sweepHealth(ctx), s.sweepGroups(ctx))
}

// rounds runs step in its own transaction until it handled fewer than
// sweepBatch records (or sweepRounds times); committed, when set, runs
// after each transaction that committed.
func (s *Service) rounds(ctx context.Context, step func(tx store.Tx, now time.Time) (int, error), committed func()) error {
	for range sweepRounds {
		n := 0
		err := s.cfg.Store.Update(ctx, func(tx store.Tx) error {
			var err error
			n, err = step(tx, s.now())
			return err
		})
		if err != nil {
			return err
		}
		if committed != nil {
			committed()
		}
		if n < sweepBatch {
			return nil
		}
	}
	return nil
}

// sweepClaims releases claims that ran out (in every group).
func (s *Service) sweepClaims(ctx context.Context) error {
	q := store.Query{Kind: kindServer, Key: keyClaimed, HasKey: true}
	return s.rounds(ctx, func(tx store.Tx, now time.Time) (int, error) {
		return releaseExpired(ctx, tx, q, now, sweepBatch)
	}, nil)
}

// expired is a game server the health sweep deregistered.
type expired struct{ id, group, instance string }

// sweepHealth deregisters the game servers whose health deadline passed.
func (s *Service) sweepHealth(ctx context.Context) error {
	if !s.healthOn() {
		return nil
	}
	var gone []expired
	err := s.rounds(ctx, func(tx store.Tx, now time.Time) (int, error) {
		gone = gone[:0]
		recs, _, err := tx.List(ctx, store.Query{Kind: kindHealth, Key: keyDue, HasKey: true,
			Order: store.OrderRankAsc, RankMax: ms(now), HasRankMax: true, Limit: sweepBatch})
		if err != nil {
			return 0, err
		}
		for _, rec := range recs {
			g, err := loadServer(ctx, tx, rec.ID)
			if err != nil {
				return 0, err
			}
			if g == nil {
				err = tx.Delete(ctx, kindHealth, rec.ID)
			} else {
				err = removeServer(ctx, tx, g)
				gone = append(gone, expired{g.ID, g.Group, g.Instance})
			}
			if err != nil {
				return 0, err
			}
		}
		return len(recs), nil
	}, func() {
		for _, e := range gone {
			s.log.Info("fleetiq: game server deregistered: no health check", "gameServer", e.id,
				"group", e.group, "instance", e.instance, "healthExpiry", s.cfg.HealthExpiry)
		}
	})
	return err
}

// sweepGroups stores the status each group has reached and removes groups
// DELETED longer than the retention.
func (s *Service) sweepGroups(ctx context.Context) error {
	var errs []error
	for _, status := range []string{string(statusNew), string(statusActivating),
		string(statusDeleteScheduled), string(statusDeleting), string(statusDeleted)} {
		errs = append(errs, s.rounds(ctx, func(tx store.Tx, now time.Time) (int, error) {
			return s.advanceGroups(ctx, tx, status, now)
		}, nil))
	}
	return errors.Join(errs...)
}

// advanceGroups handles the groups stored with status whose next change is
// due at now.
func (s *Service) advanceGroups(ctx context.Context, tx store.Tx, status string, now time.Time) (int, error) {
	recs, _, err := tx.List(ctx, store.Query{Kind: kindGroup, Key: status, HasKey: true,
		Order: store.OrderRankAsc, RankMax: ms(now), HasRankMax: true, Limit: sweepBatch})
	if err != nil {
		return 0, err
	}
	for _, rec := range recs {
		g, err := decode[groupRec](rec)
		if err != nil {
			return 0, err
		}
		st := s.status(g, now)
		if st.gone {
			if err := tx.Delete(ctx, kindGroup, g.Name); err != nil {
				return 0, err
			}
			if err := tags.DeleteAll(ctx, tx, s.groupARN(g.Name)); err != nil {
				return 0, err
			}
			continue
		}
		g.Status, g.Since = st.status, ms(st.since)
		if err := s.putGroup(ctx, tx, g); err != nil {
			return 0, err
		}
	}
	return len(recs), nil
}

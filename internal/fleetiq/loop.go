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

// Run sweeps every Timings.SweepInterval while this replica holds the sweep lease,
// until ctx ends (then it returns nil).
func (s *Service) Run(ctx context.Context) error {
	return store.RunLeased(ctx, s.cfg.Store, store.Loop{Name: leaseName, Holder: s.cfg.ReplicaID,
		Interval: s.cfg.Timings.SweepInterval, Now: s.cfg.Now, Work: s.Sweep, Log: s.log.With("loop", "fleetiq sweep")})
}

// sweepStep is one kind of background work: the records due at now, and
// what to do with them in a transaction.
type sweepStep struct {
	name string
	// due selects the records due at now, at most sweepBatch of them.
	due func(now time.Time) store.Query
	// handle deals with the due records (listed again in tx).
	handle func(ctx context.Context, tx store.Tx, recs []store.Record, now time.Time) error
	// committed, when set, runs after each transaction that committed.
	committed func()
}

// Sweep runs the background work once: it releases expired claims,
// deregisters game servers whose health expired, and stores each group's
// status progression (removing groups DELETED longer than the retention).
// Run calls it; tests call it directly with a fake clock.
func (s *Service) Sweep(ctx context.Context) error {
	var errs []error
	for _, st := range s.steps() {
		if err := s.runStep(ctx, st); err != nil {
			errs = append(errs, errors.New(st.name+": "+err.Error()))
		}
	}
	return errors.Join(errs...)
}

// runStep looks for due records in a read transaction (so an idle sweep
// writes nothing) and handles them in write transactions of at most
// sweepBatch records, until fewer are due (or sweepRounds times).
func (s *Service) runStep(ctx context.Context, st sweepStep) error {
	for range sweepRounds {
		probe := st.due(s.now())
		probe.Limit = 1
		var due []store.Record
		err := s.cfg.Store.View(ctx, func(tx store.Tx) error {
			var err error
			due, _, err = tx.List(ctx, probe)
			return err
		})
		if err != nil || len(due) == 0 {
			return err
		}
		n := 0
		err = s.cfg.Store.Update(ctx, func(tx store.Tx) error {
			now := s.now()
			recs, _, err := tx.List(ctx, st.due(now))
			if err != nil {
				return err
			}
			n = len(recs)
			return st.handle(ctx, tx, recs, now)
		})
		if err != nil {
			return err
		}
		if st.committed != nil {
			st.committed()
		}
		if n < sweepBatch {
			return nil
		}
	}
	return nil
}

// steps returns the sweep's steps, in order.
func (s *Service) steps() []sweepStep {
	claims := store.Query{Kind: kindServer, Key: keyClaimed, HasKey: true}
	steps := []sweepStep{{
		name: "expired claims",
		due:  func(now time.Time) store.Query { return expiredClaims(claims, now, sweepBatch) },
		handle: func(ctx context.Context, tx store.Tx, recs []store.Record, now time.Time) error {
			_, err := releaseClaims(ctx, tx, recs, now)
			return err
		},
	}}
	if s.healthOn() {
		steps = append(steps, s.healthStep())
	}
	for _, status := range []string{string(statusNew), string(statusActivating),
		string(statusDeleteScheduled), string(statusDeleting), string(statusDeleted)} {
		steps = append(steps, sweepStep{
			name:   "groups " + status,
			due:    func(now time.Time) store.Query { return dueQuery(kindGroup, status, now) },
			handle: s.advanceGroups,
		})
	}
	return steps
}

// dueQuery selects records of kind with key whose Rank (a time) is due.
func dueQuery(kind store.Kind, key string, now time.Time) store.Query {
	return store.Query{Kind: kind, Key: key, HasKey: true, Order: store.OrderRankAsc,
		RankMax: ms(now), HasRankMax: true, Limit: sweepBatch}
}

// expired is a game server the health sweep deregistered.
type expired struct{ id, group, instance string }

// healthStep deregisters the game servers whose health deadline passed.
func (s *Service) healthStep() sweepStep {
	var gone []expired
	return sweepStep{
		name: "health expiry",
		due:  func(now time.Time) store.Query { return dueQuery(kindHealth, keyDue, now) },
		handle: func(ctx context.Context, tx store.Tx, recs []store.Record, now time.Time) error {
			gone = gone[:0]
			for _, rec := range recs {
				g, err := loadServer(ctx, tx, rec.ID)
				if err != nil {
					return err
				}
				if g == nil {
					err = tx.Delete(ctx, kindHealth, rec.ID)
				} else {
					err = removeServer(ctx, tx, g)
					gone = append(gone, expired{g.ID, g.Group, g.Instance})
				}
				if err != nil {
					return err
				}
			}
			return nil
		},
		committed: func() {
			for _, e := range gone {
				s.log.Info("fleetiq: game server deregistered: no health check", "gameServer", e.id,
					"group", e.group, "instance", e.instance, "healthExpiry", s.cfg.HealthExpiry)
			}
		},
	}
}

// advanceGroups stores the status each listed group has reached at now, or
// removes it when it was DELETED longer than the retention.
func (s *Service) advanceGroups(ctx context.Context, tx store.Tx, recs []store.Record, now time.Time) error {
	for _, rec := range recs {
		g, err := decode[groupRec](rec)
		if err != nil {
			return err
		}
		st := s.status(g, now)
		if st.gone {
			if err := tx.Delete(ctx, kindGroup, g.Name); err != nil {
				return err
			}
			if err := tags.DeleteAll(ctx, tx, s.groupARN(g.Name)); err != nil {
				return err
			}
			continue
		}
		g.Status, g.Since = st.status, ms(st.since)
		if err := s.putGroup(ctx, tx, g); err != nil {
			return err
		}
	}
	return nil
}

package fleetiq

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hoistgg/hoist/internal/api"
	"github.com/hoistgg/hoist/internal/store"
	"github.com/hoistgg/hoist/internal/tags"
)

// loopName names the sweep's shards: one per game server group.
const loopName = "fleetiq"

// sweepBatch is how many records one sweep transaction handles; sweepRounds
// caps the transactions per step and sweep (the next sweep continues).
const (
	sweepBatch  = 64
	sweepRounds = 64
)

// Run sweeps every Timings.SweepInterval, sharded by game server group:
// each pass sweeps the groups whose shards this replica holds, each
// group's writes fenced by its shard's lease, until ctx ends (then it
// returns nil).
func (s *Service) Run(ctx context.Context) error {
	return store.RunSharded(ctx, s.cfg.Store, store.ShardedLoop{Name: loopName, Holder: s.cfg.ReplicaID,
		Interval: s.cfg.Timings.SweepInterval, Keys: s.groupNames, Replicas: s.cfg.Replicas, Clock: s.cfg.Clock,
		Work: s.sweepHeld, Log: s.log.With("loop", "fleetiq sweep")})
}

// groupNames lists every group's name (DELETED ones too, until they are
// removed): the sweep's shard keys.
func (s *Service) groupNames(ctx context.Context) ([]string, error) {
	var names []string
	err := s.cfg.Store.View(ctx, func(tx store.Tx) error {
		names = names[:0]
		return store.Each(ctx, tx, store.Query{Kind: kindGroup, NoData: true}, func(r store.Record) error {
			names = append(names, r.ID)
			return nil
		})
	})
	return names, err
}

// sweepStep is one kind of background work for one group: the records due
// at now, and what to do with them in a transaction.
type sweepStep struct {
	name string
	// due lists at most limit records due at now.
	due func(ctx context.Context, tx store.Tx, now time.Time, limit int) ([]store.Record, error)
	// handle deals with the due records (listed again in tx).
	handle func(ctx context.Context, tx store.Tx, recs []store.Record, now time.Time) error
	// committed, when set, runs after each transaction that committed.
	committed func()
}

// Sweep runs the background work once over every group, unfenced: it
// releases expired claims, deregisters game servers whose health expired,
// and stores each group's status progression (removing groups DELETED
// longer than the retention). Tests call it directly with a fake clock;
// Run's passes (sweepHeld) cover the groups held.
func (s *Service) Sweep(ctx context.Context) error {
	names, err := s.groupNames(ctx)
	if err != nil {
		return err
	}
	return s.sweepHeld(ctx, store.HoldAll(names...))
}

// sweepHeld sweeps each group held, its writes fenced by its grant.
func (s *Service) sweepHeld(ctx context.Context, held *store.Held) error {
	var errs []error
	for _, group := range held.Keys() {
		g, _ := held.Grant(group)
		if err := s.sweepGroup(ctx, group, g); err != nil {
			errs = append(errs, fmt.Errorf("game server group %s: %w", group, err))
		}
	}
	return errors.Join(errs...)
}

// sweepGroup looks for the group's due records in one read transaction
// (so an idle sweep writes nothing), then runs the steps that have some.
func (s *Service) sweepGroup(ctx context.Context, group string, g store.Grant) error {
	steps := s.steps(group)
	due := make([]bool, len(steps))
	err := s.cfg.Store.View(ctx, func(tx store.Tx) error {
		now := s.now()
		for i, st := range steps {
			recs, err := st.due(ctx, tx, now, 1)
			if err != nil {
				return err
			}
			due[i] = len(recs) > 0
		}
		return nil
	})
	if err != nil {
		return err
	}
	var errs []error
	for i, st := range steps {
		if !due[i] {
			continue
		}
		if err := s.runStep(ctx, g, st); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", st.name, err))
		}
	}
	return errors.Join(errs...)
}

// runStep handles a step's due records in write transactions (fenced by g)
// of at most sweepBatch records, until fewer are due (or sweepRounds
// times).
func (s *Service) runStep(ctx context.Context, g store.Grant, st sweepStep) error {
	for range sweepRounds {
		n := 0
		err := store.UpdateIn(ctx, s.cfg.Store, g, func(tx store.Tx) error {
			now := s.now()
			recs, err := st.due(ctx, tx, now, sweepBatch)
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

// steps returns the sweep's steps for one group, in order.
func (s *Service) steps(group string) []sweepStep {
	claims := store.Query{Kind: kindServer, Parent: group, HasParent: true, Key: keyClaimed, HasKey: true}
	steps := []sweepStep{{
		name: "expired claims",
		due:  listDue(func(now time.Time) store.Query { return expiredClaims(claims, now, sweepBatch) }),
		handle: func(ctx context.Context, tx store.Tx, recs []store.Record, now time.Time) error {
			_, err := releaseClaims(ctx, tx, recs, now)
			return err
		},
	}}
	if s.healthOn() {
		steps = append(steps, s.healthStep(group))
	}
	steps = append(steps, s.instanceRanksStep(group))
	return append(steps, sweepStep{name: "group status", due: groupDue(group), handle: s.advanceGroups})
}

// instanceRanksStep rewrites the group's instance records that an earlier
// Hoist wrote with their busy count as Rank (now minus the count:
// instanceRank), so that claims find the busiest instance first. It reads
// once per group and process: once none is left, this Hoist writes no
// other (a replica of an earlier Hoist sharing the store, during a rolling
// upgrade, may).
func (s *Service) instanceRanksStep(group string) sweepStep {
	return sweepStep{
		name: "instance ranks",
		due: func(ctx context.Context, tx store.Tx, _ time.Time, limit int) ([]store.Record, error) {
			if _, done := s.ranksDone.Load(group); done {
				return nil, nil
			}
			recs, _, err := tx.List(ctx, store.Query{Kind: kindInstance, Parent: group, HasParent: true,
				Order: store.OrderRankDesc, Limit: limit})
			if err != nil {
				return nil, err
			}
			n := 0
			for n < len(recs) && recs[n].Rank > 0 {
				n++
			}
			if n == 0 {
				s.ranksDone.Store(group, true)
			}
			return recs[:n], nil
		},
		handle: func(ctx context.Context, tx store.Tx, recs []store.Record, _ time.Time) error {
			for _, rec := range recs {
				inst, err := decode[instanceRec](rec)
				if err != nil {
					return err
				}
				if err := putInstance(ctx, tx, inst); err != nil {
					return err
				}
			}
			return nil
		},
	}
}

// listDue makes a step's due function of a query.
func listDue(q func(now time.Time) store.Query) func(ctx context.Context, tx store.Tx, now time.Time, limit int) ([]store.Record, error) {
	return func(ctx context.Context, tx store.Tx, now time.Time, limit int) ([]store.Record, error) {
		due := q(now)
		due.Limit = limit
		recs, _, err := tx.List(ctx, due)
		return recs, err
	}
}

// groupDue lists the group's record when its stored status is due to move
// on (or, DELETED, to be removed).
func groupDue(group string) func(ctx context.Context, tx store.Tx, now time.Time, limit int) ([]store.Record, error) {
	return func(ctx context.Context, tx store.Tx, now time.Time, _ int) ([]store.Record, error) {
		rec, err := tx.Get(ctx, kindGroup, group)
		if errors.Is(err, store.ErrNotFound) {
			return nil, nil
		}
		if err != nil {
			return nil, err
		}
		switch api.GameServerGroupStatus(rec.Key) {
		case statusNew, statusActivating, statusDeleteScheduled, statusDeleting, statusDeleted:
			if rec.Rank <= ms(now) {
				return []store.Record{rec}, nil
			}
		}
		return nil, nil
	}
}

// dueQuery selects records of kind with key whose Rank (a time) is due.
func dueQuery(kind store.Kind, key string, now time.Time) store.Query {
	return store.Query{Kind: kind, Key: key, HasKey: true, Order: store.OrderRankAsc,
		RankMax: ms(now), HasRankMax: true, Limit: sweepBatch}
}

// expired is a game server the health sweep deregistered.
type expired struct{ id, group, instance string }

// healthStep deregisters the group's game servers whose health deadline
// passed.
func (s *Service) healthStep(group string) sweepStep {
	var gone []expired
	return sweepStep{
		name: "health expiry",
		due: listDue(func(now time.Time) store.Query {
			q := dueQuery(kindHealth, keyDue, now)
			q.Parent, q.HasParent = group, true
			return q
		}),
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

package postgres

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
)

// Statistics. PostgreSQL plans each statement from the statistics it
// keeps of hoist_records, which autovacuum gathers again once a tenth of
// the table changed, looking at most once a minute by default
// (autovacuum_naptime). In between, a fleet that grew from nothing to
// thousands of processes has no statistics of its own, and the placement
// attempt's read of the first idle process (in Rank order, `FOR UPDATE
// SKIP LOCKED`) was seen planned as a read of every process of the fleet
// and a sort, 2,000 buffers a placement, instead of a read of the index in
// order, a few. So every replica checks every AnalyzeEvery how much the
// table changed since its statistics were gathered, and when at least
// analyzeMin rows and a tenth of the table changed, one of them (a
// transaction-scoped advisory lock; the others pass) runs ANALYZE, which
// samples the table (at most 30,000 rows with the default statistics
// target), blocks no reader or writer, and gives way to a running one
// (lock_timeout).

// analyzeMin is the fewest changed rows that make the statistics due.
const analyzeMin = 500

// sqlAnalyzeDue reports whether hoist_records' statistics are due: the
// rows changed since they were gathered (inserted, updated, deleted) are
// at least $1 and a tenth of the live rows.
const sqlAnalyzeDue = `SELECT coalesce(n_mod_since_analyze, 0) >= greatest($1::bigint, n_live_tup / 10)
	FROM pg_stat_user_tables WHERE relid = 'hoist_records'::regclass`

// sqlAnalyzeLock is the advisory lock that lets one replica at a time
// gather the statistics of this schema's table.
const sqlAnalyzeLock = `SELECT pg_try_advisory_xact_lock(hashtextextended('hoist_analyze:' || current_schema(), 0))`

// analyze gathers hoist_records' statistics when they are due; ran
// reports that this call gathered them.
func (s *Store) analyze(ctx context.Context) (ran bool, err error) {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	var due bool
	if err := s.pool.QueryRow(ctx, sqlAnalyzeDue, analyzeMin).Scan(&due); err != nil {
		if errors.Is(err, pgx.ErrNoRows) {
			return false, nil
		}
		return false, err
	}
	if !due {
		return false, nil
	}
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var locked bool
		if err := tx.QueryRow(ctx, sqlAnalyzeLock).Scan(&locked); err != nil || !locked {
			return err // another replica gathers them
		}
		if _, err := tx.Exec(ctx, `SET LOCAL lock_timeout = '1s'`); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `ANALYZE hoist_records`); err != nil {
			return err
		}
		ran = true
		return nil
	})
	return ran, err
}

// analyzeLoop runs analyze every AnalyzeEvery until Close.
func (s *Store) analyzeLoop() {
	s.every(s.opts.AnalyzeEvery, func(ctx context.Context) {
		if _, err := s.analyze(ctx); err != nil && ctx.Err() == nil {
			s.log.Info("postgres: gathering the statistics of hoist_records (autovacuum gathers them later)", "err", err)
		}
	})
}

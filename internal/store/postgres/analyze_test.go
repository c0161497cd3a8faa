package postgres

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/hoistgg/hoist/internal/store"
	"github.com/hoistgg/hoist/internal/store/postgres/pgtest"
)

// TestStatisticsGathered: once enough of hoist_records changed, a
// replica's check gathers its statistics (ANALYZE) without waiting for
// autovacuum, and the placement attempt's read of the first idle process
// is then planned as an index read in Rank order (no Sort); with nothing
// changed since, the check runs nothing.
func TestStatisticsGathered(t *testing.T) {
	s := openTest(t, Options{AnalyzeEvery: 20 * time.Millisecond})
	ctx := t.Context()
	err := s.Update(ctx, func(tx store.Tx) error {
		for i := range 2 * analyzeMin {
			rec := store.Record{Kind: "Process", ID: fmt.Sprintf("p-%04d", i), Parent: "fleet-1", Key: "loc/idle",
				Rank: int64(1000 + i), Data: []byte(`{"a":1}`)}
			if err := tx.Insert(ctx, rec); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	pgtest.WaitFor(t, "the statistics gathered by the store", func() bool {
		var done bool
		err := s.pool.QueryRow(ctx, `SELECT last_analyze IS NOT NULL FROM pg_stat_user_tables WHERE relid = 'hoist_records'::regclass`).Scan(&done)
		if err != nil {
			t.Fatal(err)
		}
		return done
	})
	plan, err := s.Explain(ctx, store.Query{Kind: "Process", Parent: "fleet-1", HasParent: true, Key: "loc/idle", HasKey: true,
		Order: store.OrderRankAsc, Limit: 1, SkipHeld: true}, true)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(plan, "Sort") || !strings.Contains(plan, "Index") {
		t.Errorf("the first idle process is read with a sort, or not from an index:\n%s", plan)
	}
	if ran, err := s.analyze(ctx); err != nil || ran {
		t.Errorf("analyze with nothing changed since: ran %v (%v), want nothing run", ran, err)
	}
}

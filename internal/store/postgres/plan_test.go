package postgres

import (
	"context"
	"strings"
	"testing"

	"github.com/hoistgg/hoist/internal/store"
)

// planCases are the query shapes the domains use (internal/*: claims,
// placement, sessions, matchmaking, events), each with the index it must
// use.
func planCases() map[string]struct {
	q     store.Query
	index string
} {
	rankCursor := store.EncodeCursor(store.OrderRankAsc, false, &store.Record{Rank: 3, ID: "x"})
	rankDescCursor := store.EncodeCursor(store.OrderRankDesc, false, &store.Record{Rank: 3, ID: "x"})
	seqCursor := store.EncodeCursor(store.OrderCreated, true, &store.Record{Seq: 5})
	free := store.Query{Kind: "K", Parent: "p7", HasParent: true, Key: "free", HasKey: true, Limit: 1}
	with := func(q store.Query, f func(*store.Query)) store.Query { f(&q); return q }
	return map[string]struct {
		q     store.Query
		index string
	}{
		"get by id":           {store.Query{Kind: "K", Limit: 10}, "hoist_records_pkey"},
		"kind by id desc":     {store.Query{Kind: "K", Desc: true, Limit: 10}, "hoist_records_pkey"},
		"kind created":        {store.Query{Kind: "K", Order: store.OrderCreated, Limit: 10}, "hoist_records_kind_seq"},
		"kind created desc":   {store.Query{Kind: "K", Order: store.OrderCreated, Desc: true, After: seqCursor, Limit: 10}, "hoist_records_kind_seq"},
		"parent by id":        {store.Query{Kind: "K", Parent: "p7", HasParent: true, Limit: 10}, "hoist_records_kind_parent_id"},
		"parent created":      {store.Query{Kind: "K", Parent: "p7", HasParent: true, Order: store.OrderCreated, Limit: 10}, "hoist_records_kind_parent_seq"},
		"claim":               {with(free, func(q *store.Query) { q.Order = store.OrderRankAsc }), "hoist_records_kind_parent_key_rank"},
		"claim after":         {with(free, func(q *store.Query) { q.Order, q.After = store.OrderRankAsc, rankCursor }), "hoist_records_kind_parent_key_rank"},
		"rank desc":           {with(free, func(q *store.Query) { q.Order = store.OrderRankDesc }), "hoist_records_kind_parent_key_rank"},
		"rank desc after":     {with(free, func(q *store.Query) { q.Order, q.After = store.OrderRankDesc, rankDescCursor }), "hoist_records_kind_parent_key_rank"},
		"key rank, no parent": {store.Query{Kind: "K", Key: "free", HasKey: true, Order: store.OrderRankAsc, Limit: 1}, "hoist_records_kind_key_rank"},
		"key rank max":        {store.Query{Kind: "K", Key: "free", HasKey: true, RankMax: 4, HasRankMax: true, Order: store.OrderRankAsc, Limit: 10}, "hoist_records_kind_key_rank"},
		"key created":         {store.Query{Kind: "K", Key: "free", HasKey: true, Order: store.OrderCreated, Limit: 10}, "hoist_records_kind_key_seq"},
		"parent key rank max": {with(free, func(q *store.Query) { q.Order, q.RankMax, q.HasRankMax = store.OrderRankAsc, 4, true }), "hoist_records_kind_parent_key_rank"},
		"parent key, no data": {with(free, func(q *store.Query) { q.Order, q.NoData, q.Limit = store.OrderRankAsc, true, 4096 }), "hoist_records_kind_parent_key_rank"},
		"parent key created":  {with(free, func(q *store.Query) { q.Order, q.Limit = store.OrderCreated, 0 }), "hoist_records_kind_parent_key_rank"},
		"parent key by id":    {with(free, func(q *store.Query) { q.Limit = 0 }), "hoist_records_kind_parent_key_rank"},
	}
}

// TestQueryPlans pins the index each query shape the domains use takes on
// a table of 40,000 records, so that a schema or SQL change cannot quietly
// turn a claim into a table scan. A sort of the few rows an index range
// selects, or of the ties of one rank (Incremental Sort), is fine.
func TestQueryPlans(t *testing.T) {
	s := openTest(t, Options{})
	ctx := context.Background()
	_, err := s.pool.Exec(ctx, `INSERT INTO hoist_records (kind, id, parent, key, rank, data)
		SELECT k, convert_to('r' || i, 'UTF8'), convert_to('p' || (i % 100), 'UTF8'),
			convert_to(CASE WHEN i % 3 = 0 THEN 'free' ELSE 'taken' || (i % 50) END, 'UTF8'), i % 7, '\x00'
		FROM generate_series(1, 20000) i, (VALUES ('K'), ('Other')) AS kinds(k)`)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.pool.Exec(ctx, `ANALYZE hoist_records`); err != nil {
		t.Fatal(err)
	}
	for name, tc := range planCases() {
		t.Run(name, func(t *testing.T) {
			plan := explain(t, s, tc.q)
			if !strings.Contains(plan, " using "+tc.index+" ") && !strings.HasSuffix(plan, " using "+tc.index) &&
				!strings.Contains(plan, " on "+tc.index) {
				t.Errorf("plan does not use %s:\n%s", tc.index, plan)
			}
			if strings.Contains(plan, "Seq Scan") {
				t.Errorf("plan scans the table:\n%s", plan)
			}
		})
	}
}

// explain returns the plan of q's List statement.
func explain(t *testing.T, s *Store, q store.Query) string {
	t.Helper()
	plan, err := s.Explain(context.Background(), q, false)
	if err != nil {
		t.Fatal(err)
	}
	return plan
}

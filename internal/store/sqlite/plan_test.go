package sqlite

import (
	"context"
	"strings"
	"testing"

	"github.com/hoistgg/hoist/internal/store"
)

// TestQueryPlans pins the index each common query shape uses, so that a
// schema or SQL change cannot quietly turn a claim into a table scan or a
// full sort.
func TestQueryPlans(t *testing.T) {
	s := openTemp(t)
	rankCursor := store.EncodeCursor(store.OrderRankAsc, false, &store.Record{Rank: 3, ID: "x"})
	rankDescCursor := store.EncodeCursor(store.OrderRankDesc, false, &store.Record{Rank: 3, ID: "x"})
	seqCursor := store.EncodeCursor(store.OrderCreated, true, &store.Record{Seq: 5})
	free := store.Query{Kind: "K", Parent: "p", HasParent: true, Key: "free", HasKey: true, Limit: 1}
	with := func(q store.Query, f func(*store.Query)) store.Query { f(&q); return q }
	tests := map[string]struct {
		q     store.Query
		index string
	}{
		"kind by id":          {store.Query{Kind: "K", Limit: 10}, "records_kind_id"},
		"kind by id desc":     {store.Query{Kind: "K", Desc: true, Limit: 10}, "records_kind_id"},
		"kind created":        {store.Query{Kind: "K", Order: store.OrderCreated, Limit: 10}, "records_kind_seq"},
		"kind created desc":   {store.Query{Kind: "K", Order: store.OrderCreated, Desc: true, After: seqCursor}, "records_kind_seq"},
		"parent by id":        {store.Query{Kind: "K", Parent: "p", HasParent: true, Limit: 10}, "records_kind_parent_id"},
		"parent created":      {store.Query{Kind: "K", Parent: "p", HasParent: true, Order: store.OrderCreated}, "records_kind_parent_seq"},
		"claim":               {with(free, func(q *store.Query) { q.Order = store.OrderRankAsc }), "records_kind_parent_key_rank"},
		"claim after":         {with(free, func(q *store.Query) { q.Order, q.After = store.OrderRankAsc, rankCursor }), "records_kind_parent_key_rank"},
		"rank desc":           {with(free, func(q *store.Query) { q.Order = store.OrderRankDesc }), "records_kind_parent_key_rank"},
		"rank desc after":     {with(free, func(q *store.Query) { q.Order, q.After = store.OrderRankDesc, rankDescCursor }), "records_kind_parent_key_rank"},
		"key rank, no parent": {store.Query{Kind: "K", Key: "free", HasKey: true, Order: store.OrderRankAsc, Limit: 1}, "records_kind_key_rank"},
		"key rank max":        {store.Query{Kind: "K", Key: "free", HasKey: true, RankMax: 4, HasRankMax: true, Order: store.OrderRankAsc}, "records_kind_key_rank"},
		"parent key rank max": {with(free, func(q *store.Query) { q.Order, q.RankMax, q.HasRankMax = store.OrderRankAsc, 4, true }), "records_kind_parent_key_rank"},
		"parent key, no data": {with(free, func(q *store.Query) { q.Order, q.NoData, q.Limit = store.OrderRankAsc, true, 4096 }), "records_kind_parent_key_rank"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			plan := explain(t, s, tc.q)
			if !strings.Contains(plan, "INDEX "+tc.index+" ") {
				t.Errorf("plan %q does not use %s", plan, tc.index)
			}
			// A partial sort ("LAST TERM OF ORDER BY": ties on rank by id) is fine.
			if strings.Contains(plan, "TEMP B-TREE FOR ORDER BY") || strings.Contains(plan, "SCAN records") {
				t.Errorf("plan %q sorts or scans the whole table", plan)
			}
			if tc.q.NoData && !strings.Contains(plan, "COVERING INDEX") {
				t.Errorf("plan %q of a List without data reads the table", plan)
			}
		})
	}
}

// TestRankDescNextPlan pins the plan of the question listRankDesc asks
// after a full page (is there a record after the last?): an index range
// without a sort.
func TestRankDescNextPlan(t *testing.T) {
	s := openTemp(t)
	for _, q := range []store.Query{
		{Kind: "K", Parent: "p", HasParent: true, Key: "free", HasKey: true, Order: store.OrderRankDesc, Limit: 1},
		{Kind: "K", Key: "free", HasKey: true, Order: store.OrderRankDesc, Limit: 1},
	} {
		p, err := planQuery(q, false)
		if err != nil {
			t.Fatal(err)
		}
		k := p.key
		k.exists, k.after, k.limit = true, true, false
		args := cursorArgs(store.Cursor{Order: store.OrderRankDesc, Rank: 3, ID: "x"}, p.args[:p.filters:p.filters])
		plan := explainSQL(t, s, k.sql(), args)
		if !strings.Contains(plan, "INDEX records_kind_") || strings.Contains(plan, "TEMP B-TREE") || strings.Contains(plan, "SCAN") {
			t.Errorf("%s: plan %q", k.sql(), plan)
		}
	}
}

func explain(t *testing.T, s *Store, q store.Query) string {
	t.Helper()
	p, err := planQuery(q, false)
	if err != nil {
		t.Fatal(err)
	}
	return explainSQL(t, s, p.key.sql(), p.args)
}

func explainSQL(t *testing.T, s *Store, query string, args []any) string {
	t.Helper()
	rows, err := s.w.conn.c.QueryContext(context.Background(), "EXPLAIN QUERY PLAN "+query, args...)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var lines []string
	for rows.Next() {
		var id, parent, unused int
		var detail string
		if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
			t.Fatal(err)
		}
		lines = append(lines, detail)
	}
	return strings.Join(lines, " | ")
}

package search

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// randomSession draws a session from a small space, so that filters match
// some and values repeat.
func randomSession(rng *rand.Rand, i int) *Session {
	s := &Session{ID: fmt.Sprintf("gs-%03d", i), MaximumSessions: int64(rng.IntN(4)), PlayerSessionCount: int64(rng.IntN(4)),
		CreationTimeMillis: int64(rng.IntN(5))}
	if rng.IntN(3) > 0 {
		s.Name, s.HasName = fmt.Sprintf("n%d", rng.IntN(3)), true
	}
	for _, k := range []string{"a", "b", "c"} {
		if rng.IntN(3) > 0 {
			s.Properties = append(s.Properties, Property{k, fmt.Sprintf("v%d", rng.IntN(3))})
		}
	}
	return s
}

// randomExpr builds a random filter of depth at most d.
func randomExpr(rng *rand.Rand, d int) string {
	if d > 0 {
		switch rng.IntN(5) {
		case 0:
			return "(" + randomExpr(rng, d-1) + " AND " + randomExpr(rng, d-1) + ")"
		case 1:
			return "(" + randomExpr(rng, d-1) + " OR " + randomExpr(rng, d-1) + ")"
		case 2:
			return "NOT " + randomExpr(rng, d-1)
		}
	}
	eqne := []string{"=", "<>"}[rng.IntN(2)]
	switch rng.IntN(7) {
	case 0:
		return fmt.Sprintf("gameSessionProperties.%s %s 'v%d'", []string{"a", "b", "c", "d"}[rng.IntN(4)], eqne, rng.IntN(4))
	case 1:
		return fmt.Sprintf("gameSessionName %s 'n%d'", eqne, rng.IntN(4))
	case 2:
		return fmt.Sprintf("gameSessionId %s 'gs-%03d'", eqne, rng.IntN(40))
	case 3:
		return fmt.Sprintf("hasAvailablePlayerSessions %s %v", eqne, rng.IntN(2) == 0)
	}
	op := []string{"=", "<>", "<", ">", "<=", ">="}[rng.IntN(6)]
	attr := []string{"maximumSessions", "playerSessionCount", "creationTimeMillis"}[rng.IntN(3)]
	return fmt.Sprintf("%s %s %d", attr, op, rng.IntN(5))
}

var sorts = []string{"", "maximumSessions ASC", "playerSessionCount DESC", "creationTimeMillis ASC",
	"hasAvailablePlayerSessions DESC", "gameSessionName ASC", "gameSessionId DESC",
	"gameSessionProperties.a ASC", "gameSessionProperties.b DESC", "gameSessionProperties.d ASC"}

// TestTableMatchesEvaluator checks Table.Search against the plain
// evaluator (Expr.Match, Order.Key, a full sort) on random sessions,
// filters, sorts and pages, while sessions are replaced and removed.
func TestTableMatchesEvaluator(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	tab := NewTable()
	live := map[string]*Session{}
	locOf := map[string]string{}
	for round := range 300 {
		// Change the table: upserts and removes.
		for range 5 {
			i := rng.IntN(40)
			id := fmt.Sprintf("gs-%03d", i)
			if rng.IntN(4) == 0 {
				tab.Remove(id)
				delete(live, id)
				continue
			}
			s := randomSession(rng, i)
			loc := []string{"here", "there"}[rng.IntN(2)]
			tab.Upsert(s, loc)
			live[id], locOf[id] = s, loc
		}
		if tab.Len() != len(live) {
			t.Fatalf("round %d: Len %d, want %d", round, tab.Len(), len(live))
		}
		src := randomExpr(rng, 3)
		filter, err := ParseFilter(src)
		if err != nil {
			t.Fatalf("%s: %v", src, err)
		}
		var order Order
		if s := sorts[rng.IntN(len(sorts))]; s != "" {
			srt, err := ParseSort(s)
			if err != nil {
				t.Fatal(err)
			}
			order = OrderBy(&srt)
		}
		loc := []string{"", "here"}[rng.IntN(2)]
		var want []string
		var all []*Session
		for id, s := range live {
			if (loc == "" || locOf[id] == loc) && filter.Match(s) {
				all = append(all, s)
			}
		}
		slices.SortFunc(all, func(a, b *Session) int { return order.Compare(order.Key(a), order.Key(b)) })
		for _, s := range all {
			want = append(want, s.ID)
		}
		var got []string
		var after *Key
		for {
			ids, keys := tab.Search(filter, loc, order, after, 3)
			got = append(got, ids...)
			if len(ids) < 3 {
				break
			}
			after = &keys[len(keys)-1]
		}
		if !slices.Equal(got, want) {
			t.Fatalf("round %d: %s in %q sorted %v:\n got %v\nwant %v", round, src, loc, order.sort, got, want)
		}
	}
}

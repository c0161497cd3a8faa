package postgres

import (
	"context"
	"strings"

	"github.com/hoistgg/hoist/internal/store"
)

// Explain returns PostgreSQL's plan (EXPLAIN's lines, joined by newlines)
// for the statement a List of q runs, as in a Claim when claim is set, so
// that a domain's test can pin its hot query to an index read in order
// (no Sort). It runs nothing and locks nothing.
func (s *Store) Explain(ctx context.Context, q store.Query, claim bool) (string, error) {
	p, err := planQuery(q, false, claim)
	if err != nil {
		return "", err
	}
	return s.explain(ctx, p.shape.sql(), p.args)
}

// ExplainChild is Explain for the statement of a store.FirstWithChild
// of q and child.
func (s *Store) ExplainChild(ctx context.Context, q, child store.Query, idFrom int, claim bool) (string, error) {
	sql, args, err := childStatement(q, child, idFrom, claim)
	if err != nil {
		return "", err
	}
	return s.explain(ctx, sql, args)
}

func (s *Store) explain(ctx context.Context, sql string, args []any) (string, error) {
	rows, err := s.pool.Query(ctx, "EXPLAIN "+sql, args...)
	if err != nil {
		return "", connErr(ctx, "explain", err)
	}
	defer rows.Close()
	var lines []string
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			return "", err
		}
		lines = append(lines, line)
	}
	return strings.Join(lines, "\n"), rows.Err()
}

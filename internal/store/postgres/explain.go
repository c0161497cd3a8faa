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
	rows, err := s.pool.Query(ctx, "EXPLAIN "+p.shape.sql(), p.args...)
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

// Package sqlorder is the SQL that both SQL stores (internal/store/sqlite
// and internal/store/postgres) write alike for a List's order: its ORDER
// BY and its keyset condition, "strictly after the cursor". Both tables
// name the columns alike (seq, rank, id); only their placeholders differ.
package sqlorder

import "github.com/hoistgg/hoist/internal/store"

// After is the keyset condition "strictly after the cursor" of order o
// (desc: reversed, for store.OrderID and store.OrderCreated), to follow a
// WHERE. arg returns the placeholder of the next argument ($3 on
// PostgreSQL, ? on SQLite): After calls it once for the cursor's Seq or
// ID, and twice, rank then ID, for the rank orders. store.OrderRankDesc's
// condition writes the rank's placeholder twice: with positional
// placeholders (?) it takes the rank twice as an argument.
func After(o store.Order, desc bool, arg func() string) string {
	switch {
	case o == store.OrderCreated && desc:
		return ` AND seq < ` + arg()
	case o == store.OrderCreated:
		return ` AND seq > ` + arg()
	case o == store.OrderRankAsc:
		r, id := arg(), arg()
		return ` AND (rank, id) > (` + r + `, ` + id + `)`
	case o == store.OrderRankDesc:
		// rank <= r bounds the index range; the rest is a filter on it.
		r, id := arg(), arg()
		return ` AND rank <= ` + r + ` AND (rank < ` + r + ` OR id > ` + id + `)`
	case desc:
		return ` AND id < ` + arg()
	default:
		return ` AND id > ` + arg()
	}
}

// By is the ORDER BY clause of order o (desc: reversed, for store.OrderID
// and store.OrderCreated).
func By(o store.Order, desc bool) string {
	switch {
	case o == store.OrderCreated && desc:
		return ` ORDER BY seq DESC`
	case o == store.OrderCreated:
		return ` ORDER BY seq`
	case o == store.OrderRankAsc:
		return ` ORDER BY rank, id`
	case o == store.OrderRankDesc:
		return ` ORDER BY rank DESC, id`
	case desc:
		return ` ORDER BY id DESC`
	default:
		return ` ORDER BY id`
	}
}

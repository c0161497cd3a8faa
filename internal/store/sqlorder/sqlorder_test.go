package sqlorder

import (
	"strconv"
	"testing"

	"github.com/hoistgg/hoist/internal/store"
)

// TestAfterAndBy: the text each order gets, with numbered placeholders
// (PostgreSQL's) and positional ones (SQLite's).
func TestAfterAndBy(t *testing.T) {
	positional := func() string { return "?" }
	for _, tc := range []struct {
		o                    store.Order
		desc                 bool
		numbered, qmarks, by string
	}{
		{store.OrderID, false, ` AND id > $3`, ` AND id > ?`, ` ORDER BY id`},
		{store.OrderID, true, ` AND id < $3`, ` AND id < ?`, ` ORDER BY id DESC`},
		{store.OrderCreated, false, ` AND seq > $3`, ` AND seq > ?`, ` ORDER BY seq`},
		{store.OrderCreated, true, ` AND seq < $3`, ` AND seq < ?`, ` ORDER BY seq DESC`},
		{store.OrderRankAsc, false, ` AND (rank, id) > ($3, $4)`, ` AND (rank, id) > (?, ?)`, ` ORDER BY rank, id`},
		{store.OrderRankDesc, false, ` AND rank <= $3 AND (rank < $3 OR id > $4)`, ` AND rank <= ? AND (rank < ? OR id > ?)`, ` ORDER BY rank DESC, id`},
	} {
		n := 3
		numbered := func() string { n++; return "$" + strconv.Itoa(n-1) }
		if got := After(tc.o, tc.desc, numbered); got != tc.numbered {
			t.Errorf("After(%d, %v, numbered) = %q, want %q", tc.o, tc.desc, got, tc.numbered)
		}
		if got := After(tc.o, tc.desc, positional); got != tc.qmarks {
			t.Errorf("After(%d, %v, ?) = %q, want %q", tc.o, tc.desc, got, tc.qmarks)
		}
		if got := By(tc.o, tc.desc); got != tc.by {
			t.Errorf("By(%d, %v) = %q, want %q", tc.o, tc.desc, got, tc.by)
		}
	}
}

package postgres

import (
	"context"
	"errors"
	"testing"

	"github.com/hoistgg/hoist/internal/store"
)

// TestRoundTrips pins what the store's transactions cost in round trips
// (Stats.RoundTrips): BEGIN goes with the first statement, writes that
// need no answer with the next statement or COMMIT, a Read runs its
// statements without BEGIN or ROLLBACK.
func TestRoundTrips(t *testing.T) {
	s := openTest(t, Options{})
	ctx := context.Background()
	if err := s.Update(ctx, func(tx store.Tx) error {
		return tx.Put(ctx, store.Record{Kind: "K", ID: "a", Data: []byte("x")})
	}); err != nil {
		t.Fatal(err)
	}
	get := func(tx store.Tx) error { _, err := tx.Get(ctx, "K", "a"); return err }
	getPut := func(tx store.Tx) error {
		rec, err := tx.Get(ctx, "K", "a")
		if err != nil {
			return err
		}
		return tx.Put(ctx, rec)
	}
	for _, c := range []struct {
		name string
		run  func() error
		want int64
	}{
		{"a View of one Get (BEGIN with it, then ROLLBACK)", func() error { return s.View(ctx, get) }, 2},
		{"a Read of one Get", func() error { return store.Read(ctx, s, get) }, 1},
		{"a Read of two Gets", func() error {
			return store.Read(ctx, s, func(tx store.Tx) error { return errors.Join(get(tx), get(tx)) })
		}, 2},
		{"a Read of GetRefs", func() error {
			return store.Read(ctx, s, func(tx store.Tx) error {
				_, err := store.GetRefs(ctx, tx, []store.Ref{{Kind: "K", ID: "a"}, {Kind: "K", ID: "b"}})
				return err
			})
		}, 1},
		{"an Update of a Get and a Put (the Put with COMMIT)", func() error { return s.Update(ctx, getPut) }, 2},
		{"a Claim of a Get and a Put", func() error { return s.Claim(ctx, getPut) }, 2},
		{"an Update of a Put alone", func() error {
			return s.Update(ctx, func(tx store.Tx) error { return tx.Put(ctx, store.Record{Kind: "K", ID: "b"}) })
		}, 1},
		{"an Update that runs nothing", func() error { return s.Update(ctx, func(store.Tx) error { return nil }) }, 0},
	} {
		before := s.Stats().RoundTrips
		if err := c.run(); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if got := s.Stats().RoundTrips - before; got != c.want {
			t.Errorf("%s: %d round trips, want %d", c.name, got, c.want)
		}
	}
}

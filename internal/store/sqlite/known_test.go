package sqlite

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/hoistgg/hoist/internal/store"
)

// TestPutKnown checks Put of records the same Update read or wrote (which
// updates only the columns that change, by rowid): every index must follow,
// Seq must stay, and records deleted or listed in the turn must be handled.
func TestPutKnown(t *testing.T) {
	s := openTemp(t)
	ctx := context.Background()
	rec := func(id, parent, key string, rank int64) store.Record {
		return store.Record{Kind: "K", ID: id, Parent: parent, Key: key, Rank: rank, Data: []byte(`"` + id + parent + key + `"`)}
	}
	update := func(fn func(tx store.Tx) error) {
		t.Helper()
		if err := s.Update(ctx, fn); err != nil {
			t.Fatal(err)
		}
	}
	update(func(tx store.Tx) error {
		for i := range 5 {
			if err := tx.Insert(ctx, rec(fmt.Sprint("r", i), "p1", "free", int64(i))); err != nil {
				return err
			}
		}
		return nil
	})
	seqs := map[string]int64{}
	update(func(tx store.Tx) error {
		recs, _, err := tx.List(ctx, store.Query{Kind: "K"})
		for _, r := range recs {
			seqs[r.ID] = r.Seq
		}
		return err
	})

	update(func(tx store.Tx) error {
		// r0: read by Get, then Data only, then Key and Rank, then Parent.
		if _, err := tx.Get(ctx, "K", "r0"); err != nil {
			return err
		}
		for _, r := range []store.Record{rec("r0", "p1", "free", 0), rec("r0", "p1", "taken", 9), rec("r0", "p2", "taken", 9)} {
			if err := tx.Put(ctx, r); err != nil {
				return err
			}
		}
		// r1, r2: read by List, then moved.
		if _, _, err := tx.List(ctx, store.Query{Kind: "K", Parent: "p1", HasParent: true, Key: "free", HasKey: true,
			Order: store.OrderRankAsc, Limit: 2}); err != nil {
			return err
		}
		if err := tx.Put(ctx, rec("r1", "p1", "taken", 1)); err != nil {
			return err
		}
		if err := tx.Put(ctx, rec("r2", "p3", "free", 2)); err != nil {
			return err
		}
		// r3: deleted, inserted again (a new Seq), then moved.
		if _, err := tx.Get(ctx, "K", "r3"); err != nil {
			return err
		}
		if err := tx.Delete(ctx, "K", "r3"); err != nil {
			return err
		}
		if err := tx.Insert(ctx, rec("r3", "p1", "free", 3)); err != nil {
			return err
		}
		if err := tx.Put(ctx, rec("r3", "p1", "taken", 30)); err != nil {
			return err
		}
		// r9: new by Put, then Put again in the same turn.
		if err := tx.Put(ctx, rec("r9", "p1", "free", 90)); err != nil {
			return err
		}
		return tx.Put(ctx, rec("r9", "p1", "free", 91))
	})
	// A function that fails after a known Put leaves nothing behind.
	err := s.Update(ctx, func(tx store.Tx) error {
		if _, err := tx.Get(ctx, "K", "r4"); err != nil {
			return err
		}
		if err := tx.Put(ctx, rec("r4", "p9", "gone", 99)); err != nil {
			return err
		}
		return fmt.Errorf("changed my mind")
	})
	if err == nil {
		t.Fatal("failing Update returned nil")
	}

	want := map[string]store.Record{
		"r0": rec("r0", "p2", "taken", 9),
		"r1": rec("r1", "p1", "taken", 1),
		"r2": rec("r2", "p3", "free", 2),
		"r3": rec("r3", "p1", "taken", 30),
		"r4": rec("r4", "p1", "free", 4),
		"r9": rec("r9", "p1", "free", 91),
	}
	err = s.View(ctx, func(tx store.Tx) error {
		for id, w := range want {
			got, err := tx.Get(ctx, "K", id)
			if err != nil {
				return err
			}
			if got.Parent != w.Parent || got.Key != w.Key || got.Rank != w.Rank || string(got.Data) != string(w.Data) {
				t.Errorf("%s = %+v, want %+v", id, got, w)
			}
			if old, ok := seqs[id]; ok && id != "r3" && got.Seq != old {
				t.Errorf("%s: Seq %d, want %d kept", id, got.Seq, old)
			}
			if id == "r3" && got.Seq <= seqs["r4"] {
				t.Errorf("r3 inserted again kept Seq %d", got.Seq)
			}
		}
		// Every index agrees with the records.
		for _, q := range []store.Query{
			{Kind: "K", Parent: "p1", HasParent: true, Key: "taken", HasKey: true, Order: store.OrderRankAsc},
			{Kind: "K", Key: "taken", HasKey: true, Order: store.OrderRankDesc},
			{Kind: "K", Parent: "p1", HasParent: true, Order: store.OrderCreated},
			{Kind: "K", Parent: "p1", HasParent: true, Order: store.OrderID},
			{Kind: "K", Key: "free", HasKey: true, RankMax: 50, HasRankMax: true, Order: store.OrderRankAsc},
		} {
			recs, _, err := tx.List(ctx, q)
			if err != nil {
				return err
			}
			var got, exp []string
			for _, r := range recs {
				got = append(got, r.ID)
			}
			for id, w := range want {
				if (!q.HasParent || w.Parent == q.Parent) && (!q.HasKey || w.Key == q.Key) && (!q.HasRankMax || w.Rank <= q.RankMax) {
					exp = append(exp, id)
				}
			}
			slices.Sort(got)
			slices.Sort(exp)
			if !slices.Equal(got, exp) {
				t.Errorf("List %+v = %v, want %v", q, got, exp)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

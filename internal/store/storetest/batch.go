package storetest

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"testing"

	"github.com/hoistgg/hoist/internal/store"
)

// The batch helpers: store.GetMany, store.GetRefs, store.InsertNew,
// store.Replace, store.DeleteMany and store.FirstWithChild, which a
// backend may serve in fewer round trips (store.ManyGetter,
// store.RefsGetter, store.NewInserter, store.Replacer,
// store.ManyDeleter, store.ChildFinder)
// and which must then mean what their one-record forms mean.
var batchTests = []test{
	{"GetMany", plain(testGetMany)},
	{"GetManyReadsYourWrites", plain(testGetManyReadsYourWrites)},
	{"GetManyInClaimHolds", plain(testGetManyInClaimHolds)},
	{"GetRefs", plain(testGetRefs)},
	{"GetRefsInClaimHolds", plain(testGetRefsInClaimHolds)},
	{"InsertNew", plain(testInsertNew)},
	{"InsertNewExisting", plain(testInsertNewExisting)},
	{"InsertNewWatched", plain(testInsertNewWatched)},
	{"Replace", plain(testReplace)},
	{"DeleteMany", plain(testDeleteMany)},
	{"FirstWithChild", plain(testFirstWithChild)},
	{"FirstWithChildClaimsDistinct", plain(testFirstWithChildClaimsDistinct)},
}

// testGetMany: the records that exist, in the order asked, each once; in a
// View, an Update and a Claim alike.
func testGetMany(t *testing.T, s store.Store) {
	a := store.Record{Kind: kindItem, ID: "a", Parent: "p", Key: "k", Rank: 7, Data: []byte(`{"a":1}`)}
	b := store.Record{Kind: kindItem, ID: "b", Data: []byte("two")}
	c := store.Record{Kind: kindItem, ID: "c"}
	insert(t, s, a, b, c, store.Record{Kind: kindOther, ID: "d"})
	want := []store.Record{c, a}
	inEveryTx(t, s, func(tx store.Tx) error {
		got, err := store.GetMany(t.Context(), tx, kindItem, []string{"c", "missing", "a", "d", "c"})
		if err != nil {
			return err
		}
		if len(got) != len(want) {
			return fmt.Errorf("got %v, want [c a]", ids(got))
		}
		for i := range want {
			if !sameRecord(got[i], want[i]) || got[i].Seq <= 0 {
				return fmt.Errorf("record %d = %+v, want %+v with a Seq", i, got[i], want[i])
			}
		}
		if got, err := store.GetMany(t.Context(), tx, kindItem, nil); err != nil || len(got) != 0 {
			return fmt.Errorf("no IDs: %v (%v), want none", ids(got), err)
		}
		return nil
	})
	seq := mustGet(t, s, kindItem, "a").Seq
	err := s.View(t.Context(), func(tx store.Tx) error {
		got, err := store.GetMany(t.Context(), tx, kindItem, []string{"a"})
		if err == nil && got[0].Seq != seq {
			err = errors.New("a different Seq than Get's")
		}
		return err
	})
	if err != nil {
		t.Error(err)
	}
}

// inEveryTx runs fn in a View, an Update and a Claim, reporting each
// error with the transaction's name.
func inEveryTx(t *testing.T, s store.Store, fn func(tx store.Tx) error) {
	t.Helper()
	for _, r := range []struct {
		name string
		run  func(context.Context, func(store.Tx) error) error
	}{{"View", s.View}, {"Update", s.Update}, {"Claim", s.Claim}} {
		if err := r.run(t.Context(), fn); err != nil {
			t.Errorf("%s: %v", r.name, err)
		}
	}
}

// testGetManyReadsYourWrites: a GetMany after writes in the same
// transaction (a Put that may not have reached the backend yet, an
// insert, a delete) reads them.
func testGetManyReadsYourWrites(t *testing.T, s store.Store) {
	insert(t, s, store.Record{Kind: kindItem, ID: "a", Key: "old"}, store.Record{Kind: kindItem, ID: "b"})
	for _, run := range []func(context.Context, func(store.Tx) error) error{s.Update, s.Claim} {
		err := run(t.Context(), func(tx store.Tx) error {
			ctx := t.Context()
			if err := tx.Put(ctx, store.Record{Kind: kindItem, ID: "a", Key: "new"}); err != nil {
				return err
			}
			if err := store.InsertNew(ctx, tx, store.Record{Kind: kindItem, ID: "n", Key: "fresh"}); err != nil {
				return err
			}
			if err := tx.Delete(ctx, kindItem, "b"); err != nil {
				return err
			}
			got, err := store.GetMany(ctx, tx, kindItem, []string{"a", "b", "n"})
			if err != nil {
				return err
			}
			if len(got) != 2 || got[0].Key != "new" || got[1].ID != "n" || got[1].Key != "fresh" {
				return fmt.Errorf("got %+v, want a (new) and n (fresh)", got)
			}
			return errBoom // keep the store as it was for the next run
		})
		if !errors.Is(err, errBoom) {
			t.Fatal(err)
		}
	}
}

// testGetManyInClaimHolds: records a Claim read with GetMany are held
// until it ends, so increments by concurrent Claims are all kept.
func testGetManyInClaimHolds(t *testing.T, s store.Store) {
	insert(t, s, store.Record{Kind: kindItem, ID: "n1", Data: []byte("0")}, store.Record{Kind: kindItem, ID: "n2", Data: []byte("0")})
	incrementsKept(t, s, []string{"n1", "n2"}, func(tx store.Tx) ([]store.Record, error) {
		recs, err := store.GetMany(t.Context(), tx, kindItem, []string{"n2", "n1"})
		if err == nil && len(recs) != 2 {
			err = fmt.Errorf("got %v, want n2 and n1", ids(recs))
		}
		return recs, err
	})
}

// incrementsKept runs 8 workers of 10 Claims each that read records with
// read (which holds them) and write each back with its number (Data) plus
// one, and checks that the records ids (of kindItem) count every
// increment: none was lost to a Claim that read a record another held.
func incrementsKept(t *testing.T, s store.Store, ids []string, read func(tx store.Tx) ([]store.Record, error)) {
	const workers, each = 8, 10
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for range workers {
		wg.Go(func() {
			for range each {
				err := s.Claim(t.Context(), func(tx store.Tx) error {
					recs, err := read(tx)
					if err != nil {
						return err
					}
					for _, r := range recs {
						n, err := strconv.Atoi(string(r.Data))
						if err != nil {
							return err
						}
						r.Data = []byte(strconv.Itoa(n + 1))
						if err := tx.Put(t.Context(), r); err != nil {
							return err
						}
					}
					return nil
				})
				if err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for _, id := range ids {
		if got := string(mustGet(t, s, kindItem, id).Data); got != strconv.Itoa(workers*each) {
			t.Errorf("%s = %s after %d increments", id, got, workers*each)
		}
	}
}

// testGetRefs: a Got for each ref in order, found or not, of any kind,
// held or not; in a View, an Update and a Claim alike; after a write in
// the same transaction (a Put that may not have reached the backend yet),
// the version written.
func testGetRefs(t *testing.T, s store.Store) {
	a := store.Record{Kind: kindItem, ID: "a", Parent: "p", Key: "k", Rank: 7, Data: []byte(`{"a":1}`)}
	d := store.Record{Kind: kindOther, ID: "d", Data: []byte("four")}
	insert(t, s, a, d, store.Record{Kind: kindItem, ID: "b", Key: "old"})
	refs := []store.Ref{{Kind: kindOther, ID: "d"}, {Kind: kindItem, ID: "missing"}, {Kind: kindItem, ID: "a", Unheld: true},
		{Kind: kindOther, ID: "a"}, {Kind: kindItem, ID: "a"}}
	want := []*store.Record{&d, nil, &a, nil, &a}
	inEveryTx(t, s, func(tx store.Tx) error {
		got, err := store.GetRefs(t.Context(), tx, refs)
		if err != nil {
			return err
		}
		if len(got) != len(refs) {
			return fmt.Errorf("%d results for %d refs", len(got), len(refs))
		}
		for i, w := range want {
			switch {
			case w == nil && got[i].Found:
				return fmt.Errorf("ref %d (%+v) found %+v, want none", i, refs[i], got[i].Record)
			case w != nil && (!got[i].Found || !sameRecord(got[i].Record, *w) || got[i].Record.Seq <= 0):
				return fmt.Errorf("ref %d (%+v) = %+v, want %+v with a Seq", i, refs[i], got[i], *w)
			}
		}
		if got, err := store.GetRefs(t.Context(), tx, nil); err != nil || len(got) != 0 {
			return fmt.Errorf("no refs: %v (%v), want none", got, err)
		}
		return nil
	})
	for _, run := range []func(context.Context, func(store.Tx) error) error{s.Update, s.Claim} {
		err := run(t.Context(), func(tx store.Tx) error {
			if err := tx.Put(t.Context(), store.Record{Kind: kindItem, ID: "b", Key: "new"}); err != nil {
				return err
			}
			got, err := store.GetRefs(t.Context(), tx, []store.Ref{{Kind: kindItem, ID: "b"}, {Kind: kindItem, ID: "b", Unheld: true}})
			if err != nil {
				return err
			}
			for i, g := range got {
				if !g.Found || g.Record.Key != "new" {
					return fmt.Errorf("ref %d after a Put: %+v, want Key new", i, g)
				}
			}
			return errBoom // nothing kept
		})
		if !errors.Is(err, errBoom) {
			t.Error(err)
		}
	}
}

// testGetRefsInClaimHolds: a record a Claim read with GetRefs (not
// Unheld) is held until it ends, so increments by concurrent Claims are
// all kept.
func testGetRefsInClaimHolds(t *testing.T, s store.Store) {
	insert(t, s, store.Record{Kind: kindItem, ID: "n", Data: []byte("0")}, store.Record{Kind: kindOther, ID: "o"})
	incrementsKept(t, s, []string{"n"}, func(tx store.Tx) ([]store.Record, error) {
		got, err := store.GetRefs(t.Context(), tx, []store.Ref{{Kind: kindOther, ID: "o", Unheld: true}, {Kind: kindItem, ID: "n"}})
		if err != nil {
			return nil, err
		}
		if !got[0].Found || !got[1].Found {
			return nil, fmt.Errorf("got %+v, want o and n", got)
		}
		return []store.Record{got[1].Record}, nil
	})
}

// testInsertNew: the record is there after the commit, with a Seq, and
// the transaction reads it back.
func testInsertNew(t *testing.T, s store.Store) {
	want := store.Record{Kind: kindItem, ID: "e-1", Parent: "p", Key: "k", Rank: 3, Data: []byte(`{"x":2}`)}
	err := s.Update(t.Context(), func(tx store.Tx) error {
		data := slices.Clone(want.Data)
		rec := want
		rec.Data = data
		if err := store.InsertNew(t.Context(), tx, rec); err != nil {
			return err
		}
		data[0] = 'X' // the caller may reuse its buffer
		got, err := tx.Get(t.Context(), kindItem, "e-1")
		if err != nil || !sameRecord(got, want) {
			return fmt.Errorf("read back %+v (%v), want %+v", got, err, want)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := mustGet(t, s, kindItem, "e-1"); !sameRecord(got, want) || got.Seq <= 0 {
		t.Errorf("after the commit %+v, want %+v with a Seq", got, want)
	}
	err = s.View(t.Context(), func(tx store.Tx) error {
		return store.InsertNew(t.Context(), tx, store.Record{Kind: kindItem, ID: "e-2"})
	})
	if err == nil {
		t.Error("InsertNew in a View succeeded")
	}
	mustNotExist(t, s, kindItem, "e-2")
}

// testInsertNewExisting: an ID that exists fails the transaction (with
// ErrExists, wherever it shows), the existing record unchanged and the
// transaction's other writes not kept.
func testInsertNewExisting(t *testing.T, s store.Store) {
	orig := store.Record{Kind: kindItem, ID: "x", Key: "k1", Data: []byte("one")}
	insert(t, s, orig)
	for _, run := range []func(context.Context, func(store.Tx) error) error{s.Update, s.Claim} {
		err := run(t.Context(), func(tx store.Tx) error {
			if err := tx.Put(t.Context(), store.Record{Kind: kindItem, ID: "other"}); err != nil {
				return err
			}
			return store.InsertNew(t.Context(), tx, store.Record{Kind: kindItem, ID: "x", Data: []byte("two")})
		})
		if !errors.Is(err, store.ErrExists) {
			t.Fatalf("InsertNew of an existing ID: %v, want ErrExists", err)
		}
		if got := mustGet(t, s, kindItem, "x"); !sameRecord(got, orig) {
			t.Errorf("x = %+v, want unchanged %+v", got, orig)
		}
		mustNotExist(t, s, kindItem, "other")
	}
}

// testInsertNewWatched: an InsertNew of a watched kind is in the change
// feed.
func testInsertNewWatched(t *testing.T, s store.Store) {
	s.Watch(kindItem)
	_, head := changes(t, s, "", 0)
	err := s.Update(t.Context(), func(tx store.Tx) error {
		return store.InsertNew(t.Context(), tx, store.Record{Kind: kindItem, ID: "w", Key: "k"})
	})
	if err != nil {
		t.Fatal(err)
	}
	chs, _ := changes(t, s, head, 0)
	if len(chs) != 1 || chs[0].Record.ID != "w" || chs[0].Deleted {
		t.Errorf("changes %+v, want the insert of w", chs)
	}
}

// testReplace: a replaced record has the new contents and a new, greater
// Seq (a Put keeps it); a missing one is inserted; the transaction reads
// it back; the change feed records it.
func testReplace(t *testing.T, s store.Store) {
	s.Watch(kindItem)
	insert(t, s, store.Record{Kind: kindItem, ID: "r", Parent: "p", Key: "old", Data: []byte("one")})
	old := mustGet(t, s, kindItem, "r")
	_, head := changes(t, s, "", 0)
	want := store.Record{Kind: kindItem, ID: "r", Parent: "q", Key: "new", Rank: 5, Data: []byte("two")}
	fresh := store.Record{Kind: kindItem, ID: "f", Key: "k"}
	err := s.Update(t.Context(), func(tx store.Tx) error {
		if err := store.Replace(t.Context(), tx, want); err != nil {
			return err
		}
		if err := store.Replace(t.Context(), tx, fresh); err != nil {
			return err
		}
		got, err := tx.Get(t.Context(), kindItem, "r")
		if err != nil || !sameRecord(got, want) || got.Seq <= old.Seq {
			return fmt.Errorf("read back %+v (%v), want %+v with a Seq above %d", got, err, want, old.Seq)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	got := mustGet(t, s, kindItem, "r")
	if !sameRecord(got, want) || got.Seq <= old.Seq {
		t.Errorf("after the commit %+v, want %+v with a Seq above %d", got, want, old.Seq)
	}
	mustGet(t, s, kindItem, "f")
	chs, _ := changes(t, s, head, 0)
	var seen []string
	for _, c := range chs {
		if !c.Deleted {
			seen = append(seen, c.Record.ID)
		}
	}
	slices.Sort(seen)
	if !slices.Equal(seen, []string{"f", "r"}) {
		t.Errorf("changes %+v, want r and f as they are", chs)
	}
	err = s.View(t.Context(), func(tx store.Tx) error {
		return store.Replace(t.Context(), tx, store.Record{Kind: kindItem, ID: "v"})
	})
	if err == nil {
		t.Error("Replace in a View succeeded")
	}
}

// testDeleteMany: the records of the IDs that exist are deleted, missing
// ones are no error, other kinds are kept; the transaction sees them gone;
// a failed transaction keeps them; the change feed records the deletes;
// a View refuses.
func testDeleteMany(t *testing.T, s store.Store) {
	s.Watch(kindItem)
	insert(t, s, store.Record{Kind: kindItem, ID: "a"}, store.Record{Kind: kindItem, ID: "b"},
		store.Record{Kind: kindItem, ID: "c"}, store.Record{Kind: kindOther, ID: "a"})
	_, head := changes(t, s, "", 0)
	err := s.Update(t.Context(), func(tx store.Tx) error {
		if err := store.DeleteMany(t.Context(), tx, kindItem, []string{"a", "missing", "c"}); err != nil {
			return err
		}
		return errors.New("rolled back")
	})
	if err == nil || err.Error() != "rolled back" {
		t.Fatal(err)
	}
	mustGet(t, s, kindItem, "a")
	for _, run := range []func(context.Context, func(store.Tx) error) error{s.Update, s.Claim} {
		err := run(t.Context(), func(tx store.Tx) error {
			if err := store.DeleteMany(t.Context(), tx, kindItem, []string{"a", "missing", "c"}); err != nil {
				return err
			}
			if err := store.DeleteMany(t.Context(), tx, kindItem, nil); err != nil {
				return err
			}
			if _, err := tx.Get(t.Context(), kindItem, "a"); !errors.Is(err, store.ErrNotFound) {
				return fmt.Errorf("a read back after its delete: %v", err)
			}
			if n, err := tx.Count(t.Context(), store.Query{Kind: kindItem}); err != nil || n != 1 {
				return fmt.Errorf("%d items left (%v), want b", n, err)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	mustNotExist(t, s, kindItem, "a")
	mustNotExist(t, s, kindItem, "c")
	mustGet(t, s, kindItem, "b")
	mustGet(t, s, kindOther, "a")
	chs, _ := changes(t, s, head, 0)
	var gone []string
	for _, c := range chs {
		if c.Deleted {
			gone = append(gone, c.Record.ID)
		}
	}
	slices.Sort(gone)
	if !slices.Equal(gone, []string{"a", "c"}) {
		t.Errorf("changes %+v, want the deletes of a and c", chs)
	}
	err = s.View(t.Context(), func(tx store.Tx) error {
		return store.DeleteMany(t.Context(), tx, kindItem, []string{"b"})
	})
	if err == nil {
		t.Error("DeleteMany in a View succeeded")
	}
	mustGet(t, s, kindItem, "b")
}

// testFirstWithChild: the first parent in its query's order that has a
// child (a record of the child query whose Key is the prefix followed by
// the parent's ID from byte idFrom on: "g/i2" has the children of Key
// "A/i2" with idFrom 2), with its first child in the child query's order;
// parents of other keys, and children of other parents, kinds or
// prefixes, do not count; the transaction's own writes are seen; in a
// View, an Update and a Claim alike, with and without SkipHeld.
func testFirstWithChild(t *testing.T, s store.Store) {
	insert(t, s,
		store.Record{Kind: kindItem, ID: "g/i1", Parent: "g", Key: "on", Rank: -3}, // the busiest, no child
		store.Record{Kind: kindItem, ID: "g/i2", Parent: "g", Key: "on", Rank: -2, Data: []byte("two")},
		store.Record{Kind: kindItem, ID: "g/i3", Parent: "g", Key: "on", Rank: -2},
		store.Record{Kind: kindItem, ID: "g/i0", Parent: "g", Key: "off", Rank: -9},
		store.Record{Kind: kindItem, ID: "h/h1", Parent: "h", Key: "on", Rank: -9},
		// Children: i1's are of another group, kind or prefix.
		store.Record{Kind: kindOther, ID: "x1", Parent: "other", Key: "A/i1"},
		store.Record{Kind: kindItem, ID: "x2", Parent: "g", Key: "A/i1"},
		store.Record{Kind: kindOther, ID: "x3", Parent: "g", Key: "B/i1"},
		store.Record{Kind: kindOther, ID: "x4", Parent: "g", Key: "A/i0"},
		store.Record{Kind: kindOther, ID: "x5", Parent: "g", Key: "A/h1"},
		store.Record{Kind: kindOther, ID: "s9", Parent: "g", Key: "A/i2", Rank: 9},
		store.Record{Kind: kindOther, ID: "s4", Parent: "g", Key: "A/i2", Rank: 4, Data: []byte("four")},
		store.Record{Kind: kindOther, ID: "s5", Parent: "g", Key: "A/i3", Rank: 5},
	)
	q := store.Query{Kind: kindItem, Parent: "g", HasParent: true, Key: "on", HasKey: true, Order: store.OrderRankAsc, Limit: 7, After: "ignored"}
	child := store.Query{Kind: kindOther, Parent: "g", HasParent: true, Key: "A/", HasKey: true, Order: store.OrderRankAsc, Limit: 3}
	want := func(tx store.Tx, q, child store.Query, parent, first string) error {
		p, c, found, err := store.FirstWithChild(t.Context(), tx, q, child, 2)
		switch {
		case err != nil:
			return err
		case parent == "" && found:
			return fmt.Errorf("found %s with %s, want none", p.ID, c.ID)
		case parent == "":
			return nil
		case !found || p.ID != "g/"+parent || c.ID != first:
			return fmt.Errorf("found %v: %s with %s, want g/%s with %s", found, p.ID, c.ID, parent, first)
		case p.Kind != q.Kind || c.Kind != child.Kind || c.Key != "A/"+parent || p.Seq <= 0 || c.Seq <= 0:
			return fmt.Errorf("records %+v and %+v", p, c)
		}
		return nil
	}
	for _, skip := range []bool{false, true} {
		q.SkipHeld, child.SkipHeld = skip, skip
		inEveryTx(t, s, func(tx store.Tx) error {
			if err := want(tx, q, child, "i2", "s4"); err != nil {
				return err
			}
			p, c, _, _ := store.FirstWithChild(t.Context(), tx, q, child, 2)
			if string(p.Data) != "two" || string(c.Data) != "four" || p.Rank != -2 || c.Rank != 4 || p.Key != "on" || c.Parent != "g" {
				return fmt.Errorf("data %q and %q, records %+v and %+v", p.Data, c.Data, p, c)
			}
			nd, ndc := q, child
			nd.NoData, ndc.NoData = true, true
			if p, c, _, err := store.FirstWithChild(t.Context(), tx, nd, ndc, 2); err != nil || p.Data != nil || c.Data != nil || p.ID != "g/i2" {
				return fmt.Errorf("NoData: %+v and %+v (%v)", p, c, err)
			}
			other := child
			other.Parent = "none"
			if err := want(tx, q, other, "", ""); err != nil {
				return err
			}
			// From byte 0: the children of Key "A/g/i2" (none).
			if _, _, found, err := store.FirstWithChild(t.Context(), tx, q, child, 0); err != nil || found {
				return fmt.Errorf("idFrom 0: found %v (%v), want none", found, err)
			}
			return nil
		})
	}
	// Its own writes: a child for i1 (now the first), then i1 gone.
	for _, run := range []func(context.Context, func(store.Tx) error) error{s.Update, s.Claim} {
		err := run(t.Context(), func(tx store.Tx) error {
			if err := tx.Put(t.Context(), store.Record{Kind: kindOther, ID: "s1", Parent: "g", Key: "A/i1", Rank: 1}); err != nil {
				return err
			}
			if err := want(tx, q, child, "i1", "s1"); err != nil {
				return err
			}
			if err := tx.Delete(t.Context(), kindItem, "g/i1"); err != nil {
				return err
			}
			if err := want(tx, q, child, "i2", "s4"); err != nil {
				return err
			}
			return errors.New("rolled back")
		})
		if err == nil || err.Error() != "rolled back" {
			t.Fatal(err)
		}
	}
	err := s.View(t.Context(), func(tx store.Tx) error {
		_, _, _, err := store.FirstWithChild(t.Context(), tx, q, store.Query{Kind: kindOther}, 0)
		if err == nil {
			return errors.New("a child query without a Key prefix was taken")
		}
		return nil
	})
	if err != nil {
		t.Error(err)
	}
}

// testFirstWithChildClaimsDistinct: the claim pattern of FleetIQ. Workers
// in Claims each take the first child (Rank order) of the first parent
// that has one, passing over held records, move it to Key "taken" and
// count it in its parent's Data, until no child is left: every child is
// taken once, and every parent counts its own.
func testFirstWithChildClaimsDistinct(t *testing.T, s store.Store) {
	const parents, per, workers = 6, 10, 12
	var recs []store.Record
	for p := range parents {
		pid := "p" + strconv.Itoa(p)
		recs = append(recs, store.Record{Kind: kindItem, ID: pid, Parent: "g", Key: "on", Rank: int64(p % 3), Data: []byte("0")})
		for c := range per {
			recs = append(recs, store.Record{Kind: kindOther, ID: fmt.Sprintf("%s-c%02d", pid, c), Parent: "g", Key: "A/" + pid, Rank: int64(c)})
		}
	}
	insert(t, s, recs...)
	q := store.Query{Kind: kindItem, Parent: "g", HasParent: true, Key: "on", HasKey: true, Order: store.OrderRankAsc, SkipHeld: true}
	child := store.Query{Kind: kindOther, Parent: "g", HasParent: true, Key: "A/", HasKey: true, Order: store.OrderRankAsc, SkipHeld: true}
	taken := store.Query{Kind: kindOther, Parent: "g", HasParent: true, Key: "taken", HasKey: true}
	var mu sync.Mutex
	took := map[string]int{}
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for {
				var got string
				err := s.Claim(t.Context(), func(tx store.Tx) error {
					got = ""
					p, c, found, err := store.FirstWithChild(t.Context(), tx, q, child, 0)
					if err == nil && !found {
						// Done, or the rest are held: then this Claim runs
						// again (waiting for a held parent while holding
						// one could deadlock with a Claim doing the
						// opposite).
						n, err := tx.Count(t.Context(), taken)
						if err == nil && n < parents*per {
							err = errHeld
						}
						return err
					}
					if err != nil {
						return err
					}
					n, err := strconv.Atoi(string(p.Data))
					if err != nil {
						return err
					}
					p.Data = []byte(strconv.Itoa(n + 1))
					c.Key, c.Data = "taken", []byte(p.ID)
					if err := tx.Put(t.Context(), p); err != nil {
						return err
					}
					got = c.ID
					return tx.Put(t.Context(), c)
				})
				if errors.Is(err, errHeld) {
					runtime.Gosched()
					continue
				}
				if err != nil {
					t.Errorf("worker %d: %v", w, err)
					return
				}
				if got == "" {
					return
				}
				mu.Lock()
				took[got]++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(took) != parents*per {
		t.Errorf("%d children taken, want %d", len(took), parents*per)
	}
	for id, n := range took {
		if n != 1 {
			t.Errorf("%s taken %d times", id, n)
		}
	}
	for p := range parents {
		pid := "p" + strconv.Itoa(p)
		if got := string(mustGet(t, s, kindItem, pid).Data); got != strconv.Itoa(per) {
			t.Errorf("%s counts %s children, want %d", pid, got, per)
		}
	}
}

// errHeld: what a Claim looked for is held by others; it runs again.
var errHeld = errors.New("storetest: held by another Claim")

package storetest

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"testing"

	"github.com/hoistgg/hoist/internal/store"
)

var recordTests = []test{
	{"GetMissing", plain(testGetMissing)},
	{"InsertGet", plain(testInsertGet)},
	{"InsertExists", plain(testInsertExists)},
	{"Put", plain(testPut)},
	{"PutKeepsItsData", plain(testPutKeepsItsData)},
	{"Delete", plain(testDelete)},
	{"KindsAreSeparate", plain(testKindsAreSeparate)},
	{"DataShapes", plain(testDataShapes)},
	{"ReadYourWrites", plain(testReadYourWrites)},
	{"ViewIsReadOnly", plain(testViewIsReadOnly)},
	{"Read", plain(testRead)},
	{"TxAfterReturn", plain(testTxAfterReturn)},
}

var seqTests = []test{
	{"IncreasesOnInsert", plain(testSeqIncreases)},
	{"KeptByPut", plain(testSeqKeptByPut)},
	{"IgnoredOnInput", plain(testSeqIgnoredOnInput)},
	{"NewAfterDelete", plain(testSeqNewAfterDelete)},
	{"VisibleInTx", plain(testSeqVisibleInTx)},
}

// testPutKeepsItsData: a Put stores the Data it was given, whatever the
// caller does with its buffer after Put returned (PostgreSQL sends Puts
// with the transaction's next statement).
func testPutKeepsItsData(t *testing.T, s store.Store) {
	buf := []byte("first")
	err := s.Update(t.Context(), func(tx store.Tx) error {
		if err := tx.Put(t.Context(), store.Record{Kind: kindItem, ID: "a", Data: buf}); err != nil {
			return err
		}
		copy(buf, "XXXXX")
		buf = append(buf[:0], "second"...)
		return tx.Put(t.Context(), store.Record{Kind: kindItem, ID: "b", Data: buf})
	})
	if err != nil {
		t.Fatal(err)
	}
	copy(buf, "YYYYYY")
	if a, b := mustGet(t, s, kindItem, "a"), mustGet(t, s, kindItem, "b"); string(a.Data) != "first" || string(b.Data) != "second" {
		t.Errorf("stored %q and %q, want first and second", a.Data, b.Data)
	}
}

func testGetMissing(t *testing.T, s store.Store) {
	err := s.View(t.Context(), func(tx store.Tx) error {
		_, err := tx.Get(t.Context(), kindItem, "nope")
		return err
	})
	if !errors.Is(err, store.ErrNotFound) {
		t.Errorf("View Get missing: %v, want ErrNotFound", err)
	}
	err = s.Update(t.Context(), func(tx store.Tx) error {
		_, err := tx.Get(t.Context(), kindItem, "nope")
		return err
	})
	if !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Update Get missing: %v, want ErrNotFound", err)
	}
}

func testInsertGet(t *testing.T, s store.Store) {
	want := store.Record{Kind: kindItem, ID: "gs-1", Parent: "group-1", Key: "AVAILABLE",
		Rank: -42, Data: []byte(`{"a":1}`)}
	insert(t, s, want)
	got := mustGet(t, s, kindItem, "gs-1")
	if !sameRecord(got, want) {
		t.Errorf("Get = %+v, want %+v", got, want)
	}
	if got.Seq <= 0 {
		t.Errorf("Seq = %d, want > 0", got.Seq)
	}
}

func testInsertExists(t *testing.T, s store.Store) {
	orig := store.Record{Kind: kindItem, ID: "x", Key: "k1", Data: []byte("one")}
	insert(t, s, orig)
	err := s.Update(t.Context(), func(tx store.Tx) error {
		return tx.Insert(t.Context(), store.Record{Kind: kindItem, ID: "x", Data: []byte("two")})
	})
	if !errors.Is(err, store.ErrExists) {
		t.Fatalf("second Insert: %v, want ErrExists", err)
	}
	// A function may handle ErrExists and go on: its other writes are kept.
	err = s.Update(t.Context(), func(tx store.Tx) error {
		if err := tx.Insert(t.Context(), store.Record{Kind: kindItem, ID: "x"}); !errors.Is(err, store.ErrExists) {
			t.Errorf("Insert in tx: %v, want ErrExists", err)
		}
		return tx.Insert(t.Context(), store.Record{Kind: kindItem, ID: "y"})
	})
	if err != nil {
		t.Fatalf("Update: %v", err)
	}
	if got := mustGet(t, s, kindItem, "x"); !sameRecord(got, orig) {
		t.Errorf("x = %+v, want unchanged %+v", got, orig)
	}
	mustGet(t, s, kindItem, "y")
}

func testPut(t *testing.T, s store.Store) {
	first := store.Record{Kind: kindItem, ID: "p", Parent: "a", Key: "k", Rank: 1, Data: []byte("1")}
	if err := s.Update(t.Context(), func(tx store.Tx) error { return tx.Put(t.Context(), first) }); err != nil {
		t.Fatalf("Put new: %v", err)
	}
	if got := mustGet(t, s, kindItem, "p"); !sameRecord(got, first) {
		t.Errorf("after Put new: %+v, want %+v", got, first)
	}
	second := store.Record{Kind: kindItem, ID: "p", Parent: "b", Key: "", Rank: 0, Data: nil}
	if err := s.Update(t.Context(), func(tx store.Tx) error { return tx.Put(t.Context(), second) }); err != nil {
		t.Fatalf("Put replace: %v", err)
	}
	if got := mustGet(t, s, kindItem, "p"); !sameRecord(got, second) {
		t.Errorf("after Put replace: %+v, want %+v", got, second)
	}
	if n := count(t, s, store.Query{Kind: kindItem}); n != 1 {
		t.Errorf("Count = %d, want 1", n)
	}
}

func testDelete(t *testing.T, s store.Store) {
	insert(t, s, store.Record{Kind: kindItem, ID: "d"}, store.Record{Kind: kindItem, ID: "keep"})
	if err := s.Update(t.Context(), func(tx store.Tx) error { return tx.Delete(t.Context(), kindItem, "d") }); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	mustNotExist(t, s, kindItem, "d")
	mustGet(t, s, kindItem, "keep")
	err := s.Update(t.Context(), func(tx store.Tx) error { return tx.Delete(t.Context(), kindItem, "d") })
	if !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Delete missing: %v, want ErrNotFound", err)
	}
	err = s.Update(t.Context(), func(tx store.Tx) error { return tx.Delete(t.Context(), kindOther, "keep") })
	if !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Delete in other kind: %v, want ErrNotFound", err)
	}
}

func testKindsAreSeparate(t *testing.T, s store.Store) {
	a := store.Record{Kind: kindItem, ID: "same", Data: []byte("item")}
	b := store.Record{Kind: kindOther, ID: "same", Data: []byte("other")}
	insert(t, s, a, b)
	if got := mustGet(t, s, kindItem, "same"); !sameRecord(got, a) {
		t.Errorf("Item = %+v", got)
	}
	if got := mustGet(t, s, kindOther, "same"); !sameRecord(got, b) {
		t.Errorf("Other = %+v", got)
	}
	if n := count(t, s, store.Query{Kind: kindItem}); n != 1 {
		t.Errorf("Count(Item) = %d, want 1", n)
	}
}

func testDataShapes(t *testing.T, s store.Store) {
	big := bytes.Repeat([]byte("0123456789abcdef"), 1<<16) // 1 MiB
	tests := map[string]store.Record{
		"nil data":       {ID: "nil", Data: nil},
		"empty data":     {ID: "empty", Data: []byte{}},
		"binary data":    {ID: "bin", Data: []byte{0, 1, 0xff, 0xfe, 0}},
		"large data":     {ID: "big", Data: big},
		"unicode id":     {ID: "gamé-サーバー", Parent: "flëet", Key: "ключ"},
		"long id":        {ID: string(bytes.Repeat([]byte("i"), 1024))},
		"extreme max":    {ID: "max", Rank: math.MaxInt64},
		"extreme min":    {ID: "min", Rank: math.MinInt64},
		"quotes":         {ID: `it's "quoted"`, Key: `'; DROP TABLE records; --`},
		"nul, bad utf-8": {ID: "a\x00b\xff", Parent: "\x00p", Key: "\xfe\x00"},
	}
	for name, rec := range tests {
		t.Run(name, func(t *testing.T) {
			rec.Kind = kindItem
			insert(t, s, rec)
			if got := mustGet(t, s, kindItem, rec.ID); !sameRecord(got, rec) {
				t.Errorf("round trip changed the record: got %.80q, want %.80q", got.Data, rec.Data)
			}
		})
	}
}

func testReadYourWrites(t *testing.T, s store.Store) {
	insert(t, s, store.Record{Kind: kindItem, ID: "old", Key: "k"})
	err := s.Update(t.Context(), func(tx store.Tx) error {
		ctx := t.Context()
		if err := tx.Insert(ctx, store.Record{Kind: kindItem, ID: "new", Key: "k"}); err != nil {
			return err
		}
		if _, err := tx.Get(ctx, kindItem, "new"); err != nil {
			t.Errorf("Get own insert: %v", err)
		}
		recs, _, err := tx.List(ctx, store.Query{Kind: kindItem, Key: "k", HasKey: true})
		if err != nil || len(recs) != 2 {
			t.Errorf("List own insert: %v %v, want 2 records", ids(recs), err)
		}
		if err := tx.Delete(ctx, kindItem, "old"); err != nil {
			return err
		}
		if _, err := tx.Get(ctx, kindItem, "old"); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("Get own delete: %v, want ErrNotFound", err)
		}
		n, err := tx.Count(ctx, store.Query{Kind: kindItem})
		if err != nil || n != 1 {
			t.Errorf("Count = %d, %v, want 1", n, err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func testViewIsReadOnly(t *testing.T, s store.Store) {
	insert(t, s, store.Record{Kind: kindItem, ID: "r"})
	writes := map[string]func(tx store.Tx) error{
		"Insert": func(tx store.Tx) error { return tx.Insert(t.Context(), store.Record{Kind: kindItem, ID: "w"}) },
		"Put":    func(tx store.Tx) error { return tx.Put(t.Context(), store.Record{Kind: kindItem, ID: "w"}) },
		"Delete": func(tx store.Tx) error { return tx.Delete(t.Context(), kindItem, "r") },
	}
	for name, write := range writes {
		t.Run(name, func(t *testing.T) {
			var werr error
			_ = s.View(t.Context(), func(tx store.Tx) error {
				werr = write(tx)
				return nil
			})
			if werr == nil {
				t.Errorf("%s in a View succeeded", name)
			}
		})
	}
	mustNotExist(t, s, kindItem, "w")
	mustGet(t, s, kindItem, "r")
}

// testRead: store.Read reads what is committed (Get, GetRefs, List,
// Count, one after another), returns fn's error, refuses writes (none is
// kept), and a read after a commit sees it.
func testRead(t *testing.T, s store.Store) {
	a := store.Record{Kind: kindItem, ID: "a", Parent: "p", Key: "k", Rank: 2, Data: []byte("one")}
	insert(t, s, a, store.Record{Kind: kindItem, ID: "b", Parent: "p", Key: "k", Rank: 1})
	err := store.Read(t.Context(), s, func(tx store.Tx) error {
		got, err := tx.Get(t.Context(), kindItem, "a")
		if err != nil || !sameRecord(got, a) || got.Seq <= 0 {
			return fmt.Errorf("a Get: %+v (%v), want %+v", got, err, a)
		}
		if _, err := tx.Get(t.Context(), kindItem, "missing"); !errors.Is(err, store.ErrNotFound) {
			return fmt.Errorf("a Get of a missing record: %v, want ErrNotFound", err)
		}
		refs, err := store.GetRefs(t.Context(), tx, []store.Ref{{Kind: kindItem, ID: "b"}, {Kind: kindItem, ID: "c"}})
		if err != nil || !refs[0].Found || refs[1].Found {
			return fmt.Errorf("store.GetRefs: %+v (%v)", refs, err)
		}
		recs, _, err := tx.List(t.Context(), store.Query{Kind: kindItem, Parent: "p", HasParent: true, Order: store.OrderRankAsc})
		if err != nil || len(recs) != 2 || recs[0].ID != "b" {
			return fmt.Errorf("a List: %v (%v), want [b a]", ids(recs), err)
		}
		if n, err := tx.Count(t.Context(), store.Query{Kind: kindItem}); err != nil || n != 2 {
			return fmt.Errorf("a Count: %d (%v), want 2", n, err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	boom := errors.New("boom")
	if err := store.Read(t.Context(), s, func(tx store.Tx) error { return boom }); !errors.Is(err, boom) {
		t.Errorf("Read returned %v, want fn's error", err)
	}
	writes := map[string]func(tx store.Tx) error{
		"Insert": func(tx store.Tx) error { return tx.Insert(t.Context(), store.Record{Kind: kindItem, ID: "w"}) },
		"Put":    func(tx store.Tx) error { return tx.Put(t.Context(), store.Record{Kind: kindItem, ID: "w"}) },
		"Delete": func(tx store.Tx) error { return tx.Delete(t.Context(), kindItem, "a") },
		"InsertNew": func(tx store.Tx) error {
			return store.InsertNew(t.Context(), tx, store.Record{Kind: kindItem, ID: "w"})
		},
	}
	for name, write := range writes {
		var werr error
		_ = store.Read(t.Context(), s, func(tx store.Tx) error { werr = write(tx); return nil })
		if werr == nil {
			t.Errorf("%s in a Read succeeded", name)
		}
	}
	mustNotExist(t, s, kindItem, "w")
	mustGet(t, s, kindItem, "a")
	insert(t, s, store.Record{Kind: kindItem, ID: "c"})
	err = store.Read(t.Context(), s, func(tx store.Tx) error {
		_, err := tx.Get(t.Context(), kindItem, "c")
		return err
	})
	if err != nil {
		t.Errorf("a Read after c's commit: %v", err)
	}
}

func testTxAfterReturn(t *testing.T, s store.Store) {
	var leaked store.Tx
	if err := s.Update(t.Context(), func(tx store.Tx) error { leaked = tx; return nil }); err != nil {
		t.Fatal(err)
	}
	if err := leaked.Insert(t.Context(), store.Record{Kind: kindItem, ID: "late"}); err == nil {
		t.Error("Insert on a finished Update tx succeeded")
	}
	if err := s.View(t.Context(), func(tx store.Tx) error { leaked = tx; return nil }); err != nil {
		t.Fatal(err)
	}
	if _, err := leaked.Get(t.Context(), kindItem, "late"); err == nil || errors.Is(err, store.ErrNotFound) {
		t.Errorf("Get on a finished View tx: %v, want a use-after-return error", err)
	}
	mustNotExist(t, s, kindItem, "late")
}

func testSeqIncreases(t *testing.T, s store.Store) {
	insert(t, s, store.Record{Kind: kindItem, ID: "c"})
	insert(t, s, store.Record{Kind: kindOther, ID: "b"})
	insert(t, s, store.Record{Kind: kindItem, ID: "a"},
		store.Record{Kind: kindItem, ID: "e"}, store.Record{Kind: kindOther, ID: "d"})
	order := []struct {
		kind store.Kind
		id   string
	}{{kindItem, "c"}, {kindOther, "b"}, {kindItem, "a"}, {kindItem, "e"}, {kindOther, "d"}}
	var last int64
	for _, o := range order {
		rec := mustGet(t, s, o.kind, o.id)
		if rec.Seq <= last {
			t.Errorf("%s/%s Seq = %d, want > %d (insertion order)", o.kind, o.id, rec.Seq, last)
		}
		last = rec.Seq
	}
}

func testSeqKeptByPut(t *testing.T, s store.Store) {
	insert(t, s, store.Record{Kind: kindItem, ID: "a"}, store.Record{Kind: kindItem, ID: "b"})
	before := mustGet(t, s, kindItem, "a").Seq
	err := s.Update(t.Context(), func(tx store.Tx) error {
		return tx.Put(t.Context(), store.Record{Kind: kindItem, ID: "a", Key: "moved", Data: []byte("2"), Seq: 1})
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := mustGet(t, s, kindItem, "a").Seq; got != before {
		t.Errorf("Seq after Put = %d, want %d", got, before)
	}
	recs, _ := list(t, s, store.Query{Kind: kindItem, Order: store.OrderCreated})
	if got := ids(recs); len(got) != 2 || got[0] != "a" {
		t.Errorf("OrderCreated after Put = %v, want [a b]", got)
	}
}

func testSeqIgnoredOnInput(t *testing.T, s store.Store) {
	const huge = int64(1) << 60
	insert(t, s, store.Record{Kind: kindItem, ID: "a", Seq: huge})
	insert(t, s, store.Record{Kind: kindItem, ID: "b", Seq: 1})
	a, b := mustGet(t, s, kindItem, "a"), mustGet(t, s, kindItem, "b")
	if a.Seq == huge || b.Seq <= a.Seq {
		t.Errorf("Seq a=%d b=%d: input Seq must be ignored and b > a", a.Seq, b.Seq)
	}
}

func testSeqNewAfterDelete(t *testing.T, s store.Store) {
	insert(t, s, store.Record{Kind: kindItem, ID: "a"}, store.Record{Kind: kindItem, ID: "b"})
	old := mustGet(t, s, kindItem, "b").Seq
	err := s.Update(t.Context(), func(tx store.Tx) error {
		if err := tx.Delete(t.Context(), kindItem, "b"); err != nil {
			return err
		}
		return tx.Insert(t.Context(), store.Record{Kind: kindItem, ID: "b"})
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := mustGet(t, s, kindItem, "b").Seq; got <= old {
		t.Errorf("re-inserted Seq = %d, want > %d", got, old)
	}
	insert(t, s, store.Record{Kind: kindItem, ID: "c"})
	if c, b := mustGet(t, s, kindItem, "c").Seq, mustGet(t, s, kindItem, "b").Seq; c <= b {
		t.Errorf("Seq c=%d after b=%d", c, b)
	}
}

func testSeqVisibleInTx(t *testing.T, s store.Store) {
	err := s.Update(t.Context(), func(tx store.Tx) error {
		if err := tx.Insert(t.Context(), store.Record{Kind: kindItem, ID: "a"}); err != nil {
			return err
		}
		rec, err := tx.Get(t.Context(), kindItem, "a")
		if err != nil {
			return err
		}
		if rec.Seq <= 0 {
			t.Errorf("Seq inside the inserting tx = %d, want > 0", rec.Seq)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

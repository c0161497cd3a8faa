package storetest

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"testing"

	"github.com/hoistgg/hoist/internal/store"
)

var listTests = []test{
	{"FiltersAndOrders", plain(testListFiltersAndOrders)},
	{"Pages", plain(testListPages)},
	{"PagesWhileInserting", plain(testPagesWhileInserting)},
	{"PagesWhileDeleting", plain(testPagesWhileDeleting)},
	{"InvalidCursor", plain(testInvalidCursor)},
	{"CountIgnoresPaging", plain(testCountIgnoresPaging)},
	{"NoData", plain(testListNoData)},
}

// listFixture is inserted in this order (so OrderCreated follows it). Its IDs
// are not in byte order, ranks tie and reach the int64 extremes, and Parent and
// Key take the empty value too.
var listFixture = []store.Record{
	{ID: "a1", Parent: "p1", Key: "free", Rank: 5},
	{ID: "z", Parent: "p1", Key: "free", Rank: math.MinInt64},
	{ID: "a2", Parent: "p1", Key: "taken", Rank: 3},
	{ID: "b1", Parent: "p2", Key: "free", Rank: 5},
	{ID: "B", Parent: "p1", Key: "free", Rank: -7},
	{ID: "c0", Parent: "", Key: "free", Rank: 0},
	{ID: "C9", Parent: "p2", Key: "", Rank: 9},
	{ID: "a10", Parent: "p1", Key: "free", Rank: 5},
	{ID: "é", Parent: "p2", Key: "taken", Rank: math.MaxInt64},
	{ID: "a1/x", Parent: "p2", Key: "free", Rank: 5},
	{ID: "0", Parent: "p1", Key: "", Rank: -1},
}

// listFilters are the selections checked with every order.
var listFilters = map[string]store.Query{
	"all":             {},
	"parent p1":       {Parent: "p1", HasParent: true},
	"empty parent":    {Parent: "", HasParent: true},
	"key free":        {Key: "free", HasKey: true},
	"empty key":       {Key: "", HasKey: true},
	"parent and key":  {Parent: "p1", HasParent: true, Key: "free", HasKey: true},
	"rank max 5":      {RankMax: 5, HasRankMax: true},
	"rank max -1":     {RankMax: -1, HasRankMax: true},
	"rank max min":    {RankMax: math.MinInt64, HasRankMax: true},
	"all three":       {Parent: "p2", HasParent: true, Key: "free", HasKey: true, RankMax: 5, HasRankMax: true},
	"no such parent":  {Parent: "nope", HasParent: true},
	"key, rank max 4": {Key: "free", HasKey: true, RankMax: 4, HasRankMax: true},
}

type orderCase struct {
	name  string
	order store.Order
	desc  bool
}

var listOrders = []orderCase{
	{"id", store.OrderID, false},
	{"id desc", store.OrderID, true},
	{"created", store.OrderCreated, false},
	{"created desc", store.OrderCreated, true},
	{"rank asc", store.OrderRankAsc, false},
	{"rank desc", store.OrderRankDesc, false},
}

// loadFixture inserts listFixture under kindItem, and a decoy copy under
// kindOther, one record per Update so that Seq follows the slice.
func loadFixture(t *testing.T, s store.Store) []store.Record {
	t.Helper()
	var all []store.Record
	for _, r := range listFixture {
		r.Kind = kindItem
		r.Data = []byte(strconv.Quote(r.ID))
		insert(t, s, r)
		all = append(all, mustGet(t, s, kindItem, r.ID))
		decoy := r
		decoy.Kind = kindOther
		insert(t, s, decoy)
	}
	return all
}

// expect is the reference model of List: the IDs q selects from all, in order.
func expect(all []store.Record, q store.Query) []string {
	var sel []store.Record
	for _, r := range all {
		if r.Kind != q.Kind || (q.HasParent && r.Parent != q.Parent) ||
			(q.HasKey && r.Key != q.Key) || (q.HasRankMax && r.Rank > q.RankMax) {
			continue
		}
		sel = append(sel, r)
	}
	slices.SortFunc(sel, func(a, b store.Record) int {
		switch q.Order {
		case store.OrderCreated:
			return flip(cmp.Compare(a.Seq, b.Seq), q.Desc)
		case store.OrderRankAsc:
			return cmp.Or(cmp.Compare(a.Rank, b.Rank), cmp.Compare(a.ID, b.ID))
		case store.OrderRankDesc:
			return cmp.Or(cmp.Compare(b.Rank, a.Rank), cmp.Compare(a.ID, b.ID))
		default:
			return flip(cmp.Compare(a.ID, b.ID), q.Desc)
		}
	})
	return ids(sel)
}

func flip(c int, desc bool) int {
	if desc {
		return -c
	}
	return c
}

func testListFiltersAndOrders(t *testing.T, s store.Store) {
	all := loadFixture(t, s)
	for fname, filter := range listFilters {
		for _, o := range listOrders {
			t.Run(fname+"/"+o.name, func(t *testing.T) {
				q := filter
				q.Kind, q.Order, q.Desc = kindItem, o.order, o.desc
				want := expect(all, q)
				recs, next := list(t, s, q)
				if got := ids(recs); !slices.Equal(got, want) {
					t.Errorf("List = %q, want %q", got, want)
				}
				if next != "" {
					t.Errorf("Next = %q without Limit, want empty", next)
				}
				for _, r := range recs {
					if r.Kind != kindItem || string(r.Data) != strconv.Quote(r.ID) || r.Seq <= 0 {
						t.Errorf("List returned a bad record %+v", r)
					}
				}
				if n := count(t, s, q); n != len(want) {
					t.Errorf("Count = %d, want %d", n, len(want))
				}
			})
		}
	}
}

// pages lists q page by page with limit, checking page sizes and Next.
func pages(t *testing.T, s store.Store, q store.Query, limit int, between func(page int)) []string {
	t.Helper()
	q.Limit = limit
	var got []string
	for page := 0; ; page++ {
		if page > 1000 {
			t.Fatal("pagination does not end")
		}
		recs, next := list(t, s, q)
		if len(recs) > limit {
			t.Fatalf("page %d has %d records, Limit is %d", page, len(recs), limit)
		}
		if next != "" && len(recs) == 0 {
			t.Fatalf("page %d is empty but Next = %q", page, next)
		}
		got = append(got, ids(recs)...)
		if next == "" {
			return got
		}
		if between != nil {
			between(page)
		}
		q.After = next
	}
}

func testListPages(t *testing.T, s store.Store) {
	all := loadFixture(t, s)
	queries := map[string]store.Query{
		"all":      {},
		"key free": {Key: "free", HasKey: true},
		"parent":   {Parent: "p1", HasParent: true},
	}
	for qname, filter := range queries {
		for _, o := range listOrders {
			for _, limit := range []int{1, 2, 3, 4, 100} {
				t.Run(fmt.Sprintf("%s/%s/limit %d", qname, o.name, limit), func(t *testing.T) {
					q := filter
					q.Kind, q.Order, q.Desc = kindItem, o.order, o.desc
					want := expect(all, q)
					if got := pages(t, s, q, limit, nil); !slices.Equal(got, want) {
						t.Errorf("pages = %q, want %q", got, want)
					}
				})
			}
		}
	}
	// A full last page has Next == "": no empty trailing page.
	q := store.Query{Kind: kindItem, Order: store.OrderID, Limit: len(all)}
	if recs, next := list(t, s, q); len(recs) != len(all) || next != "" {
		t.Errorf("exact-size page: %d records, Next %q; want %d and empty", len(recs), next, len(all))
	}
}

// testPagesWhileInserting inserts records between pages: every record that
// existed from the start is seen exactly once and no record twice.
func testPagesWhileInserting(t *testing.T, s store.Store) {
	for _, o := range listOrders {
		t.Run(o.name, func(t *testing.T) {
			kind := store.Kind("Paged " + o.name)
			var orig []string
			for i := range 30 {
				id := fmt.Sprintf("r%03d", (i*7)%30*10)
				orig = append(orig, id)
				insert(t, s, store.Record{Kind: kind, ID: id, Rank: int64(i % 3)})
			}
			added := 0
			between := func(page int) {
				for j := range 2 {
					added++
					id := fmt.Sprintf("r%03d", (page*13+j*29)%300+1) // between existing IDs
					insert(t, s, store.Record{Kind: kind, ID: fmt.Sprintf("%s-%d", id, added), Rank: int64(added % 4)})
				}
			}
			q := store.Query{Kind: kind, Order: o.order, Desc: o.desc}
			got := pages(t, s, q, 4, between)
			seen := map[string]int{}
			for _, id := range got {
				seen[id]++
				if seen[id] > 1 {
					t.Errorf("%s listed twice", id)
				}
			}
			for _, id := range orig {
				if seen[id] != 1 {
					t.Errorf("%s listed %d times, want once", id, seen[id])
				}
			}
		})
	}
}

// testPagesWhileDeleting deletes the record the cursor points at (and the next
// one) between pages: pagination goes on after it and skips nothing else.
func testPagesWhileDeleting(t *testing.T, s store.Store) {
	all := loadFixture(t, s)
	for _, o := range listOrders {
		t.Run(o.name, func(t *testing.T) {
			q := store.Query{Kind: kindItem, Order: o.order, Desc: o.desc, Limit: 3}
			want := expect(all, q)
			recs, next := list(t, s, q)
			if next == "" || len(recs) != 3 {
				t.Fatalf("first page %q, Next %q", ids(recs), next)
			}
			gone := []string{want[2], want[3]}
			err := s.Update(t.Context(), func(tx store.Tx) error {
				for _, id := range gone {
					if err := tx.Delete(t.Context(), kindItem, id); err != nil {
						return err
					}
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			defer insertBack(t, s, all, gone)
			q.After, q.Limit = next, 0
			rest, _ := list(t, s, q)
			if got := ids(rest); !slices.Equal(got, want[4:]) {
				t.Errorf("after deleting %q: %q, want %q", gone, got, want[4:])
			}
		})
	}
}

// insertBack restores deleted fixture records (with new Seq values, which is
// why the fixture is reloaded for the reference model each time).
func insertBack(t *testing.T, s store.Store, all []store.Record, idsGone []string) {
	for i, r := range all {
		if slices.Contains(idsGone, r.ID) {
			insert(t, s, r)
			all[i] = mustGet(t, s, kindItem, r.ID)
		}
	}
}

func testInvalidCursor(t *testing.T, s store.Store) {
	loadFixture(t, s)
	_, next := list(t, s, store.Query{Kind: kindItem, Order: store.OrderID, Limit: 2})
	if next == "" {
		t.Fatal("no cursor")
	}
	tests := map[string]store.Query{
		"garbage":        {Kind: kindItem, After: "not a cursor!"},
		"empty-ish":      {Kind: kindItem, After: "="},
		"other order":    {Kind: kindItem, Order: store.OrderRankAsc, After: next},
		"other order 2":  {Kind: kindItem, Order: store.OrderCreated, After: next},
		"other desc":     {Kind: kindItem, Order: store.OrderID, Desc: true, After: next},
		"truncated next": {Kind: kindItem, Order: store.OrderRankDesc, After: next[:len(next)/2]},
	}
	for name, q := range tests {
		t.Run(name, func(t *testing.T) {
			err := s.View(t.Context(), func(tx store.Tx) error {
				_, _, err := tx.List(t.Context(), q)
				return err
			})
			if !errors.Is(err, store.ErrInvalidCursor) {
				t.Errorf("List: %v, want ErrInvalidCursor", err)
			}
		})
	}
}

func testCountIgnoresPaging(t *testing.T, s store.Store) {
	all := loadFixture(t, s)
	_, next := list(t, s, store.Query{Kind: kindItem, Limit: 2})
	q := store.Query{Kind: kindItem, Limit: 2, After: next, Order: store.OrderRankDesc}
	if n := count(t, s, q); n != len(all) {
		t.Errorf("Count = %d, want %d", n, len(all))
	}
	if n := count(t, s, store.Query{Kind: "Empty"}); n != 0 {
		t.Errorf("Count of an empty kind = %d", n)
	}
}

// testListNoData: a List with NoData selects, orders and pages as without
// it, and returns every column but Data (nil), in a View and in an Update.
func testListNoData(t *testing.T, s store.Store) {
	all := loadFixture(t, s)
	byID := map[string]store.Record{}
	for _, r := range all {
		byID[r.ID] = r
	}
	check := func(t *testing.T, recs []store.Record) {
		t.Helper()
		for _, r := range recs {
			w := byID[r.ID]
			if r.Data != nil || r.Kind != w.Kind || r.Parent != w.Parent || r.Key != w.Key || r.Rank != w.Rank || r.Seq != w.Seq {
				t.Errorf("List without data returned %+v, want %+v without Data", r, w)
			}
		}
	}
	for _, o := range listOrders {
		t.Run(o.name, func(t *testing.T) {
			q := store.Query{Kind: kindItem, Key: "free", HasKey: true, Order: o.order, Desc: o.desc, NoData: true}
			want := expect(all, q)
			recs, _ := list(t, s, q)
			if got := ids(recs); !slices.Equal(got, want) {
				t.Errorf("List = %q, want %q", got, want)
			}
			check(t, recs)
			if got := pages(t, s, q, 2, nil); !slices.Equal(got, want) {
				t.Errorf("pages = %q, want %q", got, want)
			}
		})
	}
	err := s.Update(t.Context(), func(tx store.Tx) error {
		recs, _, err := tx.List(t.Context(), store.Query{Kind: kindItem, Parent: "p1", HasParent: true, NoData: true})
		if err != nil {
			return err
		}
		if got, want := ids(recs), expect(all, store.Query{Kind: kindItem, Parent: "p1", HasParent: true}); !slices.Equal(got, want) {
			t.Errorf("List in an Update = %q, want %q", got, want)
		}
		check(t, recs)
		// A record listed without its data is written as any other.
		r := recs[0]
		r.Data = []byte(`"new"`)
		return tx.Put(t.Context(), r)
	})
	if err != nil {
		t.Fatal(err)
	}
	first := expect(all, store.Query{Kind: kindItem, Parent: "p1", HasParent: true})[0]
	if got := mustGet(t, s, kindItem, first); string(got.Data) != `"new"` {
		t.Errorf("after a Put of a record listed without data: %+v", got)
	}
}

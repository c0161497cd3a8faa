package journal

import (
	"bytes"
	"cmp"
	"math"
	"slices"
	"strings"

	"github.com/google/btree"

	"github.com/hoistgg/hoist/internal/store"
)

// rec is one stored record. A rec in a table is never modified: a write
// puts a new rec in its place, so that snapshots can share recs (and tree
// nodes) with the working state.
type rec struct {
	id, parent, key string
	rank, seq       int64
	data            []byte
	// top marks a search pivot that sorts after every ID sharing its other
	// fields; stored recs never have it.
	top bool
}

func (r *rec) record(kind store.Kind) store.Record {
	rec := r.header(kind)
	rec.Data = bytes.Clone(r.data)
	return rec
}

// header is r without its data (a List with Query.NoData).
func (r *rec) header(kind store.Kind) store.Record {
	return store.Record{Kind: kind, ID: r.id, Parent: r.parent, Key: r.key, Rank: r.rank, Seq: r.seq}
}

func cmpID(a, b *rec) int {
	switch {
	case a.top && b.top:
		return 0
	case a.top:
		return 1
	case b.top:
		return -1
	}
	return strings.Compare(a.id, b.id)
}

func lessID(a, b *rec) bool  { return cmpID(a, b) < 0 }
func lessSeq(a, b *rec) bool { return a.seq < b.seq }

func lessParentID(a, b *rec) bool {
	if c := strings.Compare(a.parent, b.parent); c != 0 {
		return c < 0
	}
	return cmpID(a, b) < 0
}

func lessParentSeq(a, b *rec) bool {
	if c := strings.Compare(a.parent, b.parent); c != 0 {
		return c < 0
	}
	return a.seq < b.seq
}

func lessParentKeyRank(a, b *rec) bool {
	if c := strings.Compare(a.parent, b.parent); c != 0 {
		return c < 0
	}
	return lessKeyRank(a, b)
}

func lessKeyRank(a, b *rec) bool {
	if c := strings.Compare(a.key, b.key); c != 0 {
		return c < 0
	}
	if c := cmp.Compare(a.rank, b.rank); c != 0 {
		return c < 0
	}
	return cmpID(a, b) < 0
}

// degree of the B-trees: nodes of up to 2*degree-1 pointers. Small nodes
// keep the copy-on-write after a snapshot cheap.
const degree = 16

// table holds the records of one Kind and the indexes List and Count use,
// the same ones the SQLite backend has: each is a B-tree of the same recs
// in a different order.
type table struct {
	byID            *btree.BTreeG[*rec] // Get, OrderID
	bySeq           *btree.BTreeG[*rec] // OrderCreated
	byParentID      *btree.BTreeG[*rec] // Parent in OrderID
	byParentSeq     *btree.BTreeG[*rec] // Parent in OrderCreated
	byParentKeyRank *btree.BTreeG[*rec] // Parent and Key in the Rank orders
	byKeyRank       *btree.BTreeG[*rec] // Key in the Rank orders
}

func newTable() *table {
	return &table{
		byID:            btree.NewG(degree, lessID),
		bySeq:           btree.NewG(degree, lessSeq),
		byParentID:      btree.NewG(degree, lessParentID),
		byParentSeq:     btree.NewG(degree, lessParentSeq),
		byParentKeyRank: btree.NewG(degree, lessParentKeyRank),
		byKeyRank:       btree.NewG(degree, lessKeyRank),
	}
}

// clone returns a copy of t that shares its nodes until either is written
// (copy on write). t and the copy may then be used concurrently.
func (t *table) clone() *table {
	return &table{
		byID:            t.byID.Clone(),
		bySeq:           t.bySeq.Clone(),
		byParentID:      t.byParentID.Clone(),
		byParentSeq:     t.byParentSeq.Clone(),
		byParentKeyRank: t.byParentKeyRank.Clone(),
		byKeyRank:       t.byKeyRank.Clone(),
	}
}

func (t *table) get(id string) *rec {
	r, _ := t.byID.Get(&rec{id: id})
	return r
}

// set replaces old (nil: none) with r (nil: delete). byID always holds the
// current rec; every other index is written only when the fields it orders
// by change, so its entry may be an older rec of the same record whose
// fields for that index are still right. Readers of those indexes take the
// record itself from byID (current).
func (t *table) set(old, r *rec) {
	switch {
	case old == nil && r == nil:
	case old == nil:
		for _, tr := range t.trees() {
			tr.ReplaceOrInsert(r)
		}
	case r == nil:
		for _, tr := range t.trees() {
			tr.Delete(old)
		}
	default:
		t.byID.ReplaceOrInsert(r) // bySeq: a record keeps its Seq
		if old.parent != r.parent {
			t.byParentID.Delete(old)
			t.byParentSeq.Delete(old)
			t.byParentID.ReplaceOrInsert(r)
			t.byParentSeq.ReplaceOrInsert(r)
		}
		if old.parent != r.parent || old.key != r.key || old.rank != r.rank {
			t.byParentKeyRank.Delete(old)
			t.byParentKeyRank.ReplaceOrInsert(r)
		}
		if old.key != r.key || old.rank != r.rank {
			t.byKeyRank.Delete(old)
			t.byKeyRank.ReplaceOrInsert(r)
		}
	}
}

// current returns the record an entry of tree stands for, as it is now.
func (t *table) current(tree *btree.BTreeG[*rec], r *rec) *rec {
	if tree == t.byID {
		return r
	}
	return t.get(r.id)
}

func (t *table) trees() [6]*btree.BTreeG[*rec] {
	return [...]*btree.BTreeG[*rec]{t.byID, t.bySeq, t.byParentID, t.byParentSeq, t.byParentKeyRank, t.byKeyRank}
}

// filter is the selection of a query: every condition it sets.
type filter struct {
	parent, key             string
	hasParent, hasKey       bool
	rankMax                 int64
	hasRankMax              bool
	prefixParent, prefixKey bool // conditions the index scanned already holds as its prefix
}

func filterOf(q store.Query) filter {
	return filter{parent: q.Parent, key: q.Key, hasParent: q.HasParent, hasKey: q.HasKey,
		rankMax: q.RankMax, hasRankMax: q.HasRankMax}
}

// keep reports whether r is selected.
func (f *filter) keep(r *rec) bool {
	return (!f.hasParent || r.parent == f.parent) && (!f.hasKey || r.key == f.key) &&
		(!f.hasRankMax || r.rank <= f.rankMax)
}

// inPrefix reports whether r is still inside the prefix of the index being
// scanned; a scan stops at the first record outside it.
func (f *filter) inPrefix(r *rec) bool {
	return (!f.prefixParent || r.parent == f.parent) && (!f.prefixKey || r.key == f.key)
}

// scan calls emit for the records q selects, in q's order, strictly after c
// when c is not nil, until emit returns false.
func (t *table) scan(q store.Query, c *store.Cursor, emit func(*rec) bool) {
	f := filterOf(q)
	switch q.Order {
	case store.OrderCreated:
		t.scanSeq(&f, q.Desc, c, emit)
	case store.OrderRankAsc, store.OrderRankDesc:
		tree := t.byKeyRank
		switch {
		case f.hasParent && f.hasKey:
			tree, f.prefixParent, f.prefixKey = t.byParentKeyRank, true, true
		case f.hasKey:
			f.prefixKey = true
		default:
			t.scanSorted(&f, q.Order, c, emit)
			return
		}
		emitCurrent := func(r *rec) bool { return emit(t.get(r.id)) }
		if q.Order == store.OrderRankAsc {
			scanRankAsc(tree, &f, c, emitCurrent)
		} else {
			scanRankDesc(tree, &f, c, emitCurrent)
		}
	default:
		t.scanID(&f, q.Desc, c, emit)
	}
}

func (t *table) scanID(f *filter, desc bool, c *store.Cursor, emit func(*rec) bool) {
	tree := t.byID
	if f.hasParent {
		tree, f.prefixParent = t.byParentID, true
	}
	pivot := &rec{parent: f.parent}
	var isCursor func(*rec) bool
	if c != nil {
		pivot.id = c.ID
		isCursor = func(r *rec) bool { return r.id == c.ID }
	} else if desc {
		pivot.top = true
	}
	t.walk(tree, pivot, desc, f, isCursor, emit)
}

func (t *table) scanSeq(f *filter, desc bool, c *store.Cursor, emit func(*rec) bool) {
	tree := t.bySeq
	if f.hasParent {
		tree, f.prefixParent = t.byParentSeq, true
	}
	pivot := &rec{parent: f.parent, seq: math.MinInt64}
	if desc {
		pivot.seq = math.MaxInt64
	}
	var isCursor func(*rec) bool
	if c != nil {
		pivot.seq = c.Seq
		isCursor = func(r *rec) bool { return r.seq == c.Seq }
	}
	t.walk(tree, pivot, desc, f, isCursor, emit)
}

// walk visits tree from pivot, up or down, while the entries are in f's
// prefix: it skips the cursor's own entry (isCursor, nil without a cursor)
// and emits the current records f keeps.
func (t *table) walk(tree *btree.BTreeG[*rec], pivot *rec, desc bool, f *filter, isCursor func(*rec) bool, emit func(*rec) bool) {
	visit := func(r *rec) bool {
		if !f.inPrefix(r) {
			return false
		}
		if isCursor != nil && isCursor(r) {
			return true
		}
		cur := t.current(tree, r)
		return !f.keep(cur) || emit(cur)
	}
	if desc {
		tree.DescendLessOrEqual(pivot, visit)
	} else {
		tree.AscendGreaterOrEqual(pivot, visit)
	}
}

// scanRankAsc scans an index ordered by (prefix, rank, id) upwards. Its
// prefix holds every filter but RankMax (checked here), so the entries'
// own fields decide; emit gets the entries.
func scanRankAsc(tree *btree.BTreeG[*rec], f *filter, c *store.Cursor, emit func(*rec) bool) {
	pivot := &rec{parent: f.parent, key: f.key, rank: math.MinInt64}
	hasAfter := c != nil
	if hasAfter {
		pivot.rank, pivot.id = c.Rank, c.ID
	}
	tree.AscendGreaterOrEqual(pivot, func(r *rec) bool {
		if !f.inPrefix(r) || f.hasRankMax && r.rank > f.rankMax {
			return false
		}
		if hasAfter && r.rank == pivot.rank && r.id == pivot.id {
			return true
		}
		return !f.keep(r) || emit(r)
	})
}

// scanRankDesc scans an index ordered by (prefix, rank, id) by rank
// downwards but by ID upwards among equal ranks (its prefix holds every
// filter but RankMax, as for scanRankAsc): it finds the highest rank
// left, walks that group upwards, and steps below it, so no group is sorted.
func scanRankDesc(tree *btree.BTreeG[*rec], f *filter, c *store.Cursor, emit func(*rec) bool) {
	hi := int64(math.MaxInt64)
	if f.hasRankMax {
		hi = f.rankMax
	}
	if c != nil {
		hi = min(hi, c.Rank)
	}
	for {
		var top *rec
		tree.DescendLessOrEqual(&rec{parent: f.parent, key: f.key, rank: hi, top: true}, func(r *rec) bool {
			if f.inPrefix(r) {
				top = r
			}
			return false
		})
		if top == nil {
			return
		}
		rank := top.rank
		pivot := &rec{parent: f.parent, key: f.key, rank: rank}
		skip := c != nil && c.Rank == rank
		if skip {
			pivot.id = c.ID
		}
		more := true
		tree.AscendGreaterOrEqual(pivot, func(r *rec) bool {
			if !f.inPrefix(r) || r.rank != rank {
				return false
			}
			if skip && r.id == pivot.id {
				return true
			}
			more = !f.keep(r) || emit(r)
			return more
		})
		if !more || rank == math.MinInt64 {
			return
		}
		hi = rank - 1
	}
}

// scanSorted serves a Rank order that no index holds (no Key given): it
// collects the selection and sorts it. No hot path asks for one.
func (t *table) scanSorted(f *filter, order store.Order, c *store.Cursor, emit func(*rec) bool) {
	var all []*rec
	t.scanID(f, false, nil, func(r *rec) bool { all = append(all, r); return true })
	byRank := func(a, b *rec) int {
		if order == store.OrderRankDesc {
			a, b = b, a
		}
		return cmp.Compare(a.rank, b.rank)
	}
	slices.SortFunc(all, func(a, b *rec) int {
		if r := byRank(a, b); r != 0 {
			return r
		}
		return strings.Compare(a.id, b.id)
	})
	for _, r := range all {
		if c != nil {
			if o := byRank(r, &rec{rank: c.Rank}); o < 0 || o == 0 && r.id <= c.ID {
				continue
			}
		}
		if !emit(r) {
			return
		}
	}
}

// compacted returns a copy of t made of new recs, allocated one after
// the other, with the Parent and Key values they share stored once; t
// becomes garbage. After a replay, the live recs are scattered among the
// garbage of every record version the journal held (the heap cannot move
// them), which leaves the heap's spans half empty: a game server costs
// about 1.2 KB of heap spans after a replay and 0.7 KB live. The copy
// packs them; it is done once, when the store opens.
func (t *table) compacted() *table {
	nt := newTable()
	shared := map[string]string{}
	intern := func(s string) string {
		if v, ok := shared[s]; ok {
			return v
		}
		s = strings.Clone(s)
		shared[s] = s
		return s
	}
	t.byID.Ascend(func(r *rec) bool {
		c := &rec{id: strings.Clone(r.id), parent: intern(r.parent), key: intern(r.key),
			rank: r.rank, seq: r.seq, data: bytes.Clone(r.data)}
		if c.data == nil {
			c.data = []byte{}
		}
		nt.set(nil, c)
		return true
	})
	return nt
}

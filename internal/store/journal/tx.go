package journal

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"

	"github.com/hoistgg/hoist/internal/store"
)

var (
	errTxDone   = errors.New("journal: transaction used after its function returned")
	errReadOnly = errors.New("journal: write in a read-only transaction (View)")
)

// reader is what both transactions read: the working state for an Update,
// a durable snapshot for a View.
type reader struct {
	tables map[store.Kind]*table
	done   bool
}

func (x *reader) check(ctx context.Context) error {
	if x.done {
		return errTxDone
	}
	return ctx.Err()
}

func (x *reader) Get(ctx context.Context, kind store.Kind, id string) (store.Record, error) {
	if err := x.check(ctx); err != nil {
		return store.Record{}, err
	}
	if t := x.tables[kind]; t != nil {
		if r := t.get(id); r != nil {
			return r.record(kind), nil
		}
	}
	return store.Record{}, store.ErrNotFound
}

func (x *reader) List(ctx context.Context, q store.Query) ([]store.Record, string, error) {
	if err := x.check(ctx); err != nil {
		return nil, "", err
	}
	if q.Order < store.OrderID || q.Order > store.OrderRankDesc {
		return nil, "", fmt.Errorf("journal: unknown order %d", q.Order)
	}
	desc := q.Desc && (q.Order == store.OrderID || q.Order == store.OrderCreated)
	var after *store.Cursor
	if q.After != "" {
		c, err := store.DecodeCursor(q.After, q.Order, desc)
		if err != nil {
			return nil, "", err
		}
		after = &c
	}
	q.Desc = desc
	t := x.tables[q.Kind]
	if t == nil {
		return nil, "", nil
	}
	limit := q.Limit
	if limit <= 0 {
		limit = math.MaxInt
	}
	var recs []store.Record
	if q.Limit > 0 {
		recs = make([]store.Record, 0, min(q.Limit, 64))
	}
	more := false
	t.scan(q, after, func(r *rec) bool {
		if len(recs) == limit {
			more = true
			return false
		}
		if q.NoData {
			recs = append(recs, r.header(q.Kind))
		} else {
			recs = append(recs, r.record(q.Kind))
		}
		return true
	})
	if !more {
		return recs, "", nil
	}
	return recs, store.EncodeCursor(q.Order, desc, &recs[len(recs)-1]), nil
}

func (x *reader) Count(ctx context.Context, q store.Query) (int, error) {
	if err := x.check(ctx); err != nil {
		return 0, err
	}
	t := x.tables[q.Kind]
	if t == nil {
		return 0, nil
	}
	if !q.HasParent && !q.HasKey && !q.HasRankMax {
		return t.byID.Len(), nil
	}
	q.After, q.Limit, q.Desc = "", 0, false
	if q.HasKey {
		q.Order = store.OrderRankAsc
	} else {
		q.Order = store.OrderID
	}
	n := 0
	t.scan(q, nil, func(*rec) bool { n++; return true })
	return n, nil
}

// readTx is the store.Tx of a View.
type readTx struct{ reader }

func (tx *readTx) Insert(context.Context, store.Record) error       { return errReadOnly }
func (tx *readTx) Put(context.Context, store.Record) error          { return errReadOnly }
func (tx *readTx) Delete(context.Context, store.Kind, string) error { return errReadOnly }

// writeTx is the store.Tx of an Update: it writes the working state in
// place, remembering what each write replaced so that a failing function's
// writes can be undone, and encodes its operations as one journal entry.
type writeTx struct {
	reader
	s    *Store
	undo []undo
	ops  int // operations appended to the store's journal buffer
	// feedMark is the change feed position of the transaction's first
	// recorded change (0: none), taken back on rollback.
	feedMark int64
}

// undo is what one write replaced.
type undo struct {
	kind  store.Kind
	old   *rec // nil: the record did not exist
	new   *rec // nil: the write deleted it
	lease *leaseUndo
}

type leaseUndo struct {
	name string
	old  lease
	had  bool
}

func (tx *writeTx) table(kind store.Kind) *table {
	t := tx.tables[kind]
	if t == nil {
		t = newTable()
		tx.tables[kind] = t
	}
	tx.s.dirty[kind] = true
	return t
}

func (tx *writeTx) write(kind store.Kind, old, r *rec) {
	tx.table(kind).set(old, r)
	tx.undo = append(tx.undo, undo{kind: kind, old: old, new: r})
	if r != nil {
		tx.s.buf = appendPut(tx.s.buf, kind, r)
	} else {
		tx.s.buf = appendDelete(tx.s.buf, kind, old.id)
	}
	tx.ops++
	if tx.s.feed.Watched(kind) {
		id := old
		if r != nil {
			id = r
		}
		if p := tx.s.feed.Append(kind, id.id); tx.feedMark == 0 {
			tx.feedMark = p
		}
	}
}

func (tx *writeTx) Insert(ctx context.Context, r store.Record) error {
	if err := tx.check(ctx); err != nil {
		return err
	}
	if t := tx.tables[r.Kind]; t != nil && t.get(r.ID) != nil {
		return store.ErrExists
	}
	tx.write(r.Kind, nil, tx.newRec(&r, nil))
	return nil
}

func (tx *writeTx) Put(ctx context.Context, r store.Record) error {
	if err := tx.check(ctx); err != nil {
		return err
	}
	var old *rec
	if t := tx.tables[r.Kind]; t != nil {
		old = t.get(r.ID)
	}
	tx.write(r.Kind, old, tx.newRec(&r, old))
	return nil
}

// newRec makes the stored form of r, keeping old's Seq or assigning the next.
func (tx *writeTx) newRec(r *store.Record, old *rec) *rec {
	n := &rec{id: r.ID, parent: r.Parent, key: r.Key, rank: r.Rank, data: bytes.Clone(r.Data)}
	if n.data == nil {
		n.data = []byte{}
	}
	if old != nil {
		n.seq = old.seq
	} else {
		n.seq = tx.s.nextSeq
		tx.s.nextSeq++
	}
	return n
}

func (tx *writeTx) Delete(ctx context.Context, kind store.Kind, id string) error {
	if err := tx.check(ctx); err != nil {
		return err
	}
	t := tx.tables[kind]
	if t == nil {
		return store.ErrNotFound
	}
	old := t.get(id)
	if old == nil {
		return store.ErrNotFound
	}
	tx.write(kind, old, nil)
	return nil
}

// lease takes or renews the lease name for holder until expires when it is
// free, expired at now, or holder's already, and returns it. A renewal
// before expiry keeps the term; any other grant starts the next one.
func (tx *writeTx) lease(name, holder string, now, expires int64) (lease, bool) {
	cur, had := tx.s.leases[name]
	if had && cur.holder != holder && cur.expires > now {
		return cur, false
	}
	l := lease{holder: holder, expires: expires, term: cur.term}
	if !had || cur.holder != holder || cur.expires <= now {
		l.term++
	}
	tx.undo = append(tx.undo, undo{lease: &leaseUndo{name: name, old: cur, had: had}})
	tx.s.leases[name] = l
	tx.s.leasesDirty = true
	tx.s.buf = appendLease(tx.s.buf, name, l)
	tx.ops++
	return l, true
}

// rollback undoes every write of the transaction, newest first. The caller
// drops its operations from the journal buffer.
func (tx *writeTx) rollback() {
	for i := len(tx.undo) - 1; i >= 0; i-- {
		u := tx.undo[i]
		if u.lease != nil {
			if u.lease.had {
				tx.s.leases[u.lease.name] = u.lease.old
			} else {
				delete(tx.s.leases, u.lease.name)
			}
			continue
		}
		tx.tables[u.kind].set(u.new, u.old)
	}
	tx.undo, tx.ops = nil, 0
	if tx.feedMark > 0 {
		tx.s.feed.Truncate(tx.feedMark)
		tx.feedMark = 0
	}
}

package metrics

import (
	"context"
	"errors"
	"time"

	"github.com/hoistgg/hoist/internal/store"
)

// Store wraps a store.Store: it times each read-write transaction
// (Update, UpdateFenced, Claim), counts the records each writes, and
// counts the GameLift events its writes make (transitions.go) once it
// has committed. Everything else goes straight to the wrapped store.
type Store struct {
	store.Store
	m *Metrics
}

// WrapStore returns st wrapped so that its transactions are measured and
// counted into m. The result keeps st's store.Waker (PostgreSQL's NOTIFY,
// which the replicas' inboxes wake one another with), when st has one.
func (m *Metrics) WrapStore(st store.Store) store.Store {
	s := &Store{Store: st, m: m}
	if w, ok := st.(store.Waker); ok {
		return struct {
			*Store
			store.Waker
		}{s, w}
	}
	return s
}

// Read is store.Read on the wrapped store (reads are not measured).
func (s *Store) Read(ctx context.Context, fn func(tx store.Tx) error) error {
	return store.Read(ctx, s.Store, fn)
}

// Update is store.Store's, measured.
func (s *Store) Update(ctx context.Context, fn func(tx store.Tx) error) error {
	return s.run("update", fn, func(f func(store.Tx) error) error { return s.Store.Update(ctx, f) })
}

// UpdateFenced is store.Store's, measured.
func (s *Store) UpdateFenced(ctx context.Context, g store.Grant, fn func(tx store.Tx) error) error {
	return s.run("update_fenced", fn, func(f func(store.Tx) error) error { return s.Store.UpdateFenced(ctx, g, f) })
}

// Claim is store.Store's, measured.
func (s *Store) Claim(ctx context.Context, fn func(tx store.Tx) error) error {
	return s.run("claim", fn, func(f func(store.Tx) error) error { return s.Store.Claim(ctx, f) })
}

// ClaimFenced is store.ClaimIn on the wrapped store, measured as a Claim.
func (s *Store) ClaimFenced(ctx context.Context, g store.Grant, fn func(tx store.Tx) error) error {
	return s.run("claim", fn, func(f func(store.Tx) error) error { return store.ClaimIn(ctx, s.Store, g, f) })
}

// run runs fn through call (one of the wrapped store's transactions),
// each attempt with a countingTx, and, once it committed, applies what
// the last attempt counted.
func (s *Store) run(op string, fn func(store.Tx) error, call func(func(store.Tx) error) error) error {
	start := time.Now()
	var last *countingTx
	err := call(func(tx store.Tx) error {
		last = &countingTx{Tx: tx}
		return fn(last)
	})
	s.m.own.storeUpdate.WithLabelValues(op, outcome(err)).Observe(seconds(time.Since(start)))
	if err == nil && last != nil {
		s.m.own.storeWrites.WithLabelValues(op).Observe(float64(last.writes))
		last.commit(s.m)
	}
	return err
}

// outcome is a transaction's result label: ok, conflict, lease_lost or
// error.
func outcome(err error) string {
	switch {
	case err == nil:
		return "ok"
	case errors.Is(err, store.ErrConflict):
		return "conflict"
	case errors.Is(err, store.ErrLeaseLost):
		return "lease_lost"
	}
	return "error"
}

// countingTx is one attempt of a transaction: it counts the records
// written and, for the watched kinds (transitions.go), remembers the Key
// each record had before the transaction and the record it wrote last,
// so that commit counts each record's transition once.
type countingTx struct {
	store.Tx
	writes int
	// before holds the Key a watched record had in the store before this
	// transaction (noRecord: there was none); after the record this
	// transaction wrote last (Data nil and Key noRecord: deleted).
	before  map[recordRef]string
	after   map[recordRef]store.Record
	pending []func(*Metrics)
	// deleted holds the records of counted kinds this transaction deleted:
	// inserting one again rewrites it (matchmaking tickets are written so).
	deleted map[recordRef]bool
}

// recordRef names a record.
type recordRef struct {
	kind store.Kind
	id   string
}

// noRecord is the "Key" of a record that does not exist.
const noRecord = "\x00none"

// Get is the transaction's, remembering a watched record's Key.
func (t *countingTx) Get(ctx context.Context, kind store.Kind, id string) (store.Record, error) {
	rec, err := t.Tx.Get(ctx, kind, id)
	if watched(kind) {
		switch {
		case err == nil:
			t.remember(kind, id, rec.Key)
		case errors.Is(err, store.ErrNotFound):
			t.remember(kind, id, noRecord)
		}
	}
	return rec, err
}

// GetMany is store.GetMany on the transaction, remembering the Keys of
// watched records as Get does.
func (t *countingTx) GetMany(ctx context.Context, kind store.Kind, ids []string) ([]store.Record, error) {
	recs, err := store.GetMany(ctx, t.Tx, kind, ids)
	if err == nil && watched(kind) {
		found := make(map[string]bool, len(recs))
		for _, r := range recs {
			t.remember(r.Kind, r.ID, r.Key)
			found[r.ID] = true
		}
		for _, id := range ids {
			if !found[id] {
				t.remember(kind, id, noRecord)
			}
		}
	}
	return recs, err
}

// GetRefs is store.GetRefs on the transaction, remembering the Keys of
// the watched records it holds as Get does (an Unheld ref's, as
// Unheld(tx).Get, not).
func (t *countingTx) GetRefs(ctx context.Context, refs []store.Ref) ([]store.Got, error) {
	got, err := store.GetRefs(ctx, t.Tx, refs)
	if err == nil {
		for i, r := range refs {
			switch {
			case r.Unheld || !watched(r.Kind):
			case got[i].Found:
				t.remember(r.Kind, r.ID, got[i].Record.Key)
			default:
				t.remember(r.Kind, r.ID, noRecord)
			}
		}
	}
	return got, err
}

// List is the transaction's, remembering the Keys of watched records.
func (t *countingTx) List(ctx context.Context, q store.Query) ([]store.Record, string, error) {
	recs, next, err := t.Tx.List(ctx, q)
	if err == nil && watched(q.Kind) {
		for _, r := range recs {
			t.remember(r.Kind, r.ID, r.Key)
		}
	}
	return recs, next, err
}

// FirstWithChild is store.FirstWithChild on the transaction (one
// statement where it can), remembering the Keys of the watched records
// it returns as List does (the records it passed over are not written).
func (t *countingTx) FirstWithChild(ctx context.Context, q, child store.Query, idFrom int) (store.Record, store.Record, bool, error) {
	p, c, found, err := store.FirstWithChild(ctx, t.Tx, q, child, idFrom)
	if err == nil && found {
		for _, r := range []store.Record{p, c} {
			if watched(r.Kind) {
				t.remember(r.Kind, r.ID, r.Key)
			}
		}
	}
	return p, c, found, err
}

// Unheld is the transaction reading without holding (store.Unheld): its
// Gets and Lists go to the wrapped transaction's unheld reads, its writes
// are counted here.
func (t *countingTx) Unheld() store.Tx {
	if _, ok := t.Tx.(store.UnheldReader); !ok {
		return t
	}
	return unheldCountingTx{countingTx: t, reads: store.Unheld(t.Tx)}
}

// unheldCountingTx is a countingTx whose reads hold nothing.
type unheldCountingTx struct {
	*countingTx
	reads store.Tx
}

func (u unheldCountingTx) Get(ctx context.Context, kind store.Kind, id string) (store.Record, error) {
	return u.reads.Get(ctx, kind, id)
}

func (u unheldCountingTx) GetMany(ctx context.Context, kind store.Kind, ids []string) ([]store.Record, error) {
	return store.GetMany(ctx, u.reads, kind, ids)
}

func (u unheldCountingTx) GetRefs(ctx context.Context, refs []store.Ref) ([]store.Got, error) {
	return store.GetRefs(ctx, u.reads, refs)
}

func (u unheldCountingTx) FirstWithChild(ctx context.Context, q, child store.Query, idFrom int) (store.Record, store.Record, bool, error) {
	return store.FirstWithChild(ctx, u.reads, q, child, idFrom)
}

func (u unheldCountingTx) List(ctx context.Context, q store.Query) ([]store.Record, string, error) {
	return u.reads.List(ctx, q)
}

// Insert is the transaction's, counted.
func (t *countingTx) Insert(ctx context.Context, rec store.Record) error {
	if err := t.Tx.Insert(ctx, rec); err != nil {
		return err
	}
	t.countInsert(rec)
	return nil
}

// countInsert counts rec, which t inserted.
func (t *countingTx) countInsert(rec store.Record) {
	t.writes++
	if watched(rec.Kind) {
		t.remember(rec.Kind, rec.ID, noRecord)
		t.wrote(rec)
	}
	if countedInsert(rec.Kind) && !t.deleted[recordRef{rec.Kind, rec.ID}] {
		inserted(t, rec)
	}
}

// InsertNew is store.InsertNew on the transaction, counted as Insert.
func (t *countingTx) InsertNew(ctx context.Context, rec store.Record) error {
	if err := store.InsertNew(ctx, t.Tx, rec); err != nil {
		return err
	}
	t.countInsert(rec)
	return nil
}

// Replace is store.Replace on the transaction, counted as a Put (a new
// version of a record that exists: a ticket's or a placement's next
// status).
func (t *countingTx) Replace(ctx context.Context, rec store.Record) error {
	if watched(rec.Kind) {
		if err := t.readBefore(ctx, rec.Kind, rec.ID); err != nil {
			return err
		}
	}
	if err := store.Replace(ctx, t.Tx, rec); err != nil {
		return err
	}
	t.writes++
	if watched(rec.Kind) {
		t.wrote(rec)
	}
	return nil
}

// Put is the transaction's, counted.
func (t *countingTx) Put(ctx context.Context, rec store.Record) error {
	if watched(rec.Kind) {
		if err := t.readBefore(ctx, rec.Kind, rec.ID); err != nil {
			return err
		}
	}
	if err := t.Tx.Put(ctx, rec); err != nil {
		return err
	}
	t.writes++
	if watched(rec.Kind) {
		t.wrote(rec)
	}
	return nil
}

// Delete is the transaction's, counted.
func (t *countingTx) Delete(ctx context.Context, kind store.Kind, id string) error {
	if watched(kind) {
		if err := t.readBefore(ctx, kind, id); err != nil {
			return err
		}
	}
	if err := t.Tx.Delete(ctx, kind, id); err != nil {
		return err
	}
	t.writes++
	if watched(kind) {
		t.wrote(store.Record{Kind: kind, ID: id, Key: noRecord})
	}
	if countedInsert(kind) {
		if t.deleted == nil {
			t.deleted = map[recordRef]bool{}
		}
		t.deleted[recordRef{kind, id}] = true
	}
	return nil
}

// DeleteMany is store.DeleteMany on the transaction (one statement where
// it can); a kind the metrics watch or count is deleted one record at a
// time, as Delete does, so that each is counted.
func (t *countingTx) DeleteMany(ctx context.Context, kind store.Kind, ids []string) error {
	if watched(kind) || countedInsert(kind) {
		for _, id := range ids {
			if err := t.Delete(ctx, kind, id); err != nil && !errors.Is(err, store.ErrNotFound) {
				return err
			}
		}
		return nil
	}
	if err := store.DeleteMany(ctx, t.Tx, kind, ids); err != nil {
		return err
	}
	t.writes += len(ids)
	return nil
}

// readBefore reads the Key a watched record had before this transaction,
// unless the transaction has read or written it already.
func (t *countingTx) readBefore(ctx context.Context, kind store.Kind, id string) error {
	if _, ok := t.before[recordRef{kind, id}]; ok {
		return nil
	}
	rec, err := t.Tx.Get(ctx, kind, id)
	switch {
	case err == nil:
		t.remember(kind, id, rec.Key)
	case errors.Is(err, store.ErrNotFound):
		t.remember(kind, id, noRecord)
	default:
		return err
	}
	return nil
}

// remember records a watched record's Key before this transaction, unless
// it is known already.
func (t *countingTx) remember(kind store.Kind, id, key string) {
	if t.before == nil {
		t.before = map[recordRef]string{}
	}
	if _, ok := t.before[recordRef{kind, id}]; !ok {
		t.before[recordRef{kind, id}] = key
	}
}

// wrote records the last write of a watched record.
func (t *countingTx) wrote(rec store.Record) {
	if t.after == nil {
		t.after = map[recordRef]store.Record{}
	}
	t.after[recordRef{rec.Kind, rec.ID}] = rec
}

// count adds a count to apply once the transaction commits.
func (t *countingTx) count(f func(*Metrics)) { t.pending = append(t.pending, f) }

// commit applies the counts of a committed transaction: the watched
// records' transitions, then the rest.
func (t *countingTx) commit(m *Metrics) {
	for ref, rec := range t.after {
		if old := t.before[ref]; old != rec.Key {
			m.transition(old, rec)
		}
	}
	for _, f := range t.pending {
		f(m)
	}
}

// countAfterCommit runs f once tx's transaction has committed: at once
// when tx is not a transaction of a wrapped store.
func countAfterCommit(tx store.Tx, m *Metrics, f func(*Metrics)) {
	if ct, ok := tx.(*countingTx); ok {
		ct.count(f)
		return
	}
	f(m)
}

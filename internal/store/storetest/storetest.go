// Package storetest is the conformance suite every store.Store backend must
// pass. A backend's tests call Run with a function that opens a fresh, empty
// store whose lease clock is env.Now:
//
//	func TestConformance(t *testing.T) {
//		storetest.Run(t, func(t *testing.T, env storetest.Env) store.Store {
//			s, err := sqlite.Open(filepath.Join(t.TempDir(), "hoist.db"), sqlite.Options{Now: env.Now})
//			if err != nil {
//				t.Fatal(err)
//			}
//			return s
//		})
//	}
//
// The suite closes every store it opens (Close must therefore be safe to call
// twice). It checks record semantics and errors, Seq assignment, every query
// filter and order, cursor pagination (also while the data changes between
// pages), rollback, snapshot isolation of View, serializability of concurrent
// Updates, leases (their terms, fenced Updates, and listing them), Claims
// (concurrent claimers take distinct records, none is lost, alongside
// Updates), the change feed, Close and context cancellation.
//
// Besides the documented store.Store contract the suite requires:
//   - a View does not block Updates, and Updates do not block a View;
//   - List returns Next == "" on the last page (no empty trailing page);
//   - a cursor that is not one the backend issued, or that was issued for a
//     different Order, fails with store.ErrInvalidCursor;
//   - Tx methods called after the transaction's function returned fail;
//   - a panic in an Update or View function reaches the caller, nothing the
//     function wrote is kept, and the store keeps working; the same when an
//     Update function ends its goroutine (runtime.Goexit, as t.FailNow does).
//
// The PostgreSQL backend (package postgres) passes it with SERIALIZABLE
// Update transactions that rerun the function on serialization failures
// (40001, 40P01) before giving up with store.ErrConflict, REPEATABLE READ
// READ ONLY View transactions, Seq from a sequence that Put's upsert leaves
// alone, IDs compared byte-wise (bytea), keyset cursors like the SQLite
// ones, leases as rows taken over by a conditional upsert, and a change
// feed ordered by transaction ID up to the oldest running transaction.
// internal/store/README.md has the details.
package storetest

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/hoistgg/hoist/internal/store"
)

// Opener opens a fresh, empty store for one test, whose lease clock
// (AcquireLease, UpdateFenced) is env.Now.
type Opener func(t *testing.T, env Env) store.Store

// Env is what a test gives the store it opens.
type Env struct {
	// Now is the store's lease clock: a fake that the lease tests move.
	// An embedded store reads it as its clock. The PostgreSQL store, whose
	// clock is the database's, adds to the database's clock how far Now
	// has moved since the store was opened (see Elapsed).
	Now func() time.Time
	// Elapsed is how far Now has moved since the test began.
	Elapsed func() time.Duration
}

// Clock is the fake clock of one test: it starts at the real time and moves
// only when the test advances it.
type Clock struct {
	mu    sync.Mutex
	start time.Time
	now   time.Time
}

// NewClock returns a clock at the current time.
func NewClock() *Clock {
	now := time.Now()
	return &Clock{start: now, now: now}
}

// Now returns the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Elapsed returns how far the clock has moved.
func (c *Clock) Elapsed() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now.Sub(c.start)
}

// Advance moves the clock forward by d.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// Env returns the Env of a store that uses the clock.
func (c *Clock) Env() Env { return Env{Now: c.Now, Elapsed: c.Elapsed} }

// Run runs the whole conformance suite against the backend open returns.
func Run(t *testing.T, open Opener) {
	groups := []struct {
		name  string
		tests []test
	}{
		{"Records", recordTests},
		{"Seq", seqTests},
		{"List", listTests},
		{"Transactions", txnTests},
		{"Concurrency", concurrencyTests},
		{"Lease", leaseTests},
		{"LeaseTerms", termTests},
		{"Leases", leasesTests},
		{"Claim", claimTests},
		{"Batch", batchTests},
		{"Changes", changeTests},
		{"Lifecycle", lifecycleTests},
	}
	for _, g := range groups {
		t.Run(g.name, func(t *testing.T) {
			for _, tc := range g.tests {
				t.Run(tc.name, func(t *testing.T) {
					clock := NewClock()
					tc.fn(t, openStore(t, open, clock), clock)
				})
			}
		})
	}
}

// test is one conformance check run against a fresh store and its clock.
type test struct {
	name string
	fn   func(t *testing.T, s store.Store, clock *Clock)
}

// plain adapts a test that does not move the clock.
func plain(fn func(t *testing.T, s store.Store)) func(t *testing.T, s store.Store, clock *Clock) {
	return func(t *testing.T, s store.Store, _ *Clock) { fn(t, s) }
}

// watchdog bounds how long the suite waits for something a correct backend
// does at once; it turns a deadlock in a broken backend into a failure.
const watchdog = 20 * time.Second

func openStore(t *testing.T, open Opener, clock *Clock) store.Store {
	t.Helper()
	s := open(t, clock.Env())
	if s == nil {
		t.Fatal("open returned a nil store")
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil && !errors.Is(err, store.ErrClosed) {
			t.Errorf("Close: %v", err)
		}
	})
	return s
}

var errBoom = errors.New("storetest: boom")

const (
	kindItem  store.Kind = "Item"
	kindOther store.Kind = "Other"
)

// insert adds recs in one Update.
func insert(t *testing.T, s store.Store, recs ...store.Record) {
	t.Helper()
	err := s.Update(t.Context(), func(tx store.Tx) error {
		for _, r := range recs {
			if err := tx.Insert(t.Context(), r); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("insert: %v", err)
	}
}

// get reads one record in a View; ok is false when it does not exist.
func get(t *testing.T, s store.Store, kind store.Kind, id string) (rec store.Record, ok bool) {
	t.Helper()
	err := s.View(t.Context(), func(tx store.Tx) error {
		var err error
		rec, err = tx.Get(t.Context(), kind, id)
		return err
	})
	if errors.Is(err, store.ErrNotFound) {
		return store.Record{}, false
	}
	if err != nil {
		t.Fatalf("get %s/%s: %v", kind, id, err)
	}
	return rec, true
}

// mustGet reads a record that must exist.
func mustGet(t *testing.T, s store.Store, kind store.Kind, id string) store.Record {
	t.Helper()
	rec, ok := get(t, s, kind, id)
	if !ok {
		t.Fatalf("%s/%s: not found", kind, id)
	}
	return rec
}

// mustNotExist fails when the record exists.
func mustNotExist(t *testing.T, s store.Store, kind store.Kind, id string) {
	t.Helper()
	if _, ok := get(t, s, kind, id); ok {
		t.Errorf("%s/%s exists, want it absent", kind, id)
	}
}

// list runs one List in a View.
func list(t *testing.T, s store.Store, q store.Query) ([]store.Record, string) {
	t.Helper()
	var recs []store.Record
	var next string
	err := s.View(t.Context(), func(tx store.Tx) error {
		var err error
		recs, next, err = tx.List(t.Context(), q)
		return err
	})
	if err != nil {
		t.Fatalf("List(%+v): %v", q, err)
	}
	return recs, next
}

// count runs one Count in a View.
func count(t *testing.T, s store.Store, q store.Query) int {
	t.Helper()
	var n int
	err := s.View(t.Context(), func(tx store.Tx) error {
		var err error
		n, err = tx.Count(t.Context(), q)
		return err
	})
	if err != nil {
		t.Fatalf("Count(%+v): %v", q, err)
	}
	return n
}

func ids(recs []store.Record) []string {
	out := make([]string, len(recs))
	for i, r := range recs {
		out[i] = r.ID
	}
	return out
}

// sameRecord compares everything but Seq.
func sameRecord(a, b store.Record) bool {
	return a.Kind == b.Kind && a.ID == b.ID && a.Parent == b.Parent && a.Key == b.Key &&
		a.Rank == b.Rank && slices.Equal(a.Data, b.Data)
}

// waitErr waits for an error from ch, failing the test when it takes longer
// than the watchdog.
func waitErr(t *testing.T, ch <-chan error, what string) error {
	t.Helper()
	select {
	case err := <-ch:
		return err
	case <-time.After(watchdog):
		t.Fatalf("%s did not finish within %v", what, watchdog)
		return nil
	}
}

// ctxCanceled returns a context that is already canceled.
func ctxCanceled(t *testing.T) context.Context {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	return ctx
}

package postgres

import (
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hoistgg/hoist/internal/store"
	"github.com/hoistgg/hoist/internal/store/postgres/pgtest"
)

// TestFenceIgnoresOwnRenewal: the holder renewing its lease while one of
// its fenced Updates runs (a long matchmaking pass) does not make that
// Update run again: the fence locks the term's row, which a renewal does
// not write. Before migration 2 it locked the lease row, and the renewal
// failed the SERIALIZABLE transaction at its fence (one retry, run alone).
func TestFenceIgnoresOwnRenewal(t *testing.T) {
	s := openTest(t, Options{})
	ctx := t.Context()
	g, ok, err := s.AcquireLease(ctx, "shard/q1", "r1", time.Minute)
	if err != nil || !ok {
		t.Fatalf("AcquireLease: %v %v", ok, err)
	}
	for _, claim := range []bool{false, true} {
		before := s.Stats()
		runs := 0
		fenced := s.UpdateFenced
		if claim {
			fenced = s.ClaimFenced
		}
		err := fenced(ctx, g, func(tx store.Tx) error {
			runs++
			// The transaction's snapshot is taken by its first read.
			if _, err := tx.Get(ctx, "K", "none"); !errors.Is(err, store.ErrNotFound) {
				return err
			}
			if runs == 1 {
				r, ok, err := s.AcquireLease(ctx, g.Name, g.Holder, time.Minute)
				if err != nil || !ok || r.Term != g.Term {
					t.Fatalf("renewal: %+v %v %v", r, ok, err)
				}
			}
			return tx.Put(ctx, store.Record{Kind: "K", ID: "x", Data: []byte(`{}`)})
		})
		if err != nil {
			t.Fatalf("claim %v: %v", claim, err)
		}
		if runs != 1 || s.Stats().Retries != before.Retries {
			t.Errorf("claim %v: the fenced transaction ran %d times (%d retries) after its holder's renewal; want once",
				claim, runs, s.Stats().Retries-before.Retries)
		}
	}
}

// TestFenceAfterTakeover: a lease taken over while the old holder's fenced
// transaction runs (its snapshot taken before the new term committed)
// fails that transaction with store.ErrLeaseLost, writing nothing; and a
// takeover waits for a fenced transaction that already passed its fence.
// The takeovers are Lease calls with the caller's clock two hours ahead
// of the grant's, so no test waits for a lease to expire.
func TestFenceAfterTakeover(t *testing.T) {
	url := pgtest.URL(t)
	s := openTestURL(t, url, Options{})
	ctx := t.Context()
	later := func() time.Time { return time.Now().Add(2 * time.Hour) }
	for _, claim := range []bool{false, true} {
		name := fmt.Sprintf("shard/claim-%v", claim)
		g, ok, err := s.AcquireLease(ctx, name, "r1", time.Hour)
		if err != nil || !ok {
			t.Fatalf("AcquireLease: %v %v", ok, err)
		}
		fenced := s.UpdateFenced
		if claim {
			fenced = s.ClaimFenced
		}
		err = fenced(ctx, g, func(tx store.Tx) error {
			if _, err := tx.Get(ctx, "K", "none"); !errors.Is(err, store.ErrNotFound) {
				return err
			}
			if ok, err := s.Lease(ctx, name, "r2", later(), time.Minute); err != nil || !ok {
				t.Fatalf("takeover: %v %v", ok, err)
			}
			return tx.Put(ctx, store.Record{Kind: "K", ID: name, Data: []byte(`{}`)})
		})
		if !errors.Is(err, store.ErrLeaseLost) {
			t.Fatalf("claim %v: a fenced transaction across a takeover: %v, want ErrLeaseLost", claim, err)
		}
		if err := s.View(ctx, func(tx store.Tx) error {
			_, err := tx.Get(ctx, "K", name)
			return err
		}); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("claim %v: the fenced write was kept: %v", claim, err)
		}
	}

	g, ok, err := s.AcquireLease(ctx, "shard/held", "r1", time.Hour)
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	passed, release := make(chan struct{}), make(chan struct{})
	holder := openTestURL(t, url, Options{beforeCommit: func() { close(passed); <-release }})
	done := make(chan error, 1)
	go func() {
		done <- holder.UpdateFenced(ctx, g, func(tx store.Tx) error {
			return tx.Put(ctx, store.Record{Kind: "K", ID: "held", Data: []byte(`{}`)})
		})
	}()
	<-passed
	took := make(chan error, 1)
	go func() {
		_, err := s.Lease(ctx, g.Name, "r2", later(), time.Minute)
		took <- err
	}()
	// The takeover must not end while the fenced transaction is open; how
	// long to watch for a wrong early end is the only wall time here.
	select {
	case err := <-took:
		t.Fatalf("the takeover did not wait for the fenced transaction past its fence (err %v)", err)
	case <-time.After(200 * time.Millisecond):
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatalf("the fenced transaction past its fence: %v", err)
	}
	if err := <-took; err != nil {
		t.Fatal(err)
	}
}

// TestTermsMigrated: a lease granted under schema version 1 (before
// hoist_lease_terms) still fences once Open migrated the schema: the
// migration copies the terms of the grants held.
func TestTermsMigrated(t *testing.T) {
	url := pgtest.URL(t)
	sqlOne(t, url, `CREATE TABLE hoist_schema_migrations (version int PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())`)
	for _, stmt := range migrations[0] {
		sqlOne(t, url, stmt)
	}
	sqlOne(t, url, `INSERT INTO hoist_schema_migrations (version) VALUES (1)`)
	sqlOne(t, url, `INSERT INTO hoist_leases (name, holder, term, expires) VALUES ('shard/old'::bytea, 'r1'::bytea, 7, 9000000000000000000)`)
	s := openTestURL(t, url, Options{})
	ctx := t.Context()
	g := store.Grant{Name: "shard/old", Holder: "r1", Term: 7}
	if err := s.UpdateFenced(ctx, g, func(tx store.Tx) error {
		return tx.Put(ctx, store.Record{Kind: "K", ID: "a", Data: []byte(`{}`)})
	}); err != nil {
		t.Fatalf("a grant of version 1, fenced after the migration: %v", err)
	}
	if ok, err := s.Lease(ctx, g.Name, "r2", time.Unix(0, 9000000000000000001), time.Minute); err != nil || !ok {
		t.Fatalf("takeover: %v %v", ok, err)
	}
	if err := s.UpdateFenced(ctx, g, func(tx store.Tx) error {
		return tx.Put(ctx, store.Record{Kind: "K", ID: "b", Data: []byte(`{}`)})
	}); !errors.Is(err, store.ErrLeaseLost) {
		t.Fatalf("the old grant after a takeover: %v, want ErrLeaseLost", err)
	}
	var n int
	sqlOne(t, url, `SELECT count(*) FROM hoist_lease_terms`, &n)
	if n != 1 {
		t.Errorf("hoist_lease_terms holds %d rows after the takeover, want 1 (the new term's)", n)
	}
}

// TestFenceLongTransactionRenewed: a fenced transaction that outlives the
// expiry its snapshot shows, while its holder keeps renewing the lease (a
// long matchmaking pass), commits, at once: the fence takes the expiry of
// the latest renewal this Store committed. It is refused once that
// renewal too has expired (a holder paused past its lease). The database's
// clock is moved by ClockShift; nothing waits.
func TestFenceLongTransactionRenewed(t *testing.T) {
	var shift atomic.Int64
	s := openTest(t, Options{ClockShift: func() time.Duration { return time.Duration(shift.Load()) }})
	ctx := t.Context()
	g, ok, err := s.AcquireLease(ctx, "shard/long", "r1", time.Minute)
	if err != nil || !ok {
		t.Fatalf("AcquireLease: %v %v", ok, err)
	}
	for _, c := range []struct {
		after time.Duration // the clock's move after the renewal
		want  error
	}{{20 * time.Second, nil}, {2 * time.Minute, store.ErrLeaseLost}} {
		shift.Store(0)
		g, _, _ = s.AcquireLease(ctx, g.Name, g.Holder, time.Minute) // expires at 60 s
		before := s.Stats()
		err := s.UpdateFenced(ctx, g, func(tx store.Tx) error {
			if _, err := tx.Get(ctx, "K", "none"); !errors.Is(err, store.ErrNotFound) {
				return err
			}
			shift.Store(int64(50 * time.Second))
			if r, ok, err := s.AcquireLease(ctx, g.Name, g.Holder, time.Minute); err != nil || !ok || r.Term != g.Term {
				t.Fatalf("renewal: %+v %v %v", r, ok, err) // expires at 110 s
			}
			shift.Store(int64(50*time.Second + c.after))
			return tx.Put(ctx, store.Record{Kind: "K", ID: "long", Data: []byte(`{}`)})
		})
		if !errors.Is(err, c.want) || (c.want == nil && err != nil) {
			t.Errorf("a fenced transaction %v past its renewal (at 50 s, for 60 s): %v, want %v", c.after, err, c.want)
		}
		if c.want == nil && s.Stats().Retries != before.Retries {
			t.Errorf("it ran again %d times", s.Stats().Retries-before.Retries)
		}
	}
}

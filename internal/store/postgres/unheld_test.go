package postgres

import (
	"errors"
	"testing"
	"time"

	"github.com/hoistgg/hoist/internal/store"
)

// TestClaimUnheldReadsHoldNothing: while a Claim holds a record it read
// (a fleet every placement reads), another Claim reading it through
// store.Unheld gets it at once, where a plain Get in a Claim waits for the
// holder; Unheld reads of an Update are the Update's own.
func TestClaimUnheldReadsHoldNothing(t *testing.T) {
	s := openTest(t, Options{})
	ctx := t.Context()
	if err := s.Update(ctx, func(tx store.Tx) error {
		if store.Unheld(tx) != tx {
			t.Error("an Update's Unheld is not the Update's transaction")
		}
		return tx.Insert(ctx, store.Record{Kind: "Fleet", ID: "f1", Data: []byte(`{}`)})
	}); err != nil {
		t.Fatal(err)
	}
	held, release := make(chan struct{}), make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- s.Claim(ctx, func(tx store.Tx) error {
			if _, err := tx.Get(ctx, "Fleet", "f1"); err != nil {
				return err
			}
			close(held)
			<-release
			return nil
		})
	}()
	<-held
	start := time.Now()
	err := s.Claim(ctx, func(tx store.Tx) error {
		if _, err := store.Unheld(tx).Get(ctx, "Fleet", "f1"); err != nil {
			return err
		}
		recs, _, err := store.Unheld(tx).List(ctx, store.Query{Kind: "Fleet"})
		if err == nil && len(recs) != 1 {
			t.Errorf("an unheld List found %d records, want 1", len(recs))
		}
		return err
	})
	close(release)
	if err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("the unheld reads took %v: they waited for the holder", d)
	}
}

// TestClaimFencedRefusesAStaleGrant: ClaimIn with a grant whose lease has
// passed to another holder keeps nothing and answers ErrLeaseLost; with
// the holder's current grant it commits.
func TestClaimFencedRefusesAStaleGrant(t *testing.T) {
	s := openTest(t, Options{})
	ctx := t.Context()
	stale, _, err := s.AcquireLease(ctx, "shard/x/1", "r1", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.AcquireLease(ctx, "shard/x/1", "r1", 0); err != nil {
		t.Fatal(err)
	}
	cur, ok, err := s.AcquireLease(ctx, "shard/x/1", "r2", time.Minute)
	if err != nil || !ok {
		t.Fatalf("r2's lease: %v %v", ok, err)
	}
	put := func(id string) func(tx store.Tx) error {
		return func(tx store.Tx) error { return tx.Insert(ctx, store.Record{Kind: "Item", ID: id}) }
	}
	if err := store.ClaimIn(ctx, s, stale, put("a")); !errors.Is(err, store.ErrLeaseLost) {
		t.Fatalf("a Claim fenced by a stale grant: %v, want ErrLeaseLost", err)
	}
	if err := store.ClaimIn(ctx, s, cur, put("b")); err != nil {
		t.Fatal(err)
	}
	err = s.View(ctx, func(tx store.Tx) error {
		if _, err := tx.Get(ctx, "Item", "a"); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("the refused Claim's record: %v, want ErrNotFound", err)
		}
		_, err := tx.Get(ctx, "Item", "b")
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

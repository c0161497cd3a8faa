package postgres

import (
	"context"
	"testing"

	"github.com/hoistgg/hoist/internal/store"
)

// TestClaimSkipsOrWaits: while a Claim holds the first free record, a List
// with SkipHeld in another Claim takes the second at once, and one without
// it waits until the holder is done, then sees the record as it left it.
func TestClaimSkipsOrWaits(t *testing.T) {
	s := openTest(t, Options{})
	ctx := t.Context()
	err := s.Update(ctx, func(tx store.Tx) error {
		for _, id := range []string{"r1", "r2"} {
			if err := tx.Insert(ctx, store.Record{Kind: "Item", ID: id, Key: "free"}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	free := store.Query{Kind: "Item", Key: "free", HasKey: true, Limit: 1}
	take := func(q store.Query, before func()) (string, error) {
		var id string
		err := s.Claim(ctx, func(tx store.Tx) error {
			recs, _, err := tx.List(ctx, q)
			if err != nil || len(recs) == 0 {
				return err
			}
			if before != nil {
				before()
			}
			id = recs[0].ID
			recs[0].Key = "taken"
			return tx.Put(ctx, recs[0])
		})
		return id, err
	}
	held, release, released := make(chan struct{}), make(chan struct{}), make(chan struct{})
	aDone := make(chan error, 1)
	go func() {
		id, err := take(free, func() { close(held); <-release })
		if err == nil && id != "r1" {
			t.Errorf("the first Claim took %s, want r1", id)
		}
		aDone <- err
	}()
	<-held
	if id, err := take(store.Query{Kind: "Item", Key: "free", HasKey: true, Limit: 1, SkipHeld: true}, nil); err != nil || id != "r2" {
		t.Fatalf("a Claim passing over held records took %q (%v) while r1 is held, want r2", id, err)
	}
	cDone := make(chan error, 1)
	go func() {
		_, err := take(free, func() { t.Error("a Claim found a free record after both were taken") })
		select {
		case <-released:
		default:
			t.Error("a Claim without SkipHeld answered while r1 was still held")
		}
		cDone <- err
	}()
	close(released)
	close(release)
	if err := <-aDone; err != nil {
		t.Fatal(err)
	}
	if err := <-cDone; err != nil {
		t.Fatal(err)
	}
}

// TestClaimPageHoldsOnlyThePage: a full page in a Claim holds its records
// only: another Claim (passing over held records) takes the next one.
func TestClaimPageHoldsOnlyThePage(t *testing.T) {
	s := openTest(t, Options{})
	ctx := context.Background()
	err := s.Update(ctx, func(tx store.Tx) error {
		for _, id := range []string{"r1", "r2"} {
			if err := tx.Insert(ctx, store.Record{Kind: "Item", ID: id, Key: "free"}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	q := store.Query{Kind: "Item", Key: "free", HasKey: true, Limit: 1, SkipHeld: true}
	err = s.Claim(ctx, func(tx store.Tx) error {
		recs, next, err := tx.List(ctx, q)
		if err != nil || len(recs) != 1 || recs[0].ID != "r1" || next == "" {
			t.Fatalf("page: %v next %q (%v), want r1 and a Next", ids(recs), next, err)
		}
		return s.Claim(context.Background(), func(other store.Tx) error {
			recs, _, err := other.List(ctx, q)
			if err != nil || len(recs) != 1 || recs[0].ID != "r2" {
				t.Errorf("another Claim listed %v (%v), want r2 (only r1 is held)", ids(recs), err)
			}
			return err
		})
	})
	if err != nil {
		t.Fatal(err)
	}
}

// ids returns the records' IDs.
func ids(recs []store.Record) []string {
	out := make([]string, len(recs))
	for i, r := range recs {
		out[i] = r.ID
	}
	return out
}

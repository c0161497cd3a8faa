package storetest

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"testing"

	"github.com/hoistgg/hoist/internal/store"
)

var concurrencyTests = []test{
	{"Counter", plain(testCounter)},
	{"Claim", plain(testClaim)},
	{"InsertRace", plain(testInsertRace)},
}

// bump increments the decimal counter stored as the Data of record id.
func bump(ctx context.Context, tx store.Tx, id string) error {
	rec, err := tx.Get(ctx, kindItem, id)
	if err != nil {
		return err
	}
	n, err := strconv.Atoi(string(rec.Data))
	if err != nil {
		return err
	}
	rec.Data = []byte(strconv.Itoa(n + 1))
	return tx.Put(ctx, rec)
}

// testCounter: 50 goroutines each read-increment-write one record 20 times.
// Serializable Updates lose no increment.
func testCounter(t *testing.T, s store.Store) {
	const workers, rounds = 50, 20
	insert(t, s, store.Record{Kind: kindItem, ID: "counter", Data: []byte("0")})
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for range rounds {
				err := s.Update(t.Context(), func(tx store.Tx) error { return bump(t.Context(), tx, "counter") })
				if err != nil {
					t.Errorf("Update: %v", err)
					return
				}
			}
		})
	}
	wg.Wait()
	if got := string(mustGet(t, s, kindItem, "counter").Data); got != strconv.Itoa(workers*rounds) {
		t.Errorf("counter = %s, want %d", got, workers*rounds)
	}
}

// testClaim: many goroutines each take the first record with Key "free" and
// move it to Key "taken", until none is free. Every record is taken exactly
// once, by the worker whose Update committed the move.
func testClaim(t *testing.T, s store.Store) {
	const records, workers = 120, 16
	var recs []store.Record
	for i := range records {
		recs = append(recs, store.Record{Kind: kindItem, ID: fmt.Sprintf("gs-%03d", i),
			Parent: "group", Key: "free", Rank: int64(i % 5)})
	}
	insert(t, s, recs...)
	claimed := make([][]string, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for {
				id, err := claimOne(t.Context(), s, "worker-"+strconv.Itoa(w))
				if err != nil {
					t.Errorf("claim: %v", err)
					return
				}
				if id == "" {
					return
				}
				claimed[w] = append(claimed[w], id)
			}
		})
	}
	wg.Wait()
	taken := map[string]string{}
	for w, list := range claimed {
		for _, id := range list {
			if prev, dup := taken[id]; dup {
				t.Errorf("%s claimed by %s and worker-%d", id, prev, w)
			}
			taken[id] = "worker-" + strconv.Itoa(w)
		}
	}
	if len(taken) != records {
		t.Errorf("%d records claimed, want %d", len(taken), records)
	}
	for id, who := range taken {
		if rec := mustGet(t, s, kindItem, id); rec.Key != "taken" || string(rec.Data) != who {
			t.Errorf("%s: key %q owner %q, want taken by %s", id, rec.Key, rec.Data, who)
		}
	}
	free := store.Query{Kind: kindItem, Parent: "group", HasParent: true, Key: "free", HasKey: true}
	if n := count(t, s, free); n != 0 {
		t.Errorf("%d records still free", n)
	}
}

// claimOne is the claim pattern of the hot paths: find one candidate through
// the index, move it, in one Update. It returns "" when nothing is free.
func claimOne(ctx context.Context, s store.Store, who string) (string, error) {
	var id string
	err := s.Update(ctx, func(tx store.Tx) error {
		id = ""
		recs, _, err := tx.List(ctx, store.Query{Kind: kindItem, Parent: "group", HasParent: true,
			Key: "free", HasKey: true, Order: store.OrderRankAsc, Limit: 1})
		if err != nil || len(recs) == 0 {
			return err
		}
		rec := recs[0]
		rec.Key, rec.Data = "taken", []byte(who)
		if err := tx.Put(ctx, rec); err != nil {
			return err
		}
		id = rec.ID
		return nil
	})
	return id, err
}

// testInsertRace: goroutines insert the same ID at once; exactly one wins.
func testInsertRace(t *testing.T, s store.Store) {
	const n = 30
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			errs[i] = s.Update(t.Context(), func(tx store.Tx) error {
				return tx.Insert(t.Context(), store.Record{Kind: kindItem, ID: "one", Data: []byte(strconv.Itoa(i))})
			})
		})
	}
	wg.Wait()
	winners := 0
	for i, err := range errs {
		switch {
		case err == nil:
			winners++
			if got := string(mustGet(t, s, kindItem, "one").Data); got != strconv.Itoa(i) {
				t.Errorf("winner %d but record holds %s", i, got)
			}
		case !errors.Is(err, store.ErrExists):
			t.Errorf("Insert %d: %v, want nil or ErrExists", i, err)
		}
	}
	if winners != 1 {
		t.Errorf("%d inserts won, want exactly 1", winners)
	}
}

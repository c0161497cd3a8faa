package storetest

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/hoistgg/hoist/internal/store"
)

var claimTests = []test{
	{"Distinct", plain(testClaimDistinct)},
	{"MoreClaimersThanRecords", plain(testClaimScarce)},
	{"RolledBack", plain(testClaimRolledBack)},
	{"WithUpdates", plain(testClaimWithUpdates)},
	{"ReadYourWrites", plain(testClaimReadYourWrites)},
	{"Pages", plain(testClaimPages)},
}

// takeOne is the claim pattern in a Claim: the first free record (Rank
// order) that no other Claim holds, else (when every free one is held) the
// first once its holder is done, moved to Key "taken" with who in its
// Data. It returns "" when nothing is free.
func takeOne(ctx context.Context, s store.Store, who string) (string, error) {
	var id string
	err := s.Claim(ctx, func(tx store.Tx) error {
		id = ""
		q := store.Query{Kind: kindItem, Parent: "group", HasParent: true,
			Key: "free", HasKey: true, Order: store.OrderRankAsc, Limit: 1, SkipHeld: true}
		recs, _, err := tx.List(ctx, q)
		if err == nil && len(recs) == 0 {
			q.SkipHeld = false
			recs, _, err = tx.List(ctx, q)
		}
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

// freeRecords inserts n free records of "group" (Ranks 0-4).
func freeRecords(t *testing.T, s store.Store, n int) {
	t.Helper()
	var recs []store.Record
	for i := range n {
		recs = append(recs, store.Record{Kind: kindItem, ID: fmt.Sprintf("gs-%03d", i),
			Parent: "group", Key: "free", Rank: int64(i % 5)})
	}
	insert(t, s, recs...)
}

// claimAll runs workers goroutines that each take records until none is
// free (or until each took perWorker, when positive), and returns who took
// what.
func claimAll(t *testing.T, s store.Store, workers, perWorker int) [][]string {
	t.Helper()
	claimed := make([][]string, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for perWorker <= 0 || len(claimed[w]) < perWorker {
				id, err := takeOne(t.Context(), s, "worker-"+strconv.Itoa(w))
				if err != nil {
					t.Errorf("Claim: %v", err)
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
	return claimed
}

// checkTaken checks that no record was taken twice and that each taken
// record names its taker; it returns the taken records.
func checkTaken(t *testing.T, s store.Store, claimed [][]string) map[string]string {
	t.Helper()
	taken := map[string]string{}
	for w, list := range claimed {
		for _, id := range list {
			if prev, dup := taken[id]; dup {
				t.Errorf("%s taken by %s and worker-%d", id, prev, w)
			}
			taken[id] = "worker-" + strconv.Itoa(w)
		}
	}
	for id, who := range taken {
		if rec := mustGet(t, s, kindItem, id); rec.Key != "taken" || string(rec.Data) != who {
			t.Errorf("%s: key %q taker %q, want taken by %s", id, rec.Key, rec.Data, who)
		}
	}
	return taken
}

// testClaimDistinct: 16 goroutines claim from 120 records until none is
// free: every record is taken exactly once, none is lost.
func testClaimDistinct(t *testing.T, s store.Store) {
	const records, workers = 120, 16
	freeRecords(t, s, records)
	taken := checkTaken(t, s, claimAll(t, s, workers, 0))
	if len(taken) != records {
		t.Errorf("%d records taken, want %d", len(taken), records)
	}
	free := store.Query{Kind: kindItem, Parent: "group", HasParent: true, Key: "free", HasKey: true}
	if n := count(t, s, free); n != 0 {
		t.Errorf("%d records still free", n)
	}
}

// testClaimScarce: 24 goroutines each want 2 of 20 records: 20 are taken,
// each once, and the claimers that found none got nothing.
func testClaimScarce(t *testing.T, s store.Store) {
	const records, workers = 20, 24
	freeRecords(t, s, records)
	taken := checkTaken(t, s, claimAll(t, s, workers, 2))
	if len(taken) != records {
		t.Errorf("%d records taken, want %d", len(taken), records)
	}
}

// testClaimRolledBack: a Claim whose function fails keeps nothing, and the
// record it held is free for the next one.
func testClaimRolledBack(t *testing.T, s store.Store) {
	freeRecords(t, s, 1)
	boom := errors.New("boom")
	err := s.Claim(t.Context(), func(tx store.Tx) error {
		recs, _, err := tx.List(t.Context(), store.Query{Kind: kindItem, Key: "free", HasKey: true, Limit: 1})
		if err != nil || len(recs) != 1 {
			t.Fatalf("List: %v, %d records", err, len(recs))
		}
		recs[0].Key = "taken"
		if err := tx.Put(t.Context(), recs[0]); err != nil {
			t.Fatal(err)
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("Claim = %v, want the function's error", err)
	}
	if rec := mustGet(t, s, kindItem, "gs-000"); rec.Key != "free" {
		t.Fatalf("after a failed Claim the record is %q, want free", rec.Key)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if id, err := takeOne(ctx, s, "next"); err != nil || id != "gs-000" {
		t.Fatalf("the next Claim took %q (%v), want gs-000", id, err)
	}
}

// testClaimWithUpdates: Claims and Updates increment the same counters at
// once (a Claim reads them with Get, which holds them): no increment is
// lost, whichever kind of transaction made it.
func testClaimWithUpdates(t *testing.T, s store.Store) {
	const workers, rounds = 12, 15
	ids := []string{"c0", "c1", "c2"}
	for _, id := range ids {
		insert(t, s, store.Record{Kind: kindItem, ID: id, Data: []byte("0")})
	}
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			run := s.Update
			if w%2 == 0 {
				run = s.Claim
			}
			for i := range rounds {
				id := ids[(w+i)%len(ids)]
				if err := run(t.Context(), func(tx store.Tx) error { return bump(t.Context(), tx, id) }); err != nil {
					t.Errorf("worker %d: %v", w, err)
					return
				}
			}
		})
	}
	wg.Wait()
	total := 0
	for _, id := range ids {
		n, _ := strconv.Atoi(string(mustGet(t, s, kindItem, id).Data))
		total += n
	}
	if total != workers*rounds {
		t.Errorf("the counters add up to %d, want %d", total, workers*rounds)
	}
}

// testClaimReadYourWrites: in a Claim, a record written, inserted or
// deleted reads back as written, and commits.
func testClaimReadYourWrites(t *testing.T, s store.Store) {
	freeRecords(t, s, 2)
	err := s.Claim(t.Context(), func(tx store.Tx) error {
		ctx := t.Context()
		rec, err := tx.Get(ctx, kindItem, "gs-000")
		if err != nil {
			return err
		}
		rec.Key = "taken"
		if err := tx.Put(ctx, rec); err != nil {
			return err
		}
		if err := tx.Insert(ctx, store.Record{Kind: kindItem, ID: "new", Parent: "group", Key: "free"}); err != nil {
			return err
		}
		if err := tx.Delete(ctx, kindItem, "gs-001"); err != nil {
			return err
		}
		recs, _, err := tx.List(ctx, store.Query{Kind: kindItem, Parent: "group", HasParent: true, Key: "free", HasKey: true})
		if err != nil || len(recs) != 1 || recs[0].ID != "new" {
			return fmt.Errorf("free records in the Claim: %v (%v), want new", ids(recs), err)
		}
		if got, err := tx.Get(ctx, kindItem, "gs-000"); err != nil || got.Key != "taken" {
			return fmt.Errorf("gs-000 reads back %q (%v), want taken", got.Key, err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if rec := mustGet(t, s, kindItem, "gs-000"); rec.Key != "taken" {
		t.Errorf("gs-000 is %q after the Claim, want taken", rec.Key)
	}
	mustGet(t, s, kindItem, "new")
	mustNotExist(t, s, kindItem, "gs-001")
}

// testClaimPages: a List in a Claim pages through every record it selects,
// each once (its last page may be empty: a full page always has a Next).
func testClaimPages(t *testing.T, s store.Store) {
	freeRecords(t, s, 10)
	var seen []string
	err := s.Claim(t.Context(), func(tx store.Tx) error {
		q := store.Query{Kind: kindItem, Parent: "group", HasParent: true, Key: "free", HasKey: true,
			Order: store.OrderRankAsc, Limit: 5}
		for {
			recs, next, err := tx.List(t.Context(), q)
			if err != nil {
				return err
			}
			seen = append(seen, ids(recs)...)
			if next == "" {
				return nil
			}
			if len(seen) > 10 {
				return fmt.Errorf("pages go on past the 10 records: %v", seen)
			}
			q.After = next
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	want := expect(mustList(t, s, store.Query{Kind: kindItem}), store.Query{Kind: kindItem, Parent: "group",
		HasParent: true, Key: "free", HasKey: true, Order: store.OrderRankAsc})
	if fmt.Sprint(seen) != fmt.Sprint(want) {
		t.Errorf("pages gave %v, want %v", seen, want)
	}
}

// mustList lists q in a View.
func mustList(t *testing.T, s store.Store, q store.Query) []store.Record {
	t.Helper()
	recs, _ := list(t, s, q)
	return recs
}

package storetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hoistgg/hoist/internal/store"
)

var changeTests = []test{
	{"HeadThenChanges", plain(testChangesHead)},
	{"OnlyWatchedKinds", plain(testChangesWatched)},
	{"RolledBackNotRecorded", plain(testChangesRollback)},
	{"Pages", plain(testChangesPages)},
	{"LateCommitNotMissed", plain(testChangesLateCommit)},
	{"ConcurrentWriters", plain(testChangesConcurrent)},
	{"BadPosition", plain(testChangesBadPosition)},
	{"CatchUp", plain(testChangesCatchUp)},
	{"PageReadAgain", plain(testChangesPageAgain)},
}

// changes reads the feed once and fails the test on an error.
func changes(t *testing.T, s store.Store, after string, limit int, kinds ...store.Kind) ([]store.Change, string) {
	t.Helper()
	chs, next, err := s.Changes(t.Context(), after, limit, kinds...)
	if err != nil {
		t.Fatalf("Changes(%q, %d): %v", after, limit, err)
	}
	if next == "" {
		t.Fatalf("Changes(%q, %d) returned no position", after, limit)
	}
	return chs, next
}

// sentinelKind is a watched kind drain writes to mark a point in the feed.
const sentinelKind store.Kind = "FeedSentinel"

// sentinels numbers drain's sentinel records.
var sentinels atomic.Int64

// drain writes a sentinel record, then reads the feed from pos until the
// sentinel comes back: every change committed before it has then been
// read, however late the feed is (PostgreSQL's holds back while an older
// transaction runs anywhere in the cluster, another test's too). It
// returns the changes read before the sentinel, each record once (where
// it first came, with the record as last read), and the position reached.
func drain(t *testing.T, s store.Store, pos string, limit int, kinds ...store.Kind) ([]store.Change, string) {
	t.Helper()
	s.Watch(sentinelKind)
	mark := fmt.Sprint("mark-", sentinels.Add(1))
	insert(t, s, store.Record{Kind: sentinelKind, ID: mark})
	if len(kinds) > 0 {
		kinds = append(slices.Clip(kinds), sentinelKind)
	}
	var all []store.Change
	at := map[string]int{}
	deadline := time.Now().Add(watchdog)
	for {
		chs, next := changes(t, s, pos, limit, kinds...)
		if limit > 0 && len(chs) > limit {
			t.Fatalf("a page of %d changes, limit %d", len(chs), limit)
		}
		pos = next
		for _, c := range chs {
			if c.Record.Kind == sentinelKind {
				if c.Record.ID == mark {
					return all, pos
				}
				continue
			}
			key := string(c.Record.Kind) + "/" + c.Record.ID
			if i, ok := at[key]; ok {
				all[i] = c
				continue
			}
			at[key] = len(all)
			all = append(all, c)
		}
		if len(chs) == 0 {
			if time.Now().After(deadline) {
				t.Fatalf("the change feed did not deliver a write within %v", watchdog)
			}
			time.Sleep(5 * time.Millisecond) // the feed waits for another transaction to end
		}
	}
}

// describe renders changes as "kind/id=data" or "kind/id deleted".
func describe(chs []store.Change) []string {
	out := make([]string, len(chs))
	for i, c := range chs {
		if c.Deleted {
			out[i] = fmt.Sprintf("%s/%s deleted", c.Record.Kind, c.Record.ID)
		} else {
			out[i] = fmt.Sprintf("%s/%s=%s", c.Record.Kind, c.Record.ID, c.Record.Data)
		}
	}
	return out
}

// testChangesHead: the head position sees no change; the writes after it
// come in commit order, each with the record as it is now, deletions as
// such, a record written twice once. (A write committed just before the
// head may come too: PostgreSQL's head is the oldest transaction running
// in the cluster, which may be another test's.)
func testChangesHead(t *testing.T, s store.Store) {
	s.Watch(kindItem)
	insert(t, s, store.Record{Kind: kindItem, ID: "before"})
	chs, head := changes(t, s, "", 0)
	if len(chs) != 0 {
		t.Fatalf("Changes from the head returned %v", describe(chs))
	}
	insert(t, s, store.Record{Kind: kindItem, ID: "a", Data: []byte("1")})
	insert(t, s, store.Record{Kind: kindItem, ID: "b", Key: "k", Rank: 7, Data: []byte("1")})
	err := s.Update(t.Context(), func(tx store.Tx) error {
		if err := tx.Put(t.Context(), store.Record{Kind: kindItem, ID: "a", Data: []byte("2")}); err != nil {
			return err
		}
		return tx.Delete(t.Context(), kindItem, "before")
	})
	if err != nil {
		t.Fatal(err)
	}
	got, _ := drain(t, s, head, 0)
	d := describe(got)
	if i := slices.Index(d, "Item/before deleted"); i >= 0 {
		d = slices.Delete(d, i, i+1) // where "before" comes depends on the head
	} else {
		t.Errorf("changes = %q: no deletion of before", d)
	}
	if want := []string{"Item/a=2", "Item/b=1"}; !slices.Equal(d, want) {
		t.Errorf("changes = %q, want %q in this order", d, want)
	}
	for _, c := range got {
		if c.Record.ID == "b" && (c.Record.Key != "k" || c.Record.Rank != 7 || c.Record.Seq <= 0) {
			t.Errorf("change of b carries %+v, want the whole record", c.Record)
		}
	}
}

// testChangesWatched: writes to kinds not watched are not recorded, and
// a kinds filter selects among the watched.
func testChangesWatched(t *testing.T, s store.Store) {
	s.Watch(kindItem)
	s.Watch(kindItem, "Third") // again, and another
	_, head := changes(t, s, "", 0)
	insert(t, s, store.Record{Kind: kindOther, ID: "o"}, store.Record{Kind: kindItem, ID: "i"},
		store.Record{Kind: "Third", ID: "t"})
	got, _ := drain(t, s, head, 0)
	if d, want := describe(got), []string{"Item/i=", "Third/t="}; !slices.Equal(sorted(d), want) {
		t.Errorf("changes = %q, want %q", d, want)
	}
	got, _ = drain(t, s, head, 0, "Third")
	if d, want := describe(got), []string{"Third/t="}; !slices.Equal(d, want) {
		t.Errorf("changes of Third = %q, want %q", d, want)
	}
}

func sorted(s []string) []string { return slices.Sorted(slices.Values(s)) }

// testChangesRollback: a failed Update records nothing; the Updates
// around it are recorded.
func testChangesRollback(t *testing.T, s store.Store) {
	s.Watch(kindItem)
	_, head := changes(t, s, "", 0)
	insert(t, s, store.Record{Kind: kindItem, ID: "kept1"})
	err := s.Update(t.Context(), func(tx store.Tx) error {
		if err := tx.Insert(t.Context(), store.Record{Kind: kindItem, ID: "ghost"}); err != nil {
			return err
		}
		return errBoom
	})
	if !errors.Is(err, errBoom) {
		t.Fatal(err)
	}
	insert(t, s, store.Record{Kind: kindItem, ID: "kept2"})
	got, _ := drain(t, s, head, 0)
	if d, want := describe(got), []string{"Item/kept1=", "Item/kept2="}; !slices.Equal(d, want) {
		t.Errorf("changes = %q, want %q", d, want)
	}
}

// testChangesPages: read two at a time, the feed returns every change
// once, in order, and goes on from where it stopped.
func testChangesPages(t *testing.T, s store.Store) {
	s.Watch(kindItem)
	_, pos := changes(t, s, "", 0)
	var want []string
	for i := range 7 {
		id := fmt.Sprintf("r%d", i)
		insert(t, s, store.Record{Kind: kindItem, ID: id})
		want = append(want, "Item/"+id+"=")
	}
	got, pos := drain(t, s, pos, 2)
	if d := describe(got); !slices.Equal(d, want) {
		t.Errorf("changes = %q, want %q", d, want)
	}
	insert(t, s, store.Record{Kind: kindItem, ID: "late"})
	if chs, _ := drain(t, s, pos, 2); !slices.Equal(describe(chs), []string{"Item/late="}) {
		t.Errorf("after the end, then a write: %q", describe(chs))
	}
}

// testChangesLateCommit: an Update that began writing first but commits
// last is not skipped by a reader that read the feed in between (a feed
// ordered by a sequence taken at write time would skip it).
func testChangesLateCommit(t *testing.T, s store.Store) {
	s.Watch(kindItem)
	_, pos := changes(t, s, "", 0)
	inside, release := make(chan struct{}), make(chan struct{})
	var releaseOnce sync.Once
	letGo := func() { releaseOnce.Do(func() { close(release) }) }
	defer letGo() // also when the test fails: Close waits for the Update
	slow := make(chan error, 1)
	go func() {
		slow <- s.Update(t.Context(), func(tx store.Tx) error {
			if err := tx.Insert(t.Context(), store.Record{Kind: kindItem, ID: "slow"}); err != nil {
				return err
			}
			select {
			case <-inside:
			default:
				close(inside)
				<-release
			}
			return nil
		})
	}()
	<-inside
	fast := make(chan error, 1)
	go func() {
		fast <- s.Update(t.Context(), func(tx store.Tx) error {
			return tx.Insert(t.Context(), store.Record{Kind: kindItem, ID: "fast"})
		})
	}()
	// An embedded store runs "fast" after "slow"; PostgreSQL commits it
	// while "slow" is open. Read the feed in between either way.
	select {
	case err := <-fast:
		if err != nil {
			t.Fatal(err)
		}
		fast <- nil
	case <-time.After(200 * time.Millisecond):
	}
	var seen []store.Change
	chs, pos := changes(t, s, pos, 0)
	seen = append(seen, chs...)
	letGo()
	if err := waitErr(t, slow, "the slow Update"); err != nil {
		t.Fatal(err)
	}
	if err := waitErr(t, fast, "the fast Update"); err != nil {
		t.Fatal(err)
	}
	rest, _ := drain(t, s, pos, 0)
	seen = append(seen, rest...)
	if d, want := describe(seen), []string{"Item/fast=", "Item/slow="}; !slices.Equal(sorted(d), want) {
		t.Errorf("the reader saw %q, want both %q", d, want)
	}
}

// testChangesConcurrent: while writers insert and update, a reader that
// follows the feed ends up with the same state as the store.
func testChangesConcurrent(t *testing.T, s store.Store) {
	s.Watch(kindItem)
	_, pos := changes(t, s, "", 0)
	const writers, rounds = 8, 25
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range rounds {
				id := fmt.Sprintf("w%d-%d", w, i%5)
				err := s.Update(t.Context(), func(tx store.Tx) error {
					return tx.Put(t.Context(), store.Record{Kind: kindItem, ID: id, Data: fmt.Appendf(nil, "%d", i)})
				})
				if err != nil {
					t.Errorf("Update: %v", err)
					return
				}
			}
		})
	}
	state := map[string]string{}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	for finished := false; !finished; {
		select {
		case <-done:
			finished = true
		default:
		}
		chs, next := changes(t, s, pos, 7)
		pos = next
		for _, c := range chs {
			state[c.Record.ID] = string(c.Record.Data)
		}
	}
	chs, _ := drain(t, s, pos, 0)
	for _, c := range chs {
		state[c.Record.ID] = string(c.Record.Data)
	}
	recs, _ := list(t, s, store.Query{Kind: kindItem})
	if len(recs) != len(state) {
		t.Errorf("the reader knows %d records, the store holds %d", len(state), len(recs))
	}
	for _, r := range recs {
		if state[r.ID] != string(r.Data) {
			t.Errorf("%s: the reader has %q, the store %q", r.ID, state[r.ID], r.Data)
		}
	}
}

// testChangesBadPosition: a position the store did not issue fails with
// ErrInvalidCursor; a query cursor is not a position.
func testChangesBadPosition(t *testing.T, s store.Store) {
	s.Watch(kindItem)
	loadFixture(t, s)
	_, cursor := list(t, s, store.Query{Kind: kindItem, Limit: 1})
	for name, pos := range map[string]string{"garbage": "not a position!", "list cursor": cursor, "empty-ish": "="} {
		if _, _, err := s.Changes(t.Context(), pos, 0); !errors.Is(err, store.ErrInvalidCursor) {
			t.Errorf("%s: %v, want ErrInvalidCursor", name, err)
		}
	}
	if _, _, err := s.Changes(ctxCanceled(t), "", 0); !errors.Is(err, context.Canceled) {
		t.Errorf("Changes with a canceled context: %v", err)
	}
}

// testChangesCatchUp: the documented way to build a cache: take the
// head, read the records in a View, follow the feed from the head. Writes
// between the head and the View come again; none is missed.
func testChangesCatchUp(t *testing.T, s store.Store) {
	s.Watch(kindItem)
	insert(t, s, store.Record{Kind: kindItem, ID: "old", Data: []byte("1")})
	_, head := changes(t, s, "", 0)
	insert(t, s, store.Record{Kind: kindItem, ID: "between", Data: []byte("1")})
	cache := map[string]string{}
	recs, _ := list(t, s, store.Query{Kind: kindItem})
	for _, r := range recs {
		cache[r.ID] = string(r.Data)
	}
	err := s.Update(t.Context(), func(tx store.Tx) error {
		if err := tx.Put(t.Context(), store.Record{Kind: kindItem, ID: "old", Data: []byte("2")}); err != nil {
			return err
		}
		return tx.Insert(t.Context(), store.Record{Kind: kindItem, ID: "after", Data: []byte("1")})
	})
	if err != nil {
		t.Fatal(err)
	}
	chs, _ := drain(t, s, head, 0)
	for _, c := range chs {
		if c.Deleted {
			delete(cache, c.Record.ID)
		} else {
			cache[c.Record.ID] = string(c.Record.Data)
		}
	}
	want := map[string]string{"old": "2", "between": "1", "after": "1"}
	if fmt.Sprint(cache) != fmt.Sprint(want) {
		t.Errorf("cache = %v, want %v", cache, want)
	}
}

// testChangesPageAgain: a page read again from the same position, after
// more writes, starts with the same records in the same order (each as
// it is now), so that a place inside a page can be named by the page's
// position and a count (the live event stream's ids do).
func testChangesPageAgain(t *testing.T, s store.Store) {
	s.Watch(kindItem)
	_, pos := changes(t, s, "", 0)
	_, pos = drain(t, s, pos, 0) // a position read up to, not a head
	for _, id := range []string{"a", "b", "c"} {
		insert(t, s, store.Record{Kind: kindItem, ID: id, Data: []byte("1")})
	}
	var first []store.Change
	deadline := time.Now().Add(watchdog)
	for len(first) == 0 {
		first, _ = changes(t, s, pos, 2, kindItem)
		if len(first) == 0 {
			if time.Now().After(deadline) {
				t.Fatalf("the change feed did not deliver a write within %v", watchdog)
			}
			time.Sleep(5 * time.Millisecond) // the feed waits for another transaction to end
		}
	}
	err := s.Update(t.Context(), func(tx store.Tx) error {
		if err := tx.Delete(t.Context(), kindItem, "a"); err != nil {
			return err
		}
		if err := tx.Put(t.Context(), store.Record{Kind: kindItem, ID: "b", Data: []byte("2")}); err != nil {
			return err
		}
		return tx.Insert(t.Context(), store.Record{Kind: kindItem, ID: "d"})
	})
	if err != nil {
		t.Fatal(err)
	}
	again, _ := changes(t, s, pos, 2, kindItem)
	if len(again) < len(first) {
		t.Fatalf("read again: %q, want it to start with the records of %q", describe(again), describe(first))
	}
	for i, c := range first {
		if again[i].Record.ID != c.Record.ID {
			t.Fatalf("read again: %q, want it to start with the records of %q", describe(again), describe(first))
		}
	}
	if again[0].Record.ID != "a" || !again[0].Deleted {
		t.Errorf("read again: %q, want a first, deleted now", describe(again))
	}
}

package events

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hoistgg/hoist/internal/store"
	"github.com/hoistgg/hoist/internal/store/journal"
	"github.com/hoistgg/hoist/internal/store/postgres/pgtest/pgstore"
)

// sharedStores opens a store two replicas can share in one test process:
// the journal store and, with HOIST_TEST_DATABASE_URL set, PostgreSQL.
var sharedStores = map[string]func(t *testing.T) store.Store{
	"journal": func(t *testing.T) store.Store {
		st, err := journal.Open(filepath.Join(t.TempDir(), "store"), journal.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		return st
	},
	"postgres": func(t *testing.T) store.Store {
		st := pgstore.Open(t)
		return st
	},
}

// replica returns a Service on st, as one Hoist replica has.
func replica(st store.Store, id string) *Service {
	return New(Config{Store: st, Region: "us-west-2", Account: "123456789012", Secret: secret, ReplicaID: id})
}

// publishOn publishes one event of resource res with detail n on svc.
func publishOn(t *testing.T, svc *Service, st store.Store, res string, n int) string {
	t.Helper()
	var id string
	err := st.Update(context.Background(), func(tx store.Tx) error {
		id = fmt.Sprintf("ev-%s-%d", res, n)
		return svc.Publish(context.Background(), tx, Event{ID: id, DetailType: "Hoist Test Event",
			Resources: []string{res}, Detail: json.RawMessage(fmt.Sprintf(`{"n":%d}`, n))})
	})
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// readUntil reads r until it has returned every ID in want (failing on
// one it returns twice or does not expect) or a minute passed.
func readUntil(t *testing.T, r *Reader, want map[string]bool) []Item {
	t.Helper()
	seen := map[string]bool{}
	var all []Item
	deadline := time.Now().Add(time.Minute)
	for len(seen) < len(want) {
		items, err := r.Next(context.Background(), 64)
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range items {
			if seen[it.ID] || !want[it.ID] {
				t.Fatalf("event %s: repeated (%v) or not expected (%v)", it.ID, seen[it.ID], !want[it.ID])
			}
			seen[it.ID] = true
			all = append(all, it)
		}
		if len(items) == 0 {
			if time.Now().After(deadline) {
				t.Fatalf("read %d of %d events in a minute", len(seen), len(want))
			}
			time.Sleep(5 * time.Millisecond) // waiting for the feed's horizon (other transactions)
		}
	}
	return all
}

// A reader on one replica gets every event published through two
// replicas by concurrent transactions exactly once, whatever order their
// transactions commit in.
func TestReaderSeesEveryReplicasEventsOnce(t *testing.T) {
	for name, open := range sharedStores {
		t.Run(name, func(t *testing.T) {
			st := open(t)
			a, b := replica(st, "a"), replica(st, "b")
			r, err := b.NewReader(context.Background(), "")
			if err != nil {
				t.Fatal(err)
			}
			want := map[string]bool{}
			var mu sync.Mutex
			var wg sync.WaitGroup
			for w := range 8 {
				svc := []*Service{a, b}[w%2]
				wg.Go(func() {
					for n := range 25 {
						id := publishOn(t, svc, st, fmt.Sprintf("q%d", w), n)
						mu.Lock()
						want[id] = true
						mu.Unlock()
					}
				})
			}
			wg.Wait()
			got := readUntil(t, r, want)
			last := map[string]int{}
			for _, it := range got { // in commit order, so in order per publisher
				var d struct{ N int }
				var env Envelope
				_ = json.Unmarshal(it.Body, &env)
				_ = json.Unmarshal(env.Detail, &d)
				if n, ok := last[env.Resources[0]]; ok && d.N <= n {
					t.Fatalf("%s: event %d after %d", env.Resources[0], d.N, n)
				}
				last[env.Resources[0]] = d.N
			}
			if more, err := r.Next(context.Background(), 64); err != nil || len(more) != 0 {
				t.Fatalf("after every event: %v, %v", more, err)
			}
		})
	}
}

// A reader started after any item's cursor continues with the item after
// it, and one started with "0" replays every kept event, then follows new
// ones, none twice.
func TestReaderResumesAfterACursor(t *testing.T) {
	for name, open := range sharedStores {
		t.Run(name, func(t *testing.T) {
			st := open(t)
			svc := replica(st, "a")
			r, err := svc.NewReader(context.Background(), "")
			if err != nil {
				t.Fatal(err)
			}
			want := map[string]bool{}
			var ids []string
			for n := range 6 {
				id := publishOn(t, svc, st, "q", n)
				want[id], ids = true, append(ids, id)
			}
			got := readUntil(t, r, want)
			for i, it := range got {
				rest := map[string]bool{}
				for _, id := range ids[i+1:] {
					rest[id] = true
				}
				r2, err := svc.NewReader(context.Background(), it.Cursor)
				if err != nil {
					t.Fatal(err)
				}
				if i == len(got)-1 {
					continue
				}
				if after := readUntil(t, r2, rest); after[0].ID != ids[i+1] {
					t.Fatalf("after %s: %s first, want %s", it.Cursor, after[0].ID, ids[i+1])
				}
			}

			// "0": the six kept, then a seventh published meanwhile.
			r0, err := svc.NewReader(context.Background(), "0")
			if err != nil {
				t.Fatal(err)
			}
			replayed := readUntil(t, r0, want)
			if strings.Contains(replayed[0].Cursor, ".") {
				t.Errorf("a replayed event's cursor %q, want its Seq", replayed[0].Cursor)
			}
			seventh := publishOn(t, svc, st, "q", 6)
			readUntil(t, r0, map[string]bool{seventh: true})
		})
	}
}

// A cursor whose feed position the store no longer holds (here: the
// journal store opened again, as after a restart of Hoist) replays the
// kept events after the cursor's Seq: the stream goes on where it was.
func TestReaderResumesAcrossARestart(t *testing.T) {
	h := newHarness(t, nil)
	r, err := h.svc.NewReader(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for n := range 3 {
		ids = append(ids, publishOn(t, h.svc, h.st, "q", n))
	}
	got := readUntil(t, r, map[string]bool{ids[0]: true, ids[1]: true, ids[2]: true})
	if err := h.st.Close(); err != nil {
		t.Fatal(err)
	}
	h.open()
	r2, err := h.svc.NewReader(context.Background(), got[0].Cursor)
	if err != nil {
		t.Fatal(err)
	}
	after := readUntil(t, r2, map[string]bool{ids[1]: true, ids[2]: true})
	if after[0].ID != ids[1] {
		t.Fatalf("after a restart: %s first, want %s", after[0].ID, ids[1])
	}
	fourth := publishOn(t, h.svc, h.st, "q", 3)
	readUntil(t, r2, map[string]bool{fourth: true})
}

// An event deleted with its outbox entry leaves the stream's record with
// it; ids that are not the stream's are refused.
func TestReaderRecordsGoWithTheirEvents(t *testing.T) {
	h := newHarnessWith(t, nil, func(h *harness) { h.maxEvents = 2 })
	for n := range 5 {
		publishOn(t, h.svc, h.st, "q", n)
	}
	h.deliver()
	if n := h.count(kindLive); n != 2 {
		t.Fatalf("%d live stream records for 2 events kept", n)
	}
	for _, bad := range []string{"x", "-1", "1.", "1.!!.2", "1." + store.EncodePosition(1, 1), "1." + store.EncodePosition(1, 1) + ".-1"} {
		if _, err := h.svc.NewReader(context.Background(), bad); err != ErrBadCursor {
			t.Errorf("NewReader(%q) = %v, want ErrBadCursor", bad, err)
		}
	}
}

// FuzzParseCursor: a Last-Event-ID either is refused or parses to a
// cursor within bounds that formats to an id parsing to the same cursor.
func FuzzParseCursor(f *testing.F) {
	for _, s := range []string{"", "0", "17", "-1", "x", "3." + store.EncodePosition(5, 0) + ".2",
		"3." + store.EncodePosition(-1, 1<<62) + ".65536", "1..1", "1.UAIE.99999999999999999999", "01.UAIE.007"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c, err := parseCursor(s)
		if err != nil {
			if err != ErrBadCursor {
				t.Fatalf("parseCursor(%q): %v", s, err)
			}
			return
		}
		if c.seq < 0 || c.skip < 0 || c.skip > maxCursorSkip {
			t.Fatalf("parseCursor(%q) = %+v: out of bounds", s, c)
		}
		again, err := parseCursor(c.String())
		if err != nil || again != c {
			t.Fatalf("parseCursor(%q) = %+v, formatted %q parses to %+v, %v", s, c, c.String(), again, err)
		}
	})
}

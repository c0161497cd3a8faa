package replicas

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/hoistgg/hoist/internal/store"
	"github.com/hoistgg/hoist/internal/store/journal"
	"github.com/hoistgg/hoist/internal/store/postgres"
	"github.com/hoistgg/hoist/internal/store/postgres/pgtest"
	"github.com/hoistgg/hoist/internal/store/sqlite"
)

// stores opens each backend; replicas returns as many handles on one
// store as replicas share (PostgreSQL: a pool each, as separate processes
// have).
var stores = map[string]func(t *testing.T, replicas int) []store.Store{
	"journal": func(t *testing.T, n int) []store.Store {
		st, err := journal.Open(filepath.Join(t.TempDir(), "store"), journal.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		return same(st, n)
	},
	"sqlite": func(t *testing.T, n int) []store.Store {
		st, err := sqlite.Open(filepath.Join(t.TempDir(), "hoist.db"), sqlite.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		return same(st, n)
	},
	"postgres": func(t *testing.T, n int) []store.Store {
		url := pgtest.URL(t)
		var out []store.Store
		for range n {
			st, err := postgres.Open(t.Context(), url, postgres.Options{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { st.Close() })
			out = append(out, st)
		}
		return out
	},
}

func same(st store.Store, n int) []store.Store {
	out := make([]store.Store, n)
	for i := range out {
		out[i] = st
	}
	return out
}

// eachStore runs f on every backend.
func eachStore(t *testing.T, f func(t *testing.T, open func(n int) []store.Store)) {
	for name, open := range stores {
		t.Run(name, func(t *testing.T) { f(t, func(n int) []store.Store { return open(t, n) }) })
	}
}

// kindConn is the tests' connection record: ID = target ID, Data = the
// holding replica's ID.
const kindConn store.Kind = "TestConn"

// hold records that replica holds id's connection ("" : none).
func hold(t *testing.T, st store.Store, id, replica string) {
	t.Helper()
	err := st.Update(t.Context(), func(tx store.Tx) error {
		return tx.Put(t.Context(), store.Record{Kind: kindConn, ID: id, Data: []byte(strconv.Quote(replica))})
	})
	if err != nil {
		t.Fatal(err)
	}
}

// sink is a replica's side of the test route: what it delivered, per
// target, and what was dropped.
type sink struct {
	mu        sync.Mutex
	got       map[string][]int
	dropped   []int
	delivered chan struct{}
	fail      error // Deliver's error, when set
}

func newSink() *sink { return &sink{got: map[string][]int{}, delivered: make(chan struct{}, 1000)} }

func (s *sink) route() Route {
	return Route{
		Holder: func(ctx context.Context, tx store.Tx, id string) (string, error) {
			rec, err := tx.Get(ctx, kindConn, id)
			if errors.Is(err, store.ErrNotFound) {
				return "", nil
			}
			if err != nil {
				return "", err
			}
			return strconv.Unquote(string(rec.Data))
		},
		Deliver: func(ctx context.Context, id string, body json.RawMessage) error {
			var n int
			if err := json.Unmarshal(body, &n); err != nil {
				return err
			}
			s.mu.Lock()
			defer s.mu.Unlock()
			if s.fail != nil {
				return s.fail
			}
			s.got[id] = append(s.got[id], n)
			s.delivered <- struct{}{}
			return nil
		},
		Undelivered: func(ctx context.Context, id string, body json.RawMessage) {
			var n int
			_ = json.Unmarshal(body, &n)
			s.mu.Lock()
			s.dropped = append(s.dropped, n)
			s.mu.Unlock()
		},
	}
}

func (s *sink) of(id string) []int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]int(nil), s.got[id]...)
}

// replica is one replica's inbox on st with the test route.
func replica(st store.Store, id string, poll time.Duration) (*Inbox, *sink) {
	ib := New(Config{Store: st, Self: id, Poll: poll})
	s := newSink()
	ib.Handle(TargetProcess, s.route())
	return ib, s
}

// post posts n in one transaction that also counts the posts in a
// counter record and returns the count: messages are numbered in commit
// order.
func post(ctx context.Context, st store.Store, from *Inbox, to, target string) (int, error) {
	var n int
	err := st.Update(ctx, func(tx store.Tx) error {
		n = 0
		rec, err := tx.Get(ctx, "TestCounter", target)
		if err == nil {
			n, _ = strconv.Atoi(string(rec.Data))
		} else if !errors.Is(err, store.ErrNotFound) {
			return err
		}
		n++
		if err := tx.Put(ctx, store.Record{Kind: "TestCounter", ID: target, Data: []byte(strconv.Itoa(n))}); err != nil {
			return err
		}
		return from.PostTx(ctx, tx, to, target, n)
	})
	return n, err
}

// messages counts the messages waiting in every inbox.
func messages(t *testing.T, st store.Store) int {
	t.Helper()
	var n int
	err := st.View(t.Context(), func(tx store.Tx) error {
		var err error
		n, err = tx.Count(t.Context(), store.Query{Kind: KindInboxMessage})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestInboxDeliversInCommitOrder: 4 writers on replica A post 50
// messages to a process connected to B, each in a transaction that
// numbers it; B's passes deliver each once, in commit order, and leave no
// record behind.
func TestInboxDeliversInCommitOrder(t *testing.T) {
	eachStore(t, func(t *testing.T, open func(int) []store.Store) {
		sts := open(2)
		a, _ := replica(sts[0], "A", time.Hour)
		b, sb := replica(sts[1], "B", time.Hour)
		target := Target(TargetProcess, "p1")
		hold(t, sts[0], "p1", "B")
		var wg sync.WaitGroup
		for w := range 4 {
			wg.Go(func() {
				for range 50 / 4 {
					if _, err := post(t.Context(), sts[0], a, "B", target); err != nil {
						t.Errorf("writer %d: %v", w, err)
					}
				}
			})
			if w == 1 { // B delivers while the writers go on
				if err := b.Pass(t.Context()); err != nil {
					t.Error(err)
				}
			}
		}
		wg.Wait()
		if err := b.Pass(t.Context()); err != nil {
			t.Fatal(err)
		}
		got := sb.of("p1")
		if len(got) != 48 {
			t.Fatalf("B delivered %d messages, want 48: %v", len(got), got)
		}
		for i, n := range got {
			if n != i+1 {
				t.Fatalf("delivered out of commit order: %v", got)
			}
		}
		if n := messages(t, sts[0]); n != 0 {
			t.Errorf("%d messages left after delivery", n)
		}
	})
}

// TestInboxReroutesWhenTheTargetMoved: messages in B's inbox for a
// process now connected to C go to C's inbox, which delivers them, in
// order, before one posted to C directly afterwards.
func TestInboxReroutesWhenTheTargetMoved(t *testing.T) {
	eachStore(t, func(t *testing.T, open func(int) []store.Store) {
		sts := open(3)
		a, _ := replica(sts[0], "A", time.Hour)
		b, sb := replica(sts[1], "B", time.Hour)
		c, sc := replica(sts[2], "C", time.Hour)
		target := Target(TargetProcess, "p1")
		hold(t, sts[0], "p1", "B")
		for range 3 {
			if _, err := post(t.Context(), sts[0], a, "B", target); err != nil {
				t.Fatal(err)
			}
		}
		hold(t, sts[0], "p1", "C")
		if _, err := post(t.Context(), sts[0], a, "C", target); err != nil {
			t.Fatal(err)
		}
		if err := c.Pass(t.Context()); err != nil { // C takes B's messages too: it holds the connection
			t.Fatal(err)
		}
		if err := b.Pass(t.Context()); err != nil {
			t.Fatal(err)
		}
		if got := sc.of("p1"); fmt.Sprint(got) != "[1 2 3 4]" || len(sb.of("p1")) != 0 {
			t.Fatalf("C delivered %v, B %v; want C [1 2 3 4]", got, sb.of("p1"))
		}
		// B's pass moves what is in its inbox to C's.
		if _, err := post(t.Context(), sts[0], a, "B", target); err != nil {
			t.Fatal(err)
		}
		if err := b.Pass(t.Context()); err != nil {
			t.Fatal(err)
		}
		if len(sb.of("p1")) != 0 || messages(t, sts[0]) != 1 {
			t.Fatalf("B delivered %v; %d waiting, want 1 (re-routed)", sb.of("p1"), messages(t, sts[0]))
		}
		if err := c.Pass(t.Context()); err != nil {
			t.Fatal(err)
		}
		if got := sc.of("p1"); fmt.Sprint(got) != "[1 2 3 4 5]" {
			t.Fatalf("C delivered %v after B re-routed, want [1 2 3 4 5]", got)
		}
	})
}

// TestInboxDropsWhenTheTargetIsGone: a message for a process with no
// connection anywhere is dropped and told to the route; one whose
// connection this replica's record names but whose socket is gone is
// dropped too; a failed delivery is retried, then dropped after maxTries.
func TestInboxDropsWhenTheTargetIsGone(t *testing.T) {
	eachStore(t, func(t *testing.T, open func(int) []store.Store) {
		sts := open(2)
		a, _ := replica(sts[0], "A", time.Hour)
		b, sb := replica(sts[1], "B", time.Hour)
		target := Target(TargetProcess, "p1")
		hold(t, sts[0], "p1", "")
		if _, err := post(t.Context(), sts[0], a, "B", target); err != nil {
			t.Fatal(err)
		}
		if err := b.Pass(t.Context()); err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(sb.dropped) != "[1]" || messages(t, sts[0]) != 0 {
			t.Fatalf("dropped %v, %d waiting; want [1] dropped", sb.dropped, messages(t, sts[0]))
		}
		hold(t, sts[0], "p1", "B")
		sb.fail = fmt.Errorf("socket closed: %w", ErrNoConnection)
		for range 2 {
			if _, err := post(t.Context(), sts[0], a, "B", target); err != nil {
				t.Fatal(err)
			}
		}
		if err := b.Pass(t.Context()); err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(sb.dropped) != "[1 2 3]" || messages(t, sts[0]) != 0 {
			t.Fatalf("dropped %v, %d waiting; want [1 2 3] dropped", sb.dropped, messages(t, sts[0]))
		}
		sb.fail = errors.New("write timed out")
		if _, err := post(t.Context(), sts[0], a, "B", target); err != nil {
			t.Fatal(err)
		}
		for i := 1; i < maxTries; i++ {
			if err := b.Pass(t.Context()); err == nil || messages(t, sts[0]) != 1 {
				t.Fatalf("pass %d: %v, %d waiting; want an error and the message kept", i, err, messages(t, sts[0]))
			}
		}
		if err := b.Pass(t.Context()); err != nil || messages(t, sts[0]) != 0 || len(sb.dropped) != 4 {
			t.Fatalf("last try: %v, %d waiting, dropped %v", err, messages(t, sts[0]), sb.dropped)
		}
	})
}

// TestInboxWokenByNotify: on PostgreSQL a replica whose poll is an hour
// away delivers a message as soon as the poster's wake reaches it.
func TestInboxWokenByNotify(t *testing.T) {
	sts := stores["postgres"](t, 2)
	a, _ := replica(sts[0], "A", time.Hour)
	b, sb := replica(sts[1], "B", time.Hour)
	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	wg.Go(func() { _ = a.Run(ctx) })
	wg.Go(func() { _ = b.Run(ctx) })
	hold(t, sts[0], "p1", "B")
	for i := range 3 {
		if _, err := post(ctx, sts[0], a, "B", Target(TargetProcess, "p1")); err != nil {
			t.Fatal(err)
		}
		a.Wake("B")
		select {
		case <-sb.delivered:
		case <-time.After(20 * time.Second):
			t.Fatalf("message %d not delivered within 20 s of its wake (the poll is an hour away)", i+1)
		}
	}
}

// TestRemote: a nil inbox, this replica and no connection are not
// remote.
func TestRemote(t *testing.T) {
	var none *Inbox
	ib := New(Config{Store: stores["journal"](t, 1)[0], Self: "A"})
	for _, c := range []struct {
		ib      *Inbox
		replica string
		want    bool
	}{{none, "B", false}, {ib, "", false}, {ib, "A", false}, {ib, "B", true}} {
		if got := c.ib.Remote(c.replica); got != c.want {
			t.Errorf("Remote(%q) = %v, want %v", c.replica, got, c.want)
		}
	}
	none.Wake("B") // no panic
}

// TestInboxPassHandlesTargetsAtOnce: one pass delivers to several
// targets at once (each target's messages still in order, by one
// worker): p1's delivery waits for p2's to begin, which a pass handling
// its targets one after another never lets happen.
func TestInboxPassHandlesTargetsAtOnce(t *testing.T) {
	eachStore(t, func(t *testing.T, open func(int) []store.Store) {
		sts := open(2)
		a, _ := replica(sts[0], "A", time.Hour)
		b := New(Config{Store: sts[1], Self: "B", Poll: time.Hour})
		sb := newSink()
		r := sb.route()
		began := map[string]chan struct{}{"p1": make(chan struct{}), "p2": make(chan struct{})}
		deliver := r.Deliver
		r.Deliver = func(ctx context.Context, id string, body json.RawMessage) error {
			close(began[id]) // one message each
			other := map[string]string{"p1": "p2", "p2": "p1"}[id]
			select {
			case <-began[other]:
			case <-time.After(10 * time.Second):
				return fmt.Errorf("%s's delivery did not begin while %s's was in flight", other, id)
			}
			return deliver(ctx, id, body)
		}
		b.Handle(TargetProcess, r)
		for _, p := range []string{"p1", "p2"} {
			hold(t, sts[0], p, "B")
			if _, err := post(t.Context(), sts[0], a, "B", Target(TargetProcess, p)); err != nil {
				t.Fatal(err)
			}
		}
		if err := b.Pass(t.Context()); err != nil {
			t.Fatal(err)
		}
		for _, p := range []string{"p1", "p2"} {
			if got := sb.of(p); len(got) != 1 || got[0] != 1 {
				t.Errorf("%s got %v, want [1]", p, got)
			}
		}
		if n := messages(t, sts[0]); n != 0 {
			t.Errorf("%d messages left", n)
		}
	})
}

// TestInboxRoundTripsOnPostgres pins what a message costs on PostgreSQL,
// in round trips (the store's Stats.RoundTrips): posting one in a
// transaction adds one (the read of the target's last message; the insert
// goes with COMMIT); a pass over two targets costs one for the targets
// (a store.Read) and three a target: its holder, its messages (a
// store.Read), and one delete of all it delivered sent with its COMMIT.
func TestInboxRoundTripsOnPostgres(t *testing.T) {
	sts := stores["postgres"](t, 2)
	a, b := sts[0].(*postgres.Store), sts[1].(*postgres.Store)
	ctx := t.Context()
	ibA, _ := replica(a, "A", time.Hour)
	ibB, sk := replica(b, "B", time.Hour)
	hold(t, a, "p1", "B")
	hold(t, a, "p2", "B")
	trips := func(st *postgres.Store, call func() error) int64 {
		t.Helper()
		before := st.Stats().RoundTrips
		if err := call(); err != nil {
			t.Fatal(err)
		}
		return st.Stats().RoundTrips - before
	}
	for i, target := range []string{"p1", "p1", "p2"} {
		alone := trips(a, func() error { return a.Update(ctx, func(tx store.Tx) error { return nil }) })
		with := trips(a, func() error {
			return a.Update(ctx, func(tx store.Tx) error {
				if err := tx.Put(ctx, store.Record{Kind: "TestCounter", ID: target}); err != nil {
					return err
				}
				return ibA.PostTx(ctx, tx, "B", Target(TargetProcess, target), i)
			})
		})
		without := trips(a, func() error {
			return a.Update(ctx, func(tx store.Tx) error {
				return tx.Put(ctx, store.Record{Kind: "TestCounter", ID: target})
			})
		})
		if alone != 0 || with-without != 1 {
			t.Errorf("a post costs %d round trips (a transaction %d, without the post %d), want 1 more", with, alone, without)
		}
	}
	if got := trips(b, func() error { return ibB.Pass(ctx) }); got != 1+2*3 {
		t.Errorf("a pass over 2 targets and 3 messages: %d round trips, want %d", got, 1+2*3)
	}
	if got1, got2 := sk.of("p1"), sk.of("p2"); len(got1) != 2 || len(got2) != 1 {
		t.Errorf("delivered %v and %v, want 2 and 1", got1, got2)
	}
	if n := messages(t, a); n != 0 {
		t.Errorf("%d messages left after the pass", n)
	}
}

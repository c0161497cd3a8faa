package storetest

import (
	"errors"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/hoistgg/hoist/internal/store"
)

var termTests = []test{
	{"Terms", testTerms},
	{"FencedCommits", testFencedCommits},
	{"FencedFunctionError", plain(testFencedFunctionError)},
	{"FencedUnknownLease", plain(testFencedUnknownLease)},
	{"PausedHolderIsFenced", testPausedHolder},
	{"OneHolderAtOnce", plain(testAcquireRace)},
	{"GiveUp", testGiveUp},
	{"SharedWithLease", testTermsSharedWithLease},
}

// acquire calls AcquireLease and fails the test on an error.
func acquire(t *testing.T, s store.Store, name, holder string, ttl time.Duration) (store.Grant, bool) {
	t.Helper()
	g, ok, err := s.AcquireLease(t.Context(), name, holder, ttl)
	if err != nil {
		t.Fatalf("AcquireLease(%s, %s): %v", name, holder, err)
	}
	if ok && (g.Name != name || g.Holder != holder || g.Term < 1) {
		t.Fatalf("AcquireLease(%s, %s) granted %+v", name, holder, g)
	}
	return g, ok
}

// testTerms: a renewal in time keeps the term; a grant after expiry (to
// the same holder or another) starts a greater one.
func testTerms(t *testing.T, s store.Store, clock *Clock) {
	const ttl = 10 * time.Second
	a1, ok := acquire(t, s, "loop", "A", ttl)
	if !ok {
		t.Fatal("A could not take a free lease")
	}
	if !a1.Expires.After(clock.Now().Add(ttl - time.Second)) {
		t.Errorf("Expires %v, want about %v", a1.Expires, clock.Now().Add(ttl))
	}
	if _, ok := acquire(t, s, "loop", "B", ttl); ok {
		t.Fatal("B took A's lease before it expired")
	}
	clock.Advance(5 * time.Second)
	a2, ok := acquire(t, s, "loop", "A", ttl)
	if !ok || a2.Term != a1.Term {
		t.Fatalf("A's renewal in time: %v term %d, want true and term %d", ok, a2.Term, a1.Term)
	}
	clock.Advance(12 * time.Second) // past the renewed expiry
	a3, ok := acquire(t, s, "loop", "A", ttl)
	if !ok || a3.Term <= a2.Term {
		t.Fatalf("A after its lease expired: %v term %d, want a new term after %d", ok, a3.Term, a2.Term)
	}
	clock.Advance(11 * time.Second)
	b, ok := acquire(t, s, "loop", "B", ttl)
	if !ok || b.Term <= a3.Term {
		t.Fatalf("B after A's expiry: %v term %d, want a new term after %d", ok, b.Term, a3.Term)
	}
	if _, ok := acquire(t, s, "loop", "A", ttl); ok {
		t.Fatal("A took B's lease before it expired")
	}
	other, ok := acquire(t, s, "other", "A", ttl)
	if !ok || other.Term < 1 {
		t.Fatalf("another lease name: %v %+v", ok, other)
	}
}

// fencedInsert inserts a record under g and returns UpdateFenced's error.
func fencedInsert(t *testing.T, s store.Store, g store.Grant, id string) error {
	return s.UpdateFenced(t.Context(), g, func(tx store.Tx) error {
		return tx.Insert(t.Context(), store.Record{Kind: kindItem, ID: id})
	})
}

// testFencedCommits: fenced Updates commit while the grant holds, and fail
// with ErrLeaseLost, keeping nothing, once it expired or another term began.
func testFencedCommits(t *testing.T, s store.Store, clock *Clock) {
	const ttl = 10 * time.Second
	a1, _ := acquire(t, s, "loop", "A", ttl)
	if err := fencedInsert(t, s, a1, "in-term"); err != nil {
		t.Fatalf("fenced Update while holding the lease: %v", err)
	}
	mustGet(t, s, kindItem, "in-term")
	clock.Advance(ttl + time.Second)
	if err := fencedInsert(t, s, a1, "expired"); !errors.Is(err, store.ErrLeaseLost) {
		t.Errorf("fenced Update after expiry: %v, want ErrLeaseLost", err)
	}
	mustNotExist(t, s, kindItem, "expired")
	a2, _ := acquire(t, s, "loop", "A", ttl)
	if err := fencedInsert(t, s, a1, "old-term"); !errors.Is(err, store.ErrLeaseLost) {
		t.Errorf("fenced Update with the previous term: %v, want ErrLeaseLost", err)
	}
	mustNotExist(t, s, kindItem, "old-term")
	if err := fencedInsert(t, s, a2, "new-term"); err != nil {
		t.Fatalf("fenced Update in the new term: %v", err)
	}
	clock.Advance(ttl + time.Second)
	if _, ok := acquire(t, s, "loop", "B", ttl); !ok {
		t.Fatal("B could not take the expired lease")
	}
	if err := fencedInsert(t, s, a2, "after-takeover"); !errors.Is(err, store.ErrLeaseLost) {
		t.Errorf("fenced Update after another holder took the lease: %v, want ErrLeaseLost", err)
	}
	mustNotExist(t, s, kindItem, "after-takeover")
	forged := a2
	forged.Holder = "B"
	if err := fencedInsert(t, s, forged, "forged"); !errors.Is(err, store.ErrLeaseLost) {
		t.Errorf("fenced Update naming B with A's term: %v, want ErrLeaseLost", err)
	}
}

// testFencedFunctionError: the function's own error wins, and nothing it
// wrote is kept.
func testFencedFunctionError(t *testing.T, s store.Store) {
	g, _ := acquire(t, s, "loop", "A", time.Minute)
	err := s.UpdateFenced(t.Context(), g, func(tx store.Tx) error {
		if err := tx.Insert(t.Context(), store.Record{Kind: kindItem, ID: "x"}); err != nil {
			return err
		}
		return errBoom
	})
	if !errors.Is(err, errBoom) {
		t.Errorf("UpdateFenced: %v, want the function's error", err)
	}
	mustNotExist(t, s, kindItem, "x")
}

// testFencedUnknownLease: a grant of a lease that was never taken fences.
func testFencedUnknownLease(t *testing.T, s store.Store) {
	g := store.Grant{Name: "never", Holder: "A", Term: 1, Expires: time.Now().Add(time.Hour)}
	if err := fencedInsert(t, s, g, "x"); !errors.Is(err, store.ErrLeaseLost) {
		t.Errorf("UpdateFenced with a grant never made: %v, want ErrLeaseLost", err)
	}
	mustNotExist(t, s, kindItem, "x")
}

// testPausedHolder: A's fenced Update stops in the middle of its function
// (a replica paused, as by SIGSTOP) while its lease expires and B takes
// it; when A goes on, its commit fails and B's work stands.
func testPausedHolder(t *testing.T, s store.Store, clock *Clock) {
	const ttl = 10 * time.Second
	a, _ := acquire(t, s, "loop", "A", ttl)
	inside, resume := make(chan struct{}), make(chan struct{})
	var resumeOnce sync.Once
	goOn := func() { resumeOnce.Do(func() { close(resume) }) }
	defer goOn() // also when the test fails: Close waits for the Update
	aDone := make(chan error, 1)
	go func() {
		aDone <- s.UpdateFenced(t.Context(), a, func(tx store.Tx) error {
			if err := tx.Put(t.Context(), store.Record{Kind: kindItem, ID: "owner", Data: []byte("A")}); err != nil {
				return err
			}
			select {
			case <-inside: // a retry: the first run was paused already
			default:
				close(inside)
				<-resume
			}
			return nil
		})
	}()
	<-inside
	clock.Advance(ttl + time.Second)
	// An embedded store runs one write at a time, so B's grant waits for
	// A's commit; PostgreSQL grants it at once.
	type grant struct {
		g   store.Grant
		ok  bool
		err error
	}
	bDone := make(chan grant, 1)
	go func() {
		g, ok, err := s.AcquireLease(t.Context(), "loop", "B", ttl)
		bDone <- grant{g, ok, err}
	}()
	var b grant
	select {
	case b = <-bDone:
		goOn()
	case <-time.After(200 * time.Millisecond):
		// The store waits for A (or is slow): let A go on. A's commit
		// fails either way, its lease having expired by the store's clock.
		goOn()
		b = <-bDone
	}
	if b.err != nil || !b.ok {
		t.Fatalf("B's AcquireLease after A's expiry: %v %v", b.ok, b.err)
	}
	if err := waitErr(t, aDone, "the paused holder's fenced Update"); !errors.Is(err, store.ErrLeaseLost) {
		t.Fatalf("paused holder's fenced Update: %v, want ErrLeaseLost", err)
	}
	mustNotExist(t, s, kindItem, "owner")
	if err := s.UpdateFenced(t.Context(), b.g, func(tx store.Tx) error {
		return tx.Put(t.Context(), store.Record{Kind: kindItem, ID: "owner", Data: []byte("B")})
	}); err != nil {
		t.Fatalf("B's fenced Update: %v", err)
	}
	if got := mustGet(t, s, kindItem, "owner"); string(got.Data) != "B" {
		t.Errorf("owner = %q, want B", got.Data)
	}
}

// testAcquireRace: many holders at once, one grant.
func testAcquireRace(t *testing.T, s store.Store) {
	const n = 20
	got := make([]store.Grant, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			g, ok, err := s.AcquireLease(t.Context(), "singleton", "replica-"+strconv.Itoa(i), time.Minute)
			if err != nil {
				t.Errorf("AcquireLease: %v", err)
			}
			if ok {
				got[i] = g
			}
		})
	}
	wg.Wait()
	holders := 0
	for _, g := range got {
		if g.Term != 0 {
			holders++
		}
	}
	if holders != 1 {
		t.Errorf("%d replicas got the lease, want exactly 1", holders)
	}
}

// testGiveUp: a ttl <= 0 gives the lease up: another holder takes it at
// once, in a new term, and the old grant fences.
func testGiveUp(t *testing.T, s store.Store, clock *Clock) {
	a, _ := acquire(t, s, "loop", "A", time.Minute)
	if _, ok := acquire(t, s, "loop", "A", 0); ok {
		t.Error("AcquireLease with ttl 0 reported the lease held")
	}
	clock.Advance(time.Millisecond)
	b, ok := acquire(t, s, "loop", "B", time.Minute)
	if !ok || b.Term <= a.Term {
		t.Fatalf("B after A gave the lease up: %v term %d, want a term after %d", ok, b.Term, a.Term)
	}
	if err := fencedInsert(t, s, a, "x"); !errors.Is(err, store.ErrLeaseLost) {
		t.Errorf("fenced Update with a given-up grant: %v, want ErrLeaseLost", err)
	}
}

// testTermsSharedWithLease: Lease (the caller's clock) and AcquireLease
// (the store's) hold the same leases.
func testTermsSharedWithLease(t *testing.T, s store.Store, clock *Clock) {
	ok, err := s.Lease(t.Context(), "loop", "A", clock.Now(), time.Minute)
	if err != nil || !ok {
		t.Fatalf("Lease: %v %v", ok, err)
	}
	if _, ok := acquire(t, s, "loop", "B", time.Minute); ok {
		t.Error("AcquireLease took a lease Lease granted to another holder")
	}
	g, ok := acquire(t, s, "loop", "A", time.Minute)
	if !ok {
		t.Fatal("AcquireLease could not renew the holder's lease")
	}
	if err := fencedInsert(t, s, g, "x"); err != nil {
		t.Errorf("fenced Update: %v", err)
	}
}

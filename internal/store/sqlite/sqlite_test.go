package sqlite

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hoistgg/hoist/internal/store"
	"github.com/hoistgg/hoist/internal/store/filelock"
	"github.com/hoistgg/hoist/internal/store/storetest"
)

func openTemp(t testing.TB) *Store {
	t.Helper()
	s, err := Open(filepath.Join(t.TempDir(), "hoist.db"), Options{})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T, env storetest.Env) store.Store {
		s, err := Open(filepath.Join(t.TempDir(), "hoist.db"), Options{Now: env.Now})
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		return s
	})
}

func TestConformanceSmallBatches(t *testing.T) {
	// MaxBatch 1 and one read connection: no group commit, Views queue.
	storetest.Run(t, func(t *testing.T, env storetest.Env) store.Store {
		s, err := Open(filepath.Join(t.TempDir(), "hoist.db"), Options{MaxBatch: 1, ReadConns: 1, Now: env.Now})
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		return s
	})
}

func TestOpenLocked(t *testing.T) {
	path := filepath.Join(t.TempDir(), "data", "hoist.db")
	s, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = Open(path, Options{})
	if !errors.Is(err, ErrLocked) {
		t.Fatalf("second Open: %v, want ErrLocked", err)
	}
	if !strings.Contains(err.Error(), strconv.Itoa(os.Getpid())) {
		t.Errorf("error %q does not name the holder's process ID", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s2, err := Open(path, Options{})
	if err != nil {
		t.Fatalf("Open after Close: %v", err)
	}
	s2.Close()
}

func TestOpenErrors(t *testing.T) {
	dir := t.TempDir()
	notDir := filepath.Join(dir, "file")
	if err := os.WriteFile(notDir, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := map[string]string{
		"empty path":       "",
		"parent is a file": filepath.Join(notDir, "hoist.db"),
	}
	for name, path := range tests {
		t.Run(name, func(t *testing.T) {
			if s, err := Open(path, Options{}); err == nil {
				s.Close()
				t.Errorf("Open(%q) succeeded", path)
			}
		})
	}
}

// TestOddPath: characters that mean something in a URI are part of the name.
func TestOddPath(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a dir?x=1#frag%20", "hoist.db")
	s, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	put(t, s, "a")
	s.Close()
	if _, err := os.Stat(path); err != nil {
		t.Errorf("database not at its path: %v", err)
	}
}

func put(t testing.TB, s *Store, id string) {
	t.Helper()
	err := s.Update(context.Background(), func(tx store.Tx) error {
		return tx.Put(context.Background(), store.Record{Kind: "K", ID: id, Data: []byte(id)})
	})
	if err != nil {
		t.Fatalf("put %s: %v", id, err)
	}
}

func has(t testing.TB, s *Store, id string) bool {
	t.Helper()
	err := s.View(context.Background(), func(tx store.Tx) error {
		_, err := tx.Get(context.Background(), "K", id)
		return err
	})
	if errors.Is(err, store.ErrNotFound) {
		return false
	}
	if err != nil {
		t.Fatalf("get %s: %v", id, err)
	}
	return true
}

// TestReopenKeepsDataAndSeq: data survives Close/Open, migrations run once,
// and Seq keeps growing even when the newest record was deleted.
func TestReopenKeepsDataAndSeq(t *testing.T) {
	path := filepath.Join(t.TempDir(), "hoist.db")
	s, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	put(t, s, "a")
	put(t, s, "b")
	var seqB int64
	err = s.Update(context.Background(), func(tx store.Tx) error {
		rec, err := tx.Get(context.Background(), "K", "b")
		seqB = rec.Seq
		if err != nil {
			return err
		}
		return tx.Delete(context.Background(), "K", "b")
	})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()

	s, err = Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if !has(t, s, "a") || has(t, s, "b") {
		t.Fatal("data not kept across reopen")
	}
	put(t, s, "c")
	var seqC int64
	_ = s.View(context.Background(), func(tx store.Tx) error {
		rec, err := tx.Get(context.Background(), "K", "c")
		seqC = rec.Seq
		return err
	})
	if seqC <= seqB {
		t.Errorf("Seq after reopen = %d, want > %d (deleted newest)", seqC, seqB)
	}
	var versions int
	_ = s.w.conn.c.QueryRowContext(context.Background(), `SELECT count(*) FROM schema_migrations`).Scan(&versions)
	if versions != len(migrations) {
		t.Errorf("schema_migrations has %d rows, want %d", versions, len(migrations))
	}
}

func TestNewerSchemaRefused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "hoist.db")
	s, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.w.conn.c.ExecContext(context.Background(),
		`INSERT INTO schema_migrations (version, applied_at) VALUES (999, 'future')`)
	s.Close()
	if err != nil {
		t.Fatal(err)
	}
	if s, err := Open(path, Options{}); err == nil || !strings.Contains(err.Error(), "newer") {
		if s != nil {
			s.Close()
		}
		t.Fatalf("Open of a newer schema: %v, want a refusal", err)
	}
	// The failed Open released the lock.
	if _, err := filelock.Lock(path + ".lock"); err != nil {
		t.Errorf("lock still held after a failed Open: %v", err)
	}
}

// blockWriter starts an Update that holds the writer until release is
// closed, and returns once it holds it.
func blockWriter(t *testing.T, s *Store) (release func()) {
	t.Helper()
	holding, done := make(chan struct{}), make(chan error, 1)
	rel := make(chan struct{})
	go func() {
		done <- s.Update(context.Background(), func(tx store.Tx) error {
			close(holding)
			<-rel
			return tx.Put(context.Background(), store.Record{Kind: "K", ID: "blocker"})
		})
	}()
	<-holding
	return func() {
		close(rel)
		if err := <-done; err != nil {
			t.Errorf("blocking Update: %v", err)
		}
	}
}

// waitQueued waits until n requests are queued for the writer.
func waitQueued(s *Store, n int) {
	for len(s.w.reqs) < n {
		runtime.Gosched()
	}
}

// TestGroupCommit: Updates queued while the writer is busy commit together
// in one transaction, and a failing one among them loses only its writes.
func TestGroupCommit(t *testing.T) {
	s := openTemp(t)
	release := blockWriter(t, s)
	const n = 20
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			errs[i] = s.Update(context.Background(), func(tx store.Tx) error {
				if err := tx.Put(context.Background(), store.Record{Kind: "K", ID: "r" + strconv.Itoa(i)}); err != nil {
					return err
				}
				if i%5 == 0 {
					return errBoom
				}
				return nil
			})
		})
	}
	waitQueued(s, n)
	before := s.Stats()
	release()
	wg.Wait()
	for i, err := range errs {
		want := i%5 != 0
		if (err == nil) != want || has(t, s, "r"+strconv.Itoa(i)) != want {
			t.Errorf("update %d: err %v, exists %v; want success %v", i, err, has(t, s, "r"+strconv.Itoa(i)), want)
		}
	}
	got := s.Stats()
	if b := got.Batches - before.Batches; b != 2 {
		t.Errorf("%d batches for the blocker and %d queued Updates, want 2", b, n)
	}
	if u := got.Updates - before.Updates; u != 1+n-n/5 {
		t.Errorf("%d Updates committed, want %d", u, 1+n-n/5)
	}
}

var errBoom = errors.New("boom")

// TestFailedStatementReruns: when a statement fails inside a batch, the batch
// is rolled back, the failing Update gets the error, and the other Updates of
// the batch run again and commit.
func TestFailedStatementReruns(t *testing.T) {
	s := openTemp(t)
	release := blockWriter(t, s)
	var wg sync.WaitGroup
	var okErr, badErr error
	runs := 0
	wg.Go(func() {
		okErr = s.Update(context.Background(), func(tx store.Tx) error {
			runs++
			return tx.Put(context.Background(), store.Record{Kind: "K", ID: "good"})
		})
	})
	waitQueued(s, 1)
	wg.Go(func() {
		badErr = s.Update(context.Background(), func(tx store.Tx) error {
			// A statement SQLite rejects: the failure poisons the batch
			// even though the function swallows the error.
			_, _ = tx.(*writeTx).w.conn.c.ExecContext(context.Background(), `SELECT * FROM no_such_table`)
			tx.(*writeTx).fail(dbErr("test", errBoom))
			return nil
		})
	})
	waitQueued(s, 2)
	release()
	wg.Wait()
	if okErr != nil || !has(t, s, "good") || runs != 2 {
		t.Errorf("good Update: %v, exists %v, ran %d times; want nil, true, 2", okErr, has(t, s, "good"), runs)
	}
	if !errors.Is(badErr, errBoom) {
		t.Errorf("failing Update: %v, want its statement error", badErr)
	}
	if s.Stats().Aborted != 1 {
		t.Errorf("Aborted = %d, want 1", s.Stats().Aborted)
	}
}

// TestCancelWhileQueued: an Update whose context ends while it waits in the
// writer's queue returns at once and its function never runs.
func TestCancelWhileQueued(t *testing.T) {
	s := openTemp(t)
	release := blockWriter(t, s)
	ctx, cancel := context.WithCancel(context.Background())
	ran := false
	done := make(chan error, 1)
	go func() {
		done <- s.Update(ctx, func(tx store.Tx) error {
			ran = true
			return tx.Put(ctx, store.Record{Kind: "K", ID: "queued"})
		})
	}()
	waitQueued(s, 1)
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("Update: %v, want context.Canceled", err)
	}
	release()
	put(t, s, "after") // the writer skipped the canceled request
	if ran || has(t, s, "queued") {
		t.Errorf("canceled Update ran (%v) or wrote", ran)
	}
}

// TestInSynctestBubble: domain tests run their loops in testing/synctest
// bubbles with a real store; Open, Update, View and Close work inside one
// and leave no goroutine behind.
func TestInSynctestBubble(t *testing.T) {
	dir := t.TempDir()
	synctest.Test(t, func(t *testing.T) {
		s, err := Open(filepath.Join(dir, "hoist.db"), Options{})
		if err != nil {
			t.Fatal(err)
		}
		put(t, s, "a")
		time.Sleep(time.Hour) // fake time: the store has no timers to fire
		if !has(t, s, "a") {
			t.Error("record missing")
		}
		ok, err := s.Lease(t.Context(), "loop", "me", time.Now(), time.Minute)
		if err != nil || !ok {
			t.Errorf("Lease: %v %v", ok, err)
		}
		synctest.Wait()
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	})
}

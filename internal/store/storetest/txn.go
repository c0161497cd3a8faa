package storetest

import (
	"errors"
	"fmt"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/hoistgg/hoist/internal/store"
)

var txnTests = []test{
	{"RollbackOnError", plain(testRollbackOnError)},
	{"RollbackOnPanic", plain(testRollbackOnPanic)},
	{"RollbackOnGoexit", plain(testRollbackOnGoexit)},
	{"ViewPanic", plain(testViewPanic)},
	{"ViewSnapshot", plain(testViewSnapshot)},
	{"FailuresAmongConcurrentUpdates", plain(testFailuresAmongConcurrent)},
}

func testRollbackOnError(t *testing.T, s store.Store) {
	y := store.Record{Kind: kindItem, ID: "y", Key: "before", Data: []byte("y1")}
	insert(t, s, y, store.Record{Kind: kindItem, ID: "z"})
	err := s.Update(t.Context(), func(tx store.Tx) error {
		ctx := t.Context()
		if err := tx.Insert(ctx, store.Record{Kind: kindItem, ID: "x"}); err != nil {
			return err
		}
		if err := tx.Put(ctx, store.Record{Kind: kindItem, ID: "y", Key: "after"}); err != nil {
			return err
		}
		if err := tx.Delete(ctx, kindItem, "z"); err != nil {
			return err
		}
		return fmt.Errorf("wrapped: %w", errBoom)
	})
	if !errors.Is(err, errBoom) {
		t.Fatalf("Update: %v, want the function's error", err)
	}
	mustNotExist(t, s, kindItem, "x")
	if got := mustGet(t, s, kindItem, "y"); !sameRecord(got, y) {
		t.Errorf("y = %+v, want unchanged", got)
	}
	mustGet(t, s, kindItem, "z")
}

// testRollbackOnGoexit: a function that ends its goroutine (t.FailNow
// does) is rolled back and the store goes on.
func testRollbackOnGoexit(t *testing.T, s store.Store) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = s.Update(t.Context(), func(tx store.Tx) error {
			_ = tx.Insert(t.Context(), store.Record{Kind: kindItem, ID: "ghost"})
			runtime.Goexit()
			return nil
		})
	}()
	select {
	case <-done:
	case <-time.After(watchdog):
		t.Fatalf("an Update whose function called Goexit did not return within %v", watchdog)
	}
	insert(t, s, store.Record{Kind: kindItem, ID: "after"})
	mustNotExist(t, s, kindItem, "ghost")
	mustGet(t, s, kindItem, "after")
}

func testRollbackOnPanic(t *testing.T, s store.Store) {
	func() {
		defer func() {
			if r := recover(); r != errBoom {
				t.Errorf("recovered %v, want the function's panic value", r)
			}
		}()
		_ = s.Update(t.Context(), func(tx store.Tx) error {
			if err := tx.Insert(t.Context(), store.Record{Kind: kindItem, ID: "x"}); err != nil {
				return err
			}
			panic(errBoom)
		})
		t.Error("Update returned after its function panicked")
	}()
	mustNotExist(t, s, kindItem, "x")
	insert(t, s, store.Record{Kind: kindItem, ID: "after"})
	mustGet(t, s, kindItem, "after")
}

func testViewPanic(t *testing.T, s store.Store) {
	func() {
		defer func() {
			if r := recover(); r != errBoom {
				t.Errorf("recovered %v, want the function's panic value", r)
			}
		}()
		_ = s.View(t.Context(), func(tx store.Tx) error { panic(errBoom) })
	}()
	insert(t, s, store.Record{Kind: kindItem, ID: "after"})
	mustGet(t, s, kindItem, "after")
}

// testViewSnapshot commits an Update while a View is open: the View keeps
// seeing the state of its snapshot, and the Update is not blocked by it.
func testViewSnapshot(t *testing.T, s store.Store) {
	insert(t, s, store.Record{Kind: kindItem, ID: "counter", Data: []byte("1")},
		store.Record{Kind: kindItem, ID: "gone"})
	read := func(tx store.Tx) (data string, n int, gone bool) {
		rec, err := tx.Get(t.Context(), kindItem, "counter")
		if err != nil {
			t.Fatalf("Get: %v", err)
		}
		n, err = tx.Count(t.Context(), store.Query{Kind: kindItem})
		if err != nil {
			t.Fatalf("Count: %v", err)
		}
		_, err = tx.Get(t.Context(), kindItem, "gone")
		return string(rec.Data), n, errors.Is(err, store.ErrNotFound)
	}
	err := s.View(t.Context(), func(tx store.Tx) error {
		d1, n1, g1 := read(tx)
		done := make(chan error, 1)
		go func() {
			done <- s.Update(t.Context(), func(tx store.Tx) error {
				ctx := t.Context()
				if err := tx.Put(ctx, store.Record{Kind: kindItem, ID: "counter", Data: []byte("2")}); err != nil {
					return err
				}
				if err := tx.Delete(ctx, kindItem, "gone"); err != nil {
					return err
				}
				return tx.Insert(ctx, store.Record{Kind: kindItem, ID: "new"})
			})
		}()
		if err := waitErr(t, done, "an Update while a View is open"); err != nil {
			t.Fatalf("Update: %v", err)
		}
		d2, n2, g2 := read(tx)
		if d1 != "1" || d2 != d1 || n2 != n1 || g1 || g2 {
			t.Errorf("View saw a change: data %q then %q, count %d then %d, gone %v then %v",
				d1, d2, n1, n2, g1, g2)
		}
		if _, err := tx.Get(t.Context(), kindItem, "new"); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("View saw a record inserted after its snapshot: %v", err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := mustGet(t, s, kindItem, "counter"); string(got.Data) != "2" {
		t.Errorf("after the View: %q, want 2", got.Data)
	}
}

// testFailuresAmongConcurrent runs many Updates at once, every other one
// failing after its writes: exactly the successful ones are kept. (A backend
// that batches Updates must roll back only the failing one's writes.)
func testFailuresAmongConcurrent(t *testing.T, s store.Store) {
	const n = 60
	insert(t, s, store.Record{Kind: kindItem, ID: "shared", Data: []byte("0")})
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			errs[i] = s.Update(t.Context(), func(tx store.Tx) error {
				ctx := t.Context()
				if err := tx.Insert(ctx, store.Record{Kind: kindItem, ID: "u" + strconv.Itoa(i)}); err != nil {
					return err
				}
				if err := bump(ctx, tx, "shared"); err != nil {
					return err
				}
				if i%2 == 1 {
					return errBoom
				}
				return nil
			})
		})
	}
	wg.Wait()
	for i, err := range errs {
		id := "u" + strconv.Itoa(i)
		if i%2 == 1 {
			if !errors.Is(err, errBoom) {
				t.Errorf("Update %d: %v, want errBoom", i, err)
			}
			mustNotExist(t, s, kindItem, id)
			continue
		}
		if err != nil {
			t.Errorf("Update %d: %v", i, err)
		}
		mustGet(t, s, kindItem, id)
	}
	if got := string(mustGet(t, s, kindItem, "shared").Data); got != strconv.Itoa(n/2) {
		t.Errorf("shared counter = %s, want %d (only successful Updates count)", got, n/2)
	}
}

package storetest

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/hoistgg/hoist/internal/store"
)

var lifecycleTests = []test{
	{"UseAfterClose", plain(testUseAfterClose)},
	{"CloseWithPendingUpdates", plain(testCloseWithPending)},
	{"CanceledBeforeStart", plain(testCanceledBeforeStart)},
	{"CanceledInsideFunction", plain(testCanceledInside)},
	{"CanceledWhileWaiting", plain(testCanceledWhileWaiting)},
	{"NotFailed", plain(testNotFailed)},
}

// testNotFailed: a store whose writes and failed functions went as they
// should reports no failure (a failed function is the caller's error, not
// the store's).
func testNotFailed(t *testing.T, s store.Store) {
	if err := s.Failed(); err != nil {
		t.Fatalf("Failed() after Open: %v", err)
	}
	insert(t, s, store.Record{Kind: kindItem, ID: "a"})
	_ = s.Update(t.Context(), func(tx store.Tx) error { return errBoom })
	if err := s.Failed(); err != nil {
		t.Fatalf("Failed() after writes: %v", err)
	}
}

func testUseAfterClose(t *testing.T, s store.Store) {
	insert(t, s, store.Record{Kind: kindItem, ID: "a"})
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	called := false
	fn := func(tx store.Tx) error { called = true; return nil }
	if err := s.Update(t.Context(), fn); !errors.Is(err, store.ErrClosed) {
		t.Errorf("Update after Close: %v, want ErrClosed", err)
	}
	if err := s.View(t.Context(), fn); !errors.Is(err, store.ErrClosed) {
		t.Errorf("View after Close: %v, want ErrClosed", err)
	}
	if _, err := s.Lease(t.Context(), "l", "h", leaseEpoch, time.Second); !errors.Is(err, store.ErrClosed) {
		t.Errorf("Lease after Close: %v, want ErrClosed", err)
	}
	if _, _, err := s.AcquireLease(t.Context(), "l", "h", time.Second); !errors.Is(err, store.ErrClosed) {
		t.Errorf("AcquireLease after Close: %v, want ErrClosed", err)
	}
	g := store.Grant{Name: "l", Holder: "h", Term: 1}
	if err := s.UpdateFenced(t.Context(), g, fn); !errors.Is(err, store.ErrClosed) {
		t.Errorf("UpdateFenced after Close: %v, want ErrClosed", err)
	}
	if _, _, err := s.Changes(t.Context(), "", 0); !errors.Is(err, store.ErrClosed) {
		t.Errorf("Changes after Close: %v, want ErrClosed", err)
	}
	if called {
		t.Error("a function ran after Close")
	}
	if err := s.Close(); err != nil && !errors.Is(err, store.ErrClosed) {
		t.Errorf("second Close: %v", err)
	}
}

// testCloseWithPending closes the store while Updates are running: each
// returns nil or ErrClosed, and Close waits for them.
func testCloseWithPending(t *testing.T, s store.Store) {
	const workers = 8
	var wg sync.WaitGroup
	started := make(chan struct{}, workers)
	for w := range workers {
		wg.Go(func() {
			for i := 0; ; i++ {
				id := strconv.Itoa(w) + "-" + strconv.Itoa(i)
				err := s.Update(t.Context(), func(tx store.Tx) error {
					return tx.Insert(t.Context(), store.Record{Kind: kindItem, ID: id})
				})
				if i == 0 {
					started <- struct{}{}
				}
				if errors.Is(err, store.ErrClosed) {
					return
				}
				if err != nil {
					t.Errorf("Update during Close: %v, want nil or ErrClosed", err)
					return
				}
			}
		})
	}
	for range workers {
		<-started
	}
	if err := s.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	wg.Wait()
}

func testCanceledBeforeStart(t *testing.T, s store.Store) {
	ctx := ctxCanceled(t)
	called := false
	err := s.Update(ctx, func(tx store.Tx) error {
		called = true
		return tx.Insert(ctx, store.Record{Kind: kindItem, ID: "x"})
	})
	if !errors.Is(err, context.Canceled) || called {
		t.Errorf("Update: %v (fn called: %v), want context.Canceled without calling fn", err, called)
	}
	if err := s.View(ctx, func(store.Tx) error { called = true; return nil }); !errors.Is(err, context.Canceled) || called {
		t.Errorf("View: %v (fn called: %v), want context.Canceled", err, called)
	}
	if _, err := s.Lease(ctx, "l", "h", leaseEpoch, time.Second); !errors.Is(err, context.Canceled) {
		t.Errorf("Lease: %v, want context.Canceled", err)
	}
	if _, _, err := s.AcquireLease(ctx, "m", "h", time.Second); !errors.Is(err, context.Canceled) {
		t.Errorf("AcquireLease: %v, want context.Canceled", err)
	}
	g := store.Grant{Name: "m", Holder: "h", Term: 1}
	if err := s.UpdateFenced(ctx, g, func(store.Tx) error { called = true; return nil }); !errors.Is(err, context.Canceled) || called {
		t.Errorf("UpdateFenced: %v (fn called: %v), want context.Canceled", err, called)
	}
	mustNotExist(t, s, kindItem, "x")
	if ok, err := s.Lease(t.Context(), "l", "other", leaseEpoch, time.Second); err != nil || !ok {
		t.Errorf("canceled Lease was granted: another holder got %v, %v", ok, err)
	}
	if _, ok, err := s.AcquireLease(t.Context(), "m", "other", time.Second); err != nil || !ok {
		t.Errorf("canceled AcquireLease was granted: another holder got %v, %v", ok, err)
	}
}

// testCanceledInside: the context is canceled while the function runs; the
// next Tx call fails with it and nothing is written.
func testCanceledInside(t *testing.T, s store.Store) {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	err := s.Update(ctx, func(tx store.Tx) error {
		if err := tx.Insert(ctx, store.Record{Kind: kindItem, ID: "first"}); err != nil {
			return err
		}
		cancel()
		if err := tx.Insert(ctx, store.Record{Kind: kindItem, ID: "second"}); err != nil {
			return err
		}
		t.Error("Insert with a canceled context succeeded")
		return nil
	})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Update: %v, want context.Canceled", err)
	}
	mustNotExist(t, s, kindItem, "first")
	mustNotExist(t, s, kindItem, "second")
	err = s.View(t.Context(), func(tx store.Tx) error {
		vctx, vcancel := context.WithCancel(t.Context())
		vcancel()
		_, err := tx.Get(vctx, kindItem, "first")
		return err
	})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("View Get with a canceled context: %v, want context.Canceled", err)
	}
}

// testCanceledWhileWaiting: one Update holds its transaction open; another
// Update whose context is canceled meanwhile returns promptly, and its write
// is kept exactly when it returned nil.
func testCanceledWhileWaiting(t *testing.T, s store.Store) {
	release := make(chan struct{})
	holding := make(chan struct{})
	first := make(chan error, 1)
	go func() {
		first <- s.Update(t.Context(), func(tx store.Tx) error {
			if err := tx.Insert(t.Context(), store.Record{Kind: kindItem, ID: "holder"}); err != nil {
				return err
			}
			close(holding)
			<-release
			return nil
		})
	}()
	<-holding
	ctx, cancel := context.WithCancel(t.Context())
	second := make(chan error, 1)
	go func() {
		second <- s.Update(ctx, func(tx store.Tx) error {
			return tx.Insert(ctx, store.Record{Kind: kindItem, ID: "waiter"})
		})
	}()
	cancel()
	err2 := waitErr(t, second, "an Update whose context was canceled")
	close(release)
	if err := waitErr(t, first, "the holding Update"); err != nil {
		t.Fatalf("holding Update: %v", err)
	}
	mustGet(t, s, kindItem, "holder")
	_, exists := get(t, s, kindItem, "waiter")
	switch {
	case err2 == nil && !exists:
		t.Error("canceled Update returned nil but its record is missing")
	case err2 != nil && exists:
		t.Errorf("canceled Update returned %v but its record exists", err2)
	case err2 != nil && !errors.Is(err2, context.Canceled):
		t.Errorf("canceled Update: %v, want context.Canceled", err2)
	}
}

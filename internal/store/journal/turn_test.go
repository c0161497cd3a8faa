package journal

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
)

func TestTurnLockExclusion(t *testing.T) {
	var l turnLock
	var wg sync.WaitGroup
	inside, total := 0, 0
	for range 8 {
		wg.Go(func() {
			for range 2000 {
				if err := l.lock(t.Context()); err != nil {
					t.Error(err)
					return
				}
				inside++
				if inside != 1 {
					t.Error("two holders at once")
				}
				total++
				inside--
				l.unlock()
			}
		})
	}
	wg.Wait()
	if total != 8*2000 {
		t.Errorf("total %d, want %d", total, 8*2000)
	}
}

func TestTurnLockCancelWhileWaiting(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var l turnLock
		if err := l.lock(t.Context()); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(t.Context())
		got := make(chan error, 1)
		go func() { got <- l.lock(ctx) }()
		synctest.Wait()
		cancel()
		if err := <-got; !errors.Is(err, context.Canceled) {
			t.Fatalf("canceled lock: %v", err)
		}
		if len(l.waiters) != 0 {
			t.Fatalf("%d waiters left after the cancel", len(l.waiters))
		}
		l.unlock()
		if err := l.lock(t.Context()); err != nil {
			t.Fatalf("lock after the cancel: %v", err)
		}
		l.unlock()
	})
}

// A waiter canceled just as the unlock woke it passes the wake-up on: the
// next waiter gets the turn.
func TestTurnLockCancelRacingWake(t *testing.T) {
	for range 200 {
		synctest.Test(t, func(t *testing.T) {
			var l turnLock
			_ = l.lock(t.Context())
			ctx, cancel := context.WithCancel(t.Context())
			first := make(chan error, 1)
			go func() { first <- l.lock(ctx) }()
			synctest.Wait()
			second := make(chan error, 1)
			go func() { second <- l.lock(t.Context()) }()
			synctest.Wait()
			go cancel()
			l.unlock()
			err1 := <-first
			if err1 == nil {
				l.unlock()
			} else if !errors.Is(err1, context.Canceled) {
				t.Fatalf("first waiter: %v", err1)
			}
			if err := <-second; err != nil {
				t.Fatalf("second waiter: %v", err)
			}
			l.unlock()
		})
	}
}

// A woken waiter whose turn was taken by a running goroutine waits again at
// the head of the queue.
func TestTurnLockBargedWaiterStaysFirst(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var l turnLock
		_ = l.lock(t.Context())
		order := make(chan string, 2)
		for _, name := range []string{"a", "b"} {
			go func() {
				_ = l.lock(t.Context())
				order <- name
				l.unlock()
			}()
			synctest.Wait()
		}
		// Free the turn and take it again before the woken waiter runs.
		l.mu.Lock()
		l.held = false
		l.wakeFirst()
		l.held = true
		l.mu.Unlock()
		synctest.Wait()
		if len(l.waiters) != 2 || len(order) != 0 {
			t.Fatalf("after the barge: %d waiters, %d done; want 2 waiting", len(l.waiters), len(order))
		}
		l.unlock()
		if a, b := <-order, <-order; a != "a" || b != "b" {
			t.Fatalf("order %s, %s; want a, b", a, b)
		}
	})
}

package journal

import (
	"context"
	"sync"
)

// turnLock is the store's turn: a mutual exclusion lock whose wait can be
// canceled, and which a running goroutine may take ahead of the waiters.
//
// Unlock does not hand the turn to the first waiter (as a channel or a
// FIFO semaphore would): it frees it and wakes that waiter, which takes it
// only if no one did meanwhile. A waiter that has been woken is usually not
// running yet: it sits in a run queue behind the request handlers, for
// hundreds of microseconds under load. A turn handed to it would stay idle
// that long while other Updates queued behind it; freed, the next running
// Update takes it at once. A woken waiter that finds the turn taken waits
// again at the head of the queue, so no waiter is passed over for long:
// each time the turn is freed the head is woken.
type turnLock struct {
	mu      sync.Mutex
	held    bool
	waiters []*turnWaiter // in order; a woken waiter that lost goes back first
}

type turnWaiter struct {
	wake chan struct{} // cap 1: signaled when the turn was freed for it
}

// lock takes the turn, waiting for it; it fails with ctx's error if ctx
// ends first (and then does not hold the turn).
func (l *turnLock) lock(ctx context.Context) error {
	l.mu.Lock()
	if !l.held {
		l.held = true
		l.mu.Unlock()
		return nil
	}
	// Not pooled: a channel made outside a testing/synctest bubble would
	// not block durably inside one.
	w := &turnWaiter{wake: make(chan struct{}, 1)}
	l.waiters = append(l.waiters, w)
	for {
		l.mu.Unlock()
		select {
		case <-w.wake:
		case <-ctx.Done():
			l.mu.Lock()
			if l.remove(w) {
				l.mu.Unlock()
				return ctx.Err()
			}
			// Woken at the same time: the wake-up was ours; pass it on.
			l.mu.Unlock()
			<-w.wake
			l.unlockWake()
			return ctx.Err()
		}
		l.mu.Lock()
		if !l.held {
			l.held = true
			l.mu.Unlock()
			return nil
		}
		// Taken meanwhile by a running goroutine: wait again, first in line.
		l.waiters = append(l.waiters, nil)
		copy(l.waiters[1:], l.waiters)
		l.waiters[0] = w
	}
}

// remove takes w out of the queue; false if it was no longer there (an
// unlock has already woken it). The caller holds mu.
func (l *turnLock) remove(w *turnWaiter) bool {
	for i, x := range l.waiters {
		if x == w {
			l.waiters = append(l.waiters[:i], l.waiters[i+1:]...)
			return true
		}
	}
	return false
}

// unlock frees the turn and wakes the first waiter.
func (l *turnLock) unlock() {
	l.mu.Lock()
	l.held = false
	l.wakeFirst()
	l.mu.Unlock()
}

// unlockWake is called by a waiter that gave up after it was woken: the
// turn it was woken for is free (or taken by someone else since); the next
// waiter gets the wake-up.
func (l *turnLock) unlockWake() {
	l.mu.Lock()
	if !l.held {
		l.wakeFirst()
	}
	l.mu.Unlock()
}

// wakeFirst dequeues and wakes the first waiter. The caller holds mu.
func (l *turnLock) wakeFirst() {
	if len(l.waiters) == 0 {
		return
	}
	w := l.waiters[0]
	copy(l.waiters, l.waiters[1:])
	l.waiters[len(l.waiters)-1] = nil
	l.waiters = l.waiters[:len(l.waiters)-1]
	w.wake <- struct{}{}
}

package server

import (
	"sync"
	"time"
)

// byteBudget is a count of bytes shared by the request bodies being read:
// each takes what it reads, or announces, before reading it, and gives it
// back at the end of its request.
type byteBudget struct {
	total int64

	mu    sync.Mutex
	free  int64
	freed chan struct{} // closed, and replaced, whenever bytes come back
}

func newByteBudget(total int64) *byteBudget {
	return &byteBudget{total: total, free: total, freed: make(chan struct{})}
}

// take takes n bytes, waiting up to wait for them to be free; false when
// they did not come free in time.
func (b *byteBudget) take(n int64, wait time.Duration) bool {
	var timeout <-chan time.Time
	for {
		b.mu.Lock()
		if n <= b.free {
			b.free -= n
			b.mu.Unlock()
			return true
		}
		freed := b.freed
		b.mu.Unlock()
		if timeout == nil {
			t := time.NewTimer(wait)
			defer t.Stop()
			timeout = t.C
		}
		select {
		case <-freed:
		case <-timeout:
			return false
		}
	}
}

// give gives back n bytes taken.
func (b *byteBudget) give(n int64) {
	if n == 0 {
		return
	}
	b.mu.Lock()
	b.free += n
	close(b.freed)
	b.freed = make(chan struct{})
	b.mu.Unlock()
}

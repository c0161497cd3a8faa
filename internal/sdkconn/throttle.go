package sdkconn

import (
	"fmt"
	"time"

	"github.com/hoistgg/hoist/internal/hosting"
)

// Backfill requests (StartMatchBackfill and StopMatchBackfill) each cost a
// store transaction and events: a new backfill ticket replaces the game
// session's previous one. A server process may send backfillBurst of them
// at once and then one per backfillEvery; more are answered 429, which the
// SDKs report as a throttling error. The bound is per process ID across its
// sockets, and starts afresh when the process's last socket closes.
const (
	backfillBurst = 10
	backfillEvery = time.Second
)

// bucket is a token bucket: tokens at the time last.
type bucket struct {
	tokens float64
	last   time.Time
}

// take takes a token at now; false when none is left.
func (b *bucket) take(now time.Time, burst float64, every time.Duration) bool {
	if b.last.IsZero() {
		b.tokens = burst
	} else if d := now.Sub(b.last); d > 0 {
		b.tokens = min(burst, b.tokens+d.Seconds()/every.Seconds())
	}
	if !now.Before(b.last) {
		b.last = now
	}
	if b.tokens < 1 {
		return false
	}
	b.tokens--
	return true
}

// allowBackfill takes a token of the process's backfill bucket, or
// returns the throttling answer.
func (s *Server) allowBackfill(processID, action string) error {
	s.mu.Lock()
	b := s.backfills[processID]
	if b == nil {
		b = &bucket{}
		s.backfills[processID] = b
	}
	ok := b.take(s.cfg.Now(), backfillBurst, backfillEvery)
	s.mu.Unlock()
	if ok {
		return nil
	}
	return &hosting.SDKError{Status: 429, Message: fmt.Sprintf(
		"%s is throttled: a server process may send %d backfill requests at once, then one per %v", action, backfillBurst, backfillEvery)}
}

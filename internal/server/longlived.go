package server

import (
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
)

// Long-lived connections (SDK WebSockets and live event streams) each hold
// a file descriptor for as long as they last. They share one bound,
// connSlots, set from the open-file limit so that the API, health checks,
// the store and game server processes always have files left; event
// streams also have their own bound, in all and per access key
// (docs/security.md, "Long-lived connections").

// minFileReserve is the least number of files kept from long-lived
// connections for everything else.
const minFileReserve = 128

// longConnectionLimit is the bound on long-lived connections: configured
// when set, else the open-file limit less a quarter of it (at least
// minFileReserve); with the limit unknown (0), 10,000.
func longConnectionLimit(configured int, openFiles uint64) int {
	if configured > 0 {
		return configured
	}
	if openFiles == 0 {
		return 10_000
	}
	reserve := max(openFiles/4, minFileReserve)
	if openFiles <= reserve {
		return 1
	}
	return int(min(openFiles-reserve, 1<<30))
}

// connSlots counts long-lived connections against a bound. It implements
// sdkconn.Slots.
type connSlots struct {
	max int64
	n   atomic.Int64
}

// TryTake takes a slot; false when none is free.
func (c *connSlots) TryTake() bool {
	if c.n.Add(1) > c.max {
		c.n.Add(-1)
		return false
	}
	return true
}

// Give gives a slot back.
func (c *connSlots) Give() { c.n.Add(-1) }

// streamLimits bounds the live event streams open at once: in all, and
// per access key (a quarter of the total, at least 1).
type streamLimits struct {
	total, perKey int

	mu    sync.Mutex
	open  int
	byKey map[string]int
}

func newStreamLimits(total int) *streamLimits {
	return &streamLimits{total: total, perKey: max(total/4, 1), byKey: map[string]int{}}
}

// take opens a stream of key ("" for unsigned streams, which only the
// total bounds), or returns the answer to refuse it with.
func (l *streamLimits) take(key string) *limitError {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.open >= l.total {
		return &limitError{code: "LimitExceededException", status: http.StatusTooManyRequests, msg: fmt.Sprintf(
			"Hoist has %d live event streams open, the most --max-event-streams allows; close one or retry later", l.total)}
	}
	if key != "" && l.byKey[key] >= l.perKey {
		return &limitError{code: "LimitExceededException", status: http.StatusTooManyRequests, msg: fmt.Sprintf(
			"this access key has %d live event streams open, the most one key may (a quarter of --max-event-streams)", l.perKey)}
	}
	l.open++
	if key != "" {
		l.byKey[key]++
	}
	return nil
}

// give closes a stream taken with key.
func (l *streamLimits) give(key string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.open--
	if key == "" {
		return
	}
	if l.byKey[key] <= 1 {
		delete(l.byKey, key)
	} else {
		l.byKey[key]--
	}
}

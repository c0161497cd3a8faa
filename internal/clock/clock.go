// Package clock is Hoist's time: the real clock, or a manual clock
// (--clock manual) that stands still until told to move, so that a test
// can make a claim expire or a placement time out at once.
//
// Both give the background loops their tickers. A manual clock's ticker
// ticks every period of real time, as a real one does (so that the loops
// still do the work that needs no time to pass), and also at once on
// every Advance, whatever its period: a loop's work is decided by when
// each thing it looks after is due (a placement's timeout, a claim's
// expiry), not by the loop's period, so after an advance every loop runs
// at once, at the new time. docs/clock.md says what follows a manual clock and what
// stays on real time.
package clock

import (
	"errors"
	"sync"
	"time"
)

// Clock tells the time and makes tickers that follow it.
type Clock interface {
	Now() time.Time
	// NewTicker returns a ticker of period d (d > 0). Stop it when done.
	NewTicker(d time.Duration) *Ticker
}

// Ticker delivers ticks on C, at most one waiting (as time.Ticker).
type Ticker struct {
	C    <-chan time.Time
	stop func()
}

// Stop turns the ticker off; no tick is sent after it returns.
func (t *Ticker) Stop() { t.stop() }

// Real is the system clock.
var Real Clock = realClock{}

type realClock struct{}

// Now returns time.Now().
func (realClock) Now() time.Time { return time.Now() }

// NewTicker returns a time.Ticker's channel.
func (realClock) NewTicker(d time.Duration) *Ticker {
	t := time.NewTicker(d)
	return &Ticker{C: t.C, stop: t.Stop}
}

// Or returns c, or Real when c is nil.
func Or(c Clock) Clock {
	if c == nil {
		return Real
	}
	return c
}

// Manual is a clock that moves only when told (Advance, AdvanceTo). It is
// safe for concurrent use.
type Manual struct {
	mu      sync.Mutex
	now     time.Time
	tickers map[*manualTicker]struct{}
}

// NewManual returns a manual clock reading t.
func NewManual(t time.Time) *Manual {
	return &Manual{now: t, tickers: map[*manualTicker]struct{}{}}
}

// ErrBackwards refuses an advance by a negative duration: a manual clock,
// like the real one, never goes back.
var ErrBackwards = errors.New("a clock only moves forward")

// Now returns the clock's time.
func (m *Manual) Now() time.Time {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.now
}

// Advance moves the clock forward by d and ticks every ticker; it returns
// the new time. An advance by 0 changes nothing.
func (m *Manual) Advance(d time.Duration) (time.Time, error) {
	if d < 0 {
		return time.Time{}, ErrBackwards
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if d > 0 {
		m.moveLocked(m.now.Add(d))
	}
	return m.now, nil
}

// AdvanceTo moves the clock forward to t, ticking the tickers as Advance
// does, and reports whether it moved (a t not after the clock's time
// changes nothing).
func (m *Manual) AdvanceTo(t time.Time) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !t.After(m.now) {
		return false
	}
	m.moveLocked(t)
	return true
}

// moveLocked sets the time and ticks every ticker.
func (m *Manual) moveLocked(t time.Time) {
	m.now = t
	for tk := range m.tickers {
		tk.sendLocked(t)
	}
}

// NewTicker returns a ticker that ticks every d of real time, and at once
// whenever the clock moves.
func (m *Manual) NewTicker(d time.Duration) *Ticker {
	if d <= 0 {
		panic("clock: non-positive ticker period")
	}
	c := make(chan time.Time, 1)
	tk := &manualTicker{m: m, d: d, c: c}
	m.mu.Lock()
	defer m.mu.Unlock()
	tk.timer = time.AfterFunc(d, tk.realTick)
	m.tickers[tk] = struct{}{}
	return &Ticker{C: c, stop: tk.stop}
}

// manualTicker is one ticker of a Manual clock; its fields are guarded by
// the clock's mutex.
type manualTicker struct {
	m       *Manual
	d       time.Duration
	c       chan time.Time
	timer   *time.Timer // its real-time period
	stopped bool
}

// sendLocked delivers a tick unless one is waiting already.
func (tk *manualTicker) sendLocked(t time.Time) {
	select {
	case tk.c <- t:
	default:
	}
}

// realTick is the real-time period's tick.
func (tk *manualTicker) realTick() {
	tk.m.mu.Lock()
	defer tk.m.mu.Unlock()
	if tk.stopped {
		return
	}
	tk.sendLocked(tk.m.now)
	tk.timer.Reset(tk.d)
}

func (tk *manualTicker) stop() {
	tk.m.mu.Lock()
	defer tk.m.mu.Unlock()
	tk.stopped = true
	tk.timer.Stop()
	delete(tk.m.tickers, tk)
}

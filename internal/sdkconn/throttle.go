package sdkconn

import (
	"fmt"
	"log/slog"
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

// until returns how long after now the bucket has a token again.
func (b *bucket) until(now time.Time, every time.Duration) time.Duration {
	missing := 1 - b.tokens
	if missing <= 0 {
		return 0
	}
	return max(0, time.Duration(missing*float64(every))-now.Sub(b.last))
}

// setLimitDefaults fills in the defaults of the connection and message
// limits of cfg.
func setLimitDefaults(cfg *Config) {
	if cfg.MaxComputeSockets == 0 {
		cfg.MaxComputeSockets = DefaultComputeSockets
	}
	if cfg.ReplaceGrace <= 0 {
		cfg.ReplaceGrace = DefaultReplaceGrace
	}
	if cfg.ReadyGrace <= 0 {
		cfg.ReadyGrace = DefaultReadyGrace
	}
	if cfg.MessageBurst <= 0 {
		cfg.MessageBurst = DefaultMessageBurst
	}
	if cfg.MessageRate == 0 {
		cfg.MessageRate = DefaultMessageRate
	}
}

// messageEvery is how often a socket's request bucket gains a token.
func (s *Server) messageEvery() time.Duration {
	return time.Duration(float64(time.Second) / s.cfg.MessageRate)
}

// throttle answers a request over the socket's rate 429 (when it can be
// answered) without serving it, then stops reading the socket until a
// request may be served again: a flood costs at most two frames per token.
func (pc *procConn) throttle(data []byte) error {
	pc.throttledFrames++
	level := slog.LevelDebug
	if pc.throttledFrames == 1 {
		level = slog.LevelWarn
	}
	pc.log.Log(pc.ctx, level, "sdk: request throttled", "burst", pc.s.cfg.MessageBurst,
		"perSecond", pc.s.cfg.MessageRate, "throttled", pc.throttledFrames)
	if req, err := DecodeMessage(data); err == nil && req.RequestID != "" {
		reply := &Reply{Action: req.Action, RequestID: req.RequestID, Status: 429, Message: fmt.Sprintf(
			"throttled: a socket is served %d requests at once, then %g a second", pc.s.cfg.MessageBurst, pc.s.cfg.MessageRate)}
		if err := pc.answer(reply); err != nil {
			return err
		}
	}
	t := time.NewTimer(pc.frames.until(pc.s.cfg.Now(), pc.s.messageEvery()))
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-pc.ctx.Done():
		return pc.ctx.Err()
	}
}

// retireAfter drops the socket, replaced by a newer one of its process,
// after grace unless it ends first.
func (pc *procConn) retireAfter(grace time.Duration) {
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-pc.ctx.Done():
	case <-t.C:
		pc.log.Info("sdk: socket replaced by a newer one of the process", "grace", grace)
		pc.cancel()
	}
}

package store

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
)

// ShardWake wakes the pass of a sharded loop (RunSharded) on the replica
// holding a shard when work for that shard was committed on any replica
// (a placement started, a ticket started), so that the holder need not
// wait for its next Interval. On a store without Waker (the embedded
// stores: one replica) and on the holder itself it is the loop's Kick;
// otherwise a wake carrying the shard's key goes out after the commit,
// in a statement of its own (NOTIFY, coalesced with the others pending:
// never inside the transaction that made the work), and each replica's
// listener kicks its loop when it holds that shard. A wake is a hint: a
// lost one leaves the work to the holder's next pass.
type ShardWake struct {
	waker   Waker // nil: local kicks only
	channel string
	kick    chan struct{}
	log     *slog.Logger
	// held is the set of shards this replica's last pass held (nil:
	// not known yet); reset to empty at each pass's start (Keys), so
	// that a replica holding none knows it.
	held atomic.Pointer[map[string]bool]

	mu      sync.Mutex
	pending map[string]bool
	sig     chan struct{}
}

// ShardWakeChannel is the wake channel of loop's shards.
func ShardWakeChannel(loop string) string { return "hoist_shard_" + loop }

// NewShardWake returns the ShardWake of loop on st, whose passes kick
// wakes.
func NewShardWake(st Store, loop string, kick chan struct{}, log *slog.Logger) *ShardWake {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	w := &ShardWake{channel: ShardWakeChannel(loop), kick: kick, log: log, pending: map[string]bool{},
		sig: make(chan struct{}, 1)}
	w.waker, _ = st.(Waker)
	return w
}

// Keys wraps a ShardedLoop's Keys: a pass starting forgets which shards
// the last one held.
func (w *ShardWake) Keys(keys func(ctx context.Context) ([]string, error)) func(ctx context.Context) ([]string, error) {
	return func(ctx context.Context) ([]string, error) {
		none := map[string]bool{}
		w.held.Store(&none)
		return keys(ctx)
	}
}

// Work wraps a ShardedLoop's Work: it notes the shards the pass holds.
func (w *ShardWake) Work(work func(ctx context.Context, held *Held) error) func(ctx context.Context, held *Held) error {
	return func(ctx context.Context, held *Held) error {
		m := make(map[string]bool, held.Len())
		for k := range held.grants {
			m[k] = true
		}
		w.held.Store(&m)
		return work(ctx, held)
	}
}

// holds reports whether this replica holds key's shard, and whether
// that is known (the first pass has not come yet).
func (w *ShardWake) holds(key string) (mine, known bool) {
	m := w.held.Load()
	if m == nil {
		return false, false
	}
	return (*m)[key], true
}

// Wake says that work for key's shard was committed ("" for every
// shard): the loop is kicked here if this replica holds it (or may), and
// the other replicas are woken unless this one holds it.
func (w *ShardWake) Wake(key string) {
	mine, known := w.holds(key)
	if mine || !known || key == "" {
		w.kickLoop()
	}
	if mine || w.waker == nil {
		return
	}
	w.mu.Lock()
	w.pending[key] = true
	w.mu.Unlock()
	select {
	case w.sig <- struct{}{}:
	default:
	}
}

// kickLoop kicks this replica's loop without waiting.
func (w *ShardWake) kickLoop() {
	select {
	case w.kick <- struct{}{}:
	default:
	}
}

// Run sends the pending wakes and listens for the others' until ctx
// ends (at once on a store without Waker).
func (w *ShardWake) Run(ctx context.Context) {
	if w.waker == nil {
		return
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Go(func() { w.send(ctx) })
	_ = w.waker.Listen(ctx, w.channel, func(key string) {
		if mine, known := w.holds(key); mine || !known || key == "" {
			w.kickLoop()
		}
	})
}

// wakeGap is the least time between two wakes a replica sends for one
// loop. A wake made after a quiet spell goes out at once; those made
// within wakeGap of the last one go out together when it has passed. Under
// load the holder is in a pass, and finds the new work in its next one
// whether woken or not: the gap bounds what wakes cost the database and
// every replica's listener (on three replicas under e2e/matchload, 3,417
// NOTIFY statements in a 13 s run, one each round trip) at the price of at
// most wakeGap for work committed just after a wake, when the holder was
// idle again by then.
const wakeGap = 25 * time.Millisecond

// send sends the pending wakes, all of them in one statement, each time
// there are some, at most one statement each wakeGap.
func (w *ShardWake) send(ctx context.Context) {
	gap := time.NewTimer(0)
	defer gap.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-gap.C:
		}
		select {
		case <-ctx.Done():
			return
		case <-w.sig:
		}
		gap.Reset(wakeGap)
		w.mu.Lock()
		keys := make([]string, 0, len(w.pending))
		for k := range w.pending {
			keys = append(keys, k)
		}
		clear(w.pending)
		w.mu.Unlock()
		wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		if err := w.waker.Wake(wctx, w.channel, keys...); err != nil && ctx.Err() == nil {
			w.log.Info("shard wake not sent (the holders find the work at their next pass)", "channel", w.channel, "err", err)
		}
		cancel()
	}
}

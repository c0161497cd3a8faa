package store

import (
	"context"
	"errors"
	"hash/fnv"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/hoistgg/hoist/internal/clock"
)

// ShardedLoop is background work split by a natural key (a game session
// queue, a matchmaking configuration, a game server group, a fleet): each
// key is a shard with a lease of its own, "shard/<Name>/<key>", taken with
// AcquireLease (the store's clock). Every replica running the loop holds
// up to its fair share of the shards (the keys divided by the live
// replicas, rounded up) and takes a shard beyond it only once nobody has
// held it for TTL, so that replicas share the shards and a dead replica's
// pass to the survivors; one replica alone holds them all. Each pass runs
// Work once with the shards held (one pass at a time: each shard's work is
// serial), whose writes should be fenced by each shard's grant
// (Store.UpdateFenced), so that a replica that paused past a lease cannot
// commit as its holder.
type ShardedLoop struct {
	// Name names the loop's leases; Holder is this replica's ID.
	Name, Holder string
	// Interval between passes (a Kick runs one sooner).
	Interval time.Duration
	// TTL of a shard's lease, renewed once a third of it has passed;
	// default 5 * Interval. A dead replica's shards are taken over within
	// about TTL + Interval once the count of replicas no longer has it,
	// and within 2 * TTL + Interval while it still does.
	TTL time.Duration
	// Kick, when set, wakes the loop early.
	Kick <-chan struct{}
	// Clock gives the passes their ticker (nil: real time), as Loop.Clock;
	// the leases stay on the store's clock.
	Clock clock.Clock
	// Keys lists the shard keys, from the store: every key that may have
	// work (its shard is held even when it has none).
	Keys func(ctx context.Context) ([]string, error)
	// Replicas counts the replicas sharing the work; nil: this one alone.
	Replicas Replicas
	// Work runs once per pass with the shards held (never none); its
	// errors are logged and the loop goes on.
	Work func(ctx context.Context, held *Held) error
	Log  *slog.Logger
}

// Replicas says how many replicas share the background work. The replica
// registry implements it; so does Presence, counting presence leases.
type Replicas interface {
	// Live returns how many replicas are alive, this one included (at
	// least 1).
	Live(ctx context.Context) (int, error)
}

// Held is the set of shards a replica holds for one pass of a sharded
// loop, with their grants.
type Held struct {
	grants map[string]Grant
}

// HoldAll returns a Held of keys with no grants: work done with it is not
// fenced (tests, and the loops' one-off passes over every shard).
func HoldAll(keys ...string) *Held {
	h := &Held{grants: make(map[string]Grant, len(keys))}
	for _, k := range keys {
		h.grants[k] = Grant{}
	}
	return h
}

// HeldOf returns a Held of these shards (key -> grant): a pass's shards
// as a test or a tool holds them.
func HeldOf(grants map[string]Grant) *Held {
	h := &Held{grants: make(map[string]Grant, len(grants))}
	for k, g := range grants {
		h.grants[k] = g
	}
	return h
}

// Has reports whether key's shard is held.
func (h *Held) Has(key string) bool {
	_, ok := h.grants[key]
	return ok
}

// Grant returns the grant of key's shard (ok false when it is not held;
// a zero Term: held without a lease, see HoldAll).
func (h *Held) Grant(key string) (Grant, bool) {
	g, ok := h.grants[key]
	return g, ok
}

// Keys returns the held shards' keys in order.
func (h *Held) Keys() []string {
	out := make([]string, 0, len(h.grants))
	for k := range h.grants {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// Len is how many shards are held.
func (h *Held) Len() int { return len(h.grants) }

// UpdateIn runs fn in an Update of st fenced by g (UpdateFenced), or in a
// plain Update when g has no term (HoldAll).
func UpdateIn(ctx context.Context, st Store, g Grant, fn func(tx Tx) error) error {
	if g.Term == 0 {
		return st.Update(ctx, fn)
	}
	return st.UpdateFenced(ctx, g, fn)
}

// ShardLeasePrefix is the prefix of the leases of a sharded loop's shards.
func ShardLeasePrefix(loop string) string { return "shard/" + loop + "/" }

// RunSharded runs l until ctx ends (then it gives its shards up, so that
// the other replicas take them at once, and returns nil). Each pass first
// brings the shards held in line with the store (the keys, the leases,
// the live replicas), then runs Work; while a pass runs, a second
// goroutine renews the shards held, unless the pass has run for 10 * TTL
// (a pass stuck that long lets its shards go to the other replicas).
func RunSharded(ctx context.Context, st Store, l ShardedLoop) error {
	if l.TTL <= 0 {
		l.TTL = 5 * l.Interval
	}
	if l.Log == nil {
		l.Log = slog.New(slog.DiscardHandler)
	}
	k := newKeeper(st, l)
	defer k.releaseAll()
	done := make(chan struct{})
	defer func() { <-done }()
	go func() {
		defer close(done)
		k.renewWhileRunning(ctx)
	}()
	tick := clock.Or(l.Clock).NewTicker(l.Interval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		case <-l.Kick:
		}
		held, err := k.rebalance(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			l.Log.Warn("shards", "loop", l.Name, "err", err)
			continue
		}
		if held.Len() == 0 {
			continue
		}
		k.passStarted(time.Now())
		err = l.Work(ctx, held)
		k.passStarted(time.Time{})
		if err != nil && ctx.Err() == nil {
			l.Log.Warn("background work", "loop", l.Name, "err", err)
		}
	}
}

// keeper holds a replica's shards of one loop. The loop's goroutine
// rebalances them before each pass; the renewer renews them during
// passes; mu keeps them apart.
type keeper struct {
	st     Store
	l      ShardedLoop
	prefix string
	seed   uint32

	mu   sync.Mutex
	mine map[string]heldShard
	// freeSince is when each free shard was first seen free.
	freeSince map[string]time.Time
	// running is when the pass under way started (zero: none).
	running time.Time
}

// heldShard is a shard's grant and when it was granted (this replica's
// monotonic clock, for the renewal).
type heldShard struct {
	g  Grant
	at time.Time
}

func newKeeper(st Store, l ShardedLoop) *keeper {
	h := fnv.New32a()
	_, _ = h.Write([]byte(l.Holder))
	return &keeper{st: st, l: l, prefix: ShardLeasePrefix(l.Name), seed: h.Sum32(),
		mine: map[string]heldShard{}, freeSince: map[string]time.Time{}}
}

// view is what one pass learns from the store: the keys, who holds which
// shard and how many replicas are alive.
type view struct {
	keys    []string
	holders map[string]string
	live    int
}

// look reads the view.
func (k *keeper) look(ctx context.Context) (view, error) {
	keys, err := k.l.Keys(ctx)
	if err != nil {
		return view{}, err
	}
	slices.Sort(keys)
	v := view{keys: slices.Compact(keys), holders: map[string]string{}, live: 1}
	gs, err := k.st.Leases(ctx, k.prefix)
	if err != nil {
		return view{}, err
	}
	for _, g := range gs {
		v.holders[g.Name[len(k.prefix):]] = g.Holder
	}
	if k.l.Replicas != nil {
		n, err := k.l.Replicas.Live(ctx)
		if err != nil {
			return view{}, err
		}
		v.live = max(n, 1)
	}
	return v, nil
}

// rebalance brings the shards held in line with the view and returns
// what it then holds. With K keys and n live replicas a replica should
// hold lo = K/n or hi = ceil(K/n) shards: it forgets the shards it lost,
// gives up those of keys gone, those past hi, and one past lo while a
// replica holds fewer than lo (a new one); it renews those due; it takes
// a free shard at once below lo, after 2 * Interval below hi (the
// replicas below lo go first) and after TTL beyond (a dead replica's,
// while the count still has it).
func (k *keeper) rebalance(ctx context.Context) (*Held, error) {
	v, err := k.look(ctx)
	if err != nil {
		return nil, err
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	now := time.Now()
	lo, hi := len(v.keys)/v.live, (len(v.keys)+v.live-1)/v.live
	order := k.order(v.keys)
	for key := range k.mine {
		if v.holders[key] != k.l.Holder {
			delete(k.mine, key) // expired or taken over
		}
	}
	var errs []error
	for key := range k.mine {
		if !slices.Contains(v.keys, key) {
			errs = append(errs, k.release(ctx, key))
		}
	}
	keep := hi
	if len(k.mine) <= hi && v.starving(lo) {
		keep = max(lo, len(k.mine)-1)
	}
	for i := len(order) - 1; i >= 0 && len(k.mine) > keep; i-- { // give up the last in its order
		if _, ok := k.mine[order[i]]; ok {
			errs = append(errs, k.release(ctx, order[i]))
		}
	}
	errs = append(errs, k.renewDue(ctx, now))
	for _, key := range order {
		errs = append(errs, k.takeFree(ctx, key, v, lo, hi, now))
	}
	return k.held(), errors.Join(errs...)
}

// starving reports whether a live replica holds fewer than lo shards
// (one holding none does not appear among the holders).
func (v view) starving(lo int) bool {
	if lo == 0 {
		return false
	}
	counts := map[string]int{}
	for key, h := range v.holders {
		if slices.Contains(v.keys, key) {
			counts[h]++
		}
	}
	if len(counts) < v.live {
		return true
	}
	for _, n := range counts {
		if n < lo {
			return true
		}
	}
	return false
}

// takeFree takes key's shard when nobody holds it and it has been free
// long enough for a replica holding as many shards as this one (see
// rebalance).
func (k *keeper) takeFree(ctx context.Context, key string, v view, lo, hi int, now time.Time) error {
	if _, ok := k.mine[key]; ok || v.holders[key] != "" {
		delete(k.freeSince, key)
		return nil
	}
	since, seen := k.freeSince[key]
	if !seen {
		k.freeSince[key] = now
		since = now
	}
	var wait time.Duration
	switch n := len(k.mine); {
	case n >= hi:
		wait = k.l.TTL
	case n >= lo:
		wait = 2 * k.l.Interval
	}
	if now.Sub(since) < wait {
		return nil
	}
	return k.take(ctx, key, now)
}

// renewDue renews the shards granted a third of TTL ago or more (k.mu
// held).
func (k *keeper) renewDue(ctx context.Context, now time.Time) error {
	var errs []error
	for key, hs := range k.mine {
		if now.Sub(hs.at) >= k.l.TTL/3 {
			errs = append(errs, k.take(ctx, key, now))
		}
	}
	return errors.Join(errs...)
}

// passStarted records the start of a pass (zero: it ended).
func (k *keeper) passStarted(at time.Time) {
	k.mu.Lock()
	k.running = at
	k.mu.Unlock()
}

// renewWhileRunning renews the shards held every TTL/3 while a pass runs
// (between passes the pass's rebalance does), until ctx ends. A pass
// running for 10 * TTL is taken for stuck: its shards are left to lapse.
func (k *keeper) renewWhileRunning(ctx context.Context) {
	tick := time.NewTicker(k.l.TTL / 3)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		k.mu.Lock()
		now := time.Now()
		var err error
		switch {
		case k.running.IsZero():
		case now.Sub(k.running) >= 10*k.l.TTL:
			k.l.Log.Warn("shards: a pass has run for 10 times the lease's TTL: its shards are left to the other replicas",
				"loop", k.l.Name, "since", k.running)
		default:
			err = k.renewDue(ctx, now)
		}
		k.mu.Unlock()
		if err != nil && ctx.Err() == nil {
			k.l.Log.Warn("shards: renewing", "loop", k.l.Name, "err", err)
		}
	}
}

// take acquires or renews key's shard.
func (k *keeper) take(ctx context.Context, key string, now time.Time) error {
	g, ok, err := k.st.AcquireLease(ctx, k.prefix+key, k.l.Holder, k.l.TTL)
	switch {
	case err != nil:
		return err
	case ok:
		k.mine[key] = heldShard{g: g, at: now}
		delete(k.freeSince, key)
	default:
		delete(k.mine, key)
	}
	return nil
}

// release gives key's shard up.
func (k *keeper) release(ctx context.Context, key string) error {
	delete(k.mine, key)
	_, _, err := k.st.AcquireLease(ctx, k.prefix+key, k.l.Holder, 0)
	return err
}

// releaseAll gives every shard up (the loop is ending).
func (k *keeper) releaseAll() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	k.mu.Lock()
	defer k.mu.Unlock()
	for key := range k.mine {
		if err := k.release(ctx, key); err != nil {
			k.l.Log.Debug("shards: giving a shard up", "loop", k.l.Name, "shard", key, "err", err)
		}
	}
}

// order returns keys starting at a place of their own for this replica,
// so that replicas taking free shards at once try different ones first.
func (k *keeper) order(keys []string) []string {
	if len(keys) == 0 {
		return nil
	}
	start := int(k.seed % uint32(len(keys)))
	return append(slices.Clone(keys[start:]), keys[:start]...)
}

// held returns the shards held now.
func (k *keeper) held() *Held {
	h := &Held{grants: make(map[string]Grant, len(k.mine))}
	for key, hs := range k.mine {
		h.grants[key] = hs.g
	}
	return h
}

// Presence counts the live replicas by their presence leases,
// "presence/<Holder>", each held by its replica while Run runs. Hoist's
// sharded loops count the replica registry instead (internal/replicas);
// tests of the loops use Presence.
type Presence struct {
	Store  Store
	Holder string
	// TTL of the presence lease, renewed every TTL/3; default 6 s. A
	// replica that died is no longer counted TTL after its last renewal.
	TTL time.Duration
	Log *slog.Logger
}

// PresencePrefix is the prefix of the presence leases.
const PresencePrefix = "presence/"

func (p *Presence) ttl() time.Duration {
	if p.TTL <= 0 {
		return 6 * time.Second
	}
	return p.TTL
}

// Run holds this replica's presence lease until ctx ends, then gives it
// up.
func (p *Presence) Run(ctx context.Context) error {
	log := p.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	tick := time.NewTicker(p.ttl() / 3)
	defer tick.Stop()
	for {
		if _, _, err := p.Store.AcquireLease(ctx, PresencePrefix+p.Holder, p.Holder, p.ttl()); err != nil && ctx.Err() == nil {
			log.Warn("presence lease", "err", err)
		}
		select {
		case <-ctx.Done():
			gone, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			_, _, _ = p.Store.AcquireLease(gone, PresencePrefix+p.Holder, p.Holder, 0)
			cancel()
			return nil
		case <-tick.C:
		}
	}
}

// Live counts the replicas holding presence leases, this one included.
func (p *Presence) Live(ctx context.Context) (int, error) {
	gs, err := p.Store.Leases(ctx, PresencePrefix)
	if err != nil {
		return 0, err
	}
	n := len(gs)
	if !slices.ContainsFunc(gs, func(g Grant) bool { return g.Holder == p.Holder }) {
		n++
	}
	return n, nil
}

package store_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hoistgg/hoist/internal/store"
)

// memLeases is a Store with only leases (AcquireLease, Leases and
// UpdateFenced's check), measured by time.Now: the bubble's clock.
type memLeases struct {
	store.Store
	mu     sync.Mutex
	leases map[string]store.Grant
}

func newMemLeases() *memLeases { return &memLeases{leases: map[string]store.Grant{}} }

func (s *memLeases) AcquireLease(_ context.Context, name, holder string, ttl time.Duration) (store.Grant, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	cur, had := s.leases[name]
	live := had && now.Before(cur.Expires)
	if live && cur.Holder != holder {
		return store.Grant{}, false, nil
	}
	g := store.Grant{Name: name, Holder: holder, Term: cur.Term, Expires: now.Add(ttl)}
	if !live || cur.Holder != holder {
		g.Term++
	}
	s.leases[name] = g
	if ttl <= 0 {
		return store.Grant{}, false, nil
	}
	return g, true, nil
}

func (s *memLeases) Leases(_ context.Context, prefix string) ([]store.Grant, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []store.Grant
	for name, g := range s.leases {
		if strings.HasPrefix(name, prefix) && time.Now().Before(g.Expires) {
			out = append(out, g)
		}
	}
	slices.SortFunc(out, func(a, b store.Grant) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// UpdateFenced runs fn (with no Tx) and keeps its outcome only while g
// holds.
func (s *memLeases) UpdateFenced(_ context.Context, g store.Grant, fn func(store.Tx) error) error {
	if err := fn(nil); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	cur := s.leases[g.Name]
	if cur.Holder != g.Holder || cur.Term != g.Term || !time.Now().Before(cur.Expires) {
		return store.ErrLeaseLost
	}
	return nil
}

// holders returns, per shard key of loop, its holder now.
func (s *memLeases) holders(loop string) map[string]string {
	gs, _ := s.Leases(context.Background(), store.ShardLeasePrefix(loop))
	out := map[string]string{}
	for _, g := range gs {
		out[strings.TrimPrefix(g.Name, store.ShardLeasePrefix(loop))] = g.Holder
	}
	return out
}

// replicaStore is one replica's view of the shared store: stopped
// (paused, as by SIGSTOP) it blocks every call until resumed; dead (kill
// -9) it fails every call and never runs another.
type replicaStore struct {
	store.Store
	mu     sync.Mutex
	dead   bool
	resume chan struct{} // non-nil while stopped
}

var errDead = errors.New("replica dead")

// gate waits while the replica is stopped and fails once it is dead.
func (r *replicaStore) gate() error {
	r.mu.Lock()
	wait, dead := r.resume, r.dead
	r.mu.Unlock()
	if wait != nil {
		<-wait
	}
	if dead {
		return errDead
	}
	return nil
}

func (r *replicaStore) stop() {
	r.mu.Lock()
	r.resume = make(chan struct{})
	r.mu.Unlock()
}

func (r *replicaStore) cont() {
	r.mu.Lock()
	close(r.resume)
	r.resume = nil
	r.mu.Unlock()
}

func (r *replicaStore) kill() {
	r.mu.Lock()
	r.dead = true
	r.mu.Unlock()
}

func (r *replicaStore) AcquireLease(ctx context.Context, name, holder string, ttl time.Duration) (store.Grant, bool, error) {
	if err := r.gate(); err != nil {
		return store.Grant{}, false, err
	}
	return r.Store.AcquireLease(ctx, name, holder, ttl)
}

func (r *replicaStore) Leases(ctx context.Context, prefix string) ([]store.Grant, error) {
	if err := r.gate(); err != nil {
		return nil, err
	}
	return r.Store.Leases(ctx, prefix)
}

func (r *replicaStore) UpdateFenced(ctx context.Context, g store.Grant, fn func(store.Tx) error) error {
	if err := r.gate(); err != nil {
		return err
	}
	return r.Store.UpdateFenced(ctx, g, fn)
}

// cluster runs replicas of one sharded loop over keys on a shared
// memLeases, each with its Presence, and records the work each does.
type cluster struct {
	t      *testing.T
	shared *memLeases
	mu     sync.Mutex
	keys   []string
	// work counts each replica's passes over each key; busy is who works
	// on a key right now.
	work map[string]map[string]int
	busy map[string]string
	// commits counts fenced commits per replica, refused the refused.
	commits, refused map[string]int
	// block, when set, stops a replica's work until it is closed; blocked
	// gets the replica's ID when its work stops there.
	block   map[string]chan struct{}
	blocked chan string
	// overlapOK: a paused replica may believe it works on a shard another
	// took over (its commit is refused).
	overlapOK bool
}

const (
	interval    = time.Second
	ttl         = 5 * time.Second
	presenceTTL = 6 * time.Second
)

func newCluster(t *testing.T, keys ...string) *cluster {
	return &cluster{t: t, shared: newMemLeases(), keys: keys, work: map[string]map[string]int{},
		busy: map[string]string{}, commits: map[string]int{}, refused: map[string]int{}, block: map[string]chan struct{}{},
		blocked: make(chan string, 8)}
}

// start runs replica id until ctx ends; it returns its store view.
func (c *cluster) start(ctx context.Context, id string) *replicaStore {
	rs := &replicaStore{Store: c.shared}
	p := &store.Presence{Store: rs, Holder: id, TTL: presenceTTL}
	go p.Run(ctx)
	go store.RunSharded(ctx, rs, store.ShardedLoop{Name: "placement", Holder: id, Interval: interval, TTL: ttl,
		Replicas: p,
		Keys: func(context.Context) ([]string, error) {
			c.mu.Lock()
			defer c.mu.Unlock()
			return slices.Clone(c.keys), nil
		},
		Work: func(ctx context.Context, held *store.Held) error { return c.pass(ctx, rs, id, held) }})
	return rs
}

// pass is one pass of replica id: for each held key, it checks that no
// other replica works on it, then commits fenced.
func (c *cluster) pass(ctx context.Context, rs *replicaStore, id string, held *store.Held) error {
	for _, key := range held.Keys() {
		g, _ := held.Grant(key)
		c.mu.Lock()
		if other := c.busy[key]; other != "" && other != id && !c.overlapOK {
			c.t.Errorf("%s works on %s while %s does", id, key, other)
		}
		c.busy[key] = id
		if c.work[id] == nil {
			c.work[id] = map[string]int{}
		}
		c.work[id][key]++
		block := c.block[id]
		c.mu.Unlock()
		if block != nil {
			c.blocked <- id
			<-block
		}
		err := rs.UpdateFenced(ctx, g, func(store.Tx) error { return nil })
		c.mu.Lock()
		if c.busy[key] == id {
			delete(c.busy, key)
		}
		switch {
		case err == nil:
			c.commits[id]++
		case errors.Is(err, store.ErrLeaseLost):
			c.refused[id]++
		}
		c.mu.Unlock()
	}
	return nil
}

// held returns how many shards each replica holds, failing the test when
// a key has no holder.
func (c *cluster) held(replicas ...string) map[string]int {
	c.t.Helper()
	out := c.counts(replicas...)
	if out[""] > 0 {
		c.t.Errorf("%d shards have no holder (holders %v)", out[""], c.shared.holders("placement"))
	}
	return out
}

// counts returns how many shards each replica holds ("": no one).
func (c *cluster) counts(replicas ...string) map[string]int {
	hs := c.shared.holders("placement")
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[string]int{}
	for _, key := range c.keys {
		out[hs[key]]++
	}
	for _, r := range replicas {
		out[r] += 0
	}
	return out
}

// TestShardsFairShare: three replicas share seven shards, 2 or 3 each,
// every shard held by one of them and worked by it alone.
func TestShardsFairShare(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCluster(t, "q1", "q2", "q3", "q4", "q5", "q6", "q7")
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		for _, id := range []string{"A", "B", "C"} {
			c.start(ctx, id)
			time.Sleep(100 * time.Millisecond)
		}
		time.Sleep(30 * time.Second)
		for id, n := range c.held("A", "B", "C") {
			if n < 2 || n > 3 {
				t.Errorf("%s holds %d of 7 shards, want 2 or 3 (%v)", id, n, c.shared.holders("placement"))
			}
		}
		c.mu.Lock()
		defer c.mu.Unlock()
		for id, n := range c.refused {
			if n > 0 {
				t.Errorf("%s had %d fenced commits refused with no replica paused", id, n)
			}
		}
	})
}

// TestShardsOneReplica: a replica alone takes every shard at its first
// pass and works on all of them each pass.
func TestShardsOneReplica(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCluster(t, "q1", "q2", "q3")
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		c.start(ctx, "A")
		time.Sleep(interval + time.Millisecond)
		synctest.Wait()
		if n := c.held("A")["A"]; n != 3 {
			t.Fatalf("A alone holds %d of 3 shards after its first pass", n)
		}
		time.Sleep(9 * time.Second)
		synctest.Wait()
		c.mu.Lock()
		defer c.mu.Unlock()
		for _, key := range c.keys {
			if n := c.work["A"][key]; n != 10 {
				t.Errorf("A worked on %s in %d of 10 passes", key, n)
			}
		}
	})
}

// TestShardsNewReplicaTakesItsShare: a second replica gets half of the
// shards the first held alone, within a few passes.
func TestShardsNewReplicaTakesItsShare(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCluster(t, "q1", "q2", "q3", "q4", "q5", "q6")
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		c.start(ctx, "A")
		time.Sleep(5 * time.Second)
		c.start(ctx, "B")
		time.Sleep(4 * time.Second)
		if got := c.held("A", "B"); got["A"] != 3 || got["B"] != 3 {
			t.Fatalf("4 s after B started: %v, want 3 shards each", got)
		}
	})
}

// TestShardsTakeoverAfterDeath: when a replica dies (kill -9: it gives
// nothing up), the survivors hold all its shards within 15 s.
func TestShardsTakeoverAfterDeath(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCluster(t, "q1", "q2", "q3", "q4", "q5", "q6")
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		stores := map[string]*replicaStore{}
		for _, id := range []string{"A", "B", "C"} {
			stores[id] = c.start(ctx, id)
		}
		time.Sleep(20 * time.Second)
		before := c.shared.holders("placement")
		stores["C"].kill()
		died := time.Now()
		for {
			time.Sleep(100 * time.Millisecond)
			got := c.counts("A", "B", "C")
			if got["C"] == 0 && got[""] == 0 {
				break
			}
			if time.Since(died) > 15*time.Second {
				t.Fatalf("15 s after C died: %v (before: %v)", got, before)
			}
		}
		t.Logf("C's shards passed to A and B %v after it died", time.Since(died).Round(100*time.Millisecond))
		if got := c.held("A", "B"); got["A"] != 3 || got["B"] != 3 {
			t.Errorf("survivors hold %v, want 3 each", got)
		}
	})
}

// TestShardsPausedHolderIsFenced: a replica stopped (as by SIGSTOP) in the
// middle of a pass loses its shards to the others; when it goes on, its
// fenced commits are refused, and it takes shards again afterwards.
func TestShardsPausedHolderIsFenced(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCluster(t, "q1", "q2")
		c.overlapOK = true
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		a := c.start(ctx, "A")
		time.Sleep(3 * time.Second)
		c.start(ctx, "B")
		time.Sleep(10 * time.Second)
		hs := c.shared.holders("placement")
		if hs["q1"] == "" || hs["q1"] == hs["q2"] {
			t.Fatalf("holders before the pause: %v, want one shard each", hs)
		}
		block := make(chan struct{})
		c.mu.Lock()
		c.block["A"] = block
		c.mu.Unlock()
		<-c.blocked // A's next pass stops in its work
		a.stop()
		close(block)
		c.mu.Lock()
		delete(c.block, "A")
		c.mu.Unlock()
		time.Sleep(30 * time.Second)
		if got := c.held("A", "B"); got["B"] != 2 {
			t.Fatalf("30 s into A's pause: %v, want B to hold both shards", got)
		}
		a.cont()
		time.Sleep(100 * time.Millisecond)
		c.mu.Lock()
		refused := c.refused["A"]
		c.mu.Unlock()
		if refused == 0 {
			t.Fatal("A's fenced commit after its pause was not refused")
		}
		time.Sleep(20 * time.Second)
		if got := c.held("A", "B"); got["A"] != 1 || got["B"] != 1 {
			t.Errorf("20 s after A went on: %v, want one shard each again", got)
		}
	})
}

// TestShardsKeyGone: the shard of a key that is gone is given up.
func TestShardsKeyGone(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCluster(t, "q1", "q2")
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		c.start(ctx, "A")
		time.Sleep(2 * time.Second)
		c.mu.Lock()
		c.keys = []string{"q1"}
		c.mu.Unlock()
		time.Sleep(interval)
		synctest.Wait()
		if hs := c.shared.holders("placement"); hs["q2"] != "" || hs["q1"] != "A" {
			t.Fatalf("after q2 went: %v, want q1 alone, A's", hs)
		}
	})
}

// TestShardsGivenUpOnStop: a replica that stops gives its shards and its
// presence up, and the other takes them at its next pass.
func TestShardsGivenUpOnStop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCluster(t, "q1", "q2")
		ctxA, stopA := context.WithCancel(t.Context())
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		c.start(ctxA, "A")
		time.Sleep(100 * time.Millisecond)
		c.start(ctx, "B")
		time.Sleep(10 * time.Second)
		stopA()
		time.Sleep(interval + time.Millisecond)
		synctest.Wait()
		if got := c.held("B"); got["B"] != 2 {
			t.Fatalf("a pass after A stopped: %v, want B to hold both", got)
		}
	})
}

// TestHoldAll: HoldAll holds every key given, without grants, and
// UpdateIn then runs a plain Update.
func TestHoldAll(t *testing.T) {
	h := store.HoldAll("b", "a")
	if fmt.Sprint(h.Keys()) != "[a b]" || !h.Has("a") || h.Has("c") || h.Len() != 2 {
		t.Fatalf("HoldAll: %v", h.Keys())
	}
	if g, ok := h.Grant("a"); !ok || g.Term != 0 {
		t.Fatalf("Grant(a) = %+v, %v", g, ok)
	}
}

package fleetiq

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/hoistgg/hoist/internal/api"
	"github.com/hoistgg/hoist/internal/clocktest"
	"github.com/hoistgg/hoist/internal/store"
	"github.com/hoistgg/hoist/internal/store/postgres"
	"github.com/hoistgg/hoist/internal/store/postgres/pgtest"
	"github.com/hoistgg/hoist/internal/store/postgres/pgtest/pgstore"
)

// newPostgresHarness is newHarness on a PostgreSQL schema of its own
// (skipped without HOIST_TEST_DATABASE_URL).
func newPostgresHarness(t *testing.T) *harness {
	t.Helper()
	st := pgstore.Open(t)
	h := &harness{t: t, ctx: context.Background(), st: st, clock: clocktest.New(t0)}
	h.svc = New(Config{Store: st, Region: "us-west-2", Account: "123456789012", Now: h.clock.Now})
	return h
}

// TestClaimLoopOnPostgres: 16 clients at once loop ClaimGameServer ->
// UpdateGameServer UTILIZED -> AVAILABLE (the load generator's loop) over
// 24 game servers on 4 instances of PostgreSQL: no game server is handed
// to two clients at once, and afterwards every instance's counts match
// its game servers.
func TestClaimLoopOnPostgres(t *testing.T) {
	h := newPostgresHarness(t)
	h.group(seedGroup)
	for i := range 24 {
		h.register(seedGroup, fmt.Sprintf("gs-%02d", i), fmt.Sprintf("i-%d", i%4))
	}
	const clients, cycles = 16, 40
	var mu sync.Mutex
	inUse := map[string]int{}
	var wg sync.WaitGroup
	for c := range clients {
		wg.Go(func() {
			for range cycles {
				out, err := h.svc.ClaimGameServer(h.ctx, &api.ClaimGameServerInput{GameServerGroupName: api.String(seedGroup)})
				if err != nil {
					t.Errorf("client %d: ClaimGameServer: %v", c, err)
					return
				}
				id := api.ToString(out.GameServer.GameServerId)
				mu.Lock()
				if other, ok := inUse[id]; ok {
					t.Errorf("%s claimed by client %d while client %d has it", id, c, other)
				}
				inUse[id] = c
				mu.Unlock()
				for _, st := range []api.GameServerUtilizationStatus{api.GameServerUtilizationStatusUtilized, api.GameServerUtilizationStatusAvailable} {
					if st == api.GameServerUtilizationStatusAvailable {
						mu.Lock()
						delete(inUse, id)
						mu.Unlock()
					}
					if _, err := h.svc.UpdateGameServer(h.ctx, &api.UpdateGameServerInput{GameServerGroupName: api.String(seedGroup),
						GameServerId: api.String(id), UtilizationStatus: st}); err != nil {
						t.Errorf("client %d: UpdateGameServer %s %s: %v", c, id, st, err)
						return
					}
				}
			}
		})
	}
	wg.Wait()
	checkCounts(t, h, seedGroup, 4, 6)
}

// checkCounts checks that the group has instances i-0 ... of perInstance
// game servers each, all available, as their records count them.
func checkCounts(t *testing.T, h *harness, group string, instances, perInstance int) {
	t.Helper()
	err := h.st.View(h.ctx, func(tx store.Tx) error {
		for i := range instances {
			inst, err := loadInstance(h.ctx, tx, group, fmt.Sprintf("i-%d", i))
			if err != nil || inst == nil {
				return fmt.Errorf("instance i-%d: %v %v", i, inst, err)
			}
			n, err := tx.Count(h.ctx, store.Query{Kind: kindServer, Parent: group, HasParent: true,
				Key: availableKey(inst.ID), HasKey: true})
			if err != nil {
				return err
			}
			if inst.Available != perInstance || inst.Busy != 0 || n != perInstance {
				t.Errorf("instance %s counts %d available and %d busy, %d available game servers listed; want %d, 0, %d",
					inst.ID, inst.Available, inst.Busy, n, perInstance, perInstance)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestClaimPassesOverHeldInstance: while another transaction holds the
// busiest instance, a claim on PostgreSQL takes a game server of the next
// one at once instead of waiting for it (or failing over and running
// again after it).
func TestClaimPassesOverHeldInstance(t *testing.T) {
	h := newPostgresHarness(t)
	h.group(seedGroup)
	h.register(seedGroup, "gs-a1", "i-a")
	h.register(seedGroup, "gs-a2", "i-a")
	h.register(seedGroup, "gs-b1", "i-b")
	h.mustClaim(seedGroup, "gs-a2") // i-a is the busiest
	held, release := make(chan struct{}), make(chan struct{})
	holder := make(chan error, 1)
	go func() {
		holder <- h.st.Claim(h.ctx, func(tx store.Tx) error {
			if _, err := tx.Get(h.ctx, kindInstance, instanceID(seedGroup, "i-a")); err != nil {
				return err
			}
			close(held)
			<-release
			return nil
		})
	}()
	<-held
	got := make(chan string, 1)
	go func() {
		g, err := h.claim(seedGroup, "")
		if err != nil {
			t.Errorf("ClaimGameServer: %v", err)
			got <- ""
			return
		}
		got <- api.ToString(g.GameServerId)
	}()
	select {
	case id := <-got:
		if id != "gs-b1" {
			t.Errorf("claimed %q while i-a is held, want gs-b1", id)
		}
	case <-time.After(20 * time.Second):
		t.Error("the claim waited for the transaction holding the busiest instance")
	}
	close(release)
	if err := <-holder; err != nil {
		t.Fatal(err)
	}
	if id := api.ToString(h.mustClaim(seedGroup, "").GameServerId); id != "gs-a1" {
		t.Errorf("once i-a is free, the claim took %s, want gs-a1", id)
	}
}

// fencedLog records the fenced commits of replicas sharing a database.
type fencedLog struct {
	mu      sync.Mutex
	commits []store.Grant
}

// recordingStore is one replica's store: its successful fenced commits go
// to the shared log.
type recordingStore struct {
	store.Store
	log *fencedLog
}

func (r *recordingStore) UpdateFenced(ctx context.Context, g store.Grant, fn func(store.Tx) error) error {
	err := r.Store.UpdateFenced(ctx, g, fn)
	if err == nil {
		r.log.mu.Lock()
		r.log.commits = append(r.log.commits, g)
		r.log.mu.Unlock()
	}
	return err
}

// sweepReplica is one replica of the FleetIQ sweep: its own connection
// pool to the shared database, its presence, its Service.
type sweepReplica struct {
	id     string
	st     *postgres.Store
	svc    *Service
	cancel context.CancelFunc
	done   chan struct{}
}

// startSweepReplica starts replica id's presence and sweep loop (every
// 100 ms; shard leases of 500 ms) on the database of url.
func startSweepReplica(t *testing.T, url, id string, clock *clocktest.Clock, log *fencedLog) *sweepReplica {
	t.Helper()
	st, err := postgres.Open(t.Context(), url, postgres.Options{MaxConns: 4})
	if err != nil {
		t.Fatal(err)
	}
	rs := &recordingStore{Store: st, log: log}
	p := &store.Presence{Store: rs, Holder: id, TTL: 1500 * time.Millisecond}
	svc := New(Config{Store: rs, Region: "us-west-2", Account: "123456789012", Now: clock.Now, ReplicaID: id,
		Replicas: p, Timings: Timings{SweepInterval: 100 * time.Millisecond}})
	ctx, cancel := context.WithCancel(context.Background())
	r := &sweepReplica{id: id, st: st, svc: svc, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(r.done)
		var wg sync.WaitGroup
		wg.Go(func() { _ = p.Run(ctx) })
		_ = svc.Run(ctx)
		wg.Wait()
	}()
	t.Cleanup(func() {
		r.cancel()
		<-r.done
		r.st.Close()
	})
	return r
}

// shardHolders returns each group's shard holder, by the database.
func shardHolders(t *testing.T, st store.Store) map[string]string {
	t.Helper()
	gs, err := st.Leases(t.Context(), store.ShardLeasePrefix(loopName))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, g := range gs {
		out[g.Name[len(store.ShardLeasePrefix(loopName)):]] = g.Holder
	}
	return out
}

// waitFor polls cond every 50 ms until it holds, failing after limit.
func waitFor(t *testing.T, limit time.Duration, what string, cond func() bool) time.Duration {
	t.Helper()
	start := time.Now()
	for !cond() {
		if time.Since(start) > limit {
			t.Fatalf("%s: not within %v", what, limit)
		}
		time.Sleep(50 * time.Millisecond)
	}
	return time.Since(start)
}

// TestShardedSweepOnPostgres: three replicas of the FleetIQ sweep, each
// with its own connection pool to one PostgreSQL database, share six
// game server groups two each; each group's expired claims are released
// by fenced commits of its shard's holder alone; when one replica dies
// (its connections closed, nothing given up), the survivors take its
// groups over and release their claims.
func TestShardedSweepOnPostgres(t *testing.T) {
	url := pgtest.URL(t)
	clock := clocktest.New(t0)
	log := &fencedLog{}
	reps := map[string]*sweepReplica{}
	for _, id := range []string{"A", "B", "C"} {
		reps[id] = startSweepReplica(t, url, id, clock, log)
	}
	h := &harness{t: t, ctx: context.Background(), st: reps["A"].st, clock: clock, svc: reps["A"].svc}
	groups := []string{"g1", "g2", "g3", "g4", "g5", "g6"}
	for _, g := range groups {
		h.group(g)
		h.register(g, "gs-"+g, "i-"+g)
	}
	balanced := func(want map[string]int) func() bool {
		return func() bool {
			got := map[string]int{}
			for _, holder := range shardHolders(t, h.st) {
				got[holder]++
			}
			return fmt.Sprint(got) == fmt.Sprint(want)
		}
	}
	waitFor(t, 15*time.Second, "two groups each", balanced(map[string]int{"A": 2, "B": 2, "C": 2}))
	holders := shardHolders(t, h.st)
	claimAll := func() {
		for _, g := range groups {
			h.mustClaim(g, "")
		}
		clock.Advance(ClaimHold + time.Second)
	}
	released := func() bool {
		for _, g := range groups {
			if h.keys()["gs-"+g] != availableKey("i-"+g) {
				return false
			}
		}
		return true
	}
	log.mu.Lock()
	log.commits = nil
	log.mu.Unlock()
	claimAll()
	waitFor(t, 15*time.Second, "expired claims released", released)
	log.mu.Lock()
	for _, g := range log.commits {
		group := g.Name[len(store.ShardLeasePrefix(loopName)):]
		if g.Holder != holders[group] {
			t.Errorf("group %s swept by %s, its shard's holder is %s", group, g.Holder, holders[group])
		}
	}
	log.mu.Unlock()

	// C dies: its connections close; it gives nothing up.
	reps["C"].st.Close()
	reps["C"].cancel()
	<-reps["C"].done
	took := waitFor(t, 15*time.Second, "C's groups taken over", balanced(map[string]int{"A": 3, "B": 3}))
	t.Logf("C's groups passed to A and B %v after it died", took.Round(10*time.Millisecond))
	claimAll()
	waitFor(t, 15*time.Second, "expired claims released after C died", released)
	h.checkCounts()
}

// TestClaimInstanceQueryReadsInOrder: on PostgreSQL the claim's read,
// the busiest instance with an available game server and that game
// server, is index reads in the order the claim wants, joined in a loop,
// so that it stops at the first instance not held that has an available
// game server not held, rather than reading (and holding) every instance
// of the group: no Sort (what a Rank descending order, ties by ID
// ascending, cost: no index gives that order; a Sort above the join would
// read every instance), no table scan.
func TestClaimInstanceQueryReadsInOrder(t *testing.T) {
	ctx := t.Context()
	url := pgtest.URL(t)
	st, err := postgres.Open(ctx, url, postgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for grp := range 10 {
		group := fmt.Sprintf("g%d", grp)
		err := st.Update(ctx, func(tx store.Tx) error {
			for i := range 200 {
				inst := &instanceRec{Group: group, ID: fmt.Sprintf("i-%03d", i), Status: api.GameServerInstanceStatusActive,
					Available: 10 - i%10, Busy: i % 10}
				if err := putInstance(ctx, tx, inst); err != nil {
					return err
				}
				for j := range 10 {
					g := &serverRec{ID: fmt.Sprintf("%s-%03d-%d", group, i, j), Group: group, Instance: inst.ID, Registered: int64(j)}
					if err := putServer(ctx, tx, g); err != nil {
						return err
					}
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	c, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	if _, err := c.Exec(ctx, "ANALYZE hoist_records"); err != nil {
		t.Fatal(err)
	}
	plan, err := st.ExplainChild(ctx, instanceQuery("g3", api.GameServerInstanceStatusActive), serverQuery("g3"), len(instanceID("g3", "")), true)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(plan, "Sort") || strings.Contains(plan, "Seq Scan") || !strings.Contains(plan, "Nested Loop") ||
		strings.Count(plan, "hoist_records_kind_parent_key_rank") != 2 {
		t.Errorf("the claim's read sorts, scans the table or does not read both indexes in order:\n%s", plan)
	}
	t.Logf("the claim's read:\n%s", plan)
}

// TestClaimCycleRoundTripsOnPostgres pins what the load generator's loop
// costs on PostgreSQL, in round trips to the database (the store's
// Stats.RoundTrips): ClaimGameServer 2 (its instance and game server in
// one statement, then the writes with COMMIT), UpdateGameServer UTILIZED
// 2 and AVAILABLE 2 (its game server and the instance this replica knows
// for it in one batch), for a claim of any game server and of a named
// one.
func TestClaimCycleRoundTripsOnPostgres(t *testing.T) {
	h := newPostgresHarness(t)
	pg := h.st.(*postgres.Store)
	h.group(seedGroup)
	h.register(seedGroup, "gs-1", "i-1")
	h.register(seedGroup, "gs-2", "i-2")
	trips := func(what string, want int64, call func() error) {
		t.Helper()
		before := pg.Stats().RoundTrips
		if err := call(); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if got := pg.Stats().RoundTrips - before; got != want {
			t.Errorf("%s: %d round trips, want %d", what, got, want)
		}
	}
	for _, named := range []bool{false, true} {
		var id string
		trips("ClaimGameServer", 2, func() error {
			in := &api.ClaimGameServerInput{GameServerGroupName: api.String(seedGroup)}
			if named {
				in.GameServerId = api.String("gs-2")
			}
			out, err := h.svc.ClaimGameServer(h.ctx, in)
			if err == nil {
				id = api.ToString(out.GameServer.GameServerId)
			}
			return err
		})
		for _, st := range []api.GameServerUtilizationStatus{api.GameServerUtilizationStatusUtilized, api.GameServerUtilizationStatusAvailable} {
			trips("UpdateGameServer "+string(st), 2, func() error {
				_, err := h.svc.UpdateGameServer(h.ctx, &api.UpdateGameServerInput{GameServerGroupName: api.String(seedGroup),
					GameServerId: api.String(id), UtilizationStatus: st})
				return err
			})
		}
	}
	h.checkCounts()
}

package fleetiq

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/hoistgg/hoist/internal/api"
	"github.com/hoistgg/hoist/internal/clocktest"
	"github.com/hoistgg/hoist/internal/store"
	"github.com/hoistgg/hoist/internal/store/postgres"
	"github.com/hoistgg/hoist/internal/store/postgres/pgtest"
)

// newPostgresHarness is newHarness on a PostgreSQL schema of its own
// (skipped without HOIST_TEST_DATABASE_URL).
func newPostgresHarness(t *testing.T) *harness {
	t.Helper()
	st, err := postgres.Open(t.Context(), pgtest.URL(t), postgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
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

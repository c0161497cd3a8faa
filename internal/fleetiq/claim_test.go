package fleetiq

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/hoistgg/hoist/internal/api"
)

var withDraining = []api.FilterInstanceStatus{api.FilterInstanceStatusActive, api.FilterInstanceStatusDraining}

func TestClaimPacking(t *testing.T) {
	h := newHarness(t, nil)
	h.group(seedGroup)
	// Instance 1: a, b. Instance 2: c, d, e. Instance 3: f. Registered in
	// this order, one millisecond apart; instance 2's servers first.
	for _, r := range []struct{ id, inst string }{
		{"gs-e", instanceN(2)}, {"gs-c", instanceN(2)}, {"gs-d", instanceN(2)},
		{"gs-b", instanceN(1)}, {"gs-a", instanceN(1)}, {"gs-f", instanceN(3)},
	} {
		h.register(seedGroup, r.id, r.inst)
		h.clock.Advance(time.Millisecond)
	}
	// All idle: the lowest instance ID, its oldest game server; then pack
	// that instance until it is full; then the next busiest (a tie: by ID).
	want := []string{"gs-b", "gs-a", "gs-e", "gs-c", "gs-d", "gs-f"}
	var got []string
	for range want {
		got = append(got, *h.mustClaim(seedGroup, "").GameServerId)
		h.checkCounts()
	}
	if !slices.Equal(got, want) {
		t.Fatalf("claim order %v, want %v", got, want)
	}
	if _, err := h.claim(seedGroup, ""); !isErr[*api.OutOfCapacityException](err) {
		t.Fatalf("claim with all claimed: %v", err)
	}
	// Freed game servers: the busiest instance first, even if another
	// instance's game server is older.
	h.utilization(seedGroup, "gs-e", api.GameServerUtilizationStatusUtilized)
	h.utilization(seedGroup, "gs-e", api.GameServerUtilizationStatusAvailable) // instance 2: 2 busy
	h.utilization(seedGroup, "gs-f", api.GameServerUtilizationStatusUtilized)
	h.utilization(seedGroup, "gs-f", api.GameServerUtilizationStatusAvailable) // instance 3: 0 busy
	if id := *h.mustClaim(seedGroup, "").GameServerId; id != "gs-e" {
		t.Errorf("claimed %s, want gs-e on the busier instance", id)
	}
}

func TestClaimSpecific(t *testing.T) {
	h := newHarness(t, nil)
	h.group(seedGroup)
	h.register(seedGroup, "gs-free", instanceN(1))
	h.register(seedGroup, "gs-used", instanceN(1))
	h.register(seedGroup, "gs-claimed", instanceN(1))
	h.register(seedGroup, "gs-drain", instanceN(2))
	h.register(seedGroup, "gs-drain2", instanceN(2))
	h.register(seedGroup, "gs-spot", instanceN(3))
	h.utilization(seedGroup, "gs-used", api.GameServerUtilizationStatusUtilized)
	h.mustClaim(seedGroup, "gs-claimed")
	h.svc.SetInstanceStatus(h.ctx, seedGroup, instanceN(2), "DRAINING")
	h.svc.SetInstanceStatus(h.ctx, seedGroup, instanceN(3), "SPOT_TERMINATING")
	h.group("other")
	tests := map[string]struct {
		group, id string
		filter    []api.FilterInstanceStatus
		check     func(error) bool
	}{
		"utilized":                       {seedGroup, "gs-used", nil, isErr[*api.ConflictException]},
		"claimed":                        {seedGroup, "gs-claimed", nil, isErr[*api.ConflictException]},
		"draining, no filter":            {seedGroup, "gs-drain", nil, isErr[*api.ConflictException]},
		"draining, ACTIVE only":          {seedGroup, "gs-drain", []api.FilterInstanceStatus{"ACTIVE"}, isErr[*api.ConflictException]},
		"draining, filter allows":        {seedGroup, "gs-drain2", withDraining, func(err error) bool { return err == nil }},
		"spot terminating":               {seedGroup, "gs-spot", withDraining, isErr[*api.ConflictException]},
		"filter without ACTIVE":          {seedGroup, "gs-free", []api.FilterInstanceStatus{"DRAINING"}, isErr[*api.InvalidRequestException]},
		"unknown game server":            {seedGroup, "gs-nope", nil, isErr[*api.NotFoundException]},
		"game server of another group":   {"other", "gs-free", nil, isErr[*api.NotFoundException]},
		"unknown group":                  {"nope", "gs-free", nil, isErr[*api.NotFoundException]},
		"available, by the group's ARN ": {h.svc.groupARN(seedGroup), "gs-free", nil, func(err error) bool { return err == nil }},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if _, err := h.claim(tc.group, tc.id, tc.filter...); !tc.check(err) {
				t.Errorf("err = %v", err)
			}
		})
	}
	h.checkCounts()
}

func TestClaimFilterAndCapacity(t *testing.T) {
	h := newHarness(t, nil)
	h.group(seedGroup)
	if _, err := h.claim(seedGroup, ""); !isErr[*api.OutOfCapacityException](err) {
		t.Errorf("empty group: %v", err)
	}
	if _, err := h.claim("nope", ""); !isErr[*api.NotFoundException](err) {
		t.Errorf("unknown group: %v", err)
	}
	if _, err := h.claim(seedGroup, "", "DRAINING"); !isErr[*api.InvalidRequestException](err) {
		t.Errorf("filter without ACTIVE: %v", err)
	}
	h.register(seedGroup, "gs-1", instanceN(1))
	h.register(seedGroup, "gs-2", instanceN(1))
	h.svc.SetInstanceStatus(h.ctx, seedGroup, instanceN(1), "DRAINING")
	if _, err := h.claim(seedGroup, ""); !isErr[*api.OutOfCapacityException](err) {
		t.Errorf("only a draining instance, no filter: %v", err)
	}
	if g := h.mustClaim(seedGroup, "", withDraining...); *g.GameServerId != "gs-1" {
		t.Errorf("claimed %s on the draining instance", *g.GameServerId)
	}
	// An ACTIVE instance is preferred to a busier DRAINING one.
	h.register(seedGroup, "gs-3", instanceN(2))
	if g := h.mustClaim(seedGroup, "", withDraining...); *g.GameServerId != "gs-3" {
		t.Errorf("claimed %s, want gs-3 on the ACTIVE instance", *g.GameServerId)
	}
	h.svc.SetInstanceStatus(h.ctx, seedGroup, instanceN(1), "SPOT_TERMINATING")
	if _, err := h.claim(seedGroup, "", withDraining...); !isErr[*api.OutOfCapacityException](err) {
		t.Errorf("only spot terminating left: %v", err)
	}
	h.checkCounts()
}

func TestClaimGameServerData(t *testing.T) {
	h := newHarness(t, nil)
	h.group(seedGroup)
	h.register(seedGroup, seedServer, seedInstance)
	out, err := h.svc.ClaimGameServer(h.ctx, &api.ClaimGameServerInput{GameServerGroupName: api.String(seedGroup),
		GameServerData: api.String(`{"map":"swamp"}`)})
	if err != nil || *out.GameServer.GameServerData != `{"map":"swamp"}` {
		t.Fatalf("claim: %+v %v", out, err)
	}
	if g := h.describe(seedGroup, seedServer); *g.GameServerData != `{"map":"swamp"}` {
		t.Errorf("stored data %q", *g.GameServerData)
	}
}

func TestClaimExpiry(t *testing.T) {
	h := newHarness(t, nil)
	h.group(seedGroup)
	h.register(seedGroup, seedServer, seedInstance)
	h.mustClaim(seedGroup, "")
	h.clock.Advance(ClaimHold - time.Millisecond)
	if g := h.describe(seedGroup, seedServer); g.ClaimStatus != api.GameServerClaimStatusClaimed {
		t.Fatalf("claim ended early: %+v", g)
	}
	if _, err := h.claim(seedGroup, ""); !isErr[*api.OutOfCapacityException](err) {
		t.Fatalf("second claim while claimed: %v", err)
	}
	h.clock.Advance(time.Millisecond)
	g := h.describe(seedGroup, seedServer)
	if g.ClaimStatus != "" || g.UtilizationStatus != api.GameServerUtilizationStatusAvailable || !g.LastClaimTime.Equal(t0) {
		t.Fatalf("after 60 s: %+v", g)
	}
	// A claim that finds nothing releases the expired claim and takes it.
	if g = h.mustClaim(seedGroup, ""); !g.LastClaimTime.Equal(t0.Add(ClaimHold)) {
		t.Errorf("reclaimed: %+v", g)
	}
	h.checkCounts()
	// A specific claim takes over an expired claim too.
	h.clock.Advance(ClaimHold)
	h.mustClaim(seedGroup, seedServer)
	h.checkCounts()
}

// TestIndexFollowsOrder drives claims against random groups and checks each
// claimed game server against the pure order of order_test.go.
func TestIndexFollowsOrder(t *testing.T) {
	for seed := range uint64(8) {
		t.Run(fmt.Sprint("seed ", seed), func(t *testing.T) {
			r := rand.New(rand.NewPCG(seed, 42))
			h := newHarness(t, nil)
			h.group(seedGroup)
			m := map[string]*modelInstance{}
			for n := range 40 {
				inst := instanceN(r.IntN(6))
				id := fmt.Sprintf("gs-%03d", 40-n)
				h.register(seedGroup, id, inst)
				if m[inst] == nil {
					m[inst] = &modelInstance{c: candidate{ID: inst, Status: active}}
				}
				mi := m[inst]
				mi.free = append(mi.free, &serverRec{ID: id, Registered: ms(h.clock.Now())})
				slices.SortFunc(mi.free, func(a, b *serverRec) int { // claim order, per order_test.go
					if serverBefore(a, b) {
						return -1
					}
					return 1
				})
				mi.c.Available++
				if r.IntN(3) == 0 {
					h.clock.Advance(time.Millisecond)
				}
			}
			for inst, mi := range m {
				if s := []api.GameServerInstanceStatus{active, active, draining, spotTerm}[r.IntN(4)]; s != active {
					h.svc.SetInstanceStatus(h.ctx, seedGroup, inst, string(s))
					mi.c.Status = s
				}
			}
			for {
				filter, statuses := []api.FilterInstanceStatus(nil), []api.GameServerInstanceStatus{active}
				if r.IntN(2) == 0 {
					filter, statuses = withDraining, []api.GameServerInstanceStatus{active, draining}
				}
				var cands []candidate
				for _, mi := range m {
					cands = append(cands, mi.c)
				}
				want, ok := pickInstance(cands, statuses)
				g, err := h.claim(seedGroup, "", filter...)
				if !ok {
					if !isErr[*api.OutOfCapacityException](err) {
						t.Fatalf("model has no candidate, claim: %v %v", g, err)
					}
					if len(filter) > 0 {
						return
					}
					continue
				}
				if err != nil {
					t.Fatal(err)
				}
				mi := m[want.ID]
				if *g.InstanceId != want.ID || *g.GameServerId != mi.free[0].ID {
					t.Fatalf("claimed %s on %s, model wants %s on %s", *g.GameServerId, *g.InstanceId, mi.free[0].ID, want.ID)
				}
				mi.free = mi.free[1:]
				mi.c.Available--
				mi.c.Busy++
			}
		})
	}
}

// modelInstance is the test's model of an instance: its candidate view and
// its available game servers in claim order.
type modelInstance struct {
	c    candidate
	free []*serverRec
}

// TestConcurrentClaims: 64 goroutines claim from a group until it is out
// of capacity; each available game server is handed out exactly once.
func TestConcurrentClaims(t *testing.T) {
	h := newHarness(t, nil)
	h.group(seedGroup)
	const servers = 300
	want := map[string]bool{}
	for n := range servers {
		id := fmt.Sprintf("gs-%04d", n)
		h.register(seedGroup, id, instanceN(n%7))
		if n%10 == 0 { // not available: must never be handed out
			h.utilization(seedGroup, id, api.GameServerUtilizationStatusUtilized)
		} else {
			want[id] = true
		}
	}
	var mu sync.Mutex
	got := map[string]int{}
	var wg sync.WaitGroup
	for range 64 {
		wg.Go(func() {
			for {
				g, err := h.claim(seedGroup, "")
				if isErr[*api.OutOfCapacityException](err) {
					return
				}
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				got[*g.GameServerId]++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(got) != len(want) {
		t.Errorf("%d game servers handed out, want %d", len(got), len(want))
	}
	for id, n := range got {
		if n != 1 || !want[id] {
			t.Errorf("game server %s handed out %d times (available: %v)", id, n, want[id])
		}
	}
	h.checkCounts()
}

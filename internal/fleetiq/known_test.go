package fleetiq

import (
	"context"
	"slices"
	"sync"
	"testing"

	"github.com/hoistgg/hoist/internal/api"
	"github.com/hoistgg/hoist/internal/store"
)

// TestUpdateReadsKnownInstanceTogether: UpdateGameServer AVAILABLE reads
// the game server and the instance this replica knows it by in one
// store.GetRefs; after another replica deregistered the game server and
// registered it again on another instance, the update reads the right
// instance and every count stays true.
func TestUpdateReadsKnownInstanceTogether(t *testing.T) {
	testKnownInstances(t, newHarness(t, nil))
}

// TestUpdateReadsKnownInstanceTogetherOnPostgres is
// TestUpdateReadsKnownInstanceTogether on PostgreSQL, where GetRefs is one
// round trip.
func TestUpdateReadsKnownInstanceTogetherOnPostgres(t *testing.T) {
	testKnownInstances(t, newPostgresHarness(t))
}

func testKnownInstances(t *testing.T, h *harness) {
	// Replica A (traced) and replica B share h's store.
	traced := &tracingStore{Store: h.st}
	a := New(Config{Store: traced, Region: "us-west-2", Account: "123456789012", Now: h.clock.Now})
	b := h.svc
	h.group(seedGroup)
	h.register(seedGroup, "gs-1", "i-1")
	h.register(seedGroup, "gs-2", "i-1")
	h.register(seedGroup, "gs-3", "i-2")
	const utilized, available = api.GameServerUtilizationStatusUtilized, api.GameServerUtilizationStatusAvailable
	// update sets gs-1's status through svc; the reads A's last update
	// made are then traced.reads().
	update := func(svc *Service, st api.GameServerUtilizationStatus) {
		t.Helper()
		traced.reset()
		out, err := svc.UpdateGameServer(h.ctx, &api.UpdateGameServerInput{GameServerGroupName: api.String(seedGroup),
			GameServerId: api.String("gs-1"), UtilizationStatus: st})
		if err != nil || out.GameServer.UtilizationStatus != st {
			t.Fatalf("UpdateGameServer %s: %+v %v", st, out, err)
		}
		h.checkCounts()
	}
	// moveTo has B deregister gs-1 and register it again on inst.
	moveTo := func(inst string) {
		t.Helper()
		if err := b.DeregisterGameServer(h.ctx, &api.DeregisterGameServerInput{GameServerGroupName: api.String(seedGroup), GameServerId: api.String("gs-1")}); err != nil {
			t.Fatal(err)
		}
		h.register(seedGroup, "gs-1", inst)
		h.checkCounts()
	}
	pair := func(inst string) string {
		return "GetRefs " + string(kindServer) + "/gs-1 " + string(kindInstance) + "/" + instanceID(seedGroup, inst)
	}
	wantReads := func(what string, want ...string) {
		t.Helper()
		if got := traced.reads(); !slices.Equal(got, want) {
			t.Errorf("%s read %q, want %q", what, got, want)
		}
	}
	cycle := func(reads ...string) {
		t.Helper()
		if _, err := a.ClaimGameServer(h.ctx, &api.ClaimGameServerInput{GameServerGroupName: api.String(seedGroup), GameServerId: api.String("gs-1")}); err != nil {
			t.Fatal(err)
		}
		update(a, utilized)
		update(a, available)
		wantReads("UpdateGameServer AVAILABLE", reads...)
	}
	// A claimed gs-1 and knows its instance: the update reads both at once.
	cycle(pair("i-1"))
	// B moves gs-1 to i-2; A's UTILIZED learns the new instance, so that
	// its entry holds again.
	moveTo("i-2")
	update(a, utilized)
	update(a, available)
	cycle(pair("i-2"))
	// A stale entry: B moves gs-1 back to i-1 between A's UTILIZED and
	// AVAILABLE; A reads the pair, then the game server's instance.
	update(a, utilized)
	moveTo("i-1")
	update(b, utilized)
	update(a, available)
	wantReads("AVAILABLE with a stale entry", pair("i-2"), "Get "+string(kindInstance)+"/"+instanceID(seedGroup, "i-1"))
	// A claim of the game server by name reads it with its instance too;
	// with a stale entry (B moved it to i-2), then the right instance.
	claim := func(what string, reads ...string) {
		t.Helper()
		traced.reset()
		if _, err := a.ClaimGameServer(h.ctx, &api.ClaimGameServerInput{GameServerGroupName: api.String(seedGroup), GameServerId: api.String("gs-1")}); err != nil {
			t.Fatal(err)
		}
		wantReads(what, reads...)
		h.checkCounts()
		update(a, utilized)
		update(a, available)
	}
	update(a, available)
	claim("ClaimGameServer by name", pair("i-1"))
	moveTo("i-2")
	claim("ClaimGameServer by name with a stale entry", pair("i-1"), "Get "+string(kindInstance)+"/"+instanceID(seedGroup, "i-2"))
	// The game server named in another group is not found, as without the
	// entry.
	_, err := a.UpdateGameServer(h.ctx, &api.UpdateGameServerInput{GameServerGroupName: api.String("other"),
		GameServerId: api.String("gs-1"), UtilizationStatus: available})
	if !isErr[*api.NotFoundException](err) {
		t.Errorf("AVAILABLE in another group: %v", err)
	}
}

// tracingStore records the Gets and GetRefs of its Claims.
type tracingStore struct {
	store.Store
	mu  sync.Mutex
	log []string
}

func (s *tracingStore) Claim(ctx context.Context, fn func(tx store.Tx) error) error {
	return s.Store.Claim(ctx, func(tx store.Tx) error { return fn(tracingTx{tx, s}) })
}

func (s *tracingStore) reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.log = nil
}

func (s *tracingStore) reads() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.log...)
}

func (s *tracingStore) note(line string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.log = append(s.log, line)
}

type tracingTx struct {
	store.Tx
	s *tracingStore
}

func (t tracingTx) Get(ctx context.Context, kind store.Kind, id string) (store.Record, error) {
	t.s.note("Get " + string(kind) + "/" + id)
	return t.Tx.Get(ctx, kind, id)
}

func (t tracingTx) GetRefs(ctx context.Context, refs []store.Ref) ([]store.Got, error) {
	line := "GetRefs"
	for _, r := range refs {
		line += " " + string(r.Kind) + "/" + r.ID
	}
	t.s.note(line)
	return store.GetRefs(ctx, t.Tx, refs)
}

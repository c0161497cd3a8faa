package sessions

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/hoistgg/hoist/internal/api"
	"github.com/hoistgg/hoist/internal/search"
	"github.com/hoistgg/hoist/internal/store"
	"github.com/hoistgg/hoist/internal/store/journal"
	"github.com/hoistgg/hoist/internal/store/postgres"
	"github.com/hoistgg/hoist/internal/store/postgres/pgtest"
)

// sharedStores opens the stores two replicas can share in one test
// process: a journal store (one process, but its change feed is the same
// interface) and, when HOIST_TEST_DATABASE_URL is set, PostgreSQL.
func sharedStores(t *testing.T, changeLog int) map[string]func(t *testing.T) store.Store {
	return map[string]func(t *testing.T) store.Store{
		"journal": func(t *testing.T) store.Store {
			st, err := journal.Open(filepath.Join(t.TempDir(), "store"), journal.Options{ChangeLogSize: changeLog})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { st.Close() })
			return st
		},
		"postgres": func(t *testing.T) store.Store {
			url := pgtest.URL(t)
			st, err := postgres.Open(t.Context(), url, postgres.Options{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { st.Close() })
			return st
		},
	}
}

// twoReplicas returns a harness (replica r1) and a second Service (replica
// r2) on the same store, both with Config.Shared as the server sets it on
// PostgreSQL, and a fleet of n ACTIVE game sessions created through r1
// (property "map" dust or nuke; names "game <i>").
func twoReplicas(t *testing.T, st store.Store, n int) (*harness, *Service, []string) {
	shared := func(c *Config) { c.Shared = true }
	h := newHarnessOn(t, st, shared)
	cfg := h.svc.cfg
	cfg.Store, cfg.ReplicaID = st, "r2"
	other, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	h.addFleet("fleet-1")
	h.addCompute("fleet-1", "i-1", "us-west-2")
	var ids []string
	for i := range n {
		c := h.readyProcess("fleet-1", "i-1", "us-west-2", fmt.Sprintf("proc-%d", i), int32(7000+i))
		gs, err := h.create("fleet-1", func(in *api.CreateGameSessionInput) {
			in.Name = api.String(fmt.Sprintf("game %d", i))
			in.GameProperties = []api.GameProperty{{Key: api.String("map"), Value: api.String([]string{"dust", "nuke"}[i%2])}}
		})
		h.must(err)
		ids = append(ids, api.ToString(gs.GameSessionId))
		h.must(h.sdk.ActivateGameSession(h.ctx, c, ids[i]))
	}
	return h, other, ids
}

// searchOn runs a search of fleet-1 on svc and returns the IDs found, all
// pages.
func searchOn(t *testing.T, svc *Service, filter string) []string {
	t.Helper()
	in := &api.SearchGameSessionsInput{FleetId: api.String("fleet-1")}
	if filter != "" {
		in.FilterExpression = api.String(filter)
	}
	var got []string
	for {
		out, err := svc.SearchGameSessions(context.Background(), in)
		if err != nil {
			t.Fatalf("search %q: %v", filter, err)
		}
		for _, gs := range out.GameSessions {
			got = append(got, api.ToString(gs.GameSessionId))
		}
		if out.NextToken == nil {
			slices.Sort(got)
			return got
		}
		in.NextToken = out.NextToken
	}
}

func sortedIDs(ids ...string) []string {
	out := slices.Clone(ids)
	slices.Sort(out)
	if out == nil {
		out = []string{}
	}
	return out
}

func wantIDs(t *testing.T, what string, got, want []string) {
	t.Helper()
	if got == nil {
		got = []string{}
	}
	if !slices.Equal(got, sortedIDs(want...)) {
		t.Errorf("%s: found %v, want %v", what, got, sortedIDs(want...))
	}
}

// wantFound is wantIDs for a search on svc of another replica's writes:
// the change feed gives them once every transaction that began before
// them has ended, on PostgreSQL in the whole cluster (another test's,
// autovacuum's, a replica's ANALYZE: docs/sessions.md, "The bound"), so
// the search is run again until it finds them, for at most 20 s.
func wantFound(t *testing.T, what string, svc *Service, filter string, want []string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		got := searchOn(t, svc, filter)
		if slices.Equal(got, sortedIDs(want...)) || time.Now().After(deadline) {
			wantIDs(t, what, got, want)
			return
		}
		time.Sleep(10 * time.Millisecond) // polling interval, not a wait for time to pass
	}
}

// Game session writes made through one replica reach the search index of
// another sharing the store, through the change feed; each replica sees
// its own writes at once.
func TestSearchOnSeveralReplicas(t *testing.T) {
	for name, open := range sharedStores(t, 0) {
		t.Run(name, func(t *testing.T) {
			h, other, ids := twoReplicas(t, open(t), 4)
			wantIDs(t, "first search on r2", searchOn(t, other, ""), ids)

			// Writes through r1 after r2 loaded the fleet.
			_, err := h.svc.UpdateGameSession(h.ctx, &api.UpdateGameSessionInput{GameSessionId: api.String(ids[0]),
				Name: api.String("renamed"), GameProperties: []api.GameProperty{{Key: api.String("map"), Value: api.String("mirage")}}})
			h.must(err)
			_, err = h.svc.CreatePlayerSessions(h.ctx, &api.CreatePlayerSessionsInput{GameSessionId: api.String(ids[1]),
				PlayerIds: []string{"player-1", "player-2"}})
			h.must(err)
			_, err = h.svc.TerminateGameSession(h.ctx, &api.TerminateGameSessionInput{GameSessionId: api.String(ids[2]),
				TerminationMode: api.TerminationModeForceTerminate})
			h.must(err)
			c := h.readyProcess("fleet-1", "i-1", "us-west-2", "proc-new", 7100)
			gs, err := h.create("fleet-1", func(in *api.CreateGameSessionInput) { in.Name = api.String("new") })
			h.must(err)
			newID := api.ToString(gs.GameSessionId)
			h.must(h.sdk.ActivateGameSession(h.ctx, c, newID))

			wantFound(t, "renamed on r2", other, "gameSessionName = 'renamed'", []string{ids[0]})
			wantFound(t, "new property on r2", other, "gameSessionProperties.map = 'mirage'", []string{ids[0]})
			wantFound(t, "players on r2", other, "playerSessionCount = 2", []string{ids[1]})
			wantFound(t, "created on r1, searched on r2", other, "gameSessionName = 'new'", []string{newID})
			wantFound(t, "all on r2", other, "", []string{ids[0], ids[1], ids[3], newID})

			// r2's own write, seen by r2 at once and by r1.
			_, err = other.UpdateGameSession(h.ctx, &api.UpdateGameSessionInput{GameSessionId: api.String(ids[3]),
				Name: api.String("by r2")})
			h.must(err)
			wantIDs(t, "own write on r2", searchOn(t, other, "gameSessionName = 'by r2'"), []string{ids[3]})
			wantFound(t, "r2's write on r1", h.svc, "gameSessionName = 'by r2'", []string{ids[3]})
		})
	}
}

// A replica whose feed position fell out of the feed (ErrChangesLost: here
// a change log of 64 entries overrun by 200 writes) starts its index
// again from the store and answers correctly.
func TestSearchIndexRebuildsWhenChangesLost(t *testing.T) {
	st := sharedStores(t, 64)["journal"](t)
	h, other, ids := twoReplicas(t, st, 4)
	wantIDs(t, "first search on r2", searchOn(t, other, ""), ids)
	for i := range 200 {
		_, err := h.svc.UpdateGameSession(h.ctx, &api.UpdateGameSessionInput{GameSessionId: api.String(ids[i%4]),
			Name: api.String(fmt.Sprintf("name %d", i))})
		h.must(err)
	}
	if _, _, err := st.Changes(h.ctx, other.search.pos, 0); err != store.ErrChangesLost {
		t.Fatalf("r2's position after 200 writes: %v, want ErrChangesLost", err)
	}
	wantIDs(t, "last name on r2", searchOn(t, other, "gameSessionName = 'name 199'"), []string{ids[3]})
	wantIDs(t, "all on r2", searchOn(t, other, ""), ids)
}

// Between searches the follower's step (what followShared runs every
// Timings.SearchFollow) brings the index up to date: a search then finds
// nothing left to read.
func TestSearchFollowerStep(t *testing.T) {
	h, other, ids := twoReplicas(t, sharedStores(t, 0)["journal"](t), 2)
	wantIDs(t, "first search on r2", searchOn(t, other, ""), ids)
	_, err := h.svc.UpdateGameSession(h.ctx, &api.UpdateGameSessionInput{GameSessionId: api.String(ids[1]),
		Name: api.String("followed")})
	h.must(err)
	x := other.search
	x.refreshMu.Lock()
	err = x.refreshShared(h.ctx, other.cfg.Store, "")
	x.refreshMu.Unlock()
	h.must(err)
	got, _ := x.find("fleet-1", searchRequest{filter: mustFilter(t, "gameSessionName = 'followed'"), limit: 20})
	wantIDs(t, "index after the follower's step", sortedIDs(got...), []string{ids[1]})
	chs, _, err := other.cfg.Store.Changes(h.ctx, x.pos, 0)
	if err != nil || len(chs) != 0 {
		t.Fatalf("changes left after the follower's step: %d, %v", len(chs), err)
	}
}

// Searches on one replica while another writes: after the writes, every
// search sees them all (run with -race).
func TestSearchWhileAnotherReplicaWrites(t *testing.T) {
	h, other, ids := twoReplicas(t, sharedStores(t, 0)["journal"](t), 4)
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for range 4 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				if _, err := other.SearchGameSessions(context.Background(), &api.SearchGameSessionsInput{
					FleetId: api.String("fleet-1"), FilterExpression: api.String("gameSessionName <> 'x'")}); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	for i := range 100 {
		_, err := h.svc.UpdateGameSession(h.ctx, &api.UpdateGameSessionInput{GameSessionId: api.String(ids[i%4]),
			Name: api.String(fmt.Sprintf("name %d", i))})
		h.must(err)
	}
	close(stop)
	wg.Wait()
	for i := 96; i < 100; i++ {
		wantIDs(t, "last names on r2", searchOn(t, other, fmt.Sprintf("gameSessionName = 'name %d'", i)), []string{ids[i%4]})
	}
}

func mustFilter(t *testing.T, expr string) search.Expr {
	t.Helper()
	e, err := search.ParseFilter(expr)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

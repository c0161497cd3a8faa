package placement

import (
	"fmt"
	"testing"

	"github.com/hoistgg/hoist/internal/api"
	"github.com/hoistgg/hoist/internal/store/postgres"
	"github.com/hoistgg/hoist/internal/store/postgres/pgtest"
)

// TestAttemptsAtOnceTakeDistinctProcessesOnPostgres: one pass of the loop
// on PostgreSQL attempts its placements at once (workers), and they take
// different processes without a transaction run again: each attempt's
// Claim passes over the processes the others hold, instead of every
// attempt reading the fleet's first idle process and all but one losing
// the race (serializable conflicts, then serial reruns). Exactly once:
// every placement has a game session, each on a process of its own.
func TestAttemptsAtOnceTakeDistinctProcessesOnPostgres(t *testing.T) {
	st, err := postgres.Open(t.Context(), pgtest.URL(t), postgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	h := newHarnessOn(t, st)
	h.addFleet("fleet-a", "us-west-2")
	const n = 3 * workers
	for i := range n {
		h.readyDud("fleet-a", "us-west-2", fmt.Sprintf("p%d", i), int32(7000+i)) // keeps its game session ACTIVATING
	}
	h.queue("q1", nil, fleetARN("fleet-a"))
	for i := range n {
		h.start("q1", fmt.Sprintf("pl-%d", i), nil)
	}
	before := st.Stats()
	h.must(h.svc.Process(h.ctx))
	after := st.Stats()
	ports := map[int32]string{}
	for i := range n {
		id := fmt.Sprintf("pl-%d", i)
		pl := h.describe(id)
		if pl.Status != api.GameSessionPlacementStatePending || pl.GameSessionId == nil {
			t.Fatalf("placement %s is %s with game session %v, want PENDING with an attempt", id, pl.Status, pl.GameSessionId)
		}
		port := api.ToInt32(h.gameSession(*pl.GameSessionId).Port)
		if other, ok := ports[port]; ok {
			t.Fatalf("placements %s and %s were both placed on the process of port %d", other, id, port)
		}
		ports[port] = id
	}
	if r := after.Retries - before.Retries; r != 0 {
		t.Errorf("the pass ran %d transactions again after a conflict, want 0 (%d commits)", r, after.Commits-before.Commits)
	}
}

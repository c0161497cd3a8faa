package replicas

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/hoistgg/hoist/internal/store"
)

// register registers replica id on st, as it does at start.
func register(t *testing.T, st store.Store, id string) *Registry {
	t.Helper()
	r := &Registry{Store: st, Self: Record{ID: id, Addresses: []string{"http://" + id}}}
	if err := r.Register(t.Context()); err != nil {
		t.Fatal(err)
	}
	return r
}

// die makes replica id's registration expire, as kill -9 and its TTL do.
func die(t *testing.T, st store.Store, id string) {
	t.Helper()
	if _, _, err := st.AcquireLease(t.Context(), LeasePrefix+id, id, 0); err != nil {
		t.Fatal(err)
	}
}

// TestJanitorRemovesDeadReplicas: of three registered replicas, the one
// whose registration expired is counted out by Live, cleared by the
// janitor (its Clearers run, its inbox goes to the target's new holder or
// is dropped), and its record removed; the live ones are left alone.
func TestJanitorRemovesDeadReplicas(t *testing.T) {
	eachStore(t, func(t *testing.T, open func(int) []store.Store) {
		st := open(1)[0]
		a, b := register(t, st, "A"), register(t, st, "B")
		register(t, st, "C")
		if n, err := a.Live(t.Context()); err != nil || n != 3 {
			t.Fatalf("Live = %d, %v; want 3", n, err)
		}
		ib, sa := replica(st, "A", time.Hour)
		hold(t, st, "moved", "A")
		hold(t, st, "lost", "")
		for _, target := range []string{"moved", "lost"} {
			if _, err := post(t.Context(), st, ib, "C", Target(TargetProcess, target)); err != nil {
				t.Fatal(err)
			}
		}
		die(t, st, "C")
		if n, err := b.Live(t.Context()); err != nil || n != 2 {
			t.Fatalf("Live with C dead = %d, %v; want 2", n, err)
		}
		var cleared []string
		j := &Janitor{Store: st, Holder: "A", Inbox: ib, Clear: []Clearer{func(ctx context.Context, g Gone) error {
			return st.Update(ctx, func(tx store.Tx) error {
				still, err := g.Still(ctx, tx)
				if err == nil && still {
					cleared = append(cleared, g.ID)
				}
				return err
			})
		}}}
		if err := j.Pass(t.Context()); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(cleared, []string{"C"}) {
			t.Fatalf("cleared %v, want [C]", cleared)
		}
		recs, err := List(t.Context(), st)
		if err != nil || len(recs) != 2 || recs[0].ID != "A" || recs[1].ID != "B" || recs[0].Expires.IsZero() {
			t.Fatalf("registered after the pass: %+v, %v; want A and B, live", recs, err)
		}
		// C's message for "moved" went to A's inbox; the one for "lost" was dropped.
		if err := ib.Pass(t.Context()); err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(sa.of("moved"), sa.dropped) != "[1] [1]" {
			t.Fatalf("delivered %v, dropped %v; want [1] and [1]", sa.of("moved"), sa.dropped)
		}
	})
}

// TestJanitorSparesAReplicaBackInTime: a replica that registers again
// (it was paused, or restarted on its data directory) after the janitor
// marked it gone is not cleared from then on.
func TestJanitorSparesAReplicaBackInTime(t *testing.T) {
	eachStore(t, func(t *testing.T, open func(int) []store.Store) {
		st := open(1)[0]
		register(t, st, "A")
		b := register(t, st, "B")
		die(t, st, "B")
		recs, err := List(t.Context(), st)
		if err != nil {
			t.Fatal(err)
		}
		j := &Janitor{Store: st, Holder: "A", Now: time.Now}
		gone, err := j.markGone(t.Context(), recs[1])
		if err != nil || gone == nil {
			t.Fatalf("markGone: %v, %v", gone, err)
		}
		lost := false
		b.OnLost = func() { lost = true }
		if err := b.renewOnce(t.Context()); err != nil || !lost {
			t.Fatalf("B's renewal: %v, OnLost called: %v", err, lost)
		}
		err = st.View(t.Context(), func(tx store.Tx) error {
			still, err := gone.Still(t.Context(), tx)
			if still {
				t.Error("B still counts as gone after it registered again")
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		if err := j.Pass(t.Context()); err != nil {
			t.Fatal(err)
		}
		if recs, _ := List(t.Context(), st); len(recs) != 2 || recs[1].Gone || recs[1].Expires.IsZero() {
			t.Fatalf("after B came back: %+v; want B registered, live", recs)
		}
	})
}

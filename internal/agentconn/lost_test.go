package agentconn

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hoistgg/hoist/internal/api"
	"github.com/hoistgg/hoist/internal/hosting"
	"github.com/hoistgg/hoist/internal/store"
	"github.com/hoistgg/hoist/internal/store/journal"
	"github.com/hoistgg/hoist/internal/store/storetest"
)

// fakeFleets records what the endpoint asks of fleets.
type fakeFleets struct {
	Fleets
	impaired map[string]bool
}

func (f *fakeFleets) SetComputeImpaired(_ context.Context, _ store.Tx, fleetID, computeName string, impaired bool) error {
	f.impaired[fleetID+"/"+computeName] = impaired
	return nil
}

type noSessions struct{}

func (noSessions) EndProcess(context.Context, string, string) error { return nil }

// TestFindLost: an agent is lost HeartbeatTimeout after its last heartbeat
// (its compute IMPAIRED, HasAgent false), but not in the first
// HeartbeatTimeout after Hoist started; the record of a compute that is
// gone is deleted. A fake clock drives it.
func TestFindLost(t *testing.T) {
	ctx := context.Background()
	st, err := journal.Open(t.TempDir(), journal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	now := start
	ff := &fakeFleets{impaired: map[string]bool{}}
	s, err := New(Config{Store: st, Fleets: ff, Sessions: noSessions{}, Now: func() time.Time { return now },
		Timings: Timings{HeartbeatTimeout: time.Minute}})
	if err != nil {
		t.Fatal(err)
	}
	err = st.Update(ctx, func(tx store.Tx) error {
		f := hosting.Fleet{Attributes: api.FleetAttributes{FleetId: api.String("fleet-1"), Status: api.FleetStatusActive,
			ComputeType: api.ComputeTypeAnywhere}}
		if err := store.PutJSON(ctx, tx, store.Record{Kind: hosting.KindFleet, ID: "fleet-1"}, f); err != nil {
			return err
		}
		c := hosting.Compute{FleetID: "fleet-1", ComputeName: "c1", Status: api.ComputeStatusActive}
		if err := store.PutJSON(ctx, tx, store.Record{Kind: hosting.KindCompute, ID: "fleet-1/c1", Parent: "fleet-1"}, c); err != nil {
			return err
		}
		for _, name := range []string{"c1", "gone"} {
			if err := s.putAgent(ctx, tx, &agentRec{FleetID: "fleet-1", ComputeName: name, LastHeartbeat: start.Add(-time.Hour)}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	hasAgent := func(name string) bool {
		var ok bool
		if err := st.View(ctx, func(tx store.Tx) error {
			ok, err = s.HasAgent(ctx, tx, "fleet-1", name)
			return err
		}); err != nil {
			t.Fatal(err)
		}
		return ok
	}
	now = start.Add(59 * time.Second) // within the start grace
	if err := s.FindLost(ctx); err != nil || len(ff.impaired) != 0 || !hasAgent("c1") {
		t.Fatalf("during the start grace: %v, impaired %v", err, ff.impaired)
	}
	now = start.Add(time.Minute)
	if err := s.FindLost(ctx); err != nil {
		t.Fatal(err)
	}
	if !ff.impaired["fleet-1/c1"] || hasAgent("c1") {
		t.Errorf("after the grace: impaired %v, HasAgent %v", ff.impaired, hasAgent("c1"))
	}
	if _, ok := ff.impaired["fleet-1/gone"]; ok || hasAgent("gone") {
		t.Errorf("the agent of a deregistered compute: impaired %v, HasAgent %v", ff.impaired, hasAgent("gone"))
	}
	err = st.View(ctx, func(tx store.Tx) error {
		_, err := tx.Get(ctx, kindAgent, "fleet-1/gone")
		if err != store.ErrNotFound {
			t.Errorf("the record of a deregistered compute's agent: %v", err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestLostLoopFailover: when the replica running the lost-agent loop dies
// (its lease left held), another replica's loop takes it over within 15 s.
func TestLostLoopFailover(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st, err := journal.Open(t.TempDir(), journal.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		run := func(ctx context.Context, replica string) {
			s, err := New(Config{Store: st, Fleets: &fakeFleets{impaired: map[string]bool{}}, Sessions: noSessions{},
				ReplicaID: replica})
			if err != nil {
				t.Error(err)
				return
			}
			_ = s.Run(ctx)
		}
		storetest.LeaseFailover(t, st, leaseName, "the loop", 6*time.Second, run)
	})
}

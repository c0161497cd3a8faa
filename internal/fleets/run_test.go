package fleets

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hoistgg/hoist/internal/api"
)

// TestRun drives the reconciler loop with fake time: a change wakes it at
// once, ticks keep it running, only the lease holder acts, and it stops
// with its context.
func TestRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, func(c *Config) { c.Now = time.Now; c.Timings.ReconcileInterval = 10 * time.Second })
		// A second replica sharing the store must stay idle while r1
		// holds the lease.
		other, err := New(Config{Store: h.st, Region: "us-west-2", Builds: h.builds, Provider: &fakeProvider{dir: t.TempDir(),
			instances: map[string]*fakeInstance{}}, Now: time.Now, ReplicaID: "r2", Timings: Timings{ReconcileInterval: time.Second}})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() {
			h.svc.Run(ctx)
			close(done)
		}()
		time.Sleep(10 * time.Second) // first tick: r1 takes the lease
		synctest.Wait()
		go other.Run(ctx)

		id := h.createFleet(ec2Input(1)) // wakes r1's loop
		synctest.Wait()
		if got := h.prov.started(); len(got) != 1 {
			t.Fatalf("instances started right after CreateFleet: %v", got)
		}
		inst := h.prov.started()[0]
		h.setUp(inst)
		h.ready(id, inst, h.launch(inst))
		time.Sleep(10 * time.Second)
		synctest.Wait()
		if c := h.compute(id, inst); c.Status != api.ComputeStatusActive {
			t.Fatalf("instance is %s after a tick", c.Status)
		}
		if got := other.cfg.Provider.(*fakeProvider).started(); len(got) != 0 {
			t.Fatalf("the replica without the lease started %v", got)
		}
		cancel()
		<-done
	})
}

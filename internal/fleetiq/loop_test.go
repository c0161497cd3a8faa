package fleetiq

import (
	"context"
	"errors"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hoistgg/hoist/internal/api"
	"github.com/hoistgg/hoist/internal/store"
)

// inBubble runs fn in a synctest bubble with a harness whose clock is the
// bubble's (fake) time, and Run going; it stops Run before returning.
func inBubble(t *testing.T, edit func(*Config), fn func(h *harness)) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, func(c *Config) {
			c.Now = time.Now
			if edit != nil {
				edit(c)
			}
		})
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error)
		go func() { done <- h.svc.Run(ctx) }()
		fn(h)
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
}

func TestRunReleasesExpiredClaims(t *testing.T) {
	inBubble(t, nil, func(h *harness) {
		h.group(seedGroup)
		h.register(seedGroup, seedServer, seedInstance)
		h.register(seedGroup, "gs-2", seedInstance)
		h.mustClaim(seedGroup, seedServer)
		time.Sleep(ClaimHold - time.Millisecond)
		synctest.Wait()
		if k := h.keys()[seedServer]; k != keyClaimed {
			t.Fatalf("key before 60 s = %q", k)
		}
		time.Sleep(DefaultSweepInterval + time.Millisecond)
		synctest.Wait()
		if k := h.keys()[seedServer]; k != availableKey(seedInstance) {
			t.Fatalf("key after 60 s and a sweep = %q, want released", k)
		}
		h.checkCounts()
	})
}

func TestRunHealthExpiry(t *testing.T) {
	inBubble(t, nil, func(h *harness) {
		h.group(seedGroup)
		h.register(seedGroup, "gs-silent", seedInstance)
		h.register(seedGroup, "gs-healthy", seedInstance)
		h.register(seedGroup, "gs-alone", instanceN(2))
		h.utilization(seedGroup, "gs-silent", api.GameServerUtilizationStatusUtilized)
		report := func() {
			_, err := h.svc.UpdateGameServer(h.ctx, &api.UpdateGameServerInput{GameServerGroupName: api.String(seedGroup),
				GameServerId: api.String("gs-healthy"), HealthCheck: api.GameServerHealthCheckHealthy})
			if err != nil {
				t.Fatal(err)
			}
		}
		for range 4 { // health checks every 60 s from gs-healthy only
			time.Sleep(time.Minute)
			report()
		}
		time.Sleep(time.Minute - 2*time.Second) // 1 s before HealthExpiry
		synctest.Wait()
		if h.describe(seedGroup, "gs-silent") == nil {
			t.Fatal("deregistered before HealthExpiry")
		}
		time.Sleep(2*time.Second + DefaultSweepInterval)
		synctest.Wait()
		if h.describe(seedGroup, "gs-silent") != nil || h.describe(seedGroup, "gs-alone") != nil {
			t.Fatal("silent game servers still registered after HealthExpiry")
		}
		if h.describe(seedGroup, "gs-healthy") == nil {
			t.Fatal("the reporting game server was deregistered")
		}
		if got := h.instances(seedGroup); !slices.Equal(got, []string{seedInstance + "=ACTIVE"}) {
			t.Errorf("instances = %v", got)
		}
		h.checkCounts()
		time.Sleep(DefaultHealthExpiry)
		synctest.Wait()
		if h.describe(seedGroup, "gs-healthy") != nil {
			t.Error("gs-healthy stopped reporting but is still registered")
		}
	})
}

func TestRunNoHealthExpiry(t *testing.T) {
	inBubble(t, func(c *Config) { c.HealthExpiry = -1 }, func(h *harness) {
		h.group(seedGroup)
		h.register(seedGroup, seedServer, seedInstance)
		time.Sleep(2 * DefaultHealthExpiry)
		synctest.Wait()
		if h.describe(seedGroup, seedServer) == nil {
			t.Error("deregistered with health expiry off")
		}
	})
}

// storedGroup returns a group record's stored Key ("" when gone).
func (h *harness) storedGroup(name string) string {
	h.t.Helper()
	var key string
	err := h.st.View(h.ctx, func(tx store.Tx) error {
		rec, err := tx.Get(h.ctx, kindGroup, name)
		if errors.Is(err, store.ErrNotFound) {
			return nil
		}
		key = rec.Key
		return err
	})
	if err != nil {
		h.t.Fatal(err)
	}
	return key
}

func TestRunGroupStatuses(t *testing.T) {
	inBubble(t, nil, func(h *harness) {
		h.group(seedGroup)
		if k := h.storedGroup(seedGroup); k != string(statusNew) {
			t.Fatalf("stored %q", k)
		}
		time.Sleep(2*DefaultStatusStep + DefaultSweepInterval)
		synctest.Wait()
		if k := h.storedGroup(seedGroup); k != string(statusActive) {
			t.Fatalf("stored %q after two steps, want ACTIVE", k)
		}
		if _, err := h.svc.DeleteGameServerGroup(h.ctx, &api.DeleteGameServerGroupInput{GameServerGroupName: api.String(seedGroup)}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(2*DefaultStatusStep + DefaultSweepInterval)
		synctest.Wait()
		if k := h.storedGroup(seedGroup); k != string(statusDeleted) {
			t.Fatalf("stored %q, want DELETED", k)
		}
		time.Sleep(DefaultDeletedRetention)
		synctest.Wait()
		if k := h.storedGroup(seedGroup); k != "" {
			t.Fatalf("stored %q after the retention, want removed", k)
		}
	})
}

// TestRunNeedsLease: while another replica holds the group's shard, Run
// does not sweep it (claims end lazily all the same); once its lease
// lapses, Run takes the shard over.
func TestRunNeedsLease(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, func(c *Config) { c.Now = time.Now; c.ReplicaID = "replica-b" })
		ok, err := h.st.Lease(h.ctx, store.ShardLeasePrefix(loopName)+seedGroup, "replica-a", time.Now(), 2*time.Minute)
		if err != nil || !ok {
			t.Fatalf("lease: %v %v", ok, err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error)
		go func() { done <- h.svc.Run(ctx) }()
		h.group(seedGroup)
		h.register(seedGroup, seedServer, seedInstance)
		h.mustClaim(seedGroup, "")
		time.Sleep(ClaimHold + 5*time.Second)
		synctest.Wait()
		if k := h.keys()[seedServer]; k != keyClaimed {
			t.Errorf("swept without the lease: key %q", k)
		}
		if g := h.describe(seedGroup, seedServer); g.ClaimStatus != "" {
			t.Errorf("expired claim still reads CLAIMED")
		}
		time.Sleep(time.Minute)
		synctest.Wait()
		if k := h.keys()[seedServer]; k != availableKey(seedInstance) {
			t.Errorf("after the lease lapsed: key %q", k)
		}
		cancel()
		<-done
	})
}

// TestSweepFencedByGroupLease: a sweep pass holding a group's grant that
// another replica has since taken over releases nothing there: its write
// is refused (ErrLeaseLost); with the current grant it releases.
func TestSweepFencedByGroupLease(t *testing.T) {
	h := newHarness(t, nil)
	h.group(seedGroup)
	h.register(seedGroup, seedServer, seedInstance)
	h.mustClaim(seedGroup, seedServer)
	h.clock.Advance(ClaimHold + time.Second)
	name := store.ShardLeasePrefix(loopName) + seedGroup
	lease := func(holder string, ttl time.Duration) store.Grant {
		g, _, err := h.st.AcquireLease(h.ctx, name, holder, ttl)
		if err != nil {
			t.Fatal(err)
		}
		return g
	}
	stale := lease("replica-a", time.Minute)
	lease("replica-a", 0)
	current := lease("replica-b", time.Minute)
	err := h.svc.sweepHeld(h.ctx, store.HeldOf(map[string]store.Grant{seedGroup: stale}))
	if !errors.Is(err, store.ErrLeaseLost) {
		t.Fatalf("a sweep with a stale grant: %v, want ErrLeaseLost", err)
	}
	if k := h.keys()[seedServer]; k != keyClaimed {
		t.Fatalf("after the refused sweep the claim's key is %q, want it still claimed", k)
	}
	if err := h.svc.sweepHeld(h.ctx, store.HeldOf(map[string]store.Grant{seedGroup: current})); err != nil {
		t.Fatal(err)
	}
	if k := h.keys()[seedServer]; k != availableKey(seedInstance) {
		t.Fatalf("after the holder's sweep the key is %q, want released", k)
	}
}

// TestSweepRewritesEarlierInstanceRanks: instance records an earlier Hoist
// wrote, with the busy count as Rank, are rewritten by the sweep with
// minus the count, after which a claim takes from the busiest instance
// again.
func TestSweepRewritesEarlierInstanceRanks(t *testing.T) {
	h := newHarness(t, nil)
	h.group(seedGroup)
	for _, gs := range []struct{ id, inst string }{{"a1", "i-a"}, {"a2", "i-a"}, {"a3", "i-a"}, {"b1", "i-b"}, {"b2", "i-b"}, {"b3", "i-b"}} {
		h.register(seedGroup, gs.id, gs.inst)
	}
	h.mustClaim(seedGroup, "a1")
	h.mustClaim(seedGroup, "b1")
	h.mustClaim(seedGroup, "b2") // i-b is the busiest: 2 against 1
	earlier := func(tx store.Tx, inst string) error {
		rec, err := tx.Get(h.ctx, kindInstance, instanceID(seedGroup, inst))
		if err != nil {
			return err
		}
		i, err := decode[instanceRec](rec)
		if err != nil {
			return err
		}
		rec.Rank = int64(i.Busy) // as an earlier Hoist stored it
		return tx.Put(h.ctx, rec)
	}
	err := h.st.Update(h.ctx, func(tx store.Tx) error {
		return errors.Join(earlier(tx, "i-a"), earlier(tx, "i-b"))
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := h.svc.Sweep(h.ctx); err != nil {
		t.Fatal(err)
	}
	err = h.st.View(h.ctx, func(tx store.Tx) error {
		for inst, want := range map[string]int64{"i-a": -1, "i-b": -2} {
			rec, err := tx.Get(h.ctx, kindInstance, instanceID(seedGroup, inst))
			if err != nil {
				return err
			}
			if rec.Rank != want {
				t.Errorf("%s: Rank %d after the sweep, want %d", inst, rec.Rank, want)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if g := h.mustClaim(seedGroup, ""); api.ToString(g.InstanceId) != "i-b" {
		t.Errorf("claimed %s on %s, want the busiest instance i-b", api.ToString(g.GameServerId), api.ToString(g.InstanceId))
	}
}

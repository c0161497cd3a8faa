package hosts

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hoistgg/hoist/internal/api"
	"github.com/hoistgg/hoist/internal/clocktest"
	"github.com/hoistgg/hoist/internal/fleets"
	"github.com/hoistgg/hoist/internal/hosting"
	"github.com/hoistgg/hoist/internal/hosts/hostproto"
	"github.com/hoistgg/hoist/internal/store"
	"github.com/hoistgg/hoist/internal/store/journal"
)

// nopProvider stands for the in-process provider.
type nopProvider struct{}

func (nopProvider) Layout(f, i string) fleets.InstanceLayout {
	return fleets.InstanceLayout{Dir: "/local/" + f + "/" + i}
}
func (nopProvider) StartInstance(context.Context, fleets.InstanceSpec, fleets.Hooks) error {
	return nil
}
func (nopProvider) UpdateRuntimeConfiguration(string, api.RuntimeConfiguration) {}
func (nopProvider) StopInstance(string, string) error                           { return fleets.ErrUnknownInstance }
func (nopProvider) StopProcess(string, string) error                            { return fleets.ErrUnknownProcess }
func (nopProvider) KillProcess(string, string) error                            { return fleets.ErrUnknownProcess }
func (nopProvider) Instances() []fleets.InstanceRef                             { return nil }
func (nopProvider) Close() error                                                { return nil }

var t0 = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

// newService is a Service over a fresh store with a fake clock.
func newService(t *testing.T) (*Service, *clocktest.Clock) {
	t.Helper()
	st, err := journal.Open(filepath.Join(t.TempDir(), "store"), journal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	clock := clocktest.New(t0)
	s, err := New(Config{Store: st, Local: nopProvider{}, ReplicaID: "r1", InstanceIP: "127.0.0.1",
		Locations: []string{"us-west-2", "eu-west-1"}, CADER: []byte("ca"), Now: clock.Now,
		Timings: Timings{HeartbeatMin: 10 * time.Second, HeartbeatGrace: 20 * time.Second, StartGrace: time.Minute}})
	if err != nil {
		t.Fatal(err)
	}
	return s, clock
}

// enrolHost enrols a host and marks it connected with an instances dir.
func enrolHost(t *testing.T, s *Service, loc, addr string, capacity int) string {
	t.Helper()
	ctx := context.Background()
	tok, _, err := s.CreateEnrolmentToken(ctx, "pool", time.Hour, 0)
	if err != nil {
		t.Fatal(err)
	}
	out, err := s.enrol(ctx, hostproto.EnrolRequest{Token: tok, Pool: "pool", Location: loc, Address: addr,
		Instances: map[string]int{"*": capacity}})
	if err != nil {
		t.Fatal(err)
	}
	err = s.cfg.Store.Update(ctx, func(tx store.Tx) error {
		h, err := getHost(ctx, tx, out.HostId)
		if err != nil {
			return err
		}
		h.ConnectedTo, h.InstancesDir, h.Interval = "r1", "/var/hoist-agent/instances", 10*time.Second
		return putHost(ctx, tx, h)
	})
	if err != nil {
		t.Fatal(err)
	}
	return out.HostId
}

// place places an instance and records its compute as fleets does.
func place(t *testing.T, s *Service, clock *clocktest.Clock, fleetID, id, loc string) fleets.Placement {
	t.Helper()
	ctx := context.Background()
	var pl fleets.Placement
	err := s.cfg.Store.Update(ctx, func(tx store.Tx) error {
		var err error
		pl, err = s.PlaceInstance(ctx, tx, fleets.PlaceRequest{FleetID: fleetID, InstanceID: id, Location: loc, InstanceType: api.EC2InstanceTypeC5Large})
		if err != nil {
			return err
		}
		c := hosting.Compute{FleetID: fleetID, ComputeName: id, Location: loc, Host: pl.Host, CreationTime: clock.Now(), Status: api.ComputeStatusActive}
		return store.PutJSON(ctx, tx, store.Record{Kind: hosting.KindCompute, ID: fleetID + "/" + id, Parent: fleetID, Key: loc}, &c)
	})
	if err != nil {
		t.Fatal(err)
	}
	return pl
}

// hostState asks InstanceHost about an instance.
func hostState(t *testing.T, s *Service, fleetID, id string) fleets.HostState {
	t.Helper()
	ctx := context.Background()
	var st fleets.HostState
	err := s.cfg.Store.View(ctx, func(tx store.Tx) error {
		c, err := getCompute(ctx, tx, fleetID, id)
		if err != nil {
			return err
		}
		st, err = s.InstanceHost(ctx, tx, c)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func TestPlacementAndLoss(t *testing.T) {
	s, clock := newService(t)
	ctx := context.Background()
	a := enrolHost(t, s, "us-west-2", "198.18.0.10", 2)
	b := enrolHost(t, s, "us-west-2", "198.18.0.11", 2)
	got := map[string]int{}
	for _, id := range []string{"i-1", "i-2", "i-3", "i-4"} {
		pl := place(t, s, clock, "fleet-1", id, "us-west-2")
		got[pl.Host]++
		if !strings.HasPrefix(pl.Layout.Dir, "/var/hoist-agent/instances/fleet-1/") || (pl.IPAddress != "198.18.0.10" && pl.IPAddress != "198.18.0.11") {
			t.Fatalf("placement %+v: want the host's address and instances directory", pl)
		}
	}
	if got[a] != 2 || got[b] != 2 {
		t.Fatalf("4 instances on 2 hosts: %v", got)
	}
	err := s.cfg.Store.Update(ctx, func(tx store.Tx) error {
		_, err := s.PlaceInstance(ctx, tx, fleets.PlaceRequest{FleetID: "fleet-1", InstanceID: "i-5", Location: "us-west-2", InstanceType: api.EC2InstanceTypeC5Large})
		return err
	})
	if _, ok := err.(*fleets.NoCapacityError); !ok {
		t.Fatalf("a fifth instance on 2 full hosts: %v, want NoCapacityError", err)
	}
	if pl := place(t, s, clock, "fleet-1", "i-6", "eu-west-1"); pl.Host != "r1" || pl.IPAddress != "127.0.0.1" {
		t.Fatalf("a location without hosts: %+v, want this replica", pl)
	}

	// Both hosts fall silent; the start grace passes first.
	clock.Advance(59 * time.Second)
	if err := s.CheckHosts(ctx); err != nil {
		t.Fatal(err)
	}
	if st := hostState(t, s, "fleet-1", "i-1"); st.Lost != "" {
		t.Fatalf("lost within the start grace: %+v", st)
	}
	clock.Advance(time.Second)
	if err := s.CheckHosts(ctx); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"i-1", "i-2", "i-3", "i-4"} {
		if st := hostState(t, s, "fleet-1", id); !strings.Contains(st.Lost, "was lost") {
			t.Fatalf("%s: %+v, want lost with its host", id, st)
		}
	}
	if st := hostState(t, s, "fleet-1", "i-6"); st.Lost != "" {
		t.Fatalf("this replica's instance: %+v", st)
	}
}

func TestDesiredStateAfterLoss(t *testing.T) {
	s, clock := newService(t)
	ctx := context.Background()
	a := enrolHost(t, s, "us-west-2", "198.18.0.10", 4)
	place(t, s, clock, "fleet-1", "i-1", "us-west-2")
	desired := func() []hostproto.Desired {
		var out []hostproto.Desired
		err := s.cfg.Store.Update(ctx, func(tx store.Tx) error {
			h, err := getHost(ctx, tx, a)
			if err != nil {
				return err
			}
			out, err = s.seen(ctx, tx, h, nil, 10*time.Second)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	if d := desired(); len(d) != 1 || d[0].InstanceId != "i-1" {
		t.Fatalf("desired %+v, want i-1", d)
	}
	// Not reported for longer than the report window: lost.
	clock.Advance(11 * time.Second)
	desired()
	if st := hostState(t, s, "fleet-1", "i-1"); !strings.Contains(st.Lost, "no longer runs it") {
		t.Fatalf("an instance its host stopped reporting: %+v", st)
	}
	// Declared LOST: it comes back with nothing to run.
	clock.Advance(time.Hour)
	if err := s.CheckHosts(ctx); err != nil {
		t.Fatal(err)
	}
	if d := desired(); len(d) != 0 {
		t.Fatalf("a host declared lost is told to run %+v, want nothing", d)
	}
	if _, err := s.DrainHost(ctx, a); err == nil {
		t.Fatal("draining a LOST host was accepted")
	}
}

func TestEnrolmentTokens(t *testing.T) {
	s, clock := newService(t)
	ctx := context.Background()
	tok, _, err := s.CreateEnrolmentToken(ctx, "pool", time.Hour, 1)
	if err != nil {
		t.Fatal(err)
	}
	req := hostproto.EnrolRequest{Token: tok, Pool: "pool", Location: "us-west-2", Address: "198.18.0.10", Instances: map[string]int{"*": 1}}
	refused := func(what string, r hostproto.EnrolRequest) {
		t.Helper()
		if _, err := s.enrol(ctx, r); err == nil {
			t.Fatalf("%s: enrolment accepted", what)
		}
	}
	parsed, _ := hostproto.ParseEnrolmentToken(tok)
	wrong := parsed
	wrong.Secret = strings.Repeat("0", 64)
	bad := req
	bad.Token = wrong.String()
	refused("wrong secret", bad)
	bad = req
	bad.Pool = "other"
	refused("another pool", bad)
	bad = req
	bad.Location = "mars-1"
	refused("unknown location", bad)
	bad = req
	bad.Address = "not-an-ip"
	refused("bad address", bad)
	bad = req
	bad.Instances = map[string]int{"c9.huge": 1}
	refused("bad instance type", bad)
	if _, err := s.enrol(ctx, req); err != nil {
		t.Fatal(err)
	}
	refused("used up (MaxHosts 1)", req)
	tok2, _, err := s.CreateEnrolmentToken(ctx, "pool", time.Minute, 0)
	if err != nil {
		t.Fatal(err)
	}
	clock.Advance(time.Minute)
	req.Token = tok2
	refused("expired", req)
	// Only hashes are stored.
	err = s.cfg.Store.View(ctx, func(tx store.Tx) error {
		return store.Each(ctx, tx, store.Query{Kind: KindEnrolmentToken}, func(r store.Record) error {
			if strings.Contains(string(r.Data), parsed.Secret) {
				t.Errorf("a token's secret is stored: %s", r.Data)
			}
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestProcessDiff(t *testing.T) {
	s, _ := newService(t)
	ctx := context.Background()
	put := func(id, instance string, st hosting.ProcessState) {
		p := hosting.Process{ID: id, FleetID: "fleet-1", ComputeName: instance, State: st}
		err := s.cfg.Store.Update(ctx, func(tx store.Tx) error {
			return store.PutJSON(ctx, tx, store.Record{Kind: hosting.KindProcess, ID: id, Parent: "fleet-1"}, &p)
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	put("p-runs", "i-1", hosting.ProcessActive)
	put("p-gone", "i-1", hosting.ProcessActive)
	put("p-ended", "i-1", hosting.ProcessTerminated)
	put("p-done", "i-1", hosting.ProcessTerminated)
	put("p-other", "i-2", hosting.ProcessActive)
	var gone, ended []string
	err := s.cfg.Store.View(ctx, func(tx store.Tx) error {
		var err error
		gone, ended, err = processDiff(ctx, tx, "fleet-1", "i-1", []string{"p-runs", "p-ended", "p-new"})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(gone, ",") != "p-gone" || strings.Join(ended, ",") != "p-ended" {
		t.Fatalf("gone %v, ended %v; want [p-gone], [p-ended] (p-new may be on its way)", gone, ended)
	}
}

// TestRemoveHost: a host running an instance is removed only with force,
// which loses the instance; a LOST host is removed; once no host is
// enrolled in the location, this replica serves it again.
func TestRemoveHost(t *testing.T) {
	s, clock := newService(t)
	ctx := context.Background()
	a := enrolHost(t, s, "us-west-2", "198.18.0.10", 2)
	b := enrolHost(t, s, "us-west-2", "198.18.0.11", 2)
	busy, idle := a, b
	if place(t, s, clock, "fleet-1", "i-1", "us-west-2").Host == b {
		busy, idle = b, a
	}
	if _, err := s.RemoveHost(ctx, busy, false); !isInvalidRequest(err) {
		t.Fatalf("removing a host that runs an instance: %v, want InvalidRequestException", err)
	}
	if _, err := s.RemoveHost(ctx, "host-nope", false); err == nil {
		t.Fatal("removing an unknown host was accepted")
	}
	lose(t, s, clock, idle)
	if _, err := s.RemoveHost(ctx, idle, false); err != nil {
		t.Fatalf("removing a LOST host: %v", err)
	}
	if _, err := s.RemoveHost(ctx, busy, true); err != nil {
		t.Fatalf("removing with force: %v", err)
	}
	if st := hostState(t, s, "fleet-1", "i-1"); !strings.Contains(st.Lost, "removed") {
		t.Fatalf("the removed host's instance: %+v, want lost", st)
	}
	if pl := place(t, s, clock, "fleet-1", "i-2", "us-west-2"); pl.Host != "r1" {
		t.Fatalf("a location whose hosts were removed: %+v, want this replica", pl)
	}
}

func isInvalidRequest(err error) bool {
	var e *api.InvalidRequestException
	return errors.As(err, &e)
}

// countingStore counts the Host records its transactions read.
type countingStore struct {
	store.Store
	hostReads int
}

func (c *countingStore) View(ctx context.Context, fn func(store.Tx) error) error {
	return c.Store.View(ctx, func(tx store.Tx) error { return fn(countingTx{tx, c}) })
}

func (c *countingStore) Update(ctx context.Context, fn func(store.Tx) error) error {
	return c.Store.Update(ctx, func(tx store.Tx) error { return fn(countingTx{tx, c}) })
}

type countingTx struct {
	store.Tx
	c *countingStore
}

func (t countingTx) Get(ctx context.Context, kind store.Kind, id string) (store.Record, error) {
	r, err := t.Tx.Get(ctx, kind, id)
	if err == nil && kind == KindHost {
		t.c.hostReads++
	}
	return r, err
}

func (t countingTx) List(ctx context.Context, q store.Query) ([]store.Record, string, error) {
	recs, next, err := t.Tx.List(ctx, q)
	if q.Kind == KindHost {
		t.c.hostReads += len(recs)
	}
	return recs, next, err
}

// TestIdleHostsCostNoReads: the fleets reconciler's pass (Instances, every
// second) reads only the hosts that run instances, and the liveness check
// reads no host heartbeating on time: a thousand idle hosts cost them
// nothing.
func TestIdleHostsCostNoReads(t *testing.T) {
	s, clock := newService(t)
	ctx := context.Background()
	busy := enrolHost(t, s, "us-west-2", "198.18.0.10", 2)
	place(t, s, clock, "fleet-1", "i-1", "us-west-2")
	for i := range 20 {
		enrolHost(t, s, "eu-west-1", fmt.Sprintf("198.18.1.%d", i+1), 1)
	}
	err := s.cfg.Store.Update(ctx, func(tx store.Tx) error {
		hosts, err := allHosts(ctx, tx)
		for _, h := range hosts {
			h.LastSeen, h.Interval = clock.Now(), 10*time.Second
			if h.HostID == busy {
				h.Reported = []string{"i-1"}
			}
			err = errors.Join(err, putHost(ctx, tx, h))
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	c := &countingStore{Store: s.cfg.Store}
	s.cfg.Store = c
	if got := s.Instances(); len(got) != 1 || got[0].InstanceID != "i-1" {
		t.Fatalf("Instances %+v, want i-1", got)
	}
	if c.hostReads != 1 {
		t.Errorf("Instances read %d hosts, want 1 (the one with an instance)", c.hostReads)
	}
	c.hostReads = 0
	clock.Advance(15 * time.Second) // past the least interval, within the grace
	if err := s.CheckHosts(ctx); err != nil {
		t.Fatal(err)
	}
	if c.hostReads != 0 {
		t.Errorf("the liveness check read %d hosts heartbeating on time, want 0", c.hostReads)
	}
}

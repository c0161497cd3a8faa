package hosts

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/hoistgg/hoist/internal/api"
	"github.com/hoistgg/hoist/internal/clocktest"
	"github.com/hoistgg/hoist/internal/fleets"
	"github.com/hoistgg/hoist/internal/hosting"
	"github.com/hoistgg/hoist/internal/hosts/hostproto"
	"github.com/hoistgg/hoist/internal/ids"
	"github.com/hoistgg/hoist/internal/store"
	"github.com/hoistgg/hoist/internal/wsrpc"
)

// fakeAgent is a host's side of the host protocol over a real socket to
// the Service (ServeConnect behind an httptest server).
type fakeAgent struct {
	peer *wsrpc.Peer
	// got receives the actions Hoist sends it; starts the StartInstance
	// messages, whose answer is startErr's (nil: accepted).
	got      chan string
	starts   chan hostproto.StartInstance
	startErr error
}

// connectHost enrols a host and connects it; it returns the host's ID
// and its connection (Hello not said yet).
func connectHost(t *testing.T, s *Service, loc, addr string) (string, *fakeAgent) {
	t.Helper()
	ctx := context.Background()
	tok, _, err := s.CreateEnrolmentToken(ctx, "pool", time.Hour, 0)
	if err != nil {
		t.Fatal(err)
	}
	cred, err := s.enrol(ctx, hostproto.EnrolRequest{Token: tok, Pool: "pool", Location: loc, Address: addr,
		Instances: map[string]int{"*": 4}})
	if err != nil {
		t.Fatal(err)
	}
	s.SetHooks(func(fleets.InstanceRef) fleets.Hooks { return nil })
	srv := httptest.NewServer(http.HandlerFunc(s.ServeConnect))
	t.Cleanup(srv.Close)
	hdr := http.Header{}
	hostproto.SetCredential(hdr, cred.HostId, cred.HostSecret)
	ws, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(srv.URL, "http")+hostproto.PathConnect,
		&websocket.DialOptions{HTTPHeader: hdr})
	if err != nil {
		t.Fatal(err)
	}
	a := &fakeAgent{got: make(chan string, 16), starts: make(chan hostproto.StartInstance, 16)}
	a.peer = wsrpc.New(ws, wsrpc.Config{NewID: ids.UUID, Handler: func(_ context.Context, r *wsrpc.Request) (any, error) {
		a.got <- r.Action
		if r.Action != hostproto.ActionStartInstance {
			return nil, nil
		}
		var m hostproto.StartInstance
		if err := r.Decode(&m); err != nil {
			return nil, err
		}
		a.starts <- m
		return nil, a.startErr
	}})
	go func() { _ = a.peer.Run(context.Background()) }()
	t.Cleanup(a.peer.Abort)
	return cred.HostId, a
}

// hello says Hello with instances and returns Hoist's answer.
func (a *fakeAgent) hello(t *testing.T, instances ...hostproto.Instance) hostproto.HelloReply {
	t.Helper()
	var out hostproto.HelloReply
	in := hostproto.Hello{ProtocolVersion: hostproto.Version, InstancesDir: "/var/hoist-agent/instances", Instances: instances}
	if err := a.peer.Call(context.Background(), hostproto.ActionHello, in, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// heartbeat heartbeats with instances and returns what Hoist wants run.
func (a *fakeAgent) heartbeat(t *testing.T, instances ...hostproto.Instance) []hostproto.Desired {
	t.Helper()
	var out hostproto.HeartbeatReply
	if err := a.peer.Call(context.Background(), hostproto.ActionHeartbeat, hostproto.Heartbeat{Instances: instances}, &out); err != nil {
		t.Fatal(err)
	}
	return out.Desired
}

// putFleet writes a fleet record with a runtime configuration, as fleets
// keeps it.
func putFleet(t *testing.T, s *Service, fleetID string, rc api.RuntimeConfiguration) {
	t.Helper()
	ctx := context.Background()
	f := hosting.Fleet{RuntimeConfiguration: rc}
	err := s.cfg.Store.Update(ctx, func(tx store.Tx) error {
		return store.PutJSON(ctx, tx, store.Record{Kind: hosting.KindFleet, ID: fleetID}, &f)
	})
	if err != nil {
		t.Fatal(err)
	}
}

func runtimeOf(n int32) api.RuntimeConfiguration {
	return api.RuntimeConfiguration{ServerProcesses: []api.ServerProcess{{LaunchPath: api.String("/local/game/gs"),
		ConcurrentExecutions: api.Int32(n)}}}
}

// TestMissedRuntimeConfiguration: a runtime configuration update a host
// did not get (it was disconnected when UpdateRuntimeConfiguration was
// pushed) reaches it with the answer to its next Hello or Heartbeat,
// which compares the version it reports with its fleet's; once it reports
// the fleet's, nothing more is sent.
func TestMissedRuntimeConfiguration(t *testing.T) {
	s, clock := newService(t)
	_, a := connectHost(t, s, "us-west-2", "198.18.0.10")
	a.hello(t)
	putFleet(t, s, "fleet-1", runtimeOf(2))
	place(t, s, clock, "fleet-1", "i-1", "us-west-2")
	v1 := hostproto.RuntimeVersion(runtimeOf(2))
	running := func(v string) hostproto.Instance {
		return hostproto.Instance{FleetId: "fleet-1", InstanceId: "i-1", Location: "us-west-2", RuntimeVersion: v}
	}
	if d := a.heartbeat(t, running(v1)); len(d) != 1 || d[0].RuntimeConfiguration != nil {
		t.Fatalf("desired %+v: want i-1 without a runtime configuration (the host has the fleet's)", d)
	}
	// The fleet's runtime configuration changes while the host is away.
	putFleet(t, s, "fleet-1", runtimeOf(3))
	d := a.heartbeat(t, running(v1))
	if len(d) != 1 || d[0].RuntimeConfiguration == nil ||
		*d[0].RuntimeConfiguration.ServerProcesses[0].ConcurrentExecutions != 3 {
		t.Fatalf("desired %+v: want i-1 with the runtime configuration it missed", d)
	}
	if out := a.hello(t, running(v1)); len(out.Desired) != 1 || out.Desired[0].RuntimeConfiguration == nil {
		t.Fatalf("Hello answered %+v: want the missed runtime configuration too", out.Desired)
	}
	if d := a.heartbeat(t, running(hostproto.RuntimeVersion(runtimeOf(3)))); len(d) != 1 || d[0].RuntimeConfiguration != nil {
		t.Fatalf("desired %+v once the host has it: want no runtime configuration", d)
	}
}

// TestDrainedHostStaysDrainingAfterLoss: a drained host that is declared
// LOST and comes back is DRAINING again, not ACTIVE: it takes no new
// instance.
func TestDrainedHostStaysDrainingAfterLoss(t *testing.T) {
	s, clock := newService(t)
	ctx := context.Background()
	id, a := connectHost(t, s, "us-west-2", "198.18.0.10")
	a.hello(t)
	if _, err := s.DrainHost(ctx, id); err != nil {
		t.Fatal(err)
	}
	lose(t, s, clock, id)
	a.hello(t)
	if st := hostStatus(t, s, id); st != StatusDraining {
		t.Fatalf("a drained host back after being LOST is %s, want DRAINING", st)
	}
}

// lose lets host id fall silent until the liveness check declares it LOST.
func lose(t *testing.T, s *Service, clock *clocktest.Clock, id string) {
	t.Helper()
	clock.Advance(time.Hour)
	if err := s.CheckHosts(context.Background()); err != nil {
		t.Fatal(err)
	}
	if st := hostStatus(t, s, id); st != StatusLost {
		t.Fatalf("a silent host is %s, want LOST", st)
	}
}

// hostStatus reads a host's status.
func hostStatus(t *testing.T, s *Service, id string) Status {
	t.Helper()
	ctx := context.Background()
	var h *Host
	err := s.cfg.Store.View(ctx, func(tx store.Tx) error {
		var err error
		h, err = getHost(ctx, tx, id)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return h.Status
}

package hosts

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hoistgg/hoist/internal/api"
	"github.com/hoistgg/hoist/internal/fleets"
	"github.com/hoistgg/hoist/internal/hosting"
	"github.com/hoistgg/hoist/internal/replicas"
	"github.com/hoistgg/hoist/internal/store"
	"github.com/hoistgg/hoist/internal/wsrpc"
)

// recordedHooks keeps what was reported about instances, by instance ID.
type recordedHooks struct {
	mu  sync.Mutex
	got map[string][]string
}

// hooksFor returns the Hooks of one instance recording into r.
func (r *recordedHooks) hooksFor(ref fleets.InstanceRef) fleets.Hooks {
	return &recordingHooks{r: r, id: ref.InstanceID}
}

func (r *recordedHooks) of(id string) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return strings.Join(r.got[id], ",")
}

// recordingHooks are one instance's hooks of a recordedHooks.
type recordingHooks struct {
	r  *recordedHooks
	id string
}

func (h *recordingHooks) add(s string) {
	h.r.mu.Lock()
	defer h.r.mu.Unlock()
	if h.r.got == nil {
		h.r.got = map[string][]string{}
	}
	h.r.got[h.id] = append(h.r.got[h.id], s)
}

func (h *recordingHooks) StepStarted(_ context.Context, s fleets.Step) { h.add("started " + string(s)) }
func (h *recordingHooks) StepFailed(_ context.Context, s fleets.Step, _ error) {
	h.add("failed " + string(s))
}
func (h *recordingHooks) ProcessStarted(context.Context, fleets.ProcessStart) {}
func (h *recordingHooks) LaunchFailed(context.Context, string, error)         {}
func (h *recordingHooks) ProcessExited(context.Context, fleets.ProcessExit)   {}
func (h *recordingHooks) AskToEnd(context.Context, string, time.Time) error   { return nil }
func (h *recordingHooks) InstanceStopped(context.Context)                     { h.add("stopped") }

// secondReplica is a Service of replica id over s's store, with its
// inbox routed to its hosts.
func secondReplica(t *testing.T, s *Service, id string) *Service {
	t.Helper()
	ib := replicas.New(replicas.Config{Store: s.cfg.Store, Self: id})
	s2, err := New(Config{Store: s.cfg.Store, Inbox: ib, Local: nopProvider{}, ReplicaID: id, InstanceIP: "127.0.0.1",
		Locations: s.cfg.Locations, CADER: []byte("ca"), Now: s.cfg.Now, Timings: s.cfg.Timings})
	if err != nil {
		t.Fatal(err)
	}
	ib.Handle(replicas.TargetHost, replicas.Route{Holder: HostHolder, Deliver: s2.DeliverToHost, Undelivered: s2.UndeliveredToHost})
	return s2
}

// putPendingCompute records a PENDING instance of fleet-1 on host.
func putPendingCompute(t *testing.T, s *Service, instanceID, host string) {
	t.Helper()
	ctx := context.Background()
	c := hosting.Compute{FleetID: "fleet-1", ComputeName: instanceID, Location: "us-west-2", Host: host,
		Status: api.ComputeStatusPending}
	err := s.cfg.Store.Update(ctx, func(tx store.Tx) error {
		return store.PutJSON(ctx, tx, store.Record{Kind: hosting.KindCompute, ID: "fleet-1/" + instanceID, Parent: "fleet-1"}, &c)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// inboxData returns the data of every waiting inbox message, and checks
// that there are want of them.
func inboxData(t *testing.T, s *Service, want int) string {
	t.Helper()
	ctx := context.Background()
	var all []string
	err := s.cfg.Store.View(ctx, func(tx store.Tx) error {
		recs, _, err := tx.List(ctx, store.Query{Kind: replicas.KindInboxMessage})
		for _, r := range recs {
			all = append(all, r.Parent+": "+string(r.Data))
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != want {
		t.Fatalf("%d inbox messages, want %d: %v", len(all), want, all)
	}
	return strings.Join(all, "\n")
}

// TestStartInstanceRelayedWithoutSecrets: replica r1 starts an instance on
// a host connected to replica r2. The StartInstance goes into r2's inbox
// without the processes' auth token, the environment or the certificate's
// key, with only what the certificate names; r2 makes them anew
// (StartSecrets) and sends the start over its connection. A start the
// host refuses, and one dropped because the host has no connection any
// more, fail their instance on r2 (a failed DOWNLOAD step, then stopped),
// as on the direct path.
func TestStartInstanceRelayedWithoutSecrets(t *testing.T) {
	s1, _ := newService(t)
	ctx := context.Background()
	s1.cfg.Inbox = replicas.New(replicas.Config{Store: s1.cfg.Store, Self: "r1"})
	s1.msgr = relayMessenger{s1}
	s2 := secondReplica(t, s1, "r2")
	hostID, agent := connectHost(t, s2, "us-west-2", "198.18.0.10")
	agent.hello(t)
	var h1, h2 recordedHooks
	s1.SetHooks(h1.hooksFor)
	s2.SetHooks(h2.hooksFor)
	var asked *fleets.CertificateRequest
	s2.SetStartSecrets(func(_ context.Context, ref fleets.InstanceRef, req *fleets.CertificateRequest) ([]string, *fleets.CertificateFiles, error) {
		asked = req
		return []string{"GAMELIFT_SDK_AUTH_TOKEN=made-on-r2-" + ref.InstanceID}, &fleets.CertificateFiles{PrivateKey: []byte("r2's key")}, nil
	})
	start := func(id string) error {
		putPendingCompute(t, s1, id, hostID)
		return s1.StartInstance(ctx, fleets.InstanceSpec{InstanceRef: fleets.InstanceRef{FleetID: "fleet-1", InstanceID: id, Location: "us-west-2"},
			BuildID: "build-1", Env: []string{"GAMELIFT_SDK_AUTH_TOKEN=r1-token", "OPERATOR_SECRET=r1-env"},
			Certificate:        &fleets.CertificateFiles{PrivateKey: []byte("r1's key")},
			CertificateRequest: &fleets.CertificateRequest{Locations: []string{"us-west-2"}, IPAddress: "198.18.0.10"}},
			h1.hooksFor(fleets.InstanceRef{InstanceID: id}))
	}
	if err := start("i-1"); err != nil {
		t.Fatalf("StartInstance on r1 for a host connected to r2: %v", err)
	}
	data := inboxData(t, s1, 1)
	for _, secret := range []string{"r1-token", "r1-env", "r1's key"} {
		if strings.Contains(data, secret) {
			t.Fatalf("the relayed start holds %q: %s", secret, data)
		}
	}
	if !strings.HasPrefix(data, "r2: ") {
		t.Fatalf("the relayed start is not in r2's inbox: %s", data)
	}
	if err := s2.cfg.Inbox.Pass(ctx); err != nil {
		t.Fatal(err)
	}
	got := <-agent.starts
	if got.InstanceId != "i-1" || got.BuildId != "build-1" || strings.Join(got.Env, " ") != "GAMELIFT_SDK_AUTH_TOKEN=made-on-r2-i-1" ||
		got.Certificate == nil || got.Certificate.PrivateKey != "r2's key" {
		t.Fatalf("the host got %+v: want i-1 with r2's token and key", got)
	}
	if asked == nil || asked.IPAddress != "198.18.0.10" || strings.Join(asked.Locations, ",") != "us-west-2" {
		t.Fatalf("r2 issued a certificate for %+v, want r1's request", asked)
	}
	inboxData(t, s1, 0)
	if h1.of("i-1") != "" || h2.of("i-1") != "" {
		t.Fatalf("a delivered start reported %q on r1 and %q on r2, want nothing", h1.of("i-1"), h2.of("i-1"))
	}

	// The host refuses the next start: r2 records the failure.
	agent.startErr = wsrpc.Errorf(409, "no room")
	if err := start("i-2"); err != nil {
		t.Fatal(err)
	}
	if err := s2.cfg.Inbox.Pass(ctx); err != nil {
		t.Fatal(err)
	}
	<-agent.starts
	if got := h2.of("i-2"); got != "failed DOWNLOAD,stopped" {
		t.Fatalf("a refused relayed start reported %q on r2, want its download failed and the instance stopped", got)
	}

	// The host has no connection any more when r2 reads its inbox:
	// dropped, and the instance fails.
	if err := start("i-3"); err != nil {
		t.Fatal(err)
	}
	setHolder(t, s1, hostID, "") // as when its socket closes
	if err := s2.cfg.Inbox.Pass(ctx); err != nil {
		t.Fatal(err)
	}
	if got := h2.of("i-3"); got != "failed DOWNLOAD,stopped" {
		t.Fatalf("a relayed start to a host gone reported %q on r2, want its download failed and the instance stopped", got)
	}
	inboxData(t, s1, 0)
	// Connected nowhere: r1's start fails at once, as before, and writes
	// nothing.
	err := start("i-4")
	if !errors.Is(err, errNotConnected) {
		t.Fatalf("StartInstance for a host connected nowhere: %v, want errNotConnected", err)
	}
	inboxData(t, s1, 0)
}

// setHolder records replica as holding host's connection.
func setHolder(t *testing.T, s *Service, hostID, replica string) {
	t.Helper()
	ctx := context.Background()
	err := s.cfg.Store.Update(ctx, func(tx store.Tx) error {
		h, err := getHost(ctx, tx, hostID)
		if err != nil {
			return err
		}
		h.ConnectedTo = replica
		return putHost(ctx, tx, h)
	})
	if err != nil {
		t.Fatal(err)
	}
}

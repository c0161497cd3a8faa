package fleets

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"net/netip"
	"path/filepath"
	"slices"
	"testing"

	"github.com/hoistgg/hoist/internal/api"
	"github.com/hoistgg/hoist/internal/hosting"
	"github.com/hoistgg/hoist/internal/pki"
	"github.com/hoistgg/hoist/internal/store"
)

// fakePlacer places instances on the hosts it is given, in turn; with
// none it answers NoCapacityError.
type fakePlacer struct {
	hosts []string
	n     int
}

func (p *fakePlacer) PlaceInstance(_ context.Context, _ store.Tx, req PlaceRequest) (Placement, error) {
	if len(p.hosts) == 0 {
		return Placement{}, &NoCapacityError{Location: req.Location, Reason: "every host is full"}
	}
	h := p.hosts[p.n%len(p.hosts)]
	p.n++
	return Placement{Host: h, IPAddress: "198.18.0." + string(rune('1'+p.n)), DNSName: h + ".games.test",
		Layout: InstanceLayout{Dir: "/var/hoist/" + req.InstanceID}}, nil
}

// hostsProvider is the fake provider with host states.
type hostsProvider struct {
	*fakeProvider
	states map[string]HostState // by host
}

func (p *hostsProvider) InstanceHost(_ context.Context, _ store.Tx, c *hosting.Compute) (HostState, error) {
	return p.states[c.Host], nil
}

func TestInstancesArePlacedOnHosts(t *testing.T) {
	pl := &fakePlacer{hosts: []string{"host-a", "host-b"}}
	h := newHarness(t, func(c *Config) { c.Placer = pl })
	id, _ := h.activeFleet(ec2Input(1))
	if _, err := h.svc.UpdateFleetCapacity(h.ctx, &api.UpdateFleetCapacityInput{FleetId: api.String(id), DesiredInstances: api.Int32(2), MaxSize: api.Int32(2)}); err != nil {
		t.Fatal(err)
	}
	h.reconcile()
	started := h.prov.started()
	if len(started) != 2 {
		t.Fatalf("started %v, want 2 instances", started)
	}
	var hosts []string
	for _, name := range started {
		c := h.compute(id, name)
		hosts = append(hosts, c.Host)
		if c.Dir != "/var/hoist/"+name || c.IPAddress == "127.0.0.1" || c.DNSName != "ec2-"+dashed(c.IPAddress)+".us-west-2.compute.localhost" {
			t.Errorf("instance %s: %+v, want the placement's host, address, DNS name and layout", name, c)
		}
	}
	slices.Sort(hosts)
	if !slices.Equal(hosts, []string{"host-a", "host-b"}) {
		t.Fatalf("hosts %v, want one instance on each", hosts)
	}
}

func dashed(ip string) string {
	out := []rune(ip)
	for i, r := range out {
		if r == '.' {
			out[i] = '-'
		}
	}
	return string(out)
}

func TestNoCapacityIsOneEvent(t *testing.T) {
	pl := &fakePlacer{}
	h := newHarness(t, func(c *Config) { c.Placer = pl })
	id := h.createFleet(ec2Input(1))
	for range 3 {
		h.reconcile()
	}
	if n := len(h.prov.started()); n != 0 {
		t.Fatalf("started %d instances without capacity", n)
	}
	if st := h.status(id); st != api.FleetStatusNew {
		t.Fatalf("fleet is %s, want NEW while no host can take its instance", st)
	}
	count := func() int {
		n := 0
		for _, c := range h.events(id) {
			if c == api.EventCodeFleetActivationFailedNoInstances {
				n++
			}
		}
		return n
	}
	if n := count(); n != 1 {
		t.Fatalf("%d FLEET_ACTIVATION_FAILED_NO_INSTANCES events, want 1: %v", n, h.events(id))
	}
	pl.hosts = []string{"host-a"}
	h.reconcile()
	if n := len(h.prov.started()); n != 1 {
		t.Fatalf("started %d instances once a host has room, want 1", n)
	}
	if len(h.fleet(id).Own.NoCapacity) != 0 {
		t.Fatalf("the no-capacity episode is not over: %v", h.fleet(id).Own.NoCapacity)
	}
}

func TestLostHostInterruptsGameSessions(t *testing.T) {
	hp := &hostsProvider{states: map[string]HostState{}}
	pl := &fakePlacer{hosts: []string{"host-a"}}
	h := newHarness(t, func(c *Config) {
		hp.fakeProvider = c.Provider.(*fakeProvider)
		c.Provider, c.Placer = hp, pl
	})
	id, inst := h.activeFleet(ec2Input(1))
	procs := h.prov.get(inst).procs
	out, err := h.sess.CreateGameSession(h.ctx, &api.CreateGameSessionInput{FleetId: api.String(id), MaximumPlayerSessionCount: api.Int32(2)})
	if err != nil {
		t.Fatal(err)
	}
	gsID := api.ToString(out.GameSession.GameSessionId)
	c := hosting.Conn{ConnID: "conn-1", ProcessID: procs[0], FleetID: id, ComputeName: inst}
	if err := h.sdk.ActivateGameSession(h.ctx, c, gsID); err != nil {
		t.Fatal(err)
	}
	hp.states["host-a"] = HostState{Lost: "its host host-a was lost"}
	h.reconcile()
	if c := h.compute(id, inst); c != nil {
		t.Fatalf("the lost instance is still recorded: %+v", c)
	}
	gs, err := h.sess.DescribeGameSessions(h.ctx, &api.DescribeGameSessionsInput{GameSessionId: api.String(gsID)})
	if err != nil {
		t.Fatal(err)
	}
	got := gs.GameSessions[0]
	if got.Status != api.GameSessionStatusTerminated || got.StatusReason != api.GameSessionStatusReasonInterrupted {
		t.Fatalf("game session %s %s, want TERMINATED INTERRUPTED", got.Status, got.StatusReason)
	}
	if !slices.Contains(h.events(id), api.EventCodeInstanceInterrupted) {
		t.Fatalf("events %v, want INSTANCE_INTERRUPTED", h.events(id))
	}
}

// goneProvider's processes are all gone, as their pool host says.
type goneProvider struct{ *hostsProvider }

func (goneProvider) StopProcess(string, string) error { return ErrProcessGone }

// TestProcessGoneOnItsHost: ending a process its pool host no longer runs
// records it ended (it was left LAUNCHING or ACTIVE before: the error went
// back to sessions).
func TestProcessGoneOnItsHost(t *testing.T) {
	hp := &hostsProvider{states: map[string]HostState{}}
	h := newHarness(t, func(c *Config) {
		hp.fakeProvider = c.Provider.(*fakeProvider)
		c.Provider, c.Placer = goneProvider{hp}, &fakePlacer{hosts: []string{"host-a"}}
	})
	_, inst := h.activeFleet(ec2Input(1))
	proc := h.prov.get(inst).procs[0]
	if err := h.svc.TerminateProcess(h.ctx, proc, "SERVER_PROCESS_TERMINATED_UNHEALTHY"); err != nil {
		t.Fatal(err)
	}
	var p hosting.Process
	err := h.st.View(h.ctx, func(tx store.Tx) error {
		_, err := store.GetJSON(h.ctx, tx, hosting.KindProcess, proc, &p)
		return err
	})
	if err != nil || p.State != hosting.ProcessTerminated {
		t.Fatalf("process %s %v, want TERMINATED", p.State, err)
	}
}

// TestHostInstanceCertificates: an instance of a GENERATED fleet on a pool
// host gets a certificate of its own naming its DNS name, its host's
// address and DNS name (the CA permits the hosts' network), and not
// Hoist's own address (a host's key must not pass for Hoist's machine).
func TestHostInstanceCertificates(t *testing.T) {
	ca, err := pki.LoadOrCreateCAFor(filepath.Join(t.TempDir(), "pki"), pki.Constraints{DNSDomains: []string{"games.test"},
		Networks: []netip.Prefix{netip.MustParsePrefix("198.18.0.0/15")}})
	if err != nil {
		t.Fatal(err)
	}
	pl := &fakePlacer{hosts: []string{"host-a", "host-b"}}
	h := newHarness(t, func(c *Config) { c.CA, c.DNSDomain, c.Placer = ca, "games.test", pl })
	in := ec2Input(1)
	in.CertificateConfiguration = &api.CertificateConfiguration{CertificateType: api.CertificateTypeGenerated}
	in.Locations = []api.LocationConfiguration{{Location: api.String("us-west-2")}, {Location: api.String("us-east-1")}}
	id := h.createFleet(in)
	h.reconcile()
	started := h.prov.started()
	if len(started) != 2 {
		t.Fatalf("%d instances started, want 2", len(started))
	}
	var certs [][]byte
	for _, inst := range started {
		c := h.compute(id, inst)
		files := h.prov.get(inst).spec.Certificate
		if files == nil {
			t.Fatal("no certificate")
		}
		certs = append(certs, files.Certificate)
		b, _ := pem.Decode(files.Certificate)
		leaf, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range []string{c.DNSName, c.IPAddress, c.Host + ".games.test"} {
			if _, err := leaf.Verify(x509.VerifyOptions{Roots: ca.Pool(), DNSName: name}); err != nil {
				t.Errorf("instance %s on %s: the certificate does not verify for %s: %v", inst, c.Host, name, err)
			}
		}
		if err := leaf.VerifyHostname("127.0.0.1"); err == nil {
			t.Errorf("instance %s on %s: the certificate names Hoist's own address", inst, c.Host)
		}
		if _, err := tls.X509KeyPair(files.Chain, files.PrivateKey); err != nil {
			t.Fatalf("chain and key do not match: %v", err)
		}
	}
	if bytes.Equal(certs[0], certs[1]) {
		t.Error("instances on two hosts share a certificate")
	}
}

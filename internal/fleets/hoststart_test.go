package fleets

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"net/netip"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hoistgg/hoist/internal/api"
	"github.com/hoistgg/hoist/internal/pki"
	"github.com/hoistgg/hoist/internal/store"
)

// envToken returns the auth token in a process environment.
func envToken(env []string) string {
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "GAMELIFT_SDK_AUTH_TOKEN="); ok {
			return v
		}
	}
	return ""
}

// TestStartSecrets: the replica holding a pool host's connection makes
// the secrets of a start another replica decided. The instance spec on a
// host carries what its certificate names; StartSecrets gives a new auth
// token, which authenticates as the instance while the deciding replica's
// no longer does, and a certificate from this replica's CA for those
// names (with its key); an instance no longer PENDING gets none.
func TestStartSecrets(t *testing.T) {
	ca, err := pki.LoadOrCreateCAFor(filepath.Join(t.TempDir(), "pki"), pki.Constraints{DNSDomains: []string{"games.test"},
		Networks: []netip.Prefix{netip.MustParsePrefix("198.18.0.0/15")}})
	if err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, func(c *Config) {
		c.CA, c.DNSDomain, c.Placer = ca, "games.test", &fakePlacer{hosts: []string{"host-a"}}
	})
	in := ec2Input(1)
	in.CertificateConfiguration = &api.CertificateConfiguration{CertificateType: api.CertificateTypeGenerated}
	id := h.createFleet(in)
	h.reconcile()
	started := h.prov.started()
	if len(started) != 1 {
		t.Fatalf("%d instances started, want 1", len(started))
	}
	inst := started[0]
	spec := h.prov.get(inst).spec
	req := spec.CertificateRequest
	if req == nil || req.IPAddress != "198.18.0.2" || req.DNSName != "host-a.games.test" || strings.Join(req.Locations, ",") != "us-west-2" {
		t.Fatalf("certificate request %+v of an instance on a host", req)
	}
	env, files, err := h.svc.StartSecrets(h.ctx, spec.InstanceRef, req)
	if err != nil {
		t.Fatal(err)
	}
	if _, c, err := h.svc.VerifyComputeToken(h.ctx, envToken(env)); err != nil || c != inst {
		t.Fatalf("the new token: %s, %v; want it to authenticate as %s", c, err, inst)
	}
	if _, _, err := h.svc.VerifyComputeToken(h.ctx, envToken(spec.Env)); err == nil {
		t.Error("the deciding replica's token still authenticates")
	}
	b, _ := pem.Decode(files.Certificate)
	leaf, err := x509.ParseCertificate(b.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{h.compute(id, inst).DNSName, "198.18.0.2", "host-a.games.test"} {
		if _, err := leaf.Verify(x509.VerifyOptions{Roots: ca.Pool(), DNSName: name}); err != nil {
			t.Errorf("the certificate does not verify for %s: %v", name, err)
		}
	}
	if _, err := tls.X509KeyPair(files.Chain, files.PrivateKey); err != nil {
		t.Fatalf("chain and key do not match: %v", err)
	}
	err = h.st.Update(h.ctx, func(tx store.Tx) error {
		c, err := getCompute(h.ctx, tx, id, inst)
		if err != nil {
			return err
		}
		c.Status = api.ComputeStatusTerminating
		return putCompute(h.ctx, tx, c)
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := h.svc.StartSecrets(h.ctx, spec.InstanceRef, req); !errors.Is(err, ErrUnknownInstance) {
		t.Fatalf("StartSecrets for a TERMINATING instance: %v, want ErrUnknownInstance", err)
	}
}

// TestPoolHostInstanceNeedsNoBuildDir: an instance placed on a pool host
// starts although the build's files are on another replica (its host
// downloads the build from the replica it is connected to); the spec
// names no BuildDir.
func TestPoolHostInstanceNeedsNoBuildDir(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.Placer = &fakePlacer{hosts: []string{"host-a"}} })
	h.builds.elsewhere = true
	h.createFleet(ec2Input(1))
	h.reconcile()
	started := h.prov.started()
	if len(started) != 1 {
		t.Fatalf("%d instances started on a pool host with the build's files on another replica, want 1", len(started))
	}
	if spec := h.prov.get(started[0]).spec; spec.BuildDir != "" || spec.BuildID == "" {
		t.Fatalf("spec of an instance on a pool host: BuildDir %q, BuildID %q; want no BuildDir", spec.BuildDir, spec.BuildID)
	}
}

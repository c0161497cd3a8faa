package agent

import (
	"archive/zip"
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hoistgg/hoist/internal/api"
	"github.com/hoistgg/hoist/internal/fleets"
	"github.com/hoistgg/hoist/internal/hosts/hostproto"
	"github.com/hoistgg/hoist/internal/pki"
)

// tlsServer serves h over TLS with a certificate of a fresh CA; it returns
// the server and the CA.
func tlsServer(t *testing.T, h http.Handler) (*httptest.Server, *pki.CA) {
	t.Helper()
	ca, err := pki.LoadOrCreateCA(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	cert, err := ca.IssueServerCert(nil)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(h)
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv, ca
}

// TestPinnedTLS: with only the enrolment token, the agent trusts the
// server whose chain holds the CA with the token's pin, and no other.
func TestPinnedTLS(t *testing.T) {
	srv, ca := tlsServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	_, other := tlsServer(t, http.NotFoundHandler())
	get := func(pin string) error {
		c := &http.Client{Transport: &http.Transport{TLSClientConfig: pinnedTLS(pin)}}
		resp, err := c.Get(srv.URL)
		if err == nil {
			resp.Body.Close()
		}
		return err
	}
	if err := get(hostproto.CAPin(ca.Cert.Raw)); err != nil {
		t.Fatalf("the right pin: %v", err)
	}
	if err := get(hostproto.CAPin(other.Cert.Raw)); err == nil || !strings.Contains(err.Error(), "pin") {
		t.Fatalf("another CA's pin: %v, want refused", err)
	}
	// The right CA, but a name the certificate does not cover.
	cfg := pinnedTLS(hostproto.CAPin(ca.Cert.Raw))
	cfg.ServerName = "not-hoist.example"
	conn, err := tls.Dial("tcp", strings.TrimPrefix(srv.URL, "https://"), cfg)
	if err == nil {
		conn.Close()
		t.Fatal("a certificate without the name dialed was accepted")
	}
	if !strings.Contains(err.Error(), "not-hoist.example") {
		t.Fatalf("refused for another reason: %v", err)
	}
}

// testAgent is an agent talking to a fake Hoist (h), with a state
// directory of its own.
func testAgent(t *testing.T, h http.Handler, mod ...func(*Agent)) *Agent {
	t.Helper()
	srv, ca := tlsServer(t, h)
	a := &Agent{cfg: Config{Endpoint: srv.URL, Dir: t.TempDir(), MaxBuildSize: 1 << 20}, log: slog.New(slog.DiscardHandler),
		state: &State{HostID: "host-1", HostSecret: strings.Repeat("a", 64)}, caPEM: ca.CertPEM, instances: map[string]*instance{}}
	tlsCfg, err := poolTLS(ca.CertPEM)
	if err != nil {
		t.Fatal(err)
	}
	a.client = &http.Client{Transport: &http.Transport{TLSClientConfig: tlsCfg}}
	a.builds = &buildCache{a: a, dir: filepath.Join(a.cfg.Dir, "builds"), busy: map[string]*sync.Mutex{}}
	a.rep = newReporter(a)
	for _, m := range mod {
		m(a)
	}
	return a
}

// buildZip is a build archive holding one executable.
func buildZip(t *testing.T) []byte {
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	hdr := &zip.FileHeader{Name: "gameserver", Method: zip.Store}
	hdr.SetMode(0o755)
	w, _ := zw.CreateHeader(hdr)
	_, _ = w.Write([]byte("#!/bin/sh\n"))
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestBuildDownload: a build is used only when its bytes match the
// SHA-256 Hoist sends in the trailer, and fit in MaxBuildSize; the
// download carries the host's credential.
func TestBuildDownload(t *testing.T) {
	body := buildZip(t)
	sum := sha256.Sum256(body)
	for name, tc := range map[string]struct {
		trailer string
		body    []byte
		max     int64
		ok      bool
	}{
		"matching hash":  {trailer: hex.EncodeToString(sum[:]), body: body, ok: true},
		"no trailer":     {body: body},
		"wrong hash":     {trailer: strings.Repeat("0", 64), body: body},
		"cut download":   {trailer: hex.EncodeToString(sum[:]), body: body[:len(body)-10]},
		"over the bound": {trailer: hex.EncodeToString(sum[:]), body: body, max: int64(len(body) - 1)},
	} {
		t.Run(name, func(t *testing.T) {
			h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if id, _, err := hostproto.Credential(r.Header); err != nil || id != "host-1" || r.URL.Path != hostproto.PathBuild+"build-1" {
					http.Error(w, "no", http.StatusForbidden)
					return
				}
				w.Header().Set("Trailer", hostproto.BuildHashTrailer)
				_, _ = w.Write(tc.body)
				if tc.trailer != "" {
					w.Header().Set(hostproto.BuildHashTrailer, tc.trailer)
				}
			})
			a := testAgent(t, h, func(a *Agent) {
				if tc.max > 0 {
					a.cfg.MaxBuildSize = tc.max
				}
			})
			dir, err := a.builds.get(context.Background(), "build-1")
			if !tc.ok {
				if err == nil {
					t.Fatal("the build was accepted")
				}
				if _, serr := os.Stat(filepath.Join(a.builds.dir, "build-1")); serr == nil {
					t.Fatal("a refused build was kept")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if st, err := os.Stat(filepath.Join(dir, "gameserver")); err != nil || st.Mode()&0o100 == 0 {
				t.Fatalf("the build's executable: %v %v", st, err)
			}
			a.builds.release("build-1")
			if _, err := os.Stat(dir); err == nil {
				t.Fatal("a build no instance uses is kept")
			}
		})
	}
}

// TestConverge: the agent stops what Hoist no longer lists (unless it
// started after the answer was asked for), stops what Hoist asks to stop,
// and keeps the rest.
func TestConverge(t *testing.T) {
	a := testAgent(t, http.NotFoundHandler())
	asked := time.Now()
	add := func(id string, received time.Time) *instance {
		_, cancel := context.WithCancel(context.Background())
		in := &instance{ref: fleets.InstanceRef{FleetID: "fleet-1", InstanceID: id}, received: received, cancel: cancel}
		in.bridge = newBridge(a, in.ref)
		a.instances[id] = in
		return in
	}
	gone := add("i-gone", asked.Add(-time.Second))
	young := add("i-young", asked.Add(time.Second))
	kept := add("i-kept", asked.Add(-time.Second))
	stopped := add("i-stop", asked.Add(-time.Second))
	a.converge([]hostproto.Desired{{InstanceId: "i-kept"}, {InstanceId: "i-stop", Stop: "scale-in"}}, asked)
	for in, want := range map[*instance]bool{gone: true, young: false, kept: false, stopped: true} {
		if in.stopping != want {
			t.Errorf("%s: stopping %v, want %v", in.ref.InstanceID, in.stopping, want)
		}
	}
	if got := a.running(); len(got) != 4 {
		t.Fatalf("running %d instances, want 4 until they stopped", len(got))
	}
}

// TestConvergeRuntime: a runtime configuration in Hoist's answer (one the
// instance missed) is taken, and reported from then on.
func TestConvergeRuntime(t *testing.T) {
	a := testAgent(t, http.NotFoundHandler())
	_, cancel := context.WithCancel(context.Background())
	in := &instance{ref: fleets.InstanceRef{FleetID: "fleet-1", InstanceID: "i-1"}, received: time.Now(), cancel: cancel,
		runtimeVersion: hostproto.RuntimeVersion(api.RuntimeConfiguration{})}
	in.bridge = newBridge(a, in.ref)
	a.instances["i-1"] = in
	rc := api.RuntimeConfiguration{ServerProcesses: []api.ServerProcess{{LaunchPath: api.String("/local/game/gs"), ConcurrentExecutions: api.Int32(3)}}}
	a.converge([]hostproto.Desired{{FleetId: "fleet-1", InstanceId: "i-1", RuntimeConfiguration: &rc}}, time.Now())
	got := a.running()
	if len(got) != 1 || got[0].RuntimeVersion != hostproto.RuntimeVersion(rc) || in.runtime.ServerProcesses == nil {
		t.Fatalf("running %+v: want i-1 on the runtime configuration Hoist sent", got)
	}
}

// TestEnv: server processes trust the CA bundle the agent wrote (an
// operator's SSL_CERT_FILE from Hoist's --process-env comes later and
// wins) and reach Hoist's SDK endpoint where the agent reaches Hoist.
func TestEnv(t *testing.T) {
	a := &Agent{cfg: Config{Endpoint: "https://198.18.0.1:9443"}, bundle: "/var/lib/hoist-agent/ca-bundle.pem"}
	got := a.env([]string{"GAMELIFT_SDK_WEBSOCKET_URL=wss://10.0.0.1:9443/sdk", "GAMELIFT_SDK_FLEET_ID=f", "SSL_CERT_FILE=/mine.pem"})
	want := []string{"SSL_CERT_FILE=/var/lib/hoist-agent/ca-bundle.pem", "GAMELIFT_SDK_WEBSOCKET_URL=wss://198.18.0.1:9443/sdk",
		"GAMELIFT_SDK_FLEET_ID=f", "SSL_CERT_FILE=/mine.pem"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("env\n got %v\nwant %v", got, want)
	}
}

func TestBackoff(t *testing.T) {
	for n := 1; n < 30; n++ {
		d := backoff(n, 30*time.Second)
		ceil := min(500*time.Millisecond<<min(n-1, 20), 30*time.Second)
		if d <= 0 || d > ceil+time.Millisecond {
			t.Fatalf("backoff(%d) = %s, want within (0, %s]", n, d, ceil)
		}
	}
}

// TestSameHost: a state directory enrolled as one host refuses flags of
// another.
func TestSameHost(t *testing.T) {
	a := &Agent{cfg: Config{Dir: "/d", Pool: "p", Location: "eu-west-1"}}
	st := &State{HostID: "host-1", Pool: "p", Location: "us-west-2"}
	if err := a.sameHost(st); err == nil || !strings.Contains(err.Error(), "--location") {
		t.Fatalf("sameHost: %v, want the location refused", err)
	}
	a.cfg.Location = ""
	if err := a.sameHost(st); err != nil {
		t.Fatalf("sameHost with no contradicting flag: %v", err)
	}
}

// TestStateIsPrivate: the host's credential is written 0600.
func TestStateIsPrivate(t *testing.T) {
	dir := t.TempDir()
	if err := SaveState(dir, &State{HostID: "host-1", HostSecret: "s"}, []byte("ca")); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(filepath.Join(dir, stateFile))
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("host.json: %v %v, want mode 0600", st.Mode(), err)
	}
	got, err := LoadState(dir)
	if err != nil || got.HostID != "host-1" {
		t.Fatalf("loadState: %+v %v", got, err)
	}
}

package main

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hoistgg/hoist/internal/pki"
	"github.com/hoistgg/hoist/internal/sdkconn"
	"github.com/hoistgg/hoist/internal/sdkconn/sdkconntest"
)

// TestTokenNeverLogged: the auth token (GAMELIFT_SDK_AUTH_TOKEN) is in no
// line the game server writes, to its output or its log file, when
// connecting fails: a TLS handshake with an untrusted certificate (the
// error names the URL, query and token included), a refused connection,
// and a refused token.
func TestTokenNeverLogged(t *testing.T) {
	ca, err := pki.LoadOrCreateCA(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	cert, err := ca.IssueServerCert(nil)
	if err != nil {
		t.Fatal(err)
	}
	tlsEnd := sdkconntest.StartTLS(t, sdkconn.Config{}, sdkconntest.Tokens{token: {FleetID: fleet, ComputeName: host}}, cert)
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refused := "ws://" + closed.Addr().String() + "/sdk"
	closed.Close()
	plain := endpoint(t, nil)

	for name, tc := range map[string]struct {
		url  string
		env  []string
		want []string
	}{
		"untrusted certificate": {url: tlsEnd.URL, env: []string{"SSL_CERT_FILE=" + os.DevNull}, want: []string{"connecting to the SDK endpoint failed", "certificate"}},
		"connection refused":    {url: refused, want: []string{"connecting to the SDK endpoint failed", "refused"}},
		"token refused":         {url: plain.URL, env: []string{"GAMELIFT_SDK_AUTH_TOKEN=" + token2 + "ff"}, want: []string{"handshake refused with HTTP 403"}},
	} {
		t.Run(name, func(t *testing.T) {
			p := start(t, tc.url, "proc-1", tc.env)
			p.out.waitFor(t, tc.want...)
			secret := token
			for _, kv := range tc.env {
				if v, ok := strings.CutPrefix(kv, "GAMELIFT_SDK_AUTH_TOKEN="); ok {
					secret = v
				}
			}
			if strings.Contains(p.out.all(), secret) {
				t.Errorf("the output holds the auth token:\n%s", p.out.all())
			}
			logs, _ := filepath.Glob(filepath.Join(p.dir, "logs", "*"))
			if len(logs) == 0 {
				t.Fatal("no log file")
			}
			for _, f := range logs {
				if b, err := os.ReadFile(f); err != nil || strings.Contains(string(b), secret) {
					t.Errorf("%s holds the auth token (%v)", f, err)
				}
			}
		})
	}
}

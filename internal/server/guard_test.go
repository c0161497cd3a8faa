package server

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	awsv2 "github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
)

// guardRequest is one request of TestBrowserGuard, to a route of Hoist.
type guardRequest struct {
	name, method, path, body string
	header                   map[string]string
	sign                     string // "gamelift" or "s3": signed as a client would (any key works without credentials)
}

func guardRequests(srv *Server) []guardRequest {
	logURL := srv.logURL("arn:aws:gamelift:us-west-2::gamesession/fleet-1/gsess-1")
	logPath := logURL[strings.Index(logURL, "/hoist/logs"):]
	return []guardRequest{
		{name: "API JSON", method: "POST", path: "/", body: "{}", sign: "gamelift",
			header: map[string]string{"X-Amz-Target": "GameLift.ListBuilds", "Content-Type": "application/x-amz-json-1.1"}},
		{name: "API CBOR", method: "POST", path: "/service/GameLift/operation/ListBuilds", sign: "gamelift",
			header: map[string]string{"Smithy-Protocol": "rpc-v2-cbor", "Content-Type": "application/cbor"}},
		{name: "S3 upload", method: "PUT", path: "/" + srv.builds.Bucket() + "/key", body: "PK", sign: "s3"},
		{name: "admin", method: "POST", path: "/hoist/admin/SetGameServerInstanceStatus", body: "{}", sign: "gamelift",
			header: map[string]string{"Content-Type": "application/json"}},
		{name: "logs", method: "GET", path: logPath},
		{name: "sdk", method: "GET", path: "/sdk?pID=1&authToken=x&computeId=c&fleetId=f",
			header: map[string]string{"Connection": "Upgrade", "Upgrade": "websocket", "Sec-WebSocket-Version": "13", "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ=="}},
		{name: "health", method: "GET", path: "/hoist/health"},
	}
}

// do sends q to base with the Host header host and extra headers, and
// returns the status and body.
func (q guardRequest) do(t *testing.T, base, host string, extra map[string]string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(q.method, base+q.path, strings.NewReader(q.body))
	if err != nil {
		t.Fatal(err)
	}
	if host != "" {
		req.Host = host
	}
	for k, v := range q.header {
		req.Header.Set(k, v)
	}
	for k, v := range extra {
		req.Header.Set(k, v)
	}
	sum := sha256.Sum256([]byte(q.body))
	hash := hex.EncodeToString(sum[:])
	creds := awsv2.Credentials{AccessKeyID: "AKIDANY", SecretAccessKey: "any"}
	switch q.sign {
	case "gamelift":
		err = v4.NewSigner().SignHTTP(context.Background(), creds, req, hash, "gamelift", "us-west-2", time.Now())
	case "s3":
		req.Header.Set("X-Amz-Content-Sha256", hash)
		err = v4.NewSigner().SignHTTP(context.Background(), creds, req, hash, "s3", "us-west-2", time.Now())
	}
	if err != nil {
		t.Fatal(err)
	}
	resp, err := loopbackClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

var loopbackClient = &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{Proxy: nil}}

// TestBrowserGuard: without credentials, a request addressed to a name
// other than a loopback one (what DNS rebinding produces) is refused on
// every route, and so is a request a browser marks as cross-site, except
// on the signed log URLs. Before the guard every forged request below
// reached its route.
func TestBrowserGuard(t *testing.T) {
	srv, ts := startWith(t, nil, nil)
	port := ts.Listener.Addr().(interface{ String() string }).String()
	port = port[strings.LastIndex(port, ":"):]
	isGuard := func(status int, body string) bool {
		return status == http.StatusForbidden && strings.Contains(body, "Hoist runs without credentials")
	}
	for _, q := range guardRequests(srv) {
		t.Run(q.name, func(t *testing.T) {
			for _, host := range []string{"127.0.0.1" + port, "localhost" + port, "LOCALHOST", "127.9.9.9" + port, "[::1]" + port, "[::ffff:127.0.0.1]" + port} {
				if st, body := q.do(t, ts.URL, host, nil); isGuard(st, body) {
					t.Errorf("Host %s: refused: %d %s", host, st, body)
				}
			}
			for _, host := range []string{"rebind.attacker.example" + port, "rebind.attacker.example", "10.0.0.1" + port,
				"[fe80::1%25eth0]" + port, "localhost.attacker.example" + port, "127.0.0.1.nip.io" + port} {
				if st, body := q.do(t, ts.URL, host, nil); !isGuard(st, body) {
					t.Errorf("forged Host %s: got %d %q, want 403 from the guard", host, st, body)
				}
			}
			crossSite := []map[string]string{
				{"Origin": "https://attacker.example"}, {"Origin": "null"},
				{"Sec-Fetch-Site": "cross-site"}, {"Sec-Fetch-Site": "same-site"},
			}
			for _, h := range crossSite {
				st, body := q.do(t, ts.URL, "", h)
				if q.name == "logs" {
					if isGuard(st, body) {
						t.Errorf("log URL opened from another site (%v): refused", h)
					}
				} else if !isGuard(st, body) {
					t.Errorf("%v: got %d %q, want 403 from the guard", h, st, body)
				}
			}
			for _, h := range []map[string]string{{"Sec-Fetch-Site": "same-origin"}, {"Sec-Fetch-Site": "none"}} {
				if st, body := q.do(t, ts.URL, "", h); isGuard(st, body) {
					t.Errorf("%v: refused", h)
				}
			}
		})
	}
}

// TestBrowserGuardOffWithCredentials: with credentials the signatures
// protect every route and Hoist may be addressed by any name.
func TestBrowserGuardOffWithCredentials(t *testing.T) {
	srv, ts := start(t, nil)
	q := guardRequests(srv)[0]
	st, body := q.do(t, ts.URL, "hoist.internal.example", map[string]string{"Origin": "https://attacker.example"})
	if st != http.StatusBadRequest && st != http.StatusForbidden || strings.Contains(body, "Hoist runs without credentials") {
		t.Errorf("with credentials: got %d %q, want the API's own answer to an unknown key", st, body)
	}
}

func TestLoopbackHost(t *testing.T) {
	for host, want := range map[string]bool{
		"127.0.0.1": true, "127.0.0.1:9080": true, "127.255.0.1:1": true, "localhost": true, "LocalHost:80": true,
		"localhost.:80": true, "[::1]:9080": true, "[::1]": true, "::1": true,
		"": false, "0.0.0.0:9080": false, "[::]:9080": false, "example.com": false, "localhost.example.com": false,
		"10.1.2.3": false, "[fe80::1%eth0]:80": false, "127.0.0.1:80:80": false, "sub.localhost": false,
	} {
		if got := loopbackHost(host); got != want {
			t.Errorf("loopbackHost(%q) = %v, want %v", host, got, want)
		}
	}
}

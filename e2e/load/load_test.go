package main

import (
	"bufio"
	"bytes"
	"flag"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/hoistgg/hoist/e2e/hoisttest"
	"github.com/hoistgg/hoist/e2e/loadreport"
	"github.com/hoistgg/hoist/internal/sigv4"
)

var full = flag.Bool("load.full", false, "run the full documented load (10,000 game servers, 32 connections, 3 runs of 20 s; minutes) instead of skipping TestFullRun")

// TestMain lets the test binary serve the ceiling when the load generator
// starts it as one (it starts its own executable).
func TestMain(m *testing.M) {
	if os.Getenv(roleEnv) == roleCeiling {
		os.Exit(serveCeiling())
	}
	os.Exit(hoisttest.Main(m))
}

// TestTinyRun runs the whole load generator in a tiny configuration, with
// each client transport: the real Hoist binary with credentials, the
// ceiling process, setup, the claim loop on both, the report and its JSON.
func TestTinyRun(t *testing.T) {
	for _, transport := range []string{transportNetHTTP, transportRaw} {
		t.Run(strings.ReplaceAll(transport, "/", ""), func(t *testing.T) { tinyRun(t, transport) })
	}
}

func tinyRun(t *testing.T, transport string) {
	rep, printed := loadreport.RunForTest[Report](t, run, append([]string{"-duration", "500ms", "-warmup", "200ms", "-conns", "4",
		"-servers", "40", "-instances", "4", "-client", transport}, loadreport.TinyRunArgs(t)...)...)
	if len(rep.Runs) != 1 || rep.Runs[0].Hoist == nil || rep.Runs[0].Ceiling == nil || rep.Machine.CPUs == 0 {
		t.Fatalf("report: %+v", rep)
	}
	for _, p := range []*Phase{rep.Runs[0].Hoist, rep.Runs[0].Ceiling} {
		claim := p.Ops[opClaim]
		// A claim counts when it starts in the window; the two updates of
		// its cycle may start after it: up to 2 short per connection (4).
		if p.Claims == 0 || p.Requests < 3*p.Claims-2*4 || claim.Count != p.Claims || claim.P50 <= 0 || claim.P99 < claim.P50 {
			t.Errorf("%s: %d requests, %d claims, claim latency %+v", p.Server, p.Requests, p.Claims, claim)
		}
		if len(p.Errors) != 0 {
			t.Errorf("%s: errors %v", p.Server, p.Errors)
		}
	}
	if rep.Runs[0].Ratio <= 0 || rep.Median.Ratio <= 0 || rep.Median.HoistClaimsPerSec <= 0 {
		t.Errorf("ratio %v, median %+v", rep.Runs[0].Ratio, rep.Median)
	}
	if !strings.Contains(printed, "ratio hoist/ceiling") {
		t.Errorf("table lacks the ratio:\n%s", printed)
	}
}

// TestFullRun is the documented full run (go run ./e2e/load -scenario
// fleetiq) as a test, behind -load.full.
func TestFullRun(t *testing.T) {
	if !*full {
		t.Skip("the full load takes minutes: go test ./e2e/load -run TestFullRun -load.full -timeout 30m")
	}
	var stdout, stderr bytes.Buffer
	code := run([]string{"-hoist", hoisttest.Binary(t)}, &stdout, &stderr)
	t.Log(stdout.String())
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
}

// TestSignerVerifies checks the load generator's signer against Hoist's
// verifier, across a day boundary (the signing key changes).
func TestSignerVerifies(t *testing.T) {
	body := []byte(`{"GameServerGroupName":"g","GameServerId":"gs-1","UtilizationStatus":"UTILIZED"}`)
	for _, now := range []time.Time{
		time.Date(2025, 6, 1, 23, 59, 59, 0, time.UTC),
		time.Date(2025, 6, 2, 0, 0, 1, 0, time.UTC),
	} {
		s := newSigner(loadCreds.AccessKeyID, loadCreds.Secret, loadCreds.Region, "gamelift", "127.0.0.1:9080")
		for range 2 { // the second signature reuses the cached key and date
			h := s.sign("GameLift.UpdateGameServer", body, now)
			r := httptest.NewRequest(http.MethodPost, "http://127.0.0.1:9080/", bytes.NewReader(body))
			r.Header.Set("Content-Type", jsonContentType)
			r.Header.Set("X-Amz-Target", "GameLift.UpdateGameServer")
			r.Header.Set("X-Amz-Date", h.amzDate)
			r.Header.Set("Authorization", h.authorization)
			a := sigv4.NewAuthenticator(map[string]string{loadCreds.AccessKeyID: loadCreds.Secret}, func() time.Time { return now })
			if _, err := a.Authenticate(r, body); err != nil {
				t.Fatalf("%s: %v", now, err)
			}
			r.Header.Set("X-Amz-Target", "GameLift.ClaimGameServer")
			if _, err := a.Authenticate(r, body); err == nil {
				t.Fatal("a changed X-Amz-Target still verifies")
			}
		}
	}
}

func TestGameServerID(t *testing.T) {
	id, err := gameServerID([]byte(`{"GameServer":{"GameServerGroupArn":"arn","GameServerId":"gs-000042","InstanceId":"i-1"}}`))
	if err != nil || id != "gs-000042" {
		t.Errorf("%q, %v", id, err)
	}
	if _, err := gameServerID([]byte(`{"GameServer":{}}`)); err == nil {
		t.Error("no ID, no error")
	}
}

func TestRawAnswer(t *testing.T) {
	for name, tc := range map[string]struct {
		answer           string
		status           int
		errType, body    string
		wantErr, closeIt bool
	}{
		"ok":      {answer: "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Type: x\r\n\r\n{}", status: 200, body: "{}"},
		"error":   {answer: "HTTP/1.1 400 Bad Request\r\ncontent-length: 5\r\nX-Amzn-ErrorType: Oops\r\n\r\nabcde", status: 400, errType: "Oops", body: "abcde"},
		"close":   {answer: "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 0\r\n\r\n", status: 200, closeIt: true},
		"chunked": {answer: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n", wantErr: true},
		"no size": {answer: "HTTP/1.1 200 OK\r\n\r\n", wantErr: true},
		"garbage": {answer: "SSH-2.0\r\n\r\n", wantErr: true},
	} {
		t.Run(name, func(t *testing.T) {
			server, client := net.Pipe()
			go func() {
				br := bufio.NewReader(server)
				for { // the request has no body: read up to its empty line
					line, err := br.ReadString('\n')
					if err != nil || line == "\r\n" {
						break
					}
				}
				_, _ = server.Write([]byte(tc.answer))
				server.Close()
			}()
			c := &rawConn{host: "h", nc: client, br: bufio.NewReader(client)}
			var resp bytes.Buffer
			status, errType, err := c.roundTrip("GameLift.X", headers{}, nil, &resp)
			if (err != nil) != tc.wantErr || status != tc.status || errType != tc.errType || resp.String() != tc.body {
				t.Errorf("= %d %q %q %v", status, errType, resp.String(), err)
			}
			if closed := c.nc == nil; closed != (tc.closeIt || tc.wantErr) {
				t.Errorf("connection closed: %v", closed)
			}
		})
	}
}

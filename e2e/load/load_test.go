package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hoistgg/hoist/e2e/hoisttest"
	"github.com/hoistgg/hoist/internal/sigv4"
)

var full = flag.Bool("load.full", false, "run the full documented load (10,000 game servers, 32 connections, 3 runs of 20 s; minutes) instead of skipping TestFullRun")

// TestMain lets the test binary serve the ceiling when the load generator
// starts it as one (it starts its own executable).
func TestMain(m *testing.M) {
	if os.Getenv(roleEnv) == roleCeiling {
		os.Exit(serveCeiling())
	}
	os.Exit(m.Run())
}

// TestTinyRun runs the whole load generator in a tiny configuration: the
// real Hoist binary with credentials, the ceiling process, setup, the claim
// loop on both, the report and its JSON.
func TestTinyRun(t *testing.T) {
	out := filepath.Join(t.TempDir(), "load.json")
	var stdout, stderr bytes.Buffer
	code := run([]string{"-duration", "1s", "-warmup", "200ms", "-conns", "4", "-servers", "40", "-instances", "4",
		"-repeats", "1", "-json", out, "-hoist", hoisttest.Binary(t), "-data-parent", t.TempDir()}, &stdout, &stderr)
	t.Log(stdout.String())
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var rep Report
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatalf("JSON report: %v\n%s", err, b)
	}
	if len(rep.Runs) != 1 || rep.Runs[0].Hoist == nil || rep.Runs[0].Ceiling == nil || rep.Machine.CPUs == 0 {
		t.Fatalf("report: %s", b)
	}
	for _, p := range []*Phase{rep.Runs[0].Hoist, rep.Runs[0].Ceiling} {
		claim := p.Ops[opClaim]
		if p.Claims == 0 || p.Requests < 3*p.Claims-4 || claim.Count != p.Claims || claim.P50 <= 0 || claim.P99 < claim.P50 {
			t.Errorf("%s: %d requests, %d claims, claim latency %+v", p.Server, p.Requests, p.Claims, claim)
		}
		if len(p.Errors) != 0 {
			t.Errorf("%s: errors %v", p.Server, p.Errors)
		}
	}
	if rep.Runs[0].Ratio <= 0 || rep.Median.Ratio <= 0 || rep.Median.HoistClaimsPerSec <= 0 {
		t.Errorf("ratio %v, median %+v", rep.Runs[0].Ratio, rep.Median)
	}
	if !strings.Contains(stdout.String(), "ratio hoist/ceiling") {
		t.Errorf("table lacks the ratio:\n%s", stdout.String())
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

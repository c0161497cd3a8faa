package server

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/hoistgg/hoist/internal/api"
	"github.com/hoistgg/hoist/internal/clocktest"
)

// TestProcessLogURLs: a process output URL serves that one process's kept
// output, as plain text the browser must not sniff; the same signature
// does not serve another process of the fleet, another fleet, or once it
// has expired; a setup log URL's signature does not serve a process's
// output.
func TestProcessLogURLs(t *testing.T) {
	clk := clocktest.New(time.Now())
	srv, _ := start(t, clk)
	ctx := context.Background()
	if _, err := srv.fleets.CreateLocation(ctx, &api.CreateLocationInput{LocationName: api.String("custom-logs")}); err != nil {
		t.Fatal(err)
	}
	out, err := srv.fleets.CreateFleet(ctx, &api.CreateFleetInput{Name: api.String("logs"), ComputeType: api.ComputeTypeAnywhere,
		Locations: []api.LocationConfiguration{{Location: api.String("custom-logs")}}})
	if err != nil {
		t.Fatal(err)
	}
	fleetID := api.ToString(out.FleetAttributes.FleetId)
	dir := filepath.Join(srv.cfg.DataDir, "fleets", fleetID, "process-output")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "process-a.log"), []byte("missing config file\n"), 0o600)
	os.WriteFile(filepath.Join(dir, "process-b.log"), []byte("another process\n"), 0o600)

	get := func(u string) (int, string, http.Header) {
		t.Helper()
		resp, err := http.Get(u)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b), resp.Header
	}
	with := func(u, key, value string) string {
		p, _ := url.Parse(u)
		q := p.Query()
		q.Set(key, value)
		p.RawQuery = q.Encode()
		return p.String()
	}
	u := srv.processLogURL(fleetID, "process-a")
	st, body, hdr := get(u)
	if st != 200 || body != "missing config file\n" || hdr.Get("X-Content-Type-Options") != "nosniff" ||
		hdr.Get("Content-Type") != "text/plain; charset=utf-8" {
		t.Fatalf("process output URL: %d %q %v", st, body, hdr)
	}
	if st, body, _ := get(with(u, "processId", "process-b")); st != 403 {
		t.Errorf("the URL of process-a changed to process-b: %d %q, want 403", st, body)
	}
	if st, _, _ := get(with(u, "fleetId", "fleet-other")); st != 403 {
		t.Errorf("the URL changed to another fleet: %d, want 403", st)
	}
	setup, _ := url.Parse(srv.setupLogURL(fleetID, "process-b"))
	if st, _, _ := get(with(setup.String(), "processId", "process-b")); st != 403 {
		t.Errorf("a setup log signature served a process's output: %d, want 403", st)
	}
	if st, _, _ := get(with(u, "processId", "")); st != 400 {
		t.Errorf("a URL without processId: %d, want 400", st)
	}
	if st, _, _ := get(srv.processLogURL(fleetID, "process-gone")); st != 404 {
		t.Errorf("a process whose output is not kept: %d, want 404", st)
	}
	if st, _, _ := get(srv.processLogURL(fleetID, "../../ca-key")); st != 404 {
		t.Errorf("a signed URL naming a path: %d, want 404", st)
	}
	clk.Advance(LogURLTTL + time.Second)
	if st, _, _ := get(u); st != 403 {
		t.Errorf("expired URL: %d, want 403", st)
	}
}

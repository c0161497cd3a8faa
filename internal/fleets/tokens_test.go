package fleets

import (
	"testing"
	"time"

	"github.com/hoistgg/hoist/internal/api"
)

// TestIssueComputeToken: the tokens sdkconn hands out in RefreshConnection
// verify like GetComputeAuthToken's and expire with the same TTL on
// Anywhere fleets.
func TestIssueComputeToken(t *testing.T) {
	h := newHarness(t)
	if _, err := h.svc.CreateLocation(h.ctx, &api.CreateLocationInput{LocationName: api.String("custom-home")}); err != nil {
		t.Fatal(err)
	}
	out, err := h.svc.CreateFleet(h.ctx, &api.CreateFleetInput{Name: api.String("any"), ComputeType: api.ComputeTypeAnywhere,
		Locations: []api.LocationConfiguration{{Location: api.String("custom-home")}}})
	if err != nil {
		t.Fatal(err)
	}
	id := *out.FleetAttributes.FleetId
	if _, err := h.svc.RegisterCompute(h.ctx, &api.RegisterComputeInput{FleetId: api.String(id),
		ComputeName: api.String("box-1"), IpAddress: api.String("127.0.0.2"), Location: api.String("custom-home")}); err != nil {
		t.Fatal(err)
	}
	tok, exp, err := h.svc.IssueComputeToken(h.ctx, id, "box-1")
	if err != nil || !exp.Equal(t0.Add(3*time.Hour)) {
		t.Fatalf("IssueComputeToken = %v, %v; want a token expiring in 3h", exp, err)
	}
	if got, err := h.svc.ComputeTokenExpiry(h.ctx, tok); err != nil || !got.Equal(exp) {
		t.Errorf("ComputeTokenExpiry = %v, %v; want %v", got, err, exp)
	}
	if f, c, err := h.svc.VerifyComputeToken(h.ctx, tok); err != nil || f != id || c != "box-1" {
		t.Errorf("VerifyComputeToken = %s %s %v", f, c, err)
	}
	if _, _, err := h.svc.IssueComputeToken(h.ctx, id, "box-2"); err == nil {
		t.Error("a token was issued for an unregistered compute")
	}
	if _, err := h.svc.ComputeTokenExpiry(h.ctx, "not-a-token"); err == nil {
		t.Error("an unknown token has an expiry")
	}
}

package fleets

import (
	"testing"
	"time"

	"github.com/hoistgg/hoist/internal/api"
	"github.com/hoistgg/hoist/internal/clocktest"
)

// TestTokensOnTheirOwnClock: with a game clock apart from the tokens'
// (a manual clock: Config.TokenNow stays on real time), a compute auth
// token's expiry is measured on the tokens' clock: four hours of game time
// leave it valid, three hours of its own expire it.
func TestTokensOnTheirOwnClock(t *testing.T) {
	wall := clocktest.New(t0.Add(time.Minute))
	h := newHarness(t, func(c *Config) { c.TokenNow = wall.Now })
	if _, err := h.svc.CreateLocation(h.ctx, &api.CreateLocationInput{LocationName: api.String("custom-home")}); err != nil {
		t.Fatal(err)
	}
	out, err := h.svc.CreateFleet(h.ctx, &api.CreateFleetInput{Name: api.String("any"), ComputeType: api.ComputeTypeAnywhere,
		Locations: []api.LocationConfiguration{{Location: api.String("custom-home")}}})
	if err != nil {
		t.Fatal(err)
	}
	id := api.ToString(out.FleetAttributes.FleetId)
	if _, err := h.svc.RegisterCompute(h.ctx, &api.RegisterComputeInput{FleetId: api.String(id), ComputeName: api.String("box-1"),
		IpAddress: api.String("127.0.0.2"), Location: api.String("custom-home")}); err != nil {
		t.Fatal(err)
	}
	tok, err := h.svc.GetComputeAuthToken(h.ctx, &api.GetComputeAuthTokenInput{FleetId: api.String(id), ComputeName: api.String("box-1")})
	if err != nil {
		t.Fatal(err)
	}
	if want := wall.Now().Add(3 * time.Hour); !tok.ExpirationTimestamp.Equal(want) {
		t.Fatalf("the token expires %v, want 3h after the tokens' clock: %v", tok.ExpirationTimestamp.Time, want)
	}
	h.clock.Advance(4 * time.Hour)
	h.reconcile()
	if _, _, err := h.svc.VerifyComputeToken(h.ctx, *tok.AuthToken); err != nil {
		t.Fatalf("four hours of game time expired the token: %v", err)
	}
	wall.Advance(3 * time.Hour)
	if _, _, err := h.svc.VerifyComputeToken(h.ctx, *tok.AuthToken); err == nil {
		t.Fatal("three hours of the tokens' clock later the token was accepted")
	}
}

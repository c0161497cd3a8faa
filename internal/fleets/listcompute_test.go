package fleets

import (
	"strings"
	"testing"

	"github.com/hoistgg/hoist/internal/api"
)

// TestListComputeUnknownFleet: the model lists no NotFoundException for
// ListCompute, so an unknown fleet is an InvalidRequestException naming it
// (found by e2e/api's every-operation sweep).
func TestListComputeUnknownFleet(t *testing.T) {
	h := newHarness(t)
	_, err := h.svc.ListCompute(h.ctx, &api.ListComputeInput{FleetId: api.String("fleet-nope")})
	wantErr[*api.InvalidRequestException](t, err)
	if !strings.Contains(err.Error(), "fleet-nope") {
		t.Fatalf("error %q does not name the fleet", err)
	}
}

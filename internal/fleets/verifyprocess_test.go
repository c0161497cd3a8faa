package fleets

import (
	"errors"
	"slices"
	"testing"

	"github.com/hoistgg/hoist/internal/api"
	"github.com/hoistgg/hoist/internal/hosting"
)

// listingProvider is the fake provider that also says which processes it
// runs (ProcessLister).
type listingProvider struct{ *fakeProvider }

func (p listingProvider) HasProcess(instanceID, processID string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	in := p.instances[instanceID]
	return in != nil && !in.gone && slices.Contains(in.procs, processID)
}

func wantRefused(t *testing.T, what string, err error) {
	t.Helper()
	var se *hosting.SDKError
	if !errors.As(err, &se) || se.Status != 403 {
		t.Errorf("%s: VerifyProcess = %v, want a 403 SDKError", what, err)
	}
}

// TestVerifyProcess: on an EC2 fleet only a process the provider launched
// on that instance may use the instance's credentials; on an Anywhere
// fleet any process ID may; an unknown fleet is refused; a provider that
// cannot list its processes refuses none.
func TestVerifyProcess(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.Provider = listingProvider{c.Provider.(*fakeProvider)} })
	id, inst := h.activeFleet(ec2Input(1))
	proc := h.prov.get(inst).procs[0]
	if err := h.svc.VerifyProcess(h.ctx, id, inst, proc); err != nil {
		t.Errorf("a launched process: VerifyProcess = %v", err)
	}
	wantRefused(t, "a foreign process ID", h.svc.VerifyProcess(h.ctx, id, inst, "process-foreign"))
	wantRefused(t, "a process of another instance", h.svc.VerifyProcess(h.ctx, id, "i-other", proc))
	wantRefused(t, "an unknown fleet", h.svc.VerifyProcess(h.ctx, "fleet-nope", inst, proc))

	if _, err := h.svc.CreateLocation(h.ctx, &api.CreateLocationInput{LocationName: api.String("custom-home")}); err != nil {
		t.Fatal(err)
	}
	out, err := h.svc.CreateFleet(h.ctx, &api.CreateFleetInput{Name: api.String("any"), ComputeType: api.ComputeTypeAnywhere,
		Locations: []api.LocationConfiguration{{Location: api.String("custom-home")}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := h.svc.VerifyProcess(h.ctx, *out.FleetAttributes.FleetId, "box-1", "my-own-id"); err != nil {
		t.Errorf("an Anywhere game server's own process ID: VerifyProcess = %v", err)
	}

	plain := newHarness(t)
	pid, pinst := plain.activeFleet(ec2Input(1))
	if err := plain.svc.VerifyProcess(plain.ctx, pid, pinst, "process-foreign"); err != nil {
		t.Errorf("a provider without ProcessLister: VerifyProcess = %v", err)
	}
}

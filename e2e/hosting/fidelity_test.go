//go:build linux

package hosting

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	gl "github.com/aws/aws-sdk-go-v2/service/gamelift"
	"github.com/aws/aws-sdk-go-v2/service/gamelift/types"

	"github.com/hoistgg/hoist/e2e/hoisttest"
)

// testFleetRules: what GameLift's documentation asks of CreateFleet's
// Locations and of DeleteFleet's fleet status.
func testFleetRules(t *testing.T, e *env) {
	buildID := e.uploadGameServer(t, "fleetrules")

	// "When using this parameter, Amazon GameLift Servers requires you to
	// include your home location in the request."
	in := &gl.CreateFleetInput{Name: aws.String("nohome"), BuildId: aws.String(buildID), EC2InstanceType: types.EC2InstanceTypeC5Large,
		RuntimeConfiguration: &types.RuntimeConfiguration{ServerProcesses: []types.ServerProcess{{
			LaunchPath: aws.String(gameServerLaunchPath), ConcurrentExecutions: aws.Int32(1)}}},
		Locations: []types.LocationConfiguration{{Location: aws.String(remote)}}}
	_, err := e.gl.CreateFleet(e.ctx, in)
	if ire := wantErr[*types.InvalidRequestException](t, "CreateFleet with Locations but not the home location", err); !strings.Contains(ire.ErrorMessage(), hoisttest.Region) {
		t.Errorf("the refusal does not name the home location %s: %s", hoisttest.Region, ire.ErrorMessage())
	}

	// Creation events carry a PreSignedLogUrl where GameLift gives one; it
	// serves the instance's setup log.
	logged := e.newFleet(t, fleetSpec{name: "logged", build: buildID})
	checkSetupLogURLs(t, e, logged)
	e.deleteFleet(t, logged)

	// A fleet that never becomes ACTIVE (its process never calls
	// ProcessReady) cannot be deleted while it is ACTIVATING.
	stuck := aws.ToString(e.createFleet(t, fleetSpec{name: "notready", build: buildID, params: "-no-ready"}).FleetAttributes.FleetId)
	e.waitFleet(t, stuck, types.FleetStatusActivating)
	_, err = e.gl.DeleteFleet(e.ctx, &gl.DeleteFleetInput{FleetId: aws.String(stuck)})
	wantErr[*types.InvalidFleetStatusException](t, "DeleteFleet of an ACTIVATING fleet", err)
	if st := e.fleetStatus(t, stuck); st != types.FleetStatusActivating {
		t.Errorf("after a refused DeleteFleet the fleet is %s, want ACTIVATING", st)
	}

	// RegisterCompute on an Anywhere fleet: "This parameter is required
	// when registering a compute for an Anywhere fleet" (Location), "When
	// registering an Anywhere fleet, an IP address is required" (IpAddress).
	const loc = "custom-e2e-rules"
	if _, err := e.gl.CreateLocation(e.ctx, &gl.CreateLocationInput{LocationName: aws.String(loc)}); err != nil {
		t.Fatalf("CreateLocation: %v", err)
	}
	created, err := e.gl.CreateFleet(e.ctx, &gl.CreateFleetInput{Name: aws.String("rules-anywhere"), ComputeType: types.ComputeTypeAnywhere,
		Locations: []types.LocationConfiguration{{Location: aws.String(loc)}}})
	if err != nil {
		t.Fatalf("CreateFleet ANYWHERE: %v", err)
	}
	anywhere := aws.ToString(created.FleetAttributes.FleetId)
	e.waitFleet(t, anywhere, types.FleetStatusActive)
	for field, in := range map[string]*gl.RegisterComputeInput{
		"Location":  {FleetId: aws.String(anywhere), ComputeName: aws.String("box"), IpAddress: aws.String("127.0.0.1")},
		"IpAddress": {FleetId: aws.String(anywhere), ComputeName: aws.String("box"), DnsName: aws.String("localhost"), Location: aws.String(loc)},
	} {
		_, err := e.gl.RegisterCompute(e.ctx, in)
		if ire := wantErr[*types.InvalidRequestException](t, "RegisterCompute without "+field, err); !strings.Contains(ire.ErrorMessage(), field) {
			t.Errorf("RegisterCompute without %s: the refusal does not name it: %s", field, ire.ErrorMessage())
		}
	}
	e.register(t, anywhere, "box", loc)
	e.deleteFleet(t, anywhere)
}

// TestCapacityFollowsActive: DescribeFleetCapacity counts the instance
// ACTIVE as soon as DescribeFleetAttributes says ACTIVE. The reconciler
// runs only when woken (its interval is an hour), so a capacity that waits
// for its next pass would show the window.
func TestCapacityFollowsActive(t *testing.T) {
	e := startHoist(t, "fleets.reconcile=1h")
	e.dumpOnFailure(t)
	buildID := e.uploadGameServer(t, "capacity")
	fleetID := aws.ToString(e.createFleet(t, fleetSpec{name: "capacity", build: buildID}).FleetAttributes.FleetId)
	e.waitFleet(t, fleetID, types.FleetStatusActive)
	out, err := e.gl.DescribeFleetCapacity(e.ctx, &gl.DescribeFleetCapacityInput{FleetIds: []string{fleetID}})
	if err != nil || len(out.FleetCapacity) != 1 {
		t.Fatalf("DescribeFleetCapacity: %+v, %v", out, err)
	}
	if c := out.FleetCapacity[0].InstanceCounts; aws.ToInt32(c.ACTIVE) != 1 || aws.ToInt32(c.PENDING) != 0 {
		t.Errorf("an ACTIVE fleet's capacity: ACTIVE %d PENDING %d, want 1 and 0", aws.ToInt32(c.ACTIVE), aws.ToInt32(c.PENDING))
	}
	inst, err := e.gl.DescribeInstances(e.ctx, &gl.DescribeInstancesInput{FleetId: aws.String(fleetID)})
	if err != nil || len(inst.Instances) != 1 || inst.Instances[0].Status != types.InstanceStatusActive {
		t.Errorf("DescribeInstances of an ACTIVE fleet: %+v, %v", inst, err)
	}
}

// checkSetupLogURLs checks the PreSignedLogUrl of an ACTIVE fleet's
// creation events: present on the three GameLift documents, absent on
// FLEET_CREATED, and serving a setup log that lists the steps.
func checkSetupLogURLs(t *testing.T, e *env, fleetID string) {
	t.Helper()
	var url string
	for _, ev := range e.events(t, fleetID) {
		u := aws.ToString(ev.PreSignedLogUrl)
		switch ev.EventCode {
		case types.EventCodeFleetCreationExtractingBuild, types.EventCodeFleetCreationValidatingRuntimeConfig:
			if u == "" {
				t.Errorf("event %s has no PreSignedLogUrl", ev.EventCode)
			}
			url = u
		case types.EventCodeFleetCreated, types.EventCodeFleetStateActive:
			if u != "" {
				t.Errorf("event %s has a PreSignedLogUrl %s", ev.EventCode, u)
			}
		}
	}
	if url == "" {
		t.Fatalf("no creation event with a PreSignedLogUrl:\n%s", e.eventText(t, fleetID))
	}
	body, status := httpGet(t, url)
	if status != http.StatusOK || !strings.Contains(body, string(types.EventCodeFleetCreationExtractingBuild)) ||
		!strings.Contains(body, string(types.EventCodeFleetCreationValidatingRuntimeConfig)) {
		t.Errorf("GET PreSignedLogUrl: %d\n%s", status, body)
	}
	if _, status := httpGet(t, strings.Replace(url, "signature=", "signature=0", 1)); status != http.StatusForbidden {
		t.Errorf("GET a tampered PreSignedLogUrl: %d, want 403", status)
	}
}

// httpGet fetches url and returns its body and status.
func httpGet(t *testing.T, url string) (string, int) {
	t.Helper()
	c := &http.Client{Timeout: waitShort, Transport: &http.Transport{Proxy: nil}}
	resp, err := c.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	return string(b), resp.StatusCode
}

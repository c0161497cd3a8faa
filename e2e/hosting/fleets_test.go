//go:build linux

package hosting

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	gl "github.com/aws/aws-sdk-go-v2/service/gamelift"
	"github.com/aws/aws-sdk-go-v2/service/gamelift/types"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/hoistgg/hoist/e2e/hoisttest"
)

// remote is the remote location the fleet tests add; Hoist runs its
// instances on this machine like the home Region's.
const remote = "us-east-1"

// buildFromStorageLocation puts the game server's archive in Hoist's bucket
// with the API credentials, then creates a build from it with
// CreateBuild's StorageLocation.
func (e *env) buildFromStorageLocation(t *testing.T, key string) string {
	t.Helper()
	_, archive := gameServer(t)
	bucket := "hoist-builds-" + hoisttest.Region
	s3c := e.s3Client(hoisttest.AccessKeyID, hoisttest.SecretAccessKey, "")
	if _, err := s3c.PutObject(e.ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(key),
		Body: bytes.NewReader(archive)}); err != nil {
		t.Fatalf("PutObject %s with the API credentials: %v", key, err)
	}
	out, err := e.gl.CreateBuild(e.ctx, &gl.CreateBuildInput{Name: aws.String("from-s3"), Version: aws.String("2"),
		OperatingSystem: types.OperatingSystemAmazonLinux2023,
		StorageLocation: &types.S3Location{Bucket: aws.String(bucket), Key: aws.String(key),
			RoleArn: aws.String("arn:aws:iam::" + hoisttest.Account + ":role/unused")}})
	if err != nil {
		t.Fatalf("CreateBuild with a StorageLocation: %v", err)
	}
	if out.UploadCredentials != nil {
		t.Errorf("CreateBuild with a StorageLocation returned upload credentials")
	}
	id := aws.ToString(out.Build.BuildId)
	// GameLift reports SizeOnDisk 0 for a build from a StorageLocation.
	if b := e.waitBuild(t, id, types.BuildStatusReady); aws.ToInt64(b.SizeOnDisk) != 0 {
		t.Errorf("SizeOnDisk of a build from a StorageLocation = %d, want 0", aws.ToInt64(b.SizeOnDisk))
	}
	return id
}

// testFleetOperations: the fleet, location, capacity, utilization, event,
// port, runtime configuration and instance operations on an EC2 fleet with
// a remote location, built from an object uploaded beforehand.
func testFleetOperations(t *testing.T, e *env) {
	buildID := e.buildFromStorageLocation(t, "games/ops.zip")
	start := time.Now().Add(-time.Minute)
	created := e.createFleet(t, fleetSpec{name: "ops", build: buildID, locations: []string{hoisttest.Region, remote}})
	fleetID := aws.ToString(created.FleetAttributes.FleetId)
	if len(created.LocationStates) != 2 {
		t.Errorf("CreateFleet LocationStates: %+v", created.LocationStates)
	}
	e.waitFleet(t, fleetID, types.FleetStatusActive)
	e.waitLocation(t, fleetID, remote, types.FleetStatusActive)
	waitPIDs(t, fleetID, 2)

	opsDescribe(t, e, fleetID, buildID, start)
	opsInstances(t, e, fleetID)
	gs := opsPortsAndAttributes(t, e, fleetID)
	opsRuntimeAndLocations(t, e, fleetID)
	// Deleting the fleet ends its game sessions, protected or not.
	e.deleteFleet(t, fleetID)
	if st := e.gameSession(t, aws.ToString(gs.GameSessionId)).Status; st != types.GameSessionStatusTerminated {
		t.Errorf("the game session of a deleted fleet is %s, want TERMINATED", st)
	}
}

// opsDescribe checks the lists and descriptions of a new fleet.
func opsDescribe(t *testing.T, e *env, fleetID, buildID string, start time.Time) {
	list, err := e.gl.ListFleets(e.ctx, &gl.ListFleetsInput{BuildId: aws.String(buildID)})
	if err != nil || !slices.Equal(list.FleetIds, []string{fleetID}) {
		t.Errorf("ListFleets by build: %+v, %v", list, err)
	}
	list, err = e.gl.ListFleets(e.ctx, &gl.ListFleetsInput{})
	if err != nil || !slices.Contains(list.FleetIds, fleetID) {
		t.Errorf("ListFleets: %+v, %v", list, err)
	}
	attrs, err := e.gl.DescribeFleetAttributes(e.ctx, &gl.DescribeFleetAttributesInput{FleetIds: []string{fleetID}})
	if err != nil {
		t.Fatal(err)
	}
	a := attrs.FleetAttributes[0]
	if aws.ToString(a.BuildId) != buildID || aws.ToString(a.BuildArn) == "" || a.InstanceType != types.EC2InstanceTypeC5Large ||
		a.ComputeType != types.ComputeTypeEc2 || a.FleetType != types.FleetTypeOnDemand ||
		a.OperatingSystem != types.OperatingSystemAmazonLinux2023 || aws.ToString(a.FleetArn) == "" {
		t.Errorf("DescribeFleetAttributes: %+v", a)
	}

	// Capacity and utilization, fleet-wide (home location) and per location.
	eventually(t, waitShort, "instances ACTIVE", func() (bool, string) {
		c, err := e.gl.DescribeFleetCapacity(e.ctx, &gl.DescribeFleetCapacityInput{FleetIds: []string{fleetID}})
		if err != nil {
			return false, err.Error()
		}
		n := c.FleetCapacity[0].InstanceCounts
		return aws.ToInt32(n.DESIRED) == 1 && aws.ToInt32(n.ACTIVE) == 1, fmt.Sprintf("%+v", *n)
	})
	lc, err := e.gl.DescribeFleetLocationCapacity(e.ctx, &gl.DescribeFleetLocationCapacityInput{FleetId: aws.String(fleetID), Location: aws.String(remote)})
	if err != nil || aws.ToString(lc.FleetCapacity.Location) != remote || aws.ToInt32(lc.FleetCapacity.InstanceCounts.DESIRED) != 1 {
		t.Errorf("DescribeFleetLocationCapacity: %+v, %v", lc, err)
	}
	if u := e.utilization(t, fleetID); aws.ToInt32(u.ActiveServerProcessCount) != 1 {
		t.Errorf("DescribeFleetUtilization: %+v", u)
	}
	lu, err := e.gl.DescribeFleetLocationUtilization(e.ctx, &gl.DescribeFleetLocationUtilizationInput{FleetId: aws.String(fleetID), Location: aws.String(remote)})
	if err != nil || aws.ToInt32(lu.FleetUtilization.ActiveServerProcessCount) != 1 {
		t.Errorf("DescribeFleetLocationUtilization: %+v, %v", lu, err)
	}
	ev, err := e.gl.DescribeFleetEvents(e.ctx, &gl.DescribeFleetEventsInput{FleetId: aws.String(fleetID),
		StartTime: aws.Time(start), EndTime: aws.Time(time.Now().Add(time.Minute))})
	if err != nil || len(ev.Events) == 0 {
		t.Errorf("DescribeFleetEvents in a time range: %+v, %v", ev, err)
	}
	if !e.hasEvent(t, fleetID, types.EventCodeLocationStateActive, remote) {
		t.Errorf("no LOCATION_STATE_ACTIVE event for %s:\n%s", remote, e.eventText(t, fleetID))
	}
}

// opsInstances checks the fleet's instances as instances and as computes.
func opsInstances(t *testing.T, e *env, fleetID string) {
	// Instances and computes.
	inst, err := e.gl.DescribeInstances(e.ctx, &gl.DescribeInstancesInput{FleetId: aws.String(fleetID)})
	if err != nil || len(inst.Instances) != 1 {
		t.Fatalf("DescribeInstances: %+v, %v", inst, err)
	}
	home := inst.Instances[0]
	if home.Status != types.InstanceStatusActive || aws.ToString(home.IpAddress) != "127.0.0.1" || aws.ToString(home.DnsName) == "" ||
		aws.ToString(home.Location) != hoisttest.Region {
		t.Errorf("DescribeInstances: %+v", home)
	}
	inst, err = e.gl.DescribeInstances(e.ctx, &gl.DescribeInstancesInput{FleetId: aws.String(fleetID), Location: aws.String(remote)})
	if err != nil || len(inst.Instances) != 1 || aws.ToString(inst.Instances[0].Location) != remote {
		t.Errorf("DescribeInstances in %s: %+v, %v", remote, inst, err)
	}
	one, err := e.gl.DescribeInstances(e.ctx, &gl.DescribeInstancesInput{FleetId: aws.String(fleetID), InstanceId: home.InstanceId})
	if err != nil || len(one.Instances) != 1 {
		t.Errorf("DescribeInstances by InstanceId: %+v, %v", one, err)
	}
	computes, err := e.gl.ListCompute(e.ctx, &gl.ListComputeInput{FleetId: aws.String(fleetID)})
	if err != nil || len(computes.ComputeList) != 2 {
		t.Errorf("ListCompute: %+v, %v", computes, err)
	}
	dc, err := e.gl.DescribeCompute(e.ctx, &gl.DescribeComputeInput{FleetId: aws.String(fleetID), ComputeName: home.InstanceId})
	if err != nil || aws.ToString(dc.Compute.ComputeName) != aws.ToString(home.InstanceId) {
		t.Errorf("DescribeCompute: %+v, %v", dc, err)
	}
	access, err := e.gl.GetComputeAccess(e.ctx, &gl.GetComputeAccessInput{FleetId: aws.String(fleetID), ComputeName: home.InstanceId})
	if err != nil || aws.ToString(access.ComputeName) != aws.ToString(home.InstanceId) {
		t.Errorf("GetComputeAccess: %+v, %v", access, err)
	}
	_, err = e.gl.RegisterCompute(e.ctx, &gl.RegisterComputeInput{FleetId: aws.String(fleetID), ComputeName: aws.String("x"), IpAddress: aws.String("127.0.0.1")})
	wantErr[*types.InvalidRequestException](t, "RegisterCompute on an EC2 fleet", err)
	limits, err := e.gl.DescribeEC2InstanceLimits(e.ctx, &gl.DescribeEC2InstanceLimitsInput{EC2InstanceType: types.EC2InstanceTypeC5Large})
	if err != nil || len(limits.EC2InstanceLimits) == 0 || aws.ToInt32(limits.EC2InstanceLimits[0].InstanceLimit) < 1 {
		t.Errorf("DescribeEC2InstanceLimits: %+v, %v", limits, err)
	}
}

// opsPortsAndAttributes changes the fleet's ports and attributes and
// returns a game session created after the change.
func opsPortsAndAttributes(t *testing.T, e *env, fleetID string) types.GameSession {
	// Ports.
	ports, err := e.gl.DescribeFleetPortSettings(e.ctx, &gl.DescribeFleetPortSettingsInput{FleetId: aws.String(fleetID)})
	if err != nil || len(ports.InboundPermissions) != 1 || aws.ToInt32(ports.InboundPermissions[0].FromPort) != 1026 {
		t.Fatalf("DescribeFleetPortSettings: %+v, %v", ports, err)
	}
	udp := types.IpPermission{FromPort: aws.Int32(7777), ToPort: aws.Int32(7778), IpRange: aws.String("10.0.0.0/8"), Protocol: types.IpProtocolUdp}
	if _, err := e.gl.UpdateFleetPortSettings(e.ctx, &gl.UpdateFleetPortSettingsInput{FleetId: aws.String(fleetID),
		InboundPermissionAuthorizations: []types.IpPermission{udp}, InboundPermissionRevocations: ports.InboundPermissions}); err != nil {
		t.Fatalf("UpdateFleetPortSettings: %v", err)
	}
	ports, err = e.gl.DescribeFleetPortSettings(e.ctx, &gl.DescribeFleetPortSettingsInput{FleetId: aws.String(fleetID)})
	if err != nil || len(ports.InboundPermissions) != 1 || ports.InboundPermissions[0].Protocol != types.IpProtocolUdp {
		t.Errorf("DescribeFleetPortSettings after the update: %+v, %v", ports, err)
	}

	// Attributes: the protection policy applies to new game sessions.
	if _, err := e.gl.UpdateFleetAttributes(e.ctx, &gl.UpdateFleetAttributesInput{FleetId: aws.String(fleetID), Name: aws.String("ops-renamed"),
		Description: aws.String("described"), NewGameSessionProtectionPolicy: types.ProtectionPolicyFullProtection,
		MetricGroups: []string{"e2e"}}); err != nil {
		t.Fatalf("UpdateFleetAttributes: %v", err)
	}
	attrs, err := e.gl.DescribeFleetAttributes(e.ctx, &gl.DescribeFleetAttributesInput{FleetIds: []string{fleetID}})
	if a := attrs.FleetAttributes[0]; err != nil || aws.ToString(a.Name) != "ops-renamed" || aws.ToString(a.Description) != "described" ||
		a.NewGameSessionProtectionPolicy != types.ProtectionPolicyFullProtection || !slices.Equal(a.MetricGroups, []string{"e2e"}) {
		t.Errorf("DescribeFleetAttributes after UpdateFleetAttributes: %+v, %v", attrs, err)
	}
	if !e.hasEvent(t, fleetID, types.EventCodeFleetNewGameSessionProtectionPolicyUpdated, "") {
		t.Errorf("no FLEET_NEW_GAME_SESSION_PROTECTION_POLICY_UPDATED event")
	}
	gs := e.createIn(t, fleetID, remote)
	// GameLift: arn:aws:gamelift:<location>::gamesession/<fleet ID>/<ID>.
	if id, want := aws.ToString(gs.GameSessionId), "arn:aws:gamelift:"+remote+"::gamesession/"+fleetID+"/"; !strings.HasPrefix(id, want) {
		t.Errorf("game session in %s has ID %s, want %s...", remote, id, want)
	}
	if aws.ToString(gs.Location) != remote {
		t.Errorf("game session in %s reports Location %s", remote, aws.ToString(gs.Location))
	}
	det, err := e.gl.DescribeGameSessionDetails(e.ctx, &gl.DescribeGameSessionDetailsInput{GameSessionId: gs.GameSessionId})
	if err != nil || det.GameSessionDetails[0].ProtectionPolicy != types.ProtectionPolicyFullProtection {
		t.Errorf("a game session created after the policy change: %+v, %v", det, err)
	}
	return gs
}

// opsRuntimeAndLocations changes the runtime configuration, then adds and
// deletes a location, and checks the processes that run.
func opsRuntimeAndLocations(t *testing.T, e *env, fleetID string) {
	// The runtime configuration: more processes per instance start at once.
	rc := &types.RuntimeConfiguration{ServerProcesses: []types.ServerProcess{{LaunchPath: aws.String(gameServerLaunchPath),
		ConcurrentExecutions: aws.Int32(2)}}, GameSessionActivationTimeoutSeconds: aws.Int32(30)}
	if _, err := e.gl.UpdateRuntimeConfiguration(e.ctx, &gl.UpdateRuntimeConfigurationInput{FleetId: aws.String(fleetID), RuntimeConfiguration: rc}); err != nil {
		t.Fatalf("UpdateRuntimeConfiguration: %v", err)
	}
	got, err := e.gl.DescribeRuntimeConfiguration(e.ctx, &gl.DescribeRuntimeConfigurationInput{FleetId: aws.String(fleetID)})
	if err != nil || aws.ToInt32(got.RuntimeConfiguration.ServerProcesses[0].ConcurrentExecutions) != 2 ||
		aws.ToInt32(got.RuntimeConfiguration.GameSessionActivationTimeoutSeconds) != 30 {
		t.Errorf("DescribeRuntimeConfiguration: %+v, %v", got, err)
	}
	waitPIDs(t, fleetID, 4)

	// A location added, then deleted: its instance starts, then stops.
	if _, err := e.gl.CreateFleetLocations(e.ctx, &gl.CreateFleetLocationsInput{FleetId: aws.String(fleetID),
		Locations: []types.LocationConfiguration{{Location: aws.String("eu-west-1")}}}); err != nil {
		t.Fatalf("CreateFleetLocations: %v", err)
	}
	e.waitLocation(t, fleetID, "eu-west-1", types.FleetStatusActive)
	waitPIDs(t, fleetID, 6)
	if _, err := e.gl.DeleteFleetLocations(e.ctx, &gl.DeleteFleetLocationsInput{FleetId: aws.String(fleetID), Locations: []string{"eu-west-1"}}); err != nil {
		t.Fatalf("DeleteFleetLocations: %v", err)
	}
	e.waitLocation(t, fleetID, "eu-west-1", types.FleetStatusTerminated)
	waitPIDs(t, fleetID, 4)
}

// waitLocation waits for a fleet location's status.
func (e *env) waitLocation(t *testing.T, fleetID, loc string, want types.FleetStatus) {
	t.Helper()
	eventually(t, waitLong, "location "+loc+" "+string(want), func() (bool, string) {
		out, err := e.gl.DescribeFleetLocationAttributes(e.ctx, &gl.DescribeFleetLocationAttributesInput{FleetId: aws.String(fleetID),
			Locations: []string{loc}})
		if err != nil {
			return false, err.Error()
		}
		if len(out.LocationAttributes) != 1 {
			return false, fmt.Sprintf("%d locations", len(out.LocationAttributes))
		}
		st := out.LocationAttributes[0].LocationState.Status
		if st == types.FleetStatusError && want != st {
			t.Fatalf("location %s is ERROR:\n%s", loc, e.eventText(t, fleetID))
		}
		return st == want, string(st)
	})
}

// testScaling: UpdateFleetCapacity starts and stops instances; scale-in
// spares an instance whose game session is protected until the protection
// is lifted; a scaling policy scales out once fleet actions are started.
func testScaling(t *testing.T, e *env) {
	buildID := e.uploadGameServer(t, "scaling")
	fleetID := e.newFleet(t, fleetSpec{name: "scaling", build: buildID, protection: types.ProtectionPolicyFullProtection})
	setCapacity := func(desired, lo, hi int32) {
		t.Helper()
		if _, err := e.gl.UpdateFleetCapacity(e.ctx, &gl.UpdateFleetCapacityInput{FleetId: aws.String(fleetID),
			DesiredInstances: aws.Int32(desired), MinSize: aws.Int32(lo), MaxSize: aws.Int32(hi)}); err != nil {
			t.Fatalf("UpdateFleetCapacity %d [%d, %d]: %v", desired, lo, hi, err)
		}
	}
	_, err := e.gl.UpdateFleetCapacity(e.ctx, &gl.UpdateFleetCapacityInput{FleetId: aws.String(fleetID),
		DesiredInstances: aws.Int32(5), MaxSize: aws.Int32(3)})
	wantErr[*types.InvalidRequestException](t, "UpdateFleetCapacity above MaxSize", err)

	setCapacity(3, 0, 3)
	e.waitInstances(t, fleetID, 3)
	waitPIDs(t, fleetID, 3)
	e.waitIdleProcesses(t, fleetID, 3)
	gs := e.createGameSession(t, fleetID, 2)
	keep := aws.ToString(gs.ComputeName)

	// Scale in to none: the instance with the protected session stays.
	// (MaxSize 1 keeps the scaling policy below at one instance however
	// often it fires while that instance starts.)
	setCapacity(0, 0, 1)
	eventually(t, waitLong, "scale-in spares the protected instance", func() (bool, string) {
		ids := e.instanceIDs(t, fleetID)
		return slices.Equal(ids, []string{keep}), fmt.Sprint(ids)
	})
	waitPIDs(t, fleetID, 1)
	if st := e.gameSession(t, aws.ToString(gs.GameSessionId)).Status; st != types.GameSessionStatusActive {
		t.Fatalf("the protected game session is %s", st)
	}
	if !e.hasEvent(t, fleetID, types.EventCodeFleetScalingEvent, "") {
		t.Errorf("no FLEET_SCALING_EVENT:\n%s", e.eventText(t, fleetID))
	}
	// Unprotected, it goes too, and its game session ends.
	if _, err := e.gl.UpdateGameSession(e.ctx, &gl.UpdateGameSessionInput{GameSessionId: gs.GameSessionId,
		ProtectionPolicy: types.ProtectionPolicyNoProtection}); err != nil {
		t.Fatal(err)
	}
	e.waitInstances(t, fleetID, 0)
	waitNoProcesses(t, fleetID)
	e.waitGameSession(t, aws.ToString(gs.GameSessionId), types.GameSessionStatusTerminated)

	// A scaling policy: no game session can be placed (no instance), so it
	// adds one, once AUTO_SCALING is started again.
	if _, err := e.gl.StopFleetActions(e.ctx, &gl.StopFleetActionsInput{FleetId: aws.String(fleetID),
		Actions: []types.FleetAction{types.FleetActionAutoScaling}}); err != nil {
		t.Fatalf("StopFleetActions: %v", err)
	}
	attrs, err := e.gl.DescribeFleetAttributes(e.ctx, &gl.DescribeFleetAttributesInput{FleetIds: []string{fleetID}})
	if err != nil || !slices.Equal(attrs.FleetAttributes[0].StoppedActions, []types.FleetAction{types.FleetActionAutoScaling}) {
		t.Errorf("StoppedActions after StopFleetActions: %+v, %v", attrs, err)
	}
	rule := &gl.PutScalingPolicyInput{FleetId: aws.String(fleetID), Name: aws.String("add-when-full"),
		PolicyType: types.PolicyTypeRuleBased, MetricName: types.MetricNameAvailableGameSessions,
		ComparisonOperator: types.ComparisonOperatorTypeLessThanOrEqualToThreshold, Threshold: aws.Float64(0),
		EvaluationPeriods: aws.Int32(1), ScalingAdjustmentType: types.ScalingAdjustmentTypeChangeInCapacity, ScalingAdjustment: aws.Int32(1)}
	if _, err := e.gl.PutScalingPolicy(e.ctx, rule); err != nil {
		t.Fatalf("PutScalingPolicy (rule-based): %v", err)
	}
	if _, err := e.gl.PutScalingPolicy(e.ctx, &gl.PutScalingPolicyInput{FleetId: aws.String(fleetID), Name: aws.String("target"),
		PolicyType: types.PolicyTypeTargetBased, MetricName: types.MetricNamePercentAvailableGameSessions,
		TargetConfiguration: &types.TargetConfiguration{TargetValue: aws.Float64(10)}}); err != nil {
		t.Fatalf("PutScalingPolicy (target-based): %v", err)
	}
	pols, err := e.gl.DescribeScalingPolicies(e.ctx, &gl.DescribeScalingPoliciesInput{FleetId: aws.String(fleetID)})
	if err != nil || len(pols.ScalingPolicies) != 2 || pols.ScalingPolicies[0].Status != types.ScalingStatusTypeActive {
		t.Fatalf("DescribeScalingPolicies: %+v, %v", pols, err)
	}
	if _, err := e.gl.DeleteScalingPolicy(e.ctx, &gl.DeleteScalingPolicyInput{FleetId: aws.String(fleetID), Name: aws.String("target")}); err != nil {
		t.Fatalf("DeleteScalingPolicy: %v", err)
	}
	_, err = e.gl.DeleteScalingPolicy(e.ctx, &gl.DeleteScalingPolicyInput{FleetId: aws.String(fleetID), Name: aws.String("target")})
	wantErr[*types.NotFoundException](t, "DeleteScalingPolicy of a deleted policy", err)
	if _, err := e.gl.StartFleetActions(e.ctx, &gl.StartFleetActionsInput{FleetId: aws.String(fleetID),
		Actions: []types.FleetAction{types.FleetActionAutoScaling}}); err != nil {
		t.Fatalf("StartFleetActions: %v", err)
	}
	e.waitInstances(t, fleetID, 1)
	waitPIDs(t, fleetID, 1)
	if !e.hasEvent(t, fleetID, types.EventCodeFleetScalingEvent, "add-when-full") {
		t.Errorf("no scaling event naming the policy:\n%s", e.eventText(t, fleetID))
	}
	if _, err := e.gl.DeleteScalingPolicy(e.ctx, &gl.DeleteScalingPolicyInput{FleetId: aws.String(fleetID), Name: aws.String("add-when-full")}); err != nil {
		t.Fatalf("DeleteScalingPolicy: %v", err)
	}
	pols, err = e.gl.DescribeScalingPolicies(e.ctx, &gl.DescribeScalingPoliciesInput{FleetId: aws.String(fleetID)})
	if err != nil || len(pols.ScalingPolicies) != 0 {
		t.Errorf("DescribeScalingPolicies after deleting both: %+v, %v", pols, err)
	}
	e.deleteFleet(t, fleetID)
}

// instanceIDs lists a fleet's home location instances.
func (e *env) instanceIDs(t *testing.T, fleetID string) []string {
	t.Helper()
	out, err := e.gl.DescribeInstances(e.ctx, &gl.DescribeInstancesInput{FleetId: aws.String(fleetID)})
	if err != nil {
		t.Fatalf("DescribeInstances: %v", err)
	}
	var ids []string
	for _, i := range out.Instances {
		ids = append(ids, aws.ToString(i.InstanceId))
	}
	slices.Sort(ids)
	return ids
}

// waitInstances waits until the fleet's home location has n ACTIVE
// instances and no other.
func (e *env) waitInstances(t *testing.T, fleetID string, n int) {
	t.Helper()
	eventually(t, waitLong, fmt.Sprintf("%d ACTIVE instances", n), func() (bool, string) {
		out, err := e.gl.DescribeInstances(e.ctx, &gl.DescribeInstancesInput{FleetId: aws.String(fleetID)})
		if err != nil {
			return false, err.Error()
		}
		active := 0
		var states []string
		for _, i := range out.Instances {
			states = append(states, string(i.Status))
			if i.Status == types.InstanceStatusActive {
				active++
			}
		}
		return active == n && len(out.Instances) == n, fmt.Sprint(states)
	})
}

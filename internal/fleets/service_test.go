package fleets

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hoistgg/hoist/internal/api"
	"github.com/hoistgg/hoist/internal/hosting"
	"github.com/hoistgg/hoist/internal/pki"
	"github.com/hoistgg/hoist/internal/store"
)

func TestEC2FleetLifecycle(t *testing.T) {
	h := newHarness(t)
	out, err := h.svc.CreateFleet(h.ctx, ec2Input(2))
	if err != nil {
		t.Fatal(err)
	}
	id := *out.FleetAttributes.FleetId
	if out.FleetAttributes.Status != api.FleetStatusNew || len(out.LocationStates) != 1 ||
		*out.LocationStates[0].Location != "us-west-2" || out.FleetAttributes.OperatingSystem != api.OperatingSystemAmazonLinux2023 {
		t.Fatalf("CreateFleet answered %+v", out)
	}
	h.reconcile()
	if st := h.status(id); st != api.FleetStatusDownloading {
		t.Fatalf("after the first pass the fleet is %s, want DOWNLOADING", st)
	}
	started := h.prov.started()
	if len(started) != 1 {
		t.Fatalf("%d instances started, want 1", len(started))
	}
	inst := started[0]
	if len(inst) != 19 || !strings.HasPrefix(inst, "i-") {
		t.Errorf("instance ID %q is not i- and 17 hex digits", inst)
	}
	checkEnv(t, h, id, inst)
	c := h.compute(id, inst)
	if c.Status != api.ComputeStatusPending || c.Host != "r1" || c.IPAddress != "127.0.0.1" ||
		c.DNSName != "ec2-127-0-0-1.us-west-2.compute.localhost" || c.GameRoot == "" {
		t.Fatalf("new instance recorded as %+v", c)
	}
	h.setUp(inst)
	if st := h.status(id); st != api.FleetStatusActivating {
		t.Fatalf("after setup the fleet is %s, want ACTIVATING", st)
	}
	p1, p2 := h.launch(inst), h.launch(inst)
	h.reconcile() // nothing ready yet: the instance stays PENDING
	if c := h.compute(id, inst); c.Status != api.ComputeStatusPending {
		t.Fatalf("instance is %s before any process is ready", c.Status)
	}
	h.ready(id, inst, p1)
	if st := h.status(id); st != api.FleetStatusActive {
		t.Fatalf("after the first ProcessReady the fleet is %s, want ACTIVE", st)
	}
	h.ready(id, inst, p2)
	h.reconcile()
	if c := h.compute(id, inst); c.Status != api.ComputeStatusActive || c.InstanceStatus != api.InstanceStatusActive {
		t.Fatalf("instance is %s/%s, want ACTIVE", c.Status, c.InstanceStatus)
	}
	want := []api.EventCode{api.EventCodeFleetCreated, api.EventCodeFleetStateDownloading,
		api.EventCodeFleetCreationExtractingBuild, api.EventCodeFleetStateValidating,
		api.EventCodeFleetCreationValidatingRuntimeConfig, api.EventCodeFleetStateBuilding,
		api.EventCodeFleetStateActivating, api.EventCodeFleetStateActive}
	if got := h.events(id); !slices.Equal(got, want) {
		t.Fatalf("events\n got %v\nwant %v", got, want)
	}
	capOut, err := h.svc.DescribeFleetCapacity(h.ctx, &api.DescribeFleetCapacityInput{FleetIds: []string{id}})
	if err != nil {
		t.Fatal(err)
	}
	ic := capOut.FleetCapacity[0].InstanceCounts
	if *ic.DESIRED != 1 || *ic.ACTIVE != 1 || *ic.IDLE != 1 || *ic.PENDING != 0 || *ic.MAXIMUM != 1 || *ic.MINIMUM != 0 {
		t.Fatalf("capacity %+v", *ic)
	}
	util, err := h.svc.DescribeFleetUtilization(h.ctx, &api.DescribeFleetUtilizationInput{})
	if err != nil {
		t.Fatal(err)
	}
	if u := util.FleetUtilization[0]; *u.ActiveServerProcessCount != 2 || *u.ActiveGameSessionCount != 0 || *u.Location != "us-west-2" {
		t.Fatalf("utilization %+v", u)
	}
}

// checkEnv checks the environment an instance's processes get and that
// their token authenticates as the instance.
func checkEnv(t *testing.T, h *harness, fleetID, inst string) {
	t.Helper()
	env := map[string]string{}
	for _, kv := range h.prov.get(inst).spec.Env {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	if env["GAMELIFT_SDK_WEBSOCKET_URL"] != "ws://127.0.0.1:9080/sdk" || env["GAMELIFT_SDK_FLEET_ID"] != fleetID ||
		env["GAMELIFT_SDK_HOST_ID"] != inst || env["HEALTHCHECK_INTERVAL"] != "5" || len(env["GAMELIFT_SDK_AUTH_TOKEN"]) != 64 {
		t.Fatalf("process environment %v", env)
	}
	if _, ok := env["GAMELIFT_REGION"]; ok {
		t.Error("GAMELIFT_REGION is set: the SDK refuses an auth token together with a Region")
	}
	f, c, err := h.svc.VerifyComputeToken(h.ctx, env["GAMELIFT_SDK_AUTH_TOKEN"])
	if err != nil || f != fleetID || c != inst {
		t.Fatalf("VerifyComputeToken = %s, %s, %v", f, c, err)
	}
	if _, _, err := h.svc.VerifyComputeToken(h.ctx, strings.Repeat("0", 64)); err == nil {
		t.Fatal("a made-up token was accepted")
	}
}

func TestCreateFleetRefusals(t *testing.T) {
	tests := map[string]struct {
		mod   func(in *api.CreateFleetInput)
		check func(testing.TB, error)
	}{
		"unknown build":    {func(in *api.CreateFleetInput) { in.BuildId = api.String("build-x") }, wantErr[*api.NotFoundException]},
		"build not ready":  {func(in *api.CreateFleetInput) { in.BuildId = api.String("build-init") }, wantErr[*api.InvalidRequestException]},
		"no build":         {func(in *api.CreateFleetInput) { in.BuildId = nil }, wantErr[*api.InvalidRequestException]},
		"script":           {func(in *api.CreateFleetInput) { in.ScriptId = api.String("script-1") }, wantErr[*api.InvalidRequestException]},
		"no instance type": {func(in *api.CreateFleetInput) { in.EC2InstanceType = "" }, wantErr[*api.InvalidRequestException]},
		"no runtime":       {func(in *api.CreateFleetInput) { in.RuntimeConfiguration = nil }, wantErr[*api.InvalidRequestException]},
		"path outside game": {func(in *api.CreateFleetInput) {
			in.RuntimeConfiguration.ServerProcesses[0].LaunchPath = api.String("/usr/bin/server")
		}, wantErr[*api.InvalidRequestException]},
		"path climbing out": {func(in *api.CreateFleetInput) {
			in.RuntimeConfiguration.ServerProcesses[0].LaunchPath = api.String("/local/game/../etc/x")
		}, wantErr[*api.InvalidRequestException]},
		"too many processes": {func(in *api.CreateFleetInput) {
			in.RuntimeConfiguration.ServerProcesses[0].ConcurrentExecutions = api.Int32(51)
		}, wantErr[*api.LimitExceededException]},
		"unknown location": {func(in *api.CreateFleetInput) {
			in.Locations = []api.LocationConfiguration{{Location: api.String("mars-north-1")}}
		}, wantErr[*api.InvalidRequestException]},
		"custom location on EC2": {func(in *api.CreateFleetInput) {
			in.Locations = []api.LocationConfiguration{{Location: api.String("custom-home")}}
		}, wantErr[*api.InvalidRequestException]},
		"bad port range": {func(in *api.CreateFleetInput) {
			in.EC2InboundPermissions = []api.IpPermission{{FromPort: api.Int32(9000), ToPort: api.Int32(8000),
				IpRange: api.String("0.0.0.0/0"), Protocol: api.IpProtocolUdp}}
		}, wantErr[*api.InvalidRequestException]},
		"anywhere with build": {func(in *api.CreateFleetInput) { in.ComputeType = api.ComputeTypeAnywhere }, wantErr[*api.InvalidRequestException]},
		"anywhere unknown location": {func(in *api.CreateFleetInput) {
			*in = api.CreateFleetInput{Name: api.String("a"), ComputeType: api.ComputeTypeAnywhere,
				Locations: []api.LocationConfiguration{{Location: api.String("custom-nowhere")}}}
		}, wantErr[*api.NotFoundException]},
		"anywhere generated certificates": {func(in *api.CreateFleetInput) {
			*in = api.CreateFleetInput{Name: api.String("a"), ComputeType: api.ComputeTypeAnywhere,
				Locations:                []api.LocationConfiguration{{Location: api.String("custom-home")}},
				CertificateConfiguration: &api.CertificateConfiguration{CertificateType: api.CertificateTypeGenerated}}
		}, wantErr[*api.InvalidRequestException]},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			h := newHarness(t)
			h.builds.set("build-init", api.BuildStatusInitialized)
			in := ec2Input(1)
			tc.mod(in)
			_, err := h.svc.CreateFleet(h.ctx, in)
			tc.check(t, err)
		})
	}
}

func TestBuildGoneBeforeTheFirstInstance(t *testing.T) {
	h := newHarness(t)
	id := h.createFleet(ec2Input(1))
	h.builds.set("build-1", "")
	h.reconcile()
	if st := h.status(id); st != api.FleetStatusError {
		t.Fatalf("fleet is %s, want ERROR", st)
	}
	if len(h.prov.started()) != 0 {
		t.Fatal("an instance was started without a build")
	}
	want := []api.EventCode{api.EventCodeFleetCreated, api.EventCodeFleetBinaryDownloadFailed, api.EventCodeFleetStateError}
	if got := h.events(id); !slices.Equal(got, want) {
		t.Fatalf("events %v, want %v", got, want)
	}
}

func TestMissingLaunchPathFailsTheFleet(t *testing.T) {
	h := newHarness(t)
	id := h.createFleet(ec2Input(1))
	h.reconcile()
	inst := h.prov.started()[0]
	in := h.prov.get(inst)
	in.hooks.StepStarted(h.ctx, StepDownload)
	in.hooks.StepStarted(h.ctx, StepValidate)
	in.hooks.StepFailed(h.ctx, StepValidate, &LaunchPathError{LaunchPath: "/local/game/server", Err: errNotThere})
	if st := h.status(id); st != api.FleetStatusError {
		t.Fatalf("fleet is %s, want ERROR", st)
	}
	got := h.events(id)
	want := []api.EventCode{api.EventCodeServerProcessInvalidPath, api.EventCodeFleetValidationLaunchPathNotFound, api.EventCodeFleetStateError}
	if !slices.Equal(got[len(got)-3:], want) {
		t.Fatalf("events %v end without %v", got, want)
	}
	in.hooks.InstanceStopped(h.ctx)
	if h.compute(id, inst) != nil {
		t.Fatal("the failed instance's compute is still recorded")
	}
	h.reconcile()
	if len(h.prov.started()) != 1 {
		t.Fatal("an ERROR fleet started another instance")
	}
}

var errNotThere = errorString("does not exist in the build")

type errorString string

func (e errorString) Error() string { return string(e) }

func TestLaunchFailureWhileActivatingFailsTheFleet(t *testing.T) {
	h := newHarness(t)
	id := h.createFleet(ec2Input(1))
	h.reconcile()
	inst := h.prov.started()[0]
	h.setUp(inst)
	h.prov.get(inst).hooks.LaunchFailed(h.ctx, "/local/game/server", errNotThere)
	if st := h.status(id); st != api.FleetStatusError {
		t.Fatalf("fleet is %s, want ERROR", st)
	}
	h.reconcile()
	if got := h.prov.get(inst).stopped; got != reasonError {
		t.Fatalf("instance of an ERROR fleet stop reason %q, want %q", got, reasonError)
	}
}

func TestActivationTimeout(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.Timings.ActivationTimeout = 10 * time.Minute })
	id := h.createFleet(ec2Input(1))
	h.reconcile()
	h.setUp(h.prov.started()[0])
	h.clock.Advance(10*time.Minute - time.Millisecond)
	h.reconcile()
	if st := h.status(id); st != api.FleetStatusActivating {
		t.Fatalf("fleet is %s before the timeout", st)
	}
	h.clock.Advance(time.Millisecond)
	h.reconcile()
	if st := h.status(id); st != api.FleetStatusError {
		t.Fatalf("fleet is %s after the timeout, want ERROR", st)
	}
	if got := h.events(id); !slices.Contains(got, api.EventCodeFleetActivationFailed) {
		t.Fatalf("events %v lack FLEET_ACTIVATION_FAILED", got)
	}
}

func TestScaleOutAndProtectedScaleIn(t *testing.T) {
	h := newHarness(t)
	in := ec2Input(1)
	in.NewGameSessionProtectionPolicy = api.ProtectionPolicyFullprotection
	id, first := h.activeFleet(in)
	_, err := h.svc.UpdateFleetCapacity(h.ctx, &api.UpdateFleetCapacityInput{FleetId: api.String(id),
		DesiredInstances: api.Int32(3), MaxSize: api.Int32(3)})
	if err != nil {
		t.Fatal(err)
	}
	h.reconcile()
	insts := h.prov.started()
	if len(insts) != 3 {
		t.Fatalf("%d instances after scale-out to 3", len(insts))
	}
	for _, i := range insts[1:] {
		h.setUp(i)
		h.ready(id, i, h.launch(i))
	}
	h.reconcile()
	// A protected ACTIVE game session on the first instance.
	gs, err := h.sess.CreateGameSession(h.ctx, &api.CreateGameSessionInput{FleetId: api.String(id), MaximumPlayerSessionCount: api.Int32(4)})
	if err != nil {
		t.Fatal(err)
	}
	host := *gs.GameSession.ComputeName
	activate(t, h, id, host, *gs.GameSession.GameSessionId)
	if _, err := h.svc.UpdateFleetCapacity(h.ctx, &api.UpdateFleetCapacityInput{FleetId: api.String(id),
		DesiredInstances: api.Int32(0), MinSize: api.Int32(0)}); err != nil {
		t.Fatal(err)
	}
	h.reconcile()
	for _, i := range insts {
		stopped := h.prov.get(i).stopped != ""
		if stopped == (i == host) {
			t.Errorf("instance %s (host of the protected session: %v) stopped: %v", i, i == host, stopped)
		}
	}
	capOut, _ := h.svc.DescribeFleetCapacity(h.ctx, &api.DescribeFleetCapacityInput{FleetIds: []string{id}})
	if ic := capOut.FleetCapacity[0].InstanceCounts; *ic.TERMINATING != 2 || *ic.ACTIVE != 1 || *ic.DESIRED != 0 {
		t.Fatalf("capacity during scale-in %+v", *ic)
	}
	if first != insts[0] {
		t.Fatalf("first instance %s, started %v", first, insts)
	}
}

// activate has the process hosting a game session activate it.
func activate(t *testing.T, h *harness, fleetID, inst, gsID string) {
	t.Helper()
	var proc string
	err := h.st.View(h.ctx, func(tx store.Tx) error {
		var gs hosting.GameSession
		if _, err := store.GetJSON(h.ctx, tx, hosting.KindGameSession, gsID, &gs); err != nil {
			return err
		}
		proc = gs.ProcessID
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	c := hosting.Conn{ConnID: "conn-1", ProcessID: proc, FleetID: fleetID, ComputeName: inst}
	var pr hosting.Process
	_ = h.st.View(h.ctx, func(tx store.Tx) error {
		_, err := store.GetJSON(h.ctx, tx, hosting.KindProcess, proc, &pr)
		return err
	})
	c.ConnID = pr.ConnID
	if err := h.sdk.ActivateGameSession(h.ctx, c, gsID); err != nil {
		t.Fatal(err)
	}
}

func TestUpdateFleetCapacityRefusals(t *testing.T) {
	tests := map[string]struct {
		in    api.UpdateFleetCapacityInput
		check func(testing.TB, error)
	}{
		"desired above max": {api.UpdateFleetCapacityInput{DesiredInstances: api.Int32(2)}, wantErr[*api.InvalidRequestException]},
		"min above max":     {api.UpdateFleetCapacityInput{MinSize: api.Int32(2)}, wantErr[*api.InvalidRequestException]},
		"above limit": {api.UpdateFleetCapacityInput{DesiredInstances: api.Int32(21), MaxSize: api.Int32(21)},
			wantErr[*api.LimitExceededException]},
		"unknown location": {api.UpdateFleetCapacityInput{Location: api.String("eu-west-1"), DesiredInstances: api.Int32(0)}, wantErr[*api.InvalidRequestException]},
		"scale to and from zero": {api.UpdateFleetCapacityInput{ManagedCapacityConfiguration: &api.ManagedCapacityConfiguration{
			ZeroCapacityStrategy: api.ZeroCapacityStrategyScaleToAndFromZero}}, wantErr[*api.InvalidRequestException]},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			h := newHarness(t)
			id, _ := h.activeFleet(ec2Input(1))
			tc.in.FleetId = api.String(id)
			_, err := h.svc.UpdateFleetCapacity(h.ctx, &tc.in)
			tc.check(t, err)
		})
	}
	t.Run("not active", func(t *testing.T) {
		h := newHarness(t)
		id := h.createFleet(ec2Input(1))
		_, err := h.svc.UpdateFleetCapacity(h.ctx, &api.UpdateFleetCapacityInput{FleetId: api.String(id), DesiredInstances: api.Int32(0)})
		wantErr[*api.InvalidFleetStatusException](t, err)
	})
}

func TestDeleteFleet(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.Timings.Retention = time.Hour })
	h.prov.autoStop = true
	id, inst := h.activeFleet(ec2Input(2))
	if err := h.svc.DeleteFleet(h.ctx, &api.DeleteFleetInput{FleetId: api.String(id)}); err != nil {
		t.Fatal(err)
	}
	if st := h.status(id); st != api.FleetStatusDeleting {
		t.Fatalf("fleet is %s after DeleteFleet", st)
	}
	if err := h.svc.DeleteFleet(h.ctx, &api.DeleteFleetInput{FleetId: api.String(id)}); err != nil {
		t.Fatalf("deleting a DELETING fleet again: %v", err)
	}
	h.reconcile() // stops the instance (the fake reports it stopped at once)
	if got := h.prov.get(inst).stopped; got != reasonDeleting {
		t.Fatalf("instance stop reason %q", got)
	}
	h.reconcile()
	if st := h.status(id); st != api.FleetStatusTerminated {
		t.Fatalf("fleet is %s, want TERMINATED", st)
	}
	if got := h.events(id); got[len(got)-1] != api.EventCodeFleetDeleted {
		t.Fatalf("last event %v, want FLEET_DELETED", got)
	}
	list, _ := h.svc.ListFleets(h.ctx, &api.ListFleetsInput{})
	if len(list.FleetIds) != 0 {
		t.Fatalf("ListFleets shows %v after deletion", list.FleetIds)
	}
	attrs, _ := h.svc.DescribeFleetAttributes(h.ctx, &api.DescribeFleetAttributesInput{FleetIds: []string{id}})
	if len(attrs.FleetAttributes) != 1 || attrs.FleetAttributes[0].TerminationTime == nil {
		t.Fatalf("a TERMINATED fleet described by ID: %+v", attrs.FleetAttributes)
	}
	wantErr[*api.NotFoundException](t, h.svc.DeleteFleet(h.ctx, &api.DeleteFleetInput{FleetId: api.String(id)}))
	h.clock.Advance(time.Hour)
	h.reconcile()
	attrs, _ = h.svc.DescribeFleetAttributes(h.ctx, &api.DescribeFleetAttributesInput{FleetIds: []string{id}})
	if len(attrs.FleetAttributes) != 0 {
		t.Fatal("the TERMINATED fleet was not forgotten after its retention")
	}
}

func TestAnywhereFleetAndTokens(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.AgentEndpoint = "wss://127.0.0.1:9443/agent" })
	if _, err := h.svc.CreateLocation(h.ctx, &api.CreateLocationInput{LocationName: api.String("custom-home")}); err != nil {
		t.Fatal(err)
	}
	_, err := h.svc.CreateLocation(h.ctx, &api.CreateLocationInput{LocationName: api.String("custom-home")})
	wantErr[*api.ConflictException](t, err)
	out, err := h.svc.CreateFleet(h.ctx, &api.CreateFleetInput{Name: api.String("any"), ComputeType: api.ComputeTypeAnywhere,
		Locations: []api.LocationConfiguration{{Location: api.String("custom-home")}}})
	if err != nil {
		t.Fatal(err)
	}
	id := *out.FleetAttributes.FleetId
	if out.FleetAttributes.Status != api.FleetStatusActive {
		t.Fatalf("an Anywhere fleet starts %s, want ACTIVE", out.FleetAttributes.Status)
	}
	// GameLift requires Location and IpAddress for an Anywhere fleet.
	for name, in := range map[string]*api.RegisterComputeInput{
		"Location":  {FleetId: api.String(id), ComputeName: api.String("box-1"), IpAddress: api.String("127.0.0.2")},
		"IpAddress": {FleetId: api.String(id), ComputeName: api.String("box-1"), DnsName: api.String("box-1.example"), Location: api.String("custom-home")},
	} {
		_, err := h.svc.RegisterCompute(h.ctx, in)
		wantErr[*api.InvalidRequestException](t, err)
		if !strings.Contains(err.Error(), name) {
			t.Errorf("RegisterCompute without %s: %v", name, err)
		}
	}
	reg, err := h.svc.RegisterCompute(h.ctx, &api.RegisterComputeInput{FleetId: api.String(id), ComputeName: api.String("box-1"),
		IpAddress: api.String("127.0.0.2"), Location: api.String("custom-home")})
	if err != nil {
		t.Fatal(err)
	}
	if c := reg.Compute; *c.GameLiftServiceSdkEndpoint != "ws://127.0.0.1:9080/sdk" || *c.GameLiftAgentEndpoint != "wss://127.0.0.1:9443/agent" ||
		*c.Location != "custom-home" || c.ComputeStatus != api.ComputeStatusActive || c.ComputeArn == nil {
		t.Fatalf("RegisterCompute answered %+v", c)
	}
	tok, err := h.svc.GetComputeAuthToken(h.ctx, &api.GetComputeAuthTokenInput{FleetId: api.String(id), ComputeName: api.String("box-1")})
	if err != nil {
		t.Fatal(err)
	}
	if !tok.ExpirationTimestamp.Equal(t0.Add(3 * time.Hour)) {
		t.Errorf("token expires %v", tok.ExpirationTimestamp.Time)
	}
	if f, c, err := h.svc.VerifyComputeToken(h.ctx, *tok.AuthToken); err != nil || f != id || c != "box-1" {
		t.Fatalf("VerifyComputeToken = %s %s %v", f, c, err)
	}
	h.clock.Advance(3 * time.Hour)
	if _, _, err := h.svc.VerifyComputeToken(h.ctx, *tok.AuthToken); err == nil {
		t.Fatal("an expired token was accepted")
	}
	h.reconcile()
	n := 0
	_ = h.st.View(h.ctx, func(tx store.Tx) error {
		n, _ = tx.Count(h.ctx, store.Query{Kind: hosting.KindComputeAuthToken})
		return nil
	})
	if n != 0 {
		t.Fatalf("%d tokens left after expiry", n)
	}
	tok2, _ := h.svc.GetComputeAuthToken(h.ctx, &api.GetComputeAuthTokenInput{FleetId: api.String(id), ComputeName: api.String("box-1")})
	if _, err := h.svc.DeregisterCompute(h.ctx, &api.DeregisterComputeInput{FleetId: api.String(id), ComputeName: api.String("box-1")}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := h.svc.VerifyComputeToken(h.ctx, *tok2.AuthToken); err == nil {
		t.Fatal("a deregistered compute's token was accepted")
	}
	_, err = h.svc.DeleteLocation(h.ctx, &api.DeleteLocationInput{LocationName: api.String("custom-home")})
	wantErr[*api.InvalidRequestException](t, err)
	_, err = h.svc.RegisterCompute(h.ctx, &api.RegisterComputeInput{FleetId: api.String(id), ComputeName: api.String("box-2"),
		IpAddress: api.String("127.0.0.3"), Location: api.String("custom-elsewhere")})
	wantErr[*api.InvalidRequestException](t, err)
}

func TestRegisterComputeAgain(t *testing.T) {
	h := newHarness(t)
	for _, l := range []string{"custom-a", "custom-b"} {
		if _, err := h.svc.CreateLocation(h.ctx, &api.CreateLocationInput{LocationName: api.String(l)}); err != nil {
			t.Fatal(err)
		}
	}
	id := h.createFleet(&api.CreateFleetInput{Name: api.String("any"), ComputeType: api.ComputeTypeAnywhere,
		Locations: []api.LocationConfiguration{{Location: api.String("custom-a")}, {Location: api.String("custom-b")}}})
	reg := func(loc, ip string) error {
		_, err := h.svc.RegisterCompute(h.ctx, &api.RegisterComputeInput{FleetId: api.String(id), ComputeName: api.String("box"),
			IpAddress: api.String(ip), Location: api.String(loc)})
		return err
	}
	if err := reg("custom-a", "127.0.0.2"); err != nil {
		t.Fatal(err)
	}
	if err := reg("custom-a", "127.0.0.9"); err != nil {
		t.Fatalf("registering again: %v", err)
	}
	if c := h.compute(id, "box"); c.IPAddress != "127.0.0.9" {
		t.Fatalf("address after registering again: %s", c.IPAddress)
	}
	wantErr[*api.ConflictException](t, reg("custom-b", "127.0.0.9"))
	list, err := h.svc.ListCompute(h.ctx, &api.ListComputeInput{FleetId: api.String(id), Location: api.String("custom-a")})
	if err != nil || len(list.ComputeList) != 1 {
		t.Fatalf("ListCompute = %+v, %v", list, err)
	}
}

func TestProcessCrashIsReported(t *testing.T) {
	h := newHarness(t)
	id, inst := h.activeFleet(ec2Input(1))
	var proc string
	for _, p := range h.prov.get(inst).procs {
		proc = p
	}
	h.prov.get(inst).hooks.ProcessExited(h.ctx, ProcessExit{ProcessID: proc, ExitCode: 3, Uptime: time.Minute})
	if got := h.events(id); got[len(got)-1] != api.EventCodeServerProcessCrashed {
		t.Fatalf("events %v do not end with SERVER_PROCESS_CRASHED", got)
	}
	var p hosting.Process
	_ = h.st.View(h.ctx, func(tx store.Tx) error { _, err := store.GetJSON(h.ctx, tx, hosting.KindProcess, proc, &p); return err })
	if p.State != hosting.ProcessTerminated || !strings.Contains(p.EndReason, "code 3") {
		t.Fatalf("sessions recorded the process as %s (%s)", p.State, p.EndReason)
	}
}

func TestExitEvents(t *testing.T) {
	ending := &hosting.Process{State: hosting.ProcessTerminating}
	tests := map[string]struct {
		p      *hosting.Process
		e      ProcessExit
		code   api.EventCode
		reason string
	}{
		"crash":               {nil, ProcessExit{ExitCode: 2}, api.EventCodeServerProcessCrashed, "SERVER_PROCESS_CRASHED: exited with code 2"},
		"signal":              {&hosting.Process{State: hosting.ProcessActive}, ProcessExit{ExitCode: -1, Signal: "segmentation fault"}, api.EventCodeServerProcessCrashed, "SERVER_PROCESS_CRASHED: was ended by signal segmentation fault"},
		"after ProcessEnding": {ending, ProcessExit{ExitCode: 0}, "", ""},
		"unhealthy":           {ending, ProcessExit{StopReason: "SERVER_PROCESS_TERMINATED_UNHEALTHY"}, api.EventCodeServerProcessTerminatedUnhealthy, "SERVER_PROCESS_TERMINATED_UNHEALTHY"},
		"force":               {ending, ProcessExit{StopReason: "FORCE_TERMINATED"}, api.EventCodeServerProcessForceTerminated, "FORCE_TERMINATED"},
		"scale-in":            {nil, ProcessExit{StopReason: reasonScaleIn}, "", reasonScaleIn},
		"killed on scale-in":  {nil, ProcessExit{StopReason: reasonScaleIn, Killed: true}, api.EventCodeServerProcessProcessExitTimeout, reasonScaleIn},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			code, reason := exitEvent(tc.p, tc.e)
			if code != tc.code || reason != tc.reason {
				t.Fatalf("exitEvent = %q, %q; want %q, %q", code, reason, tc.code, tc.reason)
			}
		})
	}
}

func TestTerminateProcess(t *testing.T) {
	h := newHarness(t)
	_, inst := h.activeFleet(ec2Input(1))
	proc := h.prov.get(inst).procs[0]
	if err := h.svc.TerminateProcess(h.ctx, proc, "SERVER_PROCESS_TERMINATED_UNHEALTHY"); err != nil {
		t.Fatal(err)
	}
	if got := h.prov.stopProc; len(got) != 1 || got[0] != proc+":SERVER_PROCESS_TERMINATED_UNHEALTHY" {
		t.Fatalf("provider asked to stop %v", got)
	}
	// A process the provider no longer runs (Hoist restarted) is gone.
	h.prov.forget()
	if err := h.svc.TerminateProcess(h.ctx, proc, "SERVER_PROCESS_TERMINATED_UNHEALTHY"); err != nil {
		t.Fatal(err)
	}
	var p hosting.Process
	_ = h.st.View(h.ctx, func(tx store.Tx) error { _, err := store.GetJSON(h.ctx, tx, hosting.KindProcess, proc, &p); return err })
	if p.State != hosting.ProcessTerminated {
		t.Fatalf("process is %s, want TERMINATED", p.State)
	}
}

func TestLostInstancesAreReplaced(t *testing.T) {
	h := newHarness(t)
	id, inst := h.activeFleet(ec2Input(1))
	proc := h.prov.get(inst).procs[0]
	h.prov.forget() // Hoist restarted: the provider runs nothing
	h.reconcile()
	if h.compute(id, inst) != nil {
		t.Fatal("the lost instance is still recorded")
	}
	var p hosting.Process
	_ = h.st.View(h.ctx, func(tx store.Tx) error { _, err := store.GetJSON(h.ctx, tx, hosting.KindProcess, proc, &p); return err })
	if p.State != hosting.ProcessTerminated {
		t.Fatalf("the lost instance's process is %s", p.State)
	}
	if got := h.prov.started(); len(got) != 2 {
		t.Fatalf("instances started: %v, want a replacement", got)
	}
	if got := h.events(id); !slices.Contains(got, api.EventCodeInstanceRecycled) {
		t.Fatalf("events %v lack INSTANCE_RECYCLED", got)
	}
}

// TestGeneratedCertificates: a GENERATED fleet has one certificate, from
// Hoist's CA, shared by its instances in every location and naming their
// DNS names (<instance>.<location>.<domain>); another fleet has another.
func TestGeneratedCertificates(t *testing.T) {
	ca, err := pki.LoadOrCreateCAFor(filepath.Join(t.TempDir(), "pki"), pki.Constraints{DNSDomains: []string{"games.test"}})
	if err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, func(c *Config) { c.CA, c.DNSDomain = ca, "games.test" })
	in := ec2Input(1)
	in.CertificateConfiguration = &api.CertificateConfiguration{CertificateType: api.CertificateTypeGenerated}
	in.Locations = []api.LocationConfiguration{{Location: api.String("us-west-2")}, {Location: api.String("us-east-1")}}
	id := h.createFleet(in)
	h.reconcile()
	started := h.prov.started()
	if len(started) != 2 {
		t.Fatalf("%d instances started, want one per location", len(started))
	}
	var first []byte
	for _, inst := range started {
		spec := h.prov.get(inst).spec
		if spec.Certificate == nil {
			t.Fatal("no certificate for an instance of a GENERATED fleet")
		}
		c := h.compute(id, inst)
		if c.CertificatePath == "" {
			t.Fatal("compute has no CertificatePath")
		}
		if want := inst + "." + c.Location + ".games.test"; c.DNSName != want {
			t.Errorf("DNS name %q, want %q", c.DNSName, want)
		}
		if first == nil {
			first = spec.Certificate.Certificate
		} else if !bytes.Equal(first, spec.Certificate.Certificate) {
			t.Error("the instances of one fleet have different certificates")
		}
		if !bytes.Equal(spec.Certificate.Root, ca.CertPEM) {
			t.Error("rootCertificate.pem is not Hoist's CA")
		}
		b, _ := pem.Decode(spec.Certificate.Certificate)
		leaf, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := leaf.Verify(x509.VerifyOptions{Roots: ca.Pool(), DNSName: c.DNSName}); err != nil {
			t.Fatalf("instance certificate does not verify for %s: %v", c.DNSName, err)
		}
		if err := leaf.VerifyHostname("127.0.0.1"); err != nil {
			t.Fatalf("instance certificate lacks the instance IP address: %v", err)
		}
		if _, err := tls.X509KeyPair(spec.Certificate.Chain, spec.Certificate.PrivateKey); err != nil {
			t.Fatalf("chain and key do not match: %v", err)
		}
	}
	if _, err := os.Stat(filepath.Join(h.svc.cfg.DataDir, "fleets", id, "ca-key.pem")); err == nil {
		t.Error("the fleet has a CA key of its own")
	}
	in.Locations = nil
	other := h.createFleet(in)
	files, err := h.svc.fleetCertificate(other, []string{"us-west-2"}, t0)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(files.Certificate, first) {
		t.Error("two fleets share a certificate")
	}
}

// TestGeneratedWithoutCA: GENERATED needs a CA.
func TestGeneratedWithoutCA(t *testing.T) {
	h := newHarness(t)
	in := ec2Input(1)
	in.CertificateConfiguration = &api.CertificateConfiguration{CertificateType: api.CertificateTypeGenerated}
	_, err := h.svc.CreateFleet(h.ctx, in)
	wantErr[*api.InternalServiceException](t, err)
}

func TestUpdatesAndDescribes(t *testing.T) {
	h := newHarness(t)
	id, inst := h.activeFleet(ec2Input(1))
	perm := api.IpPermission{FromPort: api.Int32(7000), ToPort: api.Int32(7100), IpRange: api.String("0.0.0.0/0"), Protocol: api.IpProtocolUdp}
	if _, err := h.svc.UpdateFleetPortSettings(h.ctx, &api.UpdateFleetPortSettingsInput{FleetId: api.String(id),
		InboundPermissionAuthorizations: []api.IpPermission{perm}}); err != nil {
		t.Fatal(err)
	}
	ps, _ := h.svc.DescribeFleetPortSettings(h.ctx, &api.DescribeFleetPortSettingsInput{FleetId: api.String(id)})
	if len(ps.InboundPermissions) != 1 {
		t.Fatalf("port settings %+v", ps.InboundPermissions)
	}
	other := perm
	other.Protocol = api.IpProtocolTcp
	_, err := h.svc.UpdateFleetPortSettings(h.ctx, &api.UpdateFleetPortSettingsInput{FleetId: api.String(id),
		InboundPermissionRevocations: []api.IpPermission{other}})
	wantErr[*api.InvalidRequestException](t, err)

	rc := api.RuntimeConfiguration{ServerProcesses: []api.ServerProcess{{LaunchPath: api.String("/local/game/server2"), ConcurrentExecutions: api.Int32(3)}}}
	if _, err := h.svc.UpdateRuntimeConfiguration(h.ctx, &api.UpdateRuntimeConfigurationInput{FleetId: api.String(id), RuntimeConfiguration: &rc}); err != nil {
		t.Fatal(err)
	}
	if got := h.prov.get(inst).rc; api.ToString(got.ServerProcesses[0].LaunchPath) != "/local/game/server2" {
		t.Fatalf("instance did not get the new runtime configuration: %+v", got)
	}
	d, _ := h.svc.DescribeRuntimeConfiguration(h.ctx, &api.DescribeRuntimeConfigurationInput{FleetId: api.String(id)})
	if api.ToInt32(d.RuntimeConfiguration.ServerProcesses[0].ConcurrentExecutions) != 3 {
		t.Fatalf("runtime configuration %+v", d.RuntimeConfiguration)
	}
	if _, err := h.svc.UpdateFleetAttributes(h.ctx, &api.UpdateFleetAttributesInput{FleetId: api.String(id), Name: api.String("renamed"),
		NewGameSessionProtectionPolicy: api.ProtectionPolicyFullprotection}); err != nil {
		t.Fatal(err)
	}
	a, _ := h.svc.DescribeFleetAttributes(h.ctx, &api.DescribeFleetAttributesInput{FleetIds: []string{id, "fleet-unknown"}})
	if len(a.FleetAttributes) != 1 || *a.FleetAttributes[0].Name != "renamed" ||
		a.FleetAttributes[0].NewGameSessionProtectionPolicy != api.ProtectionPolicyFullprotection {
		t.Fatalf("attributes %+v", a.FleetAttributes)
	}
	if got := h.events(id); got[len(got)-1] != api.EventCodeFleetNewGameSessionProtectionPolicyUpdated {
		t.Fatalf("events %v", got)
	}
	insts, err := h.svc.DescribeInstances(h.ctx, &api.DescribeInstancesInput{FleetId: api.String(id)})
	if err != nil || len(insts.Instances) != 1 || *insts.Instances[0].InstanceId != inst || insts.Instances[0].Status != api.InstanceStatusActive {
		t.Fatalf("DescribeInstances = %+v, %v", insts, err)
	}
	lim, _ := h.svc.DescribeEC2InstanceLimits(h.ctx, &api.DescribeEC2InstanceLimitsInput{EC2InstanceType: api.EC2InstanceTypeC5Large})
	if l := lim.EC2InstanceLimits[0]; *l.CurrentInstances != 1 || *l.InstanceLimit != 20 {
		t.Fatalf("limits %+v", l)
	}
}

func TestFleetLocations(t *testing.T) {
	h := newHarness(t)
	h.prov.autoStop = true
	id, _ := h.activeFleet(ec2Input(1))
	out, err := h.svc.CreateFleetLocations(h.ctx, &api.CreateFleetLocationsInput{FleetId: api.String(id),
		Locations: []api.LocationConfiguration{{Location: api.String("eu-west-1")}}})
	if err != nil || len(out.LocationStates) != 1 || out.LocationStates[0].Status != api.FleetStatusNew {
		t.Fatalf("CreateFleetLocations = %+v, %v", out, err)
	}
	h.reconcile()
	inst := h.prov.started()[1]
	if l := h.prov.get(inst).spec.Location; l != "eu-west-1" {
		t.Fatalf("new instance in %s", l)
	}
	h.setUp(inst)
	h.ready(id, inst, h.launch(inst))
	la, _ := h.svc.DescribeFleetLocationAttributes(h.ctx, &api.DescribeFleetLocationAttributesInput{FleetId: api.String(id)})
	if len(la.LocationAttributes) != 2 || la.LocationAttributes[1].LocationState.Status != api.FleetStatusActive {
		t.Fatalf("location attributes %+v", la.LocationAttributes)
	}
	if _, err := h.svc.StopFleetActions(h.ctx, &api.StopFleetActionsInput{FleetId: api.String(id), Location: api.String("eu-west-1"),
		Actions: []api.FleetAction{api.FleetActionAutoScaling}}); err != nil {
		t.Fatal(err)
	}
	if l := h.fleet(id).location("eu-west-1"); len(l.Stopped) != 1 {
		t.Fatalf("stopped actions %v", l.Stopped)
	}
	if _, err := h.svc.DeleteFleetLocations(h.ctx, &api.DeleteFleetLocationsInput{FleetId: api.String(id), Locations: []string{"eu-west-1"}}); err != nil {
		t.Fatal(err)
	}
	h.reconcile()
	h.reconcile()
	if l := h.fleet(id).location("eu-west-1"); l.Status != api.FleetStatusTerminated {
		t.Fatalf("deleted location is %s", l.Status)
	}
	_, err = h.svc.DeleteFleetLocations(h.ctx, &api.DeleteFleetLocationsInput{FleetId: api.String(id), Locations: []string{"us-west-2"}})
	wantErr[*api.InvalidRequestException](t, err)
}

func TestDescribeFleetEventsPaging(t *testing.T) {
	h := newHarness(t)
	id := h.createFleet(ec2Input(1))
	h.clock.Advance(time.Minute)
	h.reconcile()
	h.setUp(h.prov.started()[0])
	all := h.events(id)
	var got []api.EventCode
	var token *string
	for {
		out, err := h.svc.DescribeFleetEvents(h.ctx, &api.DescribeFleetEventsInput{FleetId: api.String(id), Limit: api.Int32(2), NextToken: token})
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range out.Events {
			got = append(got, e.EventCode)
		}
		if token = out.NextToken; token == nil {
			break
		}
	}
	if !slices.Equal(got, all) {
		t.Fatalf("paged events %v, want %v", got, all)
	}
	out, _ := h.svc.DescribeFleetEvents(h.ctx, &api.DescribeFleetEventsInput{FleetId: api.String(id), EndTime: api.Time(t0)})
	if len(out.Events) != 1 || out.Events[0].EventCode != api.EventCodeFleetCreated {
		t.Fatalf("events up to creation: %+v", out.Events)
	}
	_, err := h.svc.DescribeFleetEvents(h.ctx, &api.DescribeFleetEventsInput{FleetId: api.String(id), NextToken: api.String("bogus")})
	wantErr[*api.InvalidRequestException](t, err)
}

// TestActivationTimeoutSpansCreation: the activation timeout bounds the
// creation statuses together, from when the location left NEW, not each
// status anew.
func TestActivationTimeoutSpansCreation(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.Timings.ActivationTimeout = 10 * time.Minute })
	id := h.createFleet(ec2Input(1))
	h.reconcile()
	in := h.prov.get(h.prov.started()[0])
	in.hooks.StepStarted(h.ctx, StepDownload)
	h.clock.Advance(6 * time.Minute)
	for _, s := range []Step{StepValidate, StepBuild, StepActivate} {
		in.hooks.StepStarted(h.ctx, s)
	}
	h.clock.Advance(4*time.Minute - time.Millisecond)
	h.reconcile()
	if st := h.status(id); st != api.FleetStatusActivating {
		t.Fatalf("fleet is %s before the timeout, want ACTIVATING", st)
	}
	h.clock.Advance(time.Millisecond)
	h.reconcile()
	if st := h.status(id); st != api.FleetStatusError {
		t.Fatalf("fleet is %s 10 minutes after creation began, want ERROR", st)
	}
}

// TestCapacityAgreesWithActive: from the ProcessReady that makes a fleet
// ACTIVE, DescribeFleetCapacity counts its instance ACTIVE (no reconciler
// pass in between).
func TestCapacityAgreesWithActive(t *testing.T) {
	h := newHarness(t)
	id := h.createFleet(ec2Input(1))
	h.reconcile()
	inst := h.prov.started()[0]
	h.setUp(inst)
	h.ready(id, inst, h.launch(inst))
	if st := h.status(id); st != api.FleetStatusActive {
		t.Fatalf("fleet is %s after ProcessReady, want ACTIVE", st)
	}
	out, err := h.svc.DescribeFleetCapacity(h.ctx, &api.DescribeFleetCapacityInput{FleetIds: []string{id}})
	if err != nil {
		t.Fatal(err)
	}
	if c := out.FleetCapacity[0].InstanceCounts; api.ToInt32(c.ACTIVE) != 1 || api.ToInt32(c.PENDING) != 0 {
		t.Fatalf("an ACTIVE fleet's capacity: ACTIVE %d PENDING %d, want 1 and 0", api.ToInt32(c.ACTIVE), api.ToInt32(c.PENDING))
	}
	if c := h.compute(id, inst); c.Status != api.ComputeStatusActive || c.InstanceStatus != api.InstanceStatusActive {
		t.Fatalf("instance %s is %s/%s, want ACTIVE", inst, c.Status, c.InstanceStatus)
	}
}

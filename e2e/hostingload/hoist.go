//go:build linux

package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	gl "github.com/aws/aws-sdk-go-v2/service/gamelift"
	"github.com/aws/aws-sdk-go-v2/service/gamelift/types"

	"github.com/hoistgg/hoist/e2e/hoisttest"
	"github.com/hoistgg/hoist/e2e/loadreport"
)

// poll is the interval of every wait that polls the API (not a stand-in
// for time passing: each wait ends as soon as its condition holds, or
// fails at its deadline).
const poll = 100 * time.Millisecond

// hoist is a running Hoist process, started with the e2e credentials
// (every signature is verified), a new data directory and loopback ports,
// the way the e2e tests start it (hoisttest.Launch).
type hoist struct {
	*loadreport.Hoist
	gl *gl.Client
}

// startHoist runs bin serve with extra arguments and waits until it serves.
func startHoist(bin, parentDir string, extra []string) (*hoist, error) {
	h, err := loadreport.StartHoist(bin, parentDir, "hoist-hostingload-", false, extra...)
	if err != nil {
		return nil, err
	}
	return &hoist{Hoist: h, gl: hoisttest.NewV2(h.URL, hoisttest.AccessKeyID, hoisttest.SecretAccessKey)}, nil
}

func (h *hoist) pid() int { return h.PID() }

// logTail returns the last lines of Hoist's log (for errors).
func (h *hoist) logTail(lines int) string { return h.LogTail(lines) }

// --- API helpers ---

// uploadBuild creates a build, uploads archive with the upload credentials
// CreateBuild returns and waits for READY.
func (h *hoist) uploadBuild(ctx context.Context, archive []byte) (string, error) {
	return loadreport.UploadBuild(ctx, h.gl, h.URL, "hostingload", archive)
}

// createFleet creates an EC2 fleet of the game server with perInstance
// processes per instance (and GameSessionActivationTimeoutSeconds when
// activationTimeout is not 0), and waits until it is ACTIVE.
func (h *hoist) createFleet(ctx context.Context, name, buildID string, perInstance int, params string, activationTimeout int32) (string, error) {
	sp := types.ServerProcess{LaunchPath: aws.String("/local/game/gameserver"), ConcurrentExecutions: aws.Int32(int32(perInstance))}
	if params != "" {
		sp.Parameters = aws.String(params)
	}
	rc := &types.RuntimeConfiguration{ServerProcesses: []types.ServerProcess{sp}}
	if activationTimeout > 0 {
		rc.GameSessionActivationTimeoutSeconds = aws.Int32(activationTimeout)
	}
	out, err := h.gl.CreateFleet(ctx, &gl.CreateFleetInput{Name: aws.String(name), BuildId: aws.String(buildID),
		EC2InstanceType:      types.EC2InstanceTypeC5Large,
		RuntimeConfiguration: rc,
		EC2InboundPermissions: []types.IpPermission{{FromPort: aws.Int32(1026), ToPort: aws.Int32(60000),
			IpRange: aws.String("0.0.0.0/0"), Protocol: types.IpProtocolTcp}}})
	if err != nil {
		return "", fmt.Errorf("CreateFleet: %w", err)
	}
	id := aws.ToString(out.FleetAttributes.FleetId)
	return id, h.waitFleetActive(ctx, id, 5*time.Minute)
}

// scale sets the desired instance count of a fleet's home location.
func (h *hoist) scale(ctx context.Context, id string, instances int) error {
	if instances <= 1 {
		return nil
	}
	_, err := h.gl.UpdateFleetCapacity(ctx, &gl.UpdateFleetCapacityInput{FleetId: aws.String(id),
		DesiredInstances: aws.Int32(int32(instances)), MinSize: aws.Int32(0), MaxSize: aws.Int32(int32(instances))})
	if err != nil {
		return fmt.Errorf("UpdateFleetCapacity: %w", err)
	}
	return nil
}

func (h *hoist) waitFleetActive(ctx context.Context, id string, timeout time.Duration) error {
	return loadreport.WaitFor(ctx, timeout, "fleet "+id+" ACTIVE", func() (bool, string, error) {
		out, err := h.gl.DescribeFleetAttributes(ctx, &gl.DescribeFleetAttributesInput{FleetIds: []string{id}})
		if err != nil {
			return false, "", err
		}
		if len(out.FleetAttributes) != 1 {
			return false, "", fmt.Errorf("%d fleets", len(out.FleetAttributes))
		}
		st := out.FleetAttributes[0].Status
		if st == types.FleetStatusError || st == types.FleetStatusTerminated {
			return false, "", fmt.Errorf("the fleet is %s", st)
		}
		return st == types.FleetStatusActive, string(st), nil
	})
}

// utilization returns the ready server processes and the ACTIVATING or
// ACTIVE game sessions of a fleet's home location.
func (h *hoist) utilization(ctx context.Context, id string) (ready, sessions int, err error) {
	out, err := h.gl.DescribeFleetUtilization(ctx, &gl.DescribeFleetUtilizationInput{FleetIds: []string{id}})
	if err != nil {
		return 0, 0, err
	}
	if len(out.FleetUtilization) != 1 {
		return 0, 0, fmt.Errorf("DescribeFleetUtilization %s: %d entries", id, len(out.FleetUtilization))
	}
	u := out.FleetUtilization[0]
	return int(aws.ToInt32(u.ActiveServerProcessCount)), int(aws.ToInt32(u.ActiveGameSessionCount)), nil
}

// anywhereCompute creates a custom location, an Anywhere fleet in it and a
// registered compute, and returns the fleet ID, the SDK endpoint and an
// auth token for the compute.
func (h *hoist) anywhereCompute(ctx context.Context, location, compute string) (fleetID, endpoint, token string, err error) {
	if _, err := h.gl.CreateLocation(ctx, &gl.CreateLocationInput{LocationName: aws.String(location)}); err != nil {
		return "", "", "", fmt.Errorf("CreateLocation: %w", err)
	}
	f, err := h.gl.CreateFleet(ctx, &gl.CreateFleetInput{Name: aws.String("anywhere-" + location), ComputeType: types.ComputeTypeAnywhere,
		Locations: []types.LocationConfiguration{{Location: aws.String(location)}}})
	if err != nil {
		return "", "", "", fmt.Errorf("CreateFleet ANYWHERE: %w", err)
	}
	fleetID = aws.ToString(f.FleetAttributes.FleetId)
	if err := h.waitFleetActive(ctx, fleetID, time.Minute); err != nil {
		return "", "", "", err
	}
	reg, err := h.gl.RegisterCompute(ctx, &gl.RegisterComputeInput{FleetId: aws.String(fleetID), ComputeName: aws.String(compute),
		IpAddress: aws.String("127.0.0.1"), Location: aws.String(location)})
	if err != nil {
		return "", "", "", fmt.Errorf("RegisterCompute: %w", err)
	}
	tok, err := h.gl.GetComputeAuthToken(ctx, &gl.GetComputeAuthTokenInput{FleetId: aws.String(fleetID), ComputeName: aws.String(compute)})
	if err != nil {
		return "", "", "", fmt.Errorf("GetComputeAuthToken: %w", err)
	}
	return fleetID, aws.ToString(reg.Compute.GameLiftServiceSdkEndpoint), aws.ToString(tok.AuthToken), nil
}

// --- profiles ---

// profiles fetches, through Hoist's --pprof-addr listener, a CPU profile
// of the next d (to prefix.pprof) and one second of execution trace from
// the middle of it (to prefix.trace). It runs in the background; the
// returned function waits for both.
func profiles(pprofAddr string, d time.Duration, prefix string) func() error {
	now := time.Now()
	errc := make(chan error, 2)
	go func() {
		secs := max(1, int(d.Seconds()))
		errc <- loadreport.FetchProfile(pprofAddr, "profile", fmt.Sprintf("seconds=%d", secs), now, prefix+".pprof")
	}()
	go func() {
		errc <- loadreport.FetchProfile(pprofAddr, "trace", "seconds=1", now.Add(max(0, d/2-time.Second/2)), prefix+".trace")
	}()
	return func() error { return errors.Join(<-errc, <-errc) }
}

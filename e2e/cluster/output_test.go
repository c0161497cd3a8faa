package cluster_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	gl "github.com/aws/aws-sdk-go-v2/service/gamelift"
	"github.com/aws/aws-sdk-go-v2/service/gamelift/types"

	"github.com/hoistgg/hoist/e2e/cluster"
	"github.com/hoistgg/hoist/e2e/hoisttest"
)

// TestProcessOutputFromAnotherReplica: three replicas; a pool host
// connected to replica A runs a fleet's game server, which crashes (it
// prints a line and exits 3) when given a game session created through C.
// The host uploads the end of its output to A, which keeps it, so the
// SERVER_PROCESS_CRASHED event's PreSignedLogUrl, read through B with
// DescribeFleetEvents, downloads that output from B (B streams it from A
// over the replicas' signed route). Once A is killed and gone from the
// registry, B answers 404 saying the log was on a replica that is no
// longer running.
func TestProcessOutputFromAnotherReplica(t *testing.T) {
	c := cluster.Start(t, poolHostOptions(0, "HOIST_TEST_CRASH_ON_START=1"))
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	aR, bR := c.Replicas[0], c.Replicas[1]
	a, b, cc := aR.V2(), bR.V2(), c.Replicas[2].V2()
	startPoolAgent(ctx, t, aR)
	fleetID := createHostFleet(ctx, t, a, uploadBuild(ctx, t, aR), "output-on-a")
	waitFor(ctx, t, "fleet "+fleetID+" ACTIVE on A's host", func() (bool, error) {
		out, err := a.DescribeFleetAttributes(ctx, &gl.DescribeFleetAttributesInput{FleetIds: []string{fleetID}})
		return err == nil && out.FleetAttributes[0].Status == types.FleetStatusActive, err
	})
	if _, err := cc.CreateGameSession(ctx, &gl.CreateGameSessionInput{FleetId: aws.String(fleetID),
		Location: aws.String(hoisttest.Region), MaximumPlayerSessionCount: aws.Int32(4)}); err != nil {
		t.Fatal(err)
	}
	var u string
	waitFor(ctx, t, "SERVER_PROCESS_CRASHED with a PreSignedLogUrl, through B", func() (bool, error) {
		out, err := b.DescribeFleetEvents(ctx, &gl.DescribeFleetEventsInput{FleetId: aws.String(fleetID)})
		if err != nil {
			return false, err
		}
		for _, ev := range out.Events {
			if ev.EventCode == types.EventCodeServerProcessCrashed && ev.PreSignedLogUrl != nil {
				u = aws.ToString(ev.PreSignedLogUrl)
			}
		}
		return u != "", nil
	})
	if !strings.HasPrefix(u, bR.URL()) {
		t.Fatalf("B's log URL %q is not B's (%s)", u, bR.URL())
	}
	status, body := get(ctx, t, u)
	if status != http.StatusOK || !strings.Contains(string(body), "crashing (crash-on-start)") {
		t.Fatalf("the process output URL through B: %d %q\nevents:\n%s", status, body, fleetEvents(ctx, b, fleetID))
	}
	waitFor(ctx, t, "A's log of serving the output to B (B must ask A, the replica holding it)", func() (bool, error) {
		return strings.Contains(aR.Process().Log(), "logs: served a log to another replica"), nil
	})
	aR.Kill()
	waitFor(ctx, t, "B saying the output was on a replica no longer running", func() (bool, error) {
		status, body := get(ctx, t, u)
		return status == http.StatusNotFound && strings.Contains(string(body), "no longer running"), nil
	})
}

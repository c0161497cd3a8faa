package cluster_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	gl "github.com/aws/aws-sdk-go-v2/service/gamelift"
	"github.com/aws/aws-sdk-go-v2/service/gamelift/types"

	"github.com/hoistgg/hoist/e2e/cluster"
	"github.com/hoistgg/hoist/e2e/hoisttest"
	"github.com/hoistgg/hoist/internal/store"
	"github.com/hoistgg/hoist/internal/store/postgres"
)

// TestPoolHostReconnectsToAnotherReplica: a pool host enrolled with a
// token of replica A (so it pinned the CA A served) reaches A through a
// TCP proxy standing in for a load balancer. A is killed (SIGKILL) and
// the proxy sends new connections to B: the agent reconnects to B, whose
// TLS certificate it trusts (the cluster's CA, shared through the
// database), and a fleet created afterwards becomes ACTIVE on the host.
func TestPoolHostReconnectsToAnotherReplica(t *testing.T) {
	c := cluster.Start(t, poolHostOptions(2))
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	aR, bR := c.Replicas[0], c.Replicas[1]
	st, err := postgres.Open(ctx, c.DatabaseURL, postgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	lb := newProxy(t, strings.TrimPrefix(aR.Process().TLSURL, "https://"))
	hostID, log := startPoolAgentVia(ctx, t, aR, "https://"+lb.Addr())
	build := uploadBuild(ctx, t, bR)
	waitHostOn(ctx, t, st, hostID, replicaID(t, aR))
	aR.Kill()
	lb.Route(strings.TrimPrefix(bR.Process().TLSURL, "https://"))
	waitHostOn(ctx, t, st, hostID, replicaID(t, bR))
	// The replica records the host as connected before it answers the
	// Hello; the agent logs the connection once it has the answer.
	waitFor(ctx, t, "the agent's log of its reconnect", func() (bool, error) {
		return strings.Count(log.String(), "connected to Hoist") >= 2, nil
	})
	b := bR.V2()
	fleetID := createHostFleet(ctx, t, b, build, "after-failover")
	waitFor(ctx, t, "fleet "+fleetID+" ACTIVE on the reconnected host", func() (bool, error) {
		out, err := b.DescribeFleetAttributes(ctx, &gl.DescribeFleetAttributesInput{FleetIds: []string{fleetID}})
		if err != nil {
			return false, err
		}
		if out.FleetAttributes[0].Status == types.FleetStatusError {
			return false, fmt.Errorf("fleet in ERROR; events:\n%s", fleetEvents(ctx, b, fleetID))
		}
		return out.FleetAttributes[0].Status == types.FleetStatusActive, nil
	})
	createActive(ctx, t, b, fleetID, hoisttest.Region)
}

// waitHostOn waits until a host's record says replica holds its
// connection.
func waitHostOn(ctx context.Context, t *testing.T, st store.Store, hostID, replica string) {
	t.Helper()
	waitFor(ctx, t, "host "+hostID+" connected to "+replica, func() (bool, error) {
		var h struct {
			ConnectedTo string `json:"connectedTo"`
		}
		if err := getJSON(ctx, st, "Host", hostID, &h); err != nil {
			return false, err
		}
		return h.ConnectedTo == replica, nil
	})
}

// TestBuildFromAnotherReplica: a build uploaded through replica A (its
// files in A's data directory) runs on a pool host connected to B: B
// fetches the build's files from A over the replicas' signed route when
// the host downloads it, and the fleet becomes ACTIVE and hosts a game
// session.
func TestBuildFromAnotherReplica(t *testing.T) {
	c := cluster.Start(t, poolHostOptions(2))
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	aR, bR := c.Replicas[0], c.Replicas[1]
	startPoolAgent(ctx, t, bR)
	build := uploadBuild(ctx, t, aR)
	b := bR.V2()
	fleetID := createHostFleet(ctx, t, b, build, "build-from-a")
	waitFor(ctx, t, "fleet "+fleetID+" ACTIVE on B's host", func() (bool, error) {
		out, err := b.DescribeFleetAttributes(ctx, &gl.DescribeFleetAttributesInput{FleetIds: []string{fleetID}})
		if err != nil {
			return false, err
		}
		if ev := fleetEvents(ctx, b, fleetID); strings.Contains(ev, "FAILED") {
			return false, fmt.Errorf("its instance's start failed; events:\n%s", ev)
		}
		return out.FleetAttributes[0].Status == types.FleetStatusActive, nil
	})
	createActive(ctx, t, b, fleetID, hoisttest.Region)
}

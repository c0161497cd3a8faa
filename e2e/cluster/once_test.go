package cluster_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	gl "github.com/aws/aws-sdk-go-v2/service/gamelift"
	"github.com/aws/aws-sdk-go-v2/service/gamelift/types"

	"github.com/hoistgg/hoist/e2e/cluster"
)

// clusterTimings shortens the FleetIQ group's status steps, so that a
// group is ACTIVE at once.
const clusterTimings = "fleetiq.status-step=50ms"

// TestClusterExactlyOnce runs three replicas on one PostgreSQL schema and
// checks that what must happen once happens once, whichever replica
// serves the call or runs the loop: 64 concurrent ClaimGameServer
// callers spread over the replicas never get the same game server;
// placements started on one replica are fulfilled by the placement loop
// of the replica holding their queue's shard, each on its own process;
// FlexMatch tickets started on all three replicas complete once each.
func TestClusterExactlyOnce(t *testing.T) {
	c := cluster.Start(t, cluster.Options{Args: []string{"--timings", clusterTimings}})
	run := func(name string, f func(ctx context.Context, t *testing.T)) {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			f(ctx, t)
		})
	}
	run("Claims", func(ctx context.Context, t *testing.T) { claimsOnce(ctx, t, c) })
	run("Placement", func(ctx context.Context, t *testing.T) { placementOnAnother(ctx, t, c) })
	run("Matchmaking", func(ctx context.Context, t *testing.T) { ticketsOnce(ctx, t, c) })
}

// gameServerGroup creates a game server group through cl, waits until it
// is ACTIVE and registers n game servers <group>-<i> spread over
// instances instances, eight calls at a time.
func gameServerGroup(ctx context.Context, t *testing.T, cl *gl.Client, group string, n, instances int) {
	t.Helper()
	if _, err := cl.CreateGameServerGroup(ctx, &gl.CreateGameServerGroupInput{GameServerGroupName: aws.String(group),
		RoleArn: aws.String("arn:aws:iam::123456789012:role/gamelift"), MinSize: aws.Int32(1), MaxSize: aws.Int32(int32(instances)),
		LaunchTemplate: &types.LaunchTemplateSpecification{LaunchTemplateId: aws.String("lt-0123456789abcdef0")},
		InstanceDefinitions: []types.InstanceDefinition{{InstanceType: types.GameServerGroupInstanceTypeC5Large},
			{InstanceType: types.GameServerGroupInstanceTypeC5aLarge}}}); err != nil {
		t.Fatal(err)
	}
	waitFor(ctx, t, "game server group ACTIVE", func() (bool, error) {
		out, err := cl.DescribeGameServerGroup(ctx, &gl.DescribeGameServerGroupInput{GameServerGroupName: aws.String(group)})
		return err == nil && out.GameServerGroup.Status == types.GameServerGroupStatusActive, err
	})
	var next atomic.Int64
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < n; i = int(next.Add(1) - 1) {
				if _, err := cl.RegisterGameServer(ctx, &gl.RegisterGameServerInput{GameServerGroupName: aws.String(group),
					GameServerId: aws.String(fmt.Sprintf("%s-%d", group, i)), InstanceId: aws.String(fmt.Sprintf("i-%017d", i%instances)),
					ConnectionInfo: aws.String("192.0.2.1:7777")}); err != nil {
					t.Errorf("RegisterGameServer: %v", err)
					return
				}
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
}

// claimsOnce: 300 game servers on 10 instances; 64 goroutines, each
// calling one replica (21 or 22 per replica), claim until every game
// server is claimed. No game server is handed out twice, every one is
// handed out, and each is CLAIMED afterwards.
func claimsOnce(ctx context.Context, t *testing.T, c *cluster.Cluster) {
	const group, servers, claimers = "claim-once", 300, 64
	gameServerGroup(ctx, t, c.Client(), group, servers, 10)
	var mu sync.Mutex
	got := map[string][]int{} // game server -> the claimers that got it
	var claimed atomic.Int64
	var wg sync.WaitGroup
	for w := range claimers {
		cl := c.Replicas[w%len(c.Replicas)].V2()
		wg.Go(func() {
			for claimed.Load() < servers && ctx.Err() == nil {
				out, err := cl.ClaimGameServer(ctx, &gl.ClaimGameServerInput{GameServerGroupName: aws.String(group)})
				if isOutOfCapacity(err) {
					continue // the last ones are being taken by others: look again until all are
				}
				if err != nil {
					t.Errorf("ClaimGameServer: %v", err)
					return
				}
				claimed.Add(1)
				mu.Lock()
				id := aws.ToString(out.GameServer.GameServerId)
				got[id] = append(got[id], w)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	for id, ws := range got {
		if len(ws) > 1 {
			t.Errorf("game server %s claimed by claimers %v", id, ws)
		}
	}
	if len(got) != servers {
		t.Errorf("%d game servers claimed, want %d", len(got), servers)
	}
	for _, gs := range listGameServers(ctx, t, c.Client(), group) {
		if gs.ClaimStatus != types.GameServerClaimStatusClaimed {
			t.Errorf("game server %s is %q after the claims, want CLAIMED", aws.ToString(gs.GameServerId), gs.ClaimStatus)
		}
	}
	t.Logf("%d claimers over 3 replicas claimed %d game servers, each once", claimers, len(got))
}

// listGameServers lists every game server of the group.
func listGameServers(ctx context.Context, t *testing.T, cl *gl.Client, group string) map[string]types.GameServer {
	t.Helper()
	out := map[string]types.GameServer{}
	pages := gl.NewListGameServersPaginator(cl, &gl.ListGameServersInput{GameServerGroupName: aws.String(group)})
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			t.Fatalf("ListGameServers: %v", err)
		}
		for _, gs := range page.GameServers {
			out[aws.ToString(gs.GameServerId)] = gs
		}
	}
	return out
}

// placementOnAnother: a queue of an Anywhere fleet whose processes are
// connected to the replica holding the queue's placement shard; 12
// placements started on the other two replicas are FULFILLED, each on
// its own process, and the shard stayed with its holder in one term
// throughout (so that replica's loop placed them: its writes are fenced
// by the shard's lease).
func placementOnAnother(ctx context.Context, t *testing.T, c *cluster.Cluster) {
	const n = 12
	a := c.Replicas[0].V2()
	fleetID, fleetARN := activeFleet(ctx, t, a, "place")
	if _, err := a.CreateGameSessionQueue(ctx, &gl.CreateGameSessionQueueInput{Name: aws.String("place"),
		Destinations: []types.GameSessionQueueDestination{{DestinationArn: aws.String(fleetARN)}}}); err != nil {
		t.Fatal(err)
	}
	holder, term := loopShardHolder(ctx, t, c, "placement", "place")
	procs := connectProcesses(ctx, t, holder.V2(), holder, fleetID, "custom-place", "place-host", n)
	var starters []*cluster.Replica
	for _, r := range c.Replicas {
		if r != holder {
			starters = append(starters, r)
		}
	}
	var ids []string
	for i := range n {
		r := starters[i%len(starters)]
		id := fmt.Sprintf("place-%d", i)
		if _, err := r.V2().StartGameSessionPlacement(ctx, &gl.StartGameSessionPlacementInput{PlacementId: aws.String(id),
			GameSessionQueueName: aws.String("place"), MaximumPlayerSessionCount: aws.Int32(2)}); err != nil {
			t.Fatalf("StartGameSessionPlacement on %s: %v", r.Name, err)
		}
		ids = append(ids, id)
	}
	sessions := map[string]string{}
	spread := c.Client()
	for _, id := range ids {
		waitFor(ctx, t, "placement "+id+" ended", func() (bool, error) {
			out, err := spread.DescribeGameSessionPlacement(ctx, &gl.DescribeGameSessionPlacementInput{PlacementId: aws.String(id)})
			if err != nil || out.GameSessionPlacement.Status == types.GameSessionPlacementStatePending {
				return false, err
			}
			if st := out.GameSessionPlacement.Status; st != types.GameSessionPlacementStateFulfilled {
				return false, fmt.Errorf("placement %s is %s", id, st)
			}
			sessions[aws.ToString(out.GameSessionPlacement.GameSessionId)] = id
			return true, nil
		})
	}
	if len(sessions) != n {
		t.Errorf("%d placements fulfilled with %d game sessions", n, len(sessions))
	}
	sent, twice := procs.sent()
	if sent != n || len(twice) > 0 {
		t.Errorf("processes got %d CreateGameSession for %d placements; more than one: %v", sent, n, twice)
	}
	after, afterTerm := loopShardHolder(ctx, t, c, "placement", "place")
	if after != holder || afterTerm != term {
		t.Fatalf("the queue's shard moved during the test (%s term %d, then %s term %d)", holder.Name, term, after.Name, afterTerm)
	}
	t.Logf("%d placements started on replicas %s and %s were fulfilled by the loop on %s", n, starters[0].Name, starters[1].Name, holder.Name)
}

// ticketsOnce: three STANDALONE configurations (their matchmaker shards
// spread over the replicas), 20 one-player tickets each, started at once
// through all three replicas; every ticket completes in a match of two,
// and a live stream sees one MatchmakingSucceeded for each ticket.
func ticketsOnce(ctx context.Context, t *testing.T, c *cluster.Cluster) {
	configs := []string{"once-a", "once-b", "once-c"}
	standaloneConfigurations(ctx, t, c.Client(), configs...)
	stream, err := c.Replicas[1].Stream(ctx, "", "")
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, cfg := range configs {
		for i := range 20 {
			ids = append(ids, fmt.Sprintf("%s-%d", cfg, i))
		}
	}
	var wg sync.WaitGroup
	for i, id := range ids {
		r := c.Replicas[i%len(c.Replicas)]
		wg.Go(func() {
			if err := startTicket(ctx, r.V2(), id[:len("once-a")], id); err != nil {
				t.Errorf("StartMatchmaking %s on %s: %v", id, r.Name, err)
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	got := waitTickets(ctx, t, c.Client(), ids)
	checkTeams(t, got)
	sentinel, err := c.Replicas[0].SendTestEvent(ctx, "once-sentinel", "", "last")
	if err != nil {
		t.Fatal(err)
	}
	succeeded := matchEvents(t, stream, sentinel)
	for _, id := range ids {
		if succeeded[id] != 1 {
			t.Errorf("ticket %s in %d MatchmakingSucceeded events, want 1", id, succeeded[id])
		}
	}
	holders := map[string]bool{}
	for _, cfg := range configs {
		r, _ := loopShardHolder(ctx, t, c, "matchmaking", cfg)
		holders[r.Name] = true
	}
	t.Logf("%d tickets started on three replicas completed once each; the configurations' matchmakers ran on %d replicas", len(ids), len(holders))
}

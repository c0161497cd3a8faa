package cluster_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	gl "github.com/aws/aws-sdk-go-v2/service/gamelift"
	"github.com/aws/aws-sdk-go-v2/service/gamelift/types"

	"github.com/hoistgg/hoist/e2e/cluster"
	"github.com/hoistgg/hoist/e2e/hoisttest"
)

// TestClusterMetrics: two replicas on one PostgreSQL schema report the
// same cluster gauges (computed from the store), while each counts only
// the events it committed (labelled with its replica ID), so that the sum
// over the replicas is the cluster's.
func TestClusterMetrics(t *testing.T) {
	c := cluster.Start(t, cluster.Options{Replicas: 2})
	a, b := c.Replicas[0].V2(), c.Replicas[1].V2()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	// Through A: a game server group with two game servers. Through B: a
	// queue whose one destination has no capacity (an Anywhere fleet
	// without a compute), and a placement that stays PENDING.
	const group = "cluster-metrics"
	if _, err := a.CreateGameServerGroup(ctx, &gl.CreateGameServerGroupInput{GameServerGroupName: aws.String(group),
		RoleArn: aws.String("arn:aws:iam::123456789012:role/GameLiftGameServerGroupRole"), MinSize: aws.Int32(0), MaxSize: aws.Int32(2),
		LaunchTemplate:      &types.LaunchTemplateSpecification{LaunchTemplateName: aws.String("frog")},
		InstanceDefinitions: []types.InstanceDefinition{{InstanceType: types.GameServerGroupInstanceTypeC52xlarge}, {InstanceType: types.GameServerGroupInstanceTypeC5a2xlarge}},
	}); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"gs-1", "gs-2"} {
		if _, err := a.RegisterGameServer(ctx, &gl.RegisterGameServerInput{GameServerGroupName: aws.String(group),
			GameServerId: aws.String(id), InstanceId: aws.String("i-1234567890abcdef0")}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := b.CreateLocation(ctx, &gl.CreateLocationInput{LocationName: aws.String("custom-metrics")}); err != nil {
		t.Fatal(err)
	}
	f, err := b.CreateFleet(ctx, &gl.CreateFleetInput{Name: aws.String("empty"), ComputeType: types.ComputeTypeAnywhere,
		Locations: []types.LocationConfiguration{{Location: aws.String("custom-metrics")}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.CreateGameSessionQueue(ctx, &gl.CreateGameSessionQueueInput{Name: aws.String("cluster-metrics"),
		TimeoutInSeconds: aws.Int32(600),
		Destinations:     []types.GameSessionQueueDestination{{DestinationArn: f.FleetAttributes.FleetArn}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.StartGameSessionPlacement(ctx, &gl.StartGameSessionPlacementInput{GameSessionQueueName: aws.String("cluster-metrics"),
		PlacementId: aws.String("stays-pending"), MaximumPlayerSessionCount: aws.Int32(2)}); err != nil {
		t.Fatal(err)
	}

	g, q := map[string]string{"GameServerGroup": group}, map[string]string{"QueueName": "cluster-metrics"}
	gauges := map[string]map[string]string{"gamelift_AvailableGameServers": g, "gamelift_QueueDepth": q}
	want := map[string]float64{"gamelift_AvailableGameServers": 2, "gamelift_QueueDepth": 1}
	deadline := time.Now().Add(30 * time.Second)
	for {
		ms := scrapeAll(t, c)
		state := ""
		for name, labels := range gauges {
			va, _ := ms[0].Value(name, labels)
			vb, _ := ms[1].Value(name, labels)
			if va != want[name] || vb != want[name] {
				state += fmt.Sprintf("%s: A %v, B %v, want %v; ", name, va, vb, want[name])
			}
		}
		started := map[string]float64{}
		for i, m := range ms {
			v, _ := m.Value("gamelift_PlacementsStarted", q)
			started[c.Replicas[i].Name] = v
		}
		if started["A"] != 0 || started["B"] != 1 {
			state += fmt.Sprintf("PlacementsStarted by replica: %v, want B's only; ", started)
		}
		if state == "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the replicas' metrics: %s", state)
		}
		time.Sleep(100 * time.Millisecond) // polling interval, not a wait for time to pass
	}
}

// scrapeAll scrapes every replica.
func scrapeAll(t *testing.T, c *cluster.Cluster) []hoisttest.Metrics {
	t.Helper()
	var out []hoisttest.Metrics
	for _, r := range c.Replicas {
		m, err := hoisttest.Scrape(r.URL(), "")
		if err != nil {
			t.Fatalf("replica %s: %v", r.Name, err)
		}
		out = append(out, m)
	}
	return out
}

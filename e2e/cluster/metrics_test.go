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

// TestClusterMetricsAndConsole: three replicas on one PostgreSQL schema
// report the same cluster gauges (computed from the store), while each
// counts only the events it committed (labelled with its replica ID), so
// that the sum over the replicas is the cluster's; and the console works
// across them: an operator signed in on A uses the same cookie on B, sees
// there what was created through A and C, lists the three replicas, and
// stops a placement with the CSRF token of A's page, which every replica's
// gauges then show.
func TestClusterMetricsAndConsole(t *testing.T) {
	c := cluster.Start(t, cluster.Options{Replicas: 3})
	a, cc := c.Replicas[0].V2(), c.Replicas[2].V2()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	// Through A: a game server group with two game servers. Through C: a
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
	if _, err := cc.CreateLocation(ctx, &gl.CreateLocationInput{LocationName: aws.String("custom-metrics")}); err != nil {
		t.Fatal(err)
	}
	f, err := cc.CreateFleet(ctx, &gl.CreateFleetInput{Name: aws.String("empty"), ComputeType: types.ComputeTypeAnywhere,
		Locations: []types.LocationConfiguration{{Location: aws.String("custom-metrics")}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cc.CreateGameSessionQueue(ctx, &gl.CreateGameSessionQueueInput{Name: aws.String("cluster-metrics"),
		TimeoutInSeconds: aws.Int32(600),
		Destinations:     []types.GameSessionQueueDestination{{DestinationArn: f.FleetAttributes.FleetArn}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := cc.StartGameSessionPlacement(ctx, &gl.StartGameSessionPlacementInput{GameSessionQueueName: aws.String("cluster-metrics"),
		PlacementId: aws.String("stays-pending"), MaximumPlayerSessionCount: aws.Int32(2)}); err != nil {
		t.Fatal(err)
	}

	g, q := map[string]string{"GameServerGroup": group}, map[string]string{"QueueName": "cluster-metrics"}
	waitMetrics(t, c, clusterMetrics{
		gauges: map[string]map[string]string{"gamelift_AvailableGameServers": g, "gamelift_QueueDepth": q},
		want:   map[string]float64{"gamelift_AvailableGameServers": 2, "gamelift_QueueDepth": 1},
		name:   "gamelift_PlacementsStarted", labels: q, by: map[string]float64{"A": 0, "B": 0, "C": 1},
	})

	// Every replica counts its round trips to PostgreSQL.
	for i, m := range scrapeAll(t, c) {
		if v, ok := m.Value("hoist_store_postgres_round_trips_total", nil); !ok || v <= 0 {
			t.Errorf("replica %s: hoist_store_postgres_round_trips_total %v (%v), want some", c.Replicas[i].Name, v, ok)
		}
		if _, ok := m.Value("hoist_store_postgres_retries_total", nil); !ok {
			t.Errorf("replica %s: no hoist_store_postgres_retries_total", c.Replicas[i].Name)
		}
	}

	// The console: signed in on A, the cookie on B; the placement stopped
	// on B with A's CSRF token.
	consoleAcrossReplicas(t, c, aws.ToString(f.FleetAttributes.FleetId))
	waitMetrics(t, c, clusterMetrics{
		gauges: map[string]map[string]string{"gamelift_QueueDepth": q},
		want:   map[string]float64{"gamelift_QueueDepth": 0},
		name:   "gamelift_PlacementsCanceled", labels: q, by: map[string]float64{"A": 0, "B": 1, "C": 0},
	})
}

// clusterMetrics is what every replica's /metrics should show: the same
// cluster gauges (name: labels), and a counter each replica counts for
// itself (by replica name).
type clusterMetrics struct {
	gauges map[string]map[string]string
	want   map[string]float64
	name   string
	labels map[string]string
	by     map[string]float64
}

// waitMetrics scrapes every replica until they show want (30 s at most).
func waitMetrics(t *testing.T, c *cluster.Cluster, want clusterMetrics) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		ms := scrapeAll(t, c)
		state := ""
		for name, labels := range want.gauges {
			var got []float64
			same := true
			for _, m := range ms {
				v, _ := m.Value(name, labels)
				got, same = append(got, v), same && v == want.want[name]
			}
			if !same {
				state += fmt.Sprintf("%s: %v by replica, want %v everywhere; ", name, got, want.want[name])
			}
		}
		counted := map[string]float64{}
		for i, m := range ms {
			counted[c.Replicas[i].Name], _ = m.Value(want.name, want.labels)
		}
		if fmt.Sprint(counted) != fmt.Sprint(want.by) {
			state += fmt.Sprintf("%s by replica: %v, want %v; ", want.name, counted, want.by)
		}
		if state == "" {
			return
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

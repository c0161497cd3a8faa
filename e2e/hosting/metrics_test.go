//go:build linux

package hosting

import (
	"errors"
	"fmt"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	gl "github.com/aws/aws-sdk-go-v2/service/gamelift"
	"github.com/aws/aws-sdk-go-v2/service/gamelift/types"

	"github.com/hoistgg/hoist/e2e/hoisttest"
)

// TestMetrics performs known actions through aws-sdk-go-v2 (a fleet, game
// and player sessions, a placement, a FlexMatch match, a FleetIQ claim)
// and scrapes GET /metrics with Prometheus's text parser after each,
// checking GameLift's gauges and counters and Hoist's own (connections,
// store commits, requests, matchmaker passes).
func TestMetrics(t *testing.T) {
	e := startHoist(t, "placement.interval=100ms")
	e.dumpOnFailure(t)
	build := e.uploadGameServer(t, "metrics")
	fleetID := e.newFleet(t, fleetSpec{name: "metrics", build: build, params: "-accept-players", concurrent: 4})
	fleet := map[string]string{"FleetId": fleetID, "Location": hoisttest.Region}

	t.Run("fleet", func(t *testing.T) {
		e.waitMetrics(t, "a fleet of one instance and 4 ready processes", map[string]want{
			"gamelift_ActiveInstances":                   {fleet, 1},
			"gamelift_IdleInstances":                     {fleet, 1},
			"gamelift_ActiveServerProcesses":             {fleet, 4},
			"gamelift_HealthyServerProcesses":            {fleet, 4},
			"gamelift_AvailableGameSessions":             {fleet, 4},
			"gamelift_ActiveGameSessions":                {fleet, 0},
			"gamelift_PercentAvailableGameSessions":      {fleet, 100},
			"gamelift_ServerProcessActivations":          {fleet, 4},
			"hoist_server_processes_launched_total":      {fleet, 4},
			"gamelift_DesiredInstances":                  {fleet, 1},
			"gamelift_ConcurrentActivatableGameSessions": {fleet, 4},
			// Hoist's own: the 4 processes' SDK connections, the local
			// agent's, the store's commits and their writes.
			"hoist_sdk_connections":               {nil, 4},
			"hoist_host_connections":              {nil, 1},
			"hoist_agent_connections":             {nil, 0},
			"hoist_store_update_duration_seconds": {map[string]string{"op": "update", "result": "ok"}, -1},
			"hoist_store_update_writes":           {map[string]string{"op": "update"}, -1},
			"hoist_store_journal_batches_total":   {nil, -1},
			"hoist_store_journal_updates_total":   {nil, -1},
			"hoist_metrics_cluster_up":            {nil, 1},
		})
	})

	t.Run("game and player sessions", func(t *testing.T) {
		sessionWithPlayers(t, e, fleetID) // two players reserved, one accepted
		e.waitMetrics(t, "one game session with one player accepted and one reserved", map[string]want{
			"gamelift_ActiveGameSessions":           {fleet, 1},
			"gamelift_AvailableGameSessions":        {fleet, 3},
			"gamelift_IdleInstances":                {fleet, 0},
			"gamelift_CurrentPlayerSessions":        {fleet, 2},
			"gamelift_PlayerSessionActivations":     {fleet, 1},
			"gamelift_PercentIdleInstances":         {fleet, 0},
			"gamelift_PercentAvailableGameSessions": {fleet, 75},
			"hoist_api_request_duration_seconds":    {map[string]string{"operation": "CreateGameSession", "code": ""}, 1},
		})
	})

	queue := e.createQueue(t, &gl.CreateGameSessionQueueInput{Name: aws.String("metrics"),
		Destinations: dests(fleetARNOf(t, e, fleetID))})
	t.Run("placement", func(t *testing.T) {
		e.waitPlacement(t, e.place(t, "metrics", "metrics-placement", nil), types.GameSessionPlacementStateFulfilled)
		_, err := e.gl.DescribeGameSessionPlacement(e.ctx, &gl.DescribeGameSessionPlacementInput{PlacementId: aws.String("no-such-placement")})
		if nf := (*types.NotFoundException)(nil); !errors.As(err, &nf) {
			t.Fatalf("DescribeGameSessionPlacement of no placement: %v, want NotFoundException", err)
		}
		q := map[string]string{"QueueName": "metrics"}
		e.waitMetrics(t, "one placement fulfilled", map[string]want{
			"gamelift_PlacementsStarted":         {q, 1},
			"gamelift_PlacementsSucceeded":       {q, 1},
			"gamelift_QueueDepth":                {q, 0},
			"gamelift_ActiveGameSessions":        {fleet, 2},
			"hoist_api_request_duration_seconds": {map[string]string{"operation": "DescribeGameSessionPlacement", "code": "NotFoundException"}, 1},
		})
	})

	t.Run("FlexMatch", func(t *testing.T) {
		if _, err := e.gl.CreateMatchmakingRuleSet(e.ctx, &gl.CreateMatchmakingRuleSetInput{Name: aws.String("duo"),
			RuleSetBody: aws.String(mmBody)}); err != nil {
			t.Fatalf("CreateMatchmakingRuleSet: %v", err)
		}
		e.mmConfig(t, "metrics-mm", aws.ToString(queue.GameSessionQueueArn), types.BackfillModeManual)
		e.startTicket(t, "metrics-mm", "metrics-t1", "p1")
		e.startTicket(t, "metrics-mm", "metrics-t2", "p2")
		e.waitTicket(t, "metrics-t1", types.MatchmakingConfigurationStatusCompleted)
		e.waitTicket(t, "metrics-t2", types.MatchmakingConfigurationStatusCompleted)
		c := map[string]string{"ConfigurationName": "metrics-mm"}
		q := map[string]string{"QueueName": "metrics"}
		e.waitMetrics(t, "two tickets matched and placed", map[string]want{
			"gamelift_TicketsStarted":       {c, 2},
			"gamelift_MatchesCreated":       {c, 1},
			"gamelift_MatchesPlaced":        {c, 1},
			"gamelift_TimeToMatch":          {c, 2}, // one sample per ticket
			"gamelift_TimeToTicketSuccess":  {c, 2},
			"gamelift_CurrentTickets":       {c, 0},
			"gamelift_PlacementsStarted":    {q, 2},
			"gamelift_PlacementsSucceeded":  {q, 2},
			"gamelift_ActiveGameSessions":   {fleet, 3},
			"hoist_matchmaker_pass_seconds": {c, -1}, // some passes
			"hoist_matchmaker_work_total":   {c, -1}, // and their work
		})
	})

	t.Run("FleetIQ", func(t *testing.T) {
		const group = "metrics-group"
		if _, err := e.gl.CreateGameServerGroup(e.ctx, &gl.CreateGameServerGroupInput{
			GameServerGroupName: aws.String(group), RoleArn: aws.String("arn:aws:iam::123456789012:role/GameLiftGameServerGroupRole"),
			MinSize: aws.Int32(0), MaxSize: aws.Int32(2),
			LaunchTemplate:      &types.LaunchTemplateSpecification{LaunchTemplateName: aws.String("frog")},
			InstanceDefinitions: []types.InstanceDefinition{{InstanceType: types.GameServerGroupInstanceTypeC52xlarge}, {InstanceType: types.GameServerGroupInstanceTypeC5a2xlarge}},
		}); err != nil {
			t.Fatalf("CreateGameServerGroup: %v", err)
		}
		for _, id := range []string{"gs-1", "gs-2"} {
			if _, err := e.gl.RegisterGameServer(e.ctx, &gl.RegisterGameServerInput{GameServerGroupName: aws.String(group),
				GameServerId: aws.String(id), InstanceId: aws.String("i-1234567890abcdef0"), ConnectionInfo: aws.String("192.0.2.0.80")}); err != nil {
				t.Fatalf("RegisterGameServer %s: %v", id, err)
			}
		}
		claimed, err := e.gl.ClaimGameServer(e.ctx, &gl.ClaimGameServerInput{GameServerGroupName: aws.String(group)})
		if err != nil {
			t.Fatalf("ClaimGameServer: %v", err)
		}
		g := map[string]string{"GameServerGroup": group}
		e.waitMetrics(t, "two game servers, one claimed", map[string]want{
			"gamelift_AvailableGameServers": {g, 2}, // a claimed game server is still AVAILABLE
			"gamelift_UtilizedGameServers":  {g, 0},
		})
		if _, err := e.gl.UpdateGameServer(e.ctx, &gl.UpdateGameServerInput{GameServerGroupName: aws.String(group),
			GameServerId: claimed.GameServer.GameServerId, UtilizationStatus: types.GameServerUtilizationStatusUtilized}); err != nil {
			t.Fatalf("UpdateGameServer: %v", err)
		}
		e.waitMetrics(t, "one game server utilized", map[string]want{
			"gamelift_AvailableGameServers":        {g, 1},
			"gamelift_UtilizedGameServers":         {g, 1},
			"gamelift_PercentUtilizedGameServers":  {g, 50},
			"gamelift_DrainingUtilizedGameServers": {g, 0},
		})
	})
}

// want is a metric's expected value: the sum of the samples with these
// labels (a histogram's count); -1: any positive value.
type want struct {
	labels map[string]string
	value  float64
}

// waitMetrics scrapes /metrics until every metric has its expected value
// (the cluster gauges are reused for up to a second, and some counts
// follow the calls that cause them).
func (e *env) waitMetrics(t *testing.T, what string, wants map[string]want) {
	t.Helper()
	eventually(t, waitShort, "metrics: "+what, func() (bool, string) {
		m, err := hoisttest.Scrape(e.h.URL, "")
		if err != nil {
			t.Fatal(err)
		}
		for name, w := range wants {
			got, found := m.Value(name, w.labels)
			switch {
			case w.value < 0 && got > 0:
				continue
			case found && got == w.value:
				continue
			}
			return false, fmt.Sprintf("%s%v = %v (found: %v), want %v", name, w.labels, got, found, w.value)
		}
		return true, ""
	})
}

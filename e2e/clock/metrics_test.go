package clock_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	gl "github.com/aws/aws-sdk-go-v2/service/gamelift"
	"github.com/aws/aws-sdk-go-v2/service/gamelift/types"

	"github.com/hoistgg/hoist/e2e/hoisttest"
)

// duoRules is a rule set whose one team needs two players.
const duoRules = `{"name":"duo","ruleLanguageVersion":"1.0","teams":[{"name":"duo","minPlayers":2,"maxPlayers":2}]}`

// metricsWait bounds how long a scrape may take to show a known action:
// the cluster gauges are reused for up to a second of wall time.
const metricsWait = 10 * time.Second

// TestMetricsFollowTheClock performs, through aws-sdk-go-v2 and `hoist
// admin`, the actions whose GameLift metrics need time to pass or an
// operator, and scrapes GET /metrics with Prometheus's text parser after
// each: a queue's depth and AverageWaitTime as the manual clock moves, a
// placement TIMED_OUT and one FAILED (its queue deleted); potential
// matches accepted, rejected and whose acceptance timed out; a FleetIQ
// instance set DRAINING (its game servers counted as draining) and then
// SPOT_TERMINATING (GameServerInterruptions).
func TestMetricsFollowTheClock(t *testing.T) {
	h, c := startManual(t)
	t.Run("placements", func(t *testing.T) { metricsOfPlacements(t, h, c) })
	t.Run("FlexMatch acceptance", func(t *testing.T) { metricsOfAcceptance(t, h, c) })
	t.Run("FleetIQ draining", func(t *testing.T) { metricsOfDraining(t, h, c) })
}

// metricsOfPlacements: two placements on a queue with nowhere to place
// them and a 30 s timeout, started 10 s apart of manual time.
func metricsOfPlacements(t *testing.T, h *hoisttest.Hoist, c *gl.Client) {
	ctx := t.Context()
	const queue = "metrics-queue"
	if _, err := c.CreateGameSessionQueue(ctx, &gl.CreateGameSessionQueueInput{Name: aws.String(queue),
		TimeoutInSeconds: aws.Int32(30)}); err != nil {
		t.Fatalf("CreateGameSessionQueue: %v", err)
	}
	place := func(id string) {
		if _, err := c.StartGameSessionPlacement(ctx, &gl.StartGameSessionPlacementInput{PlacementId: aws.String(id),
			GameSessionQueueName: aws.String(queue), MaximumPlayerSessionCount: aws.Int32(2)}); err != nil {
			t.Fatalf("StartGameSessionPlacement %s: %v", id, err)
		}
	}
	q := map[string]string{"QueueName": queue}
	place("p-1")
	advance(t, h, "10s")
	waitMetrics(t, h, "one placement waiting 10 s", map[string]want{
		"gamelift_PlacementsStarted": {q, 1}, "gamelift_QueueDepth": {q, 1}, "gamelift_AverageWaitTime": {q, 10}})
	place("p-2")
	advance(t, h, "10s")
	waitMetrics(t, h, "placements waiting 20 s and 10 s", map[string]want{
		"gamelift_PlacementsStarted": {q, 2}, "gamelift_QueueDepth": {q, 2}, "gamelift_AverageWaitTime": {q, 15}})
	advance(t, h, "10s")
	waitMetrics(t, h, "the first placement TIMED_OUT at 30 s", map[string]want{
		"gamelift_PlacementsTimedOut": {q, 1}, "gamelift_QueueDepth": {q, 1}, "gamelift_AverageWaitTime": {q, 20}})
	if _, err := c.DeleteGameSessionQueue(ctx, &gl.DeleteGameSessionQueueInput{Name: aws.String(queue)}); err != nil {
		t.Fatalf("DeleteGameSessionQueue: %v", err)
	}
	waitMetrics(t, h, "the second placement FAILED with its queue deleted", map[string]want{
		"gamelift_PlacementsFailed": {q, 1}, "gamelift_PlacementsTimedOut": {q, 1}, "gamelift_PlacementsSucceeded": {q, 0}})
}

// metricsOfAcceptance: three pairs of tickets on a configuration that
// requires acceptance (30 s): the first pair accepts, a player of the
// second rejects, the third does not answer until the clock passes the
// timeout.
func metricsOfAcceptance(t *testing.T, h *hoisttest.Hoist, c *gl.Client) {
	ctx := t.Context()
	if _, err := c.CreateMatchmakingRuleSet(ctx, &gl.CreateMatchmakingRuleSetInput{Name: aws.String("duo"),
		RuleSetBody: aws.String(duoRules)}); err != nil {
		t.Fatalf("CreateMatchmakingRuleSet: %v", err)
	}
	const config = "metrics-accept"
	if _, err := c.CreateMatchmakingConfiguration(ctx, &gl.CreateMatchmakingConfigurationInput{Name: aws.String(config),
		RuleSetName: aws.String("duo"), RequestTimeoutSeconds: aws.Int32(600), AcceptanceRequired: aws.Bool(true),
		AcceptanceTimeoutSeconds: aws.Int32(30), FlexMatchMode: types.FlexMatchModeStandalone}); err != nil {
		t.Fatalf("CreateMatchmakingConfiguration: %v", err)
	}
	cfg := map[string]string{"ConfigurationName": config}
	pair := func(n int, answer types.AcceptanceType) {
		for _, id := range []string{fmt.Sprintf("t%da", n), fmt.Sprintf("t%db", n)} {
			if _, err := c.StartMatchmaking(ctx, &gl.StartMatchmakingInput{ConfigurationName: aws.String(config),
				TicketId: aws.String(id), Players: []types.Player{{PlayerId: aws.String("player-" + id)}}}); err != nil {
				t.Fatalf("StartMatchmaking %s: %v", id, err)
			}
		}
		for _, id := range []string{fmt.Sprintf("t%da", n), fmt.Sprintf("t%db", n)} {
			waitTicket(t, c, id, types.MatchmakingConfigurationStatusRequiresAcceptance)
		}
		for _, id := range []string{fmt.Sprintf("t%da", n), fmt.Sprintf("t%db", n)} {
			if answer == "" {
				return
			}
			if _, err := c.AcceptMatch(ctx, &gl.AcceptMatchInput{TicketId: aws.String(id),
				PlayerIds: []string{"player-" + id}, AcceptanceType: answer}); err != nil {
				t.Fatalf("AcceptMatch %s %s: %v", id, answer, err)
			}
			if answer == types.AcceptanceTypeReject {
				// One rejection ends the match; the other ticket searches
				// again (GameLift's behaviour): stop it, so that it
				// makes no match with the next pair.
				other := fmt.Sprintf("t%db", n)
				waitTicket(t, c, other, types.MatchmakingConfigurationStatusSearching)
				if _, err := c.StopMatchmaking(ctx, &gl.StopMatchmakingInput{TicketId: aws.String(other)}); err != nil {
					t.Fatalf("StopMatchmaking %s: %v", other, err)
				}
				return
			}
		}
	}
	pair(1, types.AcceptanceTypeAccept)
	waitMetrics(t, h, "a match accepted", map[string]want{
		"gamelift_TicketsStarted": {cfg, 2}, "gamelift_PlayersStarted": {cfg, 2}, "gamelift_MatchesCreated": {cfg, 1},
		"gamelift_MatchesAccepted": {cfg, 1}})
	pair(2, types.AcceptanceTypeReject)
	waitMetrics(t, h, "a match rejected", map[string]want{
		"gamelift_MatchesCreated": {cfg, 2}, "gamelift_MatchesRejected": {cfg, 1}, "gamelift_MatchesAccepted": {cfg, 1}})
	pair(3, "")
	waitMetrics(t, h, "a match waiting for acceptance", map[string]want{"gamelift_CurrentTickets": {cfg, 2}})
	advance(t, h, "31s")
	waitMetrics(t, h, "a match whose acceptance timed out", map[string]want{
		"gamelift_MatchesCreated": {cfg, 3}, "gamelift_MatchAcceptancesTimedOut": {cfg, 1},
		"gamelift_CurrentTickets": {cfg, 0}, "gamelift_MatchesRejected": {cfg, 1}})
}

// metricsOfDraining: a group's instance with two game servers, one of
// them utilized, set DRAINING then SPOT_TERMINATING by the operator.
func metricsOfDraining(t *testing.T, h *hoisttest.Hoist, c *gl.Client) {
	ctx := t.Context()
	const group, instance = "metrics-drain", "i-0123456789abcdef1"
	if _, err := c.CreateGameServerGroup(ctx, &gl.CreateGameServerGroupInput{GameServerGroupName: aws.String(group),
		RoleArn: aws.String("arn:aws:iam::123456789012:role/gamelift"), MinSize: aws.Int32(1), MaxSize: aws.Int32(2),
		LaunchTemplate: &types.LaunchTemplateSpecification{LaunchTemplateId: aws.String("lt-0123456789abcdef0")},
		InstanceDefinitions: []types.InstanceDefinition{{InstanceType: types.GameServerGroupInstanceTypeC5Large},
			{InstanceType: types.GameServerGroupInstanceTypeC5Xlarge}}}); err != nil {
		t.Fatalf("CreateGameServerGroup: %v", err)
	}
	for _, id := range []string{"gs-1", "gs-2"} {
		if _, err := c.RegisterGameServer(ctx, &gl.RegisterGameServerInput{GameServerGroupName: aws.String(group),
			GameServerId: aws.String(id), InstanceId: aws.String(instance)}); err != nil {
			t.Fatalf("RegisterGameServer %s: %v", id, err)
		}
	}
	if _, err := c.UpdateGameServer(ctx, &gl.UpdateGameServerInput{GameServerGroupName: aws.String(group),
		GameServerId: aws.String("gs-2"), UtilizationStatus: types.GameServerUtilizationStatusUtilized}); err != nil {
		t.Fatalf("UpdateGameServer: %v", err)
	}
	g := map[string]string{"GameServerGroup": group}
	waitMetrics(t, h, "an ACTIVE instance's game servers", map[string]want{
		"gamelift_AvailableGameServers": {g, 1}, "gamelift_UtilizedGameServers": {g, 1},
		"gamelift_DrainingAvailableGameServers": {g, 0}, "gamelift_DrainingUtilizedGameServers": {g, 0}})
	setStatus := func(status string) {
		if code, out, errOut := runAdmin(t, h, "set-instance-status", "--group", group, "--instance", instance,
			"--status", status); code != 0 {
			t.Fatalf("hoist admin set-instance-status %s: exit %d\n%s%s", status, code, out, errOut)
		}
	}
	setStatus("DRAINING")
	waitMetrics(t, h, "a DRAINING instance's game servers", map[string]want{
		"gamelift_AvailableGameServers": {g, 0}, "gamelift_UtilizedGameServers": {g, 0},
		"gamelift_DrainingAvailableGameServers": {g, 1}, "gamelift_DrainingUtilizedGameServers": {g, 1},
		"gamelift_GameServerInterruptions": {g, 0}})
	setStatus("SPOT_TERMINATING")
	waitMetrics(t, h, "a SPOT_TERMINATING instance's game servers", map[string]want{
		"gamelift_DrainingAvailableGameServers": {g, 1}, "gamelift_DrainingUtilizedGameServers": {g, 1},
		"gamelift_GameServerInterruptions": {g, 2}})
}

// want is a metric's expected value: the sum of its samples with these
// labels (a histogram's count).
type want struct {
	labels map[string]string
	value  float64
}

// waitMetrics scrapes h's /metrics until every metric has its expected
// value, failing the test after metricsWait (polling the scrape, not
// waiting for time to pass: the gauges are reused for up to a second).
func waitMetrics(t *testing.T, h *hoisttest.Hoist, what string, wants map[string]want) {
	t.Helper()
	deadline := time.Now().Add(metricsWait)
	for {
		m, err := hoisttest.Scrape(h.URL, "")
		if err != nil {
			t.Fatalf("scrape: %v", err)
		}
		miss := ""
		for name, w := range wants {
			if got, _ := m.Value(name, w.labels); got != w.value {
				miss = fmt.Sprintf("%s%v = %v, want %v", name, w.labels, got, w.value)
				break
			}
		}
		if miss == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("metrics: %s: %s", what, miss)
		}
		time.Sleep(50 * time.Millisecond) // polling the scrape
	}
}

// waitTicket polls DescribeMatchmaking until the ticket has status.
func waitTicket(t *testing.T, c *gl.Client, id string, status types.MatchmakingConfigurationStatus) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), metricsWait)
	defer cancel()
	for {
		out, err := c.DescribeMatchmaking(ctx, &gl.DescribeMatchmakingInput{TicketIds: []string{id}})
		if err == nil && len(out.TicketList) == 1 && out.TicketList[0].Status == status {
			return
		}
		if ctx.Err() != nil {
			t.Fatalf("ticket %s: not %s within %v (%+v, %v)", id, status, metricsWait, out, err)
		}
		time.Sleep(20 * time.Millisecond) // polling the API for a state
	}
}

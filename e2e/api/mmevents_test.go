package api_test

import (
	"fmt"
	"testing"
	"time"

	awsv2 "github.com/aws/aws-sdk-go-v2/aws"
	glv2 "github.com/aws/aws-sdk-go-v2/service/gamelift"
	"github.com/aws/aws-sdk-go-v2/service/gamelift/types"

	"github.com/hoistgg/hoist/e2e/hoisttest"
)

// mmFairBody is a 1v1 whose players' skills must be within 5, with a rule
// every match keeps.
const mmFairBody = `{"name":"fair","ruleLanguageVersion":"1.0",
 "playerAttributes":[{"name":"skill","type":"number","default":10}],
 "teams":[{"name":"red","minPlayers":1,"maxPlayers":1},{"name":"blue","minPlayers":1,"maxPlayers":1}],
 "rules":[{"name":"Anyone","type":"comparison","measurements":"avg(teams[*].players.attributes[skill])","referenceValue":0,"operation":">="},
  {"name":"FairSkill","type":"distance","measurements":"flatten(teams[*].players.attributes[skill])","maxDistance":5}]}`

// TestMatchmakingEndEvents reads, from the live stream through a real
// Hoist, the events of tickets that end without a match as GameLift's
// documents show them: MatchmakingTimedOut with ruleEvaluationMetrics
// (every rule, how often it passed and failed for the ticket's candidate
// matches), and MatchmakingFailed with a reason code and the match's ID.
func TestMatchmakingEndEvents(t *testing.T) {
	h := startHoist(t)
	ctx := hoisttest.Context(t, 2*time.Minute)
	v2 := newV2(h)

	// Two players too far apart in skill never match, and time out.
	mmSetup(t, ctx, v2, "fair", mmFairBody, func(in *glv2.CreateMatchmakingConfigurationInput) { in.RequestTimeoutSeconds = awsv2.Int32(2) })
	next := mmEvents(t, h, "fair")
	for id, skill := range map[string]float64{"weak": 10, "strong": 50} {
		if _, err := v2.StartMatchmaking(ctx, &glv2.StartMatchmakingInput{ConfigurationName: awsv2.String("fair"), TicketId: awsv2.String(id),
			Players: []types.Player{{PlayerId: awsv2.String(id), PlayerAttributes: map[string]types.AttributeValue{"skill": {N: awsv2.Float64(skill)}}}}}); err != nil {
			t.Fatal(err)
		}
	}
	mmWait(t, ctx, v2, types.MatchmakingConfigurationStatusTimedOut, "weak", "strong")
	d := mmWantEvents(t, next, "MatchmakingTimedOut")[0]
	metrics := map[string]string{}
	ms, _ := d["ruleEvaluationMetrics"].([]any)
	for _, m := range ms {
		mm, _ := m.(map[string]any)
		metrics[fmt.Sprint(mm["ruleName"])] = fmt.Sprintf("%v/%v", mm["passedCount"], mm["failedCount"])
	}
	if len(metrics) != 2 || metrics["Anyone"] == "" || metrics["Anyone"][len(metrics["Anyone"])-2:] != "/0" ||
		metrics["FairSkill"] == "" || metrics["FairSkill"][:2] != "0/" || metrics["FairSkill"] == "0/0" {
		t.Fatalf("MatchmakingTimedOut ruleEvaluationMetrics %v (%v)", metrics, d)
	}

	// A WITH_QUEUE match whose queue has nowhere to place it: its
	// placement times out after the queue's 10 s, and its tickets FAIL.
	if _, err := v2.CreateGameSessionQueue(ctx, &glv2.CreateGameSessionQueueInput{Name: awsv2.String("nowhere"),
		TimeoutInSeconds: awsv2.Int32(10)}); err != nil {
		t.Fatal(err)
	}
	mmSetup(t, ctx, v2, "placed", mmDuelBody, func(in *glv2.CreateMatchmakingConfigurationInput) {
		in.FlexMatchMode, in.GameSessionQueueArns = types.FlexMatchModeWithQueue, []string{"nowhere"}
	})
	next = mmEvents(t, h, "placed")
	mmStart(t, ctx, v2, "placed", "p1", "alice")
	mmStart(t, ctx, v2, "placed", "p2", "bob")
	pm := mmWantEvents(t, next, "PotentialMatchCreated")[0]
	deadline := time.Now().Add(30 * time.Second)
	for {
		out, err := v2.DescribeMatchmaking(ctx, &glv2.DescribeMatchmakingInput{TicketIds: []string{"p1"}})
		if err != nil || len(out.TicketList) != 1 {
			t.Fatalf("DescribeMatchmaking: %+v, %v", out, err)
		}
		if out.TicketList[0].Status == types.MatchmakingConfigurationStatusFailed {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("ticket p1 is %s", out.TicketList[0].Status)
		}
		time.Sleep(100 * time.Millisecond) // polling interval, not a wait for time to pass
	}
	f := mmWantEvents(t, next, "MatchmakingFailed")[0]
	if f["reason"] != "PLACEMENT_TIMED_OUT" || f["matchId"] != pm["matchId"] || f["message"] == "" {
		t.Fatalf("MatchmakingFailed %v, match %v", f, pm["matchId"])
	}
}

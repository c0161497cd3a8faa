package api_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	awsv2 "github.com/aws/aws-sdk-go-v2/aws"
	glv2 "github.com/aws/aws-sdk-go-v2/service/gamelift"
	"github.com/aws/aws-sdk-go-v2/service/gamelift/types"

	"github.com/hoistgg/hoist/e2e/hoisttest"
)

// TestGameSessionQueueBounds: through aws-sdk-go-v2, a queue's
// TimeoutInSeconds is 10 to 600 (600 when absent), its NotificationTarget
// an SNS topic ARN, its destinations at most 100 and each named once; a
// placement's PlayerLatencies at most 1,000. Each refusal is
// InvalidRequestException naming the field, and nothing is stored.
func TestGameSessionQueueBounds(t *testing.T) {
	h := startHoist(t)
	ctx := hoisttest.Context(t, 2*time.Minute)
	v2 := newV2(h)
	fleetARN := func(i int) string {
		return fmt.Sprintf("arn:aws:gamelift:%s:%s:fleet/fleet-%08d-0000-0000-0000-000000000000", hoisttest.Region, hoisttest.Account, i)
	}
	cases := []struct {
		name string
		in   glv2.CreateGameSessionQueueInput
		says string
	}{
		{"timeout 9", glv2.CreateGameSessionQueueInput{TimeoutInSeconds: awsv2.Int32(9)}, "TimeoutInSeconds"},
		{"timeout 0", glv2.CreateGameSessionQueueInput{TimeoutInSeconds: awsv2.Int32(0)}, "TimeoutInSeconds"},
		{"timeout 601", glv2.CreateGameSessionQueueInput{TimeoutInSeconds: awsv2.Int32(601)}, "TimeoutInSeconds"},
		{"SQS target", glv2.CreateGameSessionQueueInput{NotificationTarget: awsv2.String("arn:aws:sqs:us-west-2:123456789012:q")}, "NotificationTarget"},
		{"target not an ARN", glv2.CreateGameSessionQueueInput{NotificationTarget: awsv2.String("my-topic")}, "NotificationTarget"},
		{"target without an account", glv2.CreateGameSessionQueueInput{NotificationTarget: awsv2.String("arn:aws:sns:us-west-2::t")}, "NotificationTarget"},
		{"destination twice", glv2.CreateGameSessionQueueInput{Destinations: destinations(fleetARN(1), fleetARN(2), fleetARN(1))}, "Destinations[2]"},
		{"101 destinations", glv2.CreateGameSessionQueueInput{Destinations: destinations(manyARNs(101, fleetARN)...)}, "Destinations"},
	}
	for _, tc := range cases {
		in := tc.in
		in.Name = awsv2.String("refused")
		_, err := v2.CreateGameSessionQueue(ctx, &in)
		e := wantV2[*types.InvalidRequestException](t, tc.name, err)
		if !strings.Contains(e.ErrorMessage(), tc.says) {
			t.Errorf("%s: %q does not say %q", tc.name, e.ErrorMessage(), tc.says)
		}
	}
	all, err := v2.DescribeGameSessionQueues(ctx, &glv2.DescribeGameSessionQueuesInput{})
	if err != nil || len(all.GameSessionQueues) != 0 {
		t.Fatalf("a refused queue was stored: %+v %v", all, err)
	}

	// The bounds themselves are accepted; no timeout means 600.
	q, err := v2.CreateGameSessionQueue(ctx, &glv2.CreateGameSessionQueueInput{Name: awsv2.String("q"),
		NotificationTarget: awsv2.String("arn:aws:sns:us-west-2:123456789012:placements.fifo")})
	if err != nil || awsv2.ToInt32(q.GameSessionQueue.TimeoutInSeconds) != 600 {
		t.Fatalf("CreateGameSessionQueue without a timeout: %+v, %v", q, err)
	}
	up, err := v2.UpdateGameSessionQueue(ctx, &glv2.UpdateGameSessionQueueInput{Name: awsv2.String("q"),
		TimeoutInSeconds: awsv2.Int32(10), NotificationTarget: awsv2.String("")})
	if err != nil || awsv2.ToInt32(up.GameSessionQueue.TimeoutInSeconds) != 10 || up.GameSessionQueue.NotificationTarget != nil {
		t.Fatalf("UpdateGameSessionQueue to 10 s, no target: %+v, %v", up, err)
	}
	for name, in := range map[string]glv2.UpdateGameSessionQueueInput{
		"TimeoutInSeconds":   {TimeoutInSeconds: awsv2.Int32(5)},
		"NotificationTarget": {NotificationTarget: awsv2.String("arn:aws:sns:us-west-2:123456789012:a/b")},
		"Destinations[1]":    {Destinations: destinations(fleetARN(3), fleetARN(3))},
	} {
		in.Name = awsv2.String("q")
		_, err := v2.UpdateGameSessionQueue(ctx, &in)
		if e := wantV2[*types.InvalidRequestException](t, "update "+name, err); !strings.Contains(e.ErrorMessage(), name) {
			t.Errorf("update %s: %q does not name it", name, e.ErrorMessage())
		}
	}

	// A placement's PlayerLatencies are bounded.
	lat := make([]types.PlayerLatency, 1001)
	for i := range lat {
		ms := float32(i % 100)
		lat[i] = types.PlayerLatency{PlayerId: awsv2.String(fmt.Sprintf("p%d", i/10)),
			RegionIdentifier: awsv2.String(fmt.Sprintf("region-%d", i%10)), LatencyInMilliseconds: &ms}
	}
	_, err = v2.StartGameSessionPlacement(ctx, &glv2.StartGameSessionPlacementInput{PlacementId: awsv2.String("too-many"),
		GameSessionQueueName: awsv2.String("q"), MaximumPlayerSessionCount: awsv2.Int32(2), PlayerLatencies: lat})
	if e := wantV2[*types.InvalidRequestException](t, "1,001 PlayerLatencies", err); !strings.Contains(e.ErrorMessage(), "PlayerLatencies") {
		t.Errorf("1,001 PlayerLatencies: %q does not name the field", e.ErrorMessage())
	}
	p, err := v2.StartGameSessionPlacement(ctx, &glv2.StartGameSessionPlacementInput{PlacementId: awsv2.String("enough"),
		GameSessionQueueName: awsv2.String("q"), MaximumPlayerSessionCount: awsv2.Int32(2), PlayerLatencies: lat[:1000]})
	if err != nil || len(p.GameSessionPlacement.PlayerLatencies) != 1000 {
		t.Fatalf("1,000 PlayerLatencies: %v", err)
	}
}

func destinations(arns ...string) []types.GameSessionQueueDestination {
	out := make([]types.GameSessionQueueDestination, 0, len(arns))
	for _, a := range arns {
		out = append(out, types.GameSessionQueueDestination{DestinationArn: awsv2.String(a)})
	}
	return out
}

func manyARNs(n int, arn func(int) string) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = arn(i)
	}
	return out
}

package clock_test

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	gl "github.com/aws/aws-sdk-go-v2/service/gamelift"
	"github.com/aws/aws-sdk-go-v2/service/gamelift/types"
)

// TestPlacementTimesOutOnAdvance: a placement on a queue with a 30 s
// timeout and nowhere to go is still PENDING at 29 s of manual time, and
// TIMED_OUT within a second of wall time of the advance past its
// deadline. The placement loop's interval is a minute here, so only the
// advance can have woken it in time. From the start to TIMED_OUT seen,
// less than a second of wall time passes.
func TestPlacementTimesOutOnAdvance(t *testing.T) {
	h, c := startManual(t, "--timings", "placement.interval=1m")
	ctx := t.Context()
	_, err := c.CreateGameSessionQueue(ctx, &gl.CreateGameSessionQueueInput{Name: aws.String("clock-queue"),
		TimeoutInSeconds: aws.Int32(30)})
	if err != nil {
		t.Fatalf("CreateGameSessionQueue: %v", err)
	}
	began := time.Now()
	_, err = c.StartGameSessionPlacement(ctx, &gl.StartGameSessionPlacementInput{PlacementId: aws.String("p-1"),
		GameSessionQueueName: aws.String("clock-queue"), MaximumPlayerSessionCount: aws.Int32(2)})
	if err != nil {
		t.Fatalf("StartGameSessionPlacement: %v", err)
	}
	status := func(ctx context.Context) (types.GameSessionPlacementState, error) {
		out, err := c.DescribeGameSessionPlacement(ctx, &gl.DescribeGameSessionPlacementInput{PlacementId: aws.String("p-1")})
		if err != nil {
			return "", err
		}
		return out.GameSessionPlacement.Status, nil
	}
	advance(t, h, "29s")
	if st, err := status(ctx); err != nil || st != types.GameSessionPlacementStatePending {
		t.Fatalf("29 s after the start: %q (%v), want PENDING", st, err)
	}
	start := advance(t, h, "1s")
	within(t, start, "the placement TIMED_OUT", func(ctx context.Context) (bool, error) {
		st, err := status(ctx)
		return err == nil && st == types.GameSessionPlacementStateTimedOut, err
	})
	passedWithin(t, began, "the 30 s placement timeout")
}

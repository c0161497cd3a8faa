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
)

// clockOf is a replica's answer to DescribeClock.
type clockOf struct {
	Clock string
	Time  time.Time
}

// TestManualClockShared: three replicas with --clock manual share one
// clock: they read the same time; an advance through A is followed by B
// and C within a second of wall time, and so are the placements of four
// queues (30 s timeouts), whichever replica holds each queue's shard: all
// TIMED_OUT within a second; a restarted replica keeps the time. The
// placement interval is 100 ms so that the replicas share out the new
// queues' shards (which takes two intervals) well within that second.
func TestManualClockShared(t *testing.T) {
	c := cluster.Start(t, cluster.Options{Args: []string{"--clock", "manual", "--timings", "placement.interval=100ms"}})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	clocks := func() []clockOf {
		var out []clockOf
		for _, r := range c.Replicas {
			var ck clockOf
			if err := r.Admin(ctx, "DescribeClock", struct{}{}, &ck); err != nil {
				t.Fatal(err)
			}
			out = append(out, ck)
		}
		return out
	}
	start := clocks()
	for i, ck := range start {
		if ck.Clock != "manual" || !ck.Time.Equal(start[0].Time) {
			t.Fatalf("replica %s: %+v; want manual at %v, as A", c.Replicas[i].Name, ck, start[0].Time)
		}
	}
	client := c.Client()
	const queues = 4
	for i := range queues {
		q := fmt.Sprintf("clock-q%d", i)
		if _, err := client.CreateGameSessionQueue(ctx, &gl.CreateGameSessionQueueInput{Name: aws.String(q),
			TimeoutInSeconds: aws.Int32(30)}); err != nil {
			t.Fatalf("CreateGameSessionQueue %s: %v", q, err)
		}
		if _, err := client.StartGameSessionPlacement(ctx, &gl.StartGameSessionPlacementInput{PlacementId: aws.String(q + "-p"),
			GameSessionQueueName: aws.String(q), MaximumPlayerSessionCount: aws.Int32(2)}); err != nil {
			t.Fatalf("StartGameSessionPlacement %s: %v", q, err)
		}
	}
	advanced := time.Now()
	var out clockOf
	if err := c.Replicas[0].Admin(ctx, "AdvanceClock", map[string]string{"By": "30s"}, &out); err != nil {
		t.Fatal(err)
	}
	want := start[0].Time.Add(30 * time.Second)
	if !out.Time.Equal(want) {
		t.Fatalf("AdvanceClock through A: %v, want %v", out.Time, want)
	}
	for {
		followed, timedOut := 0, 0
		for _, ck := range clocks() {
			if ck.Time.Equal(want) {
				followed++
			}
		}
		for i := range queues {
			p, err := client.DescribeGameSessionPlacement(ctx, &gl.DescribeGameSessionPlacementInput{
				PlacementId: aws.String(fmt.Sprintf("clock-q%d-p", i))})
			if err == nil && p.GameSessionPlacement.Status == types.GameSessionPlacementStateTimedOut {
				timedOut++
			}
		}
		if followed == len(c.Replicas) && timedOut == queues {
			t.Logf("every replica's clock and every placement followed the advance in %v", time.Since(advanced).Round(time.Millisecond))
			break
		}
		if time.Since(advanced) > time.Second {
			t.Fatalf("a second after the advance: %d of %d replicas at %v, %d of %d placements TIMED_OUT",
				followed, len(c.Replicas), want, timedOut, queues)
		}
		time.Sleep(20 * time.Millisecond) // polling the replicas for a state, not waiting for time to pass
	}
	c.Replicas[1].Stop()
	c.Replicas[1].Restart()
	var b clockOf
	if err := c.Replicas[1].Admin(ctx, "DescribeClock", struct{}{}, &b); err != nil || !b.Time.Equal(want) {
		t.Fatalf("B after a restart: %+v (%v), want %v", b, err, want)
	}
}

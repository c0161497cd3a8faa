//go:build linux

package hosting

import (
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	gl "github.com/aws/aws-sdk-go-v2/service/gamelift"
	"github.com/aws/aws-sdk-go-v2/service/gamelift/types"

	"github.com/hoistgg/hoist/e2e/hoisttest"
)

// advanceClock moves the clock of e's Hoist (--clock manual) with
// `hoist admin clock advance`.
func (e *env) advanceClock(t *testing.T, d string) {
	t.Helper()
	out, err := exec.CommandContext(e.ctx, hoisttest.Binary(t), "admin", "clock", "advance", d, "--endpoint", e.h.URL,
		"--region", hoisttest.Region, "--access-key-id", hoisttest.AccessKeyID,
		"--secret-access-key", hoisttest.SecretAccessKey).CombinedOutput()
	if err != nil || !strings.HasPrefix(string(out), "manual ") {
		t.Fatalf("hoist admin clock advance %s: %v\n%s", d, err, out)
	}
}

// TestManualClockKeepsProcesses: with --clock manual, a managed fleet of
// real game servers becomes ACTIVE and hosts a game session while the
// clock stands still; an hour of Hoist's time later a reservation has
// timed out, but the server process (whose SDK reports its health on real
// time, every 3 s here) and its game session are still ACTIVE: process
// health follows real time (docs/clock.md).
func TestManualClockKeepsProcesses(t *testing.T) {
	e := startHoistWith(t, []string{"--clock", "manual"})
	e.dumpOnFailure(t)
	build := e.uploadGameServer(t, "clock")
	fleet := e.newFleet(t, fleetSpec{name: "clock", build: build})
	e.waitIdleProcesses(t, fleet, 1)
	gs := e.createGameSession(t, fleet, 4)
	reserve := func(player string) string {
		out, err := e.gl.CreatePlayerSession(e.ctx, &gl.CreatePlayerSessionInput{GameSessionId: gs.GameSessionId,
			PlayerId: aws.String(player)})
		if err != nil {
			t.Fatalf("CreatePlayerSession %s: %v", player, err)
		}
		return aws.ToString(out.PlayerSession.PlayerSessionId)
	}
	// Two advances: once the second reservation has timed out, the
	// sessions sweep has made a whole pass (processes included) at the
	// first hour.
	for _, player := range []string{"p1", "p2"} {
		ps := reserve(player)
		e.advanceClock(t, "1h")
		e.waitPlayerSession(t, ps, types.PlayerSessionStatusTimedout)
	}
	if got := e.gameSession(t, aws.ToString(gs.GameSessionId)); got.Status != types.GameSessionStatusActive {
		t.Fatalf("two hours of Hoist's time later the game session is %s, want ACTIVE", got.Status)
	}
	if u := e.utilization(t, fleet); aws.ToInt32(u.ActiveServerProcessCount) != 1 {
		t.Fatalf("two hours of Hoist's time later: %d active server processes, want 1", aws.ToInt32(u.ActiveServerProcessCount))
	}
}

// TestManualClockScales: scaling policies are evaluated once per minute
// of Hoist's time. A fleet scaled to no instance, with a rule-based policy
// that adds one when no game session can be placed, gets it once the
// manual clock has moved a minute, seconds of real time after the policy
// was put (a real clock would have waited a real minute).
func TestManualClockScales(t *testing.T) {
	e := startHoistWith(t, []string{"--clock", "manual"})
	e.dumpOnFailure(t)
	build := e.uploadGameServer(t, "clock-scaling")
	fleet := e.newFleet(t, fleetSpec{name: "clock-scaling", build: build})
	if _, err := e.gl.UpdateFleetCapacity(e.ctx, &gl.UpdateFleetCapacityInput{FleetId: aws.String(fleet),
		DesiredInstances: aws.Int32(0), MinSize: aws.Int32(0), MaxSize: aws.Int32(1)}); err != nil {
		t.Fatalf("UpdateFleetCapacity: %v", err)
	}
	e.waitInstances(t, fleet, 0)
	put := time.Now()
	if _, err := e.gl.PutScalingPolicy(e.ctx, &gl.PutScalingPolicyInput{FleetId: aws.String(fleet), Name: aws.String("add-when-full"),
		PolicyType: types.PolicyTypeRuleBased, MetricName: types.MetricNameAvailableGameSessions,
		ComparisonOperator: types.ComparisonOperatorTypeLessThanOrEqualToThreshold, Threshold: aws.Float64(0),
		EvaluationPeriods: aws.Int32(1), ScalingAdjustmentType: types.ScalingAdjustmentTypeChangeInCapacity,
		ScalingAdjustment: aws.Int32(1)}); err != nil {
		t.Fatalf("PutScalingPolicy: %v", err)
	}
	desired := func() int32 {
		out, err := e.gl.DescribeFleetCapacity(e.ctx, &gl.DescribeFleetCapacityInput{FleetIds: []string{fleet}})
		if err != nil || len(out.FleetCapacity) != 1 {
			t.Fatalf("DescribeFleetCapacity: %+v, %v", out, err)
		}
		return aws.ToInt32(out.FleetCapacity[0].InstanceCounts.DESIRED)
	}
	if n := desired(); n != 0 {
		t.Fatalf("before the clock moved, desired %d instances, want 0", n)
	}
	e.advanceClock(t, "1m")
	eventually(t, 10*time.Second, "the policy's instance desired", func() (bool, string) {
		n := desired()
		return n == 1, fmt.Sprint("desired ", n)
	})
	t.Logf("the policy scaled out %v of real time after it was put", time.Since(put).Round(time.Millisecond))
}

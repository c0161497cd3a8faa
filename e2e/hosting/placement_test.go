//go:build linux

package hosting

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	gl "github.com/aws/aws-sdk-go-v2/service/gamelift"
	"github.com/aws/aws-sdk-go-v2/service/gamelift/types"

	"github.com/hoistgg/hoist/e2e/hoisttest"
)

// TestPlacement runs game session queues and placement through
// aws-sdk-go-v2 against real game server processes: fleet A (home Region,
// reached through an alias) and fleet B (home Region and the remote
// location), one process per location.
func TestPlacement(t *testing.T) {
	e := startHoist(t, "placement.interval=100ms")
	e.dumpOnFailure(t)
	buildID := e.uploadGameServer(t, "placement")
	a := aws.ToString(e.createFleet(t, fleetSpec{name: "pl-a", build: buildID, params: "-accept-players"}).FleetAttributes.FleetId)
	b := aws.ToString(e.createFleet(t, fleetSpec{name: "pl-b", build: buildID, params: "-accept-players",
		locations: []string{hoisttest.Region, remote}}).FleetAttributes.FleetId)
	e.waitFleet(t, a, types.FleetStatusActive)
	e.waitFleet(t, b, types.FleetStatusActive)
	e.waitLocation(t, b, remote, types.FleetStatusActive)
	e.waitIdleProcesses(t, a, 1)
	e.waitIdleProcesses(t, b, 1)
	e.waitLocationProcesses(t, b, remote, 1)

	alias, err := e.gl.CreateAlias(e.ctx, &gl.CreateAliasInput{Name: aws.String("pl-a"),
		RoutingStrategy: &types.RoutingStrategy{Type: types.RoutingStrategyTypeSimple, FleetId: aws.String(a)}})
	if err != nil {
		t.Fatalf("CreateAlias: %v", err)
	}
	terminal, err := e.gl.CreateAlias(e.ctx, &gl.CreateAliasInput{Name: aws.String("pl-closed"),
		RoutingStrategy: &types.RoutingStrategy{Type: types.RoutingStrategyTypeTerminal, Message: aws.String("closed")}})
	if err != nil {
		t.Fatalf("CreateAlias: %v", err)
	}
	fleetB := fleetARNOf(t, e, b)
	q := e.createQueue(t, &gl.CreateGameSessionQueueInput{Name: aws.String("pl-latency"), TimeoutInSeconds: aws.Int32(60),
		Destinations: dests(aws.ToString(alias.Alias.AliasArn), fleetB),
		PlayerLatencyPolicies: []types.PlayerLatencyPolicy{
			{MaximumIndividualPlayerLatencyMilliseconds: aws.Int32(50), PolicyDurationSeconds: aws.Int32(2)},
			{MaximumIndividualPlayerLatencyMilliseconds: aws.Int32(200)}},
		Tags: []types.Tag{{Key: aws.String("team"), Value: aws.String("matchmaking")}}})
	if aws.ToInt32(q.TimeoutInSeconds) != 60 || len(q.Destinations) != 2 {
		t.Errorf("CreateGameSessionQueue: %+v", q)
	}
	tags, err := e.gl.ListTagsForResource(e.ctx, &gl.ListTagsForResourceInput{ResourceARN: q.GameSessionQueueArn})
	if err != nil || len(tags.Tags) != 1 {
		t.Errorf("ListTagsForResource on the queue: %+v, %v", tags, err)
	}

	// Latency data chooses fleet B's remote location over the first
	// destination; the placed player session is accepted by the game.
	p := e.place(t, "pl-latency", "lat-east", latencies(120, 15), types.DesiredPlayerSession{PlayerId: aws.String("alice")})
	got := e.waitPlacement(t, p, types.GameSessionPlacementStateFulfilled)
	if aws.ToString(got.GameSessionRegion) != remote || !strings.Contains(aws.ToString(got.GameSessionArn), "/"+b+"/") ||
		aws.ToInt32(got.Port) == 0 || aws.ToString(got.IpAddress) == "" || aws.ToString(got.DnsName) == "" || len(got.PlacedPlayerSessions) != 1 {
		t.Fatalf("latency placement: %+v", got)
	}
	e.waitGameSession(t, aws.ToString(got.GameSessionId), types.GameSessionStatusActive)
	pl := dialPlayer(t, aws.ToString(got.IpAddress), aws.ToInt32(got.Port))
	pl.must("ACCEPT " + aws.ToString(got.PlacedPlayerSessions[0].PlayerSessionId))
	e.waitPlayerSession(t, aws.ToString(got.PlacedPlayerSessions[0].PlayerSessionId), types.PlayerSessionStatusActive)

	// 100 ms breaks the 50 ms policy of the first 2 s; then the 200 ms
	// policy lets it go to the Region, on the first destination (alias A).
	p = e.place(t, "pl-latency", "relax", latencies(100, 300))
	if st := e.placement(t, p).Status; st != types.GameSessionPlacementStatePending {
		t.Fatalf("relax right after start: %s", st)
	}
	got = e.waitPlacement(t, p, types.GameSessionPlacementStateFulfilled)
	if d := got.EndTime.Sub(*got.StartTime); d < 2*time.Second || !strings.Contains(aws.ToString(got.GameSessionArn), "/"+a+"/") {
		t.Fatalf("relaxed placement after %s: %+v", d, got)
	}
	relaxed := e.waitGameSession(t, aws.ToString(got.GameSessionId), types.GameSessionStatusActive)

	// Fleet A is busy now: a short queue times out, a stopped placement is
	// CANCELLED, deleting the queue fails a pending one.
	e.createQueue(t, &gl.CreateGameSessionQueueInput{Name: aws.String("pl-short"), TimeoutInSeconds: aws.Int32(10),
		Destinations: dests(fleetARNOf(t, e, a))})
	timedOut := e.place(t, "pl-short", "short", nil)
	stopped := e.place(t, "pl-short", "stopped", nil)
	sout, err := e.gl.StopGameSessionPlacement(e.ctx, &gl.StopGameSessionPlacementInput{PlacementId: aws.String(stopped)})
	if err != nil || sout.GameSessionPlacement.Status != types.GameSessionPlacementStateCancelled {
		t.Fatalf("StopGameSessionPlacement: %+v, %v", sout, err)
	}
	e.waitPlacement(t, timedOut, types.GameSessionPlacementStateTimedOut)
	_, err = e.gl.StopGameSessionPlacement(e.ctx, &gl.StopGameSessionPlacementInput{PlacementId: aws.String(timedOut)})
	wantErr[*types.InvalidRequestException](t, "StopGameSessionPlacement of a TIMED_OUT placement", err)

	e.createQueue(t, &gl.CreateGameSessionQueueInput{Name: aws.String("pl-doomed"), Destinations: dests(fleetARNOf(t, e, a))})
	doomed := e.place(t, "pl-doomed", "doomed", nil)
	if _, err := e.gl.DeleteGameSessionQueue(e.ctx, &gl.DeleteGameSessionQueueInput{Name: aws.String("pl-doomed")}); err != nil {
		t.Fatalf("DeleteGameSessionQueue: %v", err)
	}
	if st := e.placement(t, doomed).Status; st != types.GameSessionPlacementStateFailed {
		t.Fatalf("placement of a deleted queue: %s", st)
	}

	// A pending placement waits for capacity: when the game on fleet A
	// ends, its replacement process takes the placement ...
	e.createQueue(t, &gl.CreateGameSessionQueueInput{Name: aws.String("pl-wait"), Destinations: dests(aws.ToString(alias.Alias.AliasArn))})
	waiting := e.place(t, "pl-wait", "waiting", nil)
	if st := e.placement(t, waiting).Status; st != types.GameSessionPlacementStatePending {
		t.Fatalf("waiting placement: %s", st)
	}
	dialPlayer(t, aws.ToString(relaxed.IpAddress), aws.ToInt32(relaxed.Port)).must("END")
	got = e.waitPlacementLong(t, waiting, types.GameSessionPlacementStateFulfilled)
	if !strings.Contains(aws.ToString(got.GameSessionArn), "/"+a+"/") {
		t.Fatalf("waiting placement: %+v", got)
	}

	// ... and when the fleet scales out.
	scaled := e.place(t, "pl-wait", "scaled", nil)
	if st := e.placement(t, scaled).Status; st != types.GameSessionPlacementStatePending {
		t.Fatalf("placement before scale-out: %s", st)
	}
	if _, err := e.gl.UpdateFleetCapacity(e.ctx, &gl.UpdateFleetCapacityInput{FleetId: aws.String(a),
		DesiredInstances: aws.Int32(2), MinSize: aws.Int32(0), MaxSize: aws.Int32(2)}); err != nil {
		t.Fatalf("UpdateFleetCapacity: %v", err)
	}
	got = e.waitPlacementLong(t, scaled, types.GameSessionPlacementStateFulfilled)
	if !strings.Contains(aws.ToString(got.GameSessionArn), "/"+a+"/") {
		t.Fatalf("placement after scale-out: %+v", got)
	}

	// A TERMINAL alias is no destination; the next one is used.
	e.createQueue(t, &gl.CreateGameSessionQueueInput{Name: aws.String("pl-terminal"),
		Destinations: dests(aws.ToString(terminal.Alias.AliasArn), fleetB)})
	got = e.waitPlacement(t, e.place(t, "pl-terminal", "past-terminal", nil), types.GameSessionPlacementStateFulfilled)
	if !strings.Contains(aws.ToString(got.GameSessionArn), "/"+b+"/") || aws.ToString(got.GameSessionRegion) != hoisttest.Region {
		t.Fatalf("past a terminal alias: %+v", got)
	}

	// The queues, by name and by ARN, a page at a time.
	var names []string
	in := &gl.DescribeGameSessionQueuesInput{Limit: aws.Int32(2)}
	for {
		out, err := e.gl.DescribeGameSessionQueues(e.ctx, in)
		if err != nil {
			t.Fatalf("DescribeGameSessionQueues: %v", err)
		}
		for _, q := range out.GameSessionQueues {
			names = append(names, aws.ToString(q.Name))
		}
		if in.NextToken = out.NextToken; in.NextToken == nil {
			break
		}
	}
	if fmt.Sprint(names) != "[pl-latency pl-short pl-terminal pl-wait]" {
		t.Errorf("queues: %v", names)
	}
	up, err := e.gl.UpdateGameSessionQueue(e.ctx, &gl.UpdateGameSessionQueueInput{Name: q.GameSessionQueueArn, TimeoutInSeconds: aws.Int32(30)})
	if err != nil || aws.ToInt32(up.GameSessionQueue.TimeoutInSeconds) != 30 || len(up.GameSessionQueue.Destinations) != 2 {
		t.Errorf("UpdateGameSessionQueue by ARN: %+v, %v", up, err)
	}
}

func dests(arns ...string) []types.GameSessionQueueDestination {
	var out []types.GameSessionQueueDestination
	for _, a := range arns {
		out = append(out, types.GameSessionQueueDestination{DestinationArn: aws.String(a)})
	}
	return out
}

// latencies is one player's latency to the Region and the remote location.
func latencies(region, rem float32) []types.PlayerLatency {
	return []types.PlayerLatency{
		{PlayerId: aws.String("alice"), RegionIdentifier: aws.String(hoisttest.Region), LatencyInMilliseconds: &region},
		{PlayerId: aws.String("alice"), RegionIdentifier: aws.String(remote), LatencyInMilliseconds: &rem},
	}
}

func fleetARNOf(t *testing.T, e *env, id string) string {
	t.Helper()
	out, err := e.gl.DescribeFleetAttributes(e.ctx, &gl.DescribeFleetAttributesInput{FleetIds: []string{id}})
	if err != nil || len(out.FleetAttributes) != 1 {
		t.Fatalf("DescribeFleetAttributes %s: %v", id, err)
	}
	return aws.ToString(out.FleetAttributes[0].FleetArn)
}

func (e *env) createQueue(t *testing.T, in *gl.CreateGameSessionQueueInput) *types.GameSessionQueue {
	t.Helper()
	out, err := e.gl.CreateGameSessionQueue(e.ctx, in)
	if err != nil {
		t.Fatalf("CreateGameSessionQueue %s: %v", aws.ToString(in.Name), err)
	}
	return out.GameSessionQueue
}

// place starts a placement and returns its ID.
func (e *env) place(t *testing.T, queue, id string, lats []types.PlayerLatency, players ...types.DesiredPlayerSession) string {
	t.Helper()
	out, err := e.gl.StartGameSessionPlacement(e.ctx, &gl.StartGameSessionPlacementInput{GameSessionQueueName: aws.String(queue),
		PlacementId: aws.String(id), MaximumPlayerSessionCount: aws.Int32(4), PlayerLatencies: lats, DesiredPlayerSessions: players,
		GameSessionName: aws.String(id), GameProperties: []types.GameProperty{{Key: aws.String("mode"), Value: aws.String("ctf")}}})
	if err != nil {
		t.Fatalf("StartGameSessionPlacement %s: %v", id, err)
	}
	if out.GameSessionPlacement.Status != types.GameSessionPlacementStatePending {
		t.Fatalf("StartGameSessionPlacement %s: %s", id, out.GameSessionPlacement.Status)
	}
	return id
}

func (e *env) placement(t *testing.T, id string) types.GameSessionPlacement {
	t.Helper()
	out, err := e.gl.DescribeGameSessionPlacement(e.ctx, &gl.DescribeGameSessionPlacementInput{PlacementId: aws.String(id)})
	if err != nil {
		t.Fatalf("DescribeGameSessionPlacement %s: %v", id, err)
	}
	return *out.GameSessionPlacement
}

func (e *env) waitPlacement(t *testing.T, id string, want types.GameSessionPlacementState) types.GameSessionPlacement {
	t.Helper()
	return e.waitPlacementWithin(t, id, want, waitShort)
}

func (e *env) waitPlacementLong(t *testing.T, id string, want types.GameSessionPlacementState) types.GameSessionPlacement {
	t.Helper()
	return e.waitPlacementWithin(t, id, want, waitLong)
}

func (e *env) waitPlacementWithin(t *testing.T, id string, want types.GameSessionPlacementState, d time.Duration) types.GameSessionPlacement {
	t.Helper()
	var p types.GameSessionPlacement
	eventually(t, d, "placement "+id+" "+string(want), func() (bool, string) {
		p = e.placement(t, id)
		if p.Status != want && p.Status != types.GameSessionPlacementStatePending {
			t.Fatalf("placement %s is %s, waiting for %s", id, p.Status, want)
		}
		return p.Status == want, string(p.Status)
	})
	return p
}

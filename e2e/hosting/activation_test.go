//go:build linux

package hosting

import (
	"fmt"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	gl "github.com/aws/aws-sdk-go-v2/service/gamelift"
	"github.com/aws/aws-sdk-go-v2/service/gamelift/types"

	"github.com/hoistgg/hoist/e2e/hoisttest"
)

// TestPlacementActivation runs placements onto real game server processes
// that fail to start their game sessions, through aws-sdk-go-v2: a
// placement is FULFILLED only once its game session is ACTIVE, and one
// whose game session does not activate is placed again on another
// process. Fleet act-dud's game servers never activate (activation timeout
// 1 s), act-crash's crash on CreateGameSession, act-slow's never activate
// (60 s), act-good's are ordinary.
func TestPlacementActivation(t *testing.T) {
	e := startHoist(t, "placement.interval=100ms")
	e.dumpOnFailure(t)
	build := e.uploadGameServer(t, "activation")
	fleets := map[string]string{}
	for _, s := range []fleetSpec{
		{name: "act-dud", build: build, params: "-no-activate", activationTimeout: 1},
		{name: "act-crash", build: build, params: "-crash-on-start"},
		{name: "act-slow", build: build, params: "-no-activate", activationTimeout: 60},
		{name: "act-good", build: build, params: "-accept-players", concurrent: 3},
	} {
		fleets[s.name] = aws.ToString(e.createFleet(t, s).FleetAttributes.FleetId)
	}
	for name, id := range fleets {
		e.waitFleet(t, id, types.FleetStatusActive)
		n := 1
		if name == "act-good" {
			n = 3
		}
		e.waitIdleProcesses(t, id, n)
	}
	queue := func(name string, timeout int32, fleetNames ...string) {
		var arns []string
		for _, n := range fleetNames {
			arns = append(arns, fleetARNOf(t, e, fleets[n]))
		}
		e.createQueue(t, &gl.CreateGameSessionQueueInput{Name: aws.String(name), TimeoutInSeconds: aws.Int32(timeout),
			CustomEventData: aws.String("ev-e2e"), Destinations: dests(arns...)})
	}

	t.Run("ActivationTimeout", func(t *testing.T) { activationRetried(t, e, fleets, queue) })
	t.Run("Crash", func(t *testing.T) { crashRetried(t, e, fleets, queue) })
	t.Run("TimedOut", func(t *testing.T) { noneActivates(t, e, fleets, queue) })
	t.Run("Terminated", func(t *testing.T) { attemptTerminated(t, e, fleets, queue) })
	t.Run("Match", func(t *testing.T) { matchWaitsForActivation(t, e, fleets) })
}

// activationRetried: the first destination's game session does not
// activate in time; the placement stays PENDING showing it (no player
// sessions, no event), then is placed on act-good and FULFILLED with its
// game session ACTIVE and the player session the game server accepts.
func activationRetried(t *testing.T, e *env, fleets map[string]string, queue func(string, int32, ...string)) {
	stream := openEventStream(t, e, "act-retry")
	queue("act-retry", 60, "act-dud", "act-good")
	e.place(t, "act-retry", "retry", nil, types.DesiredPlayerSession{PlayerId: aws.String("alice")})
	// The first attempt's game session ARN ends in the placement ID.
	firstArn := "arn:aws:gamelift:" + hoisttest.Region + "::gamesession/" + fleets["act-dud"] + "/retry"
	var first types.GameSessionPlacement
	eventually(t, waitShort, "the attempt on act-dud", func() (bool, string) {
		first = e.placement(t, "retry")
		return first.Status != types.GameSessionPlacementStatePending || aws.ToString(first.GameSessionArn) == firstArn,
			fmt.Sprintf("%s %s", first.Status, aws.ToString(first.GameSessionArn))
	})
	if first.Status == types.GameSessionPlacementStatePending && (len(first.PlacedPlayerSessions) != 0 || aws.ToInt32(first.Port) == 0) {
		t.Errorf("a PENDING placement's attempt: %+v", first)
	}
	got := e.waitPlacement(t, "retry", types.GameSessionPlacementStateFulfilled)
	if !strings.Contains(aws.ToString(got.GameSessionArn), "/"+fleets["act-good"]+"/") || len(got.PlacedPlayerSessions) != 1 {
		t.Fatalf("fulfilled placement: %+v", got)
	}
	if gs := e.gameSession(t, aws.ToString(got.GameSessionId)); gs.Status != types.GameSessionStatusActive {
		t.Fatalf("the game session of a FULFILLED placement is %s", gs.Status)
	}
	e.waitGameSession(t, firstArn, types.GameSessionStatusTerminated)
	psID := aws.ToString(got.PlacedPlayerSessions[0].PlayerSessionId)
	dialPlayer(t, aws.ToString(got.IpAddress), aws.ToInt32(got.Port)).must("ACCEPT " + psID)
	e.waitPlayerSession(t, psID, types.PlayerSessionStatusActive)
	d := stream.next(t).check(t, queueARNOf(t, e, "act-retry"), "PlacementFulfilled", "retry")
	if d.GameSessionArn != aws.ToString(got.GameSessionArn) {
		t.Errorf("PlacementFulfilled names %s, the placement %s", d.GameSessionArn, aws.ToString(got.GameSessionArn))
	}
}

// crashRetried: the game server crashes on CreateGameSession; the game
// session ends ERROR and the placement is fulfilled on act-good.
func crashRetried(t *testing.T, e *env, fleets map[string]string, queue func(string, int32, ...string)) {
	queue("act-crash", 60, "act-crash", "act-good")
	e.place(t, "act-crash", "crash", nil)
	got := e.waitPlacement(t, "crash", types.GameSessionPlacementStateFulfilled)
	if !strings.Contains(aws.ToString(got.GameSessionArn), "/"+fleets["act-good"]+"/") {
		t.Fatalf("fulfilled placement: %+v", got)
	}
	crashed := "arn:aws:gamelift:" + hoisttest.Region + "::gamesession/" + fleets["act-crash"] + "/crash"
	e.waitGameSession(t, crashed, types.GameSessionStatusError)
}

// noneActivates: the queue's only destination never activates; the
// placement tries again and again, and ends TIMED_OUT after its 10 s, with
// PlacementTimedOut, having created several game sessions, none ACTIVE.
func noneActivates(t *testing.T, e *env, fleets map[string]string, queue func(string, int32, ...string)) {
	stream := openEventStream(t, e, "act-none")
	queue("act-none", 10, "act-dud")
	e.waitIdleProcesses(t, fleets["act-dud"], 1)
	before := len(e.gameSessions(t, fleets["act-dud"]))
	e.place(t, "act-none", "none", nil)
	got := e.waitPlacement(t, "none", types.GameSessionPlacementStateTimedOut)
	if got.GameSessionArn != nil || got.EndTime == nil || got.EndTime.Sub(*got.StartTime).Seconds() < 10 {
		t.Fatalf("timed-out placement: %+v", got)
	}
	after := e.gameSessions(t, fleets["act-dud"])
	if len(after)-before < 2 {
		t.Errorf("%d game sessions tried, want at least 2", len(after)-before)
	}
	for _, gs := range after {
		if gs.Status == types.GameSessionStatusActive {
			t.Errorf("game session %s is ACTIVE", aws.ToString(gs.GameSessionId))
		}
	}
	stream.next(t).check(t, queueARNOf(t, e, "act-none"), "PlacementTimedOut", "none")
}

// attemptTerminated: TerminateGameSession on the game session of a
// placement's attempt fails the placement, with PlacementFailed; it is not
// placed on act-good.
func attemptTerminated(t *testing.T, e *env, fleets map[string]string, queue func(string, int32, ...string)) {
	stream := openEventStream(t, e, "act-term")
	queue("act-term", 60, "act-slow", "act-good")
	e.place(t, "act-term", "term", nil)
	var p types.GameSessionPlacement
	eventually(t, waitShort, "the attempt on act-slow", func() (bool, string) {
		p = e.placement(t, "term")
		return strings.Contains(aws.ToString(p.GameSessionArn), "/"+fleets["act-slow"]+"/"), fmt.Sprintf("%+v", p)
	})
	if _, err := e.gl.TerminateGameSession(e.ctx, &gl.TerminateGameSessionInput{GameSessionId: p.GameSessionArn,
		TerminationMode: types.TerminationModeForceTerminate}); err != nil {
		t.Fatalf("TerminateGameSession: %v", err)
	}
	got := e.waitPlacement(t, "term", types.GameSessionPlacementStateFailed)
	if got.GameSessionArn != nil {
		t.Errorf("failed placement: %+v", got)
	}
	stream.next(t).check(t, queueARNOf(t, e, "act-term"), "PlacementFailed", "term")
}

// matchWaitsForActivation: a WITH_QUEUE match placed on act-dud first:
// its tickets stay PLACING while that game session activates, and are
// COMPLETED with the act-good game session, ACTIVE, and its player
// sessions.
func matchWaitsForActivation(t *testing.T, e *env, fleets map[string]string) {
	if _, err := e.gl.CreateMatchmakingRuleSet(e.ctx, &gl.CreateMatchmakingRuleSetInput{Name: aws.String("duo"),
		RuleSetBody: aws.String(mmBody)}); err != nil {
		t.Fatalf("CreateMatchmakingRuleSet: %v", err)
	}
	e.mmConfig(t, "act-mm", queueARNOf(t, e, "act-retry"), types.BackfillModeManual)
	e.waitIdleProcesses(t, fleets["act-dud"], 1)
	dud := len(e.gameSessions(t, fleets["act-dud"]))
	e.startTicket(t, "act-mm", "t-carol", "carol")
	e.startTicket(t, "act-mm", "t-dave", "dave")
	eventually(t, waitShort, "the match's attempt on act-dud", func() (bool, string) {
		tk := e.ticket(t, "t-carol")
		switch tk.Status {
		case types.MatchmakingConfigurationStatusQueued, types.MatchmakingConfigurationStatusSearching, types.MatchmakingConfigurationStatusPlacing:
		default:
			t.Fatalf("ticket while its match is placed on act-dud: %s", tk.Status)
		}
		n := len(e.gameSessions(t, fleets["act-dud"]))
		return n > dud, fmt.Sprintf("ticket %s, %d game sessions on act-dud", tk.Status, n)
	})
	if tk := e.ticket(t, "t-carol"); tk.Status == types.MatchmakingConfigurationStatusPlacing && tk.GameSessionConnectionInfo != nil {
		t.Fatalf("ticket while its match's game session activates: %+v", tk)
	}
	tk := e.waitTicket(t, "t-carol", types.MatchmakingConfigurationStatusCompleted)
	gsArn := aws.ToString(tk.GameSessionConnectionInfo.GameSessionArn)
	if !strings.Contains(gsArn, "/"+fleets["act-good"]+"/") {
		t.Fatalf("completed ticket's game session: %s", gsArn)
	}
	gs := e.gameSession(t, gsArn)
	if gs.Status != types.GameSessionStatusActive {
		t.Fatalf("the match's game session is %s when its tickets complete", gs.Status)
	}
	checkConnection(t, tk, gs, "carol")
}

// gameSessions lists a fleet's game sessions (every status).
func (e *env) gameSessions(t *testing.T, fleetID string) []types.GameSession {
	t.Helper()
	var out []types.GameSession
	p := gl.NewDescribeGameSessionsPaginator(e.gl, &gl.DescribeGameSessionsInput{FleetId: aws.String(fleetID)})
	for p.HasMorePages() {
		page, err := p.NextPage(e.ctx)
		if err != nil {
			t.Fatalf("DescribeGameSessions %s: %v", fleetID, err)
		}
		out = append(out, page.GameSessions...)
	}
	return out
}

// queueARNOf returns a queue's ARN.
func queueARNOf(t *testing.T, e *env, name string) string {
	t.Helper()
	out, err := e.gl.DescribeGameSessionQueues(e.ctx, &gl.DescribeGameSessionQueuesInput{Names: []string{name}})
	if err != nil || len(out.GameSessionQueues) != 1 {
		t.Fatalf("DescribeGameSessionQueues %s: %+v, %v", name, out, err)
	}
	return aws.ToString(out.GameSessionQueues[0].GameSessionQueueArn)
}

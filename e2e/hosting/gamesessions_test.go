//lint:file-ignore SA1019 aws-sdk-go v1 is one of the real clients Hoist is tested against

//go:build linux

package hosting

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	gl "github.com/aws/aws-sdk-go-v2/service/gamelift"
	"github.com/aws/aws-sdk-go-v2/service/gamelift/types"
	awsv1 "github.com/aws/aws-sdk-go/aws"
	glv1 "github.com/aws/aws-sdk-go/service/gamelift"

	"github.com/hoistgg/hoist/e2e/hoisttest"
)

// testGameSessionRules checks CreateGameSession as the seed describes it
// (idempotency, the deprecated GameSessionId, the resource creation limit
// policy, capacity), the other game session operations, and player session
// rules: DENY_ALL and the game server opening its session again.
func testGameSessionRules(t *testing.T, e *env) {
	buildID := e.uploadGameServer(t, "rules")
	fleetID := e.newFleet(t, fleetSpec{name: "rules", build: buildID, params: "-accept-players", concurrent: 2,
		limitPolicy: &types.ResourceCreationLimitPolicy{NewGameSessionsPerCreator: aws.Int32(2), PolicyPeriodInMinutes: aws.Int32(5)}})
	create := func(in gl.CreateGameSessionInput) (*gl.CreateGameSessionOutput, error) {
		in.FleetId = aws.String(fleetID)
		return e.gl.CreateGameSession(e.ctx, &in)
	}

	// With a resource creation limit policy, CreatorId is required.
	_, err := create(gl.CreateGameSessionInput{MaximumPlayerSessionCount: aws.Int32(2)})
	wantErr[*types.InvalidRequestException](t, "CreateGameSession without CreatorId on a fleet with a limit policy", err)
	_, err = create(gl.CreateGameSessionInput{MaximumPlayerSessionCount: aws.Int32(2), CreatorId: aws.String("alice"),
		IdempotencyToken: aws.String("a"), GameSessionId: aws.String("b")})
	wantErr[*types.InvalidRequestException](t, "CreateGameSession with IdempotencyToken and a different GameSessionId", err)
	_, err = create(gl.CreateGameSessionInput{MaximumPlayerSessionCount: aws.Int32(2), CreatorId: aws.String("alice"),
		Location: aws.String("eu-west-1")})
	wantErr[*types.InvalidRequestException](t, "CreateGameSession in a location the fleet does not have", err)

	first := gl.CreateGameSessionInput{MaximumPlayerSessionCount: aws.Int32(2), CreatorId: aws.String("alice"),
		IdempotencyToken: aws.String("rules-1"), Name: aws.String("one")}
	out, err := create(first)
	if err != nil {
		t.Fatalf("CreateGameSession: %v", err)
	}
	gs1 := aws.ToString(out.GameSession.GameSessionId)
	e.waitGameSession(t, gs1, types.GameSessionStatusActive)
	// The same token again returns the original game session, with its
	// current status; with other parameters it is refused.
	again, err := create(first)
	if err != nil {
		t.Fatalf("CreateGameSession repeated: %v", err)
	}
	if id := aws.ToString(again.GameSession.GameSessionId); id != gs1 || again.GameSession.Status != types.GameSessionStatusActive {
		t.Errorf("repeated CreateGameSession: %s %s, want %s ACTIVE", id, again.GameSession.Status, gs1)
	}
	changed := first
	changed.MaximumPlayerSessionCount = aws.Int32(3)
	_, err = create(changed)
	wantErr[*types.IdempotentParameterMismatchException](t, "CreateGameSession with a used token and other parameters", err)

	// The deprecated GameSessionId works as a token too (over JSON 1.1
	// with aws-sdk-go v1).
	v1 := e.h.V1()
	legacy := &glv1.CreateGameSessionInput{FleetId: awsv1.String(fleetID), MaximumPlayerSessionCount: awsv1.Int64(2),
		CreatorId: awsv1.String("alice"), GameSessionId: awsv1.String("legacy-id")}
	lout, err := v1.CreateGameSessionWithContext(e.ctx, legacy)
	if err != nil {
		t.Fatalf("CreateGameSession (v1) with GameSessionId: %v", err)
	}
	gs2 := awsv1.StringValue(lout.GameSession.GameSessionId)
	if !strings.HasSuffix(gs2, "/"+fleetID+"/legacy-id") {
		t.Errorf("GameSessionId %q does not end with the given GameSessionId", gs2)
	}
	e.waitGameSession(t, gs2, types.GameSessionStatusActive)
	if lagain, err := v1.CreateGameSessionWithContext(e.ctx, legacy); err != nil || awsv1.StringValue(lagain.GameSession.GameSessionId) != gs2 {
		t.Errorf("repeated CreateGameSession with GameSessionId: %v, %v", lagain, err)
	}

	// alice has created 2 game sessions in the policy period; bob may
	// create one, but both processes are busy.
	_, err = create(gl.CreateGameSessionInput{MaximumPlayerSessionCount: aws.Int32(2), CreatorId: aws.String("alice")})
	wantErr[*types.LimitExceededException](t, "a third game session by one creator", err)
	_, err = create(gl.CreateGameSessionInput{MaximumPlayerSessionCount: aws.Int32(2), CreatorId: aws.String("bob")})
	wantErr[*types.FleetCapacityExceededException](t, "CreateGameSession with no free process", err)

	rulesDescribeAndUpdate(t, e, fleetID, gs1)
	rulesPlayerPolicy(t, e, gs1)
	rulesForceTerminate(t, e, fleetID, gs2, create)
	e.deleteFleet(t, fleetID)
}

// rulesDescribeAndUpdate describes the fleet's two game sessions and
// updates gs1.
func rulesDescribeAndUpdate(t *testing.T, e *env, fleetID, gs1 string) {
	v1 := e.h.V1()
	// Describe, with filters and pages.
	all, err := e.gl.DescribeGameSessions(e.ctx, &gl.DescribeGameSessionsInput{FleetId: aws.String(fleetID),
		StatusFilter: aws.String("ACTIVE"), Location: aws.String(hoisttest.Region)})
	if err != nil || len(all.GameSessions) != 2 {
		t.Fatalf("DescribeGameSessions ACTIVE: %v, %v", all, err)
	}
	page1, err := e.gl.DescribeGameSessions(e.ctx, &gl.DescribeGameSessionsInput{FleetId: aws.String(fleetID), Limit: aws.Int32(1)})
	if err != nil || len(page1.GameSessions) != 1 || page1.NextToken == nil {
		t.Fatalf("DescribeGameSessions Limit 1: %+v, %v", page1, err)
	}
	page2, err := e.gl.DescribeGameSessions(e.ctx, &gl.DescribeGameSessionsInput{FleetId: aws.String(fleetID), Limit: aws.Int32(1),
		NextToken: page1.NextToken})
	if err != nil || len(page2.GameSessions) != 1 || aws.ToString(page2.GameSessions[0].GameSessionId) == aws.ToString(page1.GameSessions[0].GameSessionId) {
		t.Fatalf("DescribeGameSessions second page: %+v, %v", page2, err)
	}
	v1all, err := v1.DescribeGameSessionsWithContext(e.ctx, &glv1.DescribeGameSessionsInput{FleetId: awsv1.String(fleetID)})
	if err != nil || len(v1all.GameSessions) != 2 {
		t.Errorf("DescribeGameSessions (v1): %v, %v", v1all, err)
	}
	none, err := e.gl.DescribeGameSessions(e.ctx, &gl.DescribeGameSessionsInput{FleetId: aws.String(fleetID), StatusFilter: aws.String("TERMINATED")})
	if err != nil || len(none.GameSessions) != 0 {
		t.Errorf("DescribeGameSessions TERMINATED: %v, %v", none, err)
	}

	// UpdateGameSession: properties are added or overwritten, never
	// deleted; the protection policy shows in the details.
	_, err = e.gl.UpdateGameSession(e.ctx, &gl.UpdateGameSessionInput{GameSessionId: aws.String(gs1), Name: aws.String("renamed"),
		MaximumPlayerSessionCount: aws.Int32(4), ProtectionPolicy: types.ProtectionPolicyFullProtection,
		GameProperties: []types.GameProperty{{Key: aws.String("mode"), Value: aws.String("duel")}}})
	if err != nil {
		t.Fatalf("UpdateGameSession: %v", err)
	}
	up, err := e.gl.UpdateGameSession(e.ctx, &gl.UpdateGameSessionInput{GameSessionId: aws.String(gs1),
		GameProperties: []types.GameProperty{{Key: aws.String("mode"), Value: aws.String("ffa")}, {Key: aws.String("map"), Value: aws.String("x")}}})
	if err != nil {
		t.Fatalf("UpdateGameSession: %v", err)
	}
	if g := up.GameSession; aws.ToString(g.Name) != "renamed" || aws.ToInt32(g.MaximumPlayerSessionCount) != 4 || len(g.GameProperties) != 2 ||
		aws.ToString(g.GameProperties[0].Value) != "ffa" {
		t.Errorf("UpdateGameSession: %+v", g)
	}
	det, err := e.gl.DescribeGameSessionDetails(e.ctx, &gl.DescribeGameSessionDetailsInput{FleetId: aws.String(fleetID)})
	if err != nil || len(det.GameSessionDetails) != 2 {
		t.Fatalf("DescribeGameSessionDetails: %v, %v", det, err)
	}
	for _, d := range det.GameSessionDetails {
		want := types.ProtectionPolicyNoProtection
		if aws.ToString(d.GameSession.GameSessionId) == gs1 {
			want = types.ProtectionPolicyFullProtection
		}
		if d.ProtectionPolicy != want {
			t.Errorf("DescribeGameSessionDetails %s: ProtectionPolicy %s, want %s", aws.ToString(d.GameSession.GameSessionId), d.ProtectionPolicy, want)
		}
	}
}

// rulesPlayerPolicy closes gs1 to new players with DENY_ALL and has the
// game server open and close it again.
func rulesPlayerPolicy(t *testing.T, e *env, gs1 string) {
	// DENY_ALL closes the game session to new players; the game server
	// opens it again with UpdatePlayerSessionCreationPolicy.
	if _, err := e.gl.UpdateGameSession(e.ctx, &gl.UpdateGameSessionInput{GameSessionId: aws.String(gs1),
		PlayerSessionCreationPolicy: types.PlayerSessionCreationPolicyDenyAll}); err != nil {
		t.Fatalf("UpdateGameSession DENY_ALL: %v", err)
	}
	_, err := e.gl.CreatePlayerSession(e.ctx, &gl.CreatePlayerSessionInput{GameSessionId: aws.String(gs1), PlayerId: aws.String("p")})
	wantErr[*types.GameSessionFullException](t, "CreatePlayerSession with DENY_ALL", err)
	active := e.gameSession(t, gs1)
	pl := dialPlayer(t, aws.ToString(active.IpAddress), aws.ToInt32(active.Port))
	pl.must("POLICY ACCEPT_ALL")
	if p := e.gameSession(t, gs1).PlayerSessionCreationPolicy; p != types.PlayerSessionCreationPolicyAcceptAll {
		t.Fatalf("after the game server's POLICY ACCEPT_ALL the policy is %s", p)
	}
	if _, err := e.gl.CreatePlayerSession(e.ctx, &gl.CreatePlayerSessionInput{GameSessionId: aws.String(gs1), PlayerId: aws.String("p")}); err != nil {
		t.Fatalf("CreatePlayerSession after ACCEPT_ALL: %v", err)
	}
	pl.must("POLICY DENY_ALL")
	_, err = e.gl.CreatePlayerSession(e.ctx, &gl.CreatePlayerSessionInput{GameSessionId: aws.String(gs1), PlayerId: aws.String("q")})
	wantErr[*types.GameSessionFullException](t, "CreatePlayerSession after the game server's DENY_ALL", err)
	_, err = e.gl.CreatePlayerSessions(e.ctx, &gl.CreatePlayerSessionsInput{GameSessionId: aws.String(gs1), PlayerIds: []string{}})
	if err == nil {
		t.Errorf("CreatePlayerSessions with no players succeeded")
	}
}

// rulesForceTerminate ends gs2 with FORCE_TERMINATE; the replacement
// process takes a new game session.
func rulesForceTerminate(t *testing.T, e *env, fleetID, gs2 string, create func(gl.CreateGameSessionInput) (*gl.CreateGameSessionOutput, error)) {
	// FORCE_TERMINATE stops the game session's process, which is replaced.
	before := fleetPIDs(fleetID)
	ft, err := e.gl.TerminateGameSession(e.ctx, &gl.TerminateGameSessionInput{GameSessionId: aws.String(gs2),
		TerminationMode: types.TerminationModeForceTerminate})
	if err != nil {
		t.Fatalf("TerminateGameSession FORCE_TERMINATE: %v", err)
	}
	// GameLift answers TERMINATING, and the game session is TERMINATED
	// once its process has stopped.
	if g := ft.GameSession; g.Status != types.GameSessionStatusTerminating || g.StatusReason != types.GameSessionStatusReasonForceTerminated {
		t.Errorf("FORCE_TERMINATE answered %s %s, want TERMINATING FORCE_TERMINATED", g.Status, g.StatusReason)
	}
	waitReplaced(t, fleetID, before, 1)
	if g := e.waitGameSession(t, gs2, types.GameSessionStatusTerminated); g.StatusReason != types.GameSessionStatusReasonForceTerminated || g.TerminationTime == nil {
		t.Errorf("force-terminated game session: %s %s, TerminationTime %v", g.Status, g.StatusReason, g.TerminationTime)
	}
	eventually(t, waitShort, "SERVER_PROCESS_FORCE_TERMINATED event", func() (bool, string) {
		return e.hasEvent(t, fleetID, types.EventCodeServerProcessForceTerminated, ""), e.eventText(t, fleetID)
	})
	// The process was ended without the shutdown sequence: it was sent no
	// TerminateProcess, so it never began to end on its own.
	out := processOutput(t, e, fleetID, gs2)
	if strings.Contains(out, "asked to terminate") || strings.Contains(out, `msg=ending`) {
		t.Errorf("a force-terminated process was asked to end:\n%s", out)
	}
	_, err = e.gl.TerminateGameSession(e.ctx, &gl.TerminateGameSessionInput{GameSessionId: aws.String(gs2),
		TerminationMode: types.TerminationModeForceTerminate})
	wantErr[*types.InvalidGameSessionStatusException](t, "TerminateGameSession of a TERMINATED game session", err)
	// The replacement takes bob's game session.
	e.waitIdleProcesses(t, fleetID, 1)
	if _, err := create(gl.CreateGameSessionInput{MaximumPlayerSessionCount: aws.Int32(2), CreatorId: aws.String("bob")}); err != nil {
		t.Fatalf("CreateGameSession on the replacement process: %v", err)
	}
}

// processOutput returns the captured output of the fleet's server process
// that was sent game session gsID (logs/<process ID>.log of its instance).
func processOutput(t *testing.T, e *env, fleetID, gsID string) string {
	t.Helper()
	files := instanceGlob(e.h.DataDir, fleetID, "*", "logs", "*.log")
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err == nil && strings.Contains(string(b), "gameSession="+gsID) {
			return string(b)
		}
	}
	t.Fatalf("no process output shows game session %s (%d files)", gsID, len(files))
	return ""
}

// waitReplaced waits until n of the PIDs in before are gone and as many new
// ones run, and returns the new ones.
func waitReplaced(t testing.TB, fleetID string, before []int, n int) []int {
	t.Helper()
	var fresh []int
	eventually(t, waitLong, "processes replaced", func() (bool, string) {
		now := fleetPIDs(fleetID)
		gone, kept := 0, map[int]bool{}
		for _, p := range now {
			kept[p] = true
		}
		for _, p := range before {
			if !kept[p] {
				gone++
			}
		}
		fresh = fresh[:0]
		old := map[int]bool{}
		for _, p := range before {
			old[p] = true
		}
		for _, p := range now {
			if !old[p] {
				fresh = append(fresh, p)
			}
		}
		return gone == n && len(fresh) == n, "before " + pidText(before) + ", now " + pidText(now)
	})
	return fresh
}

func pidText(pids []int) string { return fmt.Sprint(pids) }

// testConcurrentPlacement: game sessions and player sessions requested at
// the same time never share a process or overfill a game session.
func testConcurrentPlacement(t *testing.T, e *env) {
	buildID := e.uploadGameServer(t, "concurrent")
	fleetID := e.newFleet(t, fleetSpec{name: "concurrent", build: buildID, concurrent: 4})
	arn := aws.ToString(e.fleetAttributes(t, fleetID).FleetArn)
	const n = 7
	var wg sync.WaitGroup
	results := make([]error, n)
	ids := make([]string, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			in := &gl.CreateGameSessionInput{FleetId: aws.String(fleetID), MaximumPlayerSessionCount: aws.Int32(3)}
			if i%2 == 1 {
				in.FleetId = aws.String(arn) // FleetId may be the fleet's ARN
			}
			out, err := e.gl.CreateGameSession(e.ctx, in)
			results[i] = err
			if err == nil {
				ids[i] = aws.ToString(out.GameSession.GameSessionId)
			}
		}()
	}
	wg.Wait()
	ports := map[int32]bool{}
	var created []string
	for i, err := range results {
		var full *types.FleetCapacityExceededException
		switch {
		case err == nil:
			created = append(created, ids[i])
		case !errors.As(err, &full):
			t.Errorf("concurrent CreateGameSession: %v", err)
		}
	}
	if len(created) != 4 {
		t.Fatalf("%d of %d concurrent game sessions were placed on 4 processes", len(created), n)
	}
	for _, id := range created {
		gs := e.waitGameSession(t, id, types.GameSessionStatusActive)
		ports[aws.ToInt32(gs.Port)] = true
	}
	if len(ports) != 4 {
		t.Errorf("4 game sessions share processes: ports %v", ports)
	}

	// 8 players race for 3 slots.
	gsID := created[0]
	players := make([]error, 8)
	for i := range players {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, players[i] = e.gl.CreatePlayerSession(e.ctx, &gl.CreatePlayerSessionInput{GameSessionId: aws.String(gsID),
				PlayerId: aws.String(fmt.Sprintf("racer-%d", i))})
		}()
	}
	wg.Wait()
	ok := 0
	for _, err := range players {
		var full *types.GameSessionFullException
		switch {
		case err == nil:
			ok++
		case !errors.As(err, &full):
			t.Errorf("concurrent CreatePlayerSession: %v", err)
		}
	}
	if got := aws.ToInt32(e.gameSession(t, gsID).CurrentPlayerSessionCount); ok != 3 || got != 3 {
		t.Errorf("%d player sessions created, CurrentPlayerSessionCount %d; want 3 and 3", ok, got)
	}
	e.deleteFleet(t, fleetID)
}

func (e *env) fleetAttributes(t testing.TB, id string) types.FleetAttributes {
	t.Helper()
	out, err := e.gl.DescribeFleetAttributes(e.ctx, &gl.DescribeFleetAttributesInput{FleetIds: []string{id}})
	if err != nil || len(out.FleetAttributes) != 1 {
		t.Fatalf("DescribeFleetAttributes %s: %v", id, err)
	}
	return out.FleetAttributes[0]
}

//go:build linux

package hosting

import (
	"bytes"
	"errors"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	gl "github.com/aws/aws-sdk-go-v2/service/gamelift"
	"github.com/aws/aws-sdk-go-v2/service/gamelift/types"
	"github.com/aws/smithy-go"
)

// sessionWithPlayers creates a game session on a fleet of one
// -accept-players process, reserves two players and has the game server
// accept the first. It returns the session and the player session IDs.
func sessionWithPlayers(t *testing.T, e *env, fleetID string) (types.GameSession, string, string) {
	t.Helper()
	gs := e.createGameSession(t, fleetID, 4)
	gsID := aws.ToString(gs.GameSessionId)
	out, err := e.gl.CreatePlayerSessions(e.ctx, &gl.CreatePlayerSessionsInput{GameSessionId: aws.String(gsID),
		PlayerIds: []string{"accepted", "reserved"}})
	if err != nil {
		t.Fatalf("CreatePlayerSessions: %v", err)
	}
	accepted, reserved := aws.ToString(out.PlayerSessions[0].PlayerSessionId), aws.ToString(out.PlayerSessions[1].PlayerSessionId)
	pl := dialPlayer(t, aws.ToString(gs.IpAddress), aws.ToInt32(gs.Port))
	pl.must("ACCEPT " + accepted)
	e.waitPlayerSession(t, accepted, types.PlayerSessionStatusActive)
	return gs, accepted, reserved
}

// checkProcessGone checks what a dead process leaves behind: its game
// session ended (TERMINATED or ERROR) with no players, every player
// session COMPLETED, nothing of the fleet still ACTIVE, and an event (code
// "": none expected).
func checkProcessGone(t *testing.T, e *env, fleetID, gsID string, players []string, code types.EventCode) {
	t.Helper()
	eventually(t, waitShort, "game session "+gsID+" ended", func() (bool, string) {
		st := e.gameSession(t, gsID).Status
		return st == types.GameSessionStatusTerminated || st == types.GameSessionStatusError, string(st)
	})
	if n := aws.ToInt32(e.gameSession(t, gsID).CurrentPlayerSessionCount); n != 0 {
		t.Errorf("an ended game session counts %d players", n)
	}
	for _, ps := range players {
		e.waitPlayerSession(t, ps, types.PlayerSessionStatusCompleted)
	}
	act, err := e.gl.DescribeGameSessions(e.ctx, &gl.DescribeGameSessionsInput{FleetId: aws.String(fleetID), StatusFilter: aws.String("ACTIVE")})
	if err != nil || len(act.GameSessions) != 0 {
		t.Errorf("game sessions still ACTIVE for a dead process: %+v, %v", act, err)
	}
	if code == "" {
		return
	}
	eventually(t, waitShort, string(code)+" event", func() (bool, string) {
		return e.hasEvent(t, fleetID, code, ""), e.eventText(t, fleetID)
	})
}

// testCrash: a game server that exits with code 3 right after activating
// its game session (counted in /metrics as an abnormal termination).
func testCrash(t *testing.T, e *env) {
	buildID := e.uploadGameServer(t, "crash")
	fleetID := e.newFleet(t, fleetSpec{name: "crash", build: buildID, params: "-crash-after-activate"})
	before := fleetPIDs(fleetID)
	out, err := e.gl.CreateGameSession(e.ctx, &gl.CreateGameSessionInput{FleetId: aws.String(fleetID), MaximumPlayerSessionCount: aws.Int32(2)})
	if err != nil {
		t.Fatalf("CreateGameSession: %v", err)
	}
	gsID := aws.ToString(out.GameSession.GameSessionId)
	checkProcessGone(t, e, fleetID, gsID, nil, types.EventCodeServerProcessCrashed)
	fleet := map[string]string{"FleetId": fleetID}
	e.waitMetrics(t, "the crash counted", map[string]want{"gamelift_ServerProcessAbnormalTerminations": {fleet, 1},
		"hoist_server_processes_exited_total": {map[string]string{"FleetId": fleetID, "how": "exit"}, 1}})
	if st := e.gameSession(t, gsID).Status; st != types.GameSessionStatusTerminated {
		t.Errorf("the game session of a process that crashed after activating it is %s, want TERMINATED", st)
	}
	waitReplaced(t, fleetID, before, 1)
	e.waitIdleProcesses(t, fleetID, 1)
	if out := downloadLogs(t, e, gsID)["process-output.log"]; !strings.Contains(out, "crashing (crash-after-activate)") {
		t.Errorf("the collected output of the crashed process does not show the crash:\n%s", out)
	}
	e.deleteFleet(t, fleetID)
}

// testKilledProcess: a game server killed (SIGKILL) while hosting players.
func testKilledProcess(t *testing.T, e *env) {
	buildID := e.uploadGameServer(t, "killed")
	fleetID := e.newFleet(t, fleetSpec{name: "killed", build: buildID, params: "-accept-players"})
	gs, accepted, reserved := sessionWithPlayers(t, e, fleetID)
	before := fleetPIDs(fleetID)
	if len(before) != 1 {
		t.Fatalf("fleet runs PIDs %v, want one", before)
	}
	if err := syscall.Kill(before[0], syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	checkProcessGone(t, e, fleetID, aws.ToString(gs.GameSessionId), []string{accepted, reserved}, types.EventCodeServerProcessCrashed)
	waitReplaced(t, fleetID, before, 1)
	e.waitIdleProcesses(t, fleetID, 1)
	e.deleteFleet(t, fleetID)
}

// testKilledWhileActivating: a game server killed before it activated its
// game session takes the session to ERROR.
func testKilledWhileActivating(t *testing.T, e *env) {
	buildID := e.uploadGameServer(t, "killed-activating")
	fleetID := e.newFleet(t, fleetSpec{name: "killed-activating", build: buildID, params: "-no-activate"})
	before := fleetPIDs(fleetID)
	out, err := e.gl.CreateGameSession(e.ctx, &gl.CreateGameSessionInput{FleetId: aws.String(fleetID), MaximumPlayerSessionCount: aws.Int32(2)})
	if err != nil {
		t.Fatalf("CreateGameSession: %v", err)
	}
	gsID := aws.ToString(out.GameSession.GameSessionId)
	if err := syscall.Kill(before[0], syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	e.waitGameSession(t, gsID, types.GameSessionStatusError)
	waitReplaced(t, fleetID, before, 1)
	e.deleteFleet(t, fleetID)
}

// testStuckProcess: a game server that no longer responds at all (stopped
// with SIGSTOP) is asked to end its game session, does not, and is killed
// once the termination grace is over; its session ends and it is replaced.
func testStuckProcess(t *testing.T, e *env) {
	buildID := e.uploadGameServer(t, "stuck")
	fleetID := e.newFleet(t, fleetSpec{name: "stuck", build: buildID, params: "-accept-players"})
	gs, accepted, reserved := sessionWithPlayers(t, e, fleetID)
	before := fleetPIDs(fleetID)
	if err := syscall.Kill(before[0], syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Kill(before[0], syscall.SIGKILL) })
	out, err := e.gl.TerminateGameSession(e.ctx, &gl.TerminateGameSessionInput{GameSessionId: gs.GameSessionId,
		TerminationMode: types.TerminationModeTriggerOnProcessTerminate})
	if err != nil || out.GameSession.Status != types.GameSessionStatusTerminating {
		t.Fatalf("TerminateGameSession: %+v, %v", out, err)
	}
	checkProcessGone(t, e, fleetID, aws.ToString(gs.GameSessionId), []string{accepted, reserved}, types.EventCodeServerProcessProcessExitTimeout)
	if alive(before[0]) {
		t.Errorf("the stuck process %d is still alive", before[0])
	}
	waitReplaced(t, fleetID, before, 1)
	e.deleteFleet(t, fleetID)
}

// testMissedHeartbeats: a game server that never reports its health is
// ended (TerminateProcess, ProcessEnding) and replaced.
func testMissedHeartbeats(t *testing.T, e *env) {
	testUnhealthyProcess(t, e, "-no-heartbeat")
}

// testUnhealthy: a game server that reports itself unhealthy is ended after
// three reports and replaced.
func testUnhealthy(t *testing.T, e *env) {
	testUnhealthyProcess(t, e, "-unhealthy")
}

func testUnhealthyProcess(t *testing.T, e *env, knob string) {
	buildID := e.uploadGameServer(t, "health"+knob)
	fleetID := e.newFleet(t, fleetSpec{name: "health" + knob, build: buildID, params: knob + " -accept-players"})
	before := fleetPIDs(fleetID)
	gs, accepted, reserved := sessionWithPlayers(t, e, fleetID)
	checkProcessGone(t, e, fleetID, aws.ToString(gs.GameSessionId), []string{accepted, reserved}, types.EventCodeServerProcessTerminatedUnhealthy)
	waitReplaced(t, fleetID, before, 1)
	e.deleteFleet(t, fleetID)
}

// testActivationTimeout: a game server that never activates its game
// session; the session ends TERMINATED after the fleet's
// GameSessionActivationTimeoutSeconds, the process is replaced and the
// fleet records GAME_SESSION_ACTIVATION_TIMEOUT.
func testActivationTimeout(t *testing.T, e *env) {
	buildID := e.uploadGameServer(t, "noactivate")
	fleetID := e.newFleet(t, fleetSpec{name: "noactivate", build: buildID, params: "-no-activate", activationTimeout: 1})
	before := fleetPIDs(fleetID)
	out, err := e.gl.CreateGameSession(e.ctx, &gl.CreateGameSessionInput{FleetId: aws.String(fleetID), MaximumPlayerSessionCount: aws.Int32(2)})
	if err != nil {
		t.Fatalf("CreateGameSession: %v", err)
	}
	gsID := aws.ToString(out.GameSession.GameSessionId)
	if st := out.GameSession.Status; st != types.GameSessionStatusActivating {
		t.Fatalf("CreateGameSession: %s, want ACTIVATING", st)
	}
	_, err = e.gl.CreatePlayerSession(e.ctx, &gl.CreatePlayerSessionInput{GameSessionId: aws.String(gsID), PlayerId: aws.String("early")})
	wantErr[*types.InvalidGameSessionStatusException](t, "CreatePlayerSession in an ACTIVATING game session", err)
	// GameLift's RuntimeConfiguration documents TERMINATED.
	gs := e.waitGameSession(t, gsID, types.GameSessionStatusTerminated)
	if gs.TerminationTime == nil {
		t.Errorf("a timed-out game session has no TerminationTime")
	}
	_, err = e.gl.GetPlayerConnectionDetails(e.ctx, &gl.GetPlayerConnectionDetailsInput{GameSessionId: aws.String(gsID), PlayerIds: []string{"p"}})
	wantErr[*types.InvalidGameSessionStatusException](t, "GetPlayerConnectionDetails of a timed-out game session", err)
	waitReplaced(t, fleetID, before, 1)
	eventually(t, waitShort, "GAME_SESSION_ACTIVATION_TIMEOUT event", func() (bool, string) {
		return e.hasEvent(t, fleetID, types.EventCodeGameSessionActivationTimeout, gsID), e.eventText(t, fleetID)
	})
	e.waitIdleProcesses(t, fleetID, 1)
	e.deleteFleet(t, fleetID)
}

// testInvalidLaunchPath: a launch path that is not in the build, and one
// that is a file but not a program; each fleet goes to ERROR with events
// that say why.
func testInvalidLaunchPath(t *testing.T, e *env) {
	archive := gameServerArchive(t, map[string]archiveFile{"notes.txt": {body: "not a program\n", mode: 0o644}})
	buildID, err := e.createBuild(t, "launchpaths", archive)
	if err != nil {
		t.Fatalf("upload: %v", err)
	}
	e.waitBuild(t, buildID, types.BuildStatusReady)
	for name, lp := range map[string]string{"missing": "/local/game/missing", "notexec": "/local/game/notes.txt"} {
		t.Run(name, func(t *testing.T) {
			out := e.createFleet(t, fleetSpec{name: "launch-" + name, build: buildID, launchPath: lp})
			fleetID := aws.ToString(out.FleetAttributes.FleetId)
			e.waitFleet(t, fleetID, types.FleetStatusError)
			if !e.hasEvent(t, fleetID, types.EventCodeServerProcessInvalidPath, lp) || !e.hasEvent(t, fleetID, types.EventCodeFleetStateError, "") {
				t.Errorf("fleet events do not record the bad launch path %s:\n%s", lp, e.eventText(t, fleetID))
			}
			if name == "missing" && !e.hasEvent(t, fleetID, types.EventCodeFleetValidationLaunchPathNotFound, "") {
				t.Errorf("no FLEET_VALIDATION_LAUNCH_PATH_NOT_FOUND event:\n%s", e.eventText(t, fleetID))
			}
			_, err := e.gl.CreateGameSession(e.ctx, &gl.CreateGameSessionInput{FleetId: aws.String(fleetID), MaximumPlayerSessionCount: aws.Int32(1)})
			wantErr[*types.InvalidFleetStatusException](t, "CreateGameSession on a fleet in ERROR", err)
			if name == "notexec" { // a missing launch path fails the instance's validation: nothing is launched
				e.waitMetrics(t, "the launch failures counted", map[string]want{
					"hoist_server_process_launch_failures_total": {map[string]string{"FleetId": fleetID}, -1}})
			}
			waitNoProcesses(t, fleetID)
			e.deleteFleet(t, fleetID)
		})
	}
}

// testCorruptBuild: an archive that is not a zip, and a truncated zip, are
// refused at upload and their builds are FAILED; no fleet takes them.
func testCorruptBuild(t *testing.T, e *env) {
	_, good := gameServer(t)
	for name, archive := range map[string][]byte{
		"notzip":    []byte("this is not a zip archive\n"),
		"truncated": good[:len(good)/2],
	} {
		t.Run(name, func(t *testing.T) {
			id, err := e.createBuild(t, "corrupt-"+name, archive)
			var ae smithy.APIError
			if !errors.As(err, &ae) || ae.ErrorCode() != "InvalidBuildArchive" {
				t.Errorf("uploading a corrupt archive: %v, want InvalidBuildArchive", err)
			}
			e.waitBuild(t, id, types.BuildStatusFailed)
			_, err = e.gl.CreateFleet(e.ctx, &gl.CreateFleetInput{Name: aws.String("corrupt"), BuildId: aws.String(id),
				EC2InstanceType: types.EC2InstanceTypeC5Large, RuntimeConfiguration: &types.RuntimeConfiguration{
					ServerProcesses: []types.ServerProcess{{LaunchPath: aws.String(gameServerLaunchPath), ConcurrentExecutions: aws.Int32(1)}}}})
			wantErr[*types.InvalidRequestException](t, "CreateFleet with a FAILED build", err)
		})
	}
}

// testActOnSession: a process that calls the SDK on another process's game
// session and player session is refused, and that session is untouched.
func testActOnSession(t *testing.T, e *env) {
	buildID := e.uploadGameServer(t, "acton")
	fleetID := e.newFleet(t, fleetSpec{name: "acton", build: buildID, params: "-accept-players"})
	gs := e.createGameSession(t, fleetID, 2)
	gsID := aws.ToString(gs.GameSessionId)
	ps, err := e.gl.CreatePlayerSession(e.ctx, &gl.CreatePlayerSessionInput{GameSessionId: aws.String(gsID), PlayerId: aws.String("victim")})
	if err != nil {
		t.Fatal(err)
	}
	psID := aws.ToString(ps.PlayerSession.PlayerSessionId)

	// A second server process on the same instance, given the session's IDs.
	rc := &types.RuntimeConfiguration{ServerProcesses: []types.ServerProcess{
		{LaunchPath: aws.String(gameServerLaunchPath), Parameters: aws.String("-accept-players"), ConcurrentExecutions: aws.Int32(1)},
		{LaunchPath: aws.String(gameServerLaunchPath), Parameters: aws.String("-act-on-session " + gsID + " -act-on-player-session " + psID),
			ConcurrentExecutions: aws.Int32(1)},
	}}
	if _, err := e.gl.UpdateRuntimeConfiguration(e.ctx, &gl.UpdateRuntimeConfigurationInput{FleetId: aws.String(fleetID), RuntimeConfiguration: rc}); err != nil {
		t.Fatalf("UpdateRuntimeConfiguration: %v", err)
	}
	desc, err := e.gl.DescribeRuntimeConfiguration(e.ctx, &gl.DescribeRuntimeConfigurationInput{FleetId: aws.String(fleetID)})
	if err != nil || len(desc.RuntimeConfiguration.ServerProcesses) != 2 {
		t.Fatalf("DescribeRuntimeConfiguration: %+v, %v", desc, err)
	}
	// Its outcomes, from its own output.
	var outcomes map[string]string
	eventually(t, waitLong, "the second process's act-on-session outcomes", func() (bool, string) {
		outcomes = map[string]string{}
		for _, pid := range fleetPIDs(fleetID) {
			cmd, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
			if !bytes.Contains(cmd, []byte("-act-on-session")) {
				continue
			}
			out, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/fd/1") // its output file
			for _, line := range strings.Split(string(out), "\n") {
				if strings.Contains(line, "msg=act-on-session") {
					outcomes[field(line, "action")] = field(line, "status")
				}
			}
		}
		return len(outcomes) == 5, "outcomes " + strings.Join(mapText(outcomes), ", ")
	})
	for _, a := range []string{"ActivateGameSession", "AcceptPlayerSession", "RemovePlayerSession", "UpdatePlayerSessionCreationPolicy"} {
		if outcomes[a] != "403" {
			t.Errorf("%s on another process's game session: status %s, want 403", a, outcomes[a])
		}
	}
	after := e.gameSession(t, gsID)
	if after.Status != types.GameSessionStatusActive || after.PlayerSessionCreationPolicy != types.PlayerSessionCreationPolicyAcceptAll ||
		aws.ToInt32(after.CurrentPlayerSessionCount) != 1 {
		t.Errorf("the game session changed: %s %s %d players", after.Status, after.PlayerSessionCreationPolicy, aws.ToInt32(after.CurrentPlayerSessionCount))
	}
	if st := e.playerSession(t, psID).Status; st != types.PlayerSessionStatusReserved {
		t.Errorf("the player session is %s, want RESERVED", st)
	}
	// The session's own process still serves it.
	pl := dialPlayer(t, aws.ToString(gs.IpAddress), aws.ToInt32(gs.Port))
	pl.must("ACCEPT " + psID)
	e.waitPlayerSession(t, psID, types.PlayerSessionStatusActive)
	e.deleteFleet(t, fleetID)
}

// field returns the value of key=value in a logfmt line.
func field(line, key string) string {
	i := strings.Index(line, " "+key+"=")
	if i < 0 {
		return ""
	}
	v := line[i+len(key)+2:]
	if j := strings.IndexByte(v, ' '); j >= 0 {
		v = v[:j]
	}
	return v
}

func mapText(m map[string]string) []string {
	var out []string
	for k, v := range m {
		out = append(out, k+"="+v)
	}
	return out
}

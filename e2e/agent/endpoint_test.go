//go:build linux

package agent

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	gl "github.com/aws/aws-sdk-go-v2/service/gamelift"
	"github.com/aws/aws-sdk-go-v2/service/gamelift/types"
	"github.com/coder/websocket"

	"github.com/hoistgg/hoist/e2e/hoisttest"
	"github.com/hoistgg/hoist/internal/agentproto"
	"github.com/hoistgg/hoist/internal/ids"
)

// fleet is an ANYWHERE fleet of its own for one subtest.
type fleet struct {
	e       *env
	id, loc string
}

var fleetCount atomic.Int64

// newFleet makes a custom location and an ANYWHERE fleet whose runtime
// configuration runs the test game server twice.
func (e *env) newFleet(t *testing.T) *fleet {
	t.Helper()
	loc := fmt.Sprintf("custom-agents-%d", fleetCount.Add(1))
	rc := &types.RuntimeConfiguration{GameSessionActivationTimeoutSeconds: aws.Int32(60),
		ServerProcesses: []types.ServerProcess{{LaunchPath: aws.String(hoisttest.GameServerBinary(t)), Parameters: aws.String("-accept-players"),
			ConcurrentExecutions: aws.Int32(2)}}}
	return &fleet{e: e, id: e.anywhereFleet(t, loc, rc), loc: loc}
}

// compute registers a compute and returns its agent endpoint, SDK
// endpoint and a token.
func (f *fleet) compute(t *testing.T, name string) (agentEP, sdkEP, token string) {
	t.Helper()
	c := f.e.register(t, f.id, f.loc, name)
	return aws.ToString(c.GameLiftAgentEndpoint), aws.ToString(c.GameLiftServiceSdkEndpoint), f.e.token(t, f.id, name)
}

// TestAgentEndpoint: the GameLift Agent endpoint as Amazon's Java agent
// uses it, against a real Hoist, with real game servers on the computes.
func TestAgentEndpoint(t *testing.T) {
	e := startHoist(t)
	tests := map[string]func(*testing.T, *env){
		"Handshake":     testHandshake,
		"Heartbeats":    testHeartbeats,
		"Termination":   testTermination,
		"Unhealthy":     testUnhealthy,
		"ForceExit":     testForceExit,
		"Deregistered":  testDeregistered,
		"AgentShutdown": testAgentShutdown,
		"Bounds":        testBounds,
	}
	for name, fn := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			fn(t, e)
		})
	}
}

// testHandshake: RegisterCompute names the endpoint (the SDK endpoint's
// scheme and address); the token must be the compute's own; the runtime
// configuration is the fleet's; GetFleetRoleCredentials is refused.
func testHandshake(t *testing.T, e *env) {
	f := e.newFleet(t)
	agentEP, sdkEP, tok := f.compute(t, "hs-1")
	_, _, tok2 := f.compute(t, "hs-2")
	if want := strings.TrimSuffix(sdkEP, "/sdk") + "/agent"; agentEP != want || !strings.HasPrefix(agentEP, "wss://127.0.0.1:") {
		t.Fatalf("GameLiftAgentEndpoint %q, want %q (SDK endpoint %q)", agentEP, want, sdkEP)
	}
	refused := map[string]struct {
		fleet, compute, token string
		status                int
	}{
		"another compute's token": {f.id, "hs-1", tok2, http.StatusForbidden},
		"another fleet":           {"fleet-" + ids.UUID(), "hs-1", tok, http.StatusForbidden},
		"unknown token":           {f.id, "hs-1", strings.Repeat("ab", 32), http.StatusForbidden},
		"no token":                {f.id, "hs-1", "", http.StatusBadRequest},
	}
	for name, r := range refused {
		_, resp, err := dialAgent(t, e, agentEP, r.fleet, r.compute, r.token)
		if err == nil || resp == nil || resp.StatusCode != r.status {
			t.Errorf("%s: %v, %+v; want HTTP %d", name, err, resp, r.status)
		}
	}
	if resp, err := e.httpClient(t).Get("http" + strings.TrimPrefix(agentEP, "ws")); err != nil || resp.StatusCode != http.StatusUpgradeRequired {
		t.Errorf("plain GET: %+v %v", resp, err)
	}
	a := mustDial(t, e, agentEP, f.id, "hs-1", tok)
	var rc agentproto.DescribeRuntimeConfigurationResponse
	if err := a.request(agentproto.ActionDescribeRuntimeConfiguration, agentproto.DescribeRuntimeConfigurationRequest{}, &rc); err != nil {
		t.Fatal(err)
	}
	if len(rc.ServerProcesses) != 1 || rc.ServerProcesses[0].LaunchPath != hoisttest.GameServerBinary(t) || rc.ServerProcesses[0].ConcurrentExecutions != 2 ||
		rc.ServerProcesses[0].Parameters != "-accept-players" || aws.ToInt32(rc.GameSessionActivationTimeoutSeconds) != 60 {
		t.Errorf("DescribeRuntimeConfiguration: %+v", rc)
	}
	var re *replyError
	err := a.request(agentproto.ActionGetFleetRoleCredentials, agentproto.GetFleetRoleCredentialsRequest{RoleSessionName: "GameLiftAgentSession-abcde"}, nil)
	if !errors.As(err, &re) || re.Status != 400 || !strings.Contains(re.Message, "no AWS credentials") {
		t.Errorf("GetFleetRoleCredentials: %v", err)
	}
	if err := a.request("LaunchMissiles", struct{}{}, nil); !errors.As(err, &re) || re.Status != 400 {
		t.Errorf("an unknown Action: %v", err)
	}
	if log := e.h.Log(); strings.Contains(log, tok) || strings.Contains(log, tok2) {
		t.Error("Hoist's log holds an auth token")
	}
}

// waitRegistered heartbeats until a process is no longer unregistered.
func waitRegistered(t *testing.T, a *javaAgent, status string, list []string, pid string) agentproto.SendHeartbeatResponse {
	t.Helper()
	var r agentproto.SendHeartbeatResponse
	eventually(t, waitShort, "process "+pid+" registered", func() (bool, string) {
		r = a.heartbeat(status, list...)
		for _, id := range r.UnregisteredProcesses {
			if id == pid {
				return false, fmt.Sprintf("%+v", r)
			}
		}
		return true, ""
	})
	return r
}

// testHeartbeats: the reply's status and lists follow the processes; a
// process that registers and one that activates a game session are
// notified; a process the agent stops listing is ended as a crash, and
// listed again (it still runs) it is unhealthy.
func testHeartbeats(t *testing.T, e *env) {
	f := e.newFleet(t)
	agentEP, sdkEP, tok := f.compute(t, "hb-1")
	a := mustDial(t, e, agentEP, f.id, "hb-1", tok)
	if r := a.heartbeat(agentproto.StatusInitializing); r.Status != agentproto.StatusInitializing ||
		r.UnhealthyProcesses == nil || r.UnregisteredProcesses == nil || len(r.UnhealthyProcesses)+len(r.UnregisteredProcesses) != 0 {
		t.Fatalf("first heartbeat: %+v", r)
	}
	p := startProcess(t, e, sdkEP, tok, f.id, "hb-1", "-accept-players")
	never := ids.UUID()
	r := waitRegistered(t, a, agentproto.StatusActivating, []string{p.id, never}, p.id)
	if r.Status != agentproto.StatusActive || len(r.UnregisteredProcesses) != 1 || r.UnregisteredProcesses[0] != never || len(r.UnhealthyProcesses) != 0 {
		t.Fatalf("heartbeat with a registered process: %+v", r)
	}
	var reg agentproto.NotifyProcessRegisteredMessage
	if err := decodeReply(a.next(agentproto.ActionNotifyProcessRegistered), &reg); err != nil || reg.ProcessID != p.id || len(reg.LogPaths) == 0 {
		t.Fatalf("NotifyProcessRegistered: %+v %v", reg, err)
	}
	gs, err := e.gl.CreateGameSession(e.ctx, &gl.CreateGameSessionInput{FleetId: aws.String(f.id), Location: aws.String(f.loc),
		MaximumPlayerSessionCount: aws.Int32(2)})
	if err != nil {
		t.Fatal(err)
	}
	gsID := aws.ToString(gs.GameSession.GameSessionId)
	var act agentproto.NotifyGameSessionActivatedMessage
	if err := decodeReply(a.next(agentproto.ActionNotifyGameSessionActivated), &act); err != nil || act.ProcessID != p.id || act.GameSessionID != gsID {
		t.Fatalf("NotifyGameSessionActivated: %+v %v (game session %s)", act, err, gsID)
	}
	// The agent no longer lists the process: Hoist ends it as a crash.
	if r := a.heartbeat(agentproto.StatusActive, never); r.Status != agentproto.StatusInitializing {
		t.Errorf("heartbeat without the ready process: %+v", r)
	}
	eventually(t, waitShort, "the missing process's crash event", func() (bool, string) {
		return e.hasEvent(t, f.id, types.EventCodeServerProcessCrashed, p.id)
	})
	if st := e.gameSession(t, gsID).Status; st != types.GameSessionStatusTerminated {
		t.Errorf("game session of the missing process: %s", st)
	}
	if r := a.heartbeat(agentproto.StatusActive, p.id); len(r.UnhealthyProcesses) != 1 || r.UnhealthyProcesses[0] != p.id {
		t.Errorf("an ended process listed again: %+v", r)
	}
}

// testTermination: NotifyServerProcessTermination writes the fleet event
// and ends the process; a process that never ran is accepted (an invalid
// launch path); another compute's process is refused.
func testTermination(t *testing.T, e *env) {
	f := e.newFleet(t)
	agentEP, sdkEP, tok := f.compute(t, "nt-1")
	_, _, tok2 := f.compute(t, "nt-2")
	a := mustDial(t, e, agentEP, f.id, "nt-1", tok)
	p := startProcess(t, e, sdkEP, tok, f.id, "nt-1")
	other := startProcess(t, e, sdkEP, tok2, f.id, "nt-2")
	waitRegistered(t, a, agentproto.StatusActive, []string{p.id}, p.id)
	p.kill()
	code := agentproto.ReasonCrashed
	if err := a.request(agentproto.ActionNotifyServerProcessTermination, agentproto.NotifyServerProcessTerminationRequest{
		ProcessID: p.id, EventCode: &code, TerminationReason: agentproto.ReasonCrashed}, nil); err != nil {
		t.Fatalf("NotifyServerProcessTermination: %v", err)
	}
	if ok, seen := e.hasEvent(t, f.id, types.EventCodeServerProcessCrashed, p.id); !ok {
		t.Errorf("no SERVER_PROCESS_CRASHED event naming %s:\n%s", p.id, seen)
	}
	if r := a.heartbeat(agentproto.StatusActive, p.id); len(r.UnhealthyProcesses) != 1 {
		t.Errorf("the ended process is not unhealthy: %+v", r)
	}
	// Another compute's process: refused, and it runs on.
	eventually(t, waitShort, "the other compute's process ready", func() (bool, string) {
		return strings.Contains(other.out.String(), "msg=ready"), other.out.String()
	})
	var re *replyError
	err := a.request(agentproto.ActionNotifyServerProcessTermination, agentproto.NotifyServerProcessTerminationRequest{
		ProcessID: other.id, EventCode: &code, TerminationReason: agentproto.ReasonCrashed}, nil)
	if !errors.As(err, &re) || re.Status != 400 {
		t.Errorf("another compute's process: %v", err)
	}
	if ok, _ := e.hasEvent(t, f.id, types.EventCodeServerProcessCrashed, other.id); ok {
		t.Error("an event was written for another compute's process")
	}
	// A launch path that could not be run: a process ID Hoist never saw.
	invalid, never := agentproto.ReasonInvalidPath, ids.UUID()
	if err := a.request(agentproto.ActionNotifyServerProcessTermination, agentproto.NotifyServerProcessTerminationRequest{
		ProcessID: never, EventCode: &invalid, TerminationReason: agentproto.ReasonInvalidPath}, nil); err != nil {
		t.Fatal(err)
	}
	if ok, seen := e.hasEvent(t, f.id, types.EventCodeServerProcessInvalidPath, never); !ok {
		t.Errorf("no SERVER_PROCESS_INVALID_PATH event:\n%s", seen)
	}
	if err := a.request(agentproto.ActionNotifyServerProcessTermination, map[string]any{
		"ProcessId": never, "EventCode": nil, "TerminationReason": "EXPLODED"}, nil); !errors.As(err, &re) || re.Status != 400 ||
		!strings.Contains(re.Message, "TerminationReason") {
		t.Errorf("an unknown reason: %v", err)
	}
	if other.exited() {
		t.Error("the other compute's process exited")
	}
}

// testUnhealthy: a process that reports itself unhealthy is ended by
// Hoist, and the agent is told it is unhealthy (so that it kills it).
func testUnhealthy(t *testing.T, e *env) {
	f := e.newFleet(t)
	agentEP, sdkEP, tok := f.compute(t, "uh-1")
	a := mustDial(t, e, agentEP, f.id, "uh-1", tok)
	p := startProcess(t, e, sdkEP, tok, f.id, "uh-1", "-unhealthy")
	eventually(t, waitShort, "the unhealthy process listed unhealthy", func() (bool, string) {
		r := a.heartbeat(agentproto.StatusActive, p.id)
		return len(r.UnhealthyProcesses) == 1 && r.UnhealthyProcesses[0] == p.id, fmt.Sprintf("%+v", r)
	})
}

// testForceExit: FORCE_TERMINATE of a game session on an Anywhere compute
// with an agent has the agent kill its process; without an agent it is
// refused.
func testForceExit(t *testing.T, e *env) {
	f := e.newFleet(t)
	agentEP, sdkEP, tok := f.compute(t, "fe-1")
	a := mustDial(t, e, agentEP, f.id, "fe-1", tok)
	p := startProcess(t, e, sdkEP, tok, f.id, "fe-1")
	waitRegistered(t, a, agentproto.StatusActive, []string{p.id}, p.id)
	gs, err := e.gl.CreateGameSession(e.ctx, &gl.CreateGameSessionInput{FleetId: aws.String(f.id), Location: aws.String(f.loc),
		MaximumPlayerSessionCount: aws.Int32(2)})
	if err != nil {
		t.Fatal(err)
	}
	gsID := aws.ToString(gs.GameSession.GameSessionId)
	eventually(t, waitShort, "game session ACTIVE", func() (bool, string) {
		st := e.gameSession(t, gsID).Status
		return st == types.GameSessionStatusActive, string(st)
	})
	if _, err := e.gl.TerminateGameSession(e.ctx, &gl.TerminateGameSessionInput{GameSessionId: aws.String(gsID),
		TerminationMode: types.TerminationModeForceTerminate}); err != nil {
		t.Fatalf("FORCE_TERMINATE with an agent: %v", err)
	}
	var fe agentproto.ForceExitServerProcessMessage
	if err := decodeReply(a.next(agentproto.ActionForceExitServerProcess), &fe); err != nil || fe.ProcessID != p.id ||
		fe.TerminationReason != agentproto.ReasonForceTerminated {
		t.Fatalf("ForceExitServerProcess: %+v %v", fe, err)
	}
	// The agent kills it and says so: the game session ends.
	p.kill()
	code := agentproto.ReasonForceTerminated
	if err := a.request(agentproto.ActionNotifyServerProcessTermination, agentproto.NotifyServerProcessTerminationRequest{
		ProcessID: p.id, EventCode: &code, TerminationReason: code}, nil); err != nil {
		t.Fatal(err)
	}
	eventually(t, waitShort, "game session TERMINATED", func() (bool, string) {
		g := e.gameSession(t, gsID)
		return g.Status == types.GameSessionStatusTerminated && g.StatusReason == types.GameSessionStatusReasonForceTerminated,
			string(g.Status) + " " + string(g.StatusReason)
	})
	// A compute without an agent: FORCE_TERMINATE stays refused.
	_, sdk2, tok2 := f.compute(t, "fe-2")
	p2 := startProcess(t, e, sdk2, tok2, f.id, "fe-2")
	eventually(t, waitShort, "process ready", func() (bool, string) { return strings.Contains(p2.out.String(), "msg=ready"), "" })
	gs2, err := e.gl.CreateGameSession(e.ctx, &gl.CreateGameSessionInput{FleetId: aws.String(f.id), Location: aws.String(f.loc),
		MaximumPlayerSessionCount: aws.Int32(2)})
	if err != nil {
		t.Fatal(err)
	}
	_, err = e.gl.TerminateGameSession(e.ctx, &gl.TerminateGameSessionInput{GameSessionId: gs2.GameSession.GameSessionId,
		TerminationMode: types.TerminationModeForceTerminate})
	var ire *types.InvalidRequestException
	if !errors.As(err, &ire) {
		t.Errorf("FORCE_TERMINATE without an agent: %v", err)
	}
}

// testDeregistered: a compute deregistered while its agent is connected:
// the agent is sent StartComputeTermination, and heartbeats answer
// Terminating.
func testDeregistered(t *testing.T, e *env) {
	f := e.newFleet(t)
	agentEP, _, tok := f.compute(t, "dr-1")
	a := mustDial(t, e, agentEP, f.id, "dr-1", tok)
	a.heartbeat(agentproto.StatusInitializing)
	if _, err := e.gl.DeregisterCompute(e.ctx, &gl.DeregisterComputeInput{FleetId: aws.String(f.id), ComputeName: aws.String("dr-1")}); err != nil {
		t.Fatal(err)
	}
	a.next(agentproto.ActionStartComputeTermination)
	if r := a.heartbeat(agentproto.StatusActive); r.Status != agentproto.StatusTerminating {
		t.Errorf("heartbeat of a deregistered compute: %+v", r)
	}
}

// testAgentShutdown: an agent that reports Terminating has its processes
// asked to end (TerminateProcess over the SDK: the game server ends
// itself); one that reports Terminated has its compute deregistered.
func testAgentShutdown(t *testing.T, e *env) {
	f := e.newFleet(t)
	agentEP, sdkEP, tok := f.compute(t, "sd-1")
	a := mustDial(t, e, agentEP, f.id, "sd-1", tok)
	p := startProcess(t, e, sdkEP, tok, f.id, "sd-1")
	waitRegistered(t, a, agentproto.StatusActive, []string{p.id}, p.id)
	if r := a.heartbeat(agentproto.StatusTerminating, p.id); r.Status != agentproto.StatusTerminating {
		t.Errorf("Terminating heartbeat: %+v", r)
	}
	eventually(t, waitShort, "the game server ends on TerminateProcess", func() (bool, string) {
		return p.exited() && strings.Contains(p.out.String(), "asked to terminate"), p.out.String()
	})
	if r := a.heartbeat(agentproto.StatusTerminated); r.Status != agentproto.StatusTerminated {
		t.Errorf("Terminated heartbeat: %+v", r)
	}
	_, err := e.gl.DescribeCompute(e.ctx, &gl.DescribeComputeInput{FleetId: aws.String(f.id), ComputeName: aws.String("sd-1")})
	var nf *types.NotFoundException
	if !errors.As(err, &nf) {
		t.Errorf("the compute of a terminated agent: %v", err)
	}
}

// testBounds: an oversized frame closes the socket (1009); a compute may
// hold at most 4 sockets; a heartbeat listing the same process twice is
// refused 400.
func testBounds(t *testing.T, e *env) {
	f := e.newFleet(t)
	agentEP, _, tok := f.compute(t, "bd-1")
	a := mustDial(t, e, agentEP, f.id, "bd-1", tok)
	_, b := frame(agentproto.ActionSendHeartbeat, agentproto.SendHeartbeatRequest{Status: agentproto.StatusActive,
		ProcessList: []string{"a", "a"}})
	if err := a.send(b); err != nil {
		t.Fatal(err)
	}
	var re *replyError
	if err := decodeReply(a.next(agentproto.ActionSendHeartbeat), nil); !errors.As(err, &re) || re.Status != 400 {
		t.Errorf("a duplicate process ID: %v", err)
	}
	for range 3 {
		mustDial(t, e, agentEP, f.id, "bd-1", tok)
	}
	if _, resp, err := dialAgent(t, e, agentEP, f.id, "bd-1", tok); err == nil || resp == nil || resp.StatusCode != http.StatusTooManyRequests {
		t.Errorf("a fifth socket: %v %+v", err, resp)
	}
	big := strings.Repeat("x", 300<<10)
	if err := a.send([]byte(`{"Action":"SendHeartbeat","RequestId":"r","Status":"Active","ProcessList":["` + big + `"]}`)); err != nil {
		// Hoist closes the socket as soon as the frame's header says it is
		// too big, without reading the rest: when the frame has not all
		// left the client's socket buffer by then, the kernel resets the
		// connection and the write fails instead.
		if !errors.Is(err, syscall.ECONNRESET) && !errors.Is(err, syscall.EPIPE) {
			t.Fatalf("writing an oversized frame: %v", err)
		}
		return
	}
	if err := a.closed(); websocket.CloseStatus(err) != websocket.StatusMessageTooBig {
		t.Errorf("an oversized frame: %v", err)
	}
}

package cluster_test

import (
	"context"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	gl "github.com/aws/aws-sdk-go-v2/service/gamelift"
	"github.com/aws/aws-sdk-go-v2/service/gamelift/types"
	"github.com/coder/websocket"

	"github.com/hoistgg/hoist/internal/agentproto"
	"github.com/hoistgg/hoist/internal/ids"
	"github.com/hoistgg/hoist/internal/wsrpc"
)

// testAgent is a GameLift Agent of an Anywhere compute, as the tests
// speak it: it heartbeats and keeps every message Hoist sends it.
type testAgent struct {
	peer *wsrpc.Peer
	mu   sync.Mutex
	got  []wsrpc.Request
}

// dialAgent connects an agent for the compute to endpoint (a replica's
// /agent); it is closed when the test ends.
func dialAgent(ctx context.Context, t *testing.T, endpoint, fleetID, compute, token string) *testAgent {
	t.Helper()
	q := url.Values{agentproto.ParamFleetID: {fleetID}, agentproto.ParamComputeName: {compute},
		agentproto.ParamAuthorization: {token}}
	ws, _, err := websocket.Dial(ctx, endpoint+"?"+q.Encode(), nil)
	if err != nil {
		t.Fatalf("agent connection: %v", err)
	}
	a := &testAgent{}
	a.peer = wsrpc.New(ws, wsrpc.Config{NewID: ids.UUID, Now: time.Now,
		Handler: func(_ context.Context, r *wsrpc.Request) (any, error) {
			a.mu.Lock()
			a.got = append(a.got, *r)
			a.mu.Unlock()
			return struct{}{}, nil
		}})
	done := make(chan struct{})
	go func() { _ = a.peer.Run(context.Background()); close(done) }()
	t.Cleanup(func() { a.peer.Close(websocket.StatusNormalClosure, ""); <-done })
	return a
}

// heartbeat sends a heartbeat listing processes.
func (a *testAgent) heartbeat(ctx context.Context, t *testing.T, processes ...string) {
	t.Helper()
	var out agentproto.SendHeartbeatResponse
	if err := a.peer.Call(ctx, agentproto.ActionSendHeartbeat, agentproto.SendHeartbeatRequest{Status: agentproto.StatusActive,
		ProcessList: append([]string{}, processes...), HeartbeatTimeMillis: time.Now().UnixMilli()}, &out); err != nil {
		t.Fatalf("heartbeat: %v", err)
	}
}

// has reports whether the agent was sent action naming process.
func (a *testAgent) has(action, process string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, r := range a.got {
		var m struct{ ProcessId string }
		if r.Action == action && r.Decode(&m) == nil && m.ProcessId == process {
			return true
		}
	}
	return false
}

// agentOnB: the agent of a compute is connected to B and its game server
// to C. C's NotifyProcessRegistered and A's ForceExitServerProcess
// (TerminateGameSession FORCE_TERMINATE through A) both reach the agent
// through B.
func agentOnB(ctx context.Context, t *testing.T, a, b *gl.Client, fleetID, endpointC string) {
	reg, err := b.RegisterCompute(ctx, &gl.RegisterComputeInput{FleetId: aws.String(fleetID), ComputeName: aws.String("compute-agent"),
		IpAddress: aws.String("127.0.0.1"), Location: aws.String("custom-msgs")})
	if err != nil {
		t.Fatal(err)
	}
	tok, err := b.GetComputeAuthToken(ctx, &gl.GetComputeAuthTokenInput{FleetId: aws.String(fleetID), ComputeName: aws.String("compute-agent")})
	if err != nil {
		t.Fatal(err)
	}
	token := aws.ToString(tok.AuthToken)
	ag := dialAgent(ctx, t, aws.ToString(reg.Compute.GameLiftAgentEndpoint), fleetID, "compute-agent", token)
	ag.heartbeat(ctx, t)
	gs := startGameServer(t, endpointC, token, fleetID, "compute-agent", "process-agent")
	waitFor(ctx, t, "the game server ready", func() (bool, error) { return gs.logged("msg=ready"), nil })
	ag.heartbeat(ctx, t, "process-agent")
	waitFor(ctx, t, "NotifyProcessRegistered from C at the agent on B", func() (bool, error) {
		return ag.has(agentproto.ActionNotifyProcessRegistered, "process-agent"), nil
	})
	id := createActive(ctx, t, a, fleetID, "custom-msgs")
	if _, err := a.TerminateGameSession(ctx, &gl.TerminateGameSessionInput{GameSessionId: aws.String(id),
		TerminationMode: types.TerminationModeForceTerminate}); err != nil {
		t.Fatal(err)
	}
	waitFor(ctx, t, "ForceExitServerProcess from A at the agent on B", func() (bool, error) {
		return ag.has(agentproto.ActionForceExitServerProcess, "process-agent"), nil
	})
}

package sdkconn_test

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/hoistgg/hoist/e2e/sdkclient"
	"github.com/hoistgg/hoist/internal/api"
	"github.com/hoistgg/hoist/internal/hosting"
	"github.com/hoistgg/hoist/internal/sdkconn"
	"github.com/hoistgg/hoist/internal/sdkconn/sdkconntest"
)

const gsID = "arn:aws:gamelift:us-west-2::gamesession/fleet-1a2b3c/gs-1"

// TestActions sends every action of the protocol with the fields the SDKs
// send, and checks the ProcessAPI call it makes and the reply.
func TestActions(t *testing.T) {
	tests := map[string]struct {
		action     string
		fields     map[string]any
		call       sdkconntest.Call // Method "" when no call is expected
		result     map[string]any   // what the fake answers
		apiErr     error
		wantStatus int
		wantMsg    string // substring of ErrorMessage
	}{
		"ActivateServerProcess": {action: "ActivateServerProcess",
			fields: map[string]any{"SdkVersion": "5.6.0", "SdkLanguage": "Go", "Port": 7777, "LogPaths": []string{"/local/game/logs"}},
			call:   sdkconntest.Call{Method: "ProcessReady", Port: 7777, LogPaths: []string{"/local/game/logs"}}},
		"ActivateServerProcess LogPaths null": {action: "ActivateServerProcess",
			fields: map[string]any{"Port": 7777, "LogPaths": nil},
			call:   sdkconntest.Call{Method: "ProcessReady", Port: 7777}},
		"ActivateServerProcess Port a string": {action: "ActivateServerProcess",
			fields: map[string]any{"Port": "7777"}, wantStatus: 400, wantMsg: "Port"},
		"ActivateServerProcess refused": {action: "ActivateServerProcess", fields: map[string]any{"Port": 0},
			call:   sdkconntest.Call{Method: "ProcessReady"},
			apiErr: &hosting.SDKError{Status: 400, Message: "Port 0 is out of range"}, wantStatus: 400, wantMsg: "out of range"},
		"HeartbeatServerProcess healthy": {action: "HeartbeatServerProcess", fields: map[string]any{"HealthStatus": true},
			call: sdkconntest.Call{Method: "Heartbeat", Healthy: true}},
		"HeartbeatServerProcess unhealthy": {action: "HeartbeatServerProcess", fields: map[string]any{"HealthStatus": false},
			call: sdkconntest.Call{Method: "Heartbeat"}},
		"ActivateGameSession": {action: "ActivateGameSession", fields: map[string]any{"GameSessionId": gsID},
			call: sdkconntest.Call{Method: "ActivateGameSession", GameSessionID: gsID}},
		"ActivateGameSession of another process": {action: "ActivateGameSession", fields: map[string]any{"GameSessionId": gsID},
			call:   sdkconntest.Call{Method: "ActivateGameSession", GameSessionID: gsID},
			apiErr: &hosting.SDKError{Status: 403, Message: "not your game session"}, wantStatus: 403, wantMsg: "not your"},
		"ActivateGameSession without id": {action: "ActivateGameSession", wantStatus: 400, wantMsg: "GameSessionId is required"},
		"AcceptPlayerSession": {action: "AcceptPlayerSession", fields: map[string]any{"GameSessionId": gsID, "PlayerSessionId": "psess-1"},
			call: sdkconntest.Call{Method: "AcceptPlayerSession", GameSessionID: gsID, PlayerSessionID: "psess-1"}},
		"AcceptPlayerSession without player session": {action: "AcceptPlayerSession", fields: map[string]any{"GameSessionId": gsID},
			wantStatus: 400, wantMsg: "PlayerSessionId"},
		"RemovePlayerSession": {action: "RemovePlayerSession", fields: map[string]any{"GameSessionId": gsID, "PlayerSessionId": "psess-1"},
			call: sdkconntest.Call{Method: "RemovePlayerSession", GameSessionID: gsID, PlayerSessionID: "psess-1"}},
		"UpdatePlayerSessionCreationPolicy": {action: "UpdatePlayerSessionCreationPolicy",
			fields: map[string]any{"GameSessionId": gsID, "PlayerSessionPolicy": "DENY_ALL"},
			call:   sdkconntest.Call{Method: "UpdatePlayerSessionCreationPolicy", GameSessionID: gsID, Policy: api.PlayerSessionCreationPolicyDenyAll}},
		"UpdatePlayerSessionCreationPolicy bad policy": {action: "UpdatePlayerSessionCreationPolicy",
			fields: map[string]any{"GameSessionId": gsID, "PlayerSessionPolicy": "SOMETIMES"}, wantStatus: 400, wantMsg: "ACCEPT_ALL"},
		"DescribePlayerSessions": {action: "DescribePlayerSessions",
			fields: map[string]any{"GameSessionId": gsID, "PlayerSessionStatusFilter": "ACTIVE", "NextToken": "t", "Limit": 10},
			call: sdkconntest.Call{Method: "DescribePlayerSessions", Describe: hosting.DescribePlayerSessionsRequest{
				GameSessionID: gsID, StatusFilter: "ACTIVE", NextToken: "t", Limit: 10}},
			result: map[string]any{"NextToken": "n", "PlayerSessions": []any{map[string]any{"PlayerSessionId": "psess-1"}}}},
		"DescribePlayerSessions by player": {action: "DescribePlayerSessions", fields: map[string]any{"PlayerId": "p1"},
			call:   sdkconntest.Call{Method: "DescribePlayerSessions", Describe: hosting.DescribePlayerSessionsRequest{PlayerID: "p1"}},
			result: map[string]any{"PlayerSessions": []any{}}},
		"DescribePlayerSessions Limit too big": {action: "DescribePlayerSessions",
			fields: map[string]any{"PlayerId": "p1", "Limit": 1e12}, wantStatus: 400, wantMsg: "Limit"},
		"StartMatchBackfill": {action: "StartMatchBackfill",
			fields:     map[string]any{"GameSessionArn": gsID, "MatchmakingConfigurationArn": "arn:x", "Players": []any{}},
			wantStatus: 400, wantMsg: "FlexMatch"},
		"StopMatchBackfill": {action: "StopMatchBackfill", fields: map[string]any{"TicketId": "t"},
			wantStatus: 400, wantMsg: "FlexMatch"},
		"TerminateServerProcess": {action: "TerminateServerProcess",
			call: sdkconntest.Call{Method: "ProcessEnding"}},
		"GetComputeCertificate": {action: "GetComputeCertificate",
			call:   sdkconntest.Call{Method: "GetComputeCertificate"},
			result: map[string]any{"CertificatePath": "/local/certificates/cert.pem", "ComputeName": computeID}},
		"GetFleetRoleCredentials": {action: "GetFleetRoleCredentials",
			fields: map[string]any{"RoleArn": "arn:aws:iam::123456789012:role/r", "RoleSessionName": "s"},
			call:   sdkconntest.Call{Method: "GetFleetRoleCredentials", RoleArn: "arn:aws:iam::123456789012:role/r", RoleSessionName: "s"},
			apiErr: &hosting.SDKError{Status: 400, Message: "Hoist does not issue AWS credentials"}, wantStatus: 400, wantMsg: "credentials"},
		"internal error": {action: "HeartbeatServerProcess", fields: map[string]any{"HealthStatus": true},
			call:   sdkconntest.Call{Method: "Heartbeat", Healthy: true},
			apiErr: errors.New("disk on fire"), wantStatus: 500, wantMsg: "internal error"},
		"unknown action":                      {action: "DoSomething", wantStatus: 400, wantMsg: "unknown Action"},
		"a service message sent by a process": {action: "CreateGameSession", wantStatus: 400, wantMsg: "unknown Action"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			fake := &sdkconntest.API{Hook: func(_ context.Context, c sdkconntest.Call) (map[string]any, error) {
				if c.Method == tc.call.Method {
					return tc.result, tc.apiErr
				}
				return nil, nil
			}}
			e, logs := start(t, sdkconn.Config{API: fake})
			c := dial(t, e, "proc-1", sdkclient.Options{})
			ctx, cancel := context.WithTimeout(context.Background(), wait)
			defer cancel()
			reply, err := c.Call(ctx, tc.action, tc.fields)
			checkReply(t, reply, err, tc.action, tc.wantStatus, tc.wantMsg)
			for k, v := range tc.result {
				if got := reply.Fields()[k]; !sameJSON(got, v) {
					t.Errorf("reply %s = %v, want %v", k, got, v)
				}
			}
			calls := callsExcept(fake.Calls(), "Connected")
			if tc.call.Method == "" {
				if len(calls) != 0 {
					t.Fatalf("unexpected calls %+v", calls)
				}
				return
			}
			if len(calls) != 1 {
				t.Fatalf("calls %+v, want one %s", calls, tc.call.Method)
			}
			got := calls[0]
			if got.Conn.ProcessID != "proc-1" || got.Conn.FleetID != fleetID || got.Conn.ComputeName != computeID {
				t.Errorf("call on behalf of %+v", got.Conn)
			}
			got.Conn = hosting.Conn{}
			if !reflect.DeepEqual(got, tc.call) {
				t.Errorf("call %+v, want %+v", got, tc.call)
			}
			if tc.wantStatus == 500 && !strings.Contains(logs.String(), "disk on fire") {
				t.Error("the internal error was not logged")
			}
			if c.Dropped() != 0 {
				t.Errorf("the SDK would have dropped %d frames", c.Dropped())
			}
		})
	}
}

func checkReply(t *testing.T, reply *sdkclient.Frame, err error, action string, wantStatus int, wantMsg string) {
	t.Helper()
	if wantStatus == 0 {
		wantStatus = 200
	}
	if reply == nil {
		t.Fatalf("no reply: %v", err)
	}
	if reply.Action != action || reply.RequestID == "" {
		t.Errorf("reply echoes Action %q RequestId %q", reply.Action, reply.RequestID)
	}
	if reply.StatusCode != wantStatus {
		t.Fatalf("StatusCode %d (%s), want %d", reply.StatusCode, reply.ErrorMessage, wantStatus)
	}
	if wantStatus == 200 {
		if err != nil || reply.Fields()["ErrorMessage"] != nil {
			t.Errorf("success with err %v, fields %v", err, reply.Fields())
		}
		return
	}
	var se *sdkclient.StatusError
	if !errors.As(err, &se) || !strings.Contains(reply.ErrorMessage, wantMsg) {
		t.Errorf("err %v, ErrorMessage %q, want one containing %q", err, reply.ErrorMessage, wantMsg)
	}
}

func callsExcept(calls []sdkconntest.Call, method string) []sdkconntest.Call {
	var out []sdkconntest.Call
	for _, c := range calls {
		if c.Method != method {
			out = append(out, c)
		}
	}
	return out
}

func sameJSON(a, b any) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return string(ja) == string(jb)
}

// TestReplyEnvelopeWins checks that result fields cannot overwrite the
// envelope.
func TestReplyEnvelopeWins(t *testing.T) {
	fake := &sdkconntest.API{Hook: func(context.Context, sdkconntest.Call) (map[string]any, error) {
		return map[string]any{"Action": "X", "RequestId": "Y", "StatusCode": 500, "ErrorMessage": "Z", "ComputeName": "c"}, nil
	}}
	e, _ := start(t, sdkconn.Config{API: fake})
	c := dial(t, e, "proc-1", sdkclient.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	reply, err := c.Call(ctx, "GetComputeCertificate", nil)
	checkReply(t, reply, err, "GetComputeCertificate", 200, "")
	if reply.Fields()["ComputeName"] != "c" {
		t.Errorf("fields %v", reply.Fields())
	}
}

// TestFramesThatCannotBeAnswered sends frames without a usable RequestId
// (dropped, the socket stays up) and frames with one (answered 400).
func TestFramesThatCannotBeAnswered(t *testing.T) {
	e, logs := start(t, sdkconn.Config{})
	c := dial(t, e, "proc-1", sdkclient.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	for _, raw := range []string{`not json`, `[1,2]`, `null`, `{"Action":"HeartbeatServerProcess"}`,
		`{"Action":7,"RequestId":""}`, `{"RequestId":5}`, "\xff\xfe"} {
		if err := c.SendRaw(ctx, []byte(raw)); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.SendBinary(ctx, []byte(`{"Action":"HeartbeatServerProcess","RequestId":"b"}`)); err != nil {
		t.Fatal(err)
	}
	// Answerable: a RequestId but no Action, or a field of the wrong type.
	if err := c.SendRaw(ctx, []byte(`{"RequestId":"r1"}`)); err != nil {
		t.Fatal(err)
	}
	reply, err := c.Call(ctx, "HeartbeatServerProcess", map[string]any{"HealthStatus": "yes"})
	checkReply(t, reply, err, "HeartbeatServerProcess", 400, "HealthStatus must be a boolean")
	// The socket still works, and nothing was passed on.
	reply, err = c.Call(ctx, "HeartbeatServerProcess", map[string]any{"HealthStatus": true})
	checkReply(t, reply, err, "HeartbeatServerProcess", 200, "")
	if n := e.API.Count("Heartbeat"); n != 1 {
		t.Errorf("%d heartbeats passed on, want 1", n)
	}
	// The 400 for r1 has nobody waiting for it: the client counts it.
	if c.Dropped() != 1 {
		t.Errorf("client dropped %d frames, want 1 (the 400 to r1)", c.Dropped())
	}
	if strings.Count(logs.String(), "level=WARN msg=\"sdk: frame dropped") != 1 {
		t.Errorf("want exactly one warning for dropped frames:\n%s", logs.String())
	}
}

// TestOversizedFrame closes the socket with 1009.
func TestOversizedFrame(t *testing.T) {
	e, _ := start(t, sdkconn.Config{MaxMessageBytes: 1024})
	c := dial(t, e, "proc-1", sdkclient.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	big := `{"Action":"HeartbeatServerProcess","RequestId":"r","Pad":"` + strings.Repeat("x", 2048) + `"}`
	c.SendRaw(ctx, []byte(big))
	select {
	case <-c.Done():
	case <-ctx.Done():
		t.Fatal("socket not closed")
	}
	if code := c.CloseCode(); code != 1009 {
		t.Errorf("close code %d, want 1009", code)
	}
	d := e.API.WaitMethod(t, wait, "Disconnected", "proc-1", 1)
	if d.Normal {
		t.Error("an oversized frame counted as a normal close")
	}
}

// TestCallTimeout: a ProcessAPI call that outlives CallTimeout is answered
// 500 and the socket keeps working.
func TestCallTimeout(t *testing.T) {
	fake := &sdkconntest.API{Hook: func(ctx context.Context, c sdkconntest.Call) (map[string]any, error) {
		if c.Method == "Heartbeat" && !c.Healthy {
			<-ctx.Done()
			return nil, ctx.Err()
		}
		return nil, nil
	}}
	e, _ := start(t, sdkconn.Config{API: fake, CallTimeout: 50 * time.Millisecond})
	c := dial(t, e, "proc-1", sdkclient.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	reply, err := c.Call(ctx, "HeartbeatServerProcess", map[string]any{"HealthStatus": false})
	checkReply(t, reply, err, "HeartbeatServerProcess", 500, "internal error")
	reply, err = c.Call(ctx, "HeartbeatServerProcess", map[string]any{"HealthStatus": true})
	checkReply(t, reply, err, "HeartbeatServerProcess", 200, "")
}

package anywhere

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/hoistgg/hoist/internal/agentproto"
	"github.com/hoistgg/hoist/internal/wsrpc"
)

func TestTerminationReason(t *testing.T) {
	for _, tc := range []struct {
		stop   string
		code   int
		signal string
		want   string
	}{
		{"", 0, "", agentproto.ReasonNormalTermination},
		{"", 3, "", agentproto.ReasonCrashed},
		{"", -1, "killed", agentproto.ReasonCrashed},
		{agentproto.ReasonComputeShuttingDown, -1, "killed", agentproto.ReasonComputeShuttingDown},
		{agentproto.ReasonForceTerminated, -1, "killed", agentproto.ReasonForceTerminated},
		{"something of Hoist's", 0, "", agentproto.ReasonNormalTermination},
	} {
		if got := terminationReason(tc.stop, tc.code, tc.signal); got != tc.want {
			t.Errorf("terminationReason(%q, %d, %q) = %s, want %s", tc.stop, tc.code, tc.signal, got, tc.want)
		}
	}
}

// TestStatusFollowsTheService: the agent's status moves as the Java
// agent's SendHeartbeatHandler moves it.
func TestStatusFollowsTheService(t *testing.T) {
	for _, tc := range []struct {
		from, reply, want string
		start             bool
		order             *terminateOrder
	}{
		{agentproto.StatusInitializing, agentproto.StatusInitializing, agentproto.StatusActivating, true, nil},
		{agentproto.StatusInitializing, agentproto.StatusActive, agentproto.StatusActive, true, nil},
		{agentproto.StatusActivating, agentproto.StatusInitializing, agentproto.StatusActivating, true, nil},
		{agentproto.StatusActivating, agentproto.StatusActive, agentproto.StatusActive, true, nil},
		{agentproto.StatusActive, agentproto.StatusTerminating, agentproto.StatusActive, false, &terminateOrder{now: false}},
		{agentproto.StatusActive, agentproto.StatusTerminated, agentproto.StatusActive, false, &terminateOrder{now: true}},
		{agentproto.StatusTerminating, agentproto.StatusActive, agentproto.StatusTerminating, false, nil},
	} {
		a := &Agent{status: tc.from, terminate: make(chan terminateOrder, 1)}
		start := a.applyStatus(tc.reply)
		var order *terminateOrder
		select {
		case o := <-a.terminate:
			order = &o
		default:
		}
		if a.status != tc.want || start != tc.start || (order == nil) != (tc.order == nil) || (order != nil && order.now != tc.order.now) {
			t.Errorf("%s + reply %s: status %s, start %v, order %+v; want %s, %v, %+v", tc.from, tc.reply, a.status, start, order, tc.want, tc.start, tc.order)
		}
	}
}

// TestUnregisteredCount: a process listed unregistered in 8 replies in a
// row is to be ended; a gap starts its count again.
func TestUnregisteredCount(t *testing.T) {
	a := &Agent{unregistered: map[string]int{}}
	var ended []string
	for i := range 8 {
		list := []string{"a"}
		if i != 3 {
			list = append(list, "b")
		}
		ended = append(ended, a.countUnregistered(list)...)
	}
	if !slices.Equal(ended, []string{"a"}) {
		t.Errorf("ended %v, want [a] (b missed a reply)", ended)
	}
}

func TestDecodeServiceMessage(t *testing.T) {
	frame := func(action string, fields any) *wsrpc.Request {
		b, _ := wsrpc.Encode(action, "id", 200, "", fields)
		return &wsrpc.Request{Action: action, Message: true, Frame: b}
	}
	m, err := decodeServiceMessage(frame(agentproto.ActionForceExitServerProcess, map[string]any{"ProcessId": "p", "TerminationReason": "NOPE"}))
	if err != nil || m.processID != "p" || m.reason != agentproto.ReasonNormalTermination {
		t.Errorf("ForceExitServerProcess with an unknown reason: %+v %v", m, err)
	}
	for _, ep := range []string{"", "http://x/agent", "wss:///agent"} {
		if _, err := decodeServiceMessage(frame(agentproto.ActionRefreshConnection, map[string]any{"RefreshConnectionEndpoint": ep, "AuthToken": "t"})); err == nil {
			t.Errorf("RefreshConnection to %q accepted", ep)
		}
	}
	m, err = decodeServiceMessage(frame(agentproto.ActionRefreshConnection, map[string]any{"RefreshConnectionEndpoint": "wss://h:1/agent",
		"AuthToken": "t", "ExpirationTime": "1702427749"}))
	if err != nil || m.refresh.ExpirationTime != 1702427749 {
		t.Errorf("RefreshConnection: %+v %v", m, err)
	}
}

// FuzzDecodeServiceMessage: no frame of the service makes the agent's
// decoder panic, and what it accepts keeps its promises.
func FuzzDecodeServiceMessage(f *testing.F) {
	for _, s := range []string{
		`{"Action":"ForceExitServerProcess","ProcessId":"p","TerminationReason":"SERVER_PROCESS_CRASHED"}`,
		`{"Action":"RefreshConnection","RefreshConnectionEndpoint":"wss://h/agent","AuthToken":"t","ExpirationTime":1}`,
		`{"Action":"SendHeartbeat","Status":"Active","UnhealthyProcesses":["a"],"UnregisteredProcesses":null}`,
		`{"Action":"StartComputeTermination"}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var head struct{ Action string }
		_ = json.Unmarshal([]byte(s), &head)
		m, err := decodeServiceMessage(&wsrpc.Request{Action: head.Action, Message: true, Frame: []byte(s)})
		if err != nil {
			return
		}
		if m.reason != "" && !agentproto.KnownReason(m.reason) {
			t.Fatalf("reason %q", m.reason)
		}
		if m.refresh != nil && (m.refresh.AuthToken == "" || !strings.HasPrefix(m.refresh.RefreshConnectionEndpoint, "ws")) {
			t.Fatalf("refresh %+v", m.refresh)
		}
	})
}

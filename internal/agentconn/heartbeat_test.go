package agentconn

import (
	"slices"
	"testing"
	"time"

	"github.com/hoistgg/hoist/internal/agentproto"
	"github.com/hoistgg/hoist/internal/hosting"
)

func proc(state hosting.ProcessState, reason string) *hosting.Process {
	return &hosting.Process{State: state, EndReason: reason}
}

func TestDecideHeartbeat(t *testing.T) {
	procs := map[string]*hosting.Process{
		"ready":     proc(hosting.ProcessActive, ""),
		"launching": proc(hosting.ProcessLaunching, ""),
		"unhealthy": proc(hosting.ProcessTerminating, "SERVER_PROCESS_TERMINATED_UNHEALTHY"),
		"ending":    proc(hosting.ProcessTerminating, "TerminateGameSession"),
		"ended":     proc(hosting.ProcessTerminated, "exited"),
		"unknown":   nil,
	}
	tests := map[string]struct {
		status     string
		list, prev []string
		gone       bool
		want       heartbeatDecision
	}{
		"starting": {status: agentproto.StatusInitializing,
			want: heartbeatDecision{Reply: reply(agentproto.StatusInitializing, nil, nil)}},
		"lists": {status: agentproto.StatusActive, list: []string{"ready", "launching", "unhealthy", "ending", "ended", "unknown"},
			want: heartbeatDecision{Reply: reply(agentproto.StatusActive, []string{"unhealthy", "ended"}, []string{"launching", "unknown"})}},
		"no process ready": {status: agentproto.StatusActive, list: []string{"launching"},
			want: heartbeatDecision{Reply: reply(agentproto.StatusInitializing, nil, []string{"launching"})}},
		"missing": {status: agentproto.StatusActive, prev: []string{"ready", "ending", "ended", "unknown", "launching"}, list: []string{"launching"},
			want: heartbeatDecision{Reply: reply(agentproto.StatusInitializing, nil, []string{"launching"}), Ended: []ended{
				{ID: "ready", Code: agentproto.ReasonCrashed, Reason: reasonMissing},
				{ID: "ending", Reason: "ended after Hoist asked it to (TerminateGameSession)"}}}},
		"terminating": {status: agentproto.StatusTerminating, list: []string{"ready", "launching", "ending"},
			want: heartbeatDecision{Reply: reply(agentproto.StatusTerminating, nil, []string{"launching"}), EndAll: []string{"ready", "launching"}}},
		"interrupted": {status: agentproto.StatusInterrupted, list: []string{"ready"},
			want: heartbeatDecision{Reply: reply(agentproto.StatusTerminating, nil, nil), EndAll: []string{"ready"}}},
		"terminated": {status: agentproto.StatusTerminated, list: []string{"ready"},
			want: heartbeatDecision{Reply: reply(agentproto.StatusTerminated, nil, nil), EndAll: []string{"ready"}, Deregister: true}},
		"deregistered": {status: agentproto.StatusActive, list: []string{"ready"}, gone: true,
			want: heartbeatDecision{Reply: reply(agentproto.StatusTerminating, nil, nil)}},
		"terminated, deregistered": {status: agentproto.StatusTerminated, gone: true,
			want: heartbeatDecision{Reply: reply(agentproto.StatusTerminated, nil, nil)}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			req := &agentproto.SendHeartbeatRequest{Status: tc.status, ProcessList: tc.list}
			got := decideHeartbeat(heartbeatInput{Req: req, ComputeRegistered: !tc.gone, Previous: tc.prev, Processes: procs})
			if !equalDecision(got, tc.want) {
				t.Errorf("got  %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

func reply(status string, unhealthy, unregistered []string) agentproto.SendHeartbeatResponse {
	if unhealthy == nil {
		unhealthy = []string{}
	}
	if unregistered == nil {
		unregistered = []string{}
	}
	return agentproto.SendHeartbeatResponse{Status: status, UnhealthyProcesses: unhealthy, UnregisteredProcesses: unregistered}
}

func equalDecision(a, b heartbeatDecision) bool {
	return a.Reply.Status == b.Reply.Status && slices.Equal(a.Reply.UnhealthyProcesses, b.Reply.UnhealthyProcesses) &&
		slices.Equal(a.Reply.UnregisteredProcesses, b.Reply.UnregisteredProcesses) && slices.Equal(a.Ended, b.Ended) &&
		slices.Equal(a.EndAll, b.EndAll) && a.Deregister == b.Deregister && a.Reply.UnhealthyProcesses != nil &&
		a.Reply.UnregisteredProcesses != nil
}

func TestRefreshAt(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		life, before, want time.Duration
	}{
		{3 * time.Hour, 15 * time.Minute, 3*time.Hour - 15*time.Minute}, // the Java agent's own margin
		{10 * time.Second, 15 * time.Minute, 5 * time.Second},           // at most half the remaining life
		{-time.Second, 15 * time.Minute, 0},                             // expired: at once
	} {
		if got := refreshAt(now, now.Add(tc.life), tc.before).Sub(now); got != tc.want {
			t.Errorf("life %s: refresh after %s, want %s", tc.life, got, tc.want)
		}
	}
}

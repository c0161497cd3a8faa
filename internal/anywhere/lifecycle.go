package anywhere

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/hoistgg/hoist/internal/agentproto"
)

// heartbeatTimeout bounds one heartbeat's round trip.
const heartbeatTimeout = 30 * time.Second

// heartbeats sends a heartbeat every HeartbeatInterval, and at once each
// time the socket (re)connects (so that the service reconciles at once),
// until ctx ends.
func (a *Agent) heartbeats(ctx context.Context) {
	t := time.NewTicker(a.cfg.HeartbeatInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-a.conns.connected:
			t.Reset(a.cfg.HeartbeatInterval)
		}
		a.heartbeat(ctx)
	}
}

// heartbeat sends one heartbeat and acts on its reply; it also gives the
// processes launched from now on the current token.
func (a *Agent) heartbeat(ctx context.Context) {
	if token, err := a.tokens.get(ctx); err == nil {
		a.provider.UpdateEnv(a.cfg.ComputeName, a.processEnv(token))
	}
	r, err := a.sendHeartbeat(ctx)
	if err != nil {
		a.log.Info("agent: heartbeat failed", "err", err)
		return
	}
	a.onHeartbeatReply(ctx, r)
}

// sendHeartbeat sends the agent's status and processes.
func (a *Agent) sendHeartbeat(ctx context.Context) (*agentproto.SendHeartbeatResponse, error) {
	a.mu.Lock()
	req := agentproto.SendHeartbeatRequest{Status: a.status, ProcessList: a.processList(), HeartbeatTimeMillis: time.Now().UnixMilli()}
	a.mu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, heartbeatTimeout)
	defer cancel()
	var r agentproto.SendHeartbeatResponse
	if err := a.conns.call(ctx, agentproto.ActionSendHeartbeat, req, &r); err != nil {
		return nil, err
	}
	return &r, nil
}

// processList returns the running processes, sorted; a.mu held.
func (a *Agent) processList() []string {
	out := make([]string, 0, len(a.running))
	for id := range a.running {
		out = append(out, id)
	}
	slices.Sort(out)
	return out
}

// onHeartbeatReply acts on the service's answer, as the Java agent's
// SendHeartbeatHandler does: the compute's status (Terminated: terminate
// at once; Terminating: gracefully; Active: active; Initializing while
// initializing: start the processes), then the processes to kill.
func (a *Agent) onHeartbeatReply(ctx context.Context, r *agentproto.SendHeartbeatResponse) {
	if a.applyStatus(r.Status) {
		a.startProcesses(ctx)
	}
	for _, id := range r.UnhealthyProcesses {
		a.kill(id, agentproto.ReasonTerminatedUnhealthy)
	}
	for _, id := range a.countUnregistered(r.UnregisteredProcesses) {
		a.kill(id, agentproto.ReasonSDKInitTimeout)
	}
}

// applyStatus moves the agent's status after the service's, and reports
// whether the processes should be started (the agent is no longer
// Initializing, and not terminating).
func (a *Agent) applyStatus(service string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	switch cur := a.status; {
	case cur == agentproto.StatusTerminating || cur == agentproto.StatusTerminated:
		return false
	case service == agentproto.StatusTerminated:
		a.orderTermination(true, "the service answered Terminated")
		return false
	case service == agentproto.StatusTerminating:
		a.orderTermination(false, "the service answered Terminating")
		return false
	case service == agentproto.StatusActive:
		a.status = agentproto.StatusActive
	case service == agentproto.StatusInitializing && cur == agentproto.StatusInitializing:
		a.status = agentproto.StatusActivating
	}
	return a.status != agentproto.StatusInitializing
}

// countUnregistered counts the heartbeats in a row that listed each
// process unregistered, and returns those listed MaxUnregisteredHeartbeats
// times (their count starts again).
func (a *Agent) countUnregistered(ids []string) []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	next := map[string]int{}
	var out []string
	for _, id := range ids {
		n := a.unregistered[id] + 1
		if n >= agentproto.MaxUnregisteredHeartbeats {
			out = append(out, id)
			continue
		}
		next[id] = n
	}
	a.unregistered = next
	return out
}

// kill kills one of the agent's processes at once.
func (a *Agent) kill(processID, reason string) {
	if err := a.provider.KillProcess(processID, reason); err != nil {
		a.log.Info("agent: no such process to kill", "process", processID, "reason", reason)
		return
	}
	a.log.Info("agent: killing a process", "process", processID, "reason", reason)
}

// terminateCompute ends the compute: the Terminating heartbeat (Hoist
// asks each process to end), then the processes end (killed after
// TerminateGrace, or at once when ordered so), a last Terminated heartbeat,
// and DeregisterCompute.
func (a *Agent) terminateCompute(order terminateOrder) {
	a.log.Info("agent: terminating", "reason", order.reason, "now", order.now)
	ctx, cancel := context.WithTimeout(context.Background(), a.cfg.TerminateGrace+time.Minute)
	defer cancel()
	a.mu.Lock()
	if a.status != agentproto.StatusTerminated {
		a.status = agentproto.StatusTerminating
	}
	started := a.started
	a.mu.Unlock()
	a.tellTerminating(ctx)
	if started && !order.now {
		if err := a.provider.StopInstance(a.cfg.ComputeName, agentproto.ReasonComputeShuttingDown); err == nil {
			select {
			case <-a.stopped:
			case <-ctx.Done():
			}
		}
	}
	_ = a.provider.Close() // what is left: killed after the provider's ShutdownGrace
	a.mu.Lock()
	a.status = agentproto.StatusTerminated
	a.mu.Unlock()
	if _, err := a.sendHeartbeat(ctx); err != nil {
		a.log.Info("agent: the last heartbeat failed", "err", err)
	}
	a.deregister(ctx)
}

// tellTerminating sends the Terminating heartbeat once: Hoist then sends
// each process TerminateProcess over the SDK.
func (a *Agent) tellTerminating(ctx context.Context) {
	a.told.Do(func() {
		if _, err := a.sendHeartbeat(ctx); err != nil {
			a.log.Warn("agent: the Terminating heartbeat failed: processes will be killed after the grace period", "err", err)
		}
	})
}

// deregister calls DeregisterCompute (a compute already gone is no error).
func (a *Agent) deregister(ctx context.Context) {
	err := retry(ctx, a.log, "DeregisterCompute", 3, func() error {
		err := a.gl.deregisterCompute(ctx, a.cfg.FleetID, a.cfg.ComputeName)
		var nf *notFound
		if errors.As(err, &nf) {
			return nil
		}
		return err
	})
	if err != nil {
		a.log.Error("agent: DeregisterCompute failed", "err", err)
		return
	}
	a.log.Info("agent: compute deregistered", "fleet", a.cfg.FleetID, "compute", a.cfg.ComputeName)
}

// terminationReason is the TerminationReason of a process's end, as the
// Java agent gives it: the reason the agent ended it for, else
// NORMAL_TERMINATION for an exit with status 0 and SERVER_PROCESS_CRASHED
// for anything else.
func terminationReason(stopReason string, exitCode int, signal string) string {
	switch {
	case agentproto.KnownReason(stopReason):
		return stopReason
	case stopReason != "":
		return agentproto.ReasonNormalTermination
	case exitCode == 0 && signal == "":
		return agentproto.ReasonNormalTermination
	}
	return agentproto.ReasonCrashed
}

// notifyTermination reports a process's end, retrying (while the socket
// reconnects) for up to a minute; Hoist learns it from the next heartbeat
// otherwise.
func (a *Agent) notifyTermination(processID, reason string) {
	req := agentproto.NotifyServerProcessTerminationRequest{ProcessID: processID, TerminationReason: reason}
	if code := agentproto.EventCode(reason); code != "" {
		req.EventCode = &code
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	err := retry(ctx, a.log, "NotifyServerProcessTermination", 5, func() error {
		err := a.conns.call(ctx, agentproto.ActionNotifyServerProcessTermination, req, nil)
		if se := (*serviceError)(nil); errors.As(err, &se) && se.Status == 400 {
			return permanent(err)
		}
		return err
	})
	if err != nil {
		a.log.Warn("agent: NotifyServerProcessTermination failed", "process", processID, "err", err)
	}
}

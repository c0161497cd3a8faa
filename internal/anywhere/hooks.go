package anywhere

import (
	"context"
	"errors"
	"time"

	"github.com/hoistgg/hoist/internal/agentproto"
	"github.com/hoistgg/hoist/internal/fleets"
	"github.com/hoistgg/hoist/internal/ids"
)

// hooks are the fleets.Hooks of the compute's instance: what the process
// supervisor reports becomes the agent's process list and
// NotifyServerProcessTermination.
type hooks struct{ a *Agent }

var _ fleets.Hooks = hooks{}

// StepStarted: an Anywhere instance has no setup worth reporting.
func (h hooks) StepStarted(context.Context, fleets.Step) {}

// StepFailed: the instance could not be set up (its account, its
// directories): nothing runs, and the agent terminates.
func (h hooks) StepFailed(_ context.Context, step fleets.Step, err error) {
	h.a.log.Error("agent: the compute's processes cannot run", "step", step, "err", err)
	h.a.orderTermination(false, "the processes cannot run: "+err.Error())
}

// ProcessStarted adds a process to the agent's list.
func (h hooks) ProcessStarted(_ context.Context, p fleets.ProcessStart) {
	h.a.mu.Lock()
	h.a.running[p.ProcessID] = true
	h.a.mu.Unlock()
	h.a.log.Info("agent: process started", "process", p.ProcessID, "launchPath", p.LaunchPath)
}

// LaunchFailed reports a process that could not be started, under a
// process ID of its own, as the Java agent does
// (SERVER_PROCESS_INVALID_PATH).
func (h hooks) LaunchFailed(_ context.Context, launchPath string, err error) {
	h.a.log.Warn("agent: a process could not be started", "launchPath", launchPath, "err", err)
	go h.a.notifyTermination(ids.UUID(), agentproto.ReasonInvalidPath)
}

// ProcessExited removes a process from the list and reports its end.
func (h hooks) ProcessExited(_ context.Context, e fleets.ProcessExit) {
	h.a.mu.Lock()
	delete(h.a.running, e.ProcessID)
	delete(h.a.unregistered, e.ProcessID)
	h.a.mu.Unlock()
	reason := terminationReason(e.StopReason, e.ExitCode, e.Signal)
	h.a.log.Info("agent: process ended", "process", e.ProcessID, "exitCode", e.ExitCode, "signal", e.Signal, "reason", reason)
	h.a.notifyTermination(e.ProcessID, reason)
}

// errNotTerminating: the agent asks its processes to end only through
// Hoist, when it terminates; otherwise the supervisor sends SIGTERM.
var errNotTerminating = errors.New("anywhere: processes are asked to end through the service only when the compute terminates")

// AskToEnd: when the compute terminates, Hoist sends each process
// TerminateProcess once told (the Terminating heartbeat); the supervisor
// kills what is left after the grace period.
func (h hooks) AskToEnd(ctx context.Context, _ string, _ time.Time) error {
	h.a.mu.Lock()
	terminating := h.a.status == agentproto.StatusTerminating
	h.a.mu.Unlock()
	if !terminating {
		return errNotTerminating
	}
	h.a.tellTerminating(ctx)
	return nil
}

// InstanceStopped: every process is gone.
func (h hooks) InstanceStopped(context.Context) {
	h.a.stopOnce.Do(func() { close(h.a.stopped) })
}

package metrics

import (
	"context"

	"github.com/hoistgg/hoist/internal/fleets"
)

// WrapHooks returns an instance's hooks (what a compute provider reports
// its events to) with the server processes it launches, fails to launch
// and sees exit counted (fleets.Config.WrapHooks).
func (m *Metrics) WrapHooks(ref fleets.InstanceRef, h fleets.Hooks) fleets.Hooks {
	return &countingHooks{Hooks: h, ref: ref, m: m}
}

// countingHooks are one instance's hooks, counted.
type countingHooks struct {
	fleets.Hooks
	ref fleets.InstanceRef
	m   *Metrics
}

// ProcessStarted counts a launched process.
func (h *countingHooks) ProcessStarted(ctx context.Context, p fleets.ProcessStart) {
	h.m.own.launched.WithLabelValues(h.ref.FleetID, h.ref.Location).Inc()
	h.Hooks.ProcessStarted(ctx, p)
}

// LaunchFailed counts a process that could not be started.
func (h *countingHooks) LaunchFailed(ctx context.Context, launchPath string, err error) {
	h.m.own.launchFailed.WithLabelValues(h.ref.FleetID, h.ref.Location).Inc()
	h.Hooks.LaunchFailed(ctx, launchPath, err)
}

// ProcessExited counts an exited process.
func (h *countingHooks) ProcessExited(ctx context.Context, e fleets.ProcessExit) {
	how := "exit"
	switch {
	case e.Killed:
		how = "killed"
	case e.Signal != "":
		how = "signal"
	}
	h.m.own.exited.WithLabelValues(h.ref.FleetID, h.ref.Location, how).Inc()
	h.Hooks.ProcessExited(ctx, e)
}

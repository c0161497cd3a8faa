package fleets

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/hoistgg/hoist/internal/api"
	"github.com/hoistgg/hoist/internal/store"
)

// recordExit records the event (code) of a server process that ended
// abnormally: its message says how the process ended and quotes the end of
// its output, and its PreSignedLogUrl serves a copy of that output (the
// instance's setup log is not given it: a process may end many times). While
// the process's location is being created, an exit that shows the process
// could not become ready counts against the location's activation
// (decideActivation). The kept copy is recorded as this replica's, so that
// other replicas fetch it from here. The exit is logged too, at WARN.
func (h *instanceHooks) recordExit(ctx context.Context, e ProcessExit, code api.EventCode, outputPath string) {
	out := h.s.takeOutput(h.ref.FleetID, e.ProcessID, outputPath)
	how := exitText(e) + outputText(out)
	msg := fmt.Sprintf("Instance %s (location %s): server process %s %s", h.ref.InstanceID, h.ref.Location, e.ProcessID, how)
	last := fmt.Sprintf("server process %s on instance %s %s", e.ProcessID, h.ref.InstanceID, how)
	logProcess := ""
	if out.Kept {
		logProcess = e.ProcessID
	}
	h.update(ctx, "process exit", func(tx store.Tx, f *fleetRec, now time.Time) (bool, error) {
		ev := h.s.newEvent(f.id(), code, now, msg)
		ev.ProcessLog = logProcess
		if err := putEvent(ctx, tx, ev); err != nil {
			return false, err
		}
		if err := h.s.recordOutputHolder(ctx, tx, h.ref.FleetID, e.ProcessID, out); err != nil {
			return false, err
		}
		return h.countFailure(f, code, last, logProcess), nil
	})
	h.logExit(ctx, e, code, out.Lines)
}

// outputText is what an event's message says of a process's output.
func outputText(out processOutput) string {
	switch {
	case !out.Read:
		return ""
	case len(out.Lines) == 0:
		return "; its output is empty"
	}
	var b strings.Builder
	if len(out.Lines) == 1 {
		b.WriteString("; the last line of its output:")
	} else {
		fmt.Fprintf(&b, "; the last %d lines of its output:", len(out.Lines))
	}
	for _, l := range out.Lines {
		b.WriteString("\n  | " + l)
	}
	return b.String()
}

// failedBeforeReady reports whether an exit with this event shows that a
// process of a location being created could not become ready: it crashed
// (ended by itself), did not call InitSDK or ProcessReady in time, or
// reported itself unhealthy. Processes Hoist ended for other reasons
// (scale-in, deletion, FORCE_TERMINATE) do not count.
func failedBeforeReady(code api.EventCode) bool {
	switch code {
	case api.EventCodeServerProcessCrashed, api.EventCodeServerProcessProcessReadyTimeout,
		api.EventCodeServerProcessSdkInitializationTimeout, api.EventCodeServerProcessTerminatedUnhealthy:
		return true
	}
	return false
}

// countFailure counts a failed process against its location when the
// location is being created (no process of it is ready yet); last says how
// it ended, process names it when its output was kept. It reports whether
// the fleet record changed.
func (h *instanceHooks) countFailure(f *fleetRec, code api.EventCode, last, process string) bool {
	loc := f.location(h.ref.Location)
	if loc == nil || !creating(loc.Status) || !failedBeforeReady(code) {
		return false
	}
	if f.Own.Failures == nil {
		f.Own.Failures = map[string]creationFailures{}
	}
	c := f.Own.Failures[loc.Location]
	c.Count++
	c.Last, c.Process = last, process
	f.Own.Failures[loc.Location] = c
	return true
}

// logExit logs an abnormal process exit: WARN, or INFO for FORCE_TERMINATE
// (an operator's request). The output's last lines, already escaped, are
// one attribute: the log handler quotes it, so a process cannot forge log
// lines.
func (h *instanceHooks) logExit(ctx context.Context, e ProcessExit, code api.EventCode, lines []string) {
	level := slog.LevelWarn
	if code == api.EventCodeServerProcessForceTerminated {
		level = slog.LevelInfo
	}
	h.s.log.Log(ctx, level, "fleets: server process ended: "+exitText(e), "event", string(code),
		"fleet", h.ref.FleetID, "instance", h.ref.InstanceID, "location", h.ref.Location, "process", e.ProcessID,
		"exitCode", e.ExitCode, "signal", e.Signal, "output", strings.Join(lines, "\n"))
}

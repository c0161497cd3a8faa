package agent

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"time"

	"github.com/hoistgg/hoist/internal/fleets"
	"github.com/hoistgg/hoist/internal/hosts/hostproto"
)

// bridge is the fleets.Hooks of one instance on this host: it turns what
// the provider reports into host protocol messages, queued in order for
// Hoist (kept while Hoist cannot be reached).
type bridge struct {
	a   *Agent
	ref fleets.InstanceRef

	mu         sync.Mutex
	downloaded bool              // StepStarted(DOWNLOAD) was reported (once)
	outputs    map[string]string // output file of each running process
}

var _ fleets.Hooks = (*bridge)(nil)

func newBridge(a *Agent, ref fleets.InstanceRef) *bridge {
	return &bridge{a: a, ref: ref, outputs: map[string]string{}}
}

// processes lists the instance's running processes.
func (b *bridge) processes() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make([]string, 0, len(b.outputs))
	for id := range b.outputs {
		out = append(out, id)
	}
	sort.Strings(out)
	return out
}

// StepStarted reports a setup step (the download once: the agent reports
// it before fetching the build, the provider again as it copies it).
func (b *bridge) StepStarted(_ context.Context, step fleets.Step) {
	if step == fleets.StepDownload {
		b.mu.Lock()
		again := b.downloaded
		b.downloaded = true
		b.mu.Unlock()
		if again {
			return
		}
	}
	b.a.rep.queue(report{action: hostproto.ActionStepStarted, msg: hostproto.StepStarted{InstanceId: b.ref.InstanceID, Step: string(step)}})
}

// StepFailed reports a failed setup step.
func (b *bridge) StepFailed(_ context.Context, step fleets.Step, err error) {
	m := hostproto.StepFailed{InstanceId: b.ref.InstanceID, Step: string(step), Error: err.Error()}
	var lp *fleets.LaunchPathError
	if errors.As(err, &lp) {
		m.LaunchPath, m.Error = lp.LaunchPath, lp.Err.Error()
	}
	b.a.rep.queue(report{action: hostproto.ActionStepFailed, msg: m})
}

// ProcessStarted reports a launched process.
func (b *bridge) ProcessStarted(_ context.Context, p fleets.ProcessStart) {
	b.mu.Lock()
	b.outputs[p.ProcessID] = p.OutputPath
	b.mu.Unlock()
	b.a.rep.queue(report{action: hostproto.ActionProcessStarted, msg: hostproto.ProcessStarted{InstanceId: b.ref.InstanceID,
		ProcessId: p.ProcessID, LaunchPath: p.LaunchPath, Parameters: p.Parameters, StartedAtMs: hostproto.Millis(p.StartedAt)}})
}

// LaunchFailed reports a process that could not be started.
func (b *bridge) LaunchFailed(_ context.Context, launchPath string, err error) {
	var lp *fleets.LaunchPathError
	if errors.As(err, &lp) {
		err = lp.Err
	}
	b.a.rep.queue(report{action: hostproto.ActionLaunchFailed, msg: hostproto.LaunchFailed{InstanceId: b.ref.InstanceID,
		LaunchPath: launchPath, Error: err.Error()}})
}

// ProcessExited reports a process's end; the end of its output is kept
// in the spool (its instance's directory may go before the report is
// sent) and uploaded first.
func (b *bridge) ProcessExited(_ context.Context, e fleets.ProcessExit) {
	b.mu.Lock()
	out := b.outputs[e.ProcessID]
	delete(b.outputs, e.ProcessID)
	b.mu.Unlock()
	m := hostproto.ProcessExited{InstanceId: b.ref.InstanceID, ProcessId: e.ProcessID, ExitCode: e.ExitCode,
		Signal: e.Signal, StopReason: e.StopReason, Killed: e.Killed, UptimeMs: e.Uptime.Milliseconds()}
	spooled := b.a.spoolOutput(e.ProcessID, out)
	b.a.rep.queue(report{action: hostproto.ActionProcessExited, msg: m, output: spooled})
}

// AskToEnd asks Hoist to send the process TerminateProcess, at once (not
// queued): without a connection the provider falls back to SIGTERM.
func (b *bridge) AskToEnd(ctx context.Context, processID string, deadline time.Time) error {
	c := b.a.current()
	if c == nil {
		return errors.New("agent: not connected to Hoist")
	}
	ctx, cancel := context.WithTimeout(ctx, heartbeatTimeout)
	defer cancel()
	return c.peer.Call(ctx, hostproto.ActionAskToEnd, hostproto.AskToEnd{InstanceId: b.ref.InstanceID,
		ProcessId: processID, DeadlineMs: hostproto.Millis(deadline)}, nil)
}

// InstanceStopped reports that the instance is gone, and forgets it.
func (b *bridge) InstanceStopped(_ context.Context) {
	b.a.forget(b.ref.InstanceID)
	b.a.rep.queue(report{action: hostproto.ActionInstanceStopped, msg: hostproto.InstanceStopped{InstanceId: b.ref.InstanceID}})
}

// spoolDir holds the ends of ended processes' output until uploaded.
func (a *Agent) spoolDir() string { return filepath.Join(a.cfg.Dir, "spool") }

// spoolOutput copies the end of a process's output (at most
// hostproto.MaxOutputBytes) to the spool and returns the copy's path (""
// when there is nothing to upload). The output file is opened without
// following a link a game server could have put in its place.
func (a *Agent) spoolOutput(processID, path string) string {
	if path == "" || !validName(processID) {
		return ""
	}
	f, err := openRegular(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return ""
	}
	off := max(st.Size()-hostproto.MaxOutputBytes, 0)
	if err := os.MkdirAll(a.spoolDir(), 0o700); err != nil {
		return ""
	}
	dst := filepath.Join(a.spoolDir(), processID+".log")
	w, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return ""
	}
	_, err = io.Copy(w, io.NewSectionReader(f, off, st.Size()-off))
	if cerr := w.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = os.Remove(dst)
		return ""
	}
	return dst
}

// openRegular opens a regular file, not a symbolic link.
func openRegular(path string) (*os.File, error) {
	li, err := os.Lstat(path)
	if err != nil {
		return nil, err
	}
	if !li.Mode().IsRegular() {
		return nil, errors.New(path + " is not a regular file")
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	if fi, err := f.Stat(); err != nil || !os.SameFile(li, fi) {
		f.Close()
		return nil, errors.New(path + " changed while it was opened")
	}
	return f, nil
}

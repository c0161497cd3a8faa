package fleets

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/hoistgg/hoist/internal/api"
	"github.com/hoistgg/hoist/internal/hosting"
	"github.com/hoistgg/hoist/internal/store"
)

// LaunchPathError is the error a provider reports (StepFailed at
// StepValidate, or LaunchFailed) when a launch path cannot be run.
type LaunchPathError struct {
	LaunchPath string
	Err        error
}

func (e *LaunchPathError) Error() string { return "launch path " + e.LaunchPath + ": " + e.Err.Error() }
func (e *LaunchPathError) Unwrap() error { return e.Err }

// instanceHooks is the Hooks of one instance: it records what the provider
// reports as fleet events and status changes, and tells sessions about
// server processes.
type instanceHooks struct {
	s   *Service
	ref InstanceRef

	mu         sync.Mutex
	installing bool              // the install script ran (StepInstall started)
	outputs    map[string]string // output file of each running process, by ID
}

func (s *Service) hooks(ref InstanceRef) *instanceHooks { return &instanceHooks{s: s, ref: ref} }

var _ Hooks = (*instanceHooks)(nil)

// update runs fn on the instance's fleet record in a transaction; fn
// returns whether the fleet record changed. A missing fleet is ignored.
func (h *instanceHooks) update(ctx context.Context, what string, fn func(tx store.Tx, f *fleetRec, now time.Time) (bool, error)) {
	err := h.s.cfg.Store.Update(ctx, func(tx store.Tx) error {
		f, err := getFleet(ctx, tx, h.ref.FleetID)
		if err != nil {
			return ignoreNotFound(err)
		}
		changed, err := fn(tx, f, h.s.now())
		if err != nil || !changed {
			return err
		}
		return putFleet(ctx, tx, f)
	})
	if err != nil {
		h.s.log.Warn("fleets: recording "+what, "fleet", h.ref.FleetID, "instance", h.ref.InstanceID, "err", err)
	}
	h.s.wake()
}

// StepStarted moves a location being created to the step's status, with
// GameLift's creation-step events.
func (h *instanceHooks) StepStarted(ctx context.Context, step Step) {
	h.mu.Lock()
	installed := h.installing && step == StepValidate
	h.installing = h.installing || step == StepInstall
	h.mu.Unlock()
	h.update(ctx, "setup step", func(tx store.Tx, f *fleetRec, now time.Time) (bool, error) {
		loc := f.location(h.ref.Location)
		if loc == nil || !creating(loc.Status) {
			return false, nil
		}
		if installed {
			if err := h.event(ctx, tx, api.EventCodeFleetCreationCompletedInstaller, now, "the install script finished"); err != nil {
				return false, err
			}
		}
		changed, err := h.s.moveLocation(ctx, tx, f, loc.Location, stepStatus(step), now)
		if err != nil {
			return false, err
		}
		if code, msg := stepEvent(step); code != "" {
			err = h.event(ctx, tx, code, now, "%s", msg)
		}
		return changed, err
	})
}

// stepEvent is the event GameLift records when a creation step begins.
func stepEvent(step Step) (api.EventCode, string) {
	switch step {
	case StepDownload:
		return api.EventCodeFleetCreationExtractingBuild, "placing the build's files on the instance"
	case StepInstall:
		return api.EventCodeFleetCreationRunningInstaller, "running the build's install script"
	case StepValidate:
		return api.EventCodeFleetCreationValidatingRuntimeConfig, "checking the runtime configuration's launch paths"
	}
	return "", ""
}

// stepFailCode is the event recording that a setup step failed.
func stepFailCode(step Step) api.EventCode {
	switch step {
	case StepDownload:
		return api.EventCodeFleetBinaryDownloadFailed
	case StepInstall:
		return api.EventCodeFleetCreationFailedInstaller
	case StepValidate:
		return api.EventCodeFleetValidationLaunchPathNotFound
	case StepActivate:
		return api.EventCodeFleetActivationFailed
	}
	return api.EventCodeFleetInitializationFailed
}

// event records an event about this instance (and adds it to the
// instance's setup log).
func (h *instanceHooks) event(ctx context.Context, tx store.Tx, code api.EventCode, now time.Time, format string, a ...any) error {
	return h.s.addInstanceEvent(ctx, tx, h.ref.FleetID, h.ref.InstanceID, code, now, fmt.Sprintf("Instance %s (location %s): %s",
		h.ref.InstanceID, h.ref.Location, fmt.Sprintf(format, a...)))
}

// StepFailed records a failed setup step: a location being created goes to
// ERROR; an ACTIVE one only gets the event (and waits before starting
// another instance).
func (h *instanceHooks) StepFailed(ctx context.Context, step Step, err error) {
	h.s.backOff(h.ref.FleetID, h.ref.Location)
	h.update(ctx, "failed setup step", func(tx store.Tx, f *fleetRec, now time.Time) (bool, error) {
		var lp *LaunchPathError
		if errors.As(err, &lp) {
			if err := h.event(ctx, tx, api.EventCodeServerProcessInvalidPath, now, "%v", lp); err != nil {
				return false, err
			}
		}
		msg := fmt.Sprintf("Instance %s (location %s): setting up the instance failed (%s): %v",
			h.ref.InstanceID, h.ref.Location, strings.ToLower(string(step)), err)
		if err := h.s.addInstanceEvent(ctx, tx, f.id(), h.ref.InstanceID, stepFailCode(step), now, msg); err != nil {
			return false, err
		}
		loc := f.location(h.ref.Location)
		if loc == nil || !creating(loc.Status) {
			return false, nil
		}
		_, err := h.s.moveLocation(ctx, tx, f, loc.Location, api.FleetStatusError, now)
		return true, err
	})
}

// LaunchFailed records a server process that could not be started
// (SERVER_PROCESS_INVALID_PATH); while its location is being created, the
// location goes to ERROR.
func (h *instanceHooks) LaunchFailed(ctx context.Context, launchPath string, err error) {
	h.update(ctx, "failed launch", func(tx store.Tx, f *fleetRec, now time.Time) (bool, error) {
		loc := f.location(h.ref.Location)
		msg := fmt.Sprintf("Instance %s (location %s): server process %s could not be started: %v",
			h.ref.InstanceID, h.ref.Location, launchPath, err)
		if loc == nil || !creating(loc.Status) {
			return false, h.s.addEvent(ctx, tx, f.id(), api.EventCodeServerProcessInvalidPath, now, "%s", msg)
		}
		return true, h.s.failLocation(ctx, tx, f, loc.Location, api.EventCodeServerProcessInvalidPath, now, "%s", msg)
	})
}

// ProcessStarted tells sessions about a new server process.
func (h *instanceHooks) ProcessStarted(ctx context.Context, p ProcessStart) {
	h.mu.Lock()
	if h.outputs == nil {
		h.outputs = map[string]string{}
	}
	h.outputs[p.ProcessID] = p.OutputPath
	h.mu.Unlock()
	if h.s.cfg.Events == nil {
		return
	}
	err := h.s.cfg.Events.ProcessLaunched(ctx, hosting.Process{ID: p.ProcessID, FleetID: h.ref.FleetID,
		ComputeName: h.ref.InstanceID, Location: h.ref.Location, State: hosting.ProcessLaunching,
		LaunchPath: p.LaunchPath, Parameters: p.Parameters, LaunchedAt: p.StartedAt.UTC().Truncate(time.Millisecond),
		OutputPath: p.OutputPath})
	if err != nil {
		h.s.log.Warn("fleets: recording a launched process", "process", p.ProcessID, "err", err)
	}
}

// ProcessExited records why a server process ended (a crash is a
// SERVER_PROCESS_CRASHED event, quoting the end of its output) and tells
// sessions.
func (h *instanceHooks) ProcessExited(ctx context.Context, e ProcessExit) {
	var p *hosting.Process
	_ = h.s.cfg.Store.View(ctx, func(tx store.Tx) error {
		p = new(hosting.Process)
		if _, err := store.GetJSON(ctx, tx, hosting.KindProcess, e.ProcessID, p); err != nil {
			p = nil
		}
		return nil
	})
	output := h.forgetOutput(e.ProcessID, p)
	code, reason := exitEvent(p, e)
	if code != "" {
		h.recordExit(ctx, e, code, output)
	}
	h.s.reportExit(ctx, e.ProcessID, e.ExitCode, reason)
}

// forgetOutput returns the output file of an ended process (as its
// ProcessStarted gave it, else as sessions recorded it) and forgets it.
func (h *instanceHooks) forgetOutput(processID string, p *hosting.Process) string {
	h.mu.Lock()
	path, ok := h.outputs[processID]
	delete(h.outputs, processID)
	h.mu.Unlock()
	if !ok && p != nil {
		path = p.OutputPath
	}
	return path
}

// exitEvent classifies a process exit: the event to record ("" for none)
// and the reason sessions records. p is the process as sessions knows it
// (nil if it never connected).
func exitEvent(p *hosting.Process, e ProcessExit) (api.EventCode, string) {
	switch {
	case e.StopReason != "":
		code := stopEvent(e.StopReason)
		if e.Killed && code == "" {
			code = api.EventCodeServerProcessProcessExitTimeout
		}
		return code, e.StopReason
	case p != nil && (p.State == hosting.ProcessTerminating || p.State == hosting.ProcessTerminated):
		return "", "" // it ended after ProcessEnding: sessions keeps its reason
	}
	return api.EventCodeServerProcessCrashed, "SERVER_PROCESS_CRASHED: " + exitText(ProcessExit{ExitCode: e.ExitCode, Signal: e.Signal})
}

// stopEvent maps the reason Hoist gave for ending a process to its event
// (reasons that are, or begin with "CODE: ", a SERVER_PROCESS_* or
// GAME_SESSION_* event code, as sessions gives them).
func stopEvent(reason string) api.EventCode {
	if reason == "FORCE_TERMINATED" {
		return api.EventCodeServerProcessForceTerminated
	}
	name, _, _ := strings.Cut(reason, ": ")
	code := api.EventCode(name)
	if (strings.HasPrefix(name, "SERVER_PROCESS_") || strings.HasPrefix(name, "GAME_SESSION_")) && code.IsValid() {
		return code
	}
	return ""
}

// exitText says how a process ended.
func exitText(e ProcessExit) string {
	var b strings.Builder
	if e.Signal != "" {
		b.WriteString("was ended by signal " + e.Signal)
	} else {
		fmt.Fprintf(&b, "exited with code %d", e.ExitCode)
	}
	if e.Killed {
		b.WriteString(" (killed after its grace period)")
	}
	if e.StopReason != "" {
		b.WriteString(" after Hoist asked it to end: " + e.StopReason)
	}
	return b.String()
}

// AskToEnd sends a server process the SDK's TerminateProcess message.
func (h *instanceHooks) AskToEnd(ctx context.Context, processID string, deadline time.Time) error {
	if h.s.cfg.Messenger == nil {
		return errors.New("fleets: no Messenger configured")
	}
	return h.s.cfg.Messenger.SendToProcess(ctx, processID, hosting.Message{
		"Action": "TerminateProcess", "TerminationTime": ms(deadline)})
}

// InstanceStopped forgets an instance whose processes are all gone.
func (h *instanceHooks) InstanceStopped(ctx context.Context) {
	err := h.s.cfg.Store.Update(ctx, func(tx store.Tx) error {
		return deleteCompute(ctx, tx, h.ref.FleetID, h.ref.InstanceID)
	})
	if err != nil {
		h.s.log.Warn("fleets: removing a stopped instance", "instance", h.ref.InstanceID, "err", err)
	}
	h.s.wake()
}

// reportExit tells sessions that a server process ended.
func (s *Service) reportExit(ctx context.Context, processID string, code int, reason string) {
	if s.cfg.Events == nil {
		return
	}
	if err := s.cfg.Events.ProcessExited(ctx, processID, code, reason); err != nil {
		s.log.Warn("fleets: recording a process exit", "process", processID, "err", err)
	}
}

// reportLost tells sessions that a server process was lost with its host:
// its game session ends INTERRUPTED where sessions supports it
// (hosting.ProcessLosses), else as any process exit.
func (s *Service) reportLost(ctx context.Context, processID, reason string) {
	pl, ok := s.cfg.Events.(hosting.ProcessLosses)
	if !ok {
		s.reportExit(ctx, processID, -1, reason)
		return
	}
	if err := pl.ProcessLost(ctx, processID, reason); err != nil {
		s.log.Warn("fleets: recording a lost process", "process", processID, "err", err)
	}
}

// TerminateProcess ends a server process of a managed fleet
// (hosting.ProcessHost): it is sent TerminateProcess, killed after its
// grace period, and replaced. A process this replica should run but does
// not (it already ended, or Hoist restarted) is reported gone at once.
func (s *Service) TerminateProcess(ctx context.Context, processID, reason string) error {
	var err error = ErrUnknownProcess
	if s.cfg.Provider != nil {
		err = s.cfg.Provider.StopProcess(processID, reason)
	}
	return s.processStopped(ctx, processID, reason, err)
}

// KillProcess ends a server process of a managed fleet at once, without
// the shutdown sequence, and it is replaced (hosting.ProcessHost). A
// process this replica should run but does not is reported gone at once.
func (s *Service) KillProcess(ctx context.Context, processID, reason string) error {
	var err error = ErrUnknownProcess
	if s.cfg.Provider != nil {
		err = s.cfg.Provider.KillProcess(processID, reason)
	}
	return s.processStopped(ctx, processID, reason, err)
}

// processStopped completes TerminateProcess and KillProcess: err is the
// provider's answer; a process it does not run is reported gone when this
// replica hosts (or should host) it, or its pool host says it is gone.
func (s *Service) processStopped(ctx context.Context, processID, reason string, err error) error {
	if errors.Is(err, ErrProcessGone) {
		s.reportExit(ctx, processID, -1, reason)
		return nil
	}
	if !errors.Is(err, ErrUnknownProcess) {
		return err
	}
	var host string
	err = s.cfg.Store.View(ctx, func(tx store.Tx) error {
		p := new(hosting.Process)
		if _, err := store.GetJSON(ctx, tx, hosting.KindProcess, processID, p); err != nil {
			return err
		}
		c, err := getCompute(ctx, tx, p.FleetID, p.ComputeName)
		if err == nil {
			host = c.Host
		}
		return ignoreNotFound(err)
	})
	if errors.Is(err, store.ErrNotFound) {
		return nil // sessions knows nothing of it either
	}
	if err != nil {
		return err
	}
	if host != "" && host != s.cfg.ReplicaID {
		return fmt.Errorf("fleets: process %s runs on replica %s", processID, host)
	}
	s.reportExit(ctx, processID, -1, reason)
	return nil
}

// ComputeTokenExpiry returns when a compute auth token expires (the zero
// time for the tokens of managed instances, which last as long as the
// instance); hosting.TokenIssuer.
func (s *Service) ComputeTokenExpiry(ctx context.Context, token string) (time.Time, error) {
	var t hosting.ComputeAuthToken
	err := store.Read(ctx, s.cfg.Store, func(tx store.Tx) error { // one read
		_, err := store.GetJSON(ctx, tx, hosting.KindComputeAuthToken, tokenHash(token), &t)
		return err
	})
	return t.Expires, err
}

// IssueComputeToken issues a new compute auth token for a compute, valid
// for TokenTTL on Anywhere fleets and as long as the instance on managed
// ones (hosting.TokenIssuer: sdkconn hands it to a connected process in
// RefreshConnection).
func (s *Service) IssueComputeToken(ctx context.Context, fleetID, computeName string) (string, time.Time, error) {
	token := newToken()
	var expires time.Time
	err := s.cfg.Store.Update(ctx, func(tx store.Tx) error {
		f, c, err := findCompute(ctx, tx, fleetID, computeName)
		if err != nil {
			return err
		}
		if f.anywhere() {
			expires = s.tokenNow().Add(s.t.TokenTTL)
		}
		return putToken(ctx, tx, token, f.id(), c.ComputeName, expires)
	})
	if err != nil {
		return "", time.Time{}, err
	}
	return token, expires, nil
}

// VerifyComputeToken returns the fleet and compute a compute auth token was
// issued for (hosting.TokenVerifier). The token is looked up by its SHA-256
// (only hashes are stored) and the hashes are compared in constant time.
func (s *Service) VerifyComputeToken(ctx context.Context, token string) (string, string, error) {
	bad := errors.New("fleets: unknown or expired compute auth token")
	if token == "" {
		return "", "", bad
	}
	h := tokenHash(token)
	var rec store.Record
	var t hosting.ComputeAuthToken
	// Two reads that need not agree: a compute deleted between them is
	// one deleted after the check.
	err := store.Read(ctx, s.cfg.Store, func(tx store.Tx) error {
		var err error
		if rec, err = tx.Get(ctx, hosting.KindComputeAuthToken, h); err != nil {
			return err
		}
		if err := store.Decode(rec, &t); err != nil {
			return err
		}
		_, err = tx.Get(ctx, hosting.KindCompute, computeID(t.FleetID, t.ComputeName))
		return err
	})
	if errors.Is(err, store.ErrNotFound) {
		return "", "", bad
	}
	if err != nil {
		return "", "", err
	}
	if subtle.ConstantTimeCompare([]byte(rec.ID), []byte(h)) != 1 {
		return "", "", bad
	}
	if !t.Expires.IsZero() && !s.tokenNow().Before(t.Expires) {
		return "", "", bad
	}
	return t.FleetID, t.ComputeName, nil
}

// ProcessLister is what a ComputeProvider implements to say which server
// processes it runs (internal/fleets/local does); without it
// VerifyProcess accepts every process ID.
type ProcessLister interface {
	// HasProcess reports whether the provider launched processID on
	// instanceID and it has not been reported ended.
	HasProcess(instanceID, processID string) bool
}

// VerifyProcess implements hosting.ProcessVerifier: on an EC2 fleet a
// connection with an instance's credentials must name a process the
// provider launched on that instance and still runs (a 403 SDKError
// otherwise). Anywhere fleets' game servers register their own process
// IDs, as on GameLift: any is accepted.
func (s *Service) VerifyProcess(ctx context.Context, fleetID, computeName, processID string) error {
	var f *fleetRec
	err := store.Read(ctx, s.cfg.Store, func(tx store.Tx) error { // one read
		var err error
		f, err = getFleet(ctx, tx, fleetID)
		return err
	})
	if errors.Is(err, store.ErrNotFound) {
		return &hosting.SDKError{Status: 403, Message: "fleet " + fleetID + " does not exist"}
	}
	if err != nil {
		return err
	}
	if f.anywhere() {
		return nil
	}
	pl, ok := s.cfg.Provider.(ProcessLister)
	if !ok || pl.HasProcess(computeName, processID) {
		return nil
	}
	return &hosting.SDKError{Status: 403, Message: "process " + processID + " was not launched by Hoist on instance " + computeName}
}

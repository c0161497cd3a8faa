package hosts

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"time"

	"github.com/hoistgg/hoist/internal/fleets"
	"github.com/hoistgg/hoist/internal/hosting"
	"github.com/hoistgg/hoist/internal/hosts/hostproto"
	"github.com/hoistgg/hoist/internal/store"
	"github.com/hoistgg/hoist/internal/wsrpc"
)

// report serves what a host reports about one of its instances: each is
// passed to the instance's fleets.Hooks, once it is checked that the
// instance is the host's (placed on it in its current generation) and,
// for a message about a process, that the process is the instance's. A
// host can thus speak only for its own instances.
//
// It runs on the connection's reader: nothing it calls may wait for an
// answer of the same host (CollectRemoteLogs, which a process's end can
// lead to, sends without waiting).
func (s *Service) report(ctx context.Context, hostID string, r *wsrpc.Request) (any, error) {
	var in struct{ InstanceId, ProcessId string }
	if err := r.Decode(&in); err != nil {
		return nil, err
	}
	ref, err := s.ownInstance(ctx, hostID, in.InstanceId, in.ProcessId)
	if err != nil {
		return nil, err
	}
	hooks := s.hooksOf(ref)
	switch r.Action {
	case hostproto.ActionStepStarted:
		var m hostproto.StepStarted
		err = r.Decode(&m)
		if err == nil {
			hooks.StepStarted(ctx, fleets.Step(m.Step))
		}
	case hostproto.ActionStepFailed:
		err = s.stepFailed(ctx, hooks, r)
	case hostproto.ActionProcessStarted:
		err = s.processStarted(ctx, hooks, r)
	case hostproto.ActionLaunchFailed:
		var m hostproto.LaunchFailed
		if err = r.Decode(&m); err == nil {
			hooks.LaunchFailed(ctx, m.LaunchPath, errors.New(clip(m.Error)))
		}
	case hostproto.ActionProcessExited:
		err = s.processExited(ctx, hooks, r)
	case hostproto.ActionAskToEnd:
		var m hostproto.AskToEnd
		if err = r.Decode(&m); err == nil {
			if aerr := hooks.AskToEnd(ctx, m.ProcessId, hostproto.FromMillis(m.DeadlineMs)); aerr != nil {
				err = wsrpc.Errorf(409, "the process could not be told: %v", aerr)
			}
		}
	case hostproto.ActionInstanceStopped:
		hooks.InstanceStopped(ctx)
		s.forgetHooks(ref.InstanceID)
		err = s.forgetInstance(ctx, hostID, ref.InstanceID)
	default:
		err = wsrpc.Errorf(400, "unknown Action %q", clip(r.Action))
	}
	return nil, err
}

// ownInstance checks that instanceID is placed on hostID in its current
// generation and that processID, when given and known, is one of its
// processes; it returns the instance's reference. 404 otherwise (the
// instance was lost, stopped, or is another host's).
func (s *Service) ownInstance(ctx context.Context, hostID, instanceID, processID string) (fleets.InstanceRef, error) {
	var ref fleets.InstanceRef
	err := s.cfg.Store.View(ctx, func(tx store.Tx) error {
		hi, err := getHostInstance(ctx, tx, instanceID)
		if err != nil || hi.HostID != hostID {
			return errNotYours
		}
		h, err := getHost(ctx, tx, hostID)
		if err != nil {
			return err
		}
		c, err := liveInstance(ctx, tx, h, hi)
		if err != nil || c == nil {
			return errors.Join(err, errNotYours)
		}
		ref = fleets.InstanceRef{FleetID: hi.FleetID, InstanceID: instanceID, Location: hi.Location}
		if processID == "" {
			return nil
		}
		var p hosting.Process
		_, err = store.GetJSON(ctx, tx, hosting.KindProcess, processID, &p)
		if err == nil && (p.FleetID != hi.FleetID || p.ComputeName != instanceID) {
			return errNotYours
		}
		return ignoreNotFound(err)
	})
	if errors.Is(err, errNotYours) || errors.Is(err, store.ErrNotFound) {
		return ref, wsrpc.Errorf(404, "instance %s (process %s) is not one of this host's", clip(instanceID), clip(processID))
	}
	return ref, err
}

var errNotYours = errors.New("not this host's")

// stepFailed passes on a failed setup step.
func (s *Service) stepFailed(ctx context.Context, hooks fleets.Hooks, r *wsrpc.Request) error {
	var m hostproto.StepFailed
	if err := r.Decode(&m); err != nil {
		return err
	}
	var err error = errors.New(clip(m.Error))
	if m.LaunchPath != "" {
		err = &fleets.LaunchPathError{LaunchPath: m.LaunchPath, Err: err}
	}
	hooks.StepFailed(ctx, fleets.Step(m.Step), err)
	return nil
}

// processStarted passes on a launched process; its output file is where
// the host uploads the end of it when it ends (outputPath).
func (s *Service) processStarted(ctx context.Context, hooks fleets.Hooks, r *wsrpc.Request) error {
	var m hostproto.ProcessStarted
	if err := r.Decode(&m); err != nil {
		return err
	}
	if !validName(m.ProcessId) {
		return wsrpc.Errorf(400, "ProcessId %q cannot name a process", clip(m.ProcessId))
	}
	hooks.ProcessStarted(ctx, fleets.ProcessStart{ProcessID: m.ProcessId, LaunchPath: m.LaunchPath, Parameters: m.Parameters,
		OutputPath: s.outputPath(m.ProcessId), StartedAt: hostproto.FromMillis(m.StartedAtMs)})
	s.mu.Lock()
	close(s.procStarted)
	s.procStarted = make(chan struct{})
	s.mu.Unlock()
	return nil
}

// processExited passes on a process's end, then removes the end of its
// output the host uploaded (fleets kept its own copy).
func (s *Service) processExited(ctx context.Context, hooks fleets.Hooks, r *wsrpc.Request) error {
	var m hostproto.ProcessExited
	if err := r.Decode(&m); err != nil {
		return err
	}
	hooks.ProcessExited(ctx, fleets.ProcessExit{ProcessID: m.ProcessId, ExitCode: m.ExitCode, Signal: clip(m.Signal),
		StopReason: clip(m.StopReason), Killed: m.Killed, Uptime: time.Duration(m.UptimeMs) * time.Millisecond})
	if validName(m.ProcessId) {
		_ = os.Remove(s.outputPath(m.ProcessId))
	}
	return nil
}

// outputPath is where the end of a process's output is uploaded.
func (s *Service) outputPath(processID string) string {
	if s.cfg.UploadDir == "" {
		return ""
	}
	return filepath.Join(s.cfg.UploadDir, "output", processID+".log")
}

// forgetInstance deletes the record of an instance its host stopped.
func (s *Service) forgetInstance(ctx context.Context, hostID, instanceID string) error {
	return s.cfg.Store.Update(ctx, func(tx store.Tx) error {
		hi, err := getHostInstance(ctx, tx, instanceID)
		if err != nil || hi.HostID != hostID {
			return ignoreNotFound(err)
		}
		return ignoreNotFound(tx.Delete(ctx, KindHostInstance, instanceID))
	})
}

// validName reports whether an ID can name a file: not empty, short, no
// path separator, no dot-only name.
func validName(id string) bool {
	if id == "" || id == "." || id == ".." || len(id) > 128 {
		return false
	}
	for _, r := range id {
		if r == '/' || r == '\\' || r == 0 {
			return false
		}
	}
	return true
}

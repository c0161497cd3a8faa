package hosts

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/hoistgg/hoist/internal/api"
	"github.com/hoistgg/hoist/internal/fleets"
	"github.com/hoistgg/hoist/internal/hosting"
	"github.com/hoistgg/hoist/internal/hosts/hostproto"
	"github.com/hoistgg/hoist/internal/store"
)

// callTimeout bounds a call the provider makes to a host (the contract's
// methods take no context).
const callTimeout = 20 * time.Second

// Layout returns where an instance of the in-process provider keeps its
// files (a pool host's instances get theirs from PlaceInstance).
func (s *Service) Layout(fleetID, instanceID string) fleets.InstanceLayout {
	return s.cfg.Local.Layout(fleetID, instanceID)
}

// StartInstance starts an instance on its host: the in-process provider
// for this replica's, else a StartInstance message to the pool host. The
// hooks are kept for the host's reports about it.
func (s *Service) StartInstance(ctx context.Context, spec fleets.InstanceSpec, hooks fleets.Hooks) error {
	hostID, err := s.hostOf(ctx, spec.FleetID, spec.InstanceID)
	if err != nil {
		return err
	}
	if hostID == "" {
		return s.cfg.Local.StartInstance(ctx, spec, hooks)
	}
	s.mu.Lock()
	s.instHooks[spec.InstanceID] = hooks
	s.mu.Unlock()
	msg := hostproto.StartInstance{FleetId: spec.FleetID, InstanceId: spec.InstanceID, Location: spec.Location,
		BuildId: spec.BuildID, RuntimeConfiguration: spec.RuntimeConfiguration, Env: s.hostEnv(spec.Env),
		Certificate: hostCertificate(spec.Certificate)}
	relayed, err := s.sendStart(ctx, hostID, msg, spec.CertificateRequest)
	if err != nil || relayed {
		s.forgetHooks(spec.InstanceID) // relayed: the host reports to the replica holding it
	}
	if err != nil {
		return fmt.Errorf("host %s: %w", hostID, err)
	}
	return nil
}

// hostCertificate is certificate files as StartInstance carries them (nil
// for none).
func hostCertificate(c *fleets.CertificateFiles) *hostproto.Certificate {
	if c == nil {
		return nil
	}
	return &hostproto.Certificate{Certificate: string(c.Certificate), Chain: string(c.Chain),
		PrivateKey: string(c.PrivateKey), Root: string(c.Root)}
}

// hostEnv is an instance's environment as a pool host gets it: without
// SSL_CERT_FILE naming this machine's CA bundle (the agent sets its own).
func (s *Service) hostEnv(env []string) []string {
	out := make([]string, 0, len(env))
	for _, kv := range env {
		if s.cfg.CABundle != "" && kv == "SSL_CERT_FILE="+s.cfg.CABundle {
			continue
		}
		out = append(out, kv)
	}
	return out
}

// hostOf returns the pool host of an instance ("" when the in-process
// provider runs it).
func (s *Service) hostOf(ctx context.Context, fleetID, instanceID string) (string, error) {
	var host string
	err := s.cfg.Store.View(ctx, func(tx store.Tx) error {
		c, err := getCompute(ctx, tx, fleetID, instanceID)
		if err != nil || c == nil {
			return err
		}
		if !s.isLocal(c) {
			host = c.Host
		}
		return nil
	})
	return host, err
}

// placedHost returns the pool host an instance was placed on ("" when
// none was: the in-process provider's, or unknown).
func (s *Service) placedHost(ctx context.Context, instanceID string) (string, error) {
	var host string
	err := s.cfg.Store.View(ctx, func(tx store.Tx) error {
		hi, err := getHostInstance(ctx, tx, instanceID)
		if err == nil {
			host = hi.HostID
		}
		return ignoreNotFound(err)
	})
	return host, err
}

// UpdateRuntimeConfiguration gives an instance its fleet's runtime
// configuration, on its host.
func (s *Service) UpdateRuntimeConfiguration(instanceID string, rc api.RuntimeConfiguration) {
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	host, err := s.placedHost(ctx, instanceID)
	if err != nil || host == "" {
		s.cfg.Local.UpdateRuntimeConfiguration(instanceID, rc)
		return
	}
	msg := hostproto.UpdateRuntimeConfiguration{InstanceId: instanceID, RuntimeConfiguration: rc}
	if err := s.msgr.SendToHost(ctx, host, hostproto.ActionUpdateRuntimeConfiguration, msg); err != nil {
		s.log.Warn("hosts: updating an instance's runtime configuration", "host", host, "instance", instanceID, "err", err)
	}
}

// StopInstance stops an instance on its host. A pool host that is not
// connected is told when it reconnects (the instance is TERMINATING in
// what it should run).
func (s *Service) StopInstance(instanceID, reason string) error {
	err := s.cfg.Local.StopInstance(instanceID, reason)
	if !errors.Is(err, fleets.ErrUnknownInstance) {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	host, herr := s.placedHost(ctx, instanceID)
	if herr != nil || host == "" {
		return errors.Join(err, herr)
	}
	err = s.msgr.SendToHost(ctx, host, hostproto.ActionStopInstance, hostproto.StopInstance{InstanceId: instanceID, Reason: reason})
	if errors.Is(err, errNotConnected) {
		return nil // told with its desired state when it reconnects
	}
	return err
}

// StopProcess ends a server process on its host.
func (s *Service) StopProcess(processID, reason string) error {
	return s.endProcess(processID, reason, hostproto.ActionStopProcess, s.cfg.Local.StopProcess)
}

// KillProcess kills a server process on its host.
func (s *Service) KillProcess(processID, reason string) error {
	return s.endProcess(processID, reason, hostproto.ActionKillProcess, s.cfg.Local.KillProcess)
}

// endProcess is StopProcess and KillProcess: the in-process provider's
// first, else the process's host's (found from sessions' record of it).
func (s *Service) endProcess(processID, reason, action string, local func(string, string) error) error {
	err := local(processID, reason)
	if !errors.Is(err, fleets.ErrUnknownProcess) {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	var p hosting.Process
	var host string
	err = s.cfg.Store.View(ctx, func(tx store.Tx) error {
		if _, err := store.GetJSON(ctx, tx, hosting.KindProcess, processID, &p); err != nil {
			return err
		}
		hi, err := getHostInstance(ctx, tx, p.ComputeName)
		if err == nil {
			host = hi.HostID
		}
		return err
	})
	if errors.Is(err, store.ErrNotFound) {
		return fleets.ErrUnknownProcess
	}
	if err != nil {
		return err
	}
	err = s.msgr.SendToHost(ctx, host, action, hostproto.StopProcess{InstanceId: p.ComputeName, ProcessId: processID, Reason: reason})
	var we *wsError
	if errors.As(err, &we) && we.status == 404 {
		return fleets.ErrProcessGone // its host says so
	}
	return err
}

// Instances lists the instances the in-process provider runs and those
// pool hosts reported in their last heartbeats (from the store). It reads
// the instances placed on hosts and only their hosts: the fleets
// reconciler calls it every pass, and a host without instances must cost
// nothing there.
func (s *Service) Instances() []fleets.InstanceRef {
	out := s.cfg.Local.Instances()
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	err := s.cfg.Store.View(ctx, func(tx store.Tx) error {
		var placed []*HostInstance
		err := store.Each(ctx, tx, store.Query{Kind: KindHostInstance}, func(r store.Record) error {
			hi := new(HostInstance)
			placed = append(placed, hi)
			return store.Decode(r, hi)
		})
		if err != nil {
			return err
		}
		hosts := map[string]*Host{}
		for _, hi := range placed {
			h, seen := hosts[hi.HostID]
			if !seen {
				if h, err = getHost(ctx, tx, hi.HostID); ignoreNotFound(err) != nil {
					return err
				}
				hosts[hi.HostID] = h
			}
			if h != nil && h.Status != StatusLost && slices.Contains(h.Reported, hi.InstanceID) {
				out = append(out, fleets.InstanceRef{FleetID: hi.FleetID, InstanceID: hi.InstanceID, Location: hi.Location})
			}
		}
		return nil
	})
	if err != nil {
		s.log.Warn("hosts: listing the instances of hosts", "err", err)
	}
	return out
}

// HasProcess reports whether processID runs on instance instanceID
// (fleets.ProcessLister): the in-process provider's word, else, for an
// instance on a pool host, whether its host reported the process started
// and not ended. A process can connect before its host's report arrives:
// then it is waited for, up to processWait.
func (s *Service) HasProcess(instanceID, processID string) bool {
	if pl, ok := s.cfg.Local.(fleets.ProcessLister); ok && pl.HasProcess(instanceID, processID) {
		return true
	}
	ctx, cancel := context.WithTimeout(context.Background(), processWait)
	defer cancel()
	for {
		s.mu.Lock()
		wake := s.procStarted
		s.mu.Unlock()
		known, onHost, err := s.reportedProcess(ctx, instanceID, processID)
		if err != nil || !onHost {
			return false
		}
		if known {
			return true
		}
		select {
		case <-wake:
		case <-time.After(processPoll): // another replica may record it
		case <-ctx.Done():
			return false
		}
	}
}

// processWait bounds how long a connecting process waits for its host's
// report; processPoll is how often the store is read meanwhile.
const (
	processWait = 10 * time.Second
	processPoll = 250 * time.Millisecond
)

// reportedProcess reads whether instanceID is on a pool host (onHost) and
// its host reported processID running there (known).
func (s *Service) reportedProcess(ctx context.Context, instanceID, processID string) (known, onHost bool, err error) {
	err = s.cfg.Store.View(ctx, func(tx store.Tx) error {
		if _, err := getHostInstance(ctx, tx, instanceID); err != nil {
			return ignoreNotFound(err)
		}
		onHost = true
		var p hosting.Process
		if _, err := store.GetJSON(ctx, tx, hosting.KindProcess, processID, &p); err != nil {
			return ignoreNotFound(err)
		}
		known = p.ComputeName == instanceID && p.State != hosting.ProcessTerminated && p.LaunchPath != ""
		if p.ComputeName != instanceID {
			onHost = false // another instance's process
		}
		return nil
	})
	return known, onHost, err
}

// Close stops the in-process provider's instances (pool hosts keep
// theirs: they reconnect to Hoist when it is back).
func (s *Service) Close() error {
	s.closeConns()
	return s.cfg.Local.Close()
}

// wsError is an error reply of a host.
type wsError struct {
	status int
	msg    string
}

func (e *wsError) Error() string { return fmt.Sprintf("the host answered %d: %s", e.status, e.msg) }

// errNotConnected: the host holds no connection to this replica.
var errNotConnected = errors.New("the host is not connected to this Hoist")

// clip shortens text from a host for a log or a message.
func clip(s string) string {
	if len(s) > 200 {
		return s[:200] + "..."
	}
	return strings.ToValidUTF8(s, "?")
}

// CollectRemoteLogs asks the host of a game session's instance to upload
// its logs (hosting.RemoteLogCollector). It does not wait: it may be
// called while that host's own report (the process's end) is served.
func (s *Service) CollectRemoteLogs(_ context.Context, req hosting.LogRequest) {
	msg := hostproto.CollectLogs{GameSessionId: req.GameSessionID, InstanceId: req.ComputeName, ProcessId: req.ProcessID,
		LogPaths: req.LogPaths}
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
		defer cancel()
		if err := s.msgr.SendToHost(ctx, req.Host, hostproto.ActionCollectLogs, msg); err != nil {
			s.log.Warn("hosts: asking a host for a game session's logs", "host", req.Host, "gameSession", req.GameSessionID, "err", err)
		}
	}()
}

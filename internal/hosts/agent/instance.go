package agent

import (
	"context"
	"errors"
	"net/url"
	"path/filepath"
	"strings"
	"time"

	"github.com/hoistgg/hoist/internal/api"
	"github.com/hoistgg/hoist/internal/fleets"
	"github.com/hoistgg/hoist/internal/hosts/hostproto"
	"github.com/hoistgg/hoist/internal/wsrpc"
)

// instance is an instance Hoist started on this host.
type instance struct {
	ref     fleets.InstanceRef
	buildID string
	// received is when StartInstance arrived: a heartbeat answer asked
	// for before then may not list it yet.
	received time.Time
	bridge   *bridge
	// cancel ends its setup before the provider has it (the download).
	cancel context.CancelFunc
	// withProvider: the provider runs it; drain: its host drains (no
	// replacement processes); stopping: it was asked to stop.
	withProvider, drain, stopping bool
	// runtime is its fleet's runtime configuration as Hoist last gave it,
	// runtimeVersion its hostproto.RuntimeVersion (reported to Hoist).
	runtime        api.RuntimeConfiguration
	runtimeVersion string
}

// instancesDir is where the provider keeps the instances.
func (a *Agent) instancesDir() string { return filepath.Join(a.cfg.Dir, "instances") }

// startInstance registers an instance Hoist starts here and sets it up in
// the background: its build is downloaded (or found in the cache), then
// the provider runs it.
func (a *Agent) startInstance(m hostproto.StartInstance) error {
	if !validName(m.FleetId) || !validName(m.InstanceId) || !validName(m.BuildId) {
		return wsrpc.Errorf(400, "FleetId, InstanceId and BuildId must name files")
	}
	ctx, cancel := context.WithCancel(context.Background())
	in := &instance{ref: fleets.InstanceRef{FleetID: m.FleetId, InstanceID: m.InstanceId, Location: m.Location},
		buildID: m.BuildId, received: time.Now(), cancel: cancel, runtime: m.RuntimeConfiguration,
		runtimeVersion: hostproto.RuntimeVersion(m.RuntimeConfiguration)}
	in.bridge = newBridge(a, in.ref)
	a.mu.Lock()
	if a.instances[m.InstanceId] != nil {
		a.mu.Unlock()
		cancel()
		return wsrpc.Errorf(409, "instance %s already runs here", m.InstanceId)
	}
	a.instances[m.InstanceId] = in
	a.mu.Unlock()
	a.log.Info("agent: starting an instance", "fleet", m.FleetId, "instance", m.InstanceId, "build", m.BuildId)
	go a.setUp(ctx, in, m)
	return nil
}

// setUp downloads an instance's build and hands the instance to the
// provider; a failure is reported as the DOWNLOAD step's.
func (a *Agent) setUp(ctx context.Context, in *instance, m hostproto.StartInstance) {
	in.bridge.StepStarted(ctx, fleets.StepDownload)
	dir, err := a.builds.get(ctx, m.BuildId)
	if err == nil {
		spec := fleets.InstanceSpec{InstanceRef: in.ref, BuildID: m.BuildId, BuildDir: dir,
			Env: a.env(m.Env), Certificate: certificate(m.Certificate)}
		a.mu.Lock()
		spec.RuntimeConfiguration = in.runtime // as updated while the build downloaded
		if in.stopping {
			err = errors.New("the instance was stopped")
		} else {
			in.withProvider = true
		}
		if in.drain {
			spec.RuntimeConfiguration = api.RuntimeConfiguration{}
		}
		a.mu.Unlock()
		if err == nil {
			if err = a.prov.StartInstance(ctx, spec, in.bridge); err == nil {
				a.log.Info("agent: the instance's build is in place; the provider sets it up", "instance", in.ref.InstanceID)
				a.catchUpRuntime(in, spec.RuntimeConfiguration)
				return
			}
		}
	}
	a.log.Warn("agent: the instance could not start", "instance", in.ref.InstanceID, "err", err)
	if !in.isStopping(a) {
		in.bridge.StepFailed(ctx, fleets.StepDownload, err)
	}
	in.bridge.InstanceStopped(ctx)
}

// catchUpRuntime applies a runtime configuration that arrived while the
// provider was being handed the instance with started.
func (a *Agent) catchUpRuntime(in *instance, started api.RuntimeConfiguration) {
	a.mu.Lock()
	rc, apply := in.runtime, !in.drain && !in.stopping && in.runtimeVersion != hostproto.RuntimeVersion(started)
	a.mu.Unlock()
	if apply {
		a.prov.UpdateRuntimeConfiguration(in.ref.InstanceID, rc)
	}
}

func (in *instance) isStopping(a *Agent) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return in.stopping
}

// certificate converts a message's certificate files.
func certificate(c *hostproto.Certificate) *fleets.CertificateFiles {
	if c == nil {
		return nil
	}
	return &fleets.CertificateFiles{Certificate: []byte(c.Certificate), Chain: []byte(c.Chain),
		PrivateKey: []byte(c.PrivateKey), Root: []byte(c.Root)}
}

// env is the environment of an instance's server processes: SSL_CERT_FILE
// first (Hoist's CA bundle as this host wrote it; an operator's own in
// Hoist's --process-env comes later and wins), then Hoist's variables,
// with GAMELIFT_SDK_WEBSOCKET_URL on Hoist's address as this host reaches
// it (its TLS listener; a local agent's processes keep the URL Hoist gave,
// on its own machine).
func (a *Agent) env(from []string) []string {
	out := []string{"SSL_CERT_FILE=" + a.bundle}
	u, _ := url.Parse(a.creds().Endpoint)
	for _, kv := range from {
		if strings.HasPrefix(kv, "GAMELIFT_SDK_WEBSOCKET_URL=") && !a.cfg.Local {
			kv = "GAMELIFT_SDK_WEBSOCKET_URL=wss://" + u.Host + "/sdk"
		}
		out = append(out, kv)
	}
	return out
}

// running lists the instances of this host for Hello and heartbeats.
func (a *Agent) running() []hostproto.Instance {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := make([]hostproto.Instance, 0, len(a.instances))
	for _, in := range a.instances {
		out = append(out, hostproto.Instance{FleetId: in.ref.FleetID, InstanceId: in.ref.InstanceID,
			Location: in.ref.Location, Processes: in.bridge.processes(), Stopping: in.stopping, RuntimeVersion: in.runtimeVersion})
	}
	return out
}

// noLongerAssigned is the reason an instance Hoist no longer lists is
// stopped for.
const noLongerAssigned = "Hoist no longer assigns it to this host"

// converge makes what runs here match what Hoist wants (desired, as it
// answered a message sent at asked): an instance it does not list is
// stopped (unless it started after asked: the answer may predate it), one
// it lists with a stop reason is stopped, one whose host drains launches
// no more processes, one listed with a runtime configuration (one it
// missed) takes it.
func (a *Agent) converge(desired []hostproto.Desired, asked time.Time) {
	want := make(map[string]hostproto.Desired, len(desired))
	for _, d := range desired {
		want[d.InstanceId] = d
		if d.RuntimeConfiguration != nil && d.Stop == "" {
			a.log.Info("agent: an instance takes the runtime configuration it missed", "instance", d.InstanceId)
			a.updateRuntime(hostproto.UpdateRuntimeConfiguration{InstanceId: d.InstanceId, RuntimeConfiguration: *d.RuntimeConfiguration})
		}
	}
	type stop struct{ id, reason string }
	var stops []stop
	var drains []string
	a.mu.Lock()
	for id, in := range a.instances {
		d, ok := want[id]
		switch {
		case !ok && in.received.After(asked):
		case !ok:
			stops = append(stops, stop{id, noLongerAssigned})
		case d.Stop != "":
			stops = append(stops, stop{id, d.Stop})
		case d.Drain && !in.drain:
			in.drain = true
			drains = append(drains, id)
		}
	}
	a.mu.Unlock()
	for _, s := range stops {
		a.stopInstance(s.id, s.reason)
	}
	for _, id := range drains {
		a.log.Info("agent: this host drains: the instance launches no new process", "instance", id)
		a.prov.UpdateRuntimeConfiguration(id, api.RuntimeConfiguration{})
	}
}

// stopInstance stops an instance (its download, or its processes).
func (a *Agent) stopInstance(id, reason string) {
	a.mu.Lock()
	in := a.instances[id]
	if in == nil || in.stopping {
		a.mu.Unlock()
		return
	}
	in.stopping = true
	withProvider := in.withProvider
	a.mu.Unlock()
	a.log.Info("agent: stopping an instance", "instance", id, "reason", reason)
	if !withProvider {
		in.cancel()
		return
	}
	if err := a.prov.StopInstance(id, reason); err != nil && !errors.Is(err, fleets.ErrUnknownInstance) {
		a.log.Warn("agent: stopping an instance", "instance", id, "err", err)
	}
}

// forget drops an instance that stopped.
func (a *Agent) forget(id string) {
	a.mu.Lock()
	in := a.instances[id]
	delete(a.instances, id)
	a.mu.Unlock()
	if in != nil {
		in.cancel()
		a.builds.release(in.buildID)
	}
}

// endProcess serves StopProcess and KillProcess.
func (a *Agent) endProcess(r *wsrpc.Request) error {
	var m hostproto.StopProcess
	if err := r.Decode(&m); err != nil {
		return err
	}
	end := a.prov.StopProcess
	if r.Action == hostproto.ActionKillProcess {
		end = a.prov.KillProcess
	}
	if err := end(m.ProcessId, m.Reason); err != nil {
		if errors.Is(err, fleets.ErrUnknownProcess) {
			return wsrpc.Errorf(404, "no process %s runs here", m.ProcessId)
		}
		return err
	}
	return nil
}

// updateRuntime gives an instance its fleet's runtime configuration: it
// is recorded (and reported), and applied unless its host drains or the
// provider does not run it yet (setUp then starts it with it).
func (a *Agent) updateRuntime(m hostproto.UpdateRuntimeConfiguration) {
	a.mu.Lock()
	in := a.instances[m.InstanceId]
	apply := in != nil && in.withProvider && !in.drain && !in.stopping
	if in != nil {
		in.runtime, in.runtimeVersion = m.RuntimeConfiguration, hostproto.RuntimeVersion(m.RuntimeConfiguration)
	}
	a.mu.Unlock()
	if apply {
		a.prov.UpdateRuntimeConfiguration(m.InstanceId, m.RuntimeConfiguration)
	}
}

// validName reports whether an ID can name a file.
func validName(id string) bool {
	return id != "" && id != "." && id != ".." && len(id) <= 128 && !strings.ContainsAny(id, `/\`+"\x00")
}

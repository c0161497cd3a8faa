package fleets

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hoistgg/hoist/internal/api"
	"github.com/hoistgg/hoist/internal/clocktest"
	"github.com/hoistgg/hoist/internal/hosting"
	"github.com/hoistgg/hoist/internal/sessions"
	"github.com/hoistgg/hoist/internal/store"
	"github.com/hoistgg/hoist/internal/store/journal"
)

// fakeBuilds holds builds by ID.
type fakeBuilds struct {
	mu     sync.Mutex
	builds map[string]api.Build
	dir    string
	// elsewhere: the builds' files are on another replica (BuildDir fails).
	elsewhere bool
}

func (b *fakeBuilds) Build(_ context.Context, _ store.Tx, id string) (api.Build, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	bd, ok := b.builds[id]
	if !ok {
		return api.Build{}, api.NewNotFoundException("build %s does not exist", id)
	}
	return bd, nil
}

// FleetBuild is Build: the fake keeps no deleted build's files.
func (b *fakeBuilds) FleetBuild(ctx context.Context, tx store.Tx, id string) (api.Build, error) {
	return b.Build(ctx, tx, id)
}

func (b *fakeBuilds) BuildDir(_ context.Context, id string) (string, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if bd, ok := b.builds[id]; !ok || bd.Status != api.BuildStatusReady {
		return "", errors.New("build " + id + " is not READY")
	}
	if b.elsewhere {
		return "", errors.New("build " + id + " is held by another replica")
	}
	return b.dir, nil
}

func (b *fakeBuilds) set(id string, st api.BuildStatus) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if st == "" {
		delete(b.builds, id)
		return
	}
	b.builds[id] = api.Build{BuildId: api.String(id), BuildArn: api.String("arn:aws:gamelift:us-west-2::build/" + id),
		Status: st, OperatingSystem: api.OperatingSystemAmazonLinux2023}
}

// fakeInstance is an instance the fake provider was asked to run.
type fakeInstance struct {
	spec    InstanceSpec
	hooks   Hooks
	rc      api.RuntimeConfiguration
	stopped string // the StopInstance reason
	gone    bool   // InstanceStopped was reported
	procs   []string
}

// fakeProvider records what it is asked; tests play the instances through
// their hooks.
type fakeProvider struct {
	mu        sync.Mutex
	dir       string
	instances map[string]*fakeInstance
	order     []string
	stopProc  []string
	// autoStop reports InstanceStopped as soon as StopInstance is called.
	autoStop bool
}

func (p *fakeProvider) Layout(fleetID, instanceID string) InstanceLayout {
	dir := filepath.Join(p.dir, fleetID, instanceID)
	return InstanceLayout{Dir: dir, GameRoot: filepath.Join(dir, "game"), CertificateDir: filepath.Join(dir, "certificates")}
}

func (p *fakeProvider) StartInstance(_ context.Context, spec InstanceSpec, hooks Hooks) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.instances[spec.InstanceID] = &fakeInstance{spec: spec, hooks: hooks, rc: spec.RuntimeConfiguration}
	p.order = append(p.order, spec.InstanceID)
	return nil
}

func (p *fakeProvider) UpdateRuntimeConfiguration(id string, rc api.RuntimeConfiguration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if in := p.instances[id]; in != nil {
		in.rc = rc
	}
}

func (p *fakeProvider) StopInstance(id, reason string) error {
	p.mu.Lock()
	in := p.instances[id]
	if in == nil || in.gone {
		p.mu.Unlock()
		return ErrUnknownInstance
	}
	in.stopped = reason
	auto := p.autoStop
	p.mu.Unlock()
	if auto {
		p.finish(id)
	}
	return nil
}

// finish reports that an instance stopped.
func (p *fakeProvider) finish(id string) {
	p.mu.Lock()
	in := p.instances[id]
	in.gone = true
	p.mu.Unlock()
	in.hooks.InstanceStopped(context.Background())
}

func (p *fakeProvider) StopProcess(id, reason string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, in := range p.instances {
		if !in.gone && slices.Contains(in.procs, id) {
			p.stopProc = append(p.stopProc, id+":"+reason)
			return nil
		}
	}
	return ErrUnknownProcess
}

func (p *fakeProvider) KillProcess(id, reason string) error {
	return p.StopProcess(id, "kill:"+reason)
}

func (p *fakeProvider) Instances() []InstanceRef {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []InstanceRef
	for _, id := range p.order {
		if in := p.instances[id]; !in.gone {
			out = append(out, in.spec.InstanceRef)
		}
	}
	return out
}

func (p *fakeProvider) Close() error { return nil }

// get returns an instance by ID.
func (p *fakeProvider) get(id string) *fakeInstance {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.instances[id]
}

// started returns the IDs of the instances started, in order.
func (p *fakeProvider) started() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.order)
}

// forget drops every instance as if the host restarted.
func (p *fakeProvider) forget() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, in := range p.instances {
		in.gone = true
	}
}

// okMessenger accepts every message and records them.
type okMessenger struct {
	mu   sync.Mutex
	msgs []string
}

func (m *okMessenger) SendToProcess(_ context.Context, id string, msg hosting.Message) error {
	m.mu.Lock()
	m.msgs = append(m.msgs, id+":"+fmt.Sprint(msg["Action"]))
	m.mu.Unlock()
	return nil
}

// eventsProxy lets the fleets Service be built before sessions.
type eventsProxy struct{ ev hosting.ProcessEvents }

func (e *eventsProxy) ProcessLaunched(ctx context.Context, p hosting.Process) error {
	return e.ev.ProcessLaunched(ctx, p)
}

func (e *eventsProxy) ProcessExited(ctx context.Context, id string, code int, reason string) error {
	return e.ev.ProcessExited(ctx, id, code, reason)
}

func (e *eventsProxy) ProcessLost(ctx context.Context, id, reason string) error {
	return e.ev.(hosting.ProcessLosses).ProcessLost(ctx, id, reason)
}

// harness is a fleets Service with a real sessions Service over a fresh
// SQLite store, a fake provider and fake builds.
type harness struct {
	t      testing.TB
	ctx    context.Context
	st     store.Store
	clock  *clocktest.Clock
	builds *fakeBuilds
	prov   *fakeProvider
	msgr   *okMessenger
	svc    *Service
	sess   *sessions.Service
	sdk    hosting.ProcessAPI
	conns  int
}

var t0 = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

func newHarness(t testing.TB, mod ...func(*Config)) *harness {
	t.Helper()
	st, err := journal.Open(filepath.Join(t.TempDir(), "store"), journal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	h := &harness{t: t, ctx: context.Background(), st: st, clock: clocktest.New(t0),
		builds: &fakeBuilds{builds: map[string]api.Build{}, dir: t.TempDir()},
		prov:   &fakeProvider{dir: t.TempDir(), instances: map[string]*fakeInstance{}},
		msgr:   &okMessenger{}}
	h.builds.set("build-1", api.BuildStatusReady)
	proxy := &eventsProxy{}
	cfg := Config{Store: st, Region: "us-west-2", Builds: h.builds, Provider: h.prov, Events: proxy, Messenger: h.msgr,
		Now: h.clock.Now, ReplicaID: "r1", SDKEndpoint: "ws://127.0.0.1:9080/sdk", DataDir: t.TempDir(),
		ProcessEnv: []string{"HEALTHCHECK_INTERVAL=5"}}
	for _, m := range mod {
		m(&cfg)
	}
	if h.svc, err = New(cfg); err != nil {
		t.Fatal(err)
	}
	h.sess, err = sessions.New(sessions.Config{Store: st, Region: "us-west-2", Messenger: h.msgr, Host: h.svc,
		OnProcessReady: h.svc.OnProcessReady, Now: h.clock.Now, ReplicaID: "r1", DataDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	proxy.ev = h.sess
	h.sdk = h.sess.ProcessAPI()
	return h
}

// ec2Input is a CreateFleet request for an EC2 fleet of build-1 running n
// processes per instance.
func ec2Input(n int32) *api.CreateFleetInput {
	return &api.CreateFleetInput{Name: api.String("test"), BuildId: api.String("build-1"),
		EC2InstanceType: api.EC2InstanceTypeC5Large,
		RuntimeConfiguration: &api.RuntimeConfiguration{ServerProcesses: []api.ServerProcess{{
			LaunchPath: api.String("/local/game/server"), Parameters: api.String("-port 7777"), ConcurrentExecutions: api.Int32(n)}}}}
}

// createFleet creates a fleet and returns its ID.
func (h *harness) createFleet(in *api.CreateFleetInput) string {
	h.t.Helper()
	out, err := h.svc.CreateFleet(h.ctx, in)
	if err != nil {
		h.t.Fatal(err)
	}
	return *out.FleetAttributes.FleetId
}

func (h *harness) reconcile() {
	h.t.Helper()
	if err := h.svc.Reconcile(h.ctx); err != nil {
		h.t.Fatal(err)
	}
}

// fleet reads a fleet record.
func (h *harness) fleet(id string) *fleetRec {
	h.t.Helper()
	var f *fleetRec
	err := h.st.View(h.ctx, func(tx store.Tx) error {
		var err error
		f, err = getFleet(h.ctx, tx, id)
		return err
	})
	if err != nil {
		h.t.Fatal(err)
	}
	return f
}

func (h *harness) status(id string) api.FleetStatus { return h.fleet(id).status() }

// compute reads a compute record (nil when there is none).
func (h *harness) compute(fleetID, name string) *hosting.Compute {
	h.t.Helper()
	var c *hosting.Compute
	err := h.st.View(h.ctx, func(tx store.Tx) error {
		var err error
		c, err = getCompute(h.ctx, tx, fleetID, name)
		return ignoreNotFound(err)
	})
	if err != nil {
		h.t.Fatal(err)
	}
	return c
}

// events returns a fleet's event codes in order.
func (h *harness) events(id string) []api.EventCode {
	h.t.Helper()
	out, err := h.svc.DescribeFleetEvents(h.ctx, &api.DescribeFleetEventsInput{FleetId: api.String(id), Limit: api.Int32(1000)})
	if err != nil {
		h.t.Fatal(err)
	}
	var codes []api.EventCode
	for _, e := range out.Events {
		codes = append(codes, e.EventCode)
	}
	return codes
}

// setUp plays an instance's setup steps through its hooks.
func (h *harness) setUp(instanceID string) {
	in := h.prov.get(instanceID)
	for _, s := range []Step{StepDownload, StepValidate, StepBuild, StepActivate} {
		in.hooks.StepStarted(h.ctx, s)
	}
}

// launch plays the start of a server process on an instance and returns
// its ID.
func (h *harness) launch(instanceID string) string {
	h.prov.mu.Lock()
	in := h.prov.instances[instanceID]
	id := fmt.Sprintf("process-%d-%s", len(in.procs), strings.TrimPrefix(instanceID, "i-"))
	in.procs = append(in.procs, id)
	h.prov.mu.Unlock()
	in.hooks.ProcessStarted(h.ctx, ProcessStart{ProcessID: id, LaunchPath: "/local/game/server", StartedAt: h.clock.Now()})
	return id
}

// ready connects a process and has it call ProcessReady.
func (h *harness) ready(fleetID, instanceID, processID string) hosting.Conn {
	h.t.Helper()
	h.conns++
	c := hosting.Conn{ConnID: fmt.Sprint("conn-", h.conns), ProcessID: processID, FleetID: fleetID, ComputeName: instanceID}
	if err := h.sdk.Connected(h.ctx, c); err != nil {
		h.t.Fatal(err)
	}
	if err := h.sdk.ProcessReady(h.ctx, c, 7777, nil); err != nil {
		h.t.Fatal(err)
	}
	return c
}

// activeFleet creates an EC2 fleet and brings it to ACTIVE with one
// instance running n ready processes; it returns the fleet and instance IDs.
func (h *harness) activeFleet(in *api.CreateFleetInput) (string, string) {
	h.t.Helper()
	id := h.createFleet(in)
	h.reconcile()
	inst := h.prov.started()[len(h.prov.started())-1]
	h.setUp(inst)
	n := int(api.ToInt32(in.RuntimeConfiguration.ServerProcesses[0].ConcurrentExecutions))
	for range n {
		h.ready(id, inst, h.launch(inst))
	}
	h.reconcile()
	if st := h.status(id); st != api.FleetStatusActive {
		h.t.Fatalf("fleet is %s, want ACTIVE", st)
	}
	return id, inst
}

// wantErr checks that err is of the modeled error type T.
func wantErr[T error](t testing.TB, err error) {
	t.Helper()
	var target T
	if !errors.As(err, &target) {
		t.Fatalf("error %v, want %T", err, target)
	}
}

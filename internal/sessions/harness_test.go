package sessions

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/hoistgg/hoist/internal/api"
	"github.com/hoistgg/hoist/internal/clocktest"
	"github.com/hoistgg/hoist/internal/hosting"
	"github.com/hoistgg/hoist/internal/store"
	"github.com/hoistgg/hoist/internal/store/journal"
)

// sent is one message delivered by fakeMessenger.
type sent struct {
	processID string
	msg       hosting.Message
}

// fakeMessenger records messages; fail makes delivery to a process fail,
// and onSend (run after recording) lets a test play the process.
type fakeMessenger struct {
	mu     sync.Mutex
	msgs   []sent
	fail   map[string]error
	onSend func(processID string, msg hosting.Message)
}

func (m *fakeMessenger) SendToProcess(_ context.Context, processID string, msg hosting.Message) error {
	m.mu.Lock()
	err := m.fail[processID]
	if err == nil {
		m.msgs = append(m.msgs, sent{processID, msg})
	}
	hook := m.onSend
	m.mu.Unlock()
	if err != nil {
		return err
	}
	if hook != nil {
		hook(processID, msg)
	}
	return nil
}

// last returns the last message sent to processID with action.
func (m *fakeMessenger) last(processID, action string) hosting.Message {
	m.mu.Lock()
	defer m.mu.Unlock()
	for i := len(m.msgs) - 1; i >= 0; i-- {
		if m.msgs[i].processID == processID && m.msgs[i].msg["Action"] == action {
			return m.msgs[i].msg
		}
	}
	return nil
}

// fakeHost records TerminateProcess and KillProcess calls.
type fakeHost struct {
	mu    sync.Mutex
	calls []terminateReq
	kills []terminateReq
}

func (h *fakeHost) KillProcess(_ context.Context, processID, reason string) error {
	h.mu.Lock()
	h.kills = append(h.kills, terminateReq{processID, reason})
	h.mu.Unlock()
	return nil
}

func (h *fakeHost) killed() []terminateReq {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]terminateReq(nil), h.kills...)
}

func (h *fakeHost) TerminateProcess(_ context.Context, processID, reason string) error {
	h.mu.Lock()
	h.calls = append(h.calls, terminateReq{processID, reason})
	h.mu.Unlock()
	return nil
}

func (h *fakeHost) ended() []terminateReq {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]terminateReq(nil), h.calls...)
}

// harness is a Service over a fresh SQLite store with fakes at its edges.
type harness struct {
	t      testing.TB
	ctx    context.Context
	st     store.Store
	clock  *clocktest.Clock
	msgr   *fakeMessenger
	host   *fakeHost
	svc    *Service
	sdk    hosting.ProcessAPI
	ready  []string // fleet/location pairs OnProcessReady saw
	readyM sync.Mutex
	ids    int
	idsM   sync.Mutex
}

var t0 = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

func newHarness(t testing.TB, mod ...func(*Config)) *harness {
	t.Helper()
	st, err := journal.Open(filepath.Join(t.TempDir(), "store"), journal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return newHarnessOn(t, st, mod...)
}

// newHarnessOn is newHarness on a store the caller opened (and closes).
func newHarnessOn(t testing.TB, st store.Store, mod ...func(*Config)) *harness {
	t.Helper()
	var err error
	h := &harness{t: t, ctx: context.Background(), st: st, clock: clocktest.New(t0),
		msgr: &fakeMessenger{fail: map[string]error{}}, host: &fakeHost{}}
	cfg := Config{Store: st, Region: "us-west-2", Messenger: h.msgr, Host: h.host, Now: h.clock.Now,
		NewID: h.newID, ReplicaID: "r1", DataDir: t.TempDir(),
		LogURL: func(id string) string { return "http://127.0.0.1:9080/hoist/logs/" + id },
		OnProcessReady: func(_ context.Context, _ store.Tx, fleetID, loc string) error {
			h.readyM.Lock()
			h.ready = append(h.ready, fleetID+"/"+loc)
			h.readyM.Unlock()
			return nil
		}}
	for _, m := range mod {
		m(&cfg)
	}
	h.svc, err = New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	h.sdk = h.svc.ProcessAPI()
	return h
}

func (h *harness) newID() string {
	h.idsM.Lock()
	defer h.idsM.Unlock()
	h.ids++
	return fmt.Sprintf("00000000-0000-4000-8000-%012d", h.ids)
}

// fleetOpt changes a fleet before it is stored.
type fleetOpt func(*hosting.Fleet)

func anywhere(f *hosting.Fleet) {
	f.Attributes.ComputeType = api.ComputeTypeAnywhere
	f.HomeLocation = "custom-home"
	f.Locations = []hosting.FleetLocation{{Location: "custom-home", Status: api.FleetStatusActive}}
}

func status(st api.FleetStatus) fleetOpt {
	return func(f *hosting.Fleet) { f.Attributes.Status = st; f.Locations[0].Status = st }
}

// addFleet stores an ACTIVE EC2 fleet in us-west-2 with a remote location
// us-east-1 (or what opts make of it).
func (h *harness) addFleet(id string, opts ...fleetOpt) *hosting.Fleet {
	h.t.Helper()
	f := &hosting.Fleet{
		Attributes: api.FleetAttributes{FleetId: api.String(id), Status: api.FleetStatusActive,
			FleetArn:    api.String("arn:aws:gamelift:us-west-2:123456789012:fleet/" + id),
			ComputeType: api.ComputeTypeEc2, NewGameSessionProtectionPolicy: api.ProtectionPolicyFullprotection},
		HomeLocation: "us-west-2",
		Locations: []hosting.FleetLocation{{Location: "us-west-2", Status: api.FleetStatusActive},
			{Location: "us-east-1", Status: api.FleetStatusActive}},
	}
	for _, o := range opts {
		o(f)
	}
	h.put(store.Record{Kind: hosting.KindFleet, ID: id, Key: string(f.Attributes.Status)}, f)
	return f
}

func (h *harness) addCompute(fleetID, name, loc string, mod ...func(*hosting.Compute)) {
	h.t.Helper()
	c := &hosting.Compute{FleetID: fleetID, ComputeName: name, Location: loc, Status: api.ComputeStatusActive,
		IPAddress: "127.0.0.1", DNSName: name + ".hoist.test", Host: "r1"}
	for _, m := range mod {
		m(c)
	}
	h.put(store.Record{Kind: hosting.KindCompute, ID: fleetID + "/" + name, Parent: fleetID, Key: loc}, c)
}

func (h *harness) put(rec store.Record, v any) {
	h.t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		h.t.Fatal(err)
	}
	rec.Data = data
	if err := h.st.Update(h.ctx, func(tx store.Tx) error { return tx.Put(h.ctx, rec) }); err != nil {
		h.t.Fatal(err)
	}
}

func conn(fleetID, compute, pid string) hosting.Conn {
	return hosting.Conn{ConnID: "c-" + pid, ProcessID: pid, FleetID: fleetID, ComputeName: compute,
		SDKVersion: "5.6.0", SDKLanguage: "Go"}
}

// readyProcess launches, connects and readies a managed process.
func (h *harness) readyProcess(fleetID, compute, loc, pid string, port int32) hosting.Conn {
	h.t.Helper()
	err := h.svc.ProcessLaunched(h.ctx, hosting.Process{ID: pid, FleetID: fleetID, ComputeName: compute,
		Location: loc, LaunchPath: "/local/game/server"})
	if err != nil {
		h.t.Fatal(err)
	}
	c := conn(fleetID, compute, pid)
	h.must(h.sdk.Connected(h.ctx, c))
	h.must(h.sdk.ProcessReady(h.ctx, c, port, []string{"logs"}))
	return c
}

func (h *harness) must(err error) {
	h.t.Helper()
	if err != nil {
		h.t.Fatal(err)
	}
}

func (h *harness) create(fleetID string, mod ...func(*api.CreateGameSessionInput)) (*api.GameSession, error) {
	in := &api.CreateGameSessionInput{FleetId: api.String(fleetID), MaximumPlayerSessionCount: api.Int32(4)}
	for _, m := range mod {
		m(in)
	}
	out, err := h.svc.CreateGameSession(h.ctx, in)
	if err != nil {
		return nil, err
	}
	return out.GameSession, nil
}

func (h *harness) process(id string) *hosting.Process {
	h.t.Helper()
	var p *hosting.Process
	h.must(h.st.View(h.ctx, func(tx store.Tx) error {
		var err error
		p, err = getProcess(h.ctx, tx, id)
		return err
	}))
	return p
}

func (h *harness) gameSession(id string) *hosting.GameSession {
	h.t.Helper()
	var gs *hosting.GameSession
	h.must(h.st.View(h.ctx, func(tx store.Tx) error {
		var err error
		gs, err = getGameSession(h.ctx, tx, id)
		return err
	}))
	return gs
}

func (h *harness) playerSession(id string) *hosting.PlayerSession {
	h.t.Helper()
	var ps *hosting.PlayerSession
	h.must(h.st.View(h.ctx, func(tx store.Tx) error {
		var err error
		ps, err = getPlayerSession(h.ctx, tx, id)
		return err
	}))
	return ps
}

// sweepAt advances the clock by d and runs the sweep.
func (h *harness) sweepAt(d time.Duration) {
	h.t.Helper()
	h.clock.Advance(d)
	h.must(h.svc.Sweep(h.ctx))
}

// wantCode checks that err is the modeled API error code.
func wantCode(t testing.TB, err error, code string) {
	t.Helper()
	var ae api.Error
	if !errors.As(err, &ae) || ae.ErrorCode() != code {
		t.Fatalf("error = %v, want %s", err, code)
	}
}

// wantSDK checks that err is an SDKError with status.
func wantSDK(t testing.TB, err error, status int) {
	t.Helper()
	var se *hosting.SDKError
	if !errors.As(err, &se) || se.Status != status {
		t.Fatalf("error = %v, want SDK status %d", err, status)
	}
}

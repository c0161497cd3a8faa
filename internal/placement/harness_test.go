package placement

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"

	"github.com/hoistgg/hoist/internal/aliases"
	"github.com/hoistgg/hoist/internal/api"
	"github.com/hoistgg/hoist/internal/clocktest"
	"github.com/hoistgg/hoist/internal/events"
	"github.com/hoistgg/hoist/internal/hosting"
	"github.com/hoistgg/hoist/internal/sessions"
	"github.com/hoistgg/hoist/internal/store"
	"github.com/hoistgg/hoist/internal/store/journal"
	"github.com/hoistgg/hoist/internal/store/postgres"
)

// recorder is a Publisher that keeps every event.
type recorder struct {
	mu  sync.Mutex
	evs []events.Event
}

func (r *recorder) Publish(_ context.Context, _ store.Tx, e events.Event) error {
	r.mu.Lock()
	r.evs = append(r.evs, e)
	r.mu.Unlock()
	return nil
}

// details returns the decoded details of the events recorded so far.
func (r *recorder) details(t testing.TB) []map[string]any {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []map[string]any
	for _, e := range r.evs {
		var d map[string]any
		if err := json.Unmarshal(e.Detail, &d); err != nil {
			t.Fatal(err)
		}
		out = append(out, d)
	}
	return out
}

// messenger records the CreateGameSession messages processes get and, as
// a game server does, activates the game session at once through onCreate
// (when set).
type messenger struct {
	mu       sync.Mutex
	msgs     map[string][]hosting.Message
	onCreate func(pid, gameSessionID string)
}

func (m *messenger) SendToProcess(_ context.Context, pid string, msg hosting.Message) error {
	m.mu.Lock()
	if m.msgs == nil {
		m.msgs = map[string][]hosting.Message{}
	}
	m.msgs[pid] = append(m.msgs[pid], msg)
	onCreate := m.onCreate
	m.mu.Unlock()
	if id, ok := msg["GameSessionId"].(string); ok && msg["Action"] == "CreateGameSession" && onCreate != nil {
		onCreate(pid, id)
	}
	return nil
}

type harness struct {
	t     testing.TB
	ctx   context.Context
	st    store.Store
	clock *clocktest.Clock
	sess  *sessions.Service
	sdk   hosting.ProcessAPI
	msgr  *messenger
	pub   *recorder
	svc   *Service
	mu    sync.Mutex
	ids   int
	// conns are the simulated processes' connections; dud are those that
	// never activate a game session.
	conns map[string]hosting.Conn
	dud   map[string]bool
}

func newHarness(t testing.TB) *harness {
	t.Helper()
	return newHarnessWith(t, journal.Options{BufferedWrites: true})
}

// newHarnessWith opens the journal store with opts (the server's default
// is direct writes).
func newHarnessWith(t testing.TB, opts journal.Options) *harness {
	t.Helper()
	st, err := journal.Open(filepath.Join(t.TempDir(), "store"), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return newHarnessOn(t, st)
}

// newHarnessOn is newHarness on st.
func newHarnessOn(t testing.TB, st store.Store) *harness {
	t.Helper()
	var err error
	h := &harness{t: t, ctx: context.Background(), st: st, clock: clocktest.New(t0), msgr: &messenger{}, pub: &recorder{},
		conns: map[string]hosting.Conn{}, dud: map[string]bool{}}
	h.msgr.onCreate = h.activate
	_, shared := st.(*postgres.Store) // as internal/server configures it
	h.sess, err = sessions.New(sessions.Config{Store: st, Region: "us-west-2", Messenger: h.msgr, Now: h.clock.Now,
		NewID: h.newID, ReplicaID: "r1", DataDir: t.TempDir(), ResolveAlias: aliases.ResolveFleet, Shared: shared})
	if err != nil {
		t.Fatal(err)
	}
	h.sdk = h.sess.ProcessAPI()
	h.svc = New(Config{Store: st, Sessions: h.sess, Region: "us-west-2", Account: "123456789012",
		ResolveAlias: aliases.ResolveFleet, Publisher: h.pub, Now: h.clock.Now, NewID: h.newID,
		Costs: map[string]float64{"c5.large": 2, "c5.large/SPOT": 1}})
	h.sess.SetPlacementHook(h.svc)
	return h
}

// activate activates a game session a simulated process was sent, unless
// the process is a dud.
func (h *harness) activate(pid, gameSessionID string) {
	h.mu.Lock()
	c, dud := h.conns[pid], h.dud[pid]
	h.mu.Unlock()
	if dud || c.ProcessID == "" {
		return
	}
	if err := h.sdk.ActivateGameSession(h.ctx, c, gameSessionID); err != nil {
		h.t.Errorf("ActivateGameSession %s on %s: %v", gameSessionID, pid, err)
	}
}

// activateNow activates a dud process's game session (late).
func (h *harness) activateNow(pid, gameSessionID string) error {
	h.mu.Lock()
	c := h.conns[pid]
	h.mu.Unlock()
	return h.sdk.ActivateGameSession(h.ctx, c, gameSessionID)
}

func (h *harness) newID() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.ids++
	return fmt.Sprintf("00000000-0000-4000-8000-%012d", h.ids)
}

func (h *harness) must(err error) {
	h.t.Helper()
	if err != nil {
		h.t.Fatal(err)
	}
}

func (h *harness) put(rec store.Record, v any) {
	h.t.Helper()
	data, err := json.Marshal(v)
	h.must(err)
	rec.Data = data
	h.must(h.st.Update(h.ctx, func(tx store.Tx) error { return tx.Put(h.ctx, rec) }))
}

// addFleet stores an ACTIVE fleet with these locations (home first) and
// one compute per location.
func (h *harness) addFleet(id string, locs ...string) {
	h.t.Helper()
	f := &hosting.Fleet{
		Attributes: api.FleetAttributes{FleetId: api.String(id), Status: api.FleetStatusActive,
			FleetArn:    api.String("arn:aws:gamelift:us-west-2:123456789012:fleet/" + id),
			ComputeType: api.ComputeTypeEc2, InstanceType: "c5.large", FleetType: api.FleetTypeOnDemand},
		HomeLocation: locs[0],
	}
	for _, l := range locs {
		f.Locations = append(f.Locations, hosting.FleetLocation{Location: l, Status: api.FleetStatusActive})
		c := &hosting.Compute{FleetID: id, ComputeName: "i-" + id + "-" + l, Location: l, Status: api.ComputeStatusActive,
			IPAddress: "127.0.0.1", DNSName: l + ".hoist.test", Host: "r1"}
		h.put(store.Record{Kind: hosting.KindCompute, ID: id + "/" + c.ComputeName, Parent: id, Key: l}, c)
	}
	h.put(store.Record{Kind: hosting.KindFleet, ID: id, Key: string(f.Attributes.Status)}, f)
}

// ready starts, connects and readies a simulated server process.
func (h *harness) ready(fleetID, loc, pid string, port int32) {
	h.t.Helper()
	compute := "i-" + fleetID + "-" + loc
	h.must(h.sess.ProcessLaunched(h.ctx, hosting.Process{ID: pid, FleetID: fleetID, ComputeName: compute, Location: loc}))
	c := hosting.Conn{ConnID: "c-" + pid, ProcessID: pid, FleetID: fleetID, ComputeName: compute, SDKVersion: "5.6.0", SDKLanguage: "Go"}
	h.must(h.sdk.Connected(h.ctx, c))
	h.mu.Lock()
	h.conns[pid] = c
	h.mu.Unlock()
	h.must(h.sdk.ProcessReady(h.ctx, c, port, nil))
}

// readyDud is ready for a process that never activates its game session.
func (h *harness) readyDud(fleetID, loc, pid string, port int32) {
	h.t.Helper()
	h.mu.Lock()
	h.dud[pid] = true
	h.mu.Unlock()
	h.ready(fleetID, loc, pid, port)
}

func fleetARN(id string) string { return "arn:aws:gamelift:us-west-2:123456789012:fleet/" + id }

func (h *harness) queue(name string, mod func(*api.CreateGameSessionQueueInput), dests ...string) *api.GameSessionQueue {
	h.t.Helper()
	in := &api.CreateGameSessionQueueInput{Name: api.String(name), NotificationTarget: api.String("arn:aws:sns:us-west-2:123456789012:placements"),
		CustomEventData: api.String("custom")}
	for _, d := range dests {
		in.Destinations = append(in.Destinations, api.GameSessionQueueDestination{DestinationArn: api.String(d)})
	}
	if mod != nil {
		mod(in)
	}
	out, err := h.svc.CreateGameSessionQueue(h.ctx, in)
	h.must(err)
	return out.GameSessionQueue
}

func (h *harness) start(queue, id string, mod func(*api.StartGameSessionPlacementInput)) *api.GameSessionPlacement {
	h.t.Helper()
	in := &api.StartGameSessionPlacementInput{GameSessionQueueName: api.String(queue), PlacementId: api.String(id),
		MaximumPlayerSessionCount: api.Int32(4)}
	if mod != nil {
		mod(in)
	}
	out, err := h.svc.StartGameSessionPlacement(h.ctx, in)
	h.must(err)
	return out.GameSessionPlacement
}

func (h *harness) describe(id string) *api.GameSessionPlacement {
	h.t.Helper()
	out, err := h.svc.DescribeGameSessionPlacement(h.ctx, &api.DescribeGameSessionPlacementInput{PlacementId: api.String(id)})
	h.must(err)
	return out.GameSessionPlacement
}

func (h *harness) process() {
	h.t.Helper()
	h.must(h.svc.Process(h.ctx))
}

// gameSession describes one game session.
func (h *harness) gameSession(id string) api.GameSession {
	h.t.Helper()
	out, err := h.sess.DescribeGameSessions(h.ctx, &api.DescribeGameSessionsInput{GameSessionId: api.String(id)})
	h.must(err)
	if len(out.GameSessions) != 1 {
		h.t.Fatalf("game session %s: %d found", id, len(out.GameSessions))
	}
	return out.GameSessions[0]
}

func wantCode(t testing.TB, err error, code string) {
	t.Helper()
	var ae api.Error
	if !errors.As(err, &ae) || ae.ErrorCode() != code {
		t.Fatalf("error = %v, want %s", err, code)
	}
}

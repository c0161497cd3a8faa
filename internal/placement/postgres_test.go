package placement

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/hoistgg/hoist/internal/aliases"
	"github.com/hoistgg/hoist/internal/api"
	"github.com/hoistgg/hoist/internal/hosting"
	"github.com/hoistgg/hoist/internal/store"
	"github.com/hoistgg/hoist/internal/store/postgres/pgtest"
	"github.com/hoistgg/hoist/internal/store/postgres/pgtest/pgstore"
)

// TestAttemptsAtOnceTakeDistinctProcessesOnPostgres: one pass of the loop
// on PostgreSQL attempts its placements at once (workers), and they take
// different processes without a transaction run again: each attempt's
// Claim passes over the processes the others hold, instead of every
// attempt reading the fleet's first idle process and all but one losing
// the race (serializable conflicts, then serial reruns). Exactly once:
// every placement has a game session, each on a process of its own.
func TestAttemptsAtOnceTakeDistinctProcessesOnPostgres(t *testing.T) {
	st := pgstore.Open(t)
	h := newHarnessOn(t, st)
	h.addFleet("fleet-a", "us-west-2")
	const n = 3 * workers
	for i := range n {
		h.readyDud("fleet-a", "us-west-2", fmt.Sprintf("p%d", i), int32(7000+i)) // keeps its game session ACTIVATING
	}
	h.queue("q1", nil, fleetARN("fleet-a"))
	for i := range n {
		h.start("q1", fmt.Sprintf("pl-%d", i), nil)
	}
	g, ok, err := st.AcquireLease(h.ctx, store.ShardLeasePrefix(loopName)+"q1", "r1", time.Minute)
	if err != nil || !ok {
		t.Fatalf("lease: %v %v", ok, err)
	}
	before := st.Stats()
	h.must(h.svc.processHeld(h.ctx, store.HeldOf(map[string]store.Grant{"q1": g}))) // as Run's passes: fenced
	after := st.Stats()
	ports := map[int32]string{}
	for i := range n {
		id := fmt.Sprintf("pl-%d", i)
		pl := h.describe(id)
		if pl.Status != api.GameSessionPlacementStatePending || pl.GameSessionId == nil {
			t.Fatalf("placement %s is %s with game session %v, want PENDING with an attempt", id, pl.Status, pl.GameSessionId)
		}
		port := api.ToInt32(h.gameSession(*pl.GameSessionId).Port)
		if other, ok := ports[port]; ok {
			t.Fatalf("placements %s and %s were both placed on the process of port %d", other, id, port)
		}
		ports[port] = id
	}
	if r := after.Retries - before.Retries; r != 0 {
		t.Errorf("the pass ran %d transactions again after a conflict, want 0 (%d commits)", r, after.Commits-before.Commits)
	}
}

// TestActivationsAndHeartbeatsAtOnceOnPostgres: the game sessions of
// placements in flight are activated by their processes at once, while
// each process also reports its health, on PostgreSQL, and no transaction
// runs again after a conflict: the activations and heartbeats are Claims
// holding the process, game session and placement rows they write, so
// those meeting on a row wait for each other instead of failing and
// running again alone. Every placement ends FULFILLED.
func TestActivationsAndHeartbeatsAtOnceOnPostgres(t *testing.T) {
	st := pgstore.Open(t)
	h := newHarnessOn(t, st)
	h.addFleet("fleet-a", "us-west-2")
	const n = 3 * workers
	for i := range n {
		h.readyDud("fleet-a", "us-west-2", fmt.Sprintf("p%d", i), int32(7000+i))
	}
	h.queue("q1", nil, fleetARN("fleet-a"))
	for i := range n {
		h.start("q1", fmt.Sprintf("pl-%d", i), nil)
	}
	h.process()
	gsOf := map[string]string{} // process -> its game session
	for i := range n {
		pl := h.describe(fmt.Sprintf("pl-%d", i))
		if pl.GameSessionId == nil {
			t.Fatalf("placement pl-%d has no game session", i)
		}
		gsOf[fmt.Sprintf("p%d", api.ToInt32(h.gameSession(*pl.GameSessionId).Port)-7000)] = *pl.GameSessionId
	}
	before := st.Stats()
	var wg sync.WaitGroup
	errs := make(chan error, 2*n)
	for pid, gs := range gsOf {
		h.mu.Lock()
		c := h.conns[pid]
		h.mu.Unlock()
		wg.Go(func() { errs <- h.activateNow(pid, gs) })
		wg.Go(func() { errs <- h.sdk.Heartbeat(h.ctx, c, true) })
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		h.must(err)
	}
	after := st.Stats()
	for i := range n {
		if pl := h.describe(fmt.Sprintf("pl-%d", i)); pl.Status != api.GameSessionPlacementStateFulfilled {
			t.Errorf("placement pl-%d is %s, want FULFILLED", i, pl.Status)
		}
	}
	if r := after.Retries - before.Retries; r != 0 {
		t.Errorf("%d activations and %d heartbeats at once ran %d transactions again after a conflict, want 0 (%d commits)",
			n, n, r, after.Commits-before.Commits)
	}
}

// orderingRecorder is a recorder whose events take an order key's next
// number, as events.Service's do for a topic that webhooks receive.
type orderingRecorder struct{ *recorder }

func (orderingRecorder) Orders(string) bool { return true }

// TestActivationAndHeartbeatInUpdateOnPostgres: on PostgreSQL an
// activation whose placement event takes an order number
// (events.Service.Orders), and the unhealthy report that ends a process,
// do not fit a Claim (sessions.ErrRunInUpdate): they run again as Updates
// and do all they did, the placement FULFILLED with its event, the
// process TERMINATING.
func TestActivationAndHeartbeatInUpdateOnPostgres(t *testing.T) {
	st := pgstore.Open(t)
	h := newHarnessOn(t, st)
	h.svc.cfg.Publisher = orderingRecorder{h.pub}
	h.addFleet("fleet-a", "us-west-2")
	h.readyDud("fleet-a", "us-west-2", "p0", 7000)
	h.queue("q1", nil, fleetARN("fleet-a"))
	h.start("q1", "pl-0", nil)
	h.process()
	pl := h.describe("pl-0")
	if pl.GameSessionId == nil {
		t.Fatal("placement pl-0 has no game session")
	}
	h.must(h.activateNow("p0", *pl.GameSessionId))
	if got := h.describe("pl-0").Status; got != api.GameSessionPlacementStateFulfilled {
		t.Fatalf("placement pl-0 is %s after its activation, want FULFILLED", got)
	}
	h.pub.mu.Lock()
	n := len(h.pub.evs)
	h.pub.mu.Unlock()
	if n != 1 {
		t.Errorf("%d events published, want 1 (PlacementFulfilled)", n)
	}
	h.mu.Lock()
	c := h.conns["p0"]
	h.mu.Unlock()
	for range 3 { // sessions' default MaxBadReports
		h.must(h.sdk.Heartbeat(h.ctx, c, false))
	}
	var p hosting.Process
	h.must(st.View(h.ctx, func(tx store.Tx) error {
		_, err := store.GetJSON(h.ctx, tx, hosting.KindProcess, "p0", &p)
		return err
	}))
	if p.State != hosting.ProcessTerminating || p.EndReason != "SERVER_PROCESS_TERMINATED_UNHEALTHY" {
		t.Errorf("process p0 is %s (%q) after 3 unhealthy reports, want TERMINATING for SERVER_PROCESS_TERMINATED_UNHEALTHY", p.State, p.EndReason)
	}
}

// TestStartWakesTheQueueHolderOnPostgres: a placement started through
// replica A is placed at once by the loop of replica B, which holds the
// queue's shard, although B's loop would not look again for an hour: A's
// StartGameSessionPlacement wakes the holder after its commit (a NOTIFY
// that B's listener turns into a kick of its pass).
func TestStartWakesTheQueueHolderOnPostgres(t *testing.T) {
	st := pgstore.Open(t)
	h := newHarnessOn(t, st) // h.svc is replica A: its wakes only, no loop
	h.addFleet("fleet-a", "us-west-2")
	h.ready("fleet-a", "us-west-2", "p1", 7001)
	h.queue("q1", nil, fleetARN("fleet-a"))
	b := New(Config{Store: st, Sessions: h.sess, Region: "us-west-2", Account: "123456789012",
		ResolveAlias: aliases.ResolveFleet, Now: h.clock.Now, NewID: h.newID, ReplicaID: "B", Interval: time.Hour})
	h.sess.SetPlacementHook(b)
	ctx, cancel := context.WithCancel(h.ctx)
	done := make(chan error, 1)
	go func() { done <- b.Run(ctx) }()
	aDone := make(chan struct{})
	go func() { h.svc.wake.Run(ctx); close(aDone) }()
	t.Cleanup(func() { cancel(); <-done; <-aDone })
	name := store.ShardLeasePrefix(loopName) + "q1"
	pgtest.WaitFor(t, "B holds the queue's shard", func() bool {
		gs, err := st.Leases(h.ctx, name)
		return err == nil && len(gs) == 1 && gs[0].Holder == "B"
	})
	h.start("q1", "pl-1", nil)
	pgtest.WaitFor(t, "the placement FULFILLED by B", func() bool {
		return h.describe("pl-1").Status == api.GameSessionPlacementStateFulfilled
	})
}

// TestReadyAndDisconnectAtOnceOnPostgres: many processes of a fleet
// reporting ProcessReady at once, then losing their sockets at once (a
// host restarting its game servers, a replica dying), commit without
// running again after a conflict: each is a Claim holding its process,
// the fleet read unheld. A fleet location's first ready process, which
// makes the location ACTIVE, runs as an Update
// (sessions.TestReadyHookWritesInUpdateOnPostgres).
func TestReadyAndDisconnectAtOnceOnPostgres(t *testing.T) {
	st := pgstore.Open(t)
	h := newHarnessOn(t, st)
	h.addFleet("fleet-a", "us-west-2")
	h.readyDud("fleet-a", "us-west-2", "p-first", 6999)
	const n = 48
	compute := "i-fleet-a-us-west-2"
	// Half the processes Hoist launched (their records exist before they
	// connect), half were started by hand (their connect creates them).
	conns := make([]hosting.Conn, n)
	for i := range n {
		pid := fmt.Sprintf("p%03d", i)
		if i%2 == 0 {
			h.must(h.sess.ProcessLaunched(h.ctx, hosting.Process{ID: pid, FleetID: "fleet-a", ComputeName: compute, Location: "us-west-2"}))
		}
		conns[i] = hosting.Conn{ConnID: "c-" + pid, ProcessID: pid, FleetID: "fleet-a", ComputeName: compute, SDKVersion: "5.6.0", SDKLanguage: "Go"}
	}
	atOnce := func(what string, call func(c hosting.Conn) error) {
		t.Helper()
		before := st.Stats()
		var wg sync.WaitGroup
		errs := make(chan error, n)
		for _, c := range conns {
			wg.Go(func() { errs <- call(c) })
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			h.must(err)
		}
		after := st.Stats()
		if r := after.Retries - before.Retries; r != 0 {
			t.Errorf("%d %s at once ran %d transactions again after a conflict, want 0 (%d commits)",
				n, what, r, after.Commits-before.Commits)
		}
	}
	atOnce("connects", func(c hosting.Conn) error {
		return h.sdk.Connected(h.ctx, c)
	})
	atOnce("ProcessReady calls", func(c hosting.Conn) error {
		return h.sdk.ProcessReady(h.ctx, c, 7000, nil)
	})
	atOnce("disconnects", func(c hosting.Conn) error {
		h.sdk.Disconnected(h.ctx, c, false)
		return nil
	})
	for _, c := range conns {
		var p hosting.Process
		h.must(st.View(h.ctx, func(tx store.Tx) error {
			_, err := store.GetJSON(h.ctx, tx, hosting.KindProcess, c.ProcessID, &p)
			return err
		}))
		if p.State != hosting.ProcessActive || p.ConnectedTo != "" || p.Port != 7000 {
			t.Fatalf("process %s after ProcessReady and a disconnect: state %s, connected to %q, port %d",
				p.ID, p.State, p.ConnectedTo, p.Port)
		}
	}
}

// TestSameProcessConnectsAtOnceOnPostgres: 8 sockets of one process that
// has no record yet connect at once on PostgreSQL: each connect succeeds
// (one creates the record; one that finds it created meanwhile runs again
// and takes it over), and the record names one of them.
func TestSameProcessConnectsAtOnceOnPostgres(t *testing.T) {
	h := newHarnessOn(t, pgstore.Open(t))
	h.addFleet("fleet-a", "us-west-2")
	// Open 8 of the pool's connections first, so that the connects
	// below do not wait for new ones one by one.
	var wg sync.WaitGroup
	var open sync.WaitGroup
	open.Add(8)
	for range 8 {
		wg.Go(func() {
			h.must(h.st.View(h.ctx, func(store.Tx) error { open.Done(); open.Wait(); return nil }))
		})
	}
	wg.Wait()
	conns := map[string]bool{}
	start := make(chan struct{})
	for i := range 8 {
		c := hosting.Conn{ConnID: fmt.Sprintf("c-%d", i), ProcessID: "p-shared", FleetID: "fleet-a", ComputeName: "i-fleet-a-us-west-2"}
		conns[c.ConnID] = true
		wg.Go(func() {
			<-start
			if err := h.sdk.Connected(h.ctx, c); err != nil {
				t.Errorf("connect %s: %v", c.ConnID, err)
			}
		})
	}
	close(start)
	wg.Wait()
	var p hosting.Process
	h.must(h.st.View(h.ctx, func(tx store.Tx) error {
		_, err := store.GetJSON(h.ctx, tx, hosting.KindProcess, "p-shared", &p)
		return err
	}))
	if !conns[p.ConnID] || p.ConnectedTo != "r1" || p.State != hosting.ProcessLaunching {
		t.Errorf("process after 8 connects at once: conn %q on %q, %s", p.ConnID, p.ConnectedTo, p.State)
	}
}

// TestStartsAtOnceOnPostgres: 64 StartGameSessionPlacement calls at once
// on PostgreSQL, each inserting its placement with its commit
// (store.InsertNew), all commit PENDING; a used ID, which fails the
// commit there, is refused as on the embedded stores.
func TestStartsAtOnceOnPostgres(t *testing.T) {
	h := newHarnessOn(t, pgstore.Open(t))
	h.addFleet("fleet-a", "us-west-2")
	h.queue("q1", nil, fleetARN("fleet-a"))
	var wg sync.WaitGroup
	for i := range 64 {
		wg.Go(func() {
			if _, err := h.svc.StartGameSessionPlacement(h.ctx, &api.StartGameSessionPlacementInput{GameSessionQueueName: api.String("q1"),
				PlacementId: api.String(fmt.Sprintf("pl-%03d", i)), MaximumPlayerSessionCount: api.Int32(4)}); err != nil {
				t.Errorf("start %d: %v", i, err)
			}
		})
	}
	wg.Wait()
	for i := range 64 {
		if p := h.describe(fmt.Sprintf("pl-%03d", i)); p.Status != api.GameSessionPlacementStatePending {
			t.Fatalf("placement %d is %s", i, p.Status)
		}
	}
	_, err := h.svc.StartGameSessionPlacement(h.ctx, &api.StartGameSessionPlacementInput{GameSessionQueueName: api.String("q1"),
		PlacementId: api.String("pl-007"), MaximumPlayerSessionCount: api.Int32(2)})
	wantCode(t, err, "InvalidRequestException")
	if p := h.describe("pl-007"); p.Status != api.GameSessionPlacementStatePending || api.ToInt32(p.MaximumPlayerSessionCount) != 4 {
		t.Errorf("the refused start changed the placement: %+v", p)
	}
}

// TestActivationRoundTripsOnPostgres pins what activating a placement's
// game session costs on PostgreSQL: its process and game session in one
// round trip, its placement and queue in another (the game session names
// the queue), then the writes with COMMIT; a game session an earlier
// Hoist placed (without the queue's name) reads the placement, then the
// queue, and is fulfilled all the same (earlierPlacedSession).
func TestActivationRoundTripsOnPostgres(t *testing.T) {
	st := pgstore.Open(t)
	h := newHarnessOn(t, st)
	h.addFleet("fleet-a", "us-west-2")
	h.readyDud("fleet-a", "us-west-2", "p0", 7000)
	h.readyDud("fleet-a", "us-west-2", "p1", 7001)
	h.queue("q1", nil, fleetARN("fleet-a"))
	for _, c := range []struct {
		placement string
		earlier   bool
		want      int64
	}{{"pl-now", false, 3}, {"pl-earlier", true, 4}} {
		h.start("q1", c.placement, nil)
		h.process()
		gsID := api.ToString(h.describe(c.placement).GameSessionId)
		if c.earlier {
			earlierPlacedSession(t, h, gsID)
		}
		pid := fmt.Sprintf("p%d", api.ToInt32(h.gameSession(gsID).Port)-7000)
		before := st.Stats().RoundTrips
		h.must(h.activateNow(pid, gsID))
		if got := st.Stats().RoundTrips - before; got != c.want {
			t.Errorf("%s: the activation took %d round trips, want %d", c.placement, got, c.want)
		}
		if pl := h.describe(c.placement); pl.Status != api.GameSessionPlacementStateFulfilled {
			t.Errorf("%s is %s after its game session's activation, want FULFILLED", c.placement, pl.Status)
		}
	}
}

package placement

import (
	"errors"
	"math"
	"testing"
	"time"

	"github.com/hoistgg/hoist/internal/aliases"
	"github.com/hoistgg/hoist/internal/api"
	"github.com/hoistgg/hoist/internal/hosting"
	"github.com/hoistgg/hoist/internal/store"
	"github.com/hoistgg/hoist/internal/store/postgres/pgtest/pgstore"
)

func TestQueueCRUD(t *testing.T) {
	h := newHarness(t)
	h.addFleet("fleet-a", "us-west-2")
	q := h.queue("q1", nil, fleetARN("fleet-a"))
	if api.ToInt32(q.TimeoutInSeconds) != DefaultTimeout || api.ToString(q.GameSessionQueueArn) != "arn:aws:gamelift:us-west-2:123456789012:gamesessionqueue/q1" {
		t.Fatalf("queue = %+v", q)
	}
	_, err := h.svc.CreateGameSessionQueue(h.ctx, &api.CreateGameSessionQueueInput{Name: api.String("q1")})
	wantCode(t, err, "InvalidRequestException")
	_, err = h.svc.CreateGameSessionQueue(h.ctx, &api.CreateGameSessionQueueInput{Name: api.String("q2"),
		Destinations: []api.GameSessionQueueDestination{{DestinationArn: api.String("arn:aws:gamelift:us-west-2:123456789012:build/build-1")}}})
	wantCode(t, err, "InvalidRequestException")
	_, err = h.svc.CreateGameSessionQueue(h.ctx, &api.CreateGameSessionQueueInput{Name: api.String("q2"), TimeoutInSeconds: api.Int32(601)})
	wantCode(t, err, "InvalidRequestException")
	h.queue("q3", nil)
	h.queue("q2", func(in *api.CreateGameSessionQueueInput) { in.TimeoutInSeconds = api.Int32(30) })

	// All, a page at a time, in name order.
	var names []string
	token := (*string)(nil)
	for {
		out, err := h.svc.DescribeGameSessionQueues(h.ctx, &api.DescribeGameSessionQueuesInput{Limit: api.Int32(2), NextToken: token})
		h.must(err)
		for _, q := range out.GameSessionQueues {
			names = append(names, *q.Name)
		}
		if token = out.NextToken; token == nil {
			break
		}
	}
	if len(names) != 3 || names[0] != "q1" || names[2] != "q3" {
		t.Fatalf("queues = %v", names)
	}
	// By name or ARN; unknown names left out.
	out, err := h.svc.DescribeGameSessionQueues(h.ctx, &api.DescribeGameSessionQueuesInput{
		Names: []string{"arn:aws:gamelift:us-west-2:123456789012:gamesessionqueue/q3", "nope", "q1"}})
	h.must(err)
	if len(out.GameSessionQueues) != 2 || *out.GameSessionQueues[0].Name != "q1" || *out.GameSessionQueues[1].Name != "q3" {
		t.Fatalf("by name: %+v", out.GameSessionQueues)
	}
	_, err = h.svc.DescribeGameSessionQueues(h.ctx, &api.DescribeGameSessionQueuesInput{NextToken: api.String("garbage")})
	wantCode(t, err, "InvalidRequestException")

	up, err := h.svc.UpdateGameSessionQueue(h.ctx, &api.UpdateGameSessionQueueInput{Name: api.String("q2"), TimeoutInSeconds: api.Int32(60),
		Destinations: []api.GameSessionQueueDestination{{DestinationArn: api.String(fleetARN("fleet-a"))}}})
	h.must(err)
	if api.ToInt32(up.GameSessionQueue.TimeoutInSeconds) != 60 || len(up.GameSessionQueue.Destinations) != 1 {
		t.Fatalf("updated = %+v", up.GameSessionQueue)
	}
	_, err = h.svc.UpdateGameSessionQueue(h.ctx, &api.UpdateGameSessionQueueInput{Name: api.String("nope")})
	wantCode(t, err, "NotFoundException")
	_, err = h.svc.DeleteGameSessionQueue(h.ctx, &api.DeleteGameSessionQueueInput{Name: api.String("q2")})
	h.must(err)
	_, err = h.svc.DeleteGameSessionQueue(h.ctx, &api.DeleteGameSessionQueueInput{Name: api.String("q2")})
	wantCode(t, err, "NotFoundException")
}

func TestPlacementFulfilled(t *testing.T) {
	h := newHarness(t)
	h.addFleet("fleet-a", "us-west-2")
	h.queue("q", nil, fleetARN("fleet-a"))
	p := h.start("q", "p1", func(in *api.StartGameSessionPlacementInput) {
		in.GameSessionName = api.String("match")
		in.GameSessionData = api.String("data")
		in.GameProperties = []api.GameProperty{{Key: api.String("mode"), Value: api.String("ctf")}}
		in.DesiredPlayerSessions = []api.DesiredPlayerSession{{PlayerId: api.String("alice"), PlayerData: api.String("x")}, {PlayerId: api.String("bob")}}
	})
	if p.Status != api.GameSessionPlacementStatePending {
		t.Fatalf("status = %s", p.Status)
	}
	h.process() // no process yet: still pending
	if st := h.describe("p1").Status; st != api.GameSessionPlacementStatePending {
		t.Fatalf("without capacity: %s", st)
	}
	h.ready("fleet-a", "us-west-2", "proc-1", 7777)
	h.clock.Advance(time.Second)
	h.process()
	got := h.describe("p1")
	if got.Status != api.GameSessionPlacementStateFulfilled || api.ToInt32(got.Port) != 7777 || api.ToString(got.IpAddress) != "127.0.0.1" ||
		api.ToString(got.DnsName) != "us-west-2.hoist.test" || api.ToString(got.GameSessionRegion) != "us-west-2" ||
		api.ToString(got.GameSessionArn) != "arn:aws:gamelift:us-west-2::gamesession/fleet-a/p1" || len(got.PlacedPlayerSessions) != 2 ||
		got.EndTime == nil {
		t.Fatalf("placement = %+v", got)
	}
	msgs := h.msgr.msgs["proc-1"]
	if len(msgs) != 1 || msgs[0]["Action"] != "CreateGameSession" || msgs[0]["GameSessionData"] != "data" ||
		msgs[0]["GameSessionName"] != "match" || msgs[0]["GameProperties"].(map[string]string)["mode"] != "ctf" {
		t.Fatalf("messages = %v", msgs)
	}
	// The player sessions exist, RESERVED, in the game session.
	ps, err := h.sess.DescribePlayerSessions(h.ctx, &api.DescribePlayerSessionsInput{GameSessionId: got.GameSessionId})
	h.must(err)
	if len(ps.PlayerSessions) != 2 || ps.PlayerSessions[0].Status != api.PlayerSessionStatusReserved {
		t.Fatalf("player sessions = %+v", ps.PlayerSessions)
	}
	ev := h.pub.details(t)
	if len(ev) != 1 || ev[0]["type"] != "PlacementFulfilled" || ev[0]["port"] != "7777" || ev[0]["customEventData"] != "custom" ||
		len(ev[0]["placedPlayerSessions"].([]any)) != 2 || ev[0]["gameSessionRegion"] != "us-west-2" {
		t.Fatalf("events = %v", ev)
	}
	e := h.pub.evs[0]
	if e.Topic != "arn:aws:sns:us-west-2:123456789012:placements" || e.DetailType != DetailType ||
		e.OrderKey != "arn:aws:gamelift:us-west-2:123456789012:gamesessionqueue/q" || len(e.Resources) != 1 || e.Resources[0] != e.OrderKey {
		t.Fatalf("event = %+v", e)
	}
	// Placement IDs are never reused.
	_, err = h.svc.StartGameSessionPlacement(h.ctx, &api.StartGameSessionPlacementInput{GameSessionQueueName: api.String("q"),
		PlacementId: api.String("p1"), MaximumPlayerSessionCount: api.Int32(2)})
	wantCode(t, err, "InvalidRequestException")
	_, err = h.svc.StopGameSessionPlacement(h.ctx, &api.StopGameSessionPlacementInput{PlacementId: api.String("p1")})
	wantCode(t, err, "InvalidRequestException")
}

func TestPlacementStartErrors(t *testing.T) {
	h := newHarness(t)
	h.queue("q", nil)
	for name, in := range map[string]*api.StartGameSessionPlacementInput{
		"NotFoundException": {GameSessionQueueName: api.String("nope"), PlacementId: api.String("a"), MaximumPlayerSessionCount: api.Int32(1)},
		"InvalidRequestException": {GameSessionQueueName: api.String("q"), PlacementId: api.String("b"), MaximumPlayerSessionCount: api.Int32(1),
			DesiredPlayerSessions: []api.DesiredPlayerSession{{PlayerId: api.String("x")}, {PlayerId: api.String("y")}}},
	} {
		_, err := h.svc.StartGameSessionPlacement(h.ctx, in)
		wantCode(t, err, name)
	}
	_, err := h.svc.DescribeGameSessionPlacement(h.ctx, &api.DescribeGameSessionPlacementInput{PlacementId: api.String("nope")})
	wantCode(t, err, "NotFoundException")
}

func TestLatencyChoosesFleetAndRelaxes(t *testing.T) {
	h := newHarness(t)
	h.addFleet("fleet-west", "us-west-2")
	h.addFleet("fleet-east", "us-east-1")
	h.ready("fleet-west", "us-west-2", "w1", 1)
	h.ready("fleet-east", "us-east-1", "e1", 2)
	h.queue("q", func(in *api.CreateGameSessionQueueInput) {
		in.PlayerLatencyPolicies = []api.PlayerLatencyPolicy{policy(50, 10), policy(100, 0)}
	}, fleetARN("fleet-west"), fleetARN("fleet-east"))
	lats := func(west, east float32) func(*api.StartGameSessionPlacementInput) {
		return func(in *api.StartGameSessionPlacementInput) {
			in.PlayerLatencies = []api.PlayerLatency{lat("p", "us-west-2", west), lat("p", "us-east-1", east)}
		}
	}
	h.start("q", "near-east", lats(80, 20)) // east is lower despite destination order
	h.process()
	if got := h.describe("near-east"); got.Status != api.GameSessionPlacementStateFulfilled || api.ToString(got.GameSessionRegion) != "us-east-1" {
		t.Fatalf("near-east = %s %s", got.Status, api.ToString(got.GameSessionRegion))
	}
	// 70 ms to west breaks the 50 ms policy for its first 10 s, then the
	// 100 ms policy allows it.
	h.start("q", "far", lats(70, 300))
	h.clock.Advance(9 * time.Second)
	h.process()
	if st := h.describe("far").Status; st != api.GameSessionPlacementStatePending {
		t.Fatalf("before relaxation: %s", st)
	}
	h.clock.Advance(time.Second)
	h.process()
	if got := h.describe("far"); got.Status != api.GameSessionPlacementStateFulfilled || api.ToString(got.GameSessionRegion) != "us-west-2" {
		t.Fatalf("after relaxation = %s %s", got.Status, api.ToString(got.GameSessionRegion))
	}
}

func TestTimeoutStopAndQueueDeletion(t *testing.T) {
	h := newHarness(t)
	h.addFleet("fleet-a", "us-west-2")
	h.queue("q", func(in *api.CreateGameSessionQueueInput) { in.TimeoutInSeconds = api.Int32(20) }, fleetARN("fleet-a"))
	h.start("q", "t", nil)
	h.start("q", "s", nil)
	h.clock.Advance(19 * time.Second)
	h.process()
	out, err := h.svc.StopGameSessionPlacement(h.ctx, &api.StopGameSessionPlacementInput{PlacementId: api.String("s")})
	h.must(err)
	if out.GameSessionPlacement.Status != api.GameSessionPlacementStateCancelled {
		t.Fatalf("stopped: %s", out.GameSessionPlacement.Status)
	}
	if st := h.describe("t").Status; st != api.GameSessionPlacementStatePending {
		t.Fatalf("before the timeout: %s", st)
	}
	h.clock.Advance(time.Second)
	h.process()
	if st := h.describe("t").Status; st != api.GameSessionPlacementStateTimedOut {
		t.Fatalf("after the timeout: %s", st)
	}
	// A process that turns up later is not used by an ended placement.
	h.ready("fleet-a", "us-west-2", "late", 1)
	h.process()
	if n := len(h.msgr.msgs["late"]); n != 0 {
		t.Fatalf("ended placements placed %d game sessions", n)
	}
	h.start("q", "d", nil)
	h.queue("other", nil)
	h.start("other", "o", nil)
	_, err = h.svc.DeleteGameSessionQueue(h.ctx, &api.DeleteGameSessionQueueInput{Name: api.String("other")})
	h.must(err)
	if st := h.describe("o").Status; st != api.GameSessionPlacementStateFailed {
		t.Fatalf("placement of a deleted queue: %s", st)
	}
	var types []any
	for _, d := range h.pub.details(t) {
		types = append(types, d["type"])
	}
	if len(types) != 3 || types[0] != "PlacementCancelled" || types[1] != "PlacementTimedOut" || types[2] != "PlacementFailed" {
		t.Fatalf("event types = %v", types)
	}
}

func TestAliasDestinationsAndFallback(t *testing.T) {
	h := newHarness(t)
	h.addFleet("fleet-a", "us-west-2", "eu-west-1")
	h.ready("fleet-a", "us-west-2", "w1", 1)
	h.ready("fleet-a", "us-west-2", "w2", 2)
	al := aliases.New(aliases.Config{Store: h.st, Region: "us-west-2", Account: "123456789012", Now: h.clock.Now})
	mk := func(rs api.RoutingStrategy) string {
		out, err := al.CreateAlias(h.ctx, &api.CreateAliasInput{Name: api.String("a"), RoutingStrategy: &rs})
		h.must(err)
		return api.ToString(out.Alias.AliasArn)
	}
	terminal := mk(api.RoutingStrategy{Type: api.RoutingStrategyTypeTerminal, Message: api.String("gone")})
	simple := mk(api.RoutingStrategy{Type: api.RoutingStrategyTypeSimple, FleetId: api.String("fleet-a")})
	h.queue("q", nil, terminal, simple)
	h.start("q", "via-alias", nil)
	// The override names only eu-west-1 (no process there): with NONE it
	// waits, with DEFAULT_AFTER_SINGLE_PASS it falls back to us-west-2.
	h.start("q", "none", func(in *api.StartGameSessionPlacementInput) {
		in.PriorityConfigurationOverride = &api.PriorityConfigurationOverride{LocationOrder: []string{"eu-west-1"},
			PlacementFallbackStrategy: api.PlacementFallbackStrategyNone}
	})
	h.start("q", "fallback", func(in *api.StartGameSessionPlacementInput) {
		in.PriorityConfigurationOverride = &api.PriorityConfigurationOverride{LocationOrder: []string{"eu-west-1"},
			PlacementFallbackStrategy: api.PlacementFallbackStrategyDefaultAfterSinglePass}
	})
	h.process()
	if got := h.describe("via-alias"); got.Status != api.GameSessionPlacementStateFulfilled || api.ToString(got.GameSessionArn) != "arn:aws:gamelift:us-west-2::gamesession/fleet-a/via-alias" {
		t.Fatalf("via alias: %+v", got)
	}
	if st := h.describe("none").Status; st != api.GameSessionPlacementStatePending {
		t.Fatalf("override NONE: %s", st)
	}
	if got := h.describe("fallback"); got.Status != api.GameSessionPlacementStateFulfilled || api.ToString(got.GameSessionRegion) != "us-west-2" {
		t.Fatalf("fallback: %s %s", got.Status, api.ToString(got.GameSessionRegion))
	}
}

// TestContention: 1,000 placements started at once onto a fleet with 10
// free processes: exactly 10 are fulfilled, each on its own process; the
// rest as processes turn up, and what is left times out.
func TestContention(t *testing.T) {
	const n, free = 1000, 10
	h := newHarness(t)
	h.addFleet("fleet-a", "us-west-2")
	h.queue("q", func(in *api.CreateGameSessionQueueInput) { in.TimeoutInSeconds = api.Int32(60) }, fleetARN("fleet-a"))
	for i := range free {
		h.ready("fleet-a", "us-west-2", "proc-"+itoa(i), int32(1000+i))
	}
	errc := make(chan error, n)
	for i := range n {
		go func() {
			_, err := h.svc.StartGameSessionPlacement(h.ctx, &api.StartGameSessionPlacementInput{GameSessionQueueName: api.String("q"),
				PlacementId: api.String("p-" + itoa(i)), MaximumPlayerSessionCount: api.Int32(2)})
			errc <- err
		}()
	}
	for range n {
		h.must(<-errc)
	}
	// Two loops at once (as two replicas would be without the lease).
	done := make(chan error, 2)
	for range 2 {
		go func() { done <- h.svc.Process(h.ctx) }()
	}
	h.must(<-done)
	h.must(<-done)
	check := func(want int) {
		t.Helper()
		counts := h.counts()
		if counts[api.GameSessionPlacementStateFulfilled] != want {
			t.Fatalf("fulfilled = %d, want %d (%v)", counts[api.GameSessionPlacementStateFulfilled], want, counts)
		}
		h.msgr.mu.Lock()
		defer h.msgr.mu.Unlock()
		total := 0
		for pid, msgs := range h.msgr.msgs {
			if len(msgs) != 1 {
				t.Fatalf("process %s got %d game sessions", pid, len(msgs))
			}
			total++
		}
		if total != want {
			t.Fatalf("%d processes got a game session, want %d", total, want)
		}
	}
	check(free)
	for i := range 5 {
		h.ready("fleet-a", "us-west-2", "later-"+itoa(i), int32(2000+i))
	}
	h.clock.Advance(time.Second)
	h.process()
	check(free + 5)
	h.clock.Advance(time.Minute)
	h.process()
	counts := h.counts()
	if counts[api.GameSessionPlacementStateTimedOut] != n-free-5 || counts[api.GameSessionPlacementStatePending] != 0 {
		t.Fatalf("after the timeout: %v", counts)
	}
}

func (h *harness) counts() map[api.GameSessionPlacementState]int {
	out := map[api.GameSessionPlacementState]int{}
	h.must(h.st.View(h.ctx, func(tx store.Tx) error {
		for _, st := range api.GameSessionPlacementState("").Values() {
			n, err := tx.Count(h.ctx, store.Query{Kind: KindPlacement, Key: string(st), HasKey: true})
			if err != nil {
				return err
			}
			out[st] = n
		}
		return nil
	}))
	return out
}

func itoa(i int) string {
	const digits = "0123456789"
	if i == 0 {
		return "0"
	}
	var b []byte
	for ; i > 0; i /= 10 {
		b = append([]byte{digits[i%10]}, b...)
	}
	return string(b)
}

// TestFirstAttemptsGameSessionIDTaken: a placement's first game session
// is named by its placement ID; where a game session of the first
// candidate already has that ID (read with the placement and the fleet),
// the placement goes to the next candidate, and one whose ID is free is
// placed on the first.
func TestFirstAttemptsGameSessionIDTaken(t *testing.T) {
	testGameSessionIDTaken(t, newHarness(t))
}

// TestFirstAttemptsGameSessionIDTakenOnPostgres is
// TestFirstAttemptsGameSessionIDTaken on PostgreSQL, where the placement,
// the fleet and the game session IDs are read in one round trip.
func TestFirstAttemptsGameSessionIDTakenOnPostgres(t *testing.T) {
	testGameSessionIDTaken(t, newHarnessOn(t, pgstore.Open(t)))
}

func testGameSessionIDTaken(t *testing.T, h *harness) {
	// fleet-a's one location is not Hoist's region, so that its game
	// sessions may have either of two IDs (GameSessionRefs).
	h.addFleet("fleet-a", "eu-west-1")
	h.addFleet("fleet-b", "us-west-2")
	taken := "arn:aws:gamelift:eu-west-1::gamesession/fleet-a/p-taken"
	h.put(store.Record{Kind: hosting.KindGameSession, ID: taken, Parent: "fleet-a", Key: string(api.GameSessionStatusTerminated), Rank: math.MaxInt64},
		&hosting.GameSession{Session: api.GameSession{GameSessionId: api.String(taken), FleetId: api.String("fleet-a"),
			Status: api.GameSessionStatusTerminated, Location: api.String("eu-west-1")}})
	h.ready("fleet-a", "eu-west-1", "proc-a", 7000)
	h.ready("fleet-b", "us-west-2", "proc-b", 7001)
	h.queue("q", nil, fleetARN("fleet-a"), fleetARN("fleet-b"))
	// placed starts placement id and wants it FULFILLED with game session arn.
	placed := func(id, arn, why string) {
		t.Helper()
		h.start("q", id, nil)
		h.clock.Advance(time.Second)
		h.process()
		if got := h.describe(id); got.Status != api.GameSessionPlacementStateFulfilled || api.ToString(got.GameSessionArn) != arn {
			t.Fatalf("%s: placement %s is %s with %s, want FULFILLED with %s", why, id, got.Status, api.ToString(got.GameSessionArn), arn)
		}
	}
	placed("p-taken", "arn:aws:gamelift:us-west-2::gamesession/fleet-b/p-taken", "the first candidate's ID taken: the second candidate")
	placed("p-free", "arn:aws:gamelift:eu-west-1::gamesession/fleet-a/p-free", "a free ID: the first candidate")
}

// earlierPlacedSession rewrites game session id's record as a Hoist
// before PlacementQueue wrote it: without its placement's queue.
func earlierPlacedSession(t testing.TB, h *harness, id string) {
	t.Helper()
	err := h.st.Update(h.ctx, func(tx store.Tx) error {
		rec, err := tx.Get(h.ctx, hosting.KindGameSession, id)
		if err != nil {
			return err
		}
		var gs hosting.GameSession
		if err := store.Decode(rec, &gs); err != nil {
			return err
		}
		if gs.PlacementQueue == "" {
			return errors.New("game session " + id + " names no queue: nothing to take away")
		}
		gs.PlacementQueue = ""
		return store.PutJSON(h.ctx, tx, rec, &gs)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestEarlierPlacedSessionFulfilled: a game session whose record does not
// name its placement's queue (written by an earlier Hoist) still fulfils
// its placement when activated.
func TestEarlierPlacedSessionFulfilled(t *testing.T) {
	h := newHarness(t)
	h.addFleet("fleet-a", "us-west-2")
	h.readyDud("fleet-a", "us-west-2", "p0", 7000)
	h.queue("q1", nil, fleetARN("fleet-a"))
	h.start("q1", "pl-1", nil)
	h.process()
	gsID := api.ToString(h.describe("pl-1").GameSessionId)
	earlierPlacedSession(t, h, gsID)
	h.must(h.activateNow("p0", gsID))
	if pl := h.describe("pl-1"); pl.Status != api.GameSessionPlacementStateFulfilled {
		t.Errorf("pl-1 is %s, want FULFILLED", pl.Status)
	}
}

package sessions

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/hoistgg/hoist/internal/api"
	"github.com/hoistgg/hoist/internal/hosting"
)

func TestCreateGameSessionErrors(t *testing.T) {
	tests := map[string]struct {
		fleet []fleetOpt
		ready bool // a ready process in us-west-2
		in    func(*api.CreateGameSessionInput)
		code  string
	}{
		"unknown fleet": {ready: true, in: func(in *api.CreateGameSessionInput) { in.FleetId = api.String("fleet-9") },
			code: "NotFoundException"},
		"fleet not active": {fleet: []fleetOpt{status(api.FleetStatusActivating)}, code: "InvalidFleetStatusException"},
		"location not active": {ready: true, fleet: []fleetOpt{func(f *hosting.Fleet) { f.Locations[1].Status = api.FleetStatusActivating }},
			in: func(in *api.CreateGameSessionInput) { in.Location = api.String("us-east-1") }, code: "InvalidFleetStatusException"},
		"no process":       {code: "FleetCapacityExceededException"},
		"no process there": {ready: true, in: func(in *api.CreateGameSessionInput) { in.Location = api.String("us-east-1") }, code: "FleetCapacityExceededException"},
		"unknown location": {ready: true, in: func(in *api.CreateGameSessionInput) { in.Location = api.String("eu-west-1") }, code: "InvalidRequestException"},
		"anywhere without location": {ready: true, fleet: []fleetOpt{anywhere},
			code: "InvalidRequestException"},
		"alias": {ready: true, in: func(in *api.CreateGameSessionInput) { in.FleetId, in.AliasId = nil, api.String("alias-1") },
			code: "InvalidRequestException"},
		"fleet and alias": {ready: true, in: func(in *api.CreateGameSessionInput) { in.AliasId = api.String("alias-1") },
			code: "InvalidRequestException"},
		"too many players": {ready: true, in: func(in *api.CreateGameSessionInput) { in.MaximumPlayerSessionCount = api.Int32(201) },
			code: "InvalidRequestException"},
		"no max players": {ready: true, in: func(in *api.CreateGameSessionInput) { in.MaximumPlayerSessionCount = nil },
			code: "InvalidRequestException"},
		"duplicate property": {ready: true, in: func(in *api.CreateGameSessionInput) {
			p := api.GameProperty{Key: api.String("k"), Value: api.String("v")}
			in.GameProperties = []api.GameProperty{p, p}
		}, code: "InvalidRequestException"},
		"token and old id differ": {ready: true, in: func(in *api.CreateGameSessionInput) {
			in.IdempotencyToken, in.GameSessionId = api.String("a"), api.String("b")
		}, code: "InvalidRequestException"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			h := newHarness(t)
			h.addFleet("fleet-1", tc.fleet...)
			h.addCompute("fleet-1", "i-1", "us-west-2")
			if tc.ready {
				h.readyProcess("fleet-1", "i-1", "us-west-2", "proc-1", 7777)
			}
			in := func(*api.CreateGameSessionInput) {}
			if tc.in != nil {
				in = tc.in
			}
			_, err := h.create("fleet-1", in)
			wantCode(t, err, tc.code)
			if tc.ready && !placeable(h.process("proc-1")) {
				t.Fatal("a refused request took the process")
			}
		})
	}
}

func TestCreateGameSessionIdempotency(t *testing.T) {
	h := newHarness(t)
	h.addFleet("fleet-1")
	h.addCompute("fleet-1", "i-1", "us-west-2")
	c := h.readyProcess("fleet-1", "i-1", "us-west-2", "proc-1", 7777)
	h.readyProcess("fleet-1", "i-1", "us-west-2", "proc-2", 7778)
	tok := func(in *api.CreateGameSessionInput) { in.IdempotencyToken = api.String("match-42") }
	first, err := h.create("fleet-1", tok)
	h.must(err)
	if id := api.ToString(first.GameSessionId); id != "arn:aws:gamelift:us-west-2::gamesession/fleet-1/match-42" {
		t.Fatalf("GameSessionId = %s", id)
	}
	h.must(h.sdk.ActivateGameSession(h.ctx, c, api.ToString(first.GameSessionId)))

	again, err := h.create("fleet-1", tok)
	h.must(err)
	if again.Status != api.GameSessionStatusActive || api.ToString(again.GameSessionId) != api.ToString(first.GameSessionId) {
		t.Fatalf("repeat returned %s %s, want the original, now ACTIVE", api.ToString(again.GameSessionId), again.Status)
	}
	if !placeable(h.process("proc-2")) {
		t.Fatal("a repeated request placed a second game session")
	}
	// The deprecated GameSessionId is the same token.
	old, err := h.create("fleet-1", func(in *api.CreateGameSessionInput) { in.GameSessionId = api.String("match-42") })
	h.must(err)
	if api.ToString(old.GameSessionId) != api.ToString(first.GameSessionId) {
		t.Fatal("GameSessionId did not act as the idempotency token")
	}
	_, err = h.create("fleet-1", tok, func(in *api.CreateGameSessionInput) { in.Name = api.String("other") })
	wantCode(t, err, "IdempotentParameterMismatchException")
	// An update of the session does not change what the token stands for.
	_, err = h.svc.UpdateGameSession(h.ctx, &api.UpdateGameSessionInput{GameSessionId: first.GameSessionId, Name: api.String("renamed")})
	h.must(err)
	_, err = h.create("fleet-1", tok)
	h.must(err)
}

func TestResourceCreationLimit(t *testing.T) {
	policy := func(f *hosting.Fleet) {
		f.Attributes.ResourceCreationLimitPolicy = &api.ResourceCreationLimitPolicy{
			NewGameSessionsPerCreator: api.Int32(2), PolicyPeriodInMinutes: api.Int32(1)}
	}
	h := newHarness(t)
	h.addFleet("fleet-1", policy)
	h.addFleet("fleet-2")
	h.addCompute("fleet-1", "i-1", "us-west-2")
	h.addCompute("fleet-2", "i-1", "us-west-2")
	for i := range 6 {
		h.readyProcess("fleet-1", "i-1", "us-west-2", fmt.Sprintf("p1-%d", i), 7000)
		h.readyProcess("fleet-2", "i-1", "us-west-2", fmt.Sprintf("p2-%d", i), 7000)
	}
	by := func(c string) func(*api.CreateGameSessionInput) {
		return func(in *api.CreateGameSessionInput) {
			if c != "" {
				in.CreatorId = api.String(c)
			}
		}
	}
	_, err := h.create("fleet-1", by(""))
	wantCode(t, err, "InvalidRequestException")
	_, err = h.create("fleet-1", by("alice"))
	h.must(err)
	h.clock.Advance(30 * time.Second)
	_, err = h.create("fleet-1", by("alice"))
	h.must(err)
	_, err = h.create("fleet-1", by("alice"))
	wantCode(t, err, "LimitExceededException")
	_, err = h.create("fleet-1", by("bob"))
	h.must(err)
	h.clock.Advance(30 * time.Second) // the first is now out of the minute
	_, err = h.create("fleet-1", by("alice"))
	h.must(err)

	// Without a policy a CreatorId may create one game session a second.
	_, err = h.create("fleet-2", by("carol"))
	h.must(err)
	h.clock.Advance(999 * time.Millisecond)
	_, err = h.create("fleet-2", by("carol"))
	wantCode(t, err, "LimitExceededException")
	h.clock.Advance(time.Millisecond)
	_, err = h.create("fleet-2", by("carol"))
	h.must(err)
	_, err = h.create("fleet-2", by(""))
	h.must(err)
}

func TestMaxConcurrentActivations(t *testing.T) {
	h := newHarness(t)
	h.addFleet("fleet-1", func(f *hosting.Fleet) {
		f.RuntimeConfiguration.MaxConcurrentGameSessionActivations = api.Int32(1)
	})
	h.addCompute("fleet-1", "i-1", "us-west-2")
	h.addCompute("fleet-1", "i-2", "us-west-2")
	c1 := h.readyProcess("fleet-1", "i-1", "us-west-2", "proc-1", 7001)
	h.readyProcess("fleet-1", "i-1", "us-west-2", "proc-2", 7002)
	h.readyProcess("fleet-1", "i-2", "us-west-2", "proc-3", 7003)
	a, err := h.create("fleet-1")
	h.must(err)
	b, err := h.create("fleet-1")
	h.must(err)
	if api.ToString(a.ComputeName) != "i-1" || api.ToString(b.ComputeName) != "i-2" {
		t.Fatalf("placed on %s and %s, want i-1 then i-2 (i-1 is activating one)", api.ToString(a.ComputeName), api.ToString(b.ComputeName))
	}
	_, err = h.create("fleet-1")
	wantCode(t, err, "FleetCapacityExceededException")
	h.must(h.sdk.ActivateGameSession(h.ctx, c1, api.ToString(a.GameSessionId)))
	c, err := h.create("fleet-1")
	h.must(err)
	if api.ToString(c.ComputeName) != "i-1" {
		t.Fatalf("third placed on %s, want i-1", api.ToString(c.ComputeName))
	}
}

// TestConcurrentCreate starts many CreateGameSession calls at once: each
// process gets at most one game session, and the rest are refused.
func TestConcurrentCreate(t *testing.T) {
	const procs, calls = 8, 40
	h := newHarness(t)
	h.addFleet("fleet-1")
	h.addCompute("fleet-1", "i-1", "us-west-2")
	for i := range procs {
		h.readyProcess("fleet-1", "i-1", "us-west-2", fmt.Sprintf("proc-%d", i), int32(7000+i))
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	byProc := map[int32]int{}
	refused := 0
	for range calls {
		wg.Go(func() {
			gs, err := h.create("fleet-1")
			mu.Lock()
			defer mu.Unlock()
			var full *api.FleetCapacityExceededException
			switch {
			case errors.As(err, &full):
				refused++
			case err != nil:
				t.Error(err)
			default:
				byProc[api.ToInt32(gs.Port)]++
			}
		})
	}
	wg.Wait()
	if len(byProc) != procs || refused != calls-procs {
		t.Fatalf("placed on %d processes (%v), refused %d; want %d and %d", len(byProc), byProc, refused, procs, calls-procs)
	}
	for port, n := range byProc {
		if n != 1 {
			t.Fatalf("process on port %d got %d game sessions", port, n)
		}
	}
}

// TestCreateNotDelivered: a process that cannot be told leaves the session
// in ERROR and is not used until it reconnects.
func TestCreateNotDelivered(t *testing.T) {
	h := newHarness(t)
	h.addFleet("fleet-1")
	h.addCompute("fleet-1", "i-1", "us-west-2")
	c := h.readyProcess("fleet-1", "i-1", "us-west-2", "proc-1", 7001)
	h.msgr.fail["proc-1"] = errors.New("not connected")
	gs, err := h.create("fleet-1")
	h.must(err)
	if gs.Status != api.GameSessionStatusError || gs.TerminationTime == nil {
		t.Fatalf("status = %s, want ERROR", gs.Status)
	}
	p := h.process("proc-1")
	if p.GameSessionID != "" || p.State != hosting.ProcessActive {
		t.Fatalf("process after failed delivery: %+v", p)
	}
	h.sdk.Disconnected(h.ctx, c, false)
	_, err = h.create("fleet-1")
	wantCode(t, err, "FleetCapacityExceededException")
	delete(h.msgr.fail, "proc-1")
	h.must(h.sdk.Connected(h.ctx, c))
	gs, err = h.create("fleet-1")
	h.must(err)
	if gs.Status != api.GameSessionStatusActivating {
		t.Fatalf("status after reconnect = %s", gs.Status)
	}
}

// TestIdempotencyTokenAcrossLocations: a game session in a remote location
// carries that location in its ARN, and its idempotency token cannot be
// reused for another location of the fleet.
func TestIdempotencyTokenAcrossLocations(t *testing.T) {
	h := newHarness(t)
	h.addFleet("fleet-1")
	h.addCompute("fleet-1", "i-1", "us-west-2")
	h.addCompute("fleet-1", "i-2", "us-east-1")
	h.readyProcess("fleet-1", "i-1", "us-west-2", "proc-1", 7777)
	h.readyProcess("fleet-1", "i-2", "us-east-1", "proc-2", 7777)
	tok := func(in *api.CreateGameSessionInput) { in.IdempotencyToken = api.String("match-7") }
	remote, err := h.create("fleet-1", tok, func(in *api.CreateGameSessionInput) { in.Location = api.String("us-east-1") })
	h.must(err)
	if id := api.ToString(remote.GameSessionId); id != "arn:aws:gamelift:us-east-1::gamesession/fleet-1/match-7" {
		t.Fatalf("GameSessionId in us-east-1 = %s", id)
	}
	_, err = h.create("fleet-1", tok)
	wantCode(t, err, "IdempotentParameterMismatchException")
	if !placeable(h.process("proc-1")) {
		t.Fatal("the refused request took the home location's process")
	}
}

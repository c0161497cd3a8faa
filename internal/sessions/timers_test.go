package sessions

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hoistgg/hoist/internal/api"
	"github.com/hoistgg/hoist/internal/hosting"
	"github.com/hoistgg/hoist/internal/store"
)

func TestActivationTimeout(t *testing.T) {
	for name, tc := range map[string]struct {
		timeout int32 // the fleet's GameSessionActivationTimeoutSeconds (0: default)
		wait    time.Duration
	}{
		"fleet setting": {timeout: 30, wait: 30 * time.Second},
		"default":       {wait: 300 * time.Second},
	} {
		t.Run(name, func(t *testing.T) {
			h := newHarness(t)
			h.addFleet("fleet-1", func(f *hosting.Fleet) {
				if tc.timeout > 0 {
					f.RuntimeConfiguration.GameSessionActivationTimeoutSeconds = &tc.timeout
				}
			})
			h.addCompute("fleet-1", "i-1", "us-west-2")
			c := h.readyProcess("fleet-1", "i-1", "us-west-2", "proc-1", 7777)
			gs, err := h.create("fleet-1")
			h.must(err)
			id := api.ToString(gs.GameSessionId)
			h.healthyFor(c, tc.wait-time.Millisecond)
			if st := h.gameSession(id).Session.Status; st != api.GameSessionStatusActivating {
				t.Fatalf("1 ms before the timeout: %s", st)
			}
			h.sweepAt(time.Millisecond)
			if st := h.gameSession(id).Session.Status; st != api.GameSessionStatusTerminated {
				t.Fatalf("at the timeout: %s, want TERMINATED", st)
			}
			if got := h.host.ended(); len(got) != 1 || got[0].processID != "proc-1" {
				t.Fatalf("ProcessHost calls = %v, want proc-1 ended", got)
			}
			if p := h.process("proc-1"); p.State != hosting.ProcessTerminating {
				t.Fatalf("process = %s", p.State)
			}
			// Activating late is refused.
			wantSDK(t, h.sdk.ActivateGameSession(h.ctx, conn("fleet-1", "i-1", "proc-1"), id), 400)
		})
	}
}

// healthyFor lets d pass in sweeps at most a minute apart, the process
// reporting healthy after each.
func (h *harness) healthyFor(c hosting.Conn, d time.Duration) {
	h.t.Helper()
	for d > 0 {
		step := min(d, time.Minute)
		h.sweepAt(step)
		h.must(h.sdk.Heartbeat(h.ctx, c, true))
		d -= step
	}
}

func TestReservationTimeout(t *testing.T) {
	h := newHarness(t)
	h.addFleet("fleet-1")
	h.addCompute("fleet-1", "i-1", "us-west-2")
	c, id := h.activeSession("fleet-1", "i-1", "proc-1", 2)
	first, err := h.reserve(id, "a")
	h.must(err)
	h.clock.Advance(20 * time.Second)
	second, err := h.reserve(id, "b")
	h.must(err)
	h.must(h.sdk.AcceptPlayerSession(h.ctx, c, id, second[0]))

	h.sweepAt(40*time.Second - time.Millisecond)
	if st := h.playerSession(first[0]).Session.Status; st != api.PlayerSessionStatusReserved {
		t.Fatalf("1 ms before 60 s: %s", st)
	}
	h.sweepAt(time.Millisecond)
	ps := h.playerSession(first[0]).Session
	if ps.Status != api.PlayerSessionStatusTimedout || ps.TerminationTime == nil {
		t.Fatalf("at 60 s: %s", ps.Status)
	}
	if n := api.ToInt32(h.gameSession(id).Session.CurrentPlayerSessionCount); n != 1 {
		t.Fatalf("count = %d, want 1 (the slot reopened)", n)
	}
	wantSDK(t, h.sdk.AcceptPlayerSession(h.ctx, c, id, first[0]), 400)
	h.sweepAt(time.Hour)
	if st := h.playerSession(second[0]).Session.Status; st != api.PlayerSessionStatusActive {
		t.Fatalf("an accepted player session timed out: %s", st)
	}
}

func TestHeartbeats(t *testing.T) {
	const window = 70 * time.Second // interval + jitter
	tests := map[string]struct {
		play    func(h *harness, c hosting.Conn)
		wantEnd bool
	}{
		"three unhealthy": {play: func(h *harness, c hosting.Conn) {
			for range 3 {
				h.must(h.sdk.Heartbeat(h.ctx, c, false))
			}
		}, wantEnd: true},
		"two unhealthy then healthy": {play: func(h *harness, c hosting.Conn) {
			h.must(h.sdk.Heartbeat(h.ctx, c, false))
			h.must(h.sdk.Heartbeat(h.ctx, c, false))
			h.must(h.sdk.Heartbeat(h.ctx, c, true))
			h.must(h.sdk.Heartbeat(h.ctx, c, false))
		}},
		"silent for three windows": {play: func(h *harness, _ hosting.Conn) { h.sweepAt(3 * window) }, wantEnd: true},
		"silent just short":        {play: func(h *harness, _ hosting.Conn) { h.sweepAt(3*window - time.Millisecond) }},
		"reporting every minute": {play: func(h *harness, c hosting.Conn) {
			for range 10 {
				h.sweepAt(window - time.Millisecond)
				h.must(h.sdk.Heartbeat(h.ctx, c, true))
			}
		}},
		"two unhealthy then silent": {play: func(h *harness, c hosting.Conn) {
			h.must(h.sdk.Heartbeat(h.ctx, c, false))
			h.must(h.sdk.Heartbeat(h.ctx, c, false))
			h.sweepAt(window)
		}, wantEnd: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			h := newHarness(t)
			h.addFleet("fleet-1")
			h.addCompute("fleet-1", "i-1", "us-west-2")
			c, id := h.activeSession("fleet-1", "i-1", "proc-1", 2)
			tc.play(h, c)
			ended := len(h.host.ended()) == 1
			if ended != tc.wantEnd {
				t.Fatalf("process ended = %v, want %v (calls %v)", ended, tc.wantEnd, h.host.ended())
			}
			if !tc.wantEnd {
				return
			}
			if r := h.host.ended()[0].reason; r != "SERVER_PROCESS_TERMINATED_UNHEALTHY" {
				t.Fatalf("reason = %s", r)
			}
			if st := h.gameSession(id).Session.Status; st != api.GameSessionStatusTerminating {
				t.Fatalf("game session of an ending process = %s, want TERMINATING", st)
			}
			// fleets kills it: nothing stays ACTIVE.
			h.must(h.svc.ProcessExited(h.ctx, "proc-1", -1, "killed"))
			if st := h.gameSession(id).Session.Status; st != api.GameSessionStatusTerminated {
				t.Fatalf("after exit = %s", st)
			}
		})
	}
}

func TestReadyTimeoutAndTerminateGrace(t *testing.T) {
	h := newHarness(t)
	h.addFleet("fleet-1")
	h.addCompute("fleet-1", "i-1", "us-west-2")
	h.must(h.svc.ProcessLaunched(h.ctx, hosting.Process{ID: "slow", FleetID: "fleet-1", ComputeName: "i-1", Location: "us-west-2"}))
	h.sweepAt(5*time.Minute - time.Millisecond)
	if len(h.host.ended()) != 0 {
		t.Fatal("ended before the ready timeout")
	}
	h.sweepAt(time.Millisecond)
	if got := h.host.ended(); len(got) != 1 || got[0].reason != "SERVER_PROCESS_PROCESS_READY_TIMEOUT" {
		t.Fatalf("calls = %v", got)
	}
	// Still not gone after the grace: asked again.
	h.sweepAt(5 * time.Minute)
	if got := h.host.ended(); len(got) != 2 || got[1].reason != "SERVER_PROCESS_PROCESS_EXIT_TIMEOUT" {
		t.Fatalf("calls = %v", got)
	}
	h.must(h.svc.ProcessExited(h.ctx, "slow", 137, ""))
	if p := h.process("slow"); p.State != hosting.ProcessTerminated || p.EndReason != "SERVER_PROCESS_PROCESS_READY_TIMEOUT" {
		t.Fatalf("process = %s %q", p.State, p.EndReason)
	}
	// Retention: the record goes after a day.
	h.sweepAt(24 * time.Hour)
	err := h.st.View(h.ctx, func(tx store.Tx) error { _, err := tx.Get(h.ctx, hosting.KindProcess, "slow"); return err })
	if err != store.ErrNotFound {
		t.Fatalf("terminated process kept: %v", err)
	}
}

func TestProcessCrash(t *testing.T) {
	h := newHarness(t)
	h.addFleet("fleet-1")
	h.addCompute("fleet-1", "i-1", "us-west-2")
	c, active := h.activeSession("fleet-1", "i-1", "proc-1", 5)
	players, err := h.reserve(active, "a", "b")
	h.must(err)
	h.must(h.sdk.AcceptPlayerSession(h.ctx, c, active, players[0]))
	h.readyProcess("fleet-1", "i-1", "us-west-2", "proc-2", 7778)
	activating, err := h.create("fleet-1")
	h.must(err)

	h.must(h.svc.ProcessExited(h.ctx, "proc-1", 139, ""))
	h.must(h.svc.ProcessExited(h.ctx, "proc-2", 139, ""))
	gs := h.gameSession(active).Session
	if gs.Status != api.GameSessionStatusTerminated || gs.TerminationTime == nil {
		t.Fatalf("active session after crash = %s", gs.Status)
	}
	if st := h.gameSession(api.ToString(activating.GameSessionId)).Session.Status; st != api.GameSessionStatusError {
		t.Fatalf("activating session after crash = %s, want ERROR", st)
	}
	for _, id := range players {
		if st := h.playerSession(id).Session.Status; st != api.PlayerSessionStatusCompleted {
			t.Fatalf("player session %s after crash = %s", id, st)
		}
	}
	if p := h.process("proc-1"); p.State != hosting.ProcessTerminated || p.EndReason != "exited with code 139" {
		t.Fatalf("process = %s %q", p.State, p.EndReason)
	}
	wantSDK(t, h.sdk.Heartbeat(h.ctx, c, true), 403)
	wantSDK(t, h.sdk.Connected(h.ctx, c), 403) // managed IDs are never reused
	h.must(h.svc.ProcessExited(h.ctx, "proc-1", 0, ""))
	h.must(h.svc.ProcessExited(h.ctx, "never-known", 0, ""))
}

func TestTerminateGameSession(t *testing.T) {
	t.Run("force", func(t *testing.T) {
		h := newHarness(t)
		h.addFleet("fleet-1")
		h.addCompute("fleet-1", "i-1", "us-west-2")
		_, id := h.activeSession("fleet-1", "i-1", "proc-1", 5)
		players, err := h.reserve(id, "a")
		h.must(err)
		out, err := h.svc.TerminateGameSession(h.ctx, &api.TerminateGameSessionInput{GameSessionId: &id, TerminationMode: api.TerminationModeForceTerminate})
		h.must(err)
		// TERMINATING until the process is gone, then TERMINATED.
		if out.GameSession.Status != api.GameSessionStatusTerminating || out.GameSession.StatusReason != api.GameSessionStatusReasonForceTerminated {
			t.Fatalf("after FORCE_TERMINATE: %s %s", out.GameSession.Status, out.GameSession.StatusReason)
		}
		// The process is killed, not asked to end.
		if got := h.host.killed(); len(got) != 1 || got[0] != (terminateReq{"proc-1", "FORCE_TERMINATED"}) {
			t.Fatalf("ProcessHost kills = %v", got)
		}
		if got := h.host.ended(); len(got) != 0 || h.msgr.last("proc-1", "TerminateProcess") != nil {
			t.Fatalf("FORCE_TERMINATE asked the process to end: %v", got)
		}
		h.must(h.svc.ProcessExited(h.ctx, "proc-1", -1, ""))
		if gs := h.gameSession(id).Session; gs.Status != api.GameSessionStatusTerminated || gs.StatusReason != api.GameSessionStatusReasonForceTerminated {
			t.Fatalf("after the process exited: %s %s", gs.Status, gs.StatusReason)
		}
		if st := h.playerSession(players[0]).Session.Status; st != api.PlayerSessionStatusCompleted {
			t.Fatalf("player session = %s", st)
		}
		_, err = h.svc.TerminateGameSession(h.ctx, &api.TerminateGameSessionInput{GameSessionId: &id, TerminationMode: api.TerminationModeForceTerminate})
		wantCode(t, err, "InvalidGameSessionStatusException")
	})
	t.Run("trigger then grace", func(t *testing.T) {
		h := newHarness(t)
		h.addFleet("fleet-1")
		h.addCompute("fleet-1", "i-1", "us-west-2")
		_, id := h.activeSession("fleet-1", "i-1", "proc-1", 5)
		in := &api.TerminateGameSessionInput{GameSessionId: &id, TerminationMode: api.TerminationModeTriggerOnProcessTerminate}
		_, err := h.svc.TerminateGameSession(h.ctx, in)
		h.must(err)
		m := h.msgr.last("proc-1", "TerminateProcess")
		if m == nil || m["TerminationTime"] != t0.Add(5*time.Minute).UnixMilli() {
			t.Fatalf("TerminateProcess = %v", m)
		}
		_, err = h.svc.TerminateGameSession(h.ctx, in) // asking again is harmless
		h.must(err)
		// The process ignores it: after the grace fleets is asked to stop it.
		h.sweepAt(5 * time.Minute)
		if got := h.host.ended(); len(got) != 1 {
			t.Fatalf("ProcessHost calls = %v", got)
		}
		h.must(h.svc.ProcessExited(h.ctx, "proc-1", -1, "killed"))
		gs := h.gameSession(id).Session
		if gs.Status != api.GameSessionStatusTerminated || gs.StatusReason != api.GameSessionStatusReasonTriggeredOnProcessTerminate {
			t.Fatalf("after exit: %s %s", gs.Status, gs.StatusReason)
		}
	})
	t.Run("errors", func(t *testing.T) {
		h := newHarness(t)
		h.addFleet("fleet-1", anywhere)
		h.addCompute("fleet-1", "c-1", "custom-home")
		c := conn("fleet-1", "c-1", "proc-1")
		h.must(h.sdk.Connected(h.ctx, c))
		h.must(h.sdk.ProcessReady(h.ctx, c, 7777, nil))
		gs, err := h.create("fleet-1", func(in *api.CreateGameSessionInput) { in.Location = api.String("custom-home") })
		h.must(err)
		_, err = h.svc.TerminateGameSession(h.ctx, &api.TerminateGameSessionInput{GameSessionId: gs.GameSessionId, TerminationMode: api.TerminationModeForceTerminate})
		wantCode(t, err, "InvalidRequestException")
		_, err = h.svc.TerminateGameSession(h.ctx, &api.TerminateGameSessionInput{GameSessionId: gs.GameSessionId})
		wantCode(t, err, "InvalidRequestException")
		_, err = h.svc.TerminateGameSession(h.ctx, &api.TerminateGameSessionInput{GameSessionId: api.String("nope"), TerminationMode: api.TerminationModeForceTerminate})
		wantCode(t, err, "NotFoundException")
	})
}

func TestAnywhereProcess(t *testing.T) {
	h := newHarness(t)
	h.addFleet("fleet-1", anywhere)
	h.addCompute("fleet-1", "c-1", "custom-home", func(c *hosting.Compute) { c.Host, c.CertificatePath = "", "/certs/c-1" })
	c := conn("fleet-1", "c-1", "proc-1")
	wantSDK(t, h.sdk.Connected(h.ctx, conn("fleet-1", "c-9", "proc-9")), 403) // no such compute
	h.must(h.sdk.Connected(h.ctx, c))
	p := h.process("proc-1")
	if p.State != hosting.ProcessLaunching || p.Location != "custom-home" || p.ConnectedTo != "r1" {
		t.Fatalf("process on connect = %+v", p)
	}
	h.must(h.sdk.ProcessReady(h.ctx, c, 7777, nil))
	cert, err := h.sdk.GetComputeCertificate(h.ctx, c)
	h.must(err)
	if cert["CertificatePath"] != "/certs/c-1" || cert["ComputeName"] != "c-1" {
		t.Fatalf("certificate = %v", cert)
	}
	_, err = h.sdk.GetFleetRoleCredentials(h.ctx, c, "arn:aws:iam::1:role/x", "s")
	wantSDK(t, err, 400)

	gs, err := h.create("fleet-1", func(in *api.CreateGameSessionInput) { in.Location = api.String("custom-home") })
	h.must(err)
	id := api.ToString(gs.GameSessionId)
	h.must(h.sdk.ActivateGameSession(h.ctx, c, id))

	// RefreshConnection: the new socket connects before the old closes.
	moved := c
	moved.ConnID = "c-proc-1-2"
	h.must(h.sdk.Connected(h.ctx, moved))
	h.sdk.Disconnected(h.ctx, c, false)
	if p := h.process("proc-1"); p.ConnectedTo != "r1" {
		t.Fatal("the old socket's close disconnected the process")
	}
	// A drop: still alive, unreachable, until heartbeats are missing.
	h.sdk.Disconnected(h.ctx, moved, false)
	if p := h.process("proc-1"); p.State != hosting.ProcessActive || p.ConnectedTo != "" {
		t.Fatalf("after a drop: %+v", p)
	}
	h.sweepAt(210 * time.Second)
	if p := h.process("proc-1"); p.State != hosting.ProcessTerminated {
		t.Fatalf("silent disconnected Anywhere process = %s", p.State)
	}
	if st := h.gameSession(id).Session.Status; st != api.GameSessionStatusTerminated {
		t.Fatalf("its game session = %s", st)
	}
	if len(h.host.ended()) != 0 {
		t.Fatal("ProcessHost called for an Anywhere process")
	}

	// The game server restarts by hand with the same ID: a new life.
	h.must(h.sdk.Connected(h.ctx, c))
	if p := h.process("proc-1"); p.State != hosting.ProcessLaunching || p.GameSessionID != "" {
		t.Fatalf("restarted process = %+v", p)
	}
	h.must(h.sdk.ProcessReady(h.ctx, c, 7777, nil))
	h.must(h.sdk.ProcessEnding(h.ctx, c))
	h.sdk.Disconnected(h.ctx, c, true)
	if p := h.process("proc-1"); p.State != hosting.ProcessTerminated {
		t.Fatalf("after ProcessEnding and close: %s", p.State)
	}
}

func TestCertificateDisabled(t *testing.T) {
	h := newHarness(t)
	h.addFleet("fleet-1")
	h.addCompute("fleet-1", "i-1", "us-west-2")
	c := h.readyProcess("fleet-1", "i-1", "us-west-2", "proc-1", 7777)
	_, err := h.sdk.GetComputeCertificate(h.ctx, c)
	wantSDK(t, err, 400)
}

func TestRetention(t *testing.T) {
	h := newHarness(t)
	h.addFleet("fleet-1")
	h.addCompute("fleet-1", "i-1", "us-west-2")
	c, id := h.activeSession("fleet-1", "i-1", "proc-1", 5)
	players, err := h.reserve(id, "a")
	h.must(err)
	h.must(h.sdk.ProcessEnding(h.ctx, c))
	h.sweepAt(30*24*time.Hour - time.Millisecond)
	h.gameSession(id)
	h.sweepAt(time.Millisecond)
	_, err = h.svc.DescribeGameSessions(h.ctx, &api.DescribeGameSessionsInput{GameSessionId: &id})
	wantCode(t, err, "NotFoundException")
	_, err = h.svc.DescribePlayerSessions(h.ctx, &api.DescribePlayerSessionsInput{PlayerSessionId: &players[0]})
	wantCode(t, err, "NotFoundException")
	out, err := h.svc.DescribePlayerSessions(h.ctx, &api.DescribePlayerSessionsInput{PlayerId: api.String("a")})
	h.must(err)
	if len(out.PlayerSessions) != 0 {
		t.Fatal("player index kept")
	}
}

// TestRunTimers drives Run with the synctest clock: the sweep runs every
// interval under the lease and times out a reservation in real timer terms.
func TestRunTimers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, func(c *Config) {
			c.Now = time.Now
			c.Timings.SweepInterval = 10 * time.Millisecond
			c.Timings.Reservation = 500 * time.Millisecond
		})
		h.addFleet("fleet-1")
		h.addCompute("fleet-1", "i-1", "us-west-2")
		_, id := h.activeSession("fleet-1", "i-1", "proc-1", 5)
		ids, err := h.reserve(id, "a")
		h.must(err)
		ctx, cancel := context.WithCancel(h.ctx)
		done := make(chan error)
		go func() { done <- h.svc.Run(ctx) }()

		time.Sleep(490 * time.Millisecond)
		synctest.Wait()
		if st := h.playerSession(ids[0]).Session.Status; st != api.PlayerSessionStatusReserved {
			t.Fatalf("at 490 ms: %s", st)
		}
		time.Sleep(20 * time.Millisecond)
		synctest.Wait()
		if st := h.playerSession(ids[0]).Session.Status; st != api.PlayerSessionStatusTimedout {
			t.Fatalf("at 510 ms: %s, want TIMEDOUT", st)
		}
		// Another replica cannot take the lease while this one renews it.
		ok, err := h.st.Lease(h.ctx, leaseName, "r2", time.Now(), time.Second)
		h.must(err)
		if ok {
			t.Fatal("a second replica got the sweep lease")
		}
		cancel()
		h.must(<-done)
		h.st.Close()
	})
}

// TestPlayerSessionRetention: a player session that ended while its game
// session goes on is deleted once the retention has passed since it ended
// (COMPLETED and TIMEDOUT alike); the game session and its other player
// sessions stay.
func TestPlayerSessionRetention(t *testing.T) {
	h := newHarness(t, func(c *Config) {
		c.Timings.SessionRetention = 2 * time.Hour
		c.Timings.HeartbeatInterval = 1000 * time.Hour // the process stays ACTIVE without reports
	})
	h.addFleet("fleet-1")
	h.addCompute("fleet-1", "i-1", "us-west-2")
	c, id := h.activeSession("fleet-1", "i-1", "proc-1", 5)
	ids, err := h.reserve(id, "left", "late", "stays")
	h.must(err)
	left, late, stays := ids[0], ids[1], ids[2]
	for _, ps := range []string{left, stays} {
		h.must(h.sdk.AcceptPlayerSession(h.ctx, c, id, ps))
	}
	h.must(h.sdk.RemovePlayerSession(h.ctx, c, id, left)) // COMPLETED now
	h.sweepAt(time.Minute)                                // "late" TIMEDOUT
	if st := h.playerSession(late).Session.Status; st != api.PlayerSessionStatusTimedout {
		t.Fatalf("late: %s, want TIMEDOUT", st)
	}
	h.sweepAt(2*time.Hour - time.Minute - time.Millisecond)
	h.playerSession(left) // kept until the retention has passed
	h.sweepAt(time.Millisecond)
	_, err = h.svc.DescribePlayerSessions(h.ctx, &api.DescribePlayerSessionsInput{PlayerSessionId: &left})
	wantCode(t, err, "NotFoundException")
	h.playerSession(late)
	h.sweepAt(time.Minute)
	_, err = h.svc.DescribePlayerSessions(h.ctx, &api.DescribePlayerSessionsInput{PlayerSessionId: &late})
	wantCode(t, err, "NotFoundException")
	out, err := h.svc.DescribePlayerSessions(h.ctx, &api.DescribePlayerSessionsInput{GameSessionId: &id})
	h.must(err)
	if len(out.PlayerSessions) != 1 || api.ToString(out.PlayerSessions[0].PlayerSessionId) != stays {
		t.Fatalf("player sessions of the game session: %+v, want only the ACTIVE one", out.PlayerSessions)
	}
	byPlayer, err := h.svc.DescribePlayerSessions(h.ctx, &api.DescribePlayerSessionsInput{PlayerId: api.String("left")})
	h.must(err)
	if len(byPlayer.PlayerSessions) != 0 {
		t.Fatal("the player index kept a deleted player session")
	}
	if st := h.gameSession(id).Session.Status; st != api.GameSessionStatusActive {
		t.Fatalf("game session %s, want ACTIVE", st)
	}
}

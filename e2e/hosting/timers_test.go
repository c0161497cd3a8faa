//go:build linux

package hosting

import (
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	gl "github.com/aws/aws-sdk-go-v2/service/gamelift"
	"github.com/aws/aws-sdk-go-v2/service/gamelift/types"
)

// TestTimers runs the tests that need timers shorter than TestManagedHosting
// can use for every fleet: player session reservations of 1 s (GameLift:
// 60 s), a ProcessReady deadline of 3 s and a fleet activation deadline of
// 10 s.
func TestTimers(t *testing.T) {
	e := startHoist(t, "sessions.reservation=1s", "sessions.ready-timeout=3s", "fleets.activation-timeout=10s")
	e.dumpOnFailure(t)
	buildID := e.uploadGameServer(t, "timers")
	t.Run("ReservationTimeout", func(t *testing.T) {
		t.Parallel()
		testReservationTimeout(t, e, buildID)
	})
	t.Run("ReadyTimeout", func(t *testing.T) {
		t.Parallel()
		testReadyTimeout(t, e, buildID)
	})
}

// testReservationTimeout: a player session nobody accepts goes TIMEDOUT
// and frees its slot; the game server can no longer accept it.
func testReservationTimeout(t *testing.T, e *env, buildID string) {
	fleetID := e.newFleet(t, fleetSpec{name: "reservations", build: buildID, params: "-accept-players"})
	gs := e.createGameSession(t, fleetID, 1)
	gsID := aws.ToString(gs.GameSessionId)
	out, err := e.gl.CreatePlayerSession(e.ctx, &gl.CreatePlayerSessionInput{GameSessionId: aws.String(gsID), PlayerId: aws.String("slow")})
	if err != nil {
		t.Fatal(err)
	}
	psID := aws.ToString(out.PlayerSession.PlayerSessionId)
	ps := e.waitPlayerSession(t, psID, types.PlayerSessionStatusTimedout)
	if ps.TerminationTime == nil {
		t.Errorf("a TIMEDOUT player session has no TerminationTime")
	}
	if n := aws.ToInt32(e.gameSession(t, gsID).CurrentPlayerSessionCount); n != 0 {
		t.Errorf("CurrentPlayerSessionCount %d after the reservation timed out, want 0", n)
	}
	if a := dialPlayer(t, aws.ToString(gs.IpAddress), aws.ToInt32(gs.Port)).do("ACCEPT " + psID); !strings.HasPrefix(a, "ERROR 400") {
		t.Errorf("accepting a TIMEDOUT player session: %q, want ERROR 400", a)
	}
	// The slot (the only one) is free again.
	if _, err := e.gl.CreatePlayerSession(e.ctx, &gl.CreatePlayerSessionInput{GameSessionId: aws.String(gsID), PlayerId: aws.String("next")}); err != nil {
		t.Fatalf("CreatePlayerSession into the freed slot: %v", err)
	}
	e.deleteFleet(t, fleetID)
}

// testReadyTimeout: processes that never call ProcessReady are ended and
// replaced, and a fleet none of whose processes becomes ready goes to ERROR
// (FLEET_ACTIVATION_FAILED) after the activation deadline, with its
// processes stopped.
func testReadyTimeout(t *testing.T, e *env, buildID string) {
	out := e.createFleet(t, fleetSpec{name: "noready", build: buildID, params: "-no-ready"})
	fleetID := aws.ToString(out.FleetAttributes.FleetId)
	first := waitPIDs(t, fleetID, 1)
	waitReplaced(t, fleetID, first, 1)
	eventually(t, waitShort, "SERVER_PROCESS_PROCESS_READY_TIMEOUT event", func() (bool, string) {
		return e.hasEvent(t, fleetID, types.EventCodeServerProcessProcessReadyTimeout, ""), e.eventText(t, fleetID)
	})
	e.waitFleet(t, fleetID, types.FleetStatusError)
	if !e.hasEvent(t, fleetID, types.EventCodeFleetActivationFailed, "") {
		t.Errorf("no FLEET_ACTIVATION_FAILED event:\n%s", e.eventText(t, fleetID))
	}
	waitNoProcesses(t, fleetID)
	e.deleteFleet(t, fleetID)
}

package fleets

import (
	"testing"

	"github.com/hoistgg/hoist/internal/api"
	"github.com/hoistgg/hoist/internal/hosting"
)

// The reasons sessions gives for ending a process map to GameLift's event
// codes, also when the code is followed by details.
func TestStopEventCodes(t *testing.T) {
	tests := map[string]api.EventCode{
		"SERVER_PROCESS_TERMINATED_UNHEALTHY": api.EventCodeServerProcessTerminatedUnhealthy,
		"FORCE_TERMINATED":                    api.EventCodeServerProcessForceTerminated,
		"GAME_SESSION_ACTIVATION_TIMEOUT: game session arn:aws:gamelift:us-west-2::gamesession/fleet-1/gs was not activated in time": api.EventCodeGameSessionActivationTimeout,
		"SERVER_PROCESS_PROCESS_READY_TIMEOUT: details": api.EventCodeServerProcessProcessReadyTimeout,
		"GAME_SESSION_NO_SUCH_CODE: x":                  "",
		"FLEET_CREATED":                                 "", // not a process event
		"scale-in":                                      "",
		"compute deregistered":                          "",
	}
	for reason, want := range tests {
		if got := stopEvent(reason); got != want {
			t.Errorf("stopEvent(%q) = %q, want %q", reason, got, want)
		}
	}
	// A process ended for an activation timeout records that event.
	code, why := exitEvent(&hosting.Process{State: hosting.ProcessTerminating}, ProcessExit{StopReason: "GAME_SESSION_ACTIVATION_TIMEOUT: game session gs was not activated in time"})
	if code != api.EventCodeGameSessionActivationTimeout || why == "" {
		t.Errorf("exitEvent = %q, %q", code, why)
	}
}

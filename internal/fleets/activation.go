package fleets

import (
	"fmt"

	"github.com/hoistgg/hoist/internal/api"
	"github.com/hoistgg/hoist/internal/hosting"
)

// activationFailures is how many server processes of a location being
// created may end before any of them calls ProcessReady: when that many
// have, the location goes to ERROR (docs/fleets.md, "Activation").
const activationFailures = 5

// decideActivation ends the creation of a location whose processes cannot
// become ready, as GameLift does (FLEET_ACTIVATION_FAILED, then ERROR):
// activationFailures of its processes ended before any became ready, or
// it has been ACTIVATING for FirstReadyTimeout with none ready. The cause
// event quotes the last failed process and links to its output.
func decideActivation(v fleetView, l hosting.FleetLocation) (move, bool) {
	fails := v.Failures[l.Location]
	fail := func(msg string) (move, bool) {
		return move{Location: l.Location, To: api.FleetStatusError, Code: api.EventCodeFleetActivationFailed,
			Message: msg, ProcessLog: fails.Process}, true
	}
	if fails.Count >= activationFailures {
		return fail(fmt.Sprintf("location %s did not become ACTIVE: %d server processes ended before any called ProcessReady; the last: %s",
			l.Location, fails.Count, fails.Last))
	}
	at, ok := v.ActivatingSince[l.Location]
	if l.Status != api.FleetStatusActivating || !ok || v.FirstReadyTimeout <= 0 || v.Now.Before(at.Add(v.FirstReadyTimeout)) {
		return move{}, false
	}
	msg := fmt.Sprintf("location %s did not become ACTIVE: no server process called ProcessReady within %s of ACTIVATING",
		l.Location, v.FirstReadyTimeout)
	if fails.Count > 0 {
		msg += fmt.Sprintf("; %d ended before, the last: %s", fails.Count, fails.Last)
	}
	return fail(msg)
}

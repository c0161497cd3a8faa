package matchmaking

import (
	"context"

	"github.com/hoistgg/hoist/internal/store"
)

// ActiveTickets counts a configuration's tickets that have not ended
// (QUEUED, SEARCHING, REQUIRES_ACCEPTANCE, PLACING): GameLift's
// CurrentTickets, which internal/metrics exports.
func ActiveTickets(ctx context.Context, tx store.Tx, configuration string) (int, error) {
	return activeTickets(ctx, tx, configuration)
}

// PassObserver is told, after the matchmaker's pass over one
// configuration, how long it took and how much of the matcher's work
// (flexmatch's units) it spent.
type PassObserver func(configuration string, seconds float64, work int)

package fleets

import (
	"context"
	"errors"
	"strings"

	"github.com/hoistgg/hoist/internal/api"
	"github.com/hoistgg/hoist/internal/store"
)

// What internal/agentconn (the GameLift Agent endpoint of Anywhere
// computes) changes of the records fleets owns.

// AgentProcessEnded records that a server process of an Anywhere compute
// ended, as the compute's agent reported it (NotifyServerProcessTermination,
// or the process missing from its heartbeat): a fleet event with code
// (when it is a SERVER_PROCESS_* event code; "" records none), and sessions
// is told the process is gone (reason becomes its end reason). The caller
// has checked that the process is the compute's (or unknown to Hoist: a
// process that could not start, or ended before it connected).
func (s *Service) AgentProcessEnded(ctx context.Context, fleetID, computeName, processID, code, reason string) error {
	if ec := api.EventCode(code); strings.HasPrefix(code, "SERVER_PROCESS_") && ec.IsValid() {
		err := s.cfg.Store.Update(ctx, func(tx store.Tx) error {
			f, err := getFleet(ctx, tx, fleetID)
			if err != nil {
				return err
			}
			loc := ""
			if c, err := getCompute(ctx, tx, fleetID, computeName); err == nil {
				loc = c.Location
			}
			return s.addEvent(ctx, tx, f.id(), ec, s.now(), "Compute %s (location %s): server process %s ended: %s (reported by the compute's GameLift Agent)",
				computeName, loc, processID, reason)
		})
		if err != nil {
			return err
		}
	}
	s.reportExit(ctx, processID, -1, reason)
	return nil
}

// SetComputeImpaired marks an Anywhere compute IMPAIRED (its agent stopped
// sending heartbeats) or ACTIVE again (it sends them again), in the
// caller's transaction, so that the agent's own record changes with it.
// Only those two statuses are changed; a compute that is gone is not an
// error.
func (s *Service) SetComputeImpaired(ctx context.Context, tx store.Tx, fleetID, computeName string, impaired bool) error {
	from, to := api.ComputeStatusActive, api.ComputeStatusImpaired
	if !impaired {
		from, to = to, from
	}
	c, err := getCompute(ctx, tx, fleetID, computeName)
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	if err != nil || c.Status != from {
		return err
	}
	c.Status = to
	return putCompute(ctx, tx, c)
}

package sessions

import (
	"context"

	"github.com/hoistgg/hoist/internal/hosting"
	"github.com/hoistgg/hoist/internal/store"
)

// What the GameLift Agents of Anywhere computes (internal/agentconn) need
// of sessions, and what sessions asks of them.

// forceExitReq asks a compute's agent to kill one of its processes.
type forceExitReq struct{ fleetID, computeName, processID, reason string }

// hasAgent reports whether p runs on an Anywhere compute served by a
// GameLift Agent (never for managed fleets).
func (s *Service) hasAgent(ctx context.Context, tx store.Tx, p *hosting.Process, managed bool) (bool, error) {
	if managed || s.cfg.Agents == nil {
		return false, nil
	}
	return s.cfg.Agents.HasAgent(ctx, tx, p.FleetID, p.ComputeName)
}

// sendForceExits tells agents to kill processes (ForceExitServerProcess);
// a failure is logged (the process's TerminateProcess grace, or the
// agent's next heartbeat, ends it later).
func (s *Service) sendForceExits(ctx context.Context, reqs []forceExitReq) {
	for _, r := range reqs {
		if s.cfg.Agents == nil {
			return
		}
		msg := forceExitMessage(r)
		if err := s.cfg.Agents.SendToCompute(ctx, r.fleetID, r.computeName, msg); err != nil {
			s.log.Warn("sessions: ForceExitServerProcess not delivered to the compute's agent", "process", r.processID,
				"compute", r.computeName, "err", err)
		}
	}
}

// EndProcess asks a live server process to end, as Hoist does when it must
// (TerminateProcess over the SDK and TERMINATING, its game session
// TERMINATING; gone at once on Anywhere when it is not connected). The
// agent endpoint calls it for the processes of a compute whose agent
// reports that it is terminating. An unknown or ended process is no error.
func (s *Service) EndProcess(ctx context.Context, processID, reason string) error {
	return s.update(ctx, func(tx store.Tx, fx *effects) error {
		p, err := getProcess(ctx, tx, processID)
		if err != nil {
			return ignoreNotFound(err)
		}
		if p.State == hosting.ProcessTerminating {
			return nil
		}
		return s.endProcessTx(ctx, tx, fx, p, reason)
	})
}

package sessions

import (
	"context"
	"errors"
	"fmt"

	"github.com/hoistgg/hoist/internal/api"
	"github.com/hoistgg/hoist/internal/hosting"
	"github.com/hoistgg/hoist/internal/store"
)

// ProcessLaunched records a process fleets started (state LAUNCHING). When
// the process connected before this call, its record is completed with the
// launch details.
func (s *Service) ProcessLaunched(ctx context.Context, p hosting.Process) error {
	if p.ID == "" || p.FleetID == "" || p.ComputeName == "" {
		return errors.New("sessions: ProcessLaunched needs the process ID, fleet ID and compute name")
	}
	return s.update(ctx, func(tx store.Tx, _ *effects) error {
		cur, err := getProcess(ctx, tx, p.ID)
		if errors.Is(err, store.ErrNotFound) {
			np := p
			np.State = hosting.ProcessLaunching
			if np.LaunchedAt.IsZero() {
				np.LaunchedAt = s.processNow()
			}
			return s.putProcess(ctx, tx, &np)
		}
		if err != nil {
			return err
		}
		if cur.FleetID != p.FleetID || cur.ComputeName != p.ComputeName {
			return fmt.Errorf("sessions: process ID %s is in use by another fleet or compute", p.ID)
		}
		cur.LaunchPath, cur.Parameters, cur.OutputPath = p.LaunchPath, p.Parameters, p.OutputPath
		if cur.Location == "" {
			cur.Location = p.Location
		}
		return s.putProcess(ctx, tx, cur)
	})
}

// ProcessExited records that the OS process ended: it is TERMINATED, its
// game session ends (ERROR if it was still ACTIVATING, else TERMINATED),
// its player sessions are COMPLETED, and its logs are collected.
func (s *Service) ProcessExited(ctx context.Context, processID string, exitCode int, reason string) error {
	if reason == "" {
		reason = fmt.Sprintf("exited with code %d", exitCode)
	}
	return s.update(ctx, func(tx store.Tx, fx *effects) error {
		p, err := getProcess(ctx, tx, processID)
		if err != nil {
			return ignoreNotFound(err)
		}
		if p.State == hosting.ProcessTerminated {
			return nil
		}
		if p.State != hosting.ProcessTerminating || p.EndReason == "" {
			p.EndReason = reason
		}
		return s.processGoneTx(ctx, tx, fx, p, reason)
	})
}

// ProcessLost records that a process was lost with its host
// (hosting.ProcessLosses): as ProcessExited, but its game session, when it
// was ACTIVE, ends TERMINATED with StatusReason INTERRUPTED, as GameLift
// ends the game sessions of an instance it loses.
func (s *Service) ProcessLost(ctx context.Context, processID, reason string) error {
	return s.update(ctx, func(tx store.Tx, fx *effects) error {
		p, err := getProcess(ctx, tx, processID)
		if err != nil {
			return ignoreNotFound(err)
		}
		if p.State == hosting.ProcessTerminated {
			return nil
		}
		if p.EndReason == "" {
			p.EndReason = reason
		}
		if err := s.interruptTx(ctx, tx, p.GameSessionID); err != nil {
			return err
		}
		return s.processGoneTx(ctx, tx, fx, p, reason)
	})
}

// interruptTx ends the game session id, when it is ACTIVE or TERMINATING,
// with StatusReason INTERRUPTED.
func (s *Service) interruptTx(ctx context.Context, tx store.Tx, id string) error {
	if id == "" {
		return nil
	}
	gs, err := getGameSession(ctx, tx, id)
	if err != nil {
		return ignoreNotFound(err)
	}
	if gs.Session.Status != api.GameSessionStatusActive && gs.Session.Status != api.GameSessionStatusTerminating {
		return nil
	}
	return s.finishSessionTx(ctx, tx, gs, api.GameSessionStatusTerminated, api.GameSessionStatusReasonInterrupted)
}

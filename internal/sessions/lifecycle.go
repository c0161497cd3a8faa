package sessions

import (
	"context"
	"errors"
	"time"

	"github.com/hoistgg/hoist/internal/api"
	"github.com/hoistgg/hoist/internal/hosting"
	"github.com/hoistgg/hoist/internal/store"
)

// effects are the side effects a transaction decided on; they run only after
// it commits (a store may run a transaction function more than once).
type effects struct {
	sends     []outgoing
	terminate []terminateReq
	// kill are processes to end at once (FORCE_TERMINATE).
	kill []terminateReq
	// forceExit are processes of Anywhere computes whose agents are told
	// to kill them.
	forceExit []forceExitReq
	collect   []collectReq
	// remote are game session logs to collect from other hosts.
	remote []hosting.LogRequest
	// removeDirs are collected log directories whose retention ended.
	removeDirs []string
	// wake are the replicas whose inboxes the transaction wrote.
	wake []string
}

type outgoing struct {
	processID string
	msg       hosting.Message
}

type terminateReq struct{ processID, reason string }

// update runs fn in a store transaction and, once it committed, its effects.
func (s *Service) update(ctx context.Context, fn func(tx store.Tx, fx *effects) error) error {
	var fx effects
	err := s.cfg.Store.Update(ctx, func(tx store.Tx) error {
		fx = effects{}
		return fn(tx, &fx)
	})
	if err != nil {
		return err
	}
	s.apply(ctx, &fx)
	return nil
}

// claim runs fn in a Claim on a shared store (PostgreSQL: READ COMMITTED,
// each Get holding the row it read until the end), and once it committed
// its effects; fn returning ErrRunInUpdate runs it again in an
// Update (claimed false). On the embedded stores it is update. For the
// transactions of a process's own calls (heartbeats, activations) that
// many processes make at once: held rows make them wait for each other
// briefly where SERIALIZABLE made them fail and run again alone
// (docs/sessions.md#queue-placements-placetx). When claimed, fn must
// decide only from records it read through tx (held until the commit),
// or from unheld reads of records whose change just after the read it
// may safely miss, and write only what it holds or creates.
func (s *Service) claim(ctx context.Context, fn func(tx store.Tx, fx *effects, claimed bool) error) error {
	if s.cfg.Shared {
		var fx effects
		err := s.cfg.Store.Claim(ctx, func(tx store.Tx) error {
			fx = effects{}
			return fn(tx, &fx, true)
		})
		if !errors.Is(err, ErrRunInUpdate) {
			if err == nil {
				s.apply(ctx, &fx)
			}
			return err
		}
	}
	return s.update(ctx, func(tx store.Tx, fx *effects) error { return fn(tx, fx, false) })
}

func (s *Service) view(ctx context.Context, fn func(tx store.Tx) error) error {
	return s.cfg.Store.View(ctx, fn)
}

// apply runs committed side effects. Failures are logged: the sweep retries
// whatever must still happen.
func (s *Service) apply(ctx context.Context, fx *effects) {
	s.wake(fx)
	for _, m := range fx.sends {
		if s.cfg.Messenger == nil {
			continue
		}
		if err := s.cfg.Messenger.SendToProcess(ctx, m.processID, m.msg); err != nil {
			s.log.Warn("sessions: message to process not delivered", "process", m.processID,
				"action", m.msg["Action"], "err", err)
		}
	}
	for _, t := range fx.terminate {
		if s.cfg.Host == nil {
			continue
		}
		if err := s.cfg.Host.TerminateProcess(ctx, t.processID, t.reason); err != nil {
			s.log.Warn("sessions: ending process failed", "process", t.processID, "reason", t.reason, "err", err)
		}
	}
	for _, k := range fx.kill {
		if s.cfg.Host == nil {
			continue
		}
		if err := s.cfg.Host.KillProcess(ctx, k.processID, k.reason); err != nil {
			s.log.Warn("sessions: killing process failed", "process", k.processID, "reason", k.reason, "err", err)
		}
	}
	s.sendForceExits(ctx, fx.forceExit)
	for _, c := range fx.collect {
		s.collectLogs(ctx, c)
	}
	for _, r := range fx.remote {
		s.cfg.RemoteLogs.CollectRemoteLogs(ctx, r)
	}
	for _, d := range fx.removeDirs {
		s.removeLogDir(d)
	}
}

// terminateMessage is the TerminateProcess message: the process should call
// ProcessEnding before TerminationTime.
func (s *Service) terminateMessage(now time.Time) hosting.Message {
	return hosting.Message{"Action": "TerminateProcess", "TerminationTime": ms(now.Add(s.t.TerminateGrace))}
}

// endProcessTx asks a live process to end (3 bad health reports, readiness
// or activation timeout). On managed fleets the ProcessHost
// ends it (TerminateProcess, grace, kill, relaunch) and ProcessExited
// follows; on Anywhere the process is sent TerminateProcess, or is gone at
// once when it is not connected.
func (s *Service) endProcessTx(ctx context.Context, tx store.Tx, fx *effects, p *hosting.Process, reason string) error {
	if p.State == hosting.ProcessTerminated {
		return nil
	}
	managed, err := managedFleet(ctx, tx, p.FleetID)
	if err != nil {
		return err
	}
	now := s.processNow()
	if !managed && p.ConnectedTo == "" {
		return s.processGoneTx(ctx, tx, fx, p, reason)
	}
	if p.State != hosting.ProcessTerminating {
		p.State, p.TerminatingAt = hosting.ProcessTerminating, now
	}
	if p.EndReason == "" {
		p.EndReason = reason
	}
	if managed {
		fx.terminate = append(fx.terminate, terminateReq{p.ID, reason})
	} else if err := s.sendTx(ctx, tx, fx, p, s.terminateMessage(now)); err != nil {
		return err
	}
	if err := s.putProcess(ctx, tx, p); err != nil {
		return err
	}
	return s.sessionTerminatingTx(ctx, tx, p.GameSessionID, "")
}

// killProcessTx has a live process killed at once, without the shutdown
// sequence (FORCE_TERMINATE): it goes TERMINATING and the ProcessHost (on
// managed fleets) or its compute's agent (on Anywhere, agentReason)
// kills it (no TerminateProcess message, no grace); ProcessExited follows.
func (s *Service) killProcessTx(ctx context.Context, tx store.Tx, fx *effects, p *hosting.Process, reason string, managed bool, agentReason string) error {
	if p.State == hosting.ProcessTerminated {
		return nil
	}
	if p.State != hosting.ProcessTerminating {
		p.State, p.TerminatingAt = hosting.ProcessTerminating, s.processNow()
	}
	if p.EndReason == "" {
		p.EndReason = reason
	}
	if managed {
		fx.kill = append(fx.kill, terminateReq{p.ID, reason})
	} else if err := s.forceExitTx(ctx, tx, fx, forceExitReq{p.FleetID, p.ComputeName, p.ID, agentReason}); err != nil {
		return err
	}
	return s.putProcess(ctx, tx, p)
}

// sessionTerminatingTx moves the ACTIVE game session id to TERMINATING.
func (s *Service) sessionTerminatingTx(ctx context.Context, tx store.Tx, id string, reason api.GameSessionStatusReason) error {
	if id == "" {
		return nil
	}
	gs, err := getGameSession(ctx, tx, id)
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	if err != nil || gs.Session.Status != api.GameSessionStatusActive {
		return err
	}
	gs.Session.Status, gs.TerminatingAt = api.GameSessionStatusTerminating, s.now()
	if reason != "" {
		gs.Session.StatusReason = reason
	}
	return s.putGameSession(ctx, tx, gs)
}

// processGoneTx records that a process no longer runs: it is TERMINATED, its
// game session ends (ERROR if it never activated, else TERMINATED) with its
// player sessions, and its logs are collected.
func (s *Service) processGoneTx(ctx context.Context, tx store.Tx, fx *effects, p *hosting.Process, reason string) error {
	if p.State == hosting.ProcessTerminated {
		return nil
	}
	p.State, p.EndedAt, p.ConnectedTo, p.ConnID = hosting.ProcessTerminated, s.processNow(), "", ""
	if p.EndReason == "" {
		p.EndReason = reason
	}
	if err := s.putProcess(ctx, tx, p); err != nil {
		return err
	}
	if p.GameSessionID == "" {
		return nil
	}
	gs, err := getGameSession(ctx, tx, p.GameSessionID)
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	if !ended(gs.Session.Status) {
		status, reason := api.GameSessionStatusError, api.GameSessionStatusReason("")
		if gs.Session.Status != api.GameSessionStatusActivating {
			status = api.GameSessionStatusTerminated
			if reason, err = s.endReasonTx(ctx, tx, p); err != nil {
				return err
			}
		}
		if err := s.finishSessionTx(ctx, tx, gs, status, reason); err != nil {
			return err
		}
	}
	return s.planCollectTx(ctx, tx, fx, p, gs)
}

// endReasonTx is the StatusReason of a game session that ends TERMINATED
// because its process p ends: INTERRUPTED when p's instance is lost with
// its host (Config.InstanceLost), else none.
func (s *Service) endReasonTx(ctx context.Context, tx store.Tx, p *hosting.Process) (api.GameSessionStatusReason, error) {
	if s.cfg.InstanceLost == nil {
		return "", nil
	}
	c, err := getCompute(ctx, tx, p.FleetID, p.ComputeName)
	if err != nil {
		return "", ignoreNotFound(err)
	}
	lost, err := s.cfg.InstanceLost(ctx, tx, c)
	if err != nil || !lost {
		return "", err
	}
	return api.GameSessionStatusReasonInterrupted, nil
}

// finishSessionTx ends a game session: status TERMINATED or ERROR, and every
// RESERVED or ACTIVE player session COMPLETED.
func (s *Service) finishSessionTx(ctx context.Context, tx store.Tx, gs *hosting.GameSession, status api.GameSessionStatus, reason api.GameSessionStatusReason) error {
	now := s.now()
	gs.Session.Status = status
	if reason != "" {
		gs.Session.StatusReason = reason
	}
	gs.Session.TerminationTime = api.Time(now)
	gs.Session.CurrentPlayerSessionCount = api.Int32(0)
	if err := s.putGameSession(ctx, tx, gs); err != nil {
		return err
	}
	id := api.ToString(gs.Session.GameSessionId)
	for _, st := range []api.PlayerSessionStatus{api.PlayerSessionStatusReserved, api.PlayerSessionStatusActive} {
		if err := s.endPlayerSessionsTx(ctx, tx, id, st, api.PlayerSessionStatusCompleted, now); err != nil {
			return err
		}
	}
	return s.sessionEndedTx(ctx, tx, gs)
}

// endPlayerSessionsTx moves every player session of a game session in
// status from to status to.
func (s *Service) endPlayerSessionsTx(ctx context.Context, tx store.Tx, gsID string, from, to api.PlayerSessionStatus, now time.Time) error {
	q := store.Query{Kind: hosting.KindPlayerSession, Parent: gsID, HasParent: true, Key: string(from), HasKey: true}
	for {
		recs, next, err := tx.List(ctx, q)
		if err != nil {
			return err
		}
		for _, rec := range recs {
			ps := new(hosting.PlayerSession)
			if err := store.Decode(rec, ps); err != nil {
				return err
			}
			ps.Session.Status, ps.Session.TerminationTime = to, api.Time(now)
			if err := putPlayerSession(ctx, tx, ps); err != nil {
				return err
			}
		}
		if next == "" {
			return nil
		}
		q.After = next
	}
}

package sessions

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/hoistgg/hoist/internal/api"
	"github.com/hoistgg/hoist/internal/hosting"
	"github.com/hoistgg/hoist/internal/replicas"
	"github.com/hoistgg/hoist/internal/store"
)

// Messages for connections another replica holds (internal/replicas):
// written into that replica's inbox in the transaction that decides them,
// and that replica woken once it committed. Connections of this replica
// keep the direct path: the message is sent after the commit.

// remoteHolder returns the replica holding p's connection when it is
// another one ("" when the message takes the direct path).
func (s *Service) remoteHolder(p *hosting.Process) string {
	if s.cfg.Inbox.Remote(p.ConnectedTo) {
		return p.ConnectedTo
	}
	return ""
}

// postTx writes msg for process p into the inbox of the replica holding
// its connection, in tx, and returns that replica (to wake once tx
// committed).
func (s *Service) postTx(ctx context.Context, tx store.Tx, p *hosting.Process, msg hosting.Message) (string, error) {
	to := p.ConnectedTo
	return to, s.cfg.Inbox.PostTx(ctx, tx, to, replicas.Target(replicas.TargetProcess, p.ID), msg)
}

// sendTx has msg sent to process p once tx committed: through the inbox
// of the replica holding its connection (written in tx), or over this
// replica's socket after the commit.
func (s *Service) sendTx(ctx context.Context, tx store.Tx, fx *effects, p *hosting.Process, msg hosting.Message) error {
	if s.remoteHolder(p) == "" {
		fx.sends = append(fx.sends, outgoing{p.ID, msg})
		return nil
	}
	to, err := s.postTx(ctx, tx, p, msg)
	fx.wake = append(fx.wake, to)
	return err
}

// forceExitTx has a compute's agent told to kill process p
// (ForceExitServerProcess) once tx committed: through the inbox of the
// replica holding the agent's connection, or from this replica.
func (s *Service) forceExitTx(ctx context.Context, tx store.Tx, fx *effects, r forceExitReq) error {
	if s.cfg.Agents == nil {
		return nil
	}
	holder, err := s.cfg.Agents.AgentHolder(ctx, tx, r.fleetID, r.computeName)
	if err != nil || !s.cfg.Inbox.Remote(holder) {
		fx.forceExit = append(fx.forceExit, r)
		return err
	}
	fx.wake = append(fx.wake, holder)
	return s.cfg.Inbox.PostTx(ctx, tx, holder, replicas.Target(replicas.TargetCompute, r.fleetID+"/"+r.computeName), forceExitMessage(r))
}

// forceExitMessage is the ForceExitServerProcess message of the agent
// protocol.
func forceExitMessage(r forceExitReq) hosting.Message {
	return hosting.Message{"Action": "ForceExitServerProcess", "ProcessId": r.processID, "TerminationReason": r.reason}
}

// wake wakes the replicas whose inboxes a committed transaction wrote.
func (s *Service) wake(fx *effects) {
	for _, r := range fx.wake {
		s.cfg.Inbox.Wake(r)
	}
}

// Undelivered is told of a message for a process that the inbox dropped
// (its process has no connection anywhere): a CreateGameSession the
// process never got ends its game session in ERROR and frees the
// process, as when this replica fails to send it.
func (s *Service) Undelivered(ctx context.Context, processID string, body json.RawMessage) {
	var m struct{ Action, GameSessionId string }
	if json.Unmarshal(body, &m) != nil || m.Action != "CreateGameSession" {
		return
	}
	if err := s.createUndelivered(ctx, m.GameSessionId, processID); err != nil {
		s.log.Error("sessions: recording undelivered CreateGameSession failed", "gameSession", m.GameSessionId, "err", err)
	}
}

// createUndelivered ends an ACTIVATING game session whose CreateGameSession
// its process never got in ERROR, and frees the process.
func (s *Service) createUndelivered(ctx context.Context, id, processID string) error {
	return s.update(ctx, func(tx store.Tx, _ *effects) error {
		cur, err := getGameSession(ctx, tx, id)
		if err != nil || cur.Session.Status != api.GameSessionStatusActivating {
			return ignoreNotFound(err)
		}
		if err := s.finishSessionTx(ctx, tx, cur, api.GameSessionStatusError, ""); err != nil {
			return err
		}
		proc, err := getProcess(ctx, tx, processID)
		if err != nil || proc.GameSessionID != id || proc.State != hosting.ProcessActive {
			return ignoreNotFound(err)
		}
		proc.GameSessionID = ""
		return s.putProcess(ctx, tx, proc)
	})
}

// ProcessHolder returns the replica holding process id's connection ("":
// none, or no such process), reading tx: the inbox's route to processes.
func ProcessHolder(ctx context.Context, tx store.Tx, id string) (string, error) {
	p, err := getProcess(ctx, tx, id)
	if errors.Is(err, store.ErrNotFound) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	return p.ConnectedTo, nil
}

// clearPage is how many processes one clearing transaction handles.
const clearPage = 100

// ClearReplica treats every process connected to a dead replica as
// disconnected, as its socket's close would have (the replicas
// janitor's Clearer): it may reconnect to any replica.
func (s *Service) ClearReplica(ctx context.Context, gone replicas.Gone) error {
	for {
		var ids []string
		err := s.view(ctx, func(tx store.Tx) error {
			ids = ids[:0]
			return store.Each(ctx, tx, store.Query{Kind: hosting.KindProcess}, func(rec store.Record) error {
				var p struct{ ConnectedTo string }
				if err := json.Unmarshal(rec.Data, &p); err != nil {
					return err
				}
				if p.ConnectedTo == gone.ID && len(ids) < clearPage {
					ids = append(ids, rec.ID)
				}
				return nil
			})
		})
		if err != nil || len(ids) == 0 {
			return err
		}
		if err := s.clearProcesses(ctx, gone, ids); err != nil {
			return err
		}
		if len(ids) < clearPage {
			return nil
		}
	}
}

// clearProcesses disconnects processes of a dead replica in one
// transaction, unless the replica registered again.
func (s *Service) clearProcesses(ctx context.Context, gone replicas.Gone, ids []string) error {
	return s.update(ctx, func(tx store.Tx, fx *effects) error {
		if still, err := gone.Still(ctx, tx); err != nil || !still {
			return err
		}
		for _, id := range ids {
			p, err := getProcess(ctx, tx, id)
			if err != nil {
				if errors.Is(err, store.ErrNotFound) {
					continue
				}
				return err
			}
			if p.ConnectedTo != gone.ID {
				continue
			}
			if p.State == hosting.ProcessTerminated {
				p.ConnectedTo, p.ConnID = "", ""
				if err := s.putProcess(ctx, tx, p); err != nil {
					return err
				}
				continue
			}
			if err := s.disconnectTx(ctx, tx, fx, p, false, false); err != nil {
				return err
			}
		}
		return nil
	})
}

package agentconn

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/hoistgg/hoist/internal/replicas"
	"github.com/hoistgg/hoist/internal/store"
)

// kindAgentConn names the replica holding a compute's agent connection,
// so that a message for the agent issued on another replica is routed
// there (internal/replicas). Record: ID = fleet ID + "/" + compute name,
// Parent = fleet ID; written when a socket opens, removed when the last
// one of this replica closes, cleared by the replicas janitor when its
// replica dies.
const kindAgentConn store.Kind = "AgentConnection"

// agentConnRec is an AgentConnection record's Data.
type agentConnRec struct {
	ConnectedTo string `json:"connectedTo"`
	ConnID      string `json:"connId"`
}

// recordConnected names this replica as the holder of the compute's
// agent connection c.
func (s *Server) recordConnected(c *agentConn) {
	if !s.cfg.Shared {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), s.cfg.CallTimeout)
	defer cancel()
	err := s.cfg.Store.Update(ctx, func(tx store.Tx) error {
		return store.PutJSON(ctx, tx, store.Record{Kind: kindAgentConn, ID: c.id.key(), Parent: c.id.fleetID},
			agentConnRec{ConnectedTo: s.cfg.ReplicaID, ConnID: c.connID})
	})
	if err != nil {
		c.log.Warn("agent: recording the connection failed (messages from other replicas will not reach it)", "err", err)
	}
}

// recordClosed records that socket c closed: the compute's record then
// names this replica's newest socket left, or is removed when it named c
// and none is left.
func (s *Server) recordClosed(c *agentConn) {
	if !s.cfg.Shared {
		return
	}
	next := s.current(c.id.fleetID, c.id.computeName)
	ctx, cancel := context.WithTimeout(context.Background(), s.cfg.CallTimeout)
	defer cancel()
	err := s.cfg.Store.Update(ctx, func(tx store.Tx) error {
		var cur agentConnRec
		if _, err := store.GetJSON(ctx, tx, kindAgentConn, c.id.key(), &cur); err != nil {
			return ignoreNotFound(err)
		}
		switch {
		case cur.ConnectedTo != s.cfg.ReplicaID || (cur.ConnID != c.connID && next == nil):
			return nil // another replica's, or another socket's
		case next != nil:
			return store.PutJSON(ctx, tx, store.Record{Kind: kindAgentConn, ID: c.id.key(), Parent: c.id.fleetID},
				agentConnRec{ConnectedTo: s.cfg.ReplicaID, ConnID: next.connID})
		}
		return tx.Delete(ctx, kindAgentConn, c.id.key())
	})
	if err != nil {
		c.log.Warn("agent: recording the disconnection failed", "err", err)
	}
}

// AgentHolder returns the replica holding the compute's agent connection
// ("" for none), reading tx (hosting.ComputeAgents).
func (s *Server) AgentHolder(ctx context.Context, tx store.Tx, fleetID, computeName string) (string, error) {
	return AgentHolder(ctx, tx, fleetID+"/"+computeName)
}

// AgentHolder returns the replica holding the agent connection of a
// compute ("<fleet ID>/<compute name>"), reading tx: the replicas inbox's
// route to agents.
func AgentHolder(ctx context.Context, tx store.Tx, compute string) (string, error) {
	var cur agentConnRec
	if _, err := store.GetJSON(ctx, tx, kindAgentConn, compute, &cur); err != nil {
		return "", ignoreNotFound(err)
	}
	return cur.ConnectedTo, nil
}

// ClearReplica removes the agent connection records of a dead replica
// (the replicas janitor's Clearer): its agents reconnect to any replica.
func (s *Server) ClearReplica(ctx context.Context, gone replicas.Gone) error {
	return s.cfg.Store.Update(ctx, func(tx store.Tx) error {
		if still, err := gone.Still(ctx, tx); err != nil || !still {
			return err
		}
		var ids []string
		err := store.Each(ctx, tx, store.Query{Kind: kindAgentConn}, func(rec store.Record) error {
			var cur agentConnRec
			if err := json.Unmarshal(rec.Data, &cur); err != nil {
				return err
			}
			if cur.ConnectedTo == gone.ID {
				ids = append(ids, rec.ID)
			}
			return nil
		})
		if err != nil {
			return err
		}
		for _, id := range ids {
			if err := tx.Delete(ctx, kindAgentConn, id); err != nil && !errors.Is(err, store.ErrNotFound) {
				return err
			}
		}
		return nil
	})
}

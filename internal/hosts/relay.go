package hosts

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/coder/websocket"

	"github.com/hoistgg/hoist/internal/hosts/hostproto"

	"github.com/hoistgg/hoist/internal/replicas"
	"github.com/hoistgg/hoist/internal/store"
)

// relayMessenger sends to the hosts connected to this replica directly,
// and to those connected to another replica through its inbox
// (internal/replicas): the message is delivered once that replica takes
// it from its inbox, so SendToHost returns when it is written there, not
// when the agent acknowledged it. StartInstance is never relayed: it
// carries the instance's certificate key, which stays out of the database,
// and its caller needs the agent's answer.
type relayMessenger struct{ s *Service }

// hostMessage is a host message in an inbox.
type hostMessage struct {
	Action string          `json:"action"`
	Msg    json.RawMessage `json:"msg"`
}

// SendToHost implements HostMessenger.
func (m relayMessenger) SendToHost(ctx context.Context, hostID, action string, msg any) error {
	err := localMessenger(m).SendToHost(ctx, hostID, action, msg)
	if !errors.Is(err, errNotConnected) || action == hostproto.ActionStartInstance {
		return err
	}
	body, jerr := json.Marshal(msg)
	if jerr != nil {
		return jerr
	}
	var to string
	uerr := m.s.cfg.Store.Update(ctx, func(tx store.Tx) error {
		var err error
		if to, err = HostHolder(ctx, tx, hostID); err != nil || !m.s.cfg.Inbox.Remote(to) {
			return err
		}
		return m.s.cfg.Inbox.PostTx(ctx, tx, to, replicas.Target(replicas.TargetHost, hostID), hostMessage{action, body})
	})
	if uerr != nil {
		return uerr
	}
	if !m.s.cfg.Inbox.Remote(to) {
		return err // connected nowhere
	}
	m.s.cfg.Inbox.Wake(to)
	return nil
}

// DeliverToHost delivers a host message from this replica's inbox over
// the host's connection here (the inbox's route to hosts); wrapped
// replicas.ErrNoConnection when there is none.
func (s *Service) DeliverToHost(ctx context.Context, hostID string, body json.RawMessage) error {
	var m hostMessage
	if err := json.Unmarshal(body, &m); err != nil {
		return err
	}
	err := localMessenger{s}.SendToHost(ctx, hostID, m.Action, m.Msg)
	if errors.Is(err, errNotConnected) {
		return fmt.Errorf("host %s: %w", hostID, replicas.ErrNoConnection)
	}
	return err
}

// HostHolder returns the replica holding a host's connection ("" for
// none, or no such host), reading tx.
func HostHolder(ctx context.Context, tx store.Tx, hostID string) (string, error) {
	h, err := getHost(ctx, tx, hostID)
	if err != nil {
		return "", ignoreNotFound(err)
	}
	return h.ConnectedTo, nil
}

// ClearReplica marks the hosts connected to a dead replica disconnected
// (the replicas janitor's Clearer): their agents reconnect to any
// replica; until then each counts as a host that went silent.
func (s *Service) ClearReplica(ctx context.Context, gone replicas.Gone) error {
	return s.cfg.Store.Update(ctx, func(tx store.Tx) error {
		if still, err := gone.Still(ctx, tx); err != nil || !still {
			return err
		}
		var hs []*Host
		err := store.Each(ctx, tx, store.Query{Kind: KindHost}, func(rec store.Record) error {
			h := new(Host)
			if err := store.Decode(rec, h); err != nil {
				return err
			}
			if h.ConnectedTo == gone.ID {
				hs = append(hs, h)
			}
			return nil
		})
		if err != nil {
			return err
		}
		for _, h := range hs {
			h.ConnectedTo, h.ConnID = "", ""
			if err := putHost(ctx, tx, h); err != nil {
				return err
			}
		}
		return nil
	})
}

// CloseAll closes every host connection of this replica with 1012
// (service restart), so that the agents reconnect (see
// sdkconn.Server.CloseAll).
func (s *Service) CloseAll(reason string) {
	s.mu.Lock()
	all := make([]*hostConn, 0, len(s.conns))
	for _, hc := range s.conns {
		all = append(all, hc)
	}
	s.mu.Unlock()
	for _, hc := range all {
		hc.peer.Close(websocket.StatusServiceRestart, reason)
	}
}

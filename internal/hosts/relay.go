package hosts

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/coder/websocket"

	"github.com/hoistgg/hoist/internal/fleets"
	"github.com/hoistgg/hoist/internal/hosts/hostproto"
	"github.com/hoistgg/hoist/internal/replicas"
	"github.com/hoistgg/hoist/internal/store"
)

// relayMessenger sends to the hosts connected to this replica directly,
// and to those connected to another replica through its inbox
// (internal/replicas): the message is delivered once that replica takes
// it from its inbox, so SendToHost returns when it is written there, not
// when the agent acknowledged it. It never relays StartInstance, which
// carries secrets: sendStart relays it without them.
type relayMessenger struct{ s *Service }

// hostMessage is a host message in an inbox. Certificate goes with a
// relayed StartInstance of a GENERATED fleet's instance: what its
// certificate names, which the receiving replica issues.
type hostMessage struct {
	Action      string                     `json:"action"`
	Msg         json.RawMessage            `json:"msg"`
	Certificate *fleets.CertificateRequest `json:"certificate,omitempty"`
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
	posted, perr := m.s.post(ctx, hostID, hostMessage{Action: action, Msg: body})
	if perr != nil || !posted {
		return cmp.Or(perr, err) // connected nowhere: err
	}
	return nil
}

// post writes m into the inbox of the replica holding hostID's connection
// and wakes it; posted is false when no other replica holds it.
func (s *Service) post(ctx context.Context, hostID string, m hostMessage) (posted bool, err error) {
	var to string
	err = s.cfg.Store.Update(ctx, func(tx store.Tx) error {
		var err error
		if to, err = HostHolder(ctx, tx, hostID); err != nil || !s.cfg.Inbox.Remote(to) {
			return err
		}
		return s.cfg.Inbox.PostTx(ctx, tx, to, replicas.Target(replicas.TargetHost, hostID), m)
	})
	if err != nil || !s.cfg.Inbox.Remote(to) {
		return false, err
	}
	s.cfg.Inbox.Wake(to)
	return true, nil
}

// sendStart sends StartInstance to its host: over this replica's
// connection, with its secrets (the processes' auth token in Env, the
// certificate's key); else, with several replicas, into the inbox of the
// replica holding the host's connection without them: no Env, no
// certificate, only what the certificate names (cert). That replica makes
// the secrets anew and records the start's outcome (deliverStart).
// relayed says the start went there.
func (s *Service) sendStart(ctx context.Context, hostID string, msg hostproto.StartInstance, cert *fleets.CertificateRequest) (relayed bool, err error) {
	err = s.msgr.SendToHost(ctx, hostID, hostproto.ActionStartInstance, msg)
	if !errors.Is(err, errNotConnected) || s.cfg.Inbox == nil {
		return false, err
	}
	msg.Env, msg.Certificate = nil, nil // the secrets stay on this replica
	body, jerr := json.Marshal(msg)
	if jerr != nil {
		return false, jerr
	}
	posted, perr := s.post(ctx, hostID, hostMessage{Action: hostproto.ActionStartInstance, Msg: body, Certificate: cert})
	if perr != nil || !posted {
		return false, cmp.Or(perr, err)
	}
	return true, nil
}

// DeliverToHost delivers a host message from this replica's inbox over
// the host's connection here (the inbox's route to hosts); wrapped
// replicas.ErrNoConnection when there is none.
func (s *Service) DeliverToHost(ctx context.Context, hostID string, body json.RawMessage) error {
	var m hostMessage
	if err := json.Unmarshal(body, &m); err != nil {
		return err
	}
	var err error
	if m.Action == hostproto.ActionStartInstance {
		err = s.deliverStart(ctx, hostID, m)
	} else {
		err = localMessenger{s}.SendToHost(ctx, hostID, m.Action, m.Msg)
	}
	if errors.Is(err, errNotConnected) {
		return fmt.Errorf("host %s: %w", hostID, replicas.ErrNoConnection)
	}
	return err
}

// deliverStart delivers a StartInstance another replica relayed: its
// secrets are made here (fleets' StartSecrets: a new auth token, a
// certificate from this replica's CA), then it is sent over this
// replica's connection. Its outcome is recorded here as the deciding
// replica records it on the direct path: a start the host refuses fails
// the instance (its setup step failed, then it stopped). An instance no
// longer PENDING is not started; a failure to make the secrets is
// retried by the inbox, then, dropped, fails the instance (UndeliveredToHost).
func (s *Service) deliverStart(ctx context.Context, hostID string, m hostMessage) error {
	var msg hostproto.StartInstance
	if err := json.Unmarshal(m.Msg, &msg); err != nil {
		return err
	}
	s.mu.Lock()
	here := s.conns[hostID] != nil
	s.mu.Unlock()
	if !here {
		return errNotConnected // before a token is made for nothing
	}
	if s.secrets == nil {
		return errors.New("hosts: this replica cannot make the secrets of an instance's start")
	}
	ref := fleets.InstanceRef{FleetID: msg.FleetId, InstanceID: msg.InstanceId, Location: msg.Location}
	env, files, err := s.secrets(ctx, ref, m.Certificate)
	if errors.Is(err, fleets.ErrUnknownInstance) {
		s.log.Info("hosts: a relayed instance start dropped: the instance is no longer pending", "host", hostID, "instance", ref.InstanceID)
		return nil
	}
	if err != nil {
		return err
	}
	msg.Env, msg.Certificate = s.hostEnv(env), hostCertificate(files)
	err = localMessenger{s}.SendToHost(ctx, hostID, hostproto.ActionStartInstance, msg)
	if err != nil && !errors.Is(err, errNotConnected) {
		s.startFailed(ctx, hostID, ref, err)
		return nil
	}
	return err
}

// UndeliveredToHost is told of a host message the inbox dropped (the
// host has no connection anywhere, or its delivery kept failing): a
// StartInstance's instance fails, as a start on the direct path to a host
// that is not connected does.
func (s *Service) UndeliveredToHost(ctx context.Context, hostID string, body json.RawMessage) {
	var m hostMessage
	var msg hostproto.StartInstance
	if json.Unmarshal(body, &m) != nil || m.Action != hostproto.ActionStartInstance || json.Unmarshal(m.Msg, &msg) != nil {
		return
	}
	ref := fleets.InstanceRef{FleetID: msg.FleetId, InstanceID: msg.InstanceId, Location: msg.Location}
	s.startFailed(ctx, hostID, ref, errNotConnected)
}

// startFailed records that an instance's start on its host failed: its
// download step failed, and it stopped (what fleets records when
// StartInstance returns an error).
func (s *Service) startFailed(ctx context.Context, hostID string, ref fleets.InstanceRef, err error) {
	h := s.hooksOf(ref)
	h.StepFailed(ctx, fleets.StepDownload, fmt.Errorf("host %s: %w", hostID, err))
	h.InstanceStopped(ctx)
	s.forgetHooks(ref.InstanceID)
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

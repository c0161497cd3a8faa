package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/hoistgg/hoist/internal/agentconn"
	"github.com/hoistgg/hoist/internal/config"
	"github.com/hoistgg/hoist/internal/hosting"
	"github.com/hoistgg/hoist/internal/hosts"
	"github.com/hoistgg/hoist/internal/replicas"
	"github.com/hoistgg/hoist/internal/sdkconn"
	"github.com/hoistgg/hoist/internal/sessions"
	"github.com/hoistgg/hoist/internal/store"
)

// register makes this replica's registry entry and, on a store that
// several replicas share (PostgreSQL), its inbox; the entry is written
// before anything is served, so that the janitor can clear what names
// this replica should it die.
func (s *Server) register(addrs []string) error {
	s.registry = &replicas.Registry{Store: s.store, Log: s.log.With("component", "replicas"),
		Self: replicas.Record{ID: s.replica, Addresses: addrs, Started: s.wallNow().UTC()}}
	s.replicas = s.registry
	s.registry.OnLost = s.reconnectAll
	if s.cfg.Store == config.StorePostgres {
		s.inbox = replicas.New(replicas.Config{Store: s.store, Self: s.replica, Log: s.log.With("component", "inbox")})
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := s.registry.Register(ctx); err != nil {
		return fmt.Errorf("registering this replica in the store: %w", err)
	}
	return nil
}

// reconnectAll closes every connection this replica holds so that each
// reconnects and is recorded again: the registration had expired, and the
// janitor of another replica may have cleared their records.
func (s *Server) reconnectAll() {
	const why = "Hoist lost its registration: reconnect"
	if s.sdk != nil {
		s.sdk.CloseAll(why)
	}
	if s.agents != nil {
		s.agents.CloseAll(why)
	}
	if s.hosts != nil {
		s.hosts.CloseAll(why)
	}
}

// routeInbox gives the inbox its routes to processes, agents and hosts,
// once the SDK endpoint, the agent endpoint and the hosts exist.
func (s *Server) routeInbox() {
	if s.inbox == nil {
		return
	}
	s.inbox.Handle(replicas.TargetProcess, replicas.Route{
		Holder: sessions.ProcessHolder,
		Deliver: func(ctx context.Context, id string, body json.RawMessage) error {
			var msg hosting.Message
			if err := json.Unmarshal(body, &msg); err != nil {
				return err
			}
			return noConnection(s.sdk.SendToProcess(ctx, id, msg), sdkconn.ErrNotConnected)
		},
		Undelivered: s.sessions.Undelivered,
	})
	s.inbox.Handle(replicas.TargetCompute, replicas.Route{
		Holder: agentconn.AgentHolder,
		Deliver: func(ctx context.Context, id string, body json.RawMessage) error {
			var msg hosting.Message
			if err := json.Unmarshal(body, &msg); err != nil {
				return err
			}
			fleetID, name := splitCompute(id)
			return noConnection(s.agents.SendToCompute(ctx, fleetID, name, msg), agentconn.ErrNotConnected)
		},
	})
	s.inbox.Handle(replicas.TargetHost, replicas.Route{Holder: hosts.HostHolder, Deliver: s.hosts.DeliverToHost,
		Undelivered: s.hosts.UndeliveredToHost})
}

// janitor is the replicas janitor: it clears the processes, agents and
// hosts of dead replicas (with a shared store only).
func (s *Server) janitor() *replicas.Janitor {
	return &replicas.Janitor{Store: s.store, Holder: s.replica, Inbox: s.inbox, Now: s.now,
		Log:   s.log.With("component", "replicas"),
		Clear: []replicas.Clearer{s.sessions.ClearReplica, s.agents.ClearReplica, s.hosts.ClearReplica}}
}

// splitCompute splits "<fleet ID>/<compute name>" (fleet IDs have no
// slash).
func splitCompute(id string) (fleetID, name string) {
	for i := range len(id) {
		if id[i] == '/' {
			return id[:i], id[i+1:]
		}
	}
	return id, ""
}

// noConnection maps a sender's not-connected error to the inbox's.
func noConnection(err, notConnected error) error {
	if errors.Is(err, notConnected) {
		return fmt.Errorf("%w: %w", replicas.ErrNoConnection, err)
	}
	return err
}

// relaySend sends msg to a target that has no connection here: into the
// inbox of the replica holding it, in a transaction of its own (the
// senders that come here decided it in an earlier one). It returns
// notHere when no other replica holds it either (one read).
func (s *Server) relaySend(ctx context.Context, kind, id string, holder func(context.Context, store.Tx, string) (string, error),
	msg any, notHere error) error {
	if s.inbox == nil {
		return notHere
	}
	// Most often no replica holds it (a managed fleet's compute, an
	// Anywhere compute without an agent): one read says so, without a
	// transaction. Else the message goes to the holder's inbox; should the
	// connection move meanwhile, that inbox re-routes it (or drops it when
	// there is no connection anywhere), as for any message.
	var to string
	err := store.Read(ctx, s.store, func(tx store.Tx) error {
		var err error
		to, err = holder(ctx, tx, id)
		return err
	})
	if err != nil {
		return err
	}
	if !s.inbox.Remote(to) {
		return notHere
	}
	err = s.store.Update(ctx, func(tx store.Tx) error {
		return s.inbox.PostTx(ctx, tx, to, replicas.Target(kind, id), msg)
	})
	if err != nil {
		return err
	}
	s.inbox.Wake(to)
	return nil
}

// peerURL returns the plain API URL of the registered replica id (builds
// fetch a build's files from the replica holding them there).
func (s *Server) peerURL(ctx context.Context, id string) (string, error) {
	rs, err := replicas.List(ctx, s.store)
	if err != nil {
		return "", err
	}
	for _, r := range rs {
		if r.ID != id {
			continue
		}
		for _, a := range r.Addresses {
			if strings.HasPrefix(a, "http://") {
				return a, nil
			}
		}
		return "", fmt.Errorf("replica %s registered no http:// address", id)
	}
	return "", fmt.Errorf("replica %s is %w", id, errReplicaGone)
}

// errReplicaGone: a replica is not in the registry (not running).
var errReplicaGone = errors.New("not registered (not running)")

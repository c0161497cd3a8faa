package hosts

import (
	"context"
	"crypto/subtle"
	"errors"
	"net/http"
	"sync"
	"time"

	"github.com/coder/websocket"

	"github.com/hoistgg/hoist/internal/hosts/hostproto"
	"github.com/hoistgg/hoist/internal/ids"
	"github.com/hoistgg/hoist/internal/store"
	"github.com/hoistgg/hoist/internal/wsrpc"
)

// HostMessenger delivers Hoist's messages to hosts. For one replica it is
// the connections held here (localMessenger); with several replicas it
// routes to the replica holding the host's connection (Host.ConnectedTo).
// A message is delivered when the agent acknowledged it.
type HostMessenger interface {
	SendToHost(ctx context.Context, hostID, action string, msg any) error
}

// Bounds of a host's connection: frames as /sdk's; the agent's requests a
// second (a host reports every process start and end of its instances,
// so more than one game server's SDK socket).
const (
	hostMessageBurst = 300
	hostMessageRate  = 100
	// helloTimeout bounds the wait for a new connection's Hello.
	helloTimeout = 30 * time.Second
)

// hostConn is a host's connection to this replica.
type hostConn struct {
	hostID string
	connID string
	peer   *wsrpc.Peer

	mu     sync.Mutex
	hello  bool        // Hello was answered
	silent *time.Timer // closes the connection when the host falls silent
}

// localMessenger sends to the hosts connected to this replica.
type localMessenger struct{ s *Service }

// SendToHost calls the host's agent and waits for its acknowledgement.
func (m localMessenger) SendToHost(ctx context.Context, hostID, action string, msg any) error {
	m.s.mu.Lock()
	hc := m.s.conns[hostID]
	m.s.mu.Unlock()
	if hc == nil {
		return errNotConnected
	}
	err := hc.peer.Call(ctx, action, msg, nil)
	var we *wsrpc.Error
	if errors.As(err, &we) {
		return &wsError{status: we.Status, msg: clip(we.Message)}
	}
	return err
}

// ServeConnect serves the host protocol's WebSocket: the host's
// credential is checked before the upgrade (401 without a valid one), a
// slot for a long-lived connection is taken (503 when none is free), and
// the connection replaces the host's previous one on this replica.
func (s *Service) ServeConnect(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		w.Header().Set("Upgrade", "websocket")
		http.Error(w, "this is Hoist's host protocol endpoint: hoist agent --pool connects here", http.StatusUpgradeRequired)
		return
	}
	h, err := s.authenticate(r.Context(), r.Header)
	if err != nil {
		refuse(w, err)
		return
	}
	if s.cfg.Slots != nil {
		if !s.cfg.Slots.TryTake() {
			refuse(w, &httpError{http.StatusServiceUnavailable, "Hoist has as many long-lived connections open as it allows; retry later"})
			return
		}
		defer s.cfg.Slots.Give()
	}
	ws, err := websocket.Accept(w, r, &websocket.AcceptOptions{CompressionMode: websocket.CompressionDisabled})
	if err != nil {
		s.log.Info("hosts: WebSocket upgrade failed", "host", h.HostID, "err", err)
		return
	}
	hc := &hostConn{hostID: h.HostID, connID: ids.UUID()}
	hc.peer = wsrpc.New(ws, wsrpc.Config{Handler: s.handler(hc), MaxMessageBytes: hostproto.MaxMessageBytes,
		MessageBurst: hostMessageBurst, MessageRate: hostMessageRate, NewID: ids.UUID, Now: s.cfg.Now,
		Logger: s.log.With("host", h.HostID)})
	hc.silent = time.AfterFunc(helloTimeout, hc.peer.Abort) // the host fell silent
	s.register(hc)
	err = hc.peer.Run(context.Background())
	hc.silent.Stop()
	s.unregister(hc)
	s.log.Info("hosts: host disconnected", "host", h.HostID, "err", err)
}

// httpError is a refused request.
type httpError struct {
	status int
	msg    string
}

func (e *httpError) Error() string { return e.msg }

// refuse answers a refused request with its status.
func refuse(w http.ResponseWriter, err error) {
	var he *httpError
	if !errors.As(err, &he) {
		he = &httpError{http.StatusInternalServerError, "internal error"}
	}
	w.Header().Set("Connection", "close")
	http.Error(w, he.msg, he.status)
}

// errBadCredential is every refused credential's answer (which part was
// wrong is not told).
var errBadCredential = &httpError{http.StatusUnauthorized, "unknown host or wrong host secret"}

// authenticate checks a request's host credential: the host exists and
// the SHA-256 of the secret given equals its stored one (compared in
// constant time).
func (s *Service) authenticate(ctx context.Context, hdr http.Header) (*Host, error) {
	id, secret, err := hostproto.Credential(hdr)
	if err != nil {
		return nil, &httpError{http.StatusUnauthorized, err.Error()}
	}
	var h *Host
	err = s.cfg.Store.View(ctx, func(tx store.Tx) error {
		var err error
		h, err = getHost(ctx, tx, id)
		return err
	})
	if errors.Is(err, store.ErrNotFound) {
		return nil, errBadCredential
	}
	if err != nil {
		return nil, err
	}
	if subtle.ConstantTimeCompare([]byte(hostproto.SecretHash(secret)), []byte(h.SecretHash)) != 1 {
		return nil, errBadCredential
	}
	return h, nil
}

// register makes hc the host's connection on this replica, closing the
// one it replaces.
func (s *Service) register(hc *hostConn) {
	s.mu.Lock()
	old := s.conns[hc.hostID]
	s.conns[hc.hostID] = hc
	s.mu.Unlock()
	if old != nil {
		old.peer.Abort() // the host made a new one: the old one's other side is gone
	}
}

// unregister forgets hc, and records that the host is not connected
// unless a newer connection took its place.
func (s *Service) unregister(hc *hostConn) {
	s.mu.Lock()
	if s.conns[hc.hostID] == hc {
		delete(s.conns, hc.hostID)
	}
	s.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	err := s.cfg.Store.Update(ctx, func(tx store.Tx) error {
		h, err := getHost(ctx, tx, hc.hostID)
		if err != nil || h.ConnID != hc.connID {
			return ignoreNotFound(err)
		}
		h.ConnectedTo, h.ConnID = "", ""
		return putHost(ctx, tx, h)
	})
	if err != nil {
		s.log.Warn("hosts: recording a disconnection", "host", hc.hostID, "err", err)
	}
}

// closeConns closes every host connection of this replica (Hoist stops:
// the hosts keep their instances and reconnect).
func (s *Service) closeConns() {
	s.mu.Lock()
	all := make([]*hostConn, 0, len(s.conns))
	for _, hc := range s.conns {
		all = append(all, hc)
	}
	s.mu.Unlock()
	var wg sync.WaitGroup
	for _, hc := range all {
		wg.Go(func() { hc.peer.Close(websocket.StatusGoingAway, "Hoist is stopping") })
	}
	wg.Wait() // each waits at most 5s for its host's close frame, all at once
}

// heard resets hc's silence timer to d.
func (hc *hostConn) heard(d time.Duration) {
	hc.mu.Lock()
	hc.hello = true
	hc.mu.Unlock()
	hc.silent.Reset(d)
}

func (hc *hostConn) helloDone() bool {
	hc.mu.Lock()
	defer hc.mu.Unlock()
	return hc.hello
}

// handler serves one connection's frames.
func (s *Service) handler(hc *hostConn) wsrpc.Handler {
	return func(ctx context.Context, r *wsrpc.Request) (any, error) {
		if r.Action == hostproto.ActionHello {
			return s.hello(ctx, hc, r)
		}
		if !hc.helloDone() {
			return nil, wsrpc.Errorf(412, "send Hello first")
		}
		if r.Action == hostproto.ActionHeartbeat {
			return s.heartbeat(ctx, hc, r)
		}
		return s.report(ctx, hc.hostID, r)
	}
}

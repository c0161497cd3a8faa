// Package agentconn is the service side of the GameLift Agent protocol: the
// WebSocket endpoint (/agent, the GameLiftAgentEndpoint RegisterCompute
// names) that the agent of an Anywhere compute, Amazon's Java GameLift
// Agent or hoist agent, holds open. Messages are internal/agentproto's, in
// internal/wsrpc's envelope.
//
// A connection is authenticated before the upgrade by its query (FleetId,
// ComputeName, Authorization: a compute auth token of that compute, from
// GetComputeAuthToken) and speaks only for that compute. What it learns is
// kept in the store (a ComputeAgent record per compute: the last heartbeat,
// the processes it listed), so any replica can act on it:
//
//	SendHeartbeat                   records the heartbeat; answers the compute's status and
//	                                the processes to end (unhealthy) or that never registered;
//	                                processes it listed before and no longer lists are ended
//	DescribeRuntimeConfiguration    the fleet's runtime configuration
//	NotifyServerProcessTermination  a fleet event and the process's end (its own processes only)
//	GetFleetRoleCredentials         refused: Hoist issues no AWS credentials
//
// Messages to agents go through SendToCompute (hosting.AgentMessenger):
// ForceExitServerProcess (sessions), StartComputeTermination (a compute
// deregistered, or its fleet deleted, while its agent is connected: the
// check loop of each replica), RefreshConnection (before the token a socket
// was opened with expires), NotifyProcessRegistered and
// NotifyGameSessionActivated (NotifyAgents, around the SDK's ProcessAPI).
// A leased loop declares agents that stop heartbeating lost: their compute
// is IMPAIRED until they heartbeat again. docs/agent-endpoint.md says every
// decision.
package agentconn

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/coder/websocket"

	"github.com/hoistgg/hoist/internal/agentproto"
	"github.com/hoistgg/hoist/internal/api"
	"github.com/hoistgg/hoist/internal/hosting"
	"github.com/hoistgg/hoist/internal/ids"
	"github.com/hoistgg/hoist/internal/store"
)

// Fleets is what the endpoint needs of internal/fleets.
type Fleets interface {
	hosting.TokenVerifier
	hosting.TokenIssuer
	// AgentProcessEnded writes the fleet event of a process's end and
	// tells sessions it is gone.
	AgentProcessEnded(ctx context.Context, fleetID, computeName, processID, code, reason string) error
	// SetComputeImpaired marks a compute IMPAIRED, or ACTIVE again, in tx.
	SetComputeImpaired(ctx context.Context, tx store.Tx, fleetID, computeName string, impaired bool) error
	DeregisterCompute(ctx context.Context, in *api.DeregisterComputeInput) (*api.DeregisterComputeOutput, error)
}

// Sessions is what the endpoint needs of internal/sessions.
type Sessions interface {
	// EndProcess asks a process to end (TerminateProcess, then its grace).
	EndProcess(ctx context.Context, processID, reason string) error
}

// Slots counts long-lived connections against the bound internal/server
// shares between them (sdkconn.Slots has the same methods).
type Slots interface {
	TryTake() bool
	Give()
}

// Config configures a Server. Store, Fleets and Sessions are required.
type Config struct {
	Store    store.Store
	Fleets   Fleets
	Sessions Sessions
	// Slots, when set, bounds the long-lived connections of the whole
	// Hoist: a socket takes one before its upgrade (503 when none is
	// free).
	Slots Slots
	// MaxComputeSockets bounds the sockets one compute may hold open at
	// once (default 4: the agent overlaps two while it refreshes its
	// connection); more are refused 429.
	MaxComputeSockets int
	// MaxMessageBytes is the largest frame accepted from an agent (default
	// 256 KiB; a heartbeat of 1,000 process IDs fits); a larger one closes
	// the socket with 1009.
	MaxMessageBytes int64
	// MessageBurst and MessageRate bound the requests one socket is served
	// (defaults 30 and 10; negative rate: no bound); more are answered 429.
	MessageBurst int
	MessageRate  float64
	// CallTimeout bounds each request's handling (default 15 s).
	CallTimeout time.Duration
	// RefreshBefore is how long before the token a socket was opened with
	// expires the agent is sent RefreshConnection (at most half the
	// token's remaining life). Default 15 minutes.
	RefreshBefore time.Duration
	// Timings are the endpoint's timers.
	Timings Timings
	// ReplicaID names this replica (the lost-agent loop's lease holder).
	ReplicaID string
	// Shared says that other replicas share the store: each agent
	// connection is recorded with the replica holding it
	// (AgentConnection), so that their messages for it reach it.
	Shared bool
	Logger *slog.Logger
	// Now is the clock; NewID makes connection and message IDs.
	Now   func() time.Time
	NewID func() string
}

// Timings are the endpoint's timers (config.Timings "agents.*").
type Timings struct {
	// HeartbeatTimeout is how long an agent may send no heartbeat before it
	// is lost and its compute IMPAIRED. Default 5m (five of the agent's
	// one-minute heartbeats).
	HeartbeatTimeout time.Duration
	// CheckInterval is how often lost agents, and deregistered computes
	// whose agent is connected here, are looked for. Default 5s.
	CheckInterval time.Duration
}

// withDefaults fills the timers left zero.
func (t Timings) withDefaults() Timings {
	if t.HeartbeatTimeout <= 0 {
		t.HeartbeatTimeout = 5 * time.Minute
	}
	if t.CheckInterval <= 0 {
		t.CheckInterval = 5 * time.Second
	}
	return t
}

// Defaults.
const (
	DefaultMaxComputeSockets = 4
	DefaultMaxMessageBytes   = 256 << 10
	DefaultMessageBurst      = 30
	DefaultMessageRate       = 10
	DefaultCallTimeout       = 15 * time.Second
	DefaultRefreshBefore     = 15 * time.Minute
	// maxParamLength bounds FleetId and ComputeName; maxTokenLength the
	// Authorization token.
	maxParamLength = 1024
	maxTokenLength = 1024
)

// ErrNotConnected: the compute has no agent connected to this replica.
var ErrNotConnected = errors.New("agentconn: the compute's agent is not connected")

// Server is the agent endpoint: the http.Handler of /agent, and the
// hosting.ComputeAgents of sessions.
type Server struct {
	cfg Config
	t   Timings
	log *slog.Logger

	// started is when this replica started: no agent is declared lost
	// before HeartbeatTimeout has passed since (agents need the time to
	// reconnect after a restart).
	started time.Time

	mu       sync.Mutex
	computes map[string][]*agentConn // fleet/compute -> open sockets, newest last
	closed   bool
	wg       sync.WaitGroup
}

var _ hosting.ComputeAgents = (*Server)(nil)

// New returns a Server.
func New(cfg Config) (*Server, error) {
	if cfg.Store == nil || cfg.Fleets == nil || cfg.Sessions == nil {
		return nil, errors.New("agentconn: Config.Store, Fleets and Sessions are required")
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&cfg.CallTimeout, DefaultCallTimeout)
	def(&cfg.RefreshBefore, DefaultRefreshBefore)
	if cfg.MaxComputeSockets <= 0 {
		cfg.MaxComputeSockets = DefaultMaxComputeSockets
	}
	if cfg.MaxMessageBytes <= 0 {
		cfg.MaxMessageBytes = DefaultMaxMessageBytes
	}
	if cfg.MessageRate == 0 {
		cfg.MessageRate, cfg.MessageBurst = DefaultMessageRate, DefaultMessageBurst
	}
	if cfg.MessageRate < 0 {
		cfg.MessageRate, cfg.MessageBurst = 0, 0
	}
	if cfg.MessageBurst <= 0 {
		cfg.MessageBurst = max(int(3*cfg.MessageRate), 1)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.NewID == nil {
		cfg.NewID = ids.UUID
	}
	if cfg.ReplicaID == "" {
		cfg.ReplicaID = "local"
	}
	return &Server{cfg: cfg, t: cfg.Timings.withDefaults(), log: cfg.Logger, started: cfg.Now(),
		computes: map[string][]*agentConn{}}, nil
}

// httpError is a refused handshake.
type httpError struct {
	status int
	msg    string
}

// ServeHTTP authenticates an agent's connection and, when it is allowed,
// upgrades it and serves it until it closes. Refusals are plain HTTP
// answers before any upgrade: 403 for the credentials, 400 for a malformed
// URL, 426 for a request that is not a WebSocket handshake, 429 and 503
// for the bounds.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet || !upgradeRequested(r.Header) {
		w.Header().Set("Upgrade", "websocket")
		http.Error(w, "this is the GameLift Agent WebSocket endpoint: connect with a WebSocket client", http.StatusUpgradeRequired)
		return
	}
	q, _ := url.ParseQuery(r.URL.RawQuery)
	id, expires, herr := s.authenticate(r.Context(), q)
	if herr == nil {
		herr = s.open(id)
	}
	if herr != nil {
		s.refuse(w, q, herr)
		return
	}
	defer s.wg.Done()
	ws, err := websocket.Accept(w, r, &websocket.AcceptOptions{CompressionMode: websocket.CompressionDisabled})
	if err != nil {
		s.log.Info("agent: WebSocket upgrade failed", "fleet", id.fleetID, "compute", id.computeName, "err", err)
		s.forget(id, nil)
		return
	}
	c := s.newConn(id, ws, endpointOf(r))
	s.serve(c, expires)
}

// upgradeRequested reports whether the Upgrade header asks for websocket.
func upgradeRequested(h http.Header) bool {
	for _, v := range h.Values("Upgrade") {
		for _, t := range strings.Split(v, ",") {
			if strings.EqualFold(strings.TrimSpace(t), "websocket") {
				return true
			}
		}
	}
	return false
}

// endpointOf is the URL the agent connected to, without its query: the
// RefreshConnectionEndpoint it is given.
func endpointOf(r *http.Request) string {
	scheme := "ws"
	if r.TLS != nil {
		scheme = "wss"
	}
	return scheme + "://" + r.Host + r.URL.Path
}

// refuse answers a refused handshake (and logs it, without the token).
func (s *Server) refuse(w http.ResponseWriter, q url.Values, e *httpError) {
	w.Header().Set("Connection", "close")
	s.log.Info("agent: connection refused", "status", e.status, "reason", e.msg,
		"fleet", clip(q.Get(agentproto.ParamFleetID)), "compute", clip(q.Get(agentproto.ParamComputeName)))
	http.Error(w, e.msg, e.status)
}

// identity is an authenticated connection's compute.
type identity struct{ fleetID, computeName string }

// key is the compute's record ID, fleet ID/compute name.
func (id identity) key() string { return id.fleetID + "/" + id.computeName }

// authenticate checks the connection URL: its token must have been issued
// for the FleetId and ComputeName it names, of an Anywhere fleet. It
// returns when the token expires.
func (s *Server) authenticate(ctx context.Context, q url.Values) (identity, time.Time, *httpError) {
	for _, k := range []string{agentproto.ParamFleetID, agentproto.ParamComputeName, agentproto.ParamAuthorization} {
		v := q[k]
		switch {
		case len(v) != 1 || v[0] == "":
			return identity{}, time.Time{}, &httpError{http.StatusBadRequest, k + " is required, once"}
		case len(v[0]) > maxParamLength || !printable(v[0]):
			return identity{}, time.Time{}, &httpError{http.StatusBadRequest, k + " is too long or not printable"}
		}
	}
	token := q.Get(agentproto.ParamAuthorization)
	fleetID, computeName, err := s.cfg.Fleets.VerifyComputeToken(ctx, token)
	if err != nil {
		s.log.Debug("agent: auth token refused", "err", err) // the token itself is never logged
		return identity{}, time.Time{}, &httpError{http.StatusForbidden, "the auth token is unknown or expired"}
	}
	if lastPart(q.Get(agentproto.ParamFleetID)) != fleetID || lastPart(q.Get(agentproto.ParamComputeName)) != computeName {
		return identity{}, time.Time{}, &httpError{http.StatusForbidden, "the auth token was not issued for this FleetId and ComputeName"}
	}
	anywhere, err := s.anywhereFleet(ctx, fleetID)
	if err != nil {
		s.log.Error("agent: reading a fleet", "fleet", fleetID, "err", err)
		return identity{}, time.Time{}, &httpError{http.StatusInternalServerError, "internal error"}
	}
	if !anywhere {
		return identity{}, time.Time{}, &httpError{http.StatusForbidden, "the GameLift Agent endpoint serves the computes of ANYWHERE fleets only"}
	}
	expires, err := s.cfg.Fleets.ComputeTokenExpiry(ctx, token)
	if err != nil {
		expires = time.Time{}
	}
	return identity{fleetID, computeName}, expires, nil
}

// lastPart returns an ID that may be given as an ARN (.../fleet-x or
// .../compute/fleet-x/name) without its ARN prefix.
func lastPart(v string) string {
	if strings.HasPrefix(v, "arn:") {
		return v[strings.LastIndex(v, "/")+1:]
	}
	return v
}

// anywhereFleet reports whether the fleet is an ANYWHERE fleet.
func (s *Server) anywhereFleet(ctx context.Context, fleetID string) (bool, error) {
	var f hosting.Fleet
	err := s.cfg.Store.View(ctx, func(tx store.Tx) error {
		_, err := store.GetJSON(ctx, tx, hosting.KindFleet, fleetID, &f)
		return err
	})
	if errors.Is(err, store.ErrNotFound) {
		return false, nil
	}
	return f.Attributes.ComputeType == api.ComputeTypeAnywhere, err
}

// open takes a socket's place before its upgrade: 503 while shutting down
// or with no long-lived connection slot free, 429 when the compute has
// MaxComputeSockets open.
func (s *Server) open(id identity) *httpError {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.closed:
		return &httpError{http.StatusServiceUnavailable, "Hoist is shutting down"}
	case len(s.computes[id.key()]) >= s.cfg.MaxComputeSockets:
		return &httpError{http.StatusTooManyRequests, fmt.Sprintf(
			"the compute has %d agent sockets open, the most Hoist allows one compute", s.cfg.MaxComputeSockets)}
	case s.cfg.Slots != nil && !s.cfg.Slots.TryTake():
		return &httpError{http.StatusServiceUnavailable,
			"Hoist has as many long-lived connections open as it allows (--max-long-connections); retry later"}
	}
	s.computes[id.key()] = append(s.computes[id.key()], nil) // a place; the socket fills it
	s.wg.Add(1)
	return nil
}

// forget gives back a socket's place (c nil: one never upgraded).
func (s *Server) forget(id identity, c *agentConn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	list := s.computes[id.key()]
	for i, x := range list {
		if x == c {
			list = append(list[:i:i], list[i+1:]...)
			break
		}
	}
	if len(list) == 0 {
		delete(s.computes, id.key())
	} else {
		s.computes[id.key()] = list
	}
	if s.cfg.Slots != nil {
		s.cfg.Slots.Give()
	}
}

// register fills a place with its upgraded socket (newest last).
func (s *Server) register(c *agentConn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	list := s.computes[c.id.key()]
	for i, x := range list {
		if x == nil {
			list = append(list[:i:i], list[i+1:]...)
			break
		}
	}
	s.computes[c.id.key()] = append(list, c)
}

// current returns the newest socket of a compute.
func (s *Server) current(fleetID, computeName string) *agentConn {
	s.mu.Lock()
	defer s.mu.Unlock()
	list := s.computes[fleetID+"/"+computeName]
	for i := len(list) - 1; i >= 0; i-- {
		if list[i] != nil {
			return list[i]
		}
	}
	return nil
}

// connected returns every upgraded socket.
func (s *Server) connected() []*agentConn {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*agentConn
	for _, list := range s.computes {
		for _, c := range list {
			if c != nil {
				out = append(out, c)
			}
		}
	}
	return out
}

// SendToCompute sends a message to the compute's agent over its newest
// socket on this replica and waits until it is written
// (hosting.AgentMessenger). msg names its Action.
func (s *Server) SendToCompute(ctx context.Context, fleetID, computeName string, msg hosting.Message) error {
	action, _ := msg["Action"].(string)
	if action == "" {
		return errors.New("agentconn: a message to an agent needs an Action")
	}
	c := s.current(fleetID, computeName)
	if c == nil {
		return fmt.Errorf("%w: %s/%s", ErrNotConnected, fleetID, computeName)
	}
	fields := make(map[string]any, len(msg))
	for k, v := range msg {
		if k != "Action" {
			fields[k] = v
		}
	}
	if err := c.peer.Send(ctx, action, fields); err != nil {
		return err
	}
	c.log.Debug("agent: message sent", "action", action)
	return nil
}

// Shutdown closes every socket with 1012 (service restart), so that agents
// reconnect, and waits for them to end or ctx. New connections are refused
// from the start.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	for _, c := range s.connected() {
		c.peer.Close(websocket.StatusServiceRestart, "Hoist is restarting")
	}
	done := make(chan struct{})
	go func() { s.wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// printable reports whether v holds only printable characters.
func printable(v string) bool {
	for _, r := range v {
		if !unicode.IsPrint(r) {
			return false
		}
	}
	return true
}

// clip shortens an untrusted value for a log line.
func clip(v string) string {
	if len(v) > 128 {
		return v[:128] + "..."
	}
	return v
}

// CloseAll closes every socket with 1012 (service restart), so that the
// agents reconnect, and goes on accepting connections (see
// sdkconn.Server.CloseAll).
func (s *Server) CloseAll(reason string) {
	for _, c := range s.connected() {
		c.peer.Close(websocket.StatusServiceRestart, reason)
	}
}

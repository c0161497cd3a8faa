package sdkconn

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/coder/websocket"

	"github.com/hoistgg/hoist/internal/hosting"
	"github.com/hoistgg/hoist/internal/ids"
)

// SignedURLVerifier checks a SigV4-signed connection URL (query
// Authorization=SigV4 plus X-Amz-Algorithm, X-Amz-Credential, X-Amz-Date,
// X-Amz-Security-Token and X-Amz-Signature; the string to sign covers the
// ComputeId, FleetId and pID parameters) and returns the fleet and compute
// the signing credentials may connect processes for.
//
// internal/sigv4's Authenticator implements it (internal/server wires it).
type SignedURLVerifier interface {
	VerifySignedURL(ctx context.Context, query url.Values, now time.Time) (fleetID, computeName string, err error)
}

// Config configures a Server. API and Tokens are required.
type Config struct {
	API    hosting.ProcessAPI
	Tokens hosting.TokenVerifier
	// SignedURLs verifies SigV4-signed connection URLs; nil refuses them.
	SignedURLs SignedURLVerifier
	// Backfiller, when set, serves StartMatchBackfill and StopMatchBackfill
	// (FlexMatch); nil answers them 400 "not supported".
	Backfiller hosting.Backfiller
	// Processes, when set, is asked whether the process ID of a connection
	// may use its (verified) fleet and compute; a refusal is 403.
	Processes hosting.ProcessVerifier
	// Issuer, when set, keeps connections' credentials fresh: before the
	// token or signed URL a process connected with expires, the process is
	// sent RefreshConnection with a new token from Issuer (so its
	// reconnects keep working). nil sends none.
	Issuer hosting.TokenIssuer
	// RefreshBefore is how long before a credential expires it is
	// refreshed (at most half its remaining life). Default 15 minutes.
	RefreshBefore time.Duration
	Logger        *slog.Logger
	// Now is the clock (default time.Now).
	Now func() time.Time
	// ReplicaID names this Hoist replica (logged with each connection).
	ReplicaID string
	// NewID returns a fresh unique ID for connections and for the RequestId
	// of messages sent to processes. Default: a random UUID.
	NewID func() string
	// MaxMessageBytes is the largest frame accepted from a process
	// (default 1 MiB); a larger one closes the socket with 1009.
	MaxMessageBytes int64
	// CallTimeout bounds each ProcessAPI call (default 15 s; the SDKs wait
	// 20 s for a reply, 6 s for ActivateServerProcess).
	CallTimeout time.Duration
	// WriteTimeout bounds each frame written to a process (default 10 s); a
	// socket that cannot take a frame in time is closed.
	WriteTimeout time.Duration
	// SendQueue is how many frames may wait for the writer of one socket
	// (default 64).
	SendQueue int
	// Slots, when set, bounds the long-lived connections of the whole
	// Hoist: a socket takes one before its upgrade (503 when none is free)
	// and gives it back when it closes.
	Slots Slots
	// MaxComputeSockets bounds the sockets open at once with the
	// credentials of one compute (default 100: two sockets, during a
	// RefreshConnection, for each of the 50 server processes an instance
	// runs at most); more are refused 429; negative: no bound. On Anywhere
	// computes any process ID is accepted, so this is what bounds one
	// token.
	MaxComputeSockets int
	// ReplaceGrace is how long a process's older socket stays open once a
	// newer one is up (default 10 s; the SDKs close it themselves within
	// 5 s of a RefreshConnection). Then, or when a third socket of the
	// process comes up meanwhile, Hoist drops it without a close frame.
	ReplaceGrace time.Duration
	// ReadyGrace is how long, at most, messages to a process wait after the
	// reply to its ActivateServerProcess for its next request (default
	// 2 s). The Go Server SDK marks itself ready only once its ProcessReady
	// call has returned, ignores a CreateGameSession it handles before then,
	// and sends its first heartbeat right after: a message sent at once
	// could be lost to that race. A process that sends nothing gets them
	// after ReadyGrace.
	ReadyGrace time.Duration
	// MessageBurst and MessageRate bound the requests one socket is
	// served: MessageBurst at once, then MessageRate a second (defaults 30
	// and 10, above GameLift's documented per-process limits; a negative
	// MessageRate: no bound). Beyond, a request is answered 429 without
	// being served, and the socket is not read again until it may be
	// served.
	MessageBurst int
	MessageRate  float64
}

// Slots counts long-lived connections against a bound shared with other
// routes (internal/server gives the event streams and the SDK sockets one).
type Slots interface {
	// TryTake takes a slot; false when none is free.
	TryTake() bool
	// Give gives a slot back.
	Give()
}

// Defaults.
const (
	DefaultMaxMessageBytes = 1 << 20
	DefaultCallTimeout     = 15 * time.Second
	DefaultWriteTimeout    = 10 * time.Second
	DefaultSendQueue       = 64
	DefaultRefreshBefore   = 15 * time.Minute
	DefaultComputeSockets  = 100
	DefaultReplaceGrace    = 10 * time.Second
	DefaultReadyGrace      = 2 * time.Second
	DefaultMessageBurst    = 30
	DefaultMessageRate     = 10
	// signedURLLifetime is how long a SigV4-signed connection URL is
	// accepted after its X-Amz-Date (the signature's clock-skew window).
	signedURLLifetime = 15 * time.Minute
)

// ErrNotConnected is returned by SendToProcess when the process has no open
// socket on this replica.
var ErrNotConnected = errors.New("sdkconn: process is not connected")

// Server is the SDK endpoint: an http.Handler for GET /sdk and /sdk/ and
// the hosting.Messenger for processes connected to this replica.
type Server struct {
	cfg Config
	log *slog.Logger

	mu    sync.Mutex
	procs map[string][]*procConn // process ID -> open sockets, newest last
	// backfills bounds each connected process's backfill requests
	// (throttle.go); an entry goes with the process's last socket.
	backfills map[string]*bucket
	// computes counts the open sockets of each compute (fleet and compute
	// name), for MaxComputeSockets.
	computes map[string]int
	closed   bool
	wg       sync.WaitGroup // live connections
}

var _ hosting.Messenger = (*Server)(nil)

// New returns a Server.
func New(cfg Config) *Server {
	if cfg.API == nil || cfg.Tokens == nil {
		panic("sdkconn: Config.API and Config.Tokens are required")
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
	if cfg.MaxMessageBytes <= 0 {
		cfg.MaxMessageBytes = DefaultMaxMessageBytes
	}
	if cfg.CallTimeout <= 0 {
		cfg.CallTimeout = DefaultCallTimeout
	}
	if cfg.WriteTimeout <= 0 {
		cfg.WriteTimeout = DefaultWriteTimeout
	}
	if cfg.SendQueue <= 0 {
		cfg.SendQueue = DefaultSendQueue
	}
	if cfg.RefreshBefore <= 0 {
		cfg.RefreshBefore = DefaultRefreshBefore
	}
	setLimitDefaults(&cfg)
	return &Server{cfg: cfg, log: cfg.Logger, procs: make(map[string][]*procConn), backfills: map[string]*bucket{},
		computes: map[string]int{}}
}

// ServeHTTP authenticates a connection and, if it is allowed, upgrades it
// to a WebSocket and serves it until it closes. Refusals are plain HTTP
// answers, never an upgraded socket that is closed at once: 403 for
// authentication (what the C++ SDK reports as forbidden), 400 for a
// malformed URL, 426 for a request that is not a WebSocket handshake.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet || !headerHasToken(r.Header, "Upgrade", "websocket") {
		w.Header().Set("Upgrade", "websocket")
		http.Error(w, "this is the GameLift Server SDK WebSocket endpoint: connect with a WebSocket client",
			http.StatusUpgradeRequired)
		return
	}
	q, _ := url.ParseQuery(r.URL.RawQuery) // keeps every well-formed pair
	id, expires, herr := s.authenticate(r.Context(), q)
	if herr != nil {
		s.refuse(w, q, herr)
		return
	}
	pc, herr := s.open(id)
	if herr != nil {
		s.refuse(w, q, herr)
		return
	}
	defer s.wg.Done()
	if herr := s.connected(r.Context(), id); herr != nil {
		s.forget(pc)
		s.refuse(w, q, herr)
		return
	}
	ws, err := websocket.Accept(w, r, &websocket.AcceptOptions{CompressionMode: websocket.CompressionDisabled})
	if err != nil {
		s.log.Info("sdk: WebSocket upgrade failed", "process", id.ProcessID, "err", err)
		s.forget(pc)
		s.disconnected(id, false)
		return
	}
	ws.SetReadLimit(s.cfg.MaxMessageBytes)
	s.replaceOlder(pc)
	if s.cfg.Issuer != nil && !expires.IsZero() {
		go pc.refreshBefore(expires, endpointOf(r))
	}
	pc.serve(ws)
}

// endpointOf returns the URL a process connected to, without its query:
// the RefreshConnectionEndpoint it reconnects to.
func endpointOf(r *http.Request) string {
	scheme := "ws"
	if r.TLS != nil {
		scheme = "wss"
	}
	return scheme + "://" + r.Host + r.URL.Path
}

// httpError is a refused handshake.
type httpError struct {
	status int
	msg    string
}

func (s *Server) refuse(w http.ResponseWriter, q url.Values, e *httpError) {
	w.Header().Set("Connection", "close") // a refused socket gives its file back at once
	s.log.Info("sdk: connection refused", "status", e.status, "reason", e.msg,
		"process", clip(q.Get("pID")), "fleet", clip(q.Get("FleetId")), "compute", clip(q.Get("ComputeId")))
	http.Error(w, e.msg, e.status)
}

// connected tells the ProcessAPI about a new socket; its refusal becomes
// the handshake's HTTP answer.
func (s *Server) connected(ctx context.Context, id hosting.Conn) *httpError {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.cfg.CallTimeout)
	defer cancel()
	err := s.cfg.API.Connected(ctx, id)
	if err == nil {
		return nil
	}
	var se *hosting.SDKError
	if errors.As(err, &se) && se.Status >= 400 && se.Status < 500 {
		return &httpError{se.Status, se.Message}
	}
	s.log.Error("sdk: recording a connection failed", "process", id.ProcessID, "err", err)
	return &httpError{http.StatusInternalServerError, "internal error"}
}

// disconnected tells the ProcessAPI that a socket closed.
func (s *Server) disconnected(id hosting.Conn, normal bool) {
	ctx, cancel := context.WithTimeout(context.Background(), s.cfg.CallTimeout)
	defer cancel()
	s.cfg.API.Disconnected(ctx, id, normal)
}

// open registers a new socket of a process, before the handshake completes,
// so that a message sent right after Connected is queued for it. It refuses
// the socket when its compute has MaxComputeSockets open (429) or no slot
// for a long-lived connection is free (503).
func (s *Server) open(id hosting.Conn) (*procConn, *httpError) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, &httpError{http.StatusServiceUnavailable, "Hoist is shutting down"}
	}
	compute := computeKey(id)
	if s.cfg.MaxComputeSockets > 0 && s.computes[compute] >= s.cfg.MaxComputeSockets {
		return nil, &httpError{http.StatusTooManyRequests, fmt.Sprintf(
			"the compute has %d sockets open, the most Hoist allows one compute", s.cfg.MaxComputeSockets)}
	}
	if s.cfg.Slots != nil && !s.cfg.Slots.TryTake() {
		return nil, &httpError{http.StatusServiceUnavailable,
			"Hoist has as many long-lived connections open as it allows (--max-long-connections); retry later"}
	}
	s.computes[compute]++
	pc := newProcConn(s, id)
	s.procs[id.ProcessID] = append(s.procs[id.ProcessID], pc)
	s.wg.Add(1)
	return pc, nil
}

// computeKey names the compute of a connection.
func computeKey(id hosting.Conn) string { return id.FleetID + "/" + id.ComputeName }

// forget unregisters a socket (once; later calls do nothing).
func (s *Server) forget(pc *procConn) {
	pc.cancel()
	s.mu.Lock()
	defer s.mu.Unlock()
	if pc.forgotten {
		return
	}
	pc.forgotten = true
	if compute := computeKey(pc.id); s.computes[compute] <= 1 {
		delete(s.computes, compute)
	} else {
		s.computes[compute]--
	}
	if s.cfg.Slots != nil {
		s.cfg.Slots.Give()
	}
	list := s.procs[pc.id.ProcessID]
	for i, c := range list {
		if c == pc {
			list = append(list[:i:i], list[i+1:]...)
			break
		}
	}
	if len(list) == 0 {
		delete(s.procs, pc.id.ProcessID)
		delete(s.backfills, pc.id.ProcessID)
	} else {
		s.procs[pc.id.ProcessID] = list
	}
}

// replaceOlder makes pc, just upgraded, its process's only socket, as a
// reconnect does: the socket before it is dropped after ReplaceGrace (the
// SDK's RefreshConnection overlap), any older one at once. A dropped
// socket gets no close frame: the SDKs take 1000 and 1001 as "do not
// reconnect", and ignore the end of a socket they have replaced.
func (s *Server) replaceOlder(pc *procConn) {
	s.mu.Lock()
	var older []*procConn
	for _, c := range s.procs[pc.id.ProcessID] {
		if c == pc {
			break
		}
		older = append(older, c)
	}
	s.mu.Unlock()
	for i, c := range older {
		if i < len(older)-1 {
			c.log.Info("sdk: socket replaced by a newer one of the process")
			c.cancel()
			continue
		}
		go c.retireAfter(s.cfg.ReplaceGrace)
	}
}

// current returns the newest socket of a process.
func (s *Server) current(processID string) *procConn {
	s.mu.Lock()
	defer s.mu.Unlock()
	list := s.procs[processID]
	if len(list) == 0 {
		return nil
	}
	return list[len(list)-1]
}

// Connections returns how many sockets are open (or opening).
func (s *Server) Connections() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, l := range s.procs {
		n += len(l)
	}
	return n
}

// SendToProcess sends msg to the process over its newest socket and waits
// until the frame is written (or ctx ends). msg must name its Action;
// StatusCode 200 is added, and a RequestId when it has none.
func (s *Server) SendToProcess(ctx context.Context, processID string, msg hosting.Message) error {
	frame, err := s.encodeMessage(msg)
	if err != nil {
		return err
	}
	pc := s.current(processID)
	if pc == nil {
		return fmt.Errorf("%w: %s", ErrNotConnected, processID)
	}
	if err := pc.sendAndWait(ctx, frame); err != nil {
		return err
	}
	s.log.Debug("sdk: message sent", "process", processID, "action", msg["Action"])
	return nil
}

func (s *Server) encodeMessage(msg hosting.Message) ([]byte, error) {
	if a, _ := msg["Action"].(string); a == "" {
		return nil, errors.New("sdkconn: a message to a process needs an Action")
	}
	m := make(map[string]any, len(msg)+2)
	for k, v := range msg {
		m[k] = v
	}
	m["StatusCode"] = 200
	if id, _ := m["RequestId"].(string); id == "" {
		m["RequestId"] = s.cfg.NewID()
	}
	frame, err := json.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("sdkconn: encoding %v: %w", msg["Action"], err)
	}
	return frame, nil
}

// Shutdown closes every socket with 1012 (service restart), so that the
// SDKs reconnect (to this Hoist once it is back, or another replica), and
// waits until each has been reported Disconnected or ctx ends. New
// connections are refused from the start. Call it before the ProcessAPI's
// store closes.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	s.closed = true
	var all []*procConn
	for _, l := range s.procs {
		all = append(all, l...)
	}
	s.mu.Unlock()
	for _, pc := range all {
		pc.closeWith(websocket.StatusServiceRestart, "Hoist is restarting")
	}
	done := make(chan struct{})
	go func() { s.wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		for _, pc := range all {
			pc.cancel()
		}
		return ctx.Err()
	}
}

// headerHasToken reports whether a comma-separated header holds token
// (case-insensitive).
func headerHasToken(h http.Header, key, token string) bool {
	for _, v := range h.Values(key) {
		for _, t := range splitComma(v) {
			if equalFold(t, token) {
				return true
			}
		}
	}
	return false
}

// CloseAll closes every socket with 1012 (service restart), so that the
// SDKs reconnect, and goes on accepting connections: this replica lost
// its registration (it paused past it), and the records of its
// connections may have been cleared meanwhile; a reconnect records them
// again.
func (s *Server) CloseAll(reason string) {
	s.mu.Lock()
	var all []*procConn
	for _, l := range s.procs {
		all = append(all, l...)
	}
	s.mu.Unlock()
	for _, pc := range all {
		pc.closeWith(websocket.StatusServiceRestart, reason)
	}
}

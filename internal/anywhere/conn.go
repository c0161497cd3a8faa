package anywhere

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/coder/websocket"

	"github.com/hoistgg/hoist/internal/agentproto"
	"github.com/hoistgg/hoist/internal/ids"
	"github.com/hoistgg/hoist/internal/wsrpc"
)

// errNotConnected: the agent has no socket to the service right now.
var errNotConnected = errors.New("anywhere: not connected to the agent endpoint")

// serviceError is the service's answer with a StatusCode other than 200.
type serviceError = wsrpc.Error

// maxServiceFrame bounds a frame of the service.
const maxServiceFrame = 1 << 20

// connections keeps the agent's socket to the service: one current
// socket, redialed with backoff when it drops; after a RefreshConnection a
// new one is current and the old one is closed RefreshOverlap later.
type connections struct {
	a    *Agent
	http *http.Client

	mu       sync.Mutex
	current  *wsrpc.Peer
	endpoint string // where the current socket (or the next) connects
	dropped  chan struct{}
	open     map[*wsrpc.Peer]bool
	// connected gets a value each time a socket becomes current after a
	// (re)connect: the heartbeat loop then heartbeats at once.
	connected chan struct{}
}

// newConnections returns the agent's connections, none open yet.
func newConnections(a *Agent, httpClient *http.Client) *connections {
	return &connections{a: a, http: httpClient, dropped: make(chan struct{}, 1), open: map[*wsrpc.Peer]bool{},
		connected: make(chan struct{}, 1)}
}

// supervise keeps a current socket until ctx ends: it dials the endpoint
// with the current token, and again with backoff whenever the current
// socket drops.
func (c *connections) supervise(ctx context.Context, endpoint string) {
	c.mu.Lock()
	c.endpoint = endpoint
	c.mu.Unlock()
	for attempt := 0; ctx.Err() == nil; {
		c.mu.Lock()
		ep := c.endpoint
		c.mu.Unlock()
		token, err := c.a.tokens.get(ctx)
		var p *wsrpc.Peer
		if err == nil {
			p, err = c.dial(ctx, ep, token)
		}
		if err != nil {
			wait := backoff(attempt)
			attempt++
			c.a.log.Warn("agent: connecting to the agent endpoint failed; retrying", "endpoint", ep, "in", wait, "err", err)
			select {
			case <-ctx.Done():
			case <-time.After(wait):
			}
			continue
		}
		attempt = 0
		c.setCurrent(p, ep)
		select {
		case c.connected <- struct{}{}:
		default:
		}
		select {
		case <-ctx.Done():
		case <-c.dropped:
		}
	}
}

// dial opens a socket to endpoint with token, and serves it in the
// background.
func (c *connections) dial(ctx context.Context, endpoint, token string) (*wsrpc.Peer, error) {
	q := url.Values{}
	q.Set(agentproto.ParamFleetID, c.a.cfg.FleetID)
	q.Set(agentproto.ParamComputeName, c.a.cfg.ComputeName)
	q.Set(agentproto.ParamAuthorization, token)
	dctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	ws, resp, err := websocket.Dial(dctx, endpoint+"?"+q.Encode(), &websocket.DialOptions{HTTPClient: c.http})
	if err != nil {
		if resp != nil {
			return nil, fmt.Errorf("the agent endpoint answered HTTP %d", resp.StatusCode)
		}
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // its URL holds the token
		}
		return nil, fmt.Errorf("dialing %s: %w", endpoint, err)
	}
	p := wsrpc.New(ws, wsrpc.Config{Handler: c.a.handleMessage, MaxMessageBytes: maxServiceFrame, NewID: ids.UUID,
		Logger: c.a.log.With("component", "agent socket")})
	c.mu.Lock()
	c.open[p] = true
	c.mu.Unlock()
	go func() {
		err := p.Run(context.Background())
		c.ended(p, err)
	}()
	c.a.log.Info("agent: connected to the agent endpoint", "endpoint", endpoint)
	return p, nil
}

// setCurrent makes p the socket requests go over.
func (c *connections) setCurrent(p *wsrpc.Peer, endpoint string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.current, c.endpoint = p, endpoint
}

// ended forgets a closed socket; when it was the current one, supervise
// dials again.
func (c *connections) ended(p *wsrpc.Peer, err error) {
	c.mu.Lock()
	delete(c.open, p)
	current := c.current == p
	if current {
		c.current = nil
	}
	c.mu.Unlock()
	if !current {
		return
	}
	c.a.log.Warn("agent: the socket to the agent endpoint dropped; reconnecting (processes keep running)", "err", err)
	select {
	case c.dropped <- struct{}{}:
	default:
	}
}

// call sends a request over the current socket and waits for its reply.
func (c *connections) call(ctx context.Context, action string, in, out any) error {
	c.mu.Lock()
	p := c.current
	c.mu.Unlock()
	if p == nil {
		return errNotConnected
	}
	return p.Call(ctx, action, in, out)
}

// refresh follows a RefreshConnection: a new socket to the endpoint with
// the token becomes current; the old one is closed RefreshOverlap later.
func (c *connections) refresh(m agentproto.RefreshConnectionMessage) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	p, err := c.dial(ctx, m.RefreshConnectionEndpoint, m.AuthToken)
	if err != nil {
		c.a.log.Warn("agent: RefreshConnection: connecting failed; the current socket stays", "endpoint", m.RefreshConnectionEndpoint, "err", err)
		return
	}
	c.mu.Lock()
	old := c.current
	c.current, c.endpoint = p, m.RefreshConnectionEndpoint
	c.mu.Unlock()
	if old != nil {
		time.AfterFunc(c.a.cfg.RefreshOverlap, func() { old.Close(websocket.StatusNormalClosure, "replaced by a refreshed connection") })
	}
	c.a.log.Info("agent: connection refreshed", "endpoint", m.RefreshConnectionEndpoint, "tokenExpires", m.ExpirationTime.Time())
}

// closeAll closes every socket.
func (c *connections) closeAll() {
	c.mu.Lock()
	var all []*wsrpc.Peer
	for p := range c.open {
		all = append(all, p)
	}
	c.current = nil
	c.mu.Unlock()
	for _, p := range all {
		p.Close(websocket.StatusNormalClosure, "the GameLift agent terminated")
	}
}

// serviceMessage is a decoded message of the service: its Action and,
// for those with fields, one of the fields below.
type serviceMessage struct {
	action    string
	heartbeat *agentproto.SendHeartbeatResponse
	// processID and reason: ForceExitServerProcess and ForceExitProcess
	// (reason one of the Java agent's: an unknown one is
	// NORMAL_TERMINATION, as there).
	processID, reason string
	refresh           *agentproto.RefreshConnectionMessage
}

// decodeServiceMessage decodes a message of the service; a message the
// agent does not act on decodes to its action alone.
func decodeServiceMessage(r *wsrpc.Request) (serviceMessage, error) {
	m := serviceMessage{action: r.Action}
	switch r.Action {
	case agentproto.ActionSendHeartbeat:
		m.heartbeat = new(agentproto.SendHeartbeatResponse)
		return m, r.Decode(m.heartbeat)
	case agentproto.ActionForceExitServerProcess:
		var f agentproto.ForceExitServerProcessMessage
		if err := r.Decode(&f); err != nil {
			return m, err
		}
		m.processID, m.reason = f.ProcessID, f.TerminationReason
		if !agentproto.KnownReason(m.reason) {
			m.reason = agentproto.ReasonNormalTermination
		}
	case agentproto.ActionForceExitProcess:
		var f agentproto.ForceExitProcessMessage
		if err := r.Decode(&f); err != nil {
			return m, err
		}
		m.processID, m.reason = f.ProcessID, agentproto.ReasonNormalTermination
	case agentproto.ActionRefreshConnection:
		m.refresh = new(agentproto.RefreshConnectionMessage)
		if err := r.Decode(m.refresh); err != nil {
			return m, err
		}
		u, err := url.Parse(m.refresh.RefreshConnectionEndpoint)
		if err != nil || (u.Scheme != "ws" && u.Scheme != "wss") || u.Host == "" || m.refresh.AuthToken == "" {
			return m, errors.New("RefreshConnection needs a ws:// or wss:// RefreshConnectionEndpoint and an AuthToken")
		}
	}
	return m, nil
}

// handleMessage serves a frame of the service: its messages, and a
// heartbeat reply that came after its call gave up (the Java agent takes
// every heartbeat reply that way). The service sends no requests.
func (a *Agent) handleMessage(ctx context.Context, r *wsrpc.Request) (any, error) {
	if !r.Message {
		return nil, wsrpc.Errorf(400, "the agent serves no %.64q requests", r.Action)
	}
	m, err := decodeServiceMessage(r)
	if err != nil {
		return nil, err
	}
	switch m.action {
	case agentproto.ActionSendHeartbeat:
		go a.onHeartbeatReply(context.Background(), m.heartbeat)
	case agentproto.ActionForceExitServerProcess, agentproto.ActionForceExitProcess:
		a.kill(m.processID, m.reason)
	case agentproto.ActionStartComputeTermination:
		a.orderTermination(false, "the service sent StartComputeTermination")
	case agentproto.ActionRefreshConnection:
		go a.conns.refresh(*m.refresh)
	case agentproto.ActionNotifyProcessRegistered, agentproto.ActionNotifyGameSessionActivated:
		a.log.Debug("agent: "+m.action, "frameBytes", len(r.Frame))
	default:
		a.log.Info("agent: message not handled", "action", clip(m.action))
	}
	return nil, nil
}

// clip shortens a string of the service's for a log line.
func clip(s string) string {
	if len(s) > 64 {
		return s[:64] + "..."
	}
	return s
}

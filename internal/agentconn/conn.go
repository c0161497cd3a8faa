package agentconn

import (
	"context"
	"errors"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"

	"github.com/hoistgg/hoist/internal/agentproto"
	"github.com/hoistgg/hoist/internal/api"
	"github.com/hoistgg/hoist/internal/hosting"
	"github.com/hoistgg/hoist/internal/store"
	"github.com/hoistgg/hoist/internal/wsrpc"
)

// agentConn is one agent socket.
type agentConn struct {
	s        *Server
	id       identity
	connID   string
	endpoint string // the URL it connected to (RefreshConnectionEndpoint)
	peer     *wsrpc.Peer
	log      *slog.Logger
	// told is set once the agent was sent StartComputeTermination.
	told atomic.Bool
}

// newConn wraps an upgraded socket.
func (s *Server) newConn(id identity, ws *websocket.Conn, endpoint string) *agentConn {
	c := &agentConn{s: s, id: id, connID: s.cfg.NewID(), endpoint: endpoint}
	c.log = s.log.With("fleet", id.fleetID, "compute", id.computeName, "conn", c.connID)
	c.peer = wsrpc.New(ws, wsrpc.Config{Handler: c.handle, MaxMessageBytes: s.cfg.MaxMessageBytes,
		CallTimeout: s.cfg.CallTimeout, MessageBurst: s.cfg.MessageBurst, MessageRate: s.cfg.MessageRate,
		NewID: s.cfg.NewID, Logger: c.log, Now: s.cfg.Now})
	return c
}

// serve runs a socket until it closes, refreshing its credential before
// it expires.
func (s *Server) serve(c *agentConn, expires time.Time) {
	s.register(c)
	s.recordConnected(c)
	defer func() {
		s.forget(c.id, c)
		s.recordClosed(c)
	}()
	c.log.Info("agent: connected")
	if !expires.IsZero() {
		go c.refreshBefore(expires)
	}
	err := c.peer.Run(context.Background())
	c.log.Info("agent: disconnected", "err", err)
}

// handle serves one frame of the agent.
func (c *agentConn) handle(ctx context.Context, r *wsrpc.Request) (any, error) {
	if r.Message {
		c.log.Debug("agent: message ignored", "action", clip(r.Action))
		return nil, nil
	}
	switch r.Action {
	case agentproto.ActionSendHeartbeat:
		var in agentproto.SendHeartbeatRequest
		if err := decode(r, &in, in.Validate); err != nil {
			return nil, err
		}
		return c.s.heartbeat(ctx, c.id, &in)
	case agentproto.ActionDescribeRuntimeConfiguration:
		return c.s.runtimeConfiguration(ctx, c.id)
	case agentproto.ActionNotifyServerProcessTermination:
		var in agentproto.NotifyServerProcessTerminationRequest
		if err := decode(r, &in, in.Validate); err != nil {
			return nil, err
		}
		return struct{}{}, c.s.processTerminated(ctx, c.id, &in)
	case agentproto.ActionGetFleetRoleCredentials:
		return nil, wsrpc.Errorf(400, "Hoist issues no AWS credentials: GetFleetRoleCredentials is not available on fleet %s "+
			"(the Java GameLift Agent asks for them only to upload logs to S3; give it --log-credentials default-provider-chain)", c.id.fleetID)
	}
	return nil, wsrpc.Errorf(400, "unknown Action %.64q", r.Action)
}

// decode decodes a request and validates it; a violation is a 400 naming
// the field.
func decode(r *wsrpc.Request, v any, validate func() error) error {
	if err := r.Decode(v); err != nil {
		return err
	}
	if err := validate(); err != nil {
		return wsrpc.Errorf(400, "%v", err)
	}
	return nil
}

// runtimeConfiguration answers DescribeRuntimeConfiguration: the fleet's
// runtime configuration; 404 when the compute or its fleet is gone.
func (s *Server) runtimeConfiguration(ctx context.Context, id identity) (*agentproto.DescribeRuntimeConfigurationResponse, error) {
	var f hosting.Fleet
	err := s.cfg.Store.View(ctx, func(tx store.Tx) error {
		if _, err := tx.Get(ctx, hosting.KindCompute, id.key()); err != nil {
			return err
		}
		_, err := store.GetJSON(ctx, tx, hosting.KindFleet, id.fleetID, &f)
		return err
	})
	if errors.Is(err, store.ErrNotFound) || (err == nil && f.Attributes.Status == api.FleetStatusTerminated) {
		return nil, wsrpc.Errorf(404, "compute %s of fleet %s is not registered", id.computeName, id.fleetID)
	}
	if err != nil {
		return nil, err
	}
	return runtimeMessage(f.RuntimeConfiguration), nil
}

// runtimeMessage is a runtime configuration as the agent reads it.
func runtimeMessage(rc api.RuntimeConfiguration) *agentproto.DescribeRuntimeConfigurationResponse {
	out := &agentproto.DescribeRuntimeConfigurationResponse{ServerProcesses: []agentproto.ServerProcess{},
		GameSessionActivationTimeoutSeconds: rc.GameSessionActivationTimeoutSeconds,
		MaxConcurrentGameSessionActivations: rc.MaxConcurrentGameSessionActivations}
	for _, sp := range rc.ServerProcesses {
		out.ServerProcesses = append(out.ServerProcesses, agentproto.ServerProcess{LaunchPath: api.ToString(sp.LaunchPath),
			Parameters: api.ToString(sp.Parameters), ConcurrentExecutions: api.ToInt32(sp.ConcurrentExecutions)})
	}
	return out
}

// processTerminated serves NotifyServerProcessTermination: a process of
// this compute (or one Hoist never heard of: it could not start, or ended
// before it connected) ended; another compute's process is refused 400.
func (s *Server) processTerminated(ctx context.Context, id identity, in *agentproto.NotifyServerProcessTerminationRequest) error {
	var p hosting.Process
	err := s.cfg.Store.View(ctx, func(tx store.Tx) error {
		_, err := store.GetJSON(ctx, tx, hosting.KindProcess, in.ProcessID, &p)
		return err
	})
	switch {
	case errors.Is(err, store.ErrNotFound):
	case err != nil:
		return err
	case p.FleetID != id.fleetID || p.ComputeName != id.computeName:
		return wsrpc.Errorf(400, "ProcessId %.64q is not a server process of compute %s", in.ProcessID, id.computeName)
	}
	code := ""
	if in.EventCode != nil {
		code = *in.EventCode
	}
	reason := in.TerminationReason
	if code != "" {
		reason += ": reported by the compute's agent"
	}
	return s.cfg.Fleets.AgentProcessEnded(ctx, id.fleetID, id.computeName, in.ProcessID, code, reason)
}

// refreshAt is when a credential expiring at expires is refreshed: before
// ahead of it, but at most half its remaining life from now.
func refreshAt(now, expires time.Time, before time.Duration) time.Time {
	life := expires.Sub(now)
	if life <= 0 {
		return now
	}
	return expires.Add(-min(before, life/2))
}

// refreshBefore sends the agent RefreshConnection with a new token before
// the one it connected with expires, unless the socket ends first; the
// agent opens a new socket with it (which gets its own refresh).
func (c *agentConn) refreshBefore(expires time.Time) {
	s := c.s
	t := time.NewTimer(refreshAt(s.cfg.Now(), expires, s.cfg.RefreshBefore).Sub(s.cfg.Now()))
	defer t.Stop()
	select {
	case <-c.peer.Done():
		return
	case <-t.C:
	}
	ctx, cancel := context.WithTimeout(context.Background(), s.cfg.CallTimeout)
	defer cancel()
	token, exp, err := s.cfg.Fleets.IssueComputeToken(ctx, c.id.fleetID, c.id.computeName)
	if err != nil {
		c.log.Warn("agent: could not issue a token to refresh the connection", "err", err)
		return
	}
	msg := agentproto.RefreshConnectionMessage{RefreshConnectionEndpoint: c.endpoint, AuthToken: token,
		ExpirationTime: agentproto.Seconds(exp)}
	if err := c.peer.Send(ctx, agentproto.ActionRefreshConnection, msg); err != nil {
		c.log.Info("agent: RefreshConnection not sent", "err", err)
		return
	}
	c.log.Info("agent: RefreshConnection sent", "endpoint", c.endpoint, "expires", exp)
}

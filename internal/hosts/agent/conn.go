package agent

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/coder/websocket"

	"github.com/hoistgg/hoist/internal/hosts/hostproto"
	"github.com/hoistgg/hoist/internal/ids"
	"github.com/hoistgg/hoist/internal/wsrpc"
)

// conn is one connection to Hoist.
type conn struct {
	peer *wsrpc.Peer
}

// ErrRemoved: Hoist refuses the host's credential: the host was removed
// (hoist admin remove-host). The agent ends its instances and stops.
var ErrRemoved = errors.New("hoist refuses this host's credential: the host was removed (hoist admin remove-host); to serve again, enrol it anew (another --dir, or remove host.json)")

// heartbeatTimeout bounds the wait for Hoist's answer to a heartbeat (two
// intervals, at most this): a connection that does not answer in time is
// dropped and made again.
const heartbeatTimeout = 10 * time.Second

// connect makes one connection and serves it until it fails or ctx ends;
// hello reports whether Hoist answered Hello.
func (a *Agent) connect(ctx context.Context) (hello bool, err error) {
	if a.cfg.Local {
		if err := a.reloadLocal(); err != nil {
			return false, err
		}
	}
	cr := a.creds()
	hdr := http.Header{}
	hostproto.SetCredential(hdr, cr.HostID, cr.HostSecret)
	tlsCfg, err := poolTLS(a.caPEM)
	if err != nil {
		return false, err
	}
	dctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	ws, resp, err := websocket.Dial(dctx, "ws"+strings.TrimPrefix(a.url(hostproto.PathConnect), "http"),
		&websocket.DialOptions{HTTPHeader: hdr, HTTPClient: &http.Client{Transport: &http.Transport{TLSClientConfig: tlsCfg, Proxy: nil}},
			CompressionMode: websocket.CompressionDisabled})
	cancel()
	if err != nil {
		if resp != nil && resp.StatusCode == http.StatusUnauthorized {
			return false, fmt.Errorf("%w: %w", ErrRemoved, err)
		}
		return false, err
	}
	c := &conn{}
	c.peer = wsrpc.New(ws, wsrpc.Config{Handler: a.handle, MaxMessageBytes: hostproto.MaxMessageBytes,
		NewID: ids.UUID, Logger: a.log.With("component", "connection")})
	done := make(chan error, 1)
	go func() { done <- c.peer.Run(ctx) }()
	interval, err := a.hello(ctx, c)
	var we *wsrpc.Error
	if errors.As(err, &we) && we.Status == http.StatusUnauthorized {
		err = fmt.Errorf("%w: %w", ErrRemoved, err)
	}
	if err != nil {
		c.peer.Close(websocket.StatusNormalClosure, "no Hello")
		return false, errors.Join(err, <-done)
	}
	a.setConn(c)
	defer a.setConn(nil)
	a.log.Info("agent: connected to Hoist", "host", cr.HostID, "heartbeat", interval)
	return true, a.heartbeats(ctx, c, interval, done)
}

// setConn records the current connection (nil: none) and wakes the
// reporter.
func (a *Agent) setConn(c *conn) {
	a.mu.Lock()
	a.conn = c
	a.mu.Unlock()
	a.rep.wake()
}

// current returns the current connection (nil while disconnected).
func (a *Agent) current() *conn {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.conn
}

// hello says Hello with what runs here and converges to Hoist's answer.
func (a *Agent) hello(ctx context.Context, c *conn) (time.Duration, error) {
	asked := time.Now()
	in := hostproto.Hello{ProtocolVersion: hostproto.Version, AgentVersion: a.cfg.Version,
		InstancesDir: a.instancesDir(), Instances: a.running()}
	var out hostproto.HelloReply
	if err := c.peer.Call(ctx, hostproto.ActionHello, in, &out); err != nil {
		return 0, fmt.Errorf("saying Hello: %w", err)
	}
	a.converge(out.Desired, asked)
	return interval(out.HeartbeatIntervalMs), nil
}

// heartbeats heartbeats every interval (as Hoist last said) until the
// connection fails.
func (a *Agent) heartbeats(ctx context.Context, c *conn, every time.Duration, done <-chan error) error {
	t := time.NewTimer(every)
	defer t.Stop()
	for {
		select {
		case err := <-done:
			return err
		case <-ctx.Done():
			c.peer.Close(websocket.StatusGoingAway, "the agent is stopping")
			return <-done
		case <-t.C:
		}
		asked := time.Now()
		var out hostproto.HeartbeatReply
		hctx, cancel := context.WithTimeout(ctx, min(2*every, heartbeatTimeout))
		err := c.peer.Call(hctx, hostproto.ActionHeartbeat, hostproto.Heartbeat{Instances: a.running()}, &out)
		cancel()
		a.log.Debug("agent: heartbeat", "took", time.Since(asked).Round(time.Millisecond), "err", err)
		if err != nil {
			c.peer.Abort() // Hoist does not answer: no close handshake either
			return errors.Join(fmt.Errorf("heartbeat: %w", err), <-done)
		}
		a.converge(out.Desired, asked)
		every = interval(out.HeartbeatIntervalMs)
		t.Reset(every)
	}
}

// interval reads a heartbeat interval (at least a second).
func interval(ms int64) time.Duration {
	return max(time.Duration(ms)*time.Millisecond, time.Second)
}

// handle serves Hoist's messages.
func (a *Agent) handle(ctx context.Context, r *wsrpc.Request) (any, error) {
	switch r.Action {
	case hostproto.ActionStartInstance:
		var m hostproto.StartInstance
		if err := r.Decode(&m); err != nil {
			return nil, err
		}
		return nil, a.startInstance(m)
	case hostproto.ActionStopInstance:
		var m hostproto.StopInstance
		if err := r.Decode(&m); err != nil {
			return nil, err
		}
		a.stopInstance(m.InstanceId, m.Reason)
		return nil, nil
	case hostproto.ActionStopProcess, hostproto.ActionKillProcess:
		return nil, a.endProcess(r)
	case hostproto.ActionUpdateRuntimeConfiguration:
		var m hostproto.UpdateRuntimeConfiguration
		if err := r.Decode(&m); err != nil {
			return nil, err
		}
		a.updateRuntime(m)
		return nil, nil
	case hostproto.ActionRetire:
		var m hostproto.Retire
		if err := r.Decode(&m); err != nil {
			return nil, err
		}
		if !a.cfg.Local || a.retire == nil {
			return nil, wsrpc.Errorf(400, "only Hoist's local agent retires")
		}
		a.log.Info("agent: retiring: every instance ends", "reason", m.Reason)
		// The instances end while Hoist is still connected, so that their
		// processes are sent TerminateProcess (AskToEnd); then Run ends.
		go func() {
			_ = a.prov.Close()
			a.retire(errRetired)
		}()
		return nil, nil
	case hostproto.ActionCollectLogs:
		var m hostproto.CollectLogs
		if err := r.Decode(&m); err != nil {
			return nil, err
		}
		go a.uploadGameSessionLogs(m)
		return nil, nil
	}
	return nil, wsrpc.Errorf(400, "unknown Action %q", r.Action)
}

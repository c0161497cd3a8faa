//go:build linux

package agent

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/hoistgg/hoist/internal/agentproto"
	"github.com/hoistgg/hoist/internal/ids"
)

// javaAgent speaks to Hoist's agent endpoint exactly as Amazon's Java
// GameLift Agent (v1.0.3) does, without internal/wsrpc: it builds the
// connection URL as WebSocketConnectionManager does (the endpoint, then
// FleetId, ComputeName and Authorization), sends requests with the
// envelope of WebsocketRequest (Action, and a random UUID RequestId) and
// the fields of agentproto's types (held to the Java classes'
// names by internal/agentproto's tests), and, as its
// GameLiftAgentWebSocketListener, hands a frame to the caller waiting for
// its RequestId, else dispatches it by its Action (SendHeartbeat's reply
// comes that way: the Java agent does not wait for it).
type javaAgent struct {
	t  *testing.T
	ws *websocket.Conn

	mu      sync.Mutex
	pending map[string]chan []byte
	byAct   map[string]chan []byte
	done    chan struct{}
	err     error // why the socket ended
}

// frameHead is what the listener reads of every frame.
type frameHead struct {
	Action       string `json:"Action"`
	RequestID    string `json:"RequestId"`
	StatusCode   *int   `json:"StatusCode"`
	ErrorMessage string `json:"ErrorMessage"`
}

// agentURL builds the connection URL as the Java agent does.
func agentURL(endpoint, fleetID, compute, token string) string {
	q := url.Values{}
	q.Set(agentproto.ParamFleetID, fleetID)
	q.Set(agentproto.ParamComputeName, compute)
	q.Set(agentproto.ParamAuthorization, token)
	return endpoint + "?" + q.Encode()
}

// dialAgent connects; on a refused handshake it returns the HTTP response.
func dialAgent(t *testing.T, e *env, endpoint, fleetID, compute, token string) (*javaAgent, *http.Response, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ws, resp, err := websocket.Dial(ctx, agentURL(endpoint, fleetID, compute, token), &websocket.DialOptions{HTTPClient: e.httpClient(t)})
	if err != nil {
		return nil, resp, err
	}
	a := &javaAgent{t: t, ws: ws, pending: map[string]chan []byte{}, byAct: map[string]chan []byte{}, done: make(chan struct{})}
	go a.read()
	t.Cleanup(func() { _ = ws.CloseNow() })
	return a, resp, nil
}

// mustDial connects or fails the test.
func mustDial(t *testing.T, e *env, endpoint, fleetID, compute, token string) *javaAgent {
	t.Helper()
	a, resp, err := dialAgent(t, e, endpoint, fleetID, compute, token)
	if err != nil {
		status := 0
		if resp != nil {
			status = resp.StatusCode
		}
		t.Fatalf("connecting the agent of %s: HTTP %d: %v", compute, status, err)
	}
	return a
}

// read is the listener: it delivers each frame by RequestId, else by
// Action.
func (a *javaAgent) read() {
	defer close(a.done)
	for {
		_, b, err := a.ws.Read(context.Background())
		if err != nil {
			a.err = err
			return
		}
		var h frameHead
		if err := json.Unmarshal(b, &h); err != nil {
			a.t.Errorf("the agent got a frame that is not JSON: %q", b)
			continue
		}
		a.mu.Lock()
		ch := a.pending[h.RequestID]
		delete(a.pending, h.RequestID)
		if ch == nil {
			ch = a.actionChan(h.Action)
		}
		a.mu.Unlock()
		select {
		case ch <- b:
		default:
			a.t.Errorf("the agent's queue of %s frames is full", h.Action)
		}
	}
}

// actionChan returns the queue of frames dispatched by Action; a.mu held.
func (a *javaAgent) actionChan(action string) chan []byte {
	ch := a.byAct[action]
	if ch == nil {
		ch = make(chan []byte, 64)
		a.byAct[action] = ch
	}
	return ch
}

// frame renders a request as the Java agent's WebsocketRequest subclass:
// Action, a random UUID RequestId, and the class's fields.
func frame(action string, fields any) (string, []byte) {
	m := map[string]any{}
	b, _ := json.Marshal(fields)
	_ = json.Unmarshal(b, &m)
	id := ids.UUID()
	m["Action"], m["RequestId"] = action, id
	out, _ := json.Marshal(m)
	return id, out
}

// send writes one frame.
func (a *javaAgent) send(b []byte) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return a.ws.Write(ctx, websocket.MessageText, b)
}

// request sends a request and waits for the frame with its RequestId, as
// AgentWebSocket.sendRequest does; a StatusCode other than 200 is returned
// as an error (WebSocketExceptionProvider).
func (a *javaAgent) request(action string, fields, out any) error {
	id, b := frame(action, fields)
	ch := make(chan []byte, 1)
	a.mu.Lock()
	a.pending[id] = ch
	a.mu.Unlock()
	if err := a.send(b); err != nil {
		return err
	}
	select {
	case reply := <-ch:
		return decodeReply(reply, out)
	case <-a.done:
		return errors.New("the socket closed: " + a.err.Error())
	case <-time.After(waitShort):
		return errors.New("no reply to " + action)
	}
}

// replyError is a reply whose StatusCode is not 200.
type replyError struct {
	Status  int
	Message string
}

func (e *replyError) Error() string { return e.Message }

// decodeReply decodes a reply, or returns its error.
func decodeReply(b []byte, out any) error {
	var h frameHead
	if err := json.Unmarshal(b, &h); err != nil {
		return err
	}
	if h.StatusCode == nil || *h.StatusCode != 200 {
		status := 0
		if h.StatusCode != nil {
			status = *h.StatusCode
		}
		return &replyError{status, h.ErrorMessage}
	}
	if out == nil {
		return nil
	}
	return json.Unmarshal(b, out)
}

// heartbeat sends SendHeartbeat without waiting, as HeartbeatSender does,
// then takes its reply from the frames dispatched by Action.
func (a *javaAgent) heartbeat(status string, processes ...string) agentproto.SendHeartbeatResponse {
	a.t.Helper()
	if processes == nil {
		processes = []string{}
	}
	_, b := frame(agentproto.ActionSendHeartbeat, agentproto.SendHeartbeatRequest{Status: status, ProcessList: processes,
		HeartbeatTimeMillis: time.Now().UnixMilli()})
	if err := a.send(b); err != nil {
		a.t.Fatalf("sending a heartbeat: %v", err)
	}
	var r agentproto.SendHeartbeatResponse
	if err := decodeReply(a.next(agentproto.ActionSendHeartbeat), &r); err != nil {
		a.t.Fatalf("heartbeat reply: %v", err)
	}
	return r
}

// next waits for a frame dispatched by Action.
func (a *javaAgent) next(action string) []byte {
	a.t.Helper()
	a.mu.Lock()
	ch := a.actionChan(action)
	a.mu.Unlock()
	select {
	case b := <-ch:
		return b
	case <-time.After(waitShort):
		a.t.Fatalf("no %s frame", action)
	}
	return nil
}

// closed waits for the socket to end and returns why.
func (a *javaAgent) closed() error {
	select {
	case <-a.done:
		return a.err
	case <-time.After(waitShort):
		a.t.Fatal("the socket did not close")
	}
	return nil
}

package sdkconn_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/hoistgg/hoist/e2e/sdkclient"
	"github.com/hoistgg/hoist/internal/hosting"
	"github.com/hoistgg/hoist/internal/sdkconn"
	"github.com/hoistgg/hoist/internal/sdkconn/sdkconntest"
)

// inbox collects the service's messages a client receives.
type inbox chan *sdkclient.Frame

func (in inbox) opts() sdkclient.Options {
	return sdkclient.Options{OnMessage: func(_ *sdkclient.Client, f *sdkclient.Frame) { in <- f }}
}

func (in inbox) next(t *testing.T) *sdkclient.Frame {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	select {
	case f := <-in:
		return f
	case <-ctx.Done():
		t.Fatal("no message arrived")
		return nil
	}
}

func TestSendToProcess(t *testing.T) {
	tests := map[string]hosting.Message{
		"CreateGameSession": {"Action": "CreateGameSession", "GameSessionId": gsID, "GameSessionName": "n",
			"GameSessionData": "", "MatchmakerData": "", "MaximumPlayerSessionCount": 4, "Port": 7777,
			"IpAddress": "127.0.0.1", "DnsName": "i-1.localhost", "GameProperties": map[string]string{"mode": "ctf"}},
		"UpdateGameSession": {"Action": "UpdateGameSession", "GameSession": map[string]any{"GameSessionId": gsID},
			"UpdateReason": "MATCHMAKING_DATA_UPDATED", "BackfillTicketId": "t"},
		"TerminateProcess":                {"Action": "TerminateProcess", "TerminationTime": int64(1700000000000)},
		"RefreshConnection":               {"Action": "RefreshConnection", "RefreshConnectionEndpoint": "ws://127.0.0.1:1/sdk", "AuthToken": "x"},
		"RequestId kept":                  {"Action": "TerminateProcess", "RequestId": "given-id"},
		"StatusCode overridden by 200":    {"Action": "TerminateProcess", "StatusCode": 500},
		"empty RequestId replaced by one": {"Action": "TerminateProcess", "RequestId": ""},
	}
	for name, msg := range tests {
		t.Run(name, func(t *testing.T) {
			e, _ := start(t, sdkconn.Config{NewID: func() string { return "generated" }})
			in := make(inbox, 1)
			c := dial(t, e, "proc-1", in.opts())
			e.API.WaitMethod(t, wait, "Connected", "proc-1", 1)
			ctx, cancel := context.WithTimeout(context.Background(), wait)
			defer cancel()
			if err := e.Server.SendToProcess(ctx, "proc-1", msg); err != nil {
				t.Fatal(err)
			}
			f := in.next(t)
			if f.Action != msg["Action"] || f.StatusCode != 200 {
				t.Fatalf("got %s", f.Raw)
			}
			wantID := "generated"
			if id, _ := msg["RequestId"].(string); id != "" {
				wantID = id
			}
			if f.RequestID != wantID {
				t.Errorf("RequestId %q, want %q", f.RequestID, wantID)
			}
			got := f.Fields()
			for k, v := range msg {
				if k != "RequestId" && k != "StatusCode" && !sameJSON(got[k], v) {
					t.Errorf("%s = %v, want %v", k, got[k], v)
				}
			}
			if c.Dropped() != 0 {
				t.Error("the SDK would have ignored the message")
			}
		})
	}
}

func TestSendToProcessRefusals(t *testing.T) {
	e, _ := start(t, sdkconn.Config{})
	ctx := context.Background()
	if err := e.Server.SendToProcess(ctx, "nobody", hosting.Message{"Action": "TerminateProcess"}); !errors.Is(err, sdkconn.ErrNotConnected) {
		t.Errorf("not connected: err = %v", err)
	}
	dial(t, e, "proc-1", sdkclient.Options{})
	e.API.WaitMethod(t, wait, "Connected", "proc-1", 1)
	if err := e.Server.SendToProcess(ctx, "proc-1", hosting.Message{"GameSessionId": "x"}); err == nil {
		t.Error("a message without Action was sent")
	}
	if err := e.Server.SendToProcess(ctx, "proc-1", hosting.Message{"Action": "X", "Bad": make(chan int)}); err == nil {
		t.Error("an unencodable message was sent")
	}
}

// TestRefreshConnectionOverlap follows what the SDK does on
// RefreshConnection: a second socket for the same process, then the old
// one dropped a few seconds later.
func TestRefreshConnectionOverlap(t *testing.T) {
	e, _ := start(t, sdkconn.Config{})
	oldIn, newIn := make(inbox, 4), make(inbox, 4)
	old := dial(t, e, "proc-1", oldIn.opts())
	oldConn := e.API.WaitMethod(t, wait, "Connected", "proc-1", 1).Conn
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	e.Server.SendToProcess(ctx, "proc-1", hosting.Message{"Action": "RefreshConnection",
		"RefreshConnectionEndpoint": e.URL, "AuthToken": token})
	oldIn.next(t)

	fresh := dial(t, e, "proc-1", newIn.opts())
	newConn := e.API.WaitMethod(t, wait, "Connected", "proc-1", 2).Conn
	if newConn.ConnID == oldConn.ConnID {
		t.Fatal("both sockets have one ConnID")
	}
	if n := e.Server.Connections(); n != 2 {
		t.Fatalf("%d connections, want 2 during the overlap", n)
	}
	// Both sockets answer requests during the overlap.
	for _, c := range []*sdkclient.Client{old, fresh} {
		reply, err := c.Call(ctx, "HeartbeatServerProcess", map[string]any{"HealthStatus": true})
		checkReply(t, reply, err, "HeartbeatServerProcess", 200, "")
	}
	// Messages go to the newest socket.
	if err := e.Server.SendToProcess(ctx, "proc-1", hosting.Message{"Action": "CreateGameSession", "GameSessionId": gsID}); err != nil {
		t.Fatal(err)
	}
	if f := newIn.next(t); f.Action != "CreateGameSession" {
		t.Fatalf("new socket got %s", f.Raw)
	}
	// The old socket is dropped (the Go SDK closes it without a close frame).
	old.Drop()
	d := e.API.WaitMethod(t, wait, "Disconnected", "proc-1", 1)
	if d.Conn.ConnID != oldConn.ConnID || d.Normal {
		t.Errorf("Disconnected(%+v, normal=%v), want the old socket, abnormal", d.Conn, d.Normal)
	}
	if err := e.Server.SendToProcess(ctx, "proc-1", hosting.Message{"Action": "TerminateProcess"}); err != nil {
		t.Fatalf("after the old socket closed: %v", err)
	}
	if f := newIn.next(t); f.Action != "TerminateProcess" {
		t.Fatalf("new socket got %s", f.Raw)
	}
	select {
	case f := <-oldIn:
		t.Fatalf("old socket got %s", f.Raw)
	default:
	}
}

// TestCloseOutcomes checks the normal flag Disconnected gets.
func TestCloseOutcomes(t *testing.T) {
	tests := map[string]struct {
		endingFirst bool
		endingFails bool
		close       func(c *sdkclient.Client)
		wantNormal  bool
	}{
		"close 1000":                       {close: func(c *sdkclient.Client) { c.Close(1000, "bye") }, wantNormal: true},
		"close 1001":                       {close: func(c *sdkclient.Client) { c.Close(1001, "") }, wantNormal: true},
		"close 1011":                       {close: func(c *sdkclient.Client) { c.Close(1011, "") }},
		"dropped":                          {close: func(c *sdkclient.Client) { c.Drop() }},
		"dropped after ProcessEnding":      {endingFirst: true, close: func(c *sdkclient.Client) { c.Drop() }, wantNormal: true},
		"1011 after ProcessEnding":         {endingFirst: true, close: func(c *sdkclient.Client) { c.Close(1011, "") }, wantNormal: true},
		"dropped after refused ProcessEnd": {endingFirst: true, endingFails: true, close: func(c *sdkclient.Client) { c.Drop() }},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			fake := &sdkconntest.API{Hook: func(_ context.Context, c sdkconntest.Call) (map[string]any, error) {
				if c.Method == "ProcessEnding" && tc.endingFails {
					return nil, &hosting.SDKError{Status: 403, Message: "no"}
				}
				return nil, nil
			}}
			e, _ := start(t, sdkconn.Config{API: fake})
			c := dial(t, e, "proc-1", sdkclient.Options{})
			if tc.endingFirst {
				ctx, cancel := context.WithTimeout(context.Background(), wait)
				c.Call(ctx, "TerminateServerProcess", nil)
				cancel()
			}
			tc.close(c)
			d := fake.WaitMethod(t, wait, "Disconnected", "proc-1", 1)
			if d.Normal != tc.wantNormal {
				t.Errorf("normal = %v, want %v", d.Normal, tc.wantNormal)
			}
			if n := e.Server.Connections(); n != 0 {
				t.Errorf("%d connections left", n)
			}
		})
	}
}

// TestShutdown closes every socket with 1012 (the SDKs reconnect) and
// refuses new ones.
func TestShutdown(t *testing.T) {
	e, _ := start(t, sdkconn.Config{})
	var clients []*sdkclient.Client
	for i := range 3 {
		clients = append(clients, dial(t, e, fmt.Sprintf("proc-%d", i), sdkclient.Options{}))
	}
	for i := range 3 {
		e.API.WaitMethod(t, wait, "Connected", fmt.Sprintf("proc-%d", i), 1)
	}
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	if err := e.Server.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	for _, c := range clients {
		<-c.Done()
		if code := c.CloseCode(); code != 1012 {
			t.Errorf("close code %d, want 1012", code)
		}
	}
	if n := e.API.Count("Disconnected"); n != 3 {
		t.Errorf("%d Disconnected calls before Shutdown returned, want 3", n)
	}
	for _, call := range e.API.Calls() {
		if call.Method == "Disconnected" && call.Normal {
			t.Error("a shutdown close counted as normal")
		}
	}
	_, err := sdkclient.Dial(ctx, e.URL, sdkclient.Query("late", computeID, fleetID, token), sdkclient.Options{})
	var he *sdkclient.HandshakeError
	if !errors.As(err, &he) || he.StatusCode != 503 {
		t.Errorf("after shutdown: %v, want HTTP 503", err)
	}
}

// TestConcurrentSends sends from many goroutines to many processes while
// they make calls; every message arrives once.
func TestConcurrentSends(t *testing.T) {
	const procs, perProc = 8, 50
	e, _ := start(t, sdkconn.Config{SendQueue: 4})
	ins := make([]inbox, procs)
	clients := make([]*sdkclient.Client, procs)
	for i := range procs {
		ins[i] = make(inbox, perProc)
		clients[i] = dial(t, e, fmt.Sprintf("proc-%d", i), ins[i].opts())
		e.API.WaitMethod(t, wait, "Connected", fmt.Sprintf("proc-%d", i), 1)
	}
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	var wg sync.WaitGroup
	for i := range procs {
		for j := range perProc {
			wg.Go(func() {
				msg := hosting.Message{"Action": "UpdateGameSession", "Seq": j}
				if err := e.Server.SendToProcess(ctx, fmt.Sprintf("proc-%d", i), msg); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Go(func() {
			for range 20 {
				reply, err := clients[i].Call(ctx, "HeartbeatServerProcess", map[string]any{"HealthStatus": true})
				if err != nil || reply.StatusCode != 200 {
					t.Errorf("heartbeat: %v", err)
				}
			}
		})
	}
	wg.Wait()
	for i := range procs {
		seen := map[float64]bool{}
		for range perProc {
			f := ins[i].next(t)
			seq, _ := f.Fields()["Seq"].(float64)
			if seen[seq] {
				t.Errorf("proc-%d got message %v twice", i, seq)
			}
			seen[seq] = true
		}
	}
}

// TestReplyBeforeCausedMessage: a message sent while a request of the
// process is being served (here from inside the handler, as sessions sends
// TerminateProcess from the Heartbeat that ends a process) reaches the
// process after that request's reply, and sending it does not wait for the
// reply (no deadlock). After ActivateServerProcess's reply a message (a
// CreateGameSession placed right after ProcessReady committed) waits for
// the process's next request: the Go Server SDK marks itself ready only
// once its ProcessReady call has returned, and ignores a CreateGameSession
// handled before then; its first heartbeat follows that mark. (Before,
// the CreateGameSession followed the reply at once, and under load the
// e2e/hosting TestPlacementContention saw a game server ignore it.)
func TestReplyBeforeCausedMessage(t *testing.T) {
	var e *sdkconntest.Endpoint
	fake := &sdkconntest.API{Hook: func(ctx context.Context, c sdkconntest.Call) (map[string]any, error) {
		if c.Method == "ProcessReady" || c.Method == "Heartbeat" {
			if err := e.Server.SendToProcess(ctx, c.Conn.ProcessID, hosting.Message{"Action": "CreateGameSession"}); err != nil {
				return nil, err
			}
		}
		return nil, nil
	}}
	e, _ = start(t, sdkconn.Config{API: fake, ReadyGrace: time.Hour})
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	ws, _, err := websocket.Dial(ctx, e.URL+"?"+sdkclient.Query("proc-1", computeID, fleetID, token).Encode(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.CloseNow()
	for _, step := range []struct {
		req  string
		want []string
	}{
		{`{"Action":"ActivateServerProcess","RequestId":"r1","Port":7777}`, []string{"ActivateServerProcess"}},
		// The ProcessReady's CreateGameSession follows the next reply, and
		// so does the Heartbeat's own.
		{`{"Action":"HeartbeatServerProcess","RequestId":"r2","HealthStatus":true}`,
			[]string{"HeartbeatServerProcess", "CreateGameSession", "CreateGameSession"}},
	} {
		if err := ws.Write(ctx, websocket.MessageText, []byte(step.req)); err != nil {
			t.Fatal(err)
		}
		var order []string
		for range step.want {
			order = append(order, readAction(ctx, t, ws))
		}
		if fmt.Sprint(order) != fmt.Sprint(step.want) {
			t.Errorf("after %s: frames in order %v, want %v", step.req, order, step.want)
		}
	}
}

// TestReadyGraceReleasesMessages: a process that sends nothing after its
// ActivateServerProcess reply (no heartbeats) gets the messages held for
// it once ReadyGrace has passed.
func TestReadyGraceReleasesMessages(t *testing.T) {
	var e *sdkconntest.Endpoint
	fake := &sdkconntest.API{Hook: func(ctx context.Context, c sdkconntest.Call) (map[string]any, error) {
		if c.Method == "ProcessReady" {
			return nil, e.Server.SendToProcess(ctx, c.Conn.ProcessID, hosting.Message{"Action": "CreateGameSession"})
		}
		return nil, nil
	}}
	e, _ = start(t, sdkconn.Config{API: fake, ReadyGrace: time.Millisecond})
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	ws, _, err := websocket.Dial(ctx, e.URL+"?"+sdkclient.Query("proc-1", computeID, fleetID, token).Encode(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.CloseNow()
	if err := ws.Write(ctx, websocket.MessageText, []byte(`{"Action":"ActivateServerProcess","RequestId":"r1","Port":7777}`)); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"ActivateServerProcess", "CreateGameSession"} {
		if got := readAction(ctx, t, ws); got != want {
			t.Fatalf("frame %s, want %s", got, want)
		}
	}
}

// readAction reads a frame and returns its Action.
func readAction(ctx context.Context, t *testing.T, ws *websocket.Conn) string {
	t.Helper()
	_, data, err := ws.Read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var m struct{ Action string }
	json.Unmarshal(data, &m)
	return m.Action
}

package sdkclient

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// scripted serves one WebSocket: it sends frames, then answers every
// request with reply(request).
func scripted(t *testing.T, frames []string, reply func(req map[string]any) map[string]any) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ws, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		defer ws.CloseNow()
		ctx := context.Background()
		for _, f := range frames {
			ws.Write(ctx, websocket.MessageText, []byte(f))
		}
		for {
			_, data, err := ws.Read(ctx)
			if err != nil {
				return
			}
			var req map[string]any
			json.Unmarshal(data, &req)
			out, _ := json.Marshal(reply(req))
			ws.Write(ctx, websocket.MessageText, out)
		}
	}))
	t.Cleanup(srv.Close)
	return "ws" + strings.TrimPrefix(srv.URL, "http")
}

func echo(status int) func(map[string]any) map[string]any {
	return func(req map[string]any) map[string]any {
		return map[string]any{"Action": req["Action"], "RequestId": req["RequestId"], "StatusCode": status,
			"ErrorMessage": "nope", "Echo": req["Value"]}
	}
}

// TestRouting checks that frames are routed as the official SDKs route
// them, and that OnMessage may make calls.
func TestRouting(t *testing.T) {
	frames := []string{
		`{"Action":"CreateGameSession","RequestId":"m1","StatusCode":200,"GameSessionId":"gs-1"}`,
		`{"Action":"TerminateProcess","RequestId":"m2","TerminationTime":1}`,   // no StatusCode: an SDK drops it
		`{"Action":"HeartbeatServerProcess","RequestId":"x","StatusCode":400}`, // error for nobody
		`{"Action":"HeartbeatServerProcess","RequestId":"y","StatusCode":200}`, // reply for nobody
		`{"Action":"UpdateGameSession","StatusCode":200,"GameSession":{}}`,     // no RequestId: fine
		`not json`,
	}
	got := make(chan *Frame, 4)
	replies := make(chan error, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	opts := Options{OnMessage: func(c *Client, f *Frame) {
		if f.Action == "CreateGameSession" {
			_, err := c.Call(ctx, "ActivateGameSession", map[string]any{"Value": "in callback"})
			replies <- err
		}
		got <- f
	}}
	c, err := Dial(ctx, scripted(t, frames, echo(200)), Query("p", "h", "f", "t"), opts)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Drop()
	if f := <-got; f.Action != "CreateGameSession" || f.RequestID != "m1" {
		t.Errorf("first message %s", f.Raw)
	}
	if err := <-replies; err != nil {
		t.Errorf("call from OnMessage: %v", err)
	}
	if f := <-got; f.Action != "UpdateGameSession" {
		t.Errorf("second message %s", f.Raw)
	}
	reply, err := c.Call(ctx, "HeartbeatServerProcess", map[string]any{"Value": 7})
	if err != nil || reply.Fields()["Echo"] != float64(7) {
		t.Fatalf("reply %v, err %v", reply, err)
	}
	if n := c.Dropped(); n != 4 {
		t.Errorf("dropped %d frames, want 4", n)
	}
}

func TestCallError(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := Dial(ctx, scripted(t, nil, echo(403)), Query("p", "h", "f", "t"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	reply, err := c.Call(ctx, "ActivateGameSession", nil)
	var se *StatusError
	if !errors.As(err, &se) || se.StatusCode != 403 || se.Message != "nope" || reply == nil {
		t.Fatalf("err %v", err)
	}
	c.Close(1000, "")
	if _, err := c.Call(ctx, "X", nil); !errors.Is(err, ErrClosed) {
		t.Errorf("after close: %v", err)
	}
}

func TestQuery(t *testing.T) {
	q := Query("proc-1", "host-1", "fleet-1", "tok")
	want := map[string]string{"pID": "proc-1", "ComputeId": "host-1", "FleetId": "fleet-1", "Authorization": "tok",
		"sdkVersion": SDKVersion, "sdkLanguage": SDKLanguage}
	for k, v := range want {
		if q.Get(k) != v {
			t.Errorf("%s = %q, want %q", k, q.Get(k), v)
		}
	}
	if a, b := q.Get("IdempotencyToken"), Query("p", "h", "f", "t").Get("IdempotencyToken"); a == "" || a == b {
		t.Errorf("IdempotencyToken %q then %q: want a fresh one per connection", a, b)
	}
}

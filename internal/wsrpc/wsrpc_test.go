package wsrpc

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// pair connects two peers over a loopback HTTP server: the server side
// uses server, the client side client.
func pair(t *testing.T, server, client Config) (*Peer, *Peer) {
	t.Helper()
	var n atomic.Int64
	ids := func() string { return "id-" + strconv.FormatInt(n.Add(1), 10) }
	if server.NewID == nil {
		server.NewID = ids
	}
	if client.NewID == nil {
		client.NewID = ids
	}
	got := make(chan *Peer, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ws, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		p := New(ws, server)
		got <- p
		_ = p.Run(context.Background())
	}))
	t.Cleanup(srv.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ws, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(srv.URL, "http"), nil)
	if err != nil {
		t.Fatal(err)
	}
	c := New(ws, client)
	go func() { _ = c.Run(context.Background()) }()
	s := <-got
	t.Cleanup(func() { c.Close(websocket.StatusNormalClosure, ""); s.Close(websocket.StatusNormalClosure, "") })
	return s, c
}

type echoIn struct {
	Name  string `json:"Name"`
	Count int    `json:"Count"`
}

type echoOut struct {
	Greeting string `json:"Greeting"`
	Count    int    `json:"Count"`
}

func TestCallsBothWays(t *testing.T) {
	h := func(ctx context.Context, r *Request) (any, error) {
		switch r.Action {
		case "Greet":
			var in echoIn
			if err := r.Decode(&in); err != nil {
				return nil, err
			}
			if in.Name == "" {
				return nil, Errorf(400, "Name is required")
			}
			return echoOut{Greeting: "hello " + in.Name, Count: in.Count + 1}, nil
		case "Boom":
			return nil, errors.New("secret detail")
		}
		return nil, Errorf(400, "unknown Action %q", r.Action)
	}
	s, c := pair(t, Config{Handler: h}, Config{Handler: h})
	ctx := context.Background()
	for name, p := range map[string]*Peer{"client to server": c, "server to client": s} {
		t.Run(name, func(t *testing.T) {
			var out echoOut
			if err := p.Call(ctx, "Greet", echoIn{Name: "a", Count: 1}, &out); err != nil || out.Greeting != "hello a" || out.Count != 2 {
				t.Fatalf("Greet: %+v %v", out, err)
			}
			var e *Error
			if err := p.Call(ctx, "Greet", echoIn{}, nil); !errors.As(err, &e) || e.Status != 400 || e.Message != "Name is required" {
				t.Fatalf("empty name: %v", err)
			}
			if err := p.Call(ctx, "Greet", map[string]any{"Name": 5}, nil); !errors.As(err, &e) || e.Status != 400 || !strings.Contains(e.Message, "Name") {
				t.Fatalf("wrong type: %v", err)
			}
			if err := p.Call(ctx, "Boom", nil, nil); !errors.As(err, &e) || e.Status != 500 || strings.Contains(e.Message, "secret") {
				t.Fatalf("internal error: %v", err)
			}
		})
	}
}

func TestMessagesAreNotAnswered(t *testing.T) {
	got := make(chan *Request, 4)
	s, c := pair(t, Config{}, Config{Handler: func(ctx context.Context, r *Request) (any, error) {
		got <- r
		return map[string]any{"Ignored": true}, errors.New("not answered either way")
	}})
	if err := s.Send(context.Background(), "ForceExitServerProcess", map[string]any{"ProcessId": "p1"}); err != nil {
		t.Fatal(err)
	}
	r := <-got
	var m struct {
		ProcessID  string `json:"ProcessId"`
		StatusCode int    `json:"StatusCode"`
	}
	if !r.Message || r.Action != "ForceExitServerProcess" || r.Decode(&m) != nil || m.ProcessID != "p1" || m.StatusCode != 200 {
		t.Fatalf("message: %+v %+v", r, m)
	}
	// The client answered nothing: a call of the server still gets only
	// its own reply (the client's handler answers requests).
	_ = c
}

func TestBadFramesAreDropped(t *testing.T) {
	var served atomic.Int32
	srv, c := pair(t, Config{Handler: func(ctx context.Context, r *Request) (any, error) {
		served.Add(1)
		return nil, nil
	}}, Config{})
	_ = srv
	for _, f := range []string{`nonsense`, `[1,2]`, `{"Action":1,"RequestId":"x"}`, `{"Action":"A"}`, "\xff\xfe",
		`{"Action":"` + strings.Repeat("a", 300) + `","RequestId":"x"}`} {
		if err := c.ws.Write(context.Background(), websocket.MessageText, []byte(f)); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Call(context.Background(), "Ping", nil, nil); err != nil {
		t.Fatal(err)
	}
	if n := served.Load(); n != 1 {
		t.Fatalf("served %d frames, want only the Ping", n)
	}
}

func TestRateBound(t *testing.T) {
	now := time.Unix(1000, 0)
	clock := func() time.Time { return now }
	_, c := pair(t, Config{MessageBurst: 3, MessageRate: 1, Now: clock,
		Handler: func(ctx context.Context, r *Request) (any, error) { return nil, nil }}, Config{})
	ok, throttled := 0, 0
	for range 5 {
		var e *Error
		switch err := c.Call(context.Background(), "Ping", nil, nil); {
		case err == nil:
			ok++
		case errors.As(err, &e) && e.Status == 429:
			throttled++
		default:
			t.Fatal(err)
		}
	}
	if ok != 3 || throttled != 2 {
		t.Fatalf("%d served, %d throttled; want 3 and 2", ok, throttled)
	}
}

func TestCallOnClosedPeer(t *testing.T) {
	s, c := pair(t, Config{}, Config{})
	s.Close(websocket.StatusGoingAway, "bye")
	<-c.Done()
	if err := c.Call(context.Background(), "Ping", nil, nil); !errors.Is(err, ErrClosed) {
		t.Fatalf("call on a closed peer: %v", err)
	}
}

func TestEncodeEnvelopeWins(t *testing.T) {
	b, err := Encode("A", "r1", 404, "gone", map[string]any{"Action": "B", "StatusCode": 7, "ErrorMessage": "x", "X": 1})
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	_ = json.Unmarshal(b, &m)
	if m["Action"] != "A" || m["RequestId"] != "r1" || m["StatusCode"] != 404.0 || m["ErrorMessage"] != "gone" || m["X"] != 1.0 {
		t.Fatalf("%s", b)
	}
	b, _ = Encode("A", "r1", 200, "ignored", nil)
	if strings.Contains(string(b), "ErrorMessage") {
		t.Fatalf("a 200 reply with an ErrorMessage: %s", b)
	}
	if _, err := Encode("A", "r1", 200, "", []int{1}); err == nil {
		t.Fatal("fields that are not an object were encoded")
	}
}

func FuzzServe(f *testing.F) {
	for _, s := range []string{`{"Action":"A","RequestId":"1"}`, `{"Action":"A","RequestId":"1","StatusCode":200}`,
		`{"Action":"A","RequestId":"1","Name":5}`, `{}`, `null`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		p := &Peer{cfg: Config{Handler: func(ctx context.Context, r *Request) (any, error) {
			var in echoIn
			return nil, r.Decode(&in)
		}, NewID: func() string { return "x" }}, pending: map[string]chan []byte{}, send: make(chan outFrame, 1)}
		p.cfg.defaults()
		p.ctx, p.cancel = context.WithCancel(context.Background())
		defer p.cancel()
		if err := p.serve(data); err != nil {
			t.Fatal(err)
		}
		select {
		case f := <-p.send:
			var m map[string]any
			if json.Unmarshal(f.data, &m) != nil || m["StatusCode"] == nil {
				t.Fatalf("reply %s", f.data)
			}
		default:
		}
	})
}

// TestAbortDoesNotWait: Abort ends a peer whose other side does not
// answer at once (Close would wait for its close frame).
func TestAbortDoesNotWait(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ws, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		<-r.Context().Done() // never reads: a silent other side
		ws.CloseNow()
	}))
	t.Cleanup(srv.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ws, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(srv.URL, "http"), nil)
	if err != nil {
		t.Fatal(err)
	}
	p := New(ws, Config{NewID: func() string { return "id" }})
	done := make(chan error, 1)
	go func() { done <- p.Run(context.Background()) }()
	start := time.Now()
	p.Abort()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return after Abort")
	}
	if d := time.Since(start); d > time.Second {
		t.Fatalf("Abort took %s", d)
	}
}

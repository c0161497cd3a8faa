// Package wsrpc is one side of a WebSocket that carries JSON objects in the
// envelope GameLift's Server SDK 5 and GameLift Agent protocols use: every
// frame is a JSON object with an Action and a RequestId, and the fields of
// the message at the top level beside them; a reply echoes both and adds a
// StatusCode (200 on success) and, on failure, an ErrorMessage.
//
// A Peer serves both directions over one socket:
//
//	Call(action, in, out)  a request of ours; waits for the reply with its RequestId
//	Send(action, in)       a message of ours (StatusCode 200, no reply awaited)
//	Handler                every frame of the other side that is not a reply to
//	                       one of our calls: a frame without a StatusCode is a
//	                       request, answered with what Handler returns; a frame
//	                       with one is a message, never answered
//
// This is how the Java GameLift Agent tells them apart too: a service
// message carries StatusCode 200 (it is a WebsocketResponse), an agent
// request carries none. The agent endpoint and its client (Anywhere hosts)
// and Hoist's own host protocol (pool hosts) use this package; the Server
// SDK endpoint (internal/sdkconn) has its own older connection code with
// the same envelope.
//
// Each Peer has one reader (Run's goroutine), which decodes a frame and
// calls Handler, one request after the other, and one writer goroutine,
// which alone writes to the socket. Requests are therefore answered in
// order; a Handler that must not hold up the next frame hands its work to
// a goroutine of its own and answers at once.
package wsrpc

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/coder/websocket"
)

// Error is a reply whose StatusCode is not 200, or what a Handler returns
// to answer one: Status is the StatusCode (400 bad request, 401/403 not
// allowed, 404 not found, 409 conflict, 412 not ready, 429 throttled, 500
// internal), Message the ErrorMessage.
type Error struct {
	Status  int
	Message string
}

func (e *Error) Error() string { return fmt.Sprintf("status %d: %s", e.Status, e.Message) }

// Errorf returns an *Error.
func Errorf(status int, format string, a ...any) *Error {
	return &Error{Status: status, Message: fmt.Sprintf(format, a...)}
}

// ErrClosed: the peer's socket is closed.
var ErrClosed = errors.New("wsrpc: the connection is closed")

// Request is a frame from the other side that is not a reply to one of
// our calls.
type Request struct {
	Action    string
	RequestID string
	// Message: the frame carries a StatusCode, so it is a message, not a
	// request, and is not answered.
	Message bool
	// Frame is the whole JSON object.
	Frame []byte
}

// Decode decodes the frame's fields into v (a struct whose JSON names are
// the fields'; the envelope's own keys are ignored unless v names them). A
// field of the wrong type is an *Error with Status 400 naming it.
func (r *Request) Decode(v any) error {
	if err := json.Unmarshal(r.Frame, v); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" {
			return Errorf(400, "field %s must be %s", te.Field, jsonKind(te.Type.Kind().String()))
		}
		return Errorf(400, "the %s message is not valid: %v", clip(r.Action), err)
	}
	return nil
}

// jsonKind names a Go kind as the JSON value expected.
func jsonKind(k string) string {
	switch k {
	case "string":
		return "a string"
	case "bool":
		return "a boolean"
	case "slice", "array":
		return "an array"
	case "map", "struct":
		return "an object"
	}
	return "a number"
}

// Handler serves a frame of the other side: for a request, its result (a
// value that encodes as a JSON object, or nil) is merged at the top level
// of the reply; an error is answered with its Status when it is an *Error,
// else 500 (and logged). For a message, the result is ignored.
type Handler func(ctx context.Context, r *Request) (any, error)

// Config configures a Peer.
type Config struct {
	// Handler serves the other side's requests and messages; nil answers
	// every request 400.
	Handler Handler
	// MaxMessageBytes is the largest frame read (default 1 MiB); a larger
	// one closes the socket with 1009.
	MaxMessageBytes int64
	// CallTimeout bounds Call when its context has no deadline, and each
	// Handler call (default 20 s).
	CallTimeout time.Duration
	// WriteTimeout bounds each frame written (default 10 s); a socket that
	// cannot take a frame in time is closed.
	WriteTimeout time.Duration
	// SendQueue is how many frames may wait for the writer (default 64).
	SendQueue int
	// MessageBurst and MessageRate bound the frames of the other side that
	// are served: MessageBurst at once, then MessageRate a second (0: no
	// bound). Beyond it a request is answered 429 without being served, and
	// a message is dropped (and logged).
	MessageBurst int
	MessageRate  float64
	// NewID returns the RequestId of our calls and messages (required).
	NewID  func() string
	Logger *slog.Logger
	// Now is the clock of the rate bound (default time.Now).
	Now func() time.Time
}

func (c *Config) defaults() {
	if c.MaxMessageBytes <= 0 {
		c.MaxMessageBytes = 1 << 20
	}
	if c.CallTimeout <= 0 {
		c.CallTimeout = 20 * time.Second
	}
	if c.WriteTimeout <= 0 {
		c.WriteTimeout = 10 * time.Second
	}
	if c.SendQueue <= 0 {
		c.SendQueue = 64
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Now == nil {
		c.Now = time.Now
	}
}

// Peer is one side of a socket.
type Peer struct {
	cfg    Config
	ws     *websocket.Conn
	ctx    context.Context
	cancel context.CancelFunc
	send   chan outFrame

	mu      sync.Mutex
	pending map[string]chan []byte // our calls waiting for their reply
	tokens  float64
	last    time.Time
}

type outFrame struct {
	data []byte
	done chan error
}

// New returns a Peer on an open socket; Run serves it.
func New(ws *websocket.Conn, cfg Config) *Peer {
	cfg.defaults()
	ws.SetReadLimit(cfg.MaxMessageBytes)
	ctx, cancel := context.WithCancel(context.Background())
	return &Peer{cfg: cfg, ws: ws, ctx: ctx, cancel: cancel, send: make(chan outFrame, cfg.SendQueue),
		pending: map[string]chan []byte{}, tokens: float64(cfg.MessageBurst)}
}

// Done is closed once the socket is closed.
func (p *Peer) Done() <-chan struct{} { return p.ctx.Done() }

// Run reads and serves frames until the socket closes or ctx ends, and
// returns the error that ended it.
func (p *Peer) Run(ctx context.Context) error {
	stop := context.AfterFunc(ctx, p.cancel)
	defer stop()
	writerDone := make(chan struct{})
	go func() {
		defer close(writerDone)
		p.writeLoop()
	}()
	err := p.readLoop()
	p.cancel()
	<-writerDone
	p.ws.CloseNow()
	return err
}

// Close closes the socket with a close frame (it waits, up to 5s, for the
// other side's).
func (p *Peer) Close(code websocket.StatusCode, reason string) {
	_ = p.ws.Close(code, reason)
	p.cancel()
}

// Abort closes the socket at once, without the close handshake: for a
// connection whose other side is gone or does not answer.
func (p *Peer) Abort() {
	p.cancel()
	_ = p.ws.CloseNow()
}

// readLoop reads frames until the socket fails.
func (p *Peer) readLoop() error {
	for {
		typ, data, err := p.ws.Read(p.ctx)
		if err != nil {
			return err
		}
		if typ != websocket.MessageText {
			continue
		}
		if err := p.serve(data); err != nil {
			return err
		}
	}
}

// envelope is what the reader needs of every frame.
type envelope struct {
	Action     *string          `json:"Action"`
	RequestID  *string          `json:"RequestId"`
	StatusCode *json.RawMessage `json:"StatusCode"`
}

// maxIDLength bounds the Action and RequestId echoed back.
const maxIDLength = 256

// serve handles one text frame.
func (p *Peer) serve(data []byte) error {
	var env envelope
	if !utf8.Valid(data) || json.Unmarshal(data, &env) != nil || env.Action == nil || env.RequestID == nil ||
		len(*env.Action) > maxIDLength || len(*env.RequestID) > maxIDLength || !bytes.HasPrefix(bytes.TrimSpace(data), []byte("{")) {
		p.cfg.Logger.Debug("wsrpc: frame dropped: not an object with a string Action and RequestId", "bytes", len(data))
		return nil
	}
	if ch := p.takePending(*env.RequestID); ch != nil {
		ch <- data
		return nil
	}
	r := &Request{Action: *env.Action, RequestID: *env.RequestID, Message: env.StatusCode != nil, Frame: data}
	if !p.allow() {
		if !r.Message {
			return p.reply(r, nil, Errorf(429, "too many requests: at most %d at once, then %g a second", p.cfg.MessageBurst, p.cfg.MessageRate))
		}
		p.cfg.Logger.Warn("wsrpc: message dropped: too many frames", "action", clip(r.Action))
		return nil
	}
	var out any
	var err error
	if p.cfg.Handler == nil {
		err = Errorf(400, "unknown Action %q", clip(r.Action))
	} else {
		ctx, cancel := context.WithTimeout(p.ctx, p.cfg.CallTimeout)
		out, err = p.cfg.Handler(ctx, r)
		cancel()
	}
	if r.Message {
		if err != nil {
			p.cfg.Logger.Info("wsrpc: message not handled", "action", clip(r.Action), "err", err)
		}
		return nil
	}
	return p.reply(r, out, err)
}

// allow takes a token of the rate bound; false when none is left.
func (p *Peer) allow() bool {
	if p.cfg.MessageRate <= 0 {
		return true
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.cfg.Now()
	if !p.last.IsZero() {
		if d := now.Sub(p.last).Seconds(); d > 0 {
			p.tokens = min(float64(p.cfg.MessageBurst), p.tokens+d*p.cfg.MessageRate)
		}
	}
	p.last = now
	if p.tokens < 1 {
		return false
	}
	p.tokens--
	return true
}

// reply queues the answer to a request.
func (p *Peer) reply(r *Request, out any, err error) error {
	status, msg := 200, ""
	if err != nil {
		var e *Error
		if errors.As(err, &e) && e.Status >= 400 && e.Status <= 599 {
			status, msg = e.Status, e.Message
		} else {
			p.cfg.Logger.Error("wsrpc: request failed", "action", clip(r.Action), "err", err)
			status, msg = 500, "internal error"
		}
		out = nil
	}
	frame, err := Encode(r.Action, r.RequestID, status, msg, out)
	if err != nil {
		p.cfg.Logger.Error("wsrpc: encoding a reply failed", "action", clip(r.Action), "err", err)
		frame, _ = Encode(r.Action, r.RequestID, 500, "internal error", nil)
	}
	return p.enqueue(p.ctx, outFrame{data: frame})
}

// Encode renders a frame: fields (a value that encodes as a JSON object,
// or nil) at the top level with Action and RequestId, and a StatusCode
// (and ErrorMessage when it is not 200) unless status is 0. The envelope's
// keys win over fields of the same name.
func Encode(action, requestID string, status int, errMsg string, fields any) ([]byte, error) {
	m := map[string]json.RawMessage{}
	if fields != nil {
		b, err := json.Marshal(fields)
		if err != nil {
			return nil, err
		}
		if err := json.Unmarshal(b, &m); err != nil {
			return nil, fmt.Errorf("wsrpc: the fields of %s are not a JSON object: %w", action, err)
		}
	}
	put := func(k string, v any) {
		b, _ := json.Marshal(v)
		m[k] = b
	}
	put("Action", action)
	put("RequestId", requestID)
	delete(m, "StatusCode")
	delete(m, "ErrorMessage")
	if status != 0 {
		put("StatusCode", status)
		if status != 200 {
			put("ErrorMessage", errMsg)
		}
	}
	return json.Marshal(m)
}

// Call sends a request and decodes the reply's fields into out (when not
// nil). A reply with a StatusCode other than 200 is an *Error.
func (p *Peer) Call(ctx context.Context, action string, in, out any) error {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, p.cfg.CallTimeout)
		defer cancel()
	}
	id := p.cfg.NewID()
	frame, err := Encode(action, id, 0, "", in)
	if err != nil {
		return err
	}
	ch := make(chan []byte, 1)
	p.mu.Lock()
	p.pending[id] = ch
	p.mu.Unlock()
	defer p.takePending(id)
	if err := p.enqueue(ctx, outFrame{data: frame}); err != nil {
		return err
	}
	select {
	case data := <-ch:
		return decodeReply(action, data, out)
	case <-ctx.Done():
		return fmt.Errorf("wsrpc: %s: %w", action, ctx.Err())
	case <-p.ctx.Done():
		return fmt.Errorf("wsrpc: %s: %w", action, ErrClosed)
	}
}

// decodeReply turns a reply frame into out or an *Error.
func decodeReply(action string, data []byte, out any) error {
	var st struct {
		StatusCode   int    `json:"StatusCode"`
		ErrorMessage string `json:"ErrorMessage"`
	}
	if err := json.Unmarshal(data, &st); err != nil {
		return fmt.Errorf("wsrpc: the reply to %s is not valid: %w", action, err)
	}
	if st.StatusCode != 200 {
		return &Error{Status: st.StatusCode, Message: st.ErrorMessage}
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("wsrpc: the reply to %s is not valid: %w", action, err)
	}
	return nil
}

// Send sends a message (StatusCode 200, a fresh RequestId) and returns
// once it is written; nothing is awaited from the other side.
func (p *Peer) Send(ctx context.Context, action string, in any) error {
	frame, err := Encode(action, p.cfg.NewID(), 200, "", in)
	if err != nil {
		return err
	}
	done := make(chan error, 1)
	if err := p.enqueue(ctx, outFrame{data: frame, done: done}); err != nil {
		return err
	}
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	case <-p.ctx.Done():
		select {
		case err := <-done:
			return err
		default:
			return ErrClosed
		}
	}
}

func (p *Peer) takePending(id string) chan []byte {
	p.mu.Lock()
	defer p.mu.Unlock()
	ch := p.pending[id]
	delete(p.pending, id)
	return ch
}

// enqueue hands a frame to the writer, waiting while the queue is full.
func (p *Peer) enqueue(ctx context.Context, f outFrame) error {
	select {
	case p.send <- f:
		return nil
	case <-p.ctx.Done():
		return ErrClosed
	case <-ctx.Done():
		return ctx.Err()
	}
}

// writeLoop writes queued frames until the socket is done; a frame that
// cannot be written in time ends the socket.
func (p *Peer) writeLoop() {
	for {
		select {
		case <-p.ctx.Done():
			return
		case f := <-p.send:
			ctx, cancel := context.WithTimeout(p.ctx, p.cfg.WriteTimeout)
			err := p.ws.Write(ctx, websocket.MessageText, f.data)
			cancel()
			if f.done != nil {
				f.done <- err
			}
			if err != nil {
				p.cfg.Logger.Info("wsrpc: writing failed", "err", err)
				p.cancel()
				return
			}
		}
	}
}

// clip shortens a string taken from the other side for a message or log.
func clip(s string) string {
	if len(s) > 64 {
		return s[:64] + "..."
	}
	return s
}

// Package sdkclient is the client side of the GameLift Server SDK 5
// WebSocket protocol, for tests and for Hoist's test game server: it
// connects the way the official SDKs do, sends requests and waits for their
// replies, and delivers the messages the service sends (CreateGameSession,
// TerminateProcess, ...) to a callback.
//
// It routes incoming frames by the rules the official SDKs follow, so a
// test sees what a real game server would see: a frame with a RequestId
// and a StatusCode other than 200 is an error reply (and is dropped, and
// counted in Dropped, if no call is waiting for it); the service's messages
// go to OnMessage by Action; any other frame answers the waiting call with
// its RequestId.
//
// It does not reconnect; the test game server (e2e/gameserver) shows how.
package sdkclient

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"

	"github.com/coder/websocket"
)

// Protocol constants, as the official Go SDK sends them.
const (
	SDKVersion  = "5.6.0"
	SDKLanguage = "Go"
	// UserAgent is the User-Agent of the Go SDK's handshake.
	UserAgent = "gamelift-go-sdk/1.0"
)

// ServiceActions are the messages the service starts (section 3 of the
// protocol notes); the SDKs dispatch them to callbacks by Action.
var ServiceActions = map[string]bool{
	"CreateGameSession": true, "UpdateGameSession": true, "TerminateProcess": true, "RefreshConnection": true,
}

// Query returns the query string the Go SDK builds for a connection with an
// auth token, with a fresh IdempotencyToken.
func Query(processID, hostID, fleetID, authToken string) url.Values {
	return url.Values{
		"pID":              {processID},
		"sdkVersion":       {SDKVersion},
		"sdkLanguage":      {SDKLanguage},
		"ComputeId":        {hostID},
		"FleetId":          {fleetID},
		"IdempotencyToken": {NewUUID()},
		"Authorization":    {authToken},
	}
}

// defaultHTTPClient dials like the Go SDK's WebSocket dialer: no proxy,
// the system's root certificates (so SSL_CERT_FILE applies), HTTP/1.1 only
// (a WebSocket handshake cannot run over HTTP/2).
var defaultHTTPClient = &http.Client{Transport: &http.Transport{
	TLSClientConfig: &tls.Config{NextProtos: []string{"http/1.1"}},
}}

// Options configure a Client.
type Options struct {
	// HTTPClient makes the handshake (set its TLS roots for wss; its
	// transport must not negotiate HTTP/2). Default: like the Go SDK.
	HTTPClient *http.Client
	// OnMessage receives the service's messages with the Client they came
	// on, one at a time and in order, on a goroutine of its own (it may
	// call c.Call). It may run before Dial has returned.
	OnMessage func(c *Client, f *Frame)
	Logger    *slog.Logger
}

// Frame is a JSON frame from the service.
type Frame struct {
	Action       string
	RequestID    string
	StatusCode   int
	ErrorMessage string
	// Raw is the whole frame.
	Raw json.RawMessage
}

// Decode decodes the frame into v.
func (f *Frame) Decode(v any) error { return json.Unmarshal(f.Raw, v) }

// Fields returns the frame as a generic map.
func (f *Frame) Fields() map[string]any {
	var m map[string]any
	json.Unmarshal(f.Raw, &m)
	return m
}

// StatusError is a reply whose StatusCode is not 200.
type StatusError struct {
	Action     string
	StatusCode int
	Message    string
}

func (e *StatusError) Error() string {
	return fmt.Sprintf("%s: status %d: %s", e.Action, e.StatusCode, e.Message)
}

// HandshakeError is a refused WebSocket handshake.
type HandshakeError struct {
	StatusCode int
	Body       string
	Err        error
}

func (e *HandshakeError) Error() string {
	return fmt.Sprintf("handshake refused with HTTP %d: %s", e.StatusCode, e.Body)
}

func (e *HandshakeError) Unwrap() error { return e.Err }

// ErrClosed is returned by calls on a connection that has ended.
var ErrClosed = errors.New("sdkclient: connection closed")

// Client is one WebSocket connection to the SDK endpoint.
type Client struct {
	ws   *websocket.Conn
	opts Options
	log  *slog.Logger

	mu      sync.Mutex
	pending map[string]chan *Frame
	dropped int
	err     error // why the connection ended
	done    chan struct{}

	queueMu  sync.Mutex // guards backlog, the messages for OnMessage
	backlog  []*Frame
	dispatch chan struct{}
}

// Dial connects to baseURL (ws:// or wss://) with query appended, as the
// SDK's InitSDK does. A refused handshake is a *HandshakeError.
func Dial(ctx context.Context, baseURL string, query url.Values, opts Options) (*Client, error) {
	u, err := url.Parse(baseURL)
	if err != nil {
		return nil, err
	}
	u.RawQuery = query.Encode()
	return DialURL(ctx, u.String(), opts)
}

// DialURL connects to a complete URL, query included, exactly as given
// (for tests of parameter order and encoding).
func DialURL(ctx context.Context, rawURL string, opts Options) (*Client, error) {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.HTTPClient == nil {
		opts.HTTPClient = defaultHTTPClient
	}
	ws, resp, err := websocket.Dial(ctx, rawURL, &websocket.DialOptions{HTTPClient: opts.HTTPClient,
		HTTPHeader: http.Header{"User-Agent": {UserAgent}}})
	if err != nil {
		if resp != nil && resp.StatusCode != http.StatusSwitchingProtocols {
			var body []byte
			if resp.Body != nil {
				body, _ = io.ReadAll(resp.Body)
			}
			return nil, redact(&HandshakeError{StatusCode: resp.StatusCode, Body: string(body), Err: err}, rawURL)
		}
		return nil, redact(err, rawURL)
	}
	ws.SetReadLimit(1 << 20)
	c := &Client{ws: ws, opts: opts, log: opts.Logger, pending: make(map[string]chan *Frame),
		done: make(chan struct{}), dispatch: make(chan struct{}, 1)}
	go c.readLoop()
	go c.dispatchLoop()
	return c, nil
}

// secretParams are the query parameters of a connection URL that are
// credentials: the auth token, or a signed URL's signature and session
// token.
var secretParams = []string{"Authorization", "X-Amz-Signature", "X-Amz-Security-Token"}

// redactedError is an error whose text quoted a secret of the connection
// URL (the HTTP client's errors quote the URL, query included): the text
// shows REDACTED in its place; the error it wraps is unchanged.
type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }

// redact returns err with every secret parameter of rawURL's query taken
// out of its text, so that a game server that logs a failed connection
// does not log its credentials.
func redact(err error, rawURL string) error {
	_, query, _ := strings.Cut(rawURL, "?")
	q, _ := url.ParseQuery(query) // what parses: a bad pair does not hide the others
	msg := err.Error()
	for _, name := range secretParams {
		for _, v := range q[name] {
			if len(v) < 8 { // "SigV4", or too short to be a credential
				continue
			}
			for _, form := range []string{v, url.QueryEscape(v), url.PathEscape(v)} {
				msg = strings.ReplaceAll(msg, form, "REDACTED")
			}
		}
	}
	if msg == err.Error() {
		return err
	}
	return &redactedError{msg: msg, err: err}
}

// Call sends a request and waits for its reply. A reply with a StatusCode
// other than 200 is returned with a *StatusError.
func (c *Client) Call(ctx context.Context, action string, fields map[string]any) (*Frame, error) {
	id := NewUUID()
	m := make(map[string]any, len(fields)+2)
	for k, v := range fields {
		m[k] = v
	}
	m["Action"], m["RequestId"] = action, id
	data, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	ch := make(chan *Frame, 1)
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		return nil, ErrClosed
	}
	c.pending[id] = ch
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		delete(c.pending, id)
		c.mu.Unlock()
	}()
	if err := c.ws.Write(ctx, websocket.MessageText, data); err != nil {
		return nil, err
	}
	select {
	case f := <-ch:
		if f.StatusCode != http.StatusOK {
			return f, &StatusError{Action: action, StatusCode: f.StatusCode, Message: f.ErrorMessage}
		}
		return f, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-c.done:
		return nil, ErrClosed
	}
}

// SendRaw writes one text frame as it is (for protocol tests).
func (c *Client) SendRaw(ctx context.Context, data []byte) error {
	return c.ws.Write(ctx, websocket.MessageText, data)
}

// SendBinary writes one binary frame (which the service ignores).
func (c *Client) SendBinary(ctx context.Context, data []byte) error {
	return c.ws.Write(ctx, websocket.MessageBinary, data)
}

// Close closes the connection with a close frame carrying code.
func (c *Client) Close(code int, reason string) error {
	err := c.ws.Close(websocket.StatusCode(code), reason)
	<-c.done
	return err
}

// Drop closes the TCP connection without a close frame, as the Go SDK's
// Destroy does (the service sees 1006).
func (c *Client) Drop() error {
	err := c.ws.CloseNow()
	<-c.done
	return err
}

// Done is closed when the connection has ended.
func (c *Client) Done() <-chan struct{} { return c.done }

// CloseCode returns the close code the service sent (-1 if the connection
// broke without one, 0 while it is open).
func (c *Client) CloseCode() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err == nil {
		return 0
	}
	return int(websocket.CloseStatus(c.err))
}

// Dropped returns how many frames the official SDKs would have ignored (an
// error reply nobody waits for, a reply to no pending request, a frame that
// is not JSON).
func (c *Client) Dropped() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.dropped
}

func (c *Client) readLoop() {
	for {
		typ, data, err := c.ws.Read(context.Background())
		if err != nil {
			c.mu.Lock()
			c.err = err
			c.mu.Unlock()
			close(c.done)
			return
		}
		if typ != websocket.MessageText {
			c.drop("binary frame")
			continue
		}
		c.route(data)
	}
}

// route delivers a frame as the official SDKs do.
func (c *Client) route(data []byte) {
	var env struct {
		Action       string
		RequestID    string `json:"RequestId"`
		StatusCode   int
		ErrorMessage string
	}
	if err := json.Unmarshal(data, &env); err != nil {
		c.drop("not JSON: " + err.Error())
		return
	}
	f := &Frame{Action: env.Action, RequestID: env.RequestID, StatusCode: env.StatusCode,
		ErrorMessage: env.ErrorMessage, Raw: append(json.RawMessage(nil), data...)}
	isError := f.StatusCode != http.StatusOK && f.RequestID != ""
	if !isError && ServiceActions[f.Action] {
		c.enqueue(f)
		return
	}
	c.mu.Lock()
	ch, ok := c.pending[f.RequestID]
	if ok {
		delete(c.pending, f.RequestID)
	}
	c.mu.Unlock()
	switch {
	case ok:
		ch <- f
	case isError:
		c.drop(fmt.Sprintf("error reply %d to no pending request (%s)", f.StatusCode, f.Action))
	default:
		c.drop("reply to no pending request (" + f.Action + ")")
	}
}

func (c *Client) drop(why string) {
	c.mu.Lock()
	c.dropped++
	c.mu.Unlock()
	c.log.Warn("sdkclient: frame ignored, as the official SDK ignores it", "why", why)
}

// enqueue hands a service message to the dispatcher (never blocks the
// reader, so OnMessage may make calls).
func (c *Client) enqueue(f *Frame) {
	c.queueMu.Lock()
	c.backlog = append(c.backlog, f)
	c.queueMu.Unlock()
	select {
	case c.dispatch <- struct{}{}:
	default:
	}
}

func (c *Client) dispatchLoop() {
	for {
		closed := false
		select {
		case <-c.dispatch:
		case <-c.done:
			closed = true
		}
		for f := c.next(); f != nil; f = c.next() {
			if c.opts.OnMessage != nil {
				c.opts.OnMessage(c, f)
			}
		}
		if closed { // messages that arrived before the close were delivered
			return
		}
	}
}

func (c *Client) next() *Frame {
	c.queueMu.Lock()
	defer c.queueMu.Unlock()
	if len(c.backlog) == 0 {
		return nil
	}
	f := c.backlog[0]
	c.backlog = c.backlog[1:]
	return f
}

// NewUUID returns a random (version 4) UUID, the SDKs' RequestId format.
func NewUUID() string {
	var b [16]byte
	rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
}

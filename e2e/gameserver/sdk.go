package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hoistgg/hoist/e2e/sdkclient"
)

// sdk keeps the game server's connection to the SDK endpoint the way the
// official Go Server SDK does: one current socket; on a drop (any close
// but 1000/1001) it dials the same URL again with backoff; on
// RefreshConnection it dials the new endpoint with the new token and drops
// the old socket a few seconds later; two request timeouts in a row also
// make it reconnect.
type sdk struct {
	log       *slog.Logger
	onMessage func(*sdkclient.Client, *sdkclient.Frame)
	// callTimeout is SERVICE_CALL_TIMEOUT (default 20 s).
	callTimeout time.Duration
	// reconnectBase is the first wait between connection attempts (the
	// SDK's 8 s); it doubles up to 32 s, for 8 attempts.
	reconnectBase time.Duration
	// disconnectTimeout is how long an old socket lives after a refresh
	// (DISCONNECT_WEBSOCKET_TIMEOUT, default 5 s).
	disconnectTimeout time.Duration
	// forceTLS makes it speak TLS whatever the URL's scheme, as the
	// official C++ Server SDK does (HOIST_TEST_FORCE_TLS).
	forceTLS bool

	processID, hostID, fleetID string

	mu      sync.Mutex
	current *sdkclient.Client
	url     string // of the current socket, reused on reconnects

	destroyed    atomic.Bool
	reconnecting atomic.Bool
	timeouts     atomic.Int32
}

// Go SDK constants this client follows.
const (
	connectAttempts         = 8
	maxReconnectBackoff     = 32 * time.Second
	timeoutsBeforeReconnect = 2
)

// connect opens a socket to endpoint with token (a fresh IdempotencyToken
// each time, as InitSDK and RefreshConnection do) and makes it current;
// an earlier socket is dropped after disconnectTimeout.
func (s *sdk) connect(endpoint, token string) error {
	u, err := url.Parse(endpoint)
	if err != nil {
		return err
	}
	u.RawQuery = sdkclient.Query(s.processID, s.hostID, s.fleetID, token).Encode()
	if s.forceTLS && u.Scheme == "ws" {
		u.Scheme = "wss"
	}
	c, err := s.dialWithRetry(u.String())
	if err != nil {
		return err
	}
	s.mu.Lock()
	old := s.current
	s.current, s.url = c, u.String()
	s.mu.Unlock()
	go s.watch(c)
	if old != nil {
		go func() {
			time.Sleep(s.disconnectTimeout)
			s.log.Debug("closing the previous socket")
			old.Drop() // the SDK closes it without a close frame
		}()
	}
	return nil
}

// dialWithRetry dials rawURL: at once, then after 8, 16, 32, 32 ... s.
func (s *sdk) dialWithRetry(rawURL string) (*sdkclient.Client, error) {
	wait := s.reconnectBase
	var err error
	for attempt := 1; attempt <= connectAttempts; attempt++ {
		if s.destroyed.Load() {
			return nil, errors.New("the SDK was destroyed")
		}
		ctx, cancel := context.WithTimeout(context.Background(), s.callTimeout)
		var c *sdkclient.Client
		c, err = sdkclient.DialURL(ctx, rawURL, sdkclient.Options{OnMessage: s.onMessage, Logger: s.log})
		cancel()
		if err == nil {
			s.log.Info("connected to the SDK endpoint", "attempt", attempt)
			return c, nil
		}
		s.log.Warn("connecting to the SDK endpoint failed", "attempt", attempt, "err", err)
		if attempt < connectAttempts {
			time.Sleep(wait)
			wait = min(2*wait, maxReconnectBackoff)
		}
	}
	return nil, fmt.Errorf("connecting to the SDK endpoint failed %d times: %w", connectAttempts, err)
}

// watch reconnects when socket c, still the current one, ends other than
// with a normal close.
func (s *sdk) watch(c *sdkclient.Client) {
	<-c.Done()
	s.mu.Lock()
	isCurrent := s.current == c
	s.mu.Unlock()
	code := c.CloseCode()
	switch {
	case !isCurrent || s.destroyed.Load():
		return
	case code == 1000 || code == 1001:
		s.log.Warn("the service closed the connection normally; not reconnecting", "code", code)
		return
	}
	s.log.Warn("connection lost; reconnecting", "code", code)
	s.reconnect()
}

// reconnect dials the current URL again (one reconnect at a time).
func (s *sdk) reconnect() {
	if !s.reconnecting.CompareAndSwap(false, true) {
		return
	}
	defer s.reconnecting.Store(false)
	s.mu.Lock()
	rawURL := s.url
	s.mu.Unlock()
	c, err := s.dialWithRetry(rawURL)
	if err != nil {
		s.log.Error("reconnecting failed", "err", err)
		return
	}
	s.mu.Lock()
	old := s.current
	s.current = c
	s.mu.Unlock()
	s.timeouts.Store(0)
	go s.watch(c)
	if old != nil {
		old.Drop()
	}
}

// call sends a request on the current socket and waits for its reply for
// timeout (callTimeout when 0).
func (s *sdk) call(action string, fields map[string]any, timeout time.Duration) (*sdkclient.Frame, error) {
	if timeout == 0 {
		timeout = s.callTimeout
	}
	s.mu.Lock()
	c := s.current
	s.mu.Unlock()
	if c == nil || s.destroyed.Load() {
		return nil, errors.New("the SDK is not connected")
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	f, err := c.Call(ctx, action, fields)
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		if s.timeouts.Add(1) >= timeoutsBeforeReconnect {
			s.log.Warn("requests timed out twice in a row; reconnecting")
			go s.reconnect()
		}
	case f != nil:
		s.timeouts.Store(0)
	}
	return f, err
}

// destroy closes the socket without a close frame and stops reconnecting,
// as the SDK's Destroy does.
func (s *sdk) destroy() {
	s.destroyed.Store(true)
	s.mu.Lock()
	c := s.current
	s.mu.Unlock()
	if c != nil {
		c.Drop()
	}
}

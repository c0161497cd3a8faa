// Package sdkconntest has fakes for testing the SDK endpoint and game
// servers without the rest of Hoist: a recording hosting.ProcessAPI and a
// static hosting.TokenVerifier, and Start, which serves an sdkconn.Server
// with them on a loopback port.
package sdkconntest

import (
	"context"
	"crypto/subtle"
	"crypto/tls"
	"errors"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hoistgg/hoist/internal/api"
	"github.com/hoistgg/hoist/internal/hosting"
	"github.com/hoistgg/hoist/internal/sdkconn"
)

// Call is one recorded ProcessAPI call. Only the fields of its Method are
// set.
type Call struct {
	Method          string
	Conn            hosting.Conn
	Normal          bool // Disconnected
	Port            int32
	LogPaths        []string
	Healthy         bool
	GameSessionID   string
	PlayerSessionID string
	Policy          api.PlayerSessionCreationPolicy
	Describe        hosting.DescribePlayerSessionsRequest
	RoleArn         string
	RoleSessionName string
}

// API is a hosting.ProcessAPI that records every call and answers with
// Hook (nil result, nil error without one). It is safe for concurrent use.
type API struct {
	// Hook answers calls; it may block until ctx ends (to test timeouts)
	// and is called without API's lock held.
	Hook func(ctx context.Context, c Call) (map[string]any, error)

	mu      sync.Mutex
	calls   []Call
	changed chan struct{}
}

var _ hosting.ProcessAPI = (*API)(nil)

func (a *API) record(ctx context.Context, c Call) (map[string]any, error) {
	a.mu.Lock()
	a.calls = append(a.calls, c)
	if a.changed != nil {
		close(a.changed)
		a.changed = nil
	}
	hook := a.Hook
	a.mu.Unlock()
	if hook == nil {
		return nil, nil
	}
	return hook(ctx, c)
}

// Calls returns the calls so far.
func (a *API) Calls() []Call {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]Call(nil), a.calls...)
}

// Count returns how many calls of method were made.
func (a *API) Count(method string) int {
	n := 0
	for _, c := range a.Calls() {
		if c.Method == method {
			n++
		}
	}
	return n
}

// WaitFor waits until a call matching pred has been made (looking at past
// calls too) and returns the first such call; after timeout it fails the
// test.
func (a *API) WaitFor(t testing.TB, timeout time.Duration, pred func(Call) bool) Call {
	t.Helper()
	return a.waitUntil(t, timeout, func(calls []Call) (Call, bool) {
		for _, c := range calls {
			if pred(c) {
				return c, true
			}
		}
		return Call{}, false
	})
}

// WaitMethod waits for the n-th (1-based) call of method by process pid
// ("" for any process) and returns it.
func (a *API) WaitMethod(t testing.TB, timeout time.Duration, method, pid string, n int) Call {
	t.Helper()
	return a.waitUntil(t, timeout, func(calls []Call) (Call, bool) {
		seen := 0
		for _, c := range calls {
			if c.Method == method && (pid == "" || c.Conn.ProcessID == pid) {
				if seen++; seen == n {
					return c, true
				}
			}
		}
		return Call{}, false
	})
}

// waitUntil waits until cond holds for the calls so far.
func (a *API) waitUntil(t testing.TB, timeout time.Duration, cond func([]Call) (Call, bool)) Call {
	t.Helper()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		a.mu.Lock()
		c, ok := cond(a.calls)
		if !ok && a.changed == nil {
			a.changed = make(chan struct{})
		}
		ch := a.changed
		a.mu.Unlock()
		if ok {
			return c
		}
		select {
		case <-ch:
		case <-deadline.C:
			t.Fatalf("no matching ProcessAPI call within %v; calls: %s", timeout, a.summary())
			return Call{}
		}
	}
}

func (a *API) summary() string {
	var b strings.Builder
	for _, c := range a.Calls() {
		b.WriteString(c.Method + "(" + c.Conn.ProcessID + ") ")
	}
	return b.String()
}

func (a *API) Connected(ctx context.Context, c hosting.Conn) error {
	_, err := a.record(ctx, Call{Method: "Connected", Conn: c})
	return err
}

func (a *API) Disconnected(ctx context.Context, c hosting.Conn, normal bool) {
	a.record(ctx, Call{Method: "Disconnected", Conn: c, Normal: normal})
}

func (a *API) ProcessReady(ctx context.Context, c hosting.Conn, port int32, logPaths []string) error {
	_, err := a.record(ctx, Call{Method: "ProcessReady", Conn: c, Port: port, LogPaths: logPaths})
	return err
}

func (a *API) Heartbeat(ctx context.Context, c hosting.Conn, healthy bool) error {
	_, err := a.record(ctx, Call{Method: "Heartbeat", Conn: c, Healthy: healthy})
	return err
}

func (a *API) ActivateGameSession(ctx context.Context, c hosting.Conn, gs string) error {
	_, err := a.record(ctx, Call{Method: "ActivateGameSession", Conn: c, GameSessionID: gs})
	return err
}

func (a *API) AcceptPlayerSession(ctx context.Context, c hosting.Conn, gs, ps string) error {
	_, err := a.record(ctx, Call{Method: "AcceptPlayerSession", Conn: c, GameSessionID: gs, PlayerSessionID: ps})
	return err
}

func (a *API) RemovePlayerSession(ctx context.Context, c hosting.Conn, gs, ps string) error {
	_, err := a.record(ctx, Call{Method: "RemovePlayerSession", Conn: c, GameSessionID: gs, PlayerSessionID: ps})
	return err
}

func (a *API) UpdatePlayerSessionCreationPolicy(ctx context.Context, c hosting.Conn, gs string, p api.PlayerSessionCreationPolicy) error {
	_, err := a.record(ctx, Call{Method: "UpdatePlayerSessionCreationPolicy", Conn: c, GameSessionID: gs, Policy: p})
	return err
}

func (a *API) DescribePlayerSessions(ctx context.Context, c hosting.Conn, req hosting.DescribePlayerSessionsRequest) (map[string]any, error) {
	return a.record(ctx, Call{Method: "DescribePlayerSessions", Conn: c, Describe: req})
}

func (a *API) ProcessEnding(ctx context.Context, c hosting.Conn) error {
	_, err := a.record(ctx, Call{Method: "ProcessEnding", Conn: c})
	return err
}

func (a *API) GetComputeCertificate(ctx context.Context, c hosting.Conn) (map[string]any, error) {
	return a.record(ctx, Call{Method: "GetComputeCertificate", Conn: c})
}

func (a *API) GetFleetRoleCredentials(ctx context.Context, c hosting.Conn, role, name string) (map[string]any, error) {
	return a.record(ctx, Call{Method: "GetFleetRoleCredentials", Conn: c, RoleArn: role, RoleSessionName: name})
}

func (a *API) CheckGameSessionHost(ctx context.Context, c hosting.Conn, gameSessionID string) error {
	_, err := a.record(ctx, Call{Method: "CheckGameSessionHost", Conn: c, GameSessionID: gameSessionID})
	return err
}

// Binding is what a token was issued for.
type Binding struct{ FleetID, ComputeName string }

// Tokens is a hosting.TokenVerifier over a fixed set of tokens. It is safe
// for concurrent use while nobody adds to it.
type Tokens map[string]Binding

// ErrBadToken is what Tokens answers for an unknown token.
var ErrBadToken = errors.New("sdkconntest: unknown token")

func (t Tokens) VerifyComputeToken(_ context.Context, token string) (string, string, error) {
	var found Binding
	ok := 0
	for k, b := range t {
		if subtle.ConstantTimeCompare([]byte(k), []byte(token)) == 1 {
			found, ok = b, 1
		}
	}
	if ok == 0 {
		return "", "", ErrBadToken
	}
	return found.FleetID, found.ComputeName, nil
}

// Endpoint is an sdkconn.Server with fakes, served on 127.0.0.1.
type Endpoint struct {
	API    *API
	Tokens Tokens
	Server *sdkconn.Server
	HTTP   *httptest.Server
	// URL is the ws:// (wss:// with TLS) URL of /sdk.
	URL string
}

// Start serves an sdkconn.Server built from cfg (API and Tokens default to
// fresh fakes; set cfg.API to an *API to keep a handle on it) at /sdk and
// /sdk/ on a loopback port, and stops it when the test ends.
func Start(t testing.TB, cfg sdkconn.Config, tokens Tokens) *Endpoint {
	t.Helper()
	return start(t, cfg, tokens, nil)
}

// StartTLS is Start on a TLS listener presenting cert; URL is wss://.
func StartTLS(t testing.TB, cfg sdkconn.Config, tokens Tokens, cert tls.Certificate) *Endpoint {
	t.Helper()
	return start(t, cfg, tokens, &cert)
}

func start(t testing.TB, cfg sdkconn.Config, tokens Tokens, cert *tls.Certificate) *Endpoint {
	t.Helper()
	fake, _ := cfg.API.(*API)
	if fake == nil && cfg.API == nil {
		fake = &API{}
		cfg.API = fake
	}
	if tokens == nil {
		tokens = Tokens{}
	}
	if cfg.Tokens == nil {
		cfg.Tokens = tokens
	}
	srv := sdkconn.New(cfg)
	mux := http.NewServeMux()
	mux.Handle("/sdk", srv)
	mux.Handle("/sdk/", srv)
	hs := httptest.NewUnstartedServer(mux)          // listens on 127.0.0.1
	hs.Config.ErrorLog = log.New(io.Discard, "", 0) // refused TLS handshakes are expected in tests
	if cert != nil {
		hs.TLS = &tls.Config{Certificates: []tls.Certificate{*cert}}
		hs.StartTLS()
	} else {
		hs.Start()
	}
	e := &Endpoint{API: fake, Tokens: tokens, Server: srv, HTTP: hs,
		URL: "ws" + strings.TrimPrefix(hs.URL, "http") + "/sdk"}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
		hs.Close()
	})
	return e
}

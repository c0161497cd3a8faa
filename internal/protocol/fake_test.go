package protocol

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hoistgg/hoist/internal/api"
)

// Times of the sample game server: one with a fraction of a second (the
// seed's sample response), one without.
var (
	registered = time.Unix(1580218197, 293e6).UTC()
	claimed    = time.Unix(1580218200, 0).UTC()
)

func sampleGameServer(id string) *api.GameServer {
	return &api.GameServer{
		ClaimStatus:         api.GameServerClaimStatusClaimed,
		ConnectionInfo:      api.String("127.0.0.1:7777"),
		GameServerGroupName: api.String("group-1"),
		GameServerId:        api.String(id),
		InstanceId:          api.String("i-1234567890abcdef0"),
		LastClaimTime:       api.Time(claimed),
		RegistrationTime:    api.Time(registered),
		UtilizationStatus:   api.GameServerUtilizationStatusAvailable,
	}
}

// ctxKey carries a value from the fake authenticator to the fake service.
type ctxKey struct{}

// fakeService answers a few operations with fixed data and errors; the
// rest are not implemented.
type fakeService struct {
	api.Unimplemented
}

func (fakeService) DescribeGameServer(ctx context.Context, in *api.DescribeGameServerInput) (*api.DescribeGameServerOutput, error) {
	switch id := api.ToString(in.GameServerId); id {
	case "gs-panic":
		panic("the game server table is gone")
	case "gs-internal":
		return nil, errors.New("database is on fire: secret detail")
	case "gs-wrapped":
		return nil, fmt.Errorf("look up %s: %w", id, api.NewNotFoundException("game server %s does not exist", id))
	case "gs-typed-nil":
		var e *api.ConflictException
		return nil, e
	case "gs-ctx":
		gs := sampleGameServer(id)
		gs.GameServerData = api.String(fmt.Sprintf("%v|%s", ctx.Value(ctxKey{}), RequestID(ctx)))
		return &api.DescribeGameServerOutput{GameServer: gs}, nil
	case "gs-nil-output":
		return nil, nil // answered as an empty output
	default:
		if strings.HasPrefix(id, "gs-") && id != "gs-missing" {
			return &api.DescribeGameServerOutput{GameServer: sampleGameServer(id)}, nil
		}
		return nil, api.NewNotFoundException("game server %s does not exist", id)
	}
}

func (fakeService) ClaimGameServer(ctx context.Context, in *api.ClaimGameServerInput) (*api.ClaimGameServerOutput, error) {
	return nil, api.NewConflictException("game server %s is already claimed", api.ToString(in.GameServerId))
}

func (fakeService) ListGameServers(ctx context.Context, in *api.ListGameServersInput) (*api.ListGameServersOutput, error) {
	return &api.ListGameServersOutput{
		GameServers: []api.GameServer{*sampleGameServer("gs-1"), *sampleGameServer("gs-2")},
		NextToken:   api.String("token-2"),
	}, nil
}

func (fakeService) DeleteAlias(ctx context.Context, in *api.DeleteAliasInput) error { return nil }

// DescribeFleetEvents echoes StartTime and Limit so tests see how request
// timestamps and integers decode.
func (fakeService) DescribeFleetEvents(ctx context.Context, in *api.DescribeFleetEventsInput) (*api.DescribeFleetEventsOutput, error) {
	ev := api.Event{EventId: api.String("ev-1"), EventTime: in.StartTime}
	if in.Limit != nil {
		ev.Count = api.Int64(int64(*in.Limit))
	}
	return &api.DescribeFleetEventsOutput{Events: []api.Event{ev}}, nil
}

// DescribeScalingPolicies returns a NaN threshold, which JSON cannot encode.
func (fakeService) DescribeScalingPolicies(ctx context.Context, in *api.DescribeScalingPoliciesInput) (*api.DescribeScalingPoliciesOutput, error) {
	return &api.DescribeScalingPoliciesOutput{ScalingPolicies: []api.ScalingPolicy{{Name: api.String("p"), Threshold: api.Float64(math.NaN())}}}, nil
}

// CreateScript reports the size of the ZipFile blob it received.
func (fakeService) CreateScript(ctx context.Context, in *api.CreateScriptInput) (*api.CreateScriptOutput, error) {
	return &api.CreateScriptOutput{Script: &api.Script{
		Name:       in.Name,
		SizeOnDisk: api.Int64(int64(len(in.ZipFile))),
		Version:    api.String(fmt.Sprintf("%x", in.ZipFile[:min(len(in.ZipFile), 8)])),
	}}, nil
}

// authError is what a SigV4 verifier answers: an api.Error of its own.
type authError struct{}

func (authError) Error() string     { return "UnrecognizedClientException: bad key" }
func (authError) ErrorCode() string { return "UnrecognizedClientException" }
func (authError) ErrorMessage() string {
	return "The security token included in the request is invalid."
}
func (authError) HTTPStatus() int { return 403 }

// fakeAuth accepts requests whose Authorization header is "ok" (and, with
// a nil context, "nil-context"), rejects "bad" with authError, fails
// "broken" with a plain error and panics on "panic".
type fakeAuth struct{}

func (fakeAuth) Authenticate(r *http.Request, body []byte) (context.Context, error) {
	switch r.Header.Get("Authorization") {
	case "ok":
		return context.WithValue(r.Context(), ctxKey{}, fmt.Sprintf("caller(%d bytes)", len(body))), nil
	case "bad":
		return nil, fmt.Errorf("verify: %w", authError{})
	case "broken":
		return nil, errors.New("key store unavailable")
	case "panic":
		panic("authenticator bug")
	case "nil-context":
		return nil, nil
	}
	return r.Context(), nil
}

// logBuffer collects log output for assertions; safe for concurrent use.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// testServer is the handler over fakeService on a loopback port.
type testServer struct {
	URL  string
	logs *logBuffer
}

func newTestServer(t *testing.T, opts Options) *testServer {
	t.Helper()
	logs := &logBuffer{}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	srv := httptest.NewServer(NewHandler(fakeService{}, opts)) // listens on 127.0.0.1
	t.Cleanup(srv.Close)
	return &testServer{URL: srv.URL, logs: logs}
}

// rawResponse is a response read in full.
type rawResponse struct {
	Status int
	Header http.Header
	Body   []byte
}

// do sends one raw request. header values replace defaults; a nil body
// sends none.
func (s *testServer) do(t *testing.T, method, path string, header map[string]string, body io.Reader) rawResponse {
	t.Helper()
	req, err := http.NewRequest(method, s.URL+path, body)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header[k] = []string{v} // exact names, as sent by a client
	}
	resp, err := loopbackClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return rawResponse{Status: resp.StatusCode, Header: resp.Header, Body: b}
}

// loopbackClient never uses a proxy.
var loopbackClient = &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{Proxy: nil}}

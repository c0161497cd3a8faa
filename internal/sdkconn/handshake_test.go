package sdkconn_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hoistgg/hoist/e2e/sdkclient"
	"github.com/hoistgg/hoist/internal/hosting"
	"github.com/hoistgg/hoist/internal/pki"
	"github.com/hoistgg/hoist/internal/sdkconn"
	"github.com/hoistgg/hoist/internal/sdkconn/sdkconntest"
)

const (
	token      = "0123456789abcdef0123456789abcdef"
	otherToken = "fedcba9876543210fedcba9876543210"
	fleetID    = "fleet-1a2b3c"
	computeID  = "i-0123456789"
	wait       = 10 * time.Second
)

// lockedBuffer is a log sink safe for concurrent writes.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// start serves an endpoint with two tokens: token for fleetID/computeID and
// otherToken for another fleet. Logs go to the returned buffer.
func start(t testing.TB, cfg sdkconn.Config) (*sdkconntest.Endpoint, *lockedBuffer) {
	t.Helper()
	logs := &lockedBuffer{}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	e := sdkconntest.Start(t, cfg, sdkconntest.Tokens{
		token:      {FleetID: fleetID, ComputeName: computeID},
		otherToken: {FleetID: "fleet-other", ComputeName: computeID},
	})
	return e, logs
}

func dial(t testing.TB, e *sdkconntest.Endpoint, pid string, opts sdkclient.Options) *sdkclient.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	c, err := sdkclient.Dial(ctx, e.URL, sdkclient.Query(pid, computeID, fleetID, token), opts)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	t.Cleanup(func() { c.Drop() })
	return c
}

// fakeSigner accepts a signed URL whose X-Amz-Signature is "good".
type fakeSigner struct{}

func (fakeSigner) VerifySignedURL(_ context.Context, q url.Values, _ time.Time) (string, string, error) {
	if q.Get("X-Amz-Signature") != "good" {
		return "", "", errors.New("bad signature")
	}
	return fleetID, computeID, nil
}

func TestHandshake(t *testing.T) {
	good := sdkclient.Query("proc-1", computeID, fleetID, token)
	with := func(k, v string) url.Values {
		q := url.Values{}
		for kk, vv := range good {
			q[kk] = append([]string(nil), vv...)
		}
		if v == "" {
			q.Del(k)
		} else {
			q.Set(k, v)
		}
		return q
	}
	signed := with("Authorization", "SigV4")
	signed.Set("X-Amz-Signature", "good")
	badSigned := with("Authorization", "SigV4")
	badSigned.Set("X-Amz-Signature", "bad")
	dup := with("pID", "proc-1")
	dup.Add("pID", "proc-2")
	tests := map[string]struct {
		query      url.Values
		path       string
		signer     sdkconn.SignedURLVerifier
		connected  error
		wantStatus int // 0: accepted
	}{
		"token":                   {query: good},
		"trailing slash":          {query: good, path: "/"},
		"unknown token":           {query: with("Authorization", "nope"), wantStatus: 403},
		"no token":                {query: with("Authorization", ""), wantStatus: 403},
		"token of another fleet":  {query: with("Authorization", otherToken), wantStatus: 403},
		"another FleetId":         {query: with("FleetId", "fleet-other"), wantStatus: 403},
		"another ComputeId":       {query: with("ComputeId", "i-other"), wantStatus: 403},
		"no pID":                  {query: with("pID", ""), wantStatus: 400},
		"no FleetId":              {query: with("FleetId", ""), wantStatus: 400},
		"pID twice":               {query: dup, wantStatus: 400},
		"control character":       {query: with("pID", "a\nb"), wantStatus: 400},
		"SigV4 without verifier":  {query: signed, wantStatus: 403},
		"SigV4":                   {query: signed, signer: fakeSigner{}},
		"SigV4 bad signature":     {query: badSigned, signer: fakeSigner{}, wantStatus: 403},
		"Connected refuses":       {query: good, connected: &hosting.SDKError{Status: 403, Message: "in use"}, wantStatus: 403},
		"Connected fails":         {query: good, connected: errors.New("store down"), wantStatus: 500},
		"Connected says conflict": {query: good, connected: &hosting.SDKError{Status: 409, Message: "x"}, wantStatus: 409},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			api := &sdkconntest.API{Hook: func(_ context.Context, c sdkconntest.Call) (map[string]any, error) {
				if c.Method == "Connected" {
					return nil, tc.connected
				}
				return nil, nil
			}}
			e, logs := start(t, sdkconn.Config{API: api, SignedURLs: tc.signer})
			ctx, cancel := context.WithTimeout(context.Background(), wait)
			defer cancel()
			c, err := sdkclient.Dial(ctx, e.URL+tc.path, tc.query, sdkclient.Options{})
			if tc.wantStatus == 0 {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				got := api.WaitMethod(t, wait, "Connected", "proc-1", 1)
				want := hosting.Conn{ConnID: got.Conn.ConnID, ProcessID: "proc-1", FleetID: fleetID,
					ComputeName: computeID, SDKVersion: sdkclient.SDKVersion, SDKLanguage: sdkclient.SDKLanguage}
				if got.Conn != want || got.Conn.ConnID == "" {
					t.Errorf("Connected(%+v), want %+v", got.Conn, want)
				}
				c.Close(1000, "")
				return
			}
			var he *sdkclient.HandshakeError
			if !errors.As(err, &he) || he.StatusCode != tc.wantStatus {
				t.Fatalf("err = %v, want HTTP %d", err, tc.wantStatus)
			}
			if tc.connected == nil && api.Count("Connected") != 0 {
				t.Error("Connected was called for a refused handshake")
			}
			if n := e.Server.Connections(); n != 0 {
				t.Errorf("%d connections left registered", n)
			}
			for _, secret := range []string{token, otherToken} {
				if strings.Contains(logs.String(), secret) {
					t.Fatal("a token was logged")
				}
			}
		})
	}
}

// TestHandshakeQueryAnyOrder sends the parameters in the C# SDK's style:
// another order and values not URL-encoded.
func TestHandshakeQueryAnyOrder(t *testing.T) {
	e, _ := start(t, sdkconn.Config{})
	raw := "Authorization=" + token + "&IdempotencyToken=abc&FleetId=" + fleetID + "&sdkLanguage=CSharp" +
		"&ComputeId=" + computeID + "&sdkVersion=5.2.0&pID=proc-cs"
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	c, err := sdkclient.DialURL(ctx, e.URL+"/?"+raw, sdkclient.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Drop()
	got := e.API.WaitMethod(t, wait, "Connected", "proc-cs", 1)
	if got.Conn.SDKLanguage != "CSharp" || got.Conn.SDKVersion != "5.2.0" {
		t.Errorf("Conn %+v", got.Conn)
	}
}

func TestNotAWebSocket(t *testing.T) {
	e, _ := start(t, sdkconn.Config{})
	resp, err := http.Get(e.HTTP.URL + "/sdk?" + sdkclient.Query("p", computeID, fleetID, token).Encode())
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusUpgradeRequired || !strings.Contains(string(body), "WebSocket") {
		t.Fatalf("HTTP %d %s", resp.StatusCode, body)
	}
	if e.API.Count("Connected") != 0 {
		t.Error("Connected was called")
	}
}

// TestWSS serves the endpoint over TLS with a certificate from Hoist's CA
// and connects with a client that trusts only that CA.
func TestWSS(t *testing.T) {
	ca, err := pki.LoadOrCreateCA(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	cert, err := ca.IssueServerCert(nil)
	if err != nil {
		t.Fatal(err)
	}
	e := sdkconntest.StartTLS(t, sdkconn.Config{}, sdkconntest.Tokens{token: {FleetID: fleetID, ComputeName: computeID}}, cert)
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: ca.Pool()}}}
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	for _, u := range []string{e.URL, strings.Replace(e.URL, "127.0.0.1", "localhost", 1)} {
		c, err := sdkclient.Dial(ctx, u, sdkclient.Query("proc-1", computeID, fleetID, token), sdkclient.Options{HTTPClient: client})
		if err != nil {
			t.Fatalf("%s: %v", u, err)
		}
		reply, err := c.Call(ctx, "HeartbeatServerProcess", map[string]any{"HealthStatus": true})
		checkReply(t, reply, err, "HeartbeatServerProcess", 200, "")
		c.Close(1000, "")
	}
	// A client that does not trust the CA cannot connect.
	_, err = sdkclient.Dial(ctx, e.URL, sdkclient.Query("proc-1", computeID, fleetID, token),
		sdkclient.Options{HTTPClient: &http.Client{Transport: &http.Transport{}}})
	if err == nil {
		t.Fatal("connected without trusting the CA")
	}
}

// launched is a ProcessVerifier that knows one launched process.
type launched struct{ err error }

func (l launched) VerifyProcess(_ context.Context, f, c, pid string) error {
	if l.err != nil {
		return l.err
	}
	if f != fleetID || c != computeID || pid != "proc-launched" {
		return &hosting.SDKError{Status: 403, Message: "not launched here"}
	}
	return nil
}

// TestManagedProcessIDs: with Config.Processes, a connection with a valid
// token is refused (403) when its pID is not one the verifier accepts (a
// process Hoist did not launch on that instance), before Connected; a
// failing verifier is a 500.
func TestManagedProcessIDs(t *testing.T) {
	for name, tc := range map[string]struct {
		pid  string
		err  error
		want int
	}{
		"launched":        {pid: "proc-launched"},
		"foreign":         {pid: "proc-foreign", want: 403},
		"verifier broken": {pid: "proc-launched", err: errors.New("store down"), want: 500},
	} {
		t.Run(name, func(t *testing.T) {
			api := &sdkconntest.API{}
			e, _ := start(t, sdkconn.Config{API: api, Processes: launched{tc.err}})
			ctx, cancel := context.WithTimeout(context.Background(), wait)
			defer cancel()
			c, err := sdkclient.Dial(ctx, e.URL, sdkclient.Query(tc.pid, computeID, fleetID, token), sdkclient.Options{})
			if tc.want == 0 {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				api.WaitMethod(t, wait, "Connected", tc.pid, 1)
				c.Close(1000, "")
				return
			}
			var he *sdkclient.HandshakeError
			if !errors.As(err, &he) || he.StatusCode != tc.want {
				t.Fatalf("err = %v, want HTTP %d", err, tc.want)
			}
			if api.Count("Connected") != 0 {
				t.Error("Connected was called for a refused process")
			}
		})
	}
}

//go:build linux

package hosts

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	gl "github.com/aws/aws-sdk-go-v2/service/gamelift"
	"github.com/aws/aws-sdk-go-v2/service/gamelift/types"
	"github.com/coder/websocket"

	"github.com/hoistgg/hoist/internal/hosts/hostproto"
	"github.com/hoistgg/hoist/internal/ids"
	"github.com/hoistgg/hoist/internal/wsrpc"
)

// fakeAgent speaks the host protocol by hand, as a compromised host could.
type fakeAgent struct {
	e      *env
	client *http.Client
	hostID string
	secret string
}

// newFakeAgent enrols a host with a fresh token.
func (e *env) newFakeAgent(t *testing.T, pool string) *fakeAgent {
	t.Helper()
	caPEM, err := os.ReadFile(filepath.Join(e.h.DataDir, "pki", "ca.pem"))
	if err != nil {
		t.Fatal(err)
	}
	pool509 := x509.NewCertPool()
	pool509.AppendCertsFromPEM(caPEM)
	fa := &fakeAgent{e: e, client: &http.Client{Timeout: 30 * time.Second,
		Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool509}, Proxy: nil}}}
	req := hostproto.EnrolRequest{Token: e.token(t, pool), Pool: pool, Location: "us-west-2", Address: "127.0.0.9",
		Instances: map[string]int{"c5.large": 1}}
	body, _ := json.Marshal(req)
	resp, err := fa.client.Post(e.h.TLSURL+hostproto.PathEnrol, "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out hostproto.EnrolReply
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || resp.StatusCode != 200 {
		t.Fatalf("enrolling: %s %v", resp.Status, err)
	}
	fa.hostID, fa.secret = out.HostId, out.HostSecret
	return fa
}

// dial opens the host protocol's WebSocket with a credential.
func (fa *fakeAgent) dial(ctx context.Context, secret string) (*websocket.Conn, *http.Response, error) {
	hdr := http.Header{}
	hostproto.SetCredential(hdr, fa.hostID, secret)
	return websocket.Dial(ctx, "wss"+strings.TrimPrefix(fa.e.h.TLSURL, "https")+hostproto.PathConnect,
		&websocket.DialOptions{HTTPHeader: hdr, HTTPClient: fa.client})
}

// connect connects and serves the connection with a peer that answers
// Hoist's messages OK.
func (fa *fakeAgent) connect(t *testing.T) *wsrpc.Peer {
	t.Helper()
	ws, _, err := fa.dial(context.Background(), fa.secret)
	if err != nil {
		t.Fatal(err)
	}
	p := wsrpc.New(ws, wsrpc.Config{NewID: ids.UUID, MaxMessageBytes: 4 << 20,
		Handler: func(context.Context, *wsrpc.Request) (any, error) { return nil, nil }})
	go func() { _ = p.Run(context.Background()) }()
	t.Cleanup(func() { p.Close(websocket.StatusNormalClosure, "") })
	return p
}

// httpDo makes a request with the fake host's credential and returns the
// status code.
func (fa *fakeAgent) httpDo(t *testing.T, method, path string, body io.Reader) int {
	t.Helper()
	req, err := http.NewRequest(method, fa.e.h.TLSURL+path, body)
	if err != nil {
		t.Fatal(err)
	}
	hostproto.SetCredential(req.Header, fa.hostID, fa.secret)
	resp, err := fa.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// status returns the StatusCode of a wsrpc error (200 for none).
func status(err error) int {
	var we *wsrpc.Error
	if errors.As(err, &we) {
		return we.Status
	}
	if err != nil {
		return -1
	}
	return 200
}

// victimProcess returns the ID of a process running on the victim's
// instance (from its output files in the agent's state directory).
func victimProcess(t *testing.T, victim *agent, fleetID, instanceID string) string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(victim.dir, "instances", fleetID, instanceID, "logs", "process-*.log"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no process output on the victim's instance: %v", err)
	}
	return strings.TrimSuffix(filepath.Base(files[0]), ".log")
}

// hostileAgent enrols a host that then tries to act on another host's
// instance and process (victim runs fleet's instance hosting game
// session s), to download a build no instance of it runs, to upload
// another host's process output, and to send frames past the bound: each
// is refused and the victim's game session carries on.
func (e *env) hostileAgent(t *testing.T, fleetID string, victim *agent, s session) {
	fa := e.newFakeAgent(t, "hostile")
	if _, resp, err := fa.dial(context.Background(), strings.Repeat("0", 64)); err == nil || resp == nil || resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("a wrong host secret: %v, want 401 before the upgrade", err)
	}
	p := fa.connect(t)
	ctx := context.Background()
	if err := p.Call(ctx, hostproto.ActionProcessExited, hostproto.ProcessExited{InstanceId: "i-0", ProcessId: "x"}, nil); status(err) != 412 {
		t.Fatalf("a report before Hello: %v, want 412", err)
	}
	if err := p.Call(ctx, hostproto.ActionHello, hostproto.Hello{ProtocolVersion: 99}, nil); status(err) != 400 {
		t.Fatalf("Hello with protocol version 99: %v, want 400", err)
	}
	if err := p.Call(ctx, hostproto.ActionHello, hostproto.Hello{ProtocolVersion: hostproto.Version}, nil); err != nil {
		t.Fatal(err)
	}
	gs := e.gameSession(t, s.id)
	inst := aws.ToString(gs.ComputeName)
	proc := victimProcess(t, victim, fleetID, inst)
	for _, m := range []struct {
		action string
		msg    any
	}{
		{hostproto.ActionProcessExited, hostproto.ProcessExited{InstanceId: inst, ProcessId: proc, ExitCode: 1}},
		{hostproto.ActionAskToEnd, hostproto.AskToEnd{InstanceId: inst, ProcessId: proc, DeadlineMs: time.Now().UnixMilli()}},
		{hostproto.ActionStepFailed, hostproto.StepFailed{InstanceId: inst, Step: "DOWNLOAD", Error: "hostile"}},
		{hostproto.ActionInstanceStopped, hostproto.InstanceStopped{InstanceId: inst}},
		{hostproto.ActionProcessStarted, hostproto.ProcessStarted{InstanceId: inst, ProcessId: "process-hostile", LaunchPath: "/local/game/x"}},
	} {
		if err := p.Call(ctx, m.action, m.msg, nil); status(err) != 404 {
			t.Errorf("%s about another host's instance: %v, want 404", m.action, err)
		}
	}
	build := e.fleetBuild(t, fleetID)
	if code := fa.httpDo(t, http.MethodGet, hostproto.PathBuild+build, nil); code != http.StatusForbidden {
		t.Errorf("downloading a build no instance of the host runs: %d, want 403", code)
	}
	if code := fa.httpDo(t, http.MethodPut, hostproto.PathOutput+"?instance="+inst+"&process="+proc, strings.NewReader("lies")); code != http.StatusForbidden {
		t.Errorf("uploading another host's process output: %d, want 403", code)
	}
	if code := fa.httpDo(t, http.MethodPut, hostproto.PathGameSessionLogs+"?gamesession="+s.id, strings.NewReader("lies")); code != http.StatusForbidden {
		t.Errorf("uploading another host's game session logs: %d, want 403", code)
	}
	big := hostproto.Heartbeat{Instances: []hostproto.Instance{{InstanceId: strings.Repeat("x", hostproto.MaxMessageBytes)}}}
	if err := p.Call(ctx, hostproto.ActionHeartbeat, big, nil); err == nil {
		t.Errorf("a frame over %d bytes was answered", hostproto.MaxMessageBytes)
	}
	select {
	case <-p.Done():
	case <-time.After(10 * time.Second):
		t.Errorf("the connection stayed open after a frame over the bound")
	}
	if gs := e.gameSession(t, s.id); gs.Status != types.GameSessionStatusActive {
		t.Fatalf("the victim's game session is %s after the hostile host's messages", gs.Status)
	}
	if h := e.hosts(t)[victim.hostID]; h.Instances != 1 {
		t.Fatalf("the victim host has %d instances after the hostile host's messages", h.Instances)
	}
}

// fleetBuild returns a fleet's build ID.
func (e *env) fleetBuild(t *testing.T, fleetID string) string {
	t.Helper()
	out, err := e.gl.DescribeFleetAttributes(e.ctx, &gl.DescribeFleetAttributesInput{FleetIds: []string{fleetID}})
	if err != nil || len(out.FleetAttributes) != 1 {
		t.Fatal(err)
	}
	return aws.ToString(out.FleetAttributes[0].BuildId)
}

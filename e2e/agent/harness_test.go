//go:build linux

package agent

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	gl "github.com/aws/aws-sdk-go-v2/service/gamelift"
	"github.com/aws/aws-sdk-go-v2/service/gamelift/types"

	"github.com/hoistgg/hoist/e2e/hoisttest"
	"github.com/hoistgg/hoist/internal/ids"
	"github.com/hoistgg/hoist/internal/server"
)

// Waits: every wait polls with a deadline; none is a sleep standing in for
// time to pass.
const (
	waitLong  = 90 * time.Second
	waitShort = 30 * time.Second
	poll      = 50 * time.Millisecond
)

// baseTimings make Hoist's timers short enough for tests: game servers
// report health every second (gameServerEnv); agents are checked often.
var baseTimings = []string{
	"sessions.sweep=100ms",
	"sessions.heartbeat-interval=1s",
	"sessions.heartbeat-jitter=500ms",
	"sessions.terminate-grace=3s",
	"fleets.reconcile=100ms",
	"agents.check-interval=200ms",
}

// gameServerEnv is the health reporting of the game servers the tests run.
var gameServerEnv = []string{"HEALTHCHECK_INTERVAL=1s", "HEALTHCHECK_MAX_JITTER=100ms", "HOIST_TEST_RECONNECT_INTERVAL=200ms"}

// env is one running Hoist and its client.
type env struct {
	h   *hoisttest.Hoist
	gl  *gl.Client
	ctx context.Context
}

// startHoist starts Hoist (with credentials) with baseTimings and timings
// (later entries win).
func startHoist(t *testing.T, timings ...string) *env {
	t.Helper()
	return startHoistIn(t, "", nil, timings...)
}

// startHoistIn is startHoist with a data directory ("" for a new one) and
// more arguments.
func startHoistIn(t *testing.T, dataDir string, args []string, timings ...string) *env {
	t.Helper()
	h := hoisttest.Start(t, hoisttest.Options{DataDir: dataDir, Args: append([]string{
		"--timings", strings.Join(append(append([]string{}, baseTimings...), timings...), ","),
		"--log-level", "debug",
	}, args...)})
	e := &env{h: h, gl: h.V2(), ctx: hoisttest.Context(t, 10*time.Minute)}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("hoist log:\n%s", h.LogTail(150))
		}
	})
	return e
}

// caFile is Hoist's CA bundle (the system's roots and Hoist's CA), which
// its TLS listener's certificate chains to.
func (e *env) caFile() string { return filepath.Join(e.h.DataDir, server.CABundleFile) }

// httpClient is an HTTP client trusting Hoist's CA.
func (e *env) httpClient(t testing.TB) *http.Client {
	t.Helper()
	pem, err := os.ReadFile(e.caFile())
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
	return &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}, Timeout: waitShort}
}

// eventually polls cond until it reports done or timeout passes; cond
// returns what it saw, for the failure message.
func eventually(t testing.TB, timeout time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	hoisttest.Eventually(t, poll, timeout, what, cond)
}

// anywhereFleet creates a custom location and an ANYWHERE fleet in it with
// the runtime configuration rc, and waits until it is ACTIVE.
func (e *env) anywhereFleet(t *testing.T, location string, rc *types.RuntimeConfiguration) string {
	t.Helper()
	if _, err := e.gl.CreateLocation(e.ctx, &gl.CreateLocationInput{LocationName: aws.String(location)}); err != nil {
		t.Fatalf("CreateLocation: %v", err)
	}
	out, err := e.gl.CreateFleet(e.ctx, &gl.CreateFleetInput{Name: aws.String("agents"), ComputeType: types.ComputeTypeAnywhere,
		Locations: []types.LocationConfiguration{{Location: aws.String(location)}}, RuntimeConfiguration: rc})
	if err != nil {
		t.Fatalf("CreateFleet: %v", err)
	}
	id := aws.ToString(out.FleetAttributes.FleetId)
	eventually(t, waitShort, "fleet ACTIVE", func() (bool, string) {
		d, err := e.gl.DescribeFleetAttributes(e.ctx, &gl.DescribeFleetAttributesInput{FleetIds: []string{id}})
		if err != nil || len(d.FleetAttributes) != 1 {
			return false, "error"
		}
		return d.FleetAttributes[0].Status == types.FleetStatusActive, string(d.FleetAttributes[0].Status)
	})
	return id
}

// register registers a compute and returns it.
func (e *env) register(t *testing.T, fleetID, location, name string) *types.Compute {
	t.Helper()
	out, err := e.gl.RegisterCompute(e.ctx, &gl.RegisterComputeInput{FleetId: aws.String(fleetID), ComputeName: aws.String(name),
		Location: aws.String(location), IpAddress: aws.String("127.0.0.1")})
	if err != nil {
		t.Fatalf("RegisterCompute %s: %v", name, err)
	}
	return out.Compute
}

// token returns a compute auth token of a compute.
func (e *env) token(t *testing.T, fleetID, name string) string {
	t.Helper()
	out, err := e.gl.GetComputeAuthToken(e.ctx, &gl.GetComputeAuthTokenInput{FleetId: aws.String(fleetID), ComputeName: aws.String(name)})
	if err != nil {
		t.Fatalf("GetComputeAuthToken %s: %v", name, err)
	}
	return aws.ToString(out.AuthToken)
}

// computeStatus returns a compute's status.
func (e *env) computeStatus(t *testing.T, fleetID, name string) types.ComputeStatus {
	t.Helper()
	out, err := e.gl.DescribeCompute(e.ctx, &gl.DescribeComputeInput{FleetId: aws.String(fleetID), ComputeName: aws.String(name)})
	if err != nil {
		return "error: " + types.ComputeStatus(err.Error())
	}
	return out.Compute.ComputeStatus
}

// hasEvent reports whether the fleet has an event of code whose message
// holds text.
func (e *env) hasEvent(t *testing.T, fleetID string, code types.EventCode, text string) (bool, string) {
	t.Helper()
	out, err := e.gl.DescribeFleetEvents(e.ctx, &gl.DescribeFleetEventsInput{FleetId: aws.String(fleetID)})
	if err != nil {
		t.Fatalf("DescribeFleetEvents: %v", err)
	}
	var all []string
	for _, ev := range out.Events {
		msg := aws.ToString(ev.Message)
		if ev.EventCode == code && strings.Contains(msg, text) {
			return true, ""
		}
		all = append(all, string(ev.EventCode)+": "+msg)
	}
	return false, strings.Join(all, "\n")
}

// gameSession returns a game session.
func (e *env) gameSession(t *testing.T, id string) types.GameSession {
	t.Helper()
	out, err := e.gl.DescribeGameSessions(e.ctx, &gl.DescribeGameSessionsInput{GameSessionId: aws.String(id)})
	if err != nil || len(out.GameSessions) != 1 {
		t.Fatalf("DescribeGameSessions %s: %+v %v", id, out, err)
	}
	return out.GameSessions[0]
}

// process is a game server the test runs as an agent would, with the
// SDK environment of a compute.
type process struct {
	id   string
	cmd  *exec.Cmd
	out  *hoisttest.SyncBuffer
	done chan struct{}
}

// startProcess runs the game server for a compute (endpoint: the SDK
// endpoint RegisterCompute gave) with a fresh process ID; it is stopped
// when the test ends.
func startProcess(t *testing.T, e *env, sdkEndpoint, token, fleetID, compute string, args ...string) *process {
	t.Helper()
	p := &process{id: ids.UUID(), out: &hoisttest.SyncBuffer{}, done: make(chan struct{})}
	p.cmd = exec.Command(hoisttest.GameServerBinary(t), args...)
	p.cmd.Dir = t.TempDir()
	p.cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"),
		"GAMELIFT_SDK_WEBSOCKET_URL=" + sdkEndpoint, "GAMELIFT_SDK_AUTH_TOKEN=" + token,
		"GAMELIFT_SDK_FLEET_ID=" + fleetID, "GAMELIFT_SDK_HOST_ID=" + compute, "GAMELIFT_SDK_PROCESS_ID=" + p.id,
		"SSL_CERT_FILE=" + e.caFile()}, gameServerEnv...)
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.out
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = p.cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		p.kill()
		if t.Failed() {
			t.Logf("game server %s:\n%s", p.id, p.out.String())
		}
	})
	return p
}

// kill kills the game server at once.
func (p *process) kill() {
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	<-p.done
}

// exited reports whether the game server has exited.
func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

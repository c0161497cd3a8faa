//go:build linux

package hosting

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	gl "github.com/aws/aws-sdk-go-v2/service/gamelift"
	"github.com/aws/aws-sdk-go-v2/service/gamelift/types"

	"github.com/hoistgg/hoist/e2e/hoisttest"
	"github.com/hoistgg/hoist/e2e/sdkclient"
)

// handServer is a game server a test started by hand (as on an Anywhere
// compute).
type handServer struct {
	t    *testing.T
	cmd  *exec.Cmd
	out  *lockedBuffer
	done chan struct{}
	code int
}

type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
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

// startGameServer runs the game server with the SDK environment for an
// Anywhere compute, in a directory of its own; it is stopped when the test
// ends.
func startGameServer(t *testing.T, endpoint, token, fleetID, compute, processID string, extraEnv []string, args ...string) *handServer {
	t.Helper()
	dir, _ := gameServer(t)
	cmd := exec.Command(filepath.Join(dir, "gameserver"), args...)
	cmd.Dir = t.TempDir()
	cmd.Env = append(os.Environ(),
		"GAMELIFT_SDK_WEBSOCKET_URL="+endpoint, "GAMELIFT_SDK_AUTH_TOKEN="+token,
		"GAMELIFT_SDK_FLEET_ID="+fleetID, "GAMELIFT_SDK_HOST_ID="+compute, "GAMELIFT_SDK_PROCESS_ID="+processID,
		"HEALTHCHECK_INTERVAL=3s", "HEALTHCHECK_MAX_JITTER=100ms", "HOIST_TEST_RECONNECT_INTERVAL=500ms")
	cmd.Env = append(cmd.Env, extraEnv...)
	hs := &handServer{t: t, cmd: cmd, out: &lockedBuffer{}, done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = hs.out, hs.out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		cmd.Wait()
		hs.code = cmd.ProcessState.ExitCode()
		close(hs.done)
	}()
	t.Cleanup(func() {
		hs.stop()
		if t.Failed() {
			t.Logf("game server %s output:\n%s", processID, hoisttest.Tail(hs.out.String(), 40))
		}
	})
	return hs
}

var readyPort = regexp.MustCompile(`msg=ready .*port=(\d+)`)

// port waits for the game server's ProcessReady and returns its player port.
func (hs *handServer) port() int32 {
	hs.t.Helper()
	var port int
	eventually(hs.t, waitShort, "hand-started game server ready", func() (bool, string) {
		select {
		case <-hs.done:
			hs.t.Fatalf("the game server exited with %d:\n%s", hs.code, hs.out.String())
		default:
		}
		m := readyPort.FindStringSubmatch(hs.out.String())
		if m == nil {
			return false, hoisttest.Tail(hs.out.String(), 5)
		}
		port, _ = strconv.Atoi(m[1])
		return true, ""
	})
	return int32(port)
}

// exited waits for the game server to exit and returns its exit code.
func (hs *handServer) exited() int {
	hs.t.Helper()
	select {
	case <-hs.done:
		return hs.code
	case <-time.After(waitShort):
		hs.t.Fatalf("the game server did not exit:\n%s", hoisttest.Tail(hs.out.String(), 20))
		return -1
	}
}

// stop ends the game server with SIGTERM (it calls ProcessEnding), then
// SIGKILL.
func (hs *handServer) stop() {
	select {
	case <-hs.done:
		return
	default:
	}
	_ = hs.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-hs.done:
	case <-time.After(10 * time.Second):
		_ = syscall.Kill(-hs.cmd.Process.Pid, syscall.SIGKILL)
		<-hs.done
	}
}

// testAnywhere: custom locations, an ANYWHERE fleet, computes registered
// by hand, and game servers started by the test with RegisterCompute's SDK
// endpoint and GetComputeAuthToken's token, one over ws and one over wss
// trusting Hoist's CA through SSL_CERT_FILE.
func testAnywhere(t *testing.T, e *env) {
	r := &anywhereRun{t: t, e: e, home: "custom-e2e-home", away: "custom-e2e-away",
		wsURL: "ws" + strings.TrimPrefix(e.h.URL, "http") + "/sdk", wssURL: "wss" + strings.TrimPrefix(e.h.TLSURL, "https") + "/sdk"}
	r.setup()
	r.overWS()
	r.overWSS()
	r.computes()
	r.ending()
	r.silentDeath()
	r.deregister()
	r.teardown()
}

// anywhereRun is the state testAnywhere's steps share.
type anywhereRun struct {
	t                   *testing.T
	e                   *env
	home, away, fleetID string
	wsURL, wssURL       string
	tok1, tok2          string // auth tokens of laptop-1 (home) and laptop-2 (away)
	a, b                *handServer
	gsA, gsB            types.GameSession
	psA                 string // a player session of gsA, accepted
}

// setup creates the custom locations and a fleet in both.
func (r *anywhereRun) setup() {
	t, e := r.t, r.e
	for _, l := range []string{r.home, r.away} {
		out, err := e.gl.CreateLocation(e.ctx, &gl.CreateLocationInput{LocationName: aws.String(l)})
		if err != nil || aws.ToString(out.Location.LocationName) != l || aws.ToString(out.Location.LocationArn) == "" {
			t.Fatalf("CreateLocation %s: %+v, %v", l, out, err)
		}
	}
	_, err := e.gl.CreateLocation(e.ctx, &gl.CreateLocationInput{LocationName: aws.String(r.home)})
	wantErr[*types.ConflictException](t, "CreateLocation of an existing location", err)
	if names := e.locationNames(t); !strings.Contains(names, r.home) || !strings.Contains(names, r.away) {
		t.Errorf("ListLocations CUSTOM: %s", names)
	}

	created, err := e.gl.CreateFleet(e.ctx, &gl.CreateFleetInput{Name: aws.String("anywhere"), ComputeType: types.ComputeTypeAnywhere,
		Locations: []types.LocationConfiguration{{Location: aws.String(r.home)}}})
	if err != nil {
		t.Fatalf("CreateFleet ANYWHERE: %v", err)
	}
	r.fleetID = aws.ToString(created.FleetAttributes.FleetId)
	e.waitFleet(t, r.fleetID, types.FleetStatusActive)
	if _, err := e.gl.CreateFleetLocations(e.ctx, &gl.CreateFleetLocationsInput{FleetId: aws.String(r.fleetID),
		Locations: []types.LocationConfiguration{{Location: aws.String(r.away)}}}); err != nil {
		t.Fatalf("CreateFleetLocations: %v", err)
	}
	la, err := e.gl.DescribeFleetLocationAttributes(e.ctx, &gl.DescribeFleetLocationAttributesInput{FleetId: aws.String(r.fleetID)})
	if err != nil || len(la.LocationAttributes) != 2 {
		t.Fatalf("DescribeFleetLocationAttributes: %+v, %v", la, err)
	}
	for _, l := range la.LocationAttributes {
		if l.LocationState.Status != types.FleetStatusActive {
			t.Errorf("location %s is %s", aws.ToString(l.LocationState.Location), l.LocationState.Status)
		}
	}
	_, err = e.gl.DeleteLocation(e.ctx, &gl.DeleteLocationInput{LocationName: aws.String(r.home)})
	wantErr[*types.InvalidRequestException](t, "DeleteLocation of a location a fleet uses", err)
}

// overWS registers laptop-1 and runs game server A on it over ws, with a
// game session and an accepted player.
func (r *anywhereRun) overWS() {
	t, e := r.t, r.e
	reg := e.register(t, r.fleetID, "laptop-1", r.home)
	// With the TLS listener on, Hoist hands out wss:// (as GameLift does);
	// ws:// on the plain listener keeps working.
	if got := aws.ToString(reg.GameLiftServiceSdkEndpoint); got != r.wssURL {
		t.Errorf("RegisterCompute: GameLiftServiceSdkEndpoint %q, want %q", got, r.wssURL)
	}
	r.tok1 = e.authToken(t, r.fleetID, "laptop-1")
	r.a = startGameServer(t, r.wsURL, r.tok1, r.fleetID, "laptop-1", "hand-1", nil, "-accept-players")
	portA := r.a.port()
	e.waitLocationProcesses(t, r.fleetID, r.home, 1)

	_, err := e.gl.CreateGameSession(e.ctx, &gl.CreateGameSessionInput{FleetId: aws.String(r.fleetID), MaximumPlayerSessionCount: aws.Int32(2)})
	wantErr[*types.InvalidRequestException](t, "CreateGameSession on an Anywhere fleet without Location", err)
	r.gsA = e.createIn(t, r.fleetID, r.home)
	if aws.ToString(r.gsA.IpAddress) != "127.0.0.1" || aws.ToInt32(r.gsA.Port) != portA || aws.ToString(r.gsA.ComputeName) != "laptop-1" {
		t.Errorf("game session on laptop-1: %s:%d on %s, want 127.0.0.1:%d", aws.ToString(r.gsA.IpAddress), aws.ToInt32(r.gsA.Port),
			aws.ToString(r.gsA.ComputeName), portA)
	}
	ps, err := e.gl.CreatePlayerSession(e.ctx, &gl.CreatePlayerSessionInput{GameSessionId: r.gsA.GameSessionId, PlayerId: aws.String("p1")})
	if err != nil {
		t.Fatal(err)
	}
	r.psA = aws.ToString(ps.PlayerSession.PlayerSessionId)
	dialPlayer(t, "127.0.0.1", portA).must("ACCEPT " + r.psA)
	e.waitPlayerSession(t, r.psA, types.PlayerSessionStatusActive)
}

// overWSS registers laptop-2 and runs game server B on it over wss: the
// game server trusts Hoist's CA by SSL_CERT_FILE; a client that does not
// is refused, and a TLS handshake on the plain port is logged with a hint.
func (r *anywhereRun) overWSS() {
	t, e := r.t, r.e
	e.register(t, r.fleetID, "laptop-2", r.away)
	plain := strings.TrimPrefix(e.h.URL, "http://")
	if c, err := tls.Dial("tcp", plain, &tls.Config{InsecureSkipVerify: true}); err == nil {
		c.Close()
		t.Errorf("a TLS handshake on the plain port %s succeeded", plain)
	}
	tlsAddr := strings.TrimPrefix(e.h.TLSURL, "https://")
	eventually(t, waitShort, "the TLS-on-the-plain-port warning", func() (bool, string) {
		log := e.h.Log()
		return strings.Contains(log, "TLS on the plain port") && strings.Contains(log, "wss://"+tlsAddr+"/sdk"), "not in Hoist's log"
	})
	r.tok2 = e.authToken(t, r.fleetID, "laptop-2")
	_, err := dialSDK(t, "", r.wssURL, "untrusting", "laptop-2", r.fleetID, r.tok2)
	var unknown x509.UnknownAuthorityError
	var verr *tls.CertificateVerificationError
	if !errors.As(err, &unknown) && !errors.As(err, &verr) {
		t.Errorf("wss without trusting Hoist's CA: %v, want a certificate verification error", err)
	}
	// Game server B speaks only TLS, as the C++ Server SDK does: given a
	// ws:// URL of the TLS listener it still speaks TLS there, trusting the
	// CA bundle Hoist writes to its data directory.
	r.b = startGameServer(t, "ws"+strings.TrimPrefix(r.wssURL, "wss"), r.tok2, r.fleetID, "laptop-2", "hand-2",
		[]string{"SSL_CERT_FILE=" + filepath.Join(e.h.DataDir, "ca-bundle.pem")}, "-accept-players", "-force-tls")
	portB := r.b.port()
	e.waitLocationProcesses(t, r.fleetID, r.away, 1)
	r.gsB = e.createIn(t, r.fleetID, r.away)
	if aws.ToInt32(r.gsB.Port) != portB || aws.ToString(r.gsB.Location) != r.away {
		t.Errorf("game session over wss: port %d in %s, want %d in %s", aws.ToInt32(r.gsB.Port), aws.ToString(r.gsB.Location), portB, r.away)
	}
}

// computes checks ListCompute, DescribeCompute and GetComputeAccess.
func (r *anywhereRun) computes() {
	t, e := r.t, r.e
	lc, err := e.gl.ListCompute(e.ctx, &gl.ListComputeInput{FleetId: aws.String(r.fleetID)})
	if err != nil || len(lc.ComputeList) != 2 {
		t.Errorf("ListCompute: %+v, %v", lc, err)
	}
	lc, err = e.gl.ListCompute(e.ctx, &gl.ListComputeInput{FleetId: aws.String(r.fleetID), Location: aws.String(r.away)})
	if err != nil || len(lc.ComputeList) != 1 || aws.ToString(lc.ComputeList[0].ComputeName) != "laptop-2" {
		t.Errorf("ListCompute in %s: %+v, %v", r.away, lc, err)
	}
	dc, err := e.gl.DescribeCompute(e.ctx, &gl.DescribeComputeInput{FleetId: aws.String(r.fleetID), ComputeName: aws.String("laptop-1")})
	if err != nil || dc.Compute.ComputeStatus != types.ComputeStatusActive || aws.ToString(dc.Compute.IpAddress) != "127.0.0.1" {
		t.Errorf("DescribeCompute: %+v, %v", dc, err)
	}
	_, err = e.gl.GetComputeAccess(e.ctx, &gl.GetComputeAccessInput{FleetId: aws.String(r.fleetID), ComputeName: aws.String("laptop-1")})
	wantErr[*types.InvalidRequestException](t, "GetComputeAccess on an Anywhere compute", err)
}

// ending ends both game sessions: an Anywhere process is asked to end
// (TerminateGameSession) or ends itself (SIGTERM); Hoist cannot force it.
func (r *anywhereRun) ending() {
	t, e := r.t, r.e
	_, err := e.gl.TerminateGameSession(e.ctx, &gl.TerminateGameSessionInput{GameSessionId: r.gsA.GameSessionId,
		TerminationMode: types.TerminationModeForceTerminate})
	wantErr[*types.InvalidRequestException](t, "FORCE_TERMINATE on an Anywhere fleet", err)
	if _, err := e.gl.TerminateGameSession(e.ctx, &gl.TerminateGameSessionInput{GameSessionId: r.gsA.GameSessionId,
		TerminationMode: types.TerminationModeTriggerOnProcessTerminate}); err != nil {
		t.Fatalf("TerminateGameSession: %v", err)
	}
	if code := r.a.exited(); code != 0 {
		t.Errorf("the game server asked to end exited with %d", code)
	}
	e.waitGameSession(t, aws.ToString(r.gsA.GameSessionId), types.GameSessionStatusTerminated)
	e.waitPlayerSession(t, r.psA, types.PlayerSessionStatusCompleted)
	r.b.stop() // SIGTERM: the game server calls ProcessEnding
	if code := r.b.exited(); code != 0 {
		t.Errorf("the game server stopped by SIGTERM exited with %d", code)
	}
	e.waitGameSession(t, aws.ToString(r.gsB.GameSessionId), types.GameSessionStatusTerminated)
}

// silentDeath: a game server that dies without a word; once its health
// reports are missing, its game session ends and its players are
// COMPLETED.
func (r *anywhereRun) silentDeath() {
	t, e := r.t, r.e
	c := startGameServer(t, r.wsURL, r.tok2, r.fleetID, "laptop-2", "hand-4", nil, "-accept-players")
	c.port()
	e.waitLocationProcesses(t, r.fleetID, r.away, 1)
	gsC := e.createIn(t, r.fleetID, r.away)
	psC, err := e.gl.CreatePlayerSession(e.ctx, &gl.CreatePlayerSessionInput{GameSessionId: gsC.GameSessionId, PlayerId: aws.String("p3")})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	c.exited()
	checkProcessGone(t, e, r.fleetID, aws.ToString(gsC.GameSessionId), []string{aws.ToString(psC.PlayerSession.PlayerSessionId)}, "")
	e.waitLocationProcesses(t, r.fleetID, r.away, 0)
}

// deregister deregisters laptop-1 under a running game server: the server
// is asked to end at its next health report, its game session ends, and
// the compute's token no longer connects.
func (r *anywhereRun) deregister() {
	t, e := r.t, r.e
	d := startGameServer(t, r.wsURL, r.tok1, r.fleetID, "laptop-1", "hand-5", nil)
	d.port()
	e.waitLocationProcesses(t, r.fleetID, r.home, 1)
	gsD := e.createIn(t, r.fleetID, r.home)
	if _, err := e.gl.DeregisterCompute(e.ctx, &gl.DeregisterComputeInput{FleetId: aws.String(r.fleetID), ComputeName: aws.String("laptop-1")}); err != nil {
		t.Fatalf("DeregisterCompute: %v", err)
	}
	if code := d.exited(); code != 0 {
		t.Errorf("the game server on a deregistered compute exited with %d", code)
	}
	e.waitGameSession(t, aws.ToString(gsD.GameSessionId), types.GameSessionStatusTerminated)

	_, err := dialSDK(t, "", r.wsURL, "hand-3", "laptop-1", r.fleetID, r.tok1)
	var he *sdkclient.HandshakeError
	if !errors.As(err, &he) || he.StatusCode != 403 {
		t.Errorf("connecting with a deregistered compute's token: %v, want HTTP 403", err)
	}
	_, err = e.gl.DescribeCompute(e.ctx, &gl.DescribeComputeInput{FleetId: aws.String(r.fleetID), ComputeName: aws.String("laptop-1")})
	wantErr[*types.NotFoundException](t, "DescribeCompute of a deregistered compute", err)
}

// teardown deletes the away location, then the fleet, each under a game
// server hosting a game session (which is asked to end, and its session
// ends), then both custom locations.
func (r *anywhereRun) teardown() {
	t, e := r.t, r.e
	away := r.hosting("laptop-2", r.tok2, "hand-6", r.away)
	if _, err := e.gl.DeleteFleetLocations(e.ctx, &gl.DeleteFleetLocationsInput{FleetId: aws.String(r.fleetID), Locations: []string{r.away}}); err != nil {
		t.Fatalf("DeleteFleetLocations: %v", err)
	}
	away()
	e.register(t, r.fleetID, "laptop-3", r.home)
	home := r.hosting("laptop-3", e.authToken(t, r.fleetID, "laptop-3"), "hand-7", r.home)
	e.deleteFleet(t, r.fleetID)
	home()
	for _, l := range []string{r.home, r.away} {
		if _, err := e.gl.DeleteLocation(e.ctx, &gl.DeleteLocationInput{LocationName: aws.String(l)}); err != nil {
			t.Errorf("DeleteLocation %s: %v", l, err)
		}
	}
	if names := e.locationNames(t); strings.Contains(names, r.home) {
		t.Errorf("ListLocations after DeleteLocation: %s", names)
	}
}

// hosting starts a game server on a compute and gives it a game session in
// loc; the function it returns waits until the server has ended (exit 0)
// and its game session is TERMINATED.
func (r *anywhereRun) hosting(compute, token, processID, loc string) func() {
	t, e := r.t, r.e
	hs := startGameServer(t, r.wsURL, token, r.fleetID, compute, processID, nil)
	hs.port()
	e.waitLocationProcesses(t, r.fleetID, loc, 1)
	gs := e.createIn(t, r.fleetID, loc)
	return func() {
		t.Helper()
		if code := hs.exited(); code != 0 {
			t.Errorf("game server %s exited with %d", processID, code)
		}
		e.waitGameSession(t, aws.ToString(gs.GameSessionId), types.GameSessionStatusTerminated)
	}
}

func (e *env) locationNames(t *testing.T) string {
	t.Helper()
	out, err := e.gl.ListLocations(e.ctx, &gl.ListLocationsInput{Filters: []types.LocationFilter{types.LocationFilterCustom}})
	if err != nil {
		t.Fatalf("ListLocations: %v", err)
	}
	var names []string
	for _, l := range out.Locations {
		names = append(names, aws.ToString(l.LocationName))
	}
	return strings.Join(names, " ")
}

func (e *env) register(t *testing.T, fleetID, name, loc string) *types.Compute {
	t.Helper()
	out, err := e.gl.RegisterCompute(e.ctx, &gl.RegisterComputeInput{FleetId: aws.String(fleetID), ComputeName: aws.String(name),
		IpAddress: aws.String("127.0.0.1"), Location: aws.String(loc)})
	if err != nil {
		t.Fatalf("RegisterCompute %s: %v", name, err)
	}
	c := out.Compute
	if c.ComputeStatus != types.ComputeStatusActive || aws.ToString(c.Location) != loc || aws.ToString(c.ComputeArn) == "" {
		t.Errorf("RegisterCompute: %+v", c)
	}
	return c
}

func (e *env) authToken(t *testing.T, fleetID, name string) string {
	t.Helper()
	out, err := e.gl.GetComputeAuthToken(e.ctx, &gl.GetComputeAuthTokenInput{FleetId: aws.String(fleetID), ComputeName: aws.String(name)})
	if err != nil {
		t.Fatalf("GetComputeAuthToken: %v", err)
	}
	if out.ExpirationTimestamp == nil || !out.ExpirationTimestamp.After(time.Now()) || aws.ToString(out.AuthToken) == "" {
		t.Errorf("GetComputeAuthToken: %+v", out)
	}
	return aws.ToString(out.AuthToken)
}

// waitLocationProcesses waits until a fleet location has n ready processes.
func (e *env) waitLocationProcesses(t *testing.T, fleetID, loc string, n int32) {
	t.Helper()
	eventually(t, waitShort, "ready processes in "+loc, func() (bool, string) {
		out, err := e.gl.DescribeFleetLocationUtilization(e.ctx, &gl.DescribeFleetLocationUtilizationInput{FleetId: aws.String(fleetID),
			Location: aws.String(loc)})
		if err != nil {
			return false, err.Error()
		}
		got := aws.ToInt32(out.FleetUtilization.ActiveServerProcessCount)
		return got == n, strconv.Itoa(int(got))
	})
}

// createIn creates a game session in a fleet location and waits for ACTIVE.
func (e *env) createIn(t *testing.T, fleetID, loc string) types.GameSession {
	t.Helper()
	out, err := e.gl.CreateGameSession(e.ctx, &gl.CreateGameSessionInput{FleetId: aws.String(fleetID),
		Location: aws.String(loc), MaximumPlayerSessionCount: aws.Int32(2)})
	if err != nil {
		t.Fatalf("CreateGameSession in %s: %v", loc, err)
	}
	return e.waitGameSession(t, aws.ToString(out.GameSession.GameSessionId), types.GameSessionStatusActive)
}

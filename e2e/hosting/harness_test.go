//go:build linux

package hosting

import (
	"archive/zip"
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	gl "github.com/aws/aws-sdk-go-v2/service/gamelift"
	"github.com/aws/aws-sdk-go-v2/service/gamelift/types"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/hoistgg/hoist/e2e/hoisttest"
)

// Waits. Every wait polls; none of them is a sleep standing in for time.
const (
	// waitLong bounds waits for fleets to become ACTIVE and processes to
	// be replaced (slow on a loaded CI machine).
	waitLong = 90 * time.Second
	// waitShort bounds waits for things that follow one API or SDK call.
	waitShort = 30 * time.Second
	poll      = 50 * time.Millisecond
)

// gameServerLaunchPath is where the uploaded build puts the game server.
const gameServerLaunchPath = "/local/game/gameserver"

// baseTimings make Hoist's background work quick enough for tests; tests
// add their own. Health reports: game servers report every 3 s (baseEnv);
// one that reports nothing for 3 x (3 s + 0.5 s) is ended, as is one that
// reports itself unhealthy 3 times (about 6 s after ProcessReady: the
// window in which the health tests give it a game session and players).
var baseTimings = []string{
	"fleets.reconcile=100ms",
	"sessions.sweep=100ms",
	"sessions.heartbeat-interval=3s",
	"sessions.heartbeat-jitter=500ms",
	"sessions.terminate-grace=3s",
	"processes.stagger=20ms",
	"processes.terminate-grace=5s",
	"processes.shutdown-grace=5s",
	"processes.kill-grace=2s",
	"processes.crash-backoff=200ms",
	"fleets.launch-backoff=500ms",
	"fleets.policy-interval=500ms",
	"builds.retained-check=200ms",
}

// baseEnv is the environment Hoist adds to every managed server process.
var baseEnv = []string{"HEALTHCHECK_INTERVAL=3s", "HEALTHCHECK_MAX_JITTER=100ms", "SERVICE_CALL_TIMEOUT=5s"}

// instanceGlob globs, under a data directory, the paths of a fleet's
// instances matching rest: where the local agent keeps them (the default,
// --local-hosting agent) or hoist serve's in-process provider does.
func instanceGlob(dataDir, fleetID string, rest ...string) []string {
	var out []string
	for _, dir := range []string{filepath.Join(dataDir, "local-host", "instances"), filepath.Join(dataDir, "instances")} {
		m, _ := filepath.Glob(filepath.Join(append([]string{dir, fleetID}, rest...)...))
		out = append(out, m...)
	}
	return out
}

// env is one running Hoist and its clients.
type env struct {
	h   *hoisttest.Hoist
	gl  *gl.Client
	ctx context.Context
}

// startHoist starts Hoist with baseTimings plus timings (later entries win).
func startHoist(t *testing.T, timings ...string) *env {
	t.Helper()
	return startHoistWith(t, nil, timings...)
}

// startHoistWith is startHoist with more command-line arguments.
func startHoistWith(t *testing.T, args []string, timings ...string) *env {
	t.Helper()
	all := append(append([]string{}, baseTimings...), timings...)
	h := hoisttest.Start(t, hoisttest.Options{Args: append([]string{
		"--timings", strings.Join(dedupe(all), ","),
		"--process-env", strings.Join(baseEnv, ","),
		"--log-level", "debug",
	}, args...)})
	return &env{h: h, gl: h.V2(), ctx: hoisttest.Context(t, 10*time.Minute)}
}

// dedupe keeps the last of several name=value entries with the same name.
func dedupe(kvs []string) []string {
	last := map[string]int{}
	for i, kv := range kvs {
		k, _, _ := strings.Cut(kv, "=")
		last[k] = i
	}
	var out []string
	for i, kv := range kvs {
		k, _, _ := strings.Cut(kv, "=")
		if last[k] == i {
			out = append(out, kv)
		}
	}
	return out
}

// dumpOnFailure logs Hoist's log when t failed.
func (e *env) dumpOnFailure(t *testing.T) {
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("hoist log:\n%s", hoisttest.Tail(e.h.Log(), 200))
		}
	})
}

// eventually polls cond until it reports done or timeout passes; cond
// returns a description of the state it saw, for the failure message.
func eventually(t testing.TB, timeout time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	hoisttest.Eventually(t, poll, timeout, what, cond)
}

// --- the game server build ---

var (
	gsOnce sync.Once
	gsDir  string // a directory holding only the game server binary
	gsZip  []byte // that directory as a zip archive
	gsErr  error
)

// gameServer builds e2e/gameserver once per test binary and returns the
// build root (a directory holding `gameserver`) and its zip archive.
func gameServer(t testing.TB) (string, []byte) {
	t.Helper()
	gsOnce.Do(func() {
		dir, err := os.MkdirTemp("", "hoist-e2e-hosting-")
		if err != nil {
			gsErr = err
			return
		}
		gsDir = filepath.Join(dir, "build")
		cmd := exec.Command("go", "build", "-ldflags=-s -w", "-o", filepath.Join(gsDir, "gameserver"), "./e2e/gameserver")
		cmd.Dir = hoisttest.RepoRoot()
		if out, err := cmd.CombinedOutput(); err != nil {
			gsErr = fmt.Errorf("go build ./e2e/gameserver: %v\n%s", err, out)
			return
		}
		gsZip, gsErr = zipDir(gsDir)
	})
	if gsErr != nil {
		t.Fatal(gsErr)
	}
	return gsDir, gsZip
}

// zipDir archives the regular files of dir (not recursive), keeping modes.
func zipDir(dir string) ([]byte, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	files := map[string]archiveFile{}
	for _, de := range entries {
		info, err := de.Info()
		if err != nil {
			return nil, err
		}
		data, err := os.ReadFile(filepath.Join(dir, de.Name()))
		if err != nil {
			return nil, err
		}
		files[de.Name()] = archiveFile{body: string(data), mode: info.Mode().Perm()}
	}
	return zipFiles(files)
}

// archiveFile is a file of a build archive.
type archiveFile struct {
	body string
	mode os.FileMode
}

// zipFiles makes a zip archive of files, by name.
func zipFiles(files map[string]archiveFile) ([]byte, error) {
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for name, f := range files {
		hdr := &zip.FileHeader{Name: name, Method: zip.Deflate}
		hdr.SetMode(f.mode)
		w, err := zw.CreateHeader(hdr)
		if err != nil {
			return nil, err
		}
		if _, err := w.Write([]byte(f.body)); err != nil {
			return nil, err
		}
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// gameServerArchive is the game server's build archive with extra files.
func gameServerArchive(t testing.TB, extra map[string]archiveFile) []byte {
	t.Helper()
	dir, _ := gameServer(t)
	bin, err := os.ReadFile(filepath.Join(dir, "gameserver"))
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]archiveFile{"gameserver": {body: string(bin), mode: 0o755}}
	for k, v := range extra {
		files[k] = v
	}
	b, err := zipFiles(files)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// --- builds ---

// s3Client returns an aws-sdk-go-v2 S3 client for Hoist's upload endpoint.
func (e *env) s3Client(akid, secret, token string) *s3.Client {
	return s3.New(s3.Options{
		Region:           hoisttest.Region,
		BaseEndpoint:     aws.String(e.h.URL),
		UsePathStyle:     true,
		Credentials:      credentials.NewStaticCredentialsProvider(akid, secret, token),
		RetryMaxAttempts: 1,
	})
}

// createBuild calls CreateBuild and uploads archive to the location it
// returns, signed with the upload credentials it returns. It returns the
// build ID and the upload's error (a refused archive fails the upload).
func (e *env) createBuild(t testing.TB, name string, archive []byte) (string, error) {
	t.Helper()
	out, err := e.gl.CreateBuild(e.ctx, &gl.CreateBuildInput{Name: aws.String(name), Version: aws.String("1.0"),
		OperatingSystem: types.OperatingSystemAmazonLinux2023})
	if err != nil {
		t.Fatalf("CreateBuild: %v", err)
	}
	id := aws.ToString(out.Build.BuildId)
	if out.Build.Status != types.BuildStatusInitialized {
		t.Fatalf("CreateBuild: status %s, want INITIALIZED", out.Build.Status)
	}
	c := out.UploadCredentials
	if c == nil || out.StorageLocation == nil {
		t.Fatalf("CreateBuild gave no upload credentials or storage location: %+v", out)
	}
	_, err = e.s3Client(aws.ToString(c.AccessKeyId), aws.ToString(c.SecretAccessKey), aws.ToString(c.SessionToken)).
		PutObject(e.ctx, &s3.PutObjectInput{Bucket: out.StorageLocation.Bucket, Key: out.StorageLocation.Key,
			Body: bytes.NewReader(archive)})
	return id, err
}

// uploadGameServer uploads the game server as a build and waits for READY.
func (e *env) uploadGameServer(t testing.TB, name string) string {
	t.Helper()
	_, archive := gameServer(t)
	id, err := e.createBuild(t, name, archive)
	if err != nil {
		t.Fatalf("uploading build %s: %v", id, err)
	}
	e.waitBuild(t, id, types.BuildStatusReady)
	return id
}

func (e *env) waitBuild(t testing.TB, id string, want types.BuildStatus) *types.Build {
	t.Helper()
	var b *types.Build
	eventually(t, waitShort, "build "+id+" "+string(want), func() (bool, string) {
		out, err := e.gl.DescribeBuild(e.ctx, &gl.DescribeBuildInput{BuildId: aws.String(id)})
		if err != nil {
			return false, err.Error()
		}
		b = out.Build
		return b.Status == want, string(b.Status)
	})
	return b
}

// --- fleets ---

// fleetSpec is what createFleet varies.
type fleetSpec struct {
	name       string
	build      string
	launchPath string // default gameServerLaunchPath
	params     string
	concurrent int32 // default 1
	// activationTimeout is GameSessionActivationTimeoutSeconds (0: unset).
	activationTimeout int32
	cert              types.CertificateType
	limitPolicy       *types.ResourceCreationLimitPolicy
	protection        types.ProtectionPolicy
	locations         []string
}

// createFleet creates an EC2 fleet running the game server.
func (e *env) createFleet(t testing.TB, s fleetSpec) *gl.CreateFleetOutput {
	t.Helper()
	if s.launchPath == "" {
		s.launchPath = gameServerLaunchPath
	}
	if s.concurrent == 0 {
		s.concurrent = 1
	}
	rc := &types.RuntimeConfiguration{ServerProcesses: []types.ServerProcess{{
		LaunchPath: aws.String(s.launchPath), ConcurrentExecutions: aws.Int32(s.concurrent)}}}
	if s.params != "" {
		rc.ServerProcesses[0].Parameters = aws.String(s.params)
	}
	if s.activationTimeout > 0 {
		rc.GameSessionActivationTimeoutSeconds = aws.Int32(s.activationTimeout)
	}
	in := &gl.CreateFleetInput{
		Name:                 aws.String(s.name),
		BuildId:              aws.String(s.build),
		EC2InstanceType:      types.EC2InstanceTypeC5Large,
		RuntimeConfiguration: rc,
		EC2InboundPermissions: []types.IpPermission{{FromPort: aws.Int32(1026), ToPort: aws.Int32(60000),
			IpRange: aws.String("0.0.0.0/0"), Protocol: types.IpProtocolTcp}},
		ResourceCreationLimitPolicy:    s.limitPolicy,
		NewGameSessionProtectionPolicy: s.protection,
	}
	if s.cert != "" {
		in.CertificateConfiguration = &types.CertificateConfiguration{CertificateType: s.cert}
	}
	for _, l := range s.locations {
		in.Locations = append(in.Locations, types.LocationConfiguration{Location: aws.String(l)})
	}
	out, err := e.gl.CreateFleet(e.ctx, in)
	if err != nil {
		t.Fatalf("CreateFleet %s: %v", s.name, err)
	}
	return out
}

// fleetStatus returns a fleet's status.
func (e *env) fleetStatus(t testing.TB, id string) types.FleetStatus {
	t.Helper()
	out, err := e.gl.DescribeFleetAttributes(e.ctx, &gl.DescribeFleetAttributesInput{FleetIds: []string{id}})
	if err != nil {
		t.Fatalf("DescribeFleetAttributes: %v", err)
	}
	if len(out.FleetAttributes) != 1 {
		t.Fatalf("DescribeFleetAttributes %s: %d fleets", id, len(out.FleetAttributes))
	}
	return out.FleetAttributes[0].Status
}

// waitFleet waits for a fleet's status; reaching ERROR (or TERMINATED)
// instead fails at once, with the fleet's events.
func (e *env) waitFleet(t testing.TB, id string, want types.FleetStatus) {
	t.Helper()
	eventually(t, waitLong, "fleet "+id+" "+string(want), func() (bool, string) {
		st := e.fleetStatus(t, id)
		if st != want && (st == types.FleetStatusError || st == types.FleetStatusTerminated) {
			t.Fatalf("fleet %s is %s, waiting for %s; events:\n%s", id, st, want, e.eventText(t, id))
		}
		return st == want, string(st)
	})
}

// events returns a fleet's events, oldest first.
func (e *env) events(t testing.TB, id string) []types.Event {
	t.Helper()
	var all []types.Event
	in := &gl.DescribeFleetEventsInput{FleetId: aws.String(id), Limit: aws.Int32(100)}
	for {
		out, err := e.gl.DescribeFleetEvents(e.ctx, in)
		if err != nil {
			t.Fatalf("DescribeFleetEvents: %v", err)
		}
		all = append(all, out.Events...)
		if out.NextToken == nil {
			return all
		}
		in.NextToken = out.NextToken
	}
}

func (e *env) eventText(t testing.TB, id string) string {
	var b strings.Builder
	for _, ev := range e.events(t, id) {
		fmt.Fprintf(&b, "  %s %s\n", ev.EventCode, aws.ToString(ev.Message))
	}
	return b.String()
}

// hasEvent reports whether a fleet has an event with code (and, when
// given, a message containing text).
func (e *env) hasEvent(t testing.TB, id string, code types.EventCode, text string) bool {
	for _, ev := range e.events(t, id) {
		if ev.EventCode == code && strings.Contains(aws.ToString(ev.Message), text) {
			return true
		}
	}
	return false
}

// utilization returns the fleet's home location utilization.
func (e *env) utilization(t testing.TB, id string) types.FleetUtilization {
	t.Helper()
	out, err := e.gl.DescribeFleetUtilization(e.ctx, &gl.DescribeFleetUtilizationInput{FleetIds: []string{id}})
	if err != nil {
		t.Fatalf("DescribeFleetUtilization: %v", err)
	}
	if len(out.FleetUtilization) != 1 {
		t.Fatalf("DescribeFleetUtilization %s: %d entries", id, len(out.FleetUtilization))
	}
	return out.FleetUtilization[0]
}

// waitIdleProcesses waits until the fleet's home location has n ready
// server processes free to host a game session.
func (e *env) waitIdleProcesses(t testing.TB, id string, n int) {
	t.Helper()
	eventually(t, waitLong, fmt.Sprintf("fleet %s with %d idle processes", id, n), func() (bool, string) {
		u := e.utilization(t, id)
		active, sessions := aws.ToInt32(u.ActiveServerProcessCount), aws.ToInt32(u.ActiveGameSessionCount)
		// A ready process hosts an ACTIVE or ACTIVATING game session, or
		// none (ended sessions leave with their process).
		activating := e.activatingSessions(t, id)
		idle := int(active-sessions) - activating
		return idle == n, fmt.Sprintf("%d ready processes, %d active and %d activating game sessions", active, sessions, activating)
	})
}

// activatingSessions counts a fleet's ACTIVATING game sessions.
func (e *env) activatingSessions(t testing.TB, id string) int {
	out, err := e.gl.DescribeGameSessions(e.ctx, &gl.DescribeGameSessionsInput{FleetId: aws.String(id),
		StatusFilter: aws.String(string(types.GameSessionStatusActivating))})
	if err != nil {
		t.Fatalf("DescribeGameSessions: %v", err)
	}
	return len(out.GameSessions)
}

// newFleet creates a fleet and waits until it is ACTIVE with every process
// of its one instance ready.
func (e *env) newFleet(t testing.TB, s fleetSpec) string {
	t.Helper()
	out := e.createFleet(t, s)
	id := aws.ToString(out.FleetAttributes.FleetId)
	e.waitFleet(t, id, types.FleetStatusActive)
	n := s.concurrent
	if n == 0 {
		n = 1
	}
	e.waitIdleProcesses(t, id, int(n))
	return id
}

// deleteFleet deletes a fleet, waits for TERMINATED and checks that none
// of its processes is left.
func (e *env) deleteFleet(t testing.TB, id string) {
	t.Helper()
	if _, err := e.gl.DeleteFleet(e.ctx, &gl.DeleteFleetInput{FleetId: aws.String(id)}); err != nil {
		t.Fatalf("DeleteFleet %s: %v", id, err)
	}
	e.waitFleet(t, id, types.FleetStatusTerminated)
	waitNoProcesses(t, id)
}

// --- game sessions ---

func (e *env) gameSession(t testing.TB, id string) types.GameSession {
	t.Helper()
	out, err := e.gl.DescribeGameSessions(e.ctx, &gl.DescribeGameSessionsInput{GameSessionId: aws.String(id)})
	if err != nil {
		t.Fatalf("DescribeGameSessions %s: %v", id, err)
	}
	if len(out.GameSessions) != 1 {
		t.Fatalf("DescribeGameSessions %s: %d sessions", id, len(out.GameSessions))
	}
	return out.GameSessions[0]
}

// waitGameSession waits for a game session's status.
func (e *env) waitGameSession(t testing.TB, id string, want types.GameSessionStatus) types.GameSession {
	t.Helper()
	var gs types.GameSession
	eventually(t, waitShort, "game session "+id+" "+string(want), func() (bool, string) {
		gs = e.gameSession(t, id)
		return gs.Status == want, string(gs.Status)
	})
	return gs
}

// createGameSession creates a game session on a fleet and waits for ACTIVE.
func (e *env) createGameSession(t testing.TB, fleetID string, maxPlayers int32) types.GameSession {
	t.Helper()
	out, err := e.gl.CreateGameSession(e.ctx, &gl.CreateGameSessionInput{FleetId: aws.String(fleetID),
		MaximumPlayerSessionCount: aws.Int32(maxPlayers)})
	if err != nil {
		t.Fatalf("CreateGameSession on %s: %v", fleetID, err)
	}
	return e.waitGameSession(t, aws.ToString(out.GameSession.GameSessionId), types.GameSessionStatusActive)
}

func (e *env) playerSession(t testing.TB, id string) types.PlayerSession {
	t.Helper()
	out, err := e.gl.DescribePlayerSessions(e.ctx, &gl.DescribePlayerSessionsInput{PlayerSessionId: aws.String(id)})
	if err != nil {
		t.Fatalf("DescribePlayerSessions %s: %v", id, err)
	}
	if len(out.PlayerSessions) != 1 {
		t.Fatalf("DescribePlayerSessions %s: %d sessions", id, len(out.PlayerSessions))
	}
	return out.PlayerSessions[0]
}

func (e *env) waitPlayerSession(t testing.TB, id string, want types.PlayerSessionStatus) types.PlayerSession {
	t.Helper()
	var ps types.PlayerSession
	eventually(t, waitShort, "player session "+id+" "+string(want), func() (bool, string) {
		ps = e.playerSession(t, id)
		return ps.Status == want, string(ps.Status)
	})
	return ps
}

// wantErr checks that err is the modeled error type T.
func wantErr[T error](t testing.TB, what string, err error) T {
	t.Helper()
	var target T
	if !errors.As(err, &target) {
		t.Fatalf("%s: got error %v, want %T", what, err, target)
	}
	return target
}

// --- OS processes ---

// fleetPIDs returns the PIDs of the live processes whose environment names
// the fleet (every server process Hoist launches for it, and game servers
// a test started for it by hand).
func fleetPIDs(fleetID string) []int {
	var out []int
	entries, _ := os.ReadDir("/proc")
	for _, de := range entries {
		pid, err := strconv.Atoi(de.Name())
		if err != nil {
			continue
		}
		if env := processEnv(pid); env["GAMELIFT_SDK_FLEET_ID"] == fleetID {
			out = append(out, pid)
		}
	}
	return out
}

// processEnv returns a process's environment (empty once it has exited,
// zombies included).
func processEnv(pid int) map[string]string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
	if err != nil {
		return nil
	}
	out := map[string]string{}
	for _, kv := range bytes.Split(b, []byte{0}) {
		if k, v, ok := strings.Cut(string(kv), "="); ok {
			out[k] = v
		}
	}
	return out
}

// alive reports whether pid runs (and is not a zombie).
func alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	// The state follows the command name, which is in parentheses.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i > 0 && i+2 < len(s) && s[i+2] != 'Z' && s[i+2] != 'X'
}

// waitNoProcesses waits until no process of the fleet is left.
func waitNoProcesses(t testing.TB, fleetID string) {
	t.Helper()
	eventually(t, waitShort, "no process of fleet "+fleetID, func() (bool, string) {
		pids := fleetPIDs(fleetID)
		return len(pids) == 0, fmt.Sprintf("PIDs %v", pids)
	})
}

// waitPIDs waits until the fleet has n live processes and returns them.
func waitPIDs(t testing.TB, fleetID string, n int) []int {
	t.Helper()
	var pids []int
	eventually(t, waitLong, fmt.Sprintf("%d processes of fleet %s", n, fleetID), func() (bool, string) {
		pids = fleetPIDs(fleetID)
		return len(pids) == n, fmt.Sprintf("PIDs %v", pids)
	})
	return pids
}

// --- the game server's player port ---

// player is a connection to a game server's player port.
type player struct {
	t    testing.TB
	conn net.Conn
	r    *bufio.Reader
}

func dialPlayer(t testing.TB, ip string, port int32) *player {
	t.Helper()
	conn, err := net.DialTimeout("tcp", net.JoinHostPort(ip, strconv.Itoa(int(port))), 5*time.Second)
	if err != nil {
		t.Fatalf("player port %s:%d: %v", ip, port, err)
	}
	p := &player{t: t, conn: conn, r: bufio.NewReader(conn)}
	t.Cleanup(func() { conn.Close() })
	return p
}

// do sends one command and returns the answer line.
func (p *player) do(cmd string) string {
	p.t.Helper()
	_ = p.conn.SetDeadline(time.Now().Add(waitShort))
	if _, err := fmt.Fprintln(p.conn, cmd); err != nil {
		p.t.Fatalf("player command %q: %v", cmd, err)
	}
	line, err := p.r.ReadString('\n')
	if err != nil {
		p.t.Fatalf("player command %q: no answer: %v", cmd, err)
	}
	return strings.TrimSpace(line)
}

// must sends a command that must be answered OK.
func (p *player) must(cmd string) string {
	p.t.Helper()
	if a := p.do(cmd); !strings.HasPrefix(a, "OK") {
		p.t.Fatalf("player command %q: %s", cmd, a)
		return a
	} else {
		return a
	}
}

func (p *player) close() { p.conn.Close() }

//go:build linux

package hosts

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	gl "github.com/aws/aws-sdk-go-v2/service/gamelift"
	"github.com/aws/aws-sdk-go-v2/service/gamelift/types"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/hoistgg/hoist/e2e/hoisttest"
)

// Waits; every wait polls (none is a sleep standing in for time).
const (
	waitLong  = 120 * time.Second
	waitShort = 30 * time.Second
	poll      = 100 * time.Millisecond
)

// Pool hosts' timers in these tests: a host is LOST 1s + 8s after its last
// heartbeat, looked for every 250ms, and every host has 3s to reconnect
// after Hoist starts (an agent notices an unanswered heartbeat after 2s). Instances are missing from a host's reports for at
// most one heartbeat interval before they count as lost.
const (
	heartbeat      = time.Second
	heartbeatGrace = 8 * time.Second
	hostsCheck     = 250 * time.Millisecond
)

// timings are Hoist's timers in these tests.
var timings = []string{
	"fleets.reconcile=200ms", "sessions.sweep=200ms", "sessions.heartbeat-interval=3s", "sessions.heartbeat-jitter=500ms",
	"processes.stagger=20ms", "processes.terminate-grace=3s", "processes.shutdown-grace=3s", "processes.kill-grace=1s",
	"processes.crash-backoff=200ms", "fleets.launch-backoff=500ms", "placement.interval=200ms",
	"hosts.heartbeat=" + heartbeat.String(), "hosts.heartbeat-grace=" + heartbeatGrace.String(),
	"hosts.start-grace=3s", "hosts.check=" + hostsCheck.String(),
}

// processEnv is the environment of every game server (quick health
// reports).
var processEnv = []string{"HEALTHCHECK_INTERVAL=3s", "HEALTHCHECK_MAX_JITTER=100ms", "SERVICE_CALL_TIMEOUT=5s",
	"HOIST_TEST_RECONNECT_INTERVAL=1s"}

// agentTimings are the agents' process timers.
const agentTimings = "processes.stagger=20ms,processes.terminate-grace=3s,processes.shutdown-grace=3s,processes.kill-grace=1s,processes.crash-backoff=200ms"

// env is a running Hoist listening on ip, and its clients.
type env struct {
	h   *hoisttest.Hoist
	gl  *gl.Client
	ctx context.Context
	bin string
}

// startHoist starts Hoist with credentials, listening (plain and TLS) on
// ip, which is also its instance IP (its TLS certificate names it).
func startHoist(t *testing.T, ip string) *env {
	t.Helper()
	return startHoistOn(t, hoisttest.Options{}, net.JoinHostPort(ip, "0"), net.JoinHostPort(ip, "0"))
}

// startHoistOn starts Hoist with opts on the given plain and TLS
// addresses (their IP is its instance IP).
func startHoistOn(t *testing.T, opts hoisttest.Options, addr, tlsAddr string) *env {
	t.Helper()
	ip, _, _ := net.SplitHostPort(addr)
	opts.Args = []string{"--addr", addr, "--tls-addr", tlsAddr, "--instance-ip", ip,
		"--timings", strings.Join(timings, ","), "--process-env", strings.Join(processEnv, ","), "--log-level", "debug"}
	h := hoisttest.Start(t, opts)
	e := &env{h: h, gl: h.V2(), ctx: hoisttest.Context(t, 15*time.Minute), bin: hoisttest.Binary(t)}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("hoist log:\n%s", hoisttest.Tail(withoutRequests(h.Log()), 300))
		}
	})
	return e
}

// admin runs `hoist admin args...` against Hoist and returns its output.
func (e *env) admin(t *testing.T, args ...string) string {
	t.Helper()
	out, err := e.adminErr(args...)
	if err != nil {
		t.Fatalf("hoist admin %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// adminErr runs `hoist admin args...` and returns its output and error.
func (e *env) adminErr(args ...string) (string, error) {
	cmd := exec.Command(e.bin, append(append([]string{"admin"}, args[0], "--endpoint", e.h.URL), args[1:]...)...)
	cmd.Env = append(os.Environ(), "AWS_ACCESS_KEY_ID="+hoisttest.AccessKeyID, "AWS_SECRET_ACCESS_KEY="+hoisttest.SecretAccessKey,
		"AWS_REGION="+hoisttest.Region)
	out, err := cmd.CombinedOutput()
	return strings.TrimSpace(string(out)), err
}

// token creates an enrolment token for pool.
func (e *env) token(t *testing.T, pool string) string {
	return e.admin(t, "create-enrolment-token", "--pool", pool)
}

// hostInfo is a host as list-hosts shows it.
type hostInfo struct {
	HostId, Location, Address, Status string
	Instances                         int
	Connected                         bool
	// Local: Hoist's own machine (its local agent), not a pool host.
	Local bool
}

// hosts lists the hosts by ID.
func (e *env) hosts(t *testing.T) map[string]hostInfo {
	t.Helper()
	var out struct{ Hosts []hostInfo }
	if err := json.Unmarshal([]byte(e.admin(t, "list-hosts")), &out); err != nil {
		t.Fatal(err)
	}
	m := map[string]hostInfo{}
	for _, h := range out.Hosts {
		m[h.HostId] = h
	}
	return m
}

// agent is a running `hoist agent --pool`.
type agent struct {
	hostID string
	addr   string
	dir    string
	cmd    *exec.Cmd
	out    *hoisttest.SyncBuffer
	done   chan struct{}
}

// agentSpec is how to start an agent.
type agentSpec struct {
	pool, location, addr, instances string
	// command makes the command (exec.CommandContext, or a netns host's
	// Command).
	command func(ctx context.Context, name string, args ...string) *exec.Cmd
	// dir reuses a state directory (an agent started again).
	dir string
}

// startAgent starts an agent, enrolling it with a fresh token when its
// directory is new, and waits until it is connected.
func (e *env) startAgent(t *testing.T, s agentSpec) *agent {
	t.Helper()
	if s.dir == "" {
		tmp := t.TempDir()
		s.dir = filepath.Join(tmp, "agent")
		// The game users pass through the test's temporary directories.
		_ = os.Chmod(tmp, 0o711)
		_ = os.Chmod(filepath.Dir(tmp), 0o711)
	}
	ready := filepath.Join(t.TempDir(), "ready.json")
	args := []string{"agent", "--pool", s.pool, "--endpoint", e.h.TLSURL, "--dir", s.dir, "--reconnect-max", "1s",
		"--timings", agentTimings, "--log-level", "debug"}
	if _, err := os.Stat(filepath.Join(s.dir, "host.json")); err != nil {
		args = append(args, "--enrolment-token", e.token(t, s.pool), "--location", s.location, "--address", s.addr,
			"--instances", s.instances)
	}
	cmd := s.command(context.Background(), e.bin, args...)
	cmd.Env = append(os.Environ(), "HOIST_READY_FILE="+ready)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	a := &agent{addr: s.addr, dir: s.dir, cmd: cmd, out: &hoisttest.SyncBuffer{}, done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = a.out, a.out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = cmd.Wait(); close(a.done) }()
	t.Cleanup(func() {
		a.stop()
		if t.Failed() {
			t.Logf("agent %s log:\n%s", a.hostID, hoisttest.Tail(a.out.String(), 200))
		}
	})
	eventually(t, waitShort, "agent ready", func() (bool, string) {
		b, err := os.ReadFile(ready)
		if err == nil {
			var r struct {
				HostID string `json:"host_id"`
			}
			if json.Unmarshal(b, &r) == nil {
				a.hostID = r.HostID
			}
		}
		select {
		case <-a.done:
			t.Fatalf("the agent exited:\n%s", a.out.String())
		default:
		}
		return a.hostID != "" && strings.Contains(a.out.String(), "connected to Hoist"), hoisttest.Tail(a.out.String(), 3)
	})
	return a
}

// kill9 kills the agent alone (SIGKILL), as a host that dies.
func (a *agent) kill9() {
	_ = a.cmd.Process.Signal(syscall.SIGKILL)
	<-a.done
}

// stop stops the agent (SIGTERM, then its group is killed after 20s).
func (a *agent) stop() {
	select {
	case <-a.done:
		return
	default:
	}
	_ = a.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-a.done:
	case <-time.After(20 * time.Second):
		_ = syscall.Kill(-a.cmd.Process.Pid, syscall.SIGKILL)
		<-a.done
	}
}

// withoutRequests drops the log lines of SDK requests (heartbeats mostly).
func withoutRequests(log string) string {
	var keep []string
	for _, l := range strings.Split(log, "\n") {
		if !strings.Contains(l, `msg="sdk: request"`) {
			keep = append(keep, l)
		}
	}
	return strings.Join(keep, "\n")
}

// eventually polls cond until it reports done or timeout passes.
func eventually(t testing.TB, timeout time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	hoisttest.Eventually(t, poll, timeout, what, cond)
}

// --- the game server build ---

// uploadGameServer uploads the game server as a build (CreateBuild, then
// an S3 PutObject with the upload credentials) and waits until it is READY.
func (e *env) uploadGameServer(t *testing.T, name string) string {
	t.Helper()
	out, err := e.gl.CreateBuild(e.ctx, &gl.CreateBuildInput{Name: aws.String(name), Version: aws.String("1"),
		OperatingSystem: types.OperatingSystemAmazonLinux2023})
	if err != nil {
		t.Fatal(err)
	}
	c := out.UploadCredentials
	s3c := s3.New(s3.Options{Region: hoisttest.Region, BaseEndpoint: aws.String(e.h.URL), UsePathStyle: true,
		Credentials: credentials.NewStaticCredentialsProvider(aws.ToString(c.AccessKeyId), aws.ToString(c.SecretAccessKey), aws.ToString(c.SessionToken))})
	if _, err := s3c.PutObject(e.ctx, &s3.PutObjectInput{Bucket: out.StorageLocation.Bucket, Key: out.StorageLocation.Key,
		Body: bytes.NewReader(hoisttest.GameServerZip(t))}); err != nil {
		t.Fatal(err)
	}
	id := aws.ToString(out.Build.BuildId)
	eventually(t, waitShort, "build READY", func() (bool, string) {
		b, err := e.gl.DescribeBuild(e.ctx, &gl.DescribeBuildInput{BuildId: aws.String(id)})
		if err != nil {
			return false, err.Error()
		}
		return b.Build.Status == types.BuildStatusReady, string(b.Build.Status)
	})
	return id
}

// createFleet creates a fleet of the game server (players accepted on a
// port open on every address of its host) in the given locations (the
// home Region first), with one instance in each.
func (e *env) createFleet(t *testing.T, build string, locations ...string) string {
	t.Helper()
	in := &gl.CreateFleetInput{Name: aws.String("hosts"), BuildId: aws.String(build), EC2InstanceType: types.EC2InstanceTypeC5Large,
		RuntimeConfiguration: &types.RuntimeConfiguration{ServerProcesses: []types.ServerProcess{{
			LaunchPath: aws.String("/local/game/gameserver"), Parameters: aws.String("-host 0.0.0.0 -accept-players"),
			ConcurrentExecutions: aws.Int32(2)}}},
	}
	for _, l := range locations {
		in.Locations = append(in.Locations, types.LocationConfiguration{Location: aws.String(l)})
	}
	out, err := e.gl.CreateFleet(e.ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	return aws.ToString(out.FleetAttributes.FleetId)
}

// instances lists a fleet's instances in a location.
func (e *env) instances(t *testing.T, fleetID, loc string) []types.Instance {
	t.Helper()
	out, err := e.gl.DescribeInstances(e.ctx, &gl.DescribeInstancesInput{FleetId: aws.String(fleetID), Location: aws.String(loc)})
	if err != nil {
		t.Fatal(err)
	}
	return out.Instances
}

// activeInstances returns the ACTIVE instances of a fleet's locations.
func (e *env) activeInstances(t *testing.T, fleetID string, locs ...string) []types.Instance {
	t.Helper()
	var out []types.Instance
	for _, l := range locs {
		for _, in := range e.instances(t, fleetID, l) {
			if in.Status == types.InstanceStatusActive {
				out = append(out, in)
			}
		}
	}
	return out
}

// waitLocationActive waits until a fleet's location is ACTIVE.
func (e *env) waitLocationActive(t *testing.T, fleetID, loc string) {
	t.Helper()
	eventually(t, waitLong, "location "+loc+" ACTIVE", func() (bool, string) {
		out, err := e.gl.DescribeFleetLocationAttributes(e.ctx, &gl.DescribeFleetLocationAttributesInput{FleetId: aws.String(fleetID),
			Locations: []string{loc}})
		if err != nil || len(out.LocationAttributes) == 0 {
			return false, fmt.Sprint(err)
		}
		st := out.LocationAttributes[0].LocationState.Status
		if st == types.FleetStatusError {
			t.Fatalf("location %s is ERROR; events:\n%s", loc, e.eventText(t, fleetID))
		}
		return st == types.FleetStatusActive, string(st)
	})
}

// eventText lists a fleet's events.
func (e *env) eventText(t *testing.T, fleetID string) string {
	var b strings.Builder
	in := &gl.DescribeFleetEventsInput{FleetId: aws.String(fleetID), Limit: aws.Int32(100)}
	for {
		out, err := e.gl.DescribeFleetEvents(e.ctx, in)
		if err != nil {
			return err.Error()
		}
		for _, ev := range out.Events {
			fmt.Fprintf(&b, "  %s %s\n", ev.EventCode, aws.ToString(ev.Message))
		}
		if out.NextToken == nil {
			return b.String()
		}
		in.NextToken = out.NextToken
	}
}

// hasEvent reports whether a fleet has an event with code.
func (e *env) hasEvent(t *testing.T, fleetID string, code types.EventCode) bool {
	return strings.Contains(e.eventText(t, fleetID), string(code)+" ")
}

// acceptPlayer connects to a game session's game server as a player and
// has it accept the player session; it returns the game server's answer
// and the connection, which the caller closes (the player leaves).
func acceptPlayer(t *testing.T, dial func(ctx context.Context, network, addr string) (net.Conn, error), ip string, port int32, playerSession string) (string, net.Conn) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := dial(ctx, "tcp", net.JoinHostPort(ip, fmt.Sprint(port)))
	if err != nil {
		t.Fatalf("connecting to the game server at %s:%d: %v", ip, port, err)
	}
	t.Cleanup(func() { conn.Close() })
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	fmt.Fprintln(conn, playerSession)
	line, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil {
		t.Fatalf("reading the game server's answer: %v", err)
	}
	return strings.TrimSpace(line), conn
}

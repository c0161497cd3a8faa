//go:build linux

package hosts

import (
	"archive/zip"
	"bytes"
	"context"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	gl "github.com/aws/aws-sdk-go-v2/service/gamelift"
	"github.com/aws/aws-sdk-go-v2/service/gamelift/types"

	"github.com/hoistgg/hoist/e2e/hoisttest"
)

var dialer = (&net.Dialer{}).DialContext

// session is a game session with a player accepted on it.
type session struct {
	id, ip string
	port   int32
	player string
	conn   net.Conn
}

// playSession creates a game session on a fleet location, a player session
// on it, and has the game server accept the player (dial reaches the
// host); it checks that both report the same address.
func (e *env) playSession(t *testing.T, fleetID, loc string, dial func(context.Context, string, string) (net.Conn, error)) session {
	t.Helper()
	in := &gl.CreateGameSessionInput{FleetId: aws.String(fleetID), MaximumPlayerSessionCount: aws.Int32(4)}
	if loc != "" {
		in.Location = aws.String(loc)
	}
	out, err := e.gl.CreateGameSession(e.ctx, in)
	if err != nil {
		t.Fatalf("CreateGameSession in %s: %v", loc, err)
	}
	id := aws.ToString(out.GameSession.GameSessionId)
	e.waitGameSession(t, id, types.GameSessionStatusActive)
	ps, err := e.gl.CreatePlayerSession(e.ctx, &gl.CreatePlayerSessionInput{GameSessionId: aws.String(id), PlayerId: aws.String("player-1")})
	if err != nil {
		t.Fatal(err)
	}
	s := session{id: id, ip: aws.ToString(ps.PlayerSession.IpAddress), port: aws.ToInt32(ps.PlayerSession.Port),
		player: aws.ToString(ps.PlayerSession.PlayerSessionId)}
	if gs := e.gameSession(t, id); aws.ToString(gs.IpAddress) != s.ip {
		t.Fatalf("game session at %s, its player session at %s", aws.ToString(gs.IpAddress), s.ip)
	}
	var answer string
	answer, s.conn = acceptPlayer(t, dial, s.ip, s.port, s.player)
	if answer != "OK" {
		t.Fatalf("the game server answered %q to the player session", answer)
	}
	eventually(t, waitShort, "player session ACTIVE", func() (bool, string) {
		out, err := e.gl.DescribePlayerSessions(e.ctx, &gl.DescribePlayerSessionsInput{PlayerSessionId: aws.String(s.player)})
		if err != nil || len(out.PlayerSessions) == 0 {
			return false, "not found"
		}
		return out.PlayerSessions[0].Status == types.PlayerSessionStatusActive, string(out.PlayerSessions[0].Status)
	})
	return s
}

// gameSession describes a game session.
func (e *env) gameSession(t *testing.T, id string) types.GameSession {
	t.Helper()
	out, err := e.gl.DescribeGameSessions(e.ctx, &gl.DescribeGameSessionsInput{GameSessionId: aws.String(id)})
	if err != nil || len(out.GameSessions) != 1 {
		t.Fatalf("DescribeGameSessions %s: %v", id, err)
	}
	return out.GameSessions[0]
}

// waitGameSession waits for a game session's status.
func (e *env) waitGameSession(t *testing.T, id string, want types.GameSessionStatus) types.GameSession {
	t.Helper()
	var gs types.GameSession
	eventually(t, waitShort, "game session "+string(want), func() (bool, string) {
		gs = e.gameSession(t, id)
		return gs.Status == want, string(gs.Status) + " " + string(gs.StatusReason)
	})
	return gs
}

// TestPoolHostOnLoopback: a pool host on this machine (its agent enrolled
// with address 127.0.0.2) runs a managed fleet's instance: the instance,
// game session and player session report its address, and its game
// server accepts players; then a second host joins and the first is
// drained: its busy instance keeps its game session and takes no new one,
// a replacement runs on the second host, and the drained instance stops
// once its game session ended; undrained, it takes the fleet's next
// instance again; last, both hosts are removed (the busy one
// only with --force) and the fleet's instance runs on Hoist's own machine.
func TestPoolHostOnLoopback(t *testing.T) {
	e := startHoist(t, "127.0.0.1")
	a := e.startAgent(t, agentSpec{pool: "lo", location: "us-west-2", addr: "127.0.0.2", instances: "c5.large=2", command: exec.CommandContext})
	build := e.uploadGameServer(t, "lo")
	fleet := e.createFleet(t, build)
	e.waitLocationActive(t, fleet, "us-west-2")
	insts := e.activeInstances(t, fleet, "us-west-2")
	if len(insts) != 1 || aws.ToString(insts[0].IpAddress) != "127.0.0.2" ||
		aws.ToString(insts[0].DnsName) != "ec2-127-0-0-2.us-west-2.compute.hoist.localhost" {
		t.Fatalf("instances %+v: want one at the host's address 127.0.0.2", insts)
	}
	s := e.playSession(t, fleet, "", dialer)
	if s.ip != "127.0.0.2" {
		t.Fatalf("game session at %s, want the host's 127.0.0.2", s.ip)
	}
	if h := e.hosts(t)[a.hostID]; h.Status != "ACTIVE" || !h.Connected || h.Instances != 1 {
		t.Fatalf("host %+v: want ACTIVE, connected, 1 instance", h)
	}

	t.Run("hostile agent", func(t *testing.T) { e.hostileAgent(t, fleet, a, s) })

	// A second host joins (started by the test itself: it outlives the
	// subtests).
	b := e.startAgent(t, agentSpec{pool: "lo", location: "us-west-2", addr: "127.0.0.3", instances: "c5.large=2", command: exec.CommandContext})
	var s2 session
	drained := t.Run("drain", func(t *testing.T) {
		t.Cleanup(func() {
			if t.Failed() {
				t.Logf("fleet events:\n%s", e.eventText(t, fleet))
			}
		})
		busy := aws.ToString(insts[0].InstanceId)
		out := e.admin(t, "drain-host", "--host", a.hostID)
		if !strings.Contains(out, `"DRAINING"`) {
			t.Fatalf("drain-host: %s", out)
		}
		eventually(t, waitShort, "the hosts in /metrics as list-hosts lists them", func() (bool, string) {
			m, err := hoisttest.Scrape(e.h.URL, "")
			if err != nil {
				t.Fatal(err)
			}
			listed := map[string]float64{}
			for _, h := range e.hosts(t) {
				listed[h.Status]++
			}
			got := map[string]float64{}
			for _, st := range []string{"ACTIVE", "DRAINING", "LOST"} {
				got[st], _ = m.Value("hoist_hosts", map[string]string{"status": st})
			}
			return got["DRAINING"] == 1 && maps.Equal(got, map[string]float64{"ACTIVE": listed["ACTIVE"], "DRAINING": listed["DRAINING"],
				"LOST": listed["LOST"]}), fmt.Sprintf("hoist_hosts %v, list-hosts %v", got, listed)
		})
		eventually(t, waitLong, "a replacement on the second host", func() (bool, string) {
			var on []string
			for _, in := range e.activeInstances(t, fleet, "us-west-2") {
				on = append(on, aws.ToString(in.IpAddress))
			}
			return len(on) == 2 && strings.Contains(strings.Join(on, ","), "127.0.0.3"), strings.Join(on, ",")
		})
		// New game sessions go to the second host; the busy instance keeps its own.
		s2 = e.playSession(t, fleet, "", dialer)
		if s2.ip != "127.0.0.3" {
			t.Fatalf("a new game session on the draining host (%s)", s2.ip)
		}
		if gs := e.gameSession(t, s.id); gs.Status != types.GameSessionStatusActive {
			t.Fatalf("the draining host's game session is %s", gs.Status)
		}
		if _, err := e.gl.TerminateGameSession(e.ctx, &gl.TerminateGameSessionInput{GameSessionId: aws.String(s.id),
			TerminationMode: types.TerminationModeTriggerOnProcessTerminate}); err != nil {
			t.Fatal(err)
		}
		eventually(t, waitLong, "the drained instance stopped", func() (bool, string) {
			for _, in := range e.instances(t, fleet, "us-west-2") {
				if aws.ToString(in.InstanceId) == busy {
					return false, string(in.Status)
				}
			}
			return e.hosts(t)[a.hostID].Instances == 0, "gone"
		})
		if n := e.hosts(t)[b.hostID].Instances; n != 1 {
			t.Fatalf("the second host runs %d instances, want 1", n)
		}
		// The ended game session's logs came from its host.
		files := e.gameSessionLogs(t, s.id)
		if !strings.Contains(files["process-output.log"], "ready") || !hasPrefix(files, "files/logs/gameserver-") {
			t.Fatalf("the game session's logs: %v, want the process's output and its log file", keys(files))
		}
	})
	undrained := drained && t.Run("undrain", func(t *testing.T) { e.undrainHost(t, fleet, a) })
	t.Run("remove", func(t *testing.T) {
		if !undrained {
			t.Skip("drain or undrain failed")
		}
		e.removeHosts(t, fleet, a, b, s2)
	})
}

// undrainHost undrains the drained host a (hoist admin undrain-host): it
// is ACTIVE and takes the fleet's next instance (a has none of the fleet,
// the busy second host one); scaled back to one instance, the fleet stops
// that idle one, so that a runs none again.
func (e *env) undrainHost(t *testing.T, fleetID string, a *agent) {
	out := e.admin(t, "undrain-host", "--host", a.hostID)
	if !strings.Contains(out, `"ACTIVE"`) {
		t.Fatalf("undrain-host: %s", out)
	}
	if h := e.hosts(t)[a.hostID]; h.Status != "ACTIVE" {
		t.Fatalf("the undrained host is %s, want ACTIVE", h.Status)
	}
	scale := func(n int32) {
		if _, err := e.gl.UpdateFleetCapacity(e.ctx, &gl.UpdateFleetCapacityInput{FleetId: aws.String(fleetID),
			DesiredInstances: aws.Int32(n), MinSize: aws.Int32(0), MaxSize: aws.Int32(2)}); err != nil {
			t.Fatal(err)
		}
	}
	scale(2)
	eventually(t, waitLong, "an instance on the undrained host", func() (bool, string) {
		var on []string
		for _, in := range e.activeInstances(t, fleetID, "us-west-2") {
			on = append(on, aws.ToString(in.IpAddress))
		}
		return len(on) == 2 && strings.Contains(strings.Join(on, ","), "127.0.0.2"), strings.Join(on, ",")
	})
	scale(1)
	eventually(t, waitLong, "the undrained host's idle instance stopped", func() (bool, string) {
		n := e.hosts(t)[a.hostID].Instances
		return n == 0, fmt.Sprint(n, " instances")
	})
}

// removeHosts removes the drained host a, then host b, which runs the
// fleet's instance: refused without --force; with it, b's game session s
// ends INTERRUPTED (gamelift_GameSessionInterruptions counts it), both agents end and exit, and with no host left in
// us-west-2 (the hostile host, LOST, is removed too) the fleet's
// replacement instance runs on Hoist's own machine.
func (e *env) removeHosts(t *testing.T, fleetID string, a, b *agent, s session) {
	if out, err := e.adminErr("remove-host", "--host", b.hostID); err == nil || !strings.Contains(out, "runs 1 instances") {
		t.Fatalf("remove-host of a host running an instance: %v %s, want refused", err, out)
	}
	var onB []string
	for _, in := range e.activeInstances(t, fleetID, "us-west-2") {
		onB = append(onB, aws.ToString(in.InstanceId))
	}
	e.admin(t, "remove-host", "--host", a.hostID)
	for _, g := range []*agent{a, b} {
		if g == b {
			e.admin(t, "remove-host", "--host", b.hostID, "--force")
		}
		select {
		case <-g.done:
		case <-time.After(waitShort):
			t.Fatalf("agent %s still runs after its host was removed", g.hostID)
		}
		if !strings.Contains(g.out.String(), "the host was removed") {
			t.Fatalf("agent %s exited without saying its host was removed:\n%s", g.hostID, hoisttest.Tail(g.out.String(), 5))
		}
		if _, ok := e.hosts(t)[g.hostID]; ok {
			t.Fatalf("host %s still listed", g.hostID)
		}
	}
	if gs := e.waitGameSession(t, s.id, types.GameSessionStatusTerminated); gs.StatusReason != types.GameSessionStatusReasonInterrupted {
		t.Fatalf("the removed host's game session ended %s, want INTERRUPTED", gs.StatusReason)
	}
	eventually(t, waitShort, "the interruption in /metrics", func() (bool, string) {
		m, err := hoisttest.Scrape(e.h.URL, "")
		if err != nil {
			t.Fatal(err)
		}
		n, _ := m.Value("gamelift_GameSessionInterruptions", map[string]string{"FleetId": fleetID, "Location": "us-west-2"})
		return n == 1, fmt.Sprint("gamelift_GameSessionInterruptions ", n)
	})
	// The hostile subtest's host, silent since, is LOST: removable too.
	// Then no pool host is enrolled in us-west-2 any more (Hoist's own
	// machine, its local agent, stays).
	for id, h := range e.hosts(t) {
		if h.Local {
			continue
		}
		eventually(t, waitShort, "host "+id+" LOST", func() (bool, string) {
			st := e.hosts(t)[id].Status
			return st == "LOST", st
		})
		e.admin(t, "remove-host", "--host", id)
	}
	eventually(t, waitLong, "the replacement on Hoist's own machine", func() (bool, string) {
		on := e.activeInstances(t, fleetID, "us-west-2")
		return len(on) == 1 && aws.ToString(on[0].IpAddress) == "127.0.0.1", fmt.Sprint(len(on), " instances")
	})
	for _, id := range onB {
		if n := instanceProcesses(id); n != 0 {
			t.Fatalf("%d game servers of the removed host's instance %s still run", n, id)
		}
	}
}

// instanceProcesses counts the game servers running for an instance (by
// their GAMELIFT_SDK_HOST_ID).
func instanceProcesses(instanceID string) int {
	n := 0
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		env, err := os.ReadFile("/proc/" + e.Name() + "/environ")
		if err != nil || !bytes.Contains(env, []byte("GAMELIFT_SDK_HOST_ID="+instanceID+"\x00")) {
			continue
		}
		if exe, _ := os.Readlink("/proc/" + e.Name() + "/exe"); filepath.Base(exe) == "gameserver" {
			n++
		}
	}
	return n
}

// gameSessionLogs downloads a game session's logs (GetGameSessionLogUrl)
// and returns its files by name.
func (e *env) gameSessionLogs(t *testing.T, id string) map[string]string {
	t.Helper()
	var u string
	eventually(t, waitShort, "the game session's logs", func() (bool, string) {
		out, err := e.gl.GetGameSessionLogUrl(e.ctx, &gl.GetGameSessionLogUrlInput{GameSessionId: aws.String(id)})
		if err != nil {
			return false, err.Error()
		}
		u = aws.ToString(out.PreSignedUrl)
		return true, ""
	})
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET the log URL: %s: %s", resp.Status, body)
	}
	zr, err := zip.NewReader(bytes.NewReader(body), int64(len(body)))
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{}
	for _, f := range zr.File {
		rc, err := f.Open()
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(rc)
		rc.Close()
		files[f.Name] = string(b)
	}
	return files
}

func hasPrefix(files map[string]string, prefix string) bool {
	for name := range files {
		if strings.HasPrefix(name, prefix) {
			return true
		}
	}
	return false
}

func keys(files map[string]string) []string {
	var out []string
	for name := range files {
		out = append(out, name)
	}
	return out
}

// TestPoolHostSurvivesHoistRestart: Hoist stops and starts again on the
// same addresses and data directory; the pool host keeps its instance and
// processes, reconnects, and Hoist keeps them (the same instance, no
// replacement). Reports about the instance then reach the fleet through
// hooks made from the store (fleets.Service.HooksFor): a game session
// force-terminated after the restart ends, its process is reported ended
// and replaced.
func TestPoolHostSurvivesHoistRestart(t *testing.T) {
	addr, err1 := hoisttest.FreeLoopbackAddr()
	tlsAddr, err2 := hoisttest.FreeLoopbackAddr()
	if err1 != nil || err2 != nil {
		t.Fatal(err1, err2)
	}
	dataDir := t.TempDir()
	_ = os.Chmod(filepath.Dir(dataDir), 0o711)
	e := startHoistOn(t, hoisttest.Options{DataDir: dataDir}, addr, tlsAddr)
	a := e.startAgent(t, agentSpec{pool: "lo", location: "us-west-2", addr: "127.0.0.2", instances: "c5.large=2", command: exec.CommandContext})
	fleet := e.createFleet(t, e.uploadGameServer(t, "restart"))
	e.waitLocationActive(t, fleet, "us-west-2")
	before := e.activeInstances(t, fleet, "us-west-2")
	procs := func() []string {
		files, _ := filepath.Glob(filepath.Join(a.dir, "instances", fleet, "*", "logs", "process-*.log"))
		return files
	}
	started := len(procs())

	e.h.Stop()
	e = startHoistOn(t, hoisttest.Options{DataDir: dataDir}, addr, tlsAddr)
	eventually(t, waitShort, "the agent reconnected", func() (bool, string) {
		return strings.Count(a.out.String(), "connected to Hoist") >= 2, "not yet"
	})
	eventually(t, waitLong, "the same instance ACTIVE, its processes ready again", func() (bool, string) {
		after := e.activeInstances(t, fleet, "us-west-2")
		if len(after) != 1 || aws.ToString(after[0].InstanceId) != aws.ToString(before[0].InstanceId) {
			return false, fmt.Sprint(after)
		}
		_, err := e.gl.CreateGameSession(e.ctx, &gl.CreateGameSessionInput{FleetId: aws.String(fleet), MaximumPlayerSessionCount: aws.Int32(2),
			IdempotencyToken: aws.String("after-restart")})
		return err == nil, fmt.Sprint(err)
	})
	if e.hasEvent(t, fleet, types.EventCodeInstanceInterrupted) || e.hasEvent(t, fleet, types.EventCodeInstanceRecycled) {
		t.Fatalf("an instance was lost across the restart:\n%s", e.eventText(t, fleet))
	}
	out, err := e.gl.DescribeGameSessions(e.ctx, &gl.DescribeGameSessionsInput{FleetId: aws.String(fleet)})
	if err != nil || len(out.GameSessions) != 1 {
		t.Fatalf("DescribeGameSessions: %v", err)
	}
	id := aws.ToString(out.GameSessions[0].GameSessionId)
	e.waitGameSession(t, id, types.GameSessionStatusActive)
	if _, err := e.gl.TerminateGameSession(e.ctx, &gl.TerminateGameSessionInput{GameSessionId: aws.String(id),
		TerminationMode: types.TerminationModeForceTerminate}); err != nil {
		t.Fatal(err)
	}
	e.waitGameSession(t, id, types.GameSessionStatusTerminated)
	eventually(t, waitShort, "the killed process replaced", func() (bool, string) {
		return len(procs()) > started, fmt.Sprint(len(procs()), " process outputs")
	})
}

// TestFleetTakesItsFirstHostAtOnce: a fleet created while no host can
// take an instance (Hoist's own machine runs none: --local-hosting off)
// stays NEW, and becomes ACTIVE as soon as a host enrols, without waiting
// for the reconciler's next interval (an hour here): a host's Hello wakes
// it. It stayed NEW before.
func TestFleetTakesItsFirstHostAtOnce(t *testing.T) {
	ip := "127.0.0.1"
	h := hoisttest.Start(t, hoisttest.Options{Args: []string{"--addr", ip + ":0", "--tls-addr", ip + ":0", "--instance-ip", ip,
		"--local-hosting", "off", "--timings", strings.Join(append(append([]string{}, timings...), "fleets.reconcile=1h"), ","),
		"--process-env", strings.Join(processEnv, ","), "--log-level", "debug"}})
	e := &env{h: h, gl: h.V2(), ctx: hoisttest.Context(t, 5*time.Minute), bin: hoisttest.Binary(t)}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("hoist log:\n%s", hoisttest.Tail(withoutRequests(h.Log()), 200))
		}
	})
	build := e.uploadGameServer(t, "first-host")
	fleet := e.createFleet(t, build)
	out, err := e.gl.DescribeFleetAttributes(e.ctx, &gl.DescribeFleetAttributesInput{FleetIds: []string{fleet}})
	if err != nil || len(out.FleetAttributes) != 1 || out.FleetAttributes[0].Status != types.FleetStatusNew {
		t.Fatalf("a fleet no host can take: %+v, %v; want NEW", out, err)
	}
	e.startAgent(t, agentSpec{pool: "lo", location: "us-west-2", addr: "127.0.0.2", instances: "c5.large=1", command: exec.CommandContext})
	e.waitLocationActive(t, fleet, "us-west-2")
}

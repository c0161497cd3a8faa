package hosting

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	gl "github.com/aws/aws-sdk-go-v2/service/gamelift"
	"github.com/aws/aws-sdk-go-v2/service/gamelift/types"

	"github.com/hoistgg/hoist/e2e/hoisttest"
)

// restartEnv is baseEnv with the test game server's first reconnect wait
// shortened (the official Go SDK's is 8 s): the game servers find the
// restarted Hoist within a second.
var restartEnv = append(append([]string{}, baseEnv...), "HOIST_TEST_RECONNECT_INTERVAL=1s")

// restartAddrs are the fixed listener addresses of a Hoist that restarts:
// its game servers reconnect to the URL they were given.
type restartAddrs struct{ addr, tlsAddr string }

func newRestartAddrs(t *testing.T) restartAddrs {
	t.Helper()
	a, err := hoisttest.FreeLoopbackAddr()
	if err != nil {
		t.Fatal(err)
	}
	b, err := hoisttest.FreeLoopbackAddr()
	if err != nil {
		t.Fatal(err)
	}
	return restartAddrs{a, b}
}

// startRestartable starts Hoist (the default local hosting: a local agent)
// on dataDir ("": a new one) and addrs, with the timings and environment
// of the restart tests.
func startRestartable(t *testing.T, dataDir string, addrs restartAddrs) *env {
	t.Helper()
	h := hoisttest.Start(t, hoisttest.Options{DataDir: dataDir, Args: []string{
		"--addr", addrs.addr, "--tls-addr", addrs.tlsAddr,
		"--timings", strings.Join(dedupe(append(append([]string{}, baseTimings...), "hosts.heartbeat=1s")), ","),
		"--process-env", strings.Join(restartEnv, ","),
		"--log-level", "debug",
	}})
	e := &env{h: h, gl: h.V2(), ctx: hoisttest.Context(t, 10*time.Minute)}
	e.dumpOnFailure(t)
	return e
}

// TestRestartEndsNoGame: with the default local hosting, a game session
// ACTIVE with an accepted player survives a restart of Hoist, stopped
// with SIGTERM and then killed with kill -9: the same game server keeps
// running (its process ID is unchanged), the game session stays ACTIVE
// with its player session, the game server reconnects to the new Hoist,
// and it accepts a new player afterwards.
func TestRestartEndsNoGame(t *testing.T) {
	addrs := newRestartAddrs(t)
	e := startRestartable(t, "", addrs)
	buildID := e.uploadGameServer(t, "restart")
	fleetID := e.newFleet(t, fleetSpec{name: "restart", build: buildID, params: "-accept-players"})
	gs := e.createGameSession(t, fleetID, 4)
	gsID := aws.ToString(gs.GameSessionId)
	ip, port := aws.ToString(gs.IpAddress), aws.ToInt32(gs.Port)
	pids := waitPIDs(t, fleetID, 1)

	// admit creates a player session and has a player connect with it,
	// returning the player's connection (closing it removes the player).
	admit := func(e *env, player string) *player {
		t.Helper()
		out, err := e.gl.CreatePlayerSession(e.ctx, &gl.CreatePlayerSessionInput{GameSessionId: &gsID, PlayerId: aws.String(player)})
		if err != nil {
			t.Fatalf("CreatePlayerSession %s: %v", player, err)
		}
		psID := aws.ToString(out.PlayerSession.PlayerSessionId)
		p := dialPlayer(t, ip, port)
		// Right after a restart the game server may still be reconnecting
		// (its SDK calls then fail, as the official SDK's do): retry.
		eventually(t, waitShort, "the game server to accept "+player, func() (bool, string) {
			out := p.do("ACCEPT " + psID)
			return out == "OK", out
		})
		e.waitPlayerSession(t, psID, types.PlayerSessionStatusActive)
		return p
	}
	first := admit(e, "before") // stays in the game through both restarts
	defer first.close()

	for _, restart := range []struct {
		name string
		stop func(*hoisttest.Hoist)
	}{
		{"SIGTERM", func(h *hoisttest.Hoist) {
			if err := h.Process.StopWith(syscall.SIGTERM, 30*time.Second); err != nil {
				t.Fatal(err)
			}
		}},
		{"kill -9", func(h *hoisttest.Hoist) { h.Kill() }},
	} {
		restart.stop(e.h)
		if got := fleetPIDs(fleetID); len(got) != 1 || got[0] != pids[0] {
			t.Fatalf("after %s of Hoist the game servers are %v, want %v still running", restart.name, got, pids)
		}
		e = startRestartable(t, e.h.DataDir, addrs)
		if got := e.gameSession(t, gsID); got.Status != types.GameSessionStatusActive || aws.ToInt32(got.CurrentPlayerSessionCount) != 1 {
			t.Fatalf("after %s and a restart the game session is %s with %d players, want ACTIVE with 1",
				restart.name, got.Status, aws.ToInt32(got.CurrentPlayerSessionCount))
		}
		p := admit(e, "after-"+strings.ReplaceAll(restart.name, " ", ""))
		if n := aws.ToInt32(e.gameSession(t, gsID).CurrentPlayerSessionCount); n != 2 {
			t.Fatalf("after %s: %d players, want 2", restart.name, n)
		}
		if got := fleetPIDs(fleetID); len(got) != 1 || got[0] != pids[0] {
			t.Fatalf("after %s the game servers are %v, want %v", restart.name, got, pids)
		}
		p.close() // the new player leaves; the first stays for the next round
		eventually(t, waitShort, "the new player to leave", func() (bool, string) {
			n := aws.ToInt32(e.gameSession(t, gsID).CurrentPlayerSessionCount)
			return n == 1, strconv.Itoa(int(n)) + " players"
		})
	}
}

// TestKilledLocalAgentLeavesNothing: kill -9 of the local agent ends every
// game server it ran (each under its init, whose parent-death signal ends
// its PID namespace), however the game server detached its children;
// hoist serve starts the agent again, and the lost instance is replaced.
func TestKilledLocalAgentLeavesNothing(t *testing.T) {
	e := startRestartable(t, "", newRestartAddrs(t))
	archive := gameServerArchive(t, map[string]archiveFile{"run.sh": {body: detachScript, mode: 0o755}})
	buildID, err := e.createBuild(t, "agentkill", archive)
	if err != nil {
		t.Fatal(err)
	}
	e.waitBuild(t, buildID, "READY")
	fleetID := e.newFleet(t, fleetSpec{name: "agentkill", build: buildID, launchPath: "/local/game/run.sh"})
	waitPIDs(t, fleetID, 4) // the shell, the game server, two sleeps

	agent := localAgentPID(t, e.h.DataDir)
	if err := syscall.Kill(agent, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitNoProcesses(t, fleetID)
	eventually(t, waitLong, "a new local agent", func() (bool, string) {
		b, _ := os.ReadFile(filepath.Join(e.h.DataDir, "local-host", "agent.lock"))
		pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
		return pid != 0 && pid != agent && alive(pid), "agent.lock names " + strings.TrimSpace(string(b))
	})
	e.waitIdleProcesses(t, fleetID, 1) // the replacement of the lost instance
	waitPIDs(t, fleetID, 4)
	e.deleteFleet(t, fleetID)
}

// localAgentPID reads the local agent's process ID from its lock file.
func localAgentPID(t *testing.T, dataDir string) int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dataDir, "local-host", "agent.lock"))
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || !alive(pid) {
		t.Fatalf("agent.lock names %q, not a live process", b)
	}
	return pid
}

// TestSIGINTEndsAnUnreachableLocalAgent: SIGINT (Ctrl-C) to hoist serve
// ends its local agent even when the agent cannot be told over its
// connection (it has not connected yet, or does not answer: here it is
// stopped with SIGSTOP): hoist serve signals the agent it started. Before,
// the agent was left running (and, in the tests, went on writing into a
// data directory being removed).
func TestSIGINTEndsAnUnreachableLocalAgent(t *testing.T) {
	h := hoisttest.Start(t, hoisttest.Options{Args: []string{"--shutdown-grace", "2s"}})
	dir := filepath.Join(h.DataDir, "local-host")
	var agent int
	eventually(t, waitLong, "the local agent's process", func() (bool, string) {
		agent = localAgentOf(dir)
		return agent != 0, "none"
	})
	if err := syscall.Kill(agent, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	if err := h.Process.StopWith(syscall.SIGINT, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "the local agent gone", func() (bool, string) {
		return !alive(agent), "process " + strconv.Itoa(agent) + " runs"
	})
}

// localAgentOf returns the process ID of a local agent of dir, or 0.
func localAgentOf(dir string) int {
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		args := strings.Split(string(b), "\x00")
		if err == nil && len(args) > 4 && args[1] == "agent" && args[2] == "--local" && args[4] == dir {
			return pid
		}
	}
	return 0
}

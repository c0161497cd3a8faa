//go:build linux

package hosting

import (
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/hoistgg/hoist/e2e/hoisttest"
)

// detachScript starts a child in a session and process group of its own
// (setsid) and a double-forked one (its parent exits at once), then runs
// the game server without exec (the shell stays its parent). Without a
// PID namespace per process, the children outlive the game server, its
// fleet, and kill -9 of Hoist.
const detachScript = `#!/bin/sh
( setsid sleep 1000 & )
( sleep 1000 & )
./gameserver "$@"
`

// probeDetachScript is detachScript after a probe: it writes, to
// probe.txt, the process's UID, how many processes it sees, and the SDK
// tokens other than its own it can read in any process's environment.
var probeDetachScript = `#!/bin/sh
{
  echo "uid $(id -u)"
  set -- /proc/[0-9]*
  echo "sees $#"
  for p in "$@"; do
    { tr '\0' '\n' < $p/environ; } 2>/dev/null | grep '^GAMELIFT_SDK_AUTH_TOKEN=' | grep -v "=$GAMELIFT_SDK_AUTH_TOKEN\$" | sed 's/^/stole /'
  done
} > probe.txt 2>&1
` + detachScript[len("#!/bin/sh\n"):]

// TestDetachedProcessesEndWithTheirFleet: what a game server's wrapper
// starts in a session of its own or double-forked ends when the fleet is
// deleted.
func TestDetachedProcessesEndWithTheirFleet(t *testing.T) {
	e := startHoist(t)
	e.dumpOnFailure(t)
	archive := gameServerArchive(t, map[string]archiveFile{"run.sh": {body: detachScript, mode: 0o755}})
	buildID, err := e.createBuild(t, "detached", archive)
	if err != nil {
		t.Fatal(err)
	}
	e.waitBuild(t, buildID, "READY")
	fleetID := e.newFleet(t, fleetSpec{name: "detached", build: buildID, launchPath: "/local/game/run.sh"})
	waitPIDs(t, fleetID, 4)   // the shell, the game server, two sleeps
	e.deleteFleet(t, fleetID) // and no process of it is left
}

// TestKilledHoistLeftoversEndedOnRestart: with --local-hosting in-process,
// after kill -9 of Hoist, nothing
// of a game server is left (its wrapper shell, the game server with its
// player port, a setsid child, a double-forked child), before Hoist starts
// again; the instance that replaces the lost one, on the account the
// lowest free slot gives (the same one, unless another Hoist on this
// machine holds it), sees no other process and reads no other SDK token.
func TestKilledHoistLeftoversEndedOnRestart(t *testing.T) {
	// In-process hosting: the game servers are hoist serve's (the local
	// agent's outlive it: TestRestartEndsNoGame, TestKilledLocalAgentLeavesNothing).
	e := startHoistWith(t, []string{"--local-hosting", "in-process"})
	e.dumpOnFailure(t)
	archive := gameServerArchive(t, map[string]archiveFile{"run.sh": {body: probeDetachScript, mode: 0o755}})
	buildID, err := e.createBuild(t, "leftovers", archive)
	if err != nil {
		t.Fatal(err)
	}
	e.waitBuild(t, buildID, "READY")
	fleetID := e.newFleet(t, fleetSpec{name: "leftovers", build: buildID, launchPath: "/local/game/run.sh", params: "-accept-players"})
	gs := e.createGameSession(t, fleetID, 2)
	ip, port := aws.ToString(gs.IpAddress), aws.ToInt32(gs.Port)
	dialPlayer(t, ip, port).close()
	probe := func(h *hoisttest.Hoist) []string {
		t.Helper()
		roots := instanceGlob(h.DataDir, fleetID, "*", "game")
		if len(roots) != 1 {
			t.Fatalf("game roots of fleet %s: %v", fleetID, roots)
		}
		out, err := os.ReadFile(filepath.Join(roots[0], "probe.txt"))
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSpace(string(out)), "\n")
		if len(lines) < 2 || !strings.HasPrefix(lines[0], "uid ") || !strings.HasPrefix(lines[1], "sees ") {
			t.Fatalf("probe: %q", lines)
		}
		if n, _ := strconv.Atoi(strings.TrimPrefix(lines[1], "sees ")); n > 3 { // its init, its shell, maybe tr
			t.Errorf("the game server sees %d processes, want only its own", n)
		}
		for _, l := range lines[2:] {
			t.Errorf("the game server: %s", l)
		}
		return lines
	}
	before := probe(e.h)
	waitPIDs(t, fleetID, 4) // the shell, the game server, two sleeps

	e.h.Kill()
	waitNoProcesses(t, fleetID)
	// A process whose memory is gone shows no environment, but closes its
	// sockets a moment later.
	eventually(t, waitShort, "the killed Hoist's game server to take no more players", func() (bool, string) {
		conn, err := net.DialTimeout("tcp", net.JoinHostPort(ip, strconv.Itoa(int(port))), time.Second)
		if err == nil {
			conn.Close()
		}
		return err != nil, "the player port takes connections"
	})

	h2 := hoisttest.Start(t, hoisttest.Options{DataDir: e.h.DataDir, Args: []string{"--local-hosting", "in-process",
		"--timings", strings.Join(dedupe(baseTimings), ","), "--process-env", strings.Join(baseEnv, ",")}})
	e2 := &env{h: h2, gl: h2.V2(), ctx: e.ctx}
	e2.dumpOnFailure(t)
	e2.waitIdleProcesses(t, fleetID, 1) // the replacement of the lost instance
	after := probe(h2)
	t.Logf("the account before the restart: %s; after: %s", before[0], after[0])
	e2.deleteFleet(t, fleetID)
}

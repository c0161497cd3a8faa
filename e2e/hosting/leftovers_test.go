//go:build linux

package hosting

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/hoistgg/hoist/e2e/hoisttest"
)

// wrapperScript runs the game server without exec: the shell Hoist starts
// stays its parent, so when Hoist is killed the kernel's parent-death
// signal ends the shell only, and the game server lives on.
const wrapperScript = `#!/bin/sh
./gameserver "$@"
`

// TestKilledHoistLeftoversEndedOnRestart: after kill -9 of Hoist, a game
// server started by a wrapper script (no exec) survives with its player
// port open; Hoist started again on the same data directory kills it
// before it serves.
func TestKilledHoistLeftoversEndedOnRestart(t *testing.T) {
	e := startHoist(t)
	e.dumpOnFailure(t)
	archive := gameServerArchive(t, map[string]archiveFile{"run.sh": {body: wrapperScript, mode: 0o755}})
	buildID, err := e.createBuild(t, "leftovers", archive)
	if err != nil {
		t.Fatal(err)
	}
	e.waitBuild(t, buildID, "READY")
	fleetID := e.newFleet(t, fleetSpec{name: "leftovers", build: buildID, launchPath: "/local/game/run.sh", params: "-accept-players"})
	gs := e.createGameSession(t, fleetID, 2)
	ip, port := aws.ToString(gs.IpAddress), aws.ToInt32(gs.Port)
	dialPlayer(t, ip, port).close()

	server := 0
	for _, pid := range waitPIDs(t, fleetID, 2) { // the shell and the game server
		cmd, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
		if bytes.Contains(cmd, []byte("gameserver")) {
			server = pid
		}
	}
	if server == 0 {
		t.Fatal("no game server among the fleet's processes")
	}

	e.h.Kill()
	// The shell is killed with Hoist; the game server is not, and still
	// serves players.
	eventually(t, waitShort, "only the game server left", func() (bool, string) {
		pids := fleetPIDs(fleetID)
		return len(pids) == 1 && pids[0] == server, fmt.Sprintf("PIDs %v (game server %d)", pids, server)
	})
	dialPlayer(t, ip, port).close()

	h2 := hoisttest.Start(t, hoisttest.Options{DataDir: e.h.DataDir, Args: []string{
		"--timings", strings.Join(dedupe(baseTimings), ","), "--process-env", strings.Join(baseEnv, ",")}})
	e2 := &env{h: h2, gl: h2.V2(), ctx: e.ctx}
	e2.dumpOnFailure(t)
	eventually(t, waitShort, "the game server the killed Hoist left to end", func() (bool, string) {
		return !alive(server), "still alive"
	})
	if !strings.Contains(h2.Log(), "killed what a server process of an earlier run left running") {
		t.Errorf("the restarted Hoist did not log the leftover group it killed")
	}
	e2.deleteFleet(t, fleetID)
}

//go:build linux

package hosting

import (
	"bytes"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	gl "github.com/aws/aws-sdk-go-v2/service/gamelift"
	"github.com/aws/aws-sdk-go-v2/service/gamelift/types"

	"github.com/hoistgg/hoist/e2e/hoisttest"
)

// launchScript starts a helper process in the server process's process
// group (as games that spawn helpers do), then runs the game server.
const launchScript = `#!/bin/sh
sleep 600 &
exec ./gameserver "$@"
`

// TestShutdownLeavesNoProcess: when Hoist stops (SIGTERM) it ends every
// server process it launched, with their process groups, even one that no
// longer responds, and exits; started again, it carries on.
func TestShutdownLeavesNoProcess(t *testing.T) {
	e := startHoist(t)
	e.dumpOnFailure(t)
	archive := gameServerArchive(t, map[string]archiveFile{"run.sh": {body: launchScript, mode: 0o755}})
	buildID, err := e.createBuild(t, "shutdown", archive)
	if err != nil {
		t.Fatal(err)
	}
	e.waitBuild(t, buildID, types.BuildStatusReady)
	fleetID := e.newFleet(t, fleetSpec{name: "shutdown", build: buildID, launchPath: "/local/game/run.sh", params: "-accept-players", concurrent: 2})
	gs := e.createGameSession(t, fleetID, 2)
	ps, err := e.gl.CreatePlayerSession(e.ctx, &gl.CreatePlayerSessionInput{GameSessionId: gs.GameSessionId, PlayerId: aws.String("p")})
	if err != nil {
		t.Fatal(err)
	}
	dialPlayer(t, aws.ToString(gs.IpAddress), aws.ToInt32(gs.Port)).must("ACCEPT " + aws.ToString(ps.PlayerSession.PlayerSessionId))

	// Two game servers and two helpers, in two process groups.
	pids := waitPIDs(t, fleetID, 4)
	groups := map[int]bool{}
	for _, pid := range pids {
		g, err := syscall.Getpgid(pid)
		if err != nil {
			t.Fatal(err)
		}
		groups[g] = true
	}
	if len(groups) != 2 {
		t.Fatalf("the 4 processes %v are in %d process groups, want 2 (one per server process)", pids, len(groups))
	}
	self, _ := syscall.Getpgid(0)
	if groups[self] {
		t.Fatalf("a server process runs in the test's process group")
	}

	// The idle game server no longer responds (SIGSTOP): Hoist must still
	// end it, after its shutdown grace.
	stuck := 0
	for _, pid := range pids {
		cmd, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
		out, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/fd/1") // its output file
		if bytes.Contains(cmd, []byte("gameserver")) && !bytes.Contains(out, []byte("game session started")) {
			stuck = pid
		}
	}
	if stuck == 0 {
		t.Fatalf("no idle game server among %v", pids)
	}
	if err := syscall.Kill(stuck, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Kill(stuck, syscall.SIGKILL) })

	e.h.Stop() // SIGTERM, and waits for the exit (it fails the test after 30 s)
	if !e.h.Exited() {
		t.Fatal("hoist still runs")
	}
	for _, pid := range pids {
		if alive(pid) {
			t.Errorf("process %d is still alive after Hoist stopped", pid)
		}
	}
	for g := range groups {
		if left := groupMembers(g); len(left) > 0 {
			t.Errorf("process group %d still has processes %v", g, left)
		}
	}
	if left := fleetPIDs(fleetID); len(left) > 0 {
		t.Errorf("processes of fleet %s left after Hoist stopped: %v", fleetID, left)
	}
	log := e.h.Log()
	if !strings.Contains(log, "action=TerminateProcess") {
		t.Errorf("Hoist did not send TerminateProcess to its processes at shutdown")
	}

	// Started again on its data directory, Hoist shows the game session
	// ended, and the fleet runs new processes that take new game sessions.
	h2 := hoisttest.Start(t, hoisttest.Options{DataDir: e.h.DataDir, Args: []string{
		"--timings", strings.Join(dedupe(baseTimings), ","), "--process-env", strings.Join(baseEnv, ",")}})
	e2 := &env{h: h2, gl: h2.V2(), ctx: e.ctx}
	e2.dumpOnFailure(t)
	if st := e2.gameSession(t, aws.ToString(gs.GameSessionId)).Status; st != types.GameSessionStatusTerminated {
		t.Errorf("after a restart the game session of before is %s, want TERMINATED", st)
	}
	if st := e2.playerSession(t, aws.ToString(ps.PlayerSession.PlayerSessionId)).Status; st != types.PlayerSessionStatusCompleted {
		t.Errorf("after a restart the player session of before is %s, want COMPLETED", st)
	}
	// Its logs were collected as Hoist stopped, after its process was
	// asked to end.
	if out := downloadLogs(t, e2, aws.ToString(gs.GameSessionId))["process-output.log"]; !strings.Contains(out, "asked to terminate") {
		t.Errorf("the logs of a game session ended by the shutdown lack the process's output:\n%s", out)
	}
	e2.waitIdleProcesses(t, fleetID, 2)
	e2.createGameSession(t, fleetID, 2)
	e2.deleteFleet(t, fleetID)
}

// groupMembers lists the live processes in process group g.
func groupMembers(g int) []int {
	var out []int
	entries, _ := os.ReadDir("/proc")
	for _, de := range entries {
		pid, err := strconv.Atoi(de.Name())
		if err != nil || !alive(pid) {
			continue
		}
		if pg, err := syscall.Getpgid(pid); err == nil && pg == g {
			out = append(out, pid)
		}
	}
	return out
}

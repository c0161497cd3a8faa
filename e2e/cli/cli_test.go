// Package cli_test runs the Python clients (boto3 and the aws CLI v1)
// against a real Hoist: the scenario scripts beside this file, each started
// by a Go test with a clean AWS environment pointing only at Hoist's
// loopback endpoint. The tests skip when boto3 or the aws command is
// missing (CI installs them).
package cli_test

import (
	"archive/zip"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	awsv2 "github.com/aws/aws-sdk-go-v2/aws"
	glv2 "github.com/aws/aws-sdk-go-v2/service/gamelift"
	"github.com/aws/aws-sdk-go-v2/service/gamelift/types"

	"github.com/hoistgg/hoist/e2e/hoisttest"
)

// scriptTimeout bounds one scenario script.
const scriptTimeout = 3 * time.Minute

func needBoto3(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 is not installed: the boto3 scenario needs it (CI installs python3-boto3)")
	}
	if err := exec.Command("python3", "-c", "import boto3").Run(); err != nil {
		t.Skip("boto3 is not installed (python3 -c 'import boto3' failed): CI installs python3-boto3")
	}
}

func needAWSCLI(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("aws"); err != nil {
		t.Skip("the aws command is not installed: CI installs the awscli package")
	}
}

// cleanEnv returns the environment a script runs with: this process's
// environment without any AWS_* or proxy setting, plus the e2e credentials,
// the Region, empty config and credentials files (so a developer's own
// profiles cannot interfere), no instance metadata lookups, and Hoist's
// endpoint as HOIST_ENDPOINT.
func cleanEnv(t *testing.T, h *hoisttest.Hoist, extra ...string) []string {
	t.Helper()
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch uk := strings.ToUpper(k); {
		case strings.HasPrefix(uk, "AWS_"), uk == "HTTP_PROXY", uk == "HTTPS_PROXY", uk == "ALL_PROXY", uk == "NO_PROXY",
			strings.HasPrefix(uk, "HOIST_"), uk == "BOTO_CONFIG":
			continue
		}
		env = append(env, kv)
	}
	env = append(env,
		"HOIST_ENDPOINT="+h.URL,
		"AWS_ACCESS_KEY_ID="+hoisttest.AccessKeyID,
		"AWS_SECRET_ACCESS_KEY="+hoisttest.SecretAccessKey,
		"AWS_DEFAULT_REGION="+hoisttest.Region,
		"AWS_CONFIG_FILE="+empty,
		"AWS_SHARED_CREDENTIALS_FILE="+empty,
		"AWS_EC2_METADATA_DISABLED=true",
		"AWS_DEFAULT_OUTPUT=json",
		"AWS_PAGER=", // aws CLI v2 would page output
		"NO_PROXY=127.0.0.1,localhost",
		"PYTHONDONTWRITEBYTECODE=1",
		"PYTHONUNBUFFERED=1",
	)
	return append(env, extra...)
}

// runScript runs a scenario script beside this file and returns its
// standard output; it fails t (with both outputs and Hoist's log) when the
// script fails.
func runScript(t *testing.T, h *hoisttest.Hoist, env []string, name string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), scriptTimeout)
	defer cancel()
	script, err := filepath.Abs(name)
	if err != nil {
		t.Fatal(err)
	}
	interpreter := "bash"
	if strings.HasSuffix(name, ".py") {
		interpreter = "python3"
	}
	cmd := exec.CommandContext(ctx, interpreter, append([]string{script}, args...)...)
	cmd.Env = env
	cmd.Dir = t.TempDir()
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err = cmd.Run()
	t.Logf("%s ran %s", name, time.Since(start).Round(time.Millisecond))
	if err != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			err = fmt.Errorf("%w (killed after %s)", err, scriptTimeout)
		}
		t.Fatalf("%s: %v\n--- stdout\n%s\n--- stderr\n%s\n--- hoist log\n%s", name, err, stdout.String(), stderr.String(), h.Log())
	}
	if testing.Verbose() {
		t.Logf("%s stdout:\n%s", name, stdout.String())
	}
	return stdout.String()
}

// scriptValues reads the KEY=value lines a script prints.
func scriptValues(out string) map[string]string {
	v := map[string]string{}
	for _, line := range strings.Split(out, "\n") {
		if k, val, ok := strings.Cut(strings.TrimSpace(line), "="); ok && k != "" && !strings.ContainsAny(k, " :") {
			v[k] = val
		}
	}
	return v
}

// startHoist starts Hoist with these --timings (none when ""): three
// replicas on PostgreSQL behind a round-robin balancer when the test runs
// under TestOnCluster.
func startHoist(t *testing.T, timings string) *hoisttest.Hoist {
	t.Helper()
	var args []string
	if timings != "" {
		args = []string{"--timings", timings}
	}
	if onCluster(t) {
		return startCluster(t, args)
	}
	return hoisttest.Start(t, hoisttest.Options{Args: args})
}

// checkGroupGone checks through aws-sdk-go-v2 that the scenario left the
// seed's game server group deleted.
func checkGroupGone(t *testing.T, h *hoisttest.Hoist) {
	t.Helper()
	ctx := hoisttest.Context(t, 30*time.Second)
	out, err := h.V2().DescribeGameServerGroup(ctx, &glv2.DescribeGameServerGroupInput{GameServerGroupName: awsv2.String("MegaFrogServers_NA")})
	var nf *types.NotFoundException
	switch {
	case errors.As(err, &nf):
	case err != nil:
		t.Errorf("DescribeGameServerGroup after the scenario: %v", err)
	case out.GameServerGroup.Status != types.GameServerGroupStatusDeleted:
		t.Errorf("the scenario's group is %s after it, want DELETED", out.GameServerGroup.Status)
	}
}

const fleetIQTimings = "fleetiq.status-step=100ms,fleetiq.sweep=100ms"

// TestFleetIQBoto3 runs fleetiq_boto3.py.
func TestFleetIQBoto3(t *testing.T) {
	needBoto3(t)
	h := startHoist(t, fleetIQTimings)
	out := runScript(t, h, cleanEnv(t, h), "fleetiq_boto3.py")
	if !strings.Contains(out, "fleetiq_boto3: PASS") {
		t.Fatalf("the script did not finish:\n%s", out)
	}
	checkGroupGone(t, h)
}

// TestAliasesBoto3 runs aliases_boto3.py.
func TestAliasesBoto3(t *testing.T) {
	needBoto3(t)
	h := startHoist(t, "fleets.reconcile=100ms")
	out := runScript(t, h, cleanEnv(t, h), "aliases_boto3.py")
	if !strings.Contains(out, "aliases_boto3: PASS") {
		t.Fatalf("the script did not finish:\n%s", out)
	}
	list, err := h.V2().ListAliases(hoisttest.Context(t, 30*time.Second), &glv2.ListAliasesInput{})
	if err != nil || len(list.Aliases) != 0 {
		t.Errorf("aliases left after the scenario: %v %+v", err, list)
	}
}

// TestPlacementBoto3 runs placement_boto3.py with the built e2e/gameserver
// (its search part places game sessions on game servers it starts).
func TestPlacementBoto3(t *testing.T) {
	needBoto3(t)
	gameDir := t.TempDir()
	build := exec.Command("go", "build", "-o", filepath.Join(gameDir, "gameserver"), "./e2e/gameserver")
	build.Dir = hoisttest.RepoRoot()
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./e2e/gameserver: %v\n%s", err, out)
	}
	h := startHoist(t, "fleets.reconcile=100ms,placement.interval=100ms")
	out := runScript(t, h, cleanEnv(t, h, "GAMESERVER="+filepath.Join(gameDir, "gameserver")), "placement_boto3.py")
	if !strings.Contains(out, "placement_boto3: PASS") {
		t.Fatalf("the script did not finish:\n%s", out)
	}
	list, err := h.V2().DescribeGameSessionQueues(hoisttest.Context(t, 30*time.Second), &glv2.DescribeGameSessionQueuesInput{})
	if err != nil || len(list.GameSessionQueues) != 0 {
		t.Errorf("queues left after the scenario: %v %+v", err, list)
	}
}

// TestMatchmakingBoto3 runs matchmaking_boto3.py.
func TestMatchmakingBoto3(t *testing.T) {
	needBoto3(t)
	h := startHoist(t, "")
	out := runScript(t, h, cleanEnv(t, h), "matchmaking_boto3.py")
	if !strings.Contains(out, "matchmaking_boto3: PASS") {
		t.Fatalf("the script did not finish:\n%s", out)
	}
	list, err := h.V2().DescribeMatchmakingConfigurations(hoisttest.Context(t, 30*time.Second), &glv2.DescribeMatchmakingConfigurationsInput{})
	if err != nil || len(list.Configurations) != 0 {
		t.Errorf("configurations left after the scenario: %v %+v", err, list)
	}
}

// TestFleetIQCLI runs fleetiq_cli.sh, the README's FleetIQ walkthrough.
func TestFleetIQCLI(t *testing.T) {
	needAWSCLI(t)
	h := startHoist(t, fleetIQTimings)
	out := runScript(t, h, cleanEnv(t, h), "fleetiq_cli.sh")
	if !strings.Contains(out, "fleetiq_cli: PASS") {
		t.Fatalf("the script did not finish:\n%s", out)
	}
	checkGroupGone(t, h)
}

// TestHostingCLI runs hosting_cli.sh with the built e2e/gameserver, checks
// what it left behind through aws-sdk-go-v2 and the data directory, and
// that no server process outlives Hoist.
func TestHostingCLI(t *testing.T) {
	needAWSCLI(t)
	gameDir := t.TempDir()
	build := exec.Command("go", "build", "-o", filepath.Join(gameDir, "gameserver"), "./e2e/gameserver")
	build.Dir = hoisttest.RepoRoot()
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./e2e/gameserver: %v\n%s", err, out)
	}
	h := startHoist(t, strings.Join([]string{
		"fleets.reconcile=100ms", "sessions.sweep=100ms", "processes.stagger=10ms",
		"processes.terminate-grace=2s", "processes.shutdown-grace=2s", "processes.kill-grace=1s",
	}, ","))
	// Watch for the server processes while the script runs, so the check
	// after Hoist stops is known to see them when there are any.
	stopWatch := make(chan struct{})
	watched := make(chan []string, 1)
	go func() {
		var seen []string
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			if len(seen) == 0 {
				seen = processesUnder(h.DataDir)
			}
			select {
			case <-stopWatch:
				watched <- seen
				return
			case <-tick.C:
			}
		}
	}()
	out := runScript(t, h, cleanEnv(t, h, "GAME_DIR="+gameDir), "hosting_cli.sh")
	close(stopWatch)
	if seen := <-watched; len(seen) == 0 {
		t.Errorf("no server process was seen under the data directory while the fleet ran")
	} else {
		t.Logf("server processes seen while the fleet ran: %v", seen)
	}
	if !strings.Contains(out, "hosting_cli: PASS") {
		t.Fatalf("the script did not finish:\n%s", out)
	}
	v := scriptValues(out)
	ctx := hoisttest.Context(t, 30*time.Second)
	c := h.V2()

	// The game session ended, with its player session.
	gs, err := c.DescribeGameSessions(ctx, &glv2.DescribeGameSessionsInput{GameSessionId: awsv2.String(v["GAME_SESSION_ID"])})
	if err != nil || len(gs.GameSessions) != 1 || gs.GameSessions[0].Status != types.GameSessionStatusTerminated {
		t.Errorf("game session %s after the scenario: %+v, %v", v["GAME_SESSION_ID"], gs, err)
	}
	ps, err := c.DescribePlayerSessions(ctx, &glv2.DescribePlayerSessionsInput{PlayerSessionId: awsv2.String(v["PLAYER_SESSION_ID"])})
	if err != nil || len(ps.PlayerSessions) != 1 || awsv2.ToString(ps.PlayerSessions[0].PlayerId) != "player-1" {
		t.Errorf("player session %s after the scenario: %+v, %v", v["PLAYER_SESSION_ID"], ps, err)
	}
	// The fleet is terminated and the build gone.
	fa, err := c.DescribeFleetAttributes(ctx, &glv2.DescribeFleetAttributesInput{FleetIds: []string{v["FLEET_ID"]}})
	var nf *types.NotFoundException
	if err == nil && len(fa.FleetAttributes) > 0 && fa.FleetAttributes[0].Status != types.FleetStatusTerminated {
		t.Errorf("fleet %s is %s after delete-fleet", v["FLEET_ID"], fa.FleetAttributes[0].Status)
	} else if err != nil && !errors.As(err, &nf) {
		t.Errorf("DescribeFleetAttributes: %v", err)
	}
	if _, err := c.DescribeBuild(ctx, &glv2.DescribeBuildInput{BuildId: awsv2.String(v["BUILD_ID"])}); !errors.As(err, &nf) {
		t.Errorf("DescribeBuild after delete-build: %v, want NotFoundException", err)
	}
	// The uploaded game server really ran the game session: the session's
	// logs, collected when its process ended, hold the game server's log.
	lu, err := c.GetGameSessionLogUrl(ctx, &glv2.GetGameSessionLogUrlInput{GameSessionId: awsv2.String(v["GAME_SESSION_ID"])})
	if err != nil {
		t.Fatalf("GetGameSessionLogUrl: %v", err)
	}
	names := zipNames(t, awsv2.ToString(lu.PreSignedUrl))
	found := false
	for _, n := range names {
		if strings.Contains(n, "gameserver-") && strings.HasSuffix(n, ".log") {
			found = true
		}
	}
	if !found {
		t.Errorf("the game session's log archive holds %v, no gameserver-*.log", names)
	}

	// Nothing Hoist started outlives it.
	h.Stop()
	if !h.Exited() {
		t.Fatal("Hoist did not exit")
	}
	deadline := time.Now().Add(15 * time.Second)
	for {
		left := processesUnder(h.DataDir, gameDir)
		if len(left) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("processes left after Hoist stopped: %v", left)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// processesUnder lists the live processes whose executable or working
// directory is inside one of dirs (Linux /proc; none elsewhere).
func processesUnder(dirs ...string) []string {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range entries {
		pid := e.Name()
		if pid[0] < '0' || pid[0] > '9' {
			continue
		}
		if st, err := os.ReadFile(filepath.Join("/proc", pid, "stat")); err == nil {
			// A zombie (state Z) has ended; only its parent has not reaped it.
			if i := bytes.LastIndexByte(st, ')'); i > 0 && i+2 < len(st) && st[i+2] == 'Z' {
				continue
			}
		}
		for _, link := range []string{"exe", "cwd"} {
			target, err := os.Readlink(filepath.Join("/proc", pid, link))
			if err != nil {
				continue
			}
			for _, d := range dirs {
				if strings.HasPrefix(target, d+string(filepath.Separator)) || target == d {
					out = append(out, pid+" "+link+"="+target)
				}
			}
		}
	}
	return out
}

// zipNames downloads a zip archive from a loopback URL and lists its files.
func zipNames(t *testing.T, url string) []string {
	t.Helper()
	if !strings.HasPrefix(url, "http://127.0.0.1:") {
		t.Fatalf("log URL %q is not on Hoist's loopback address", url)
	}
	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{Proxy: nil}}
	resp, err := client.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET log URL: HTTP %d %v: %.200s", resp.StatusCode, err, b)
	}
	zr, err := zip.NewReader(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		t.Fatalf("log archive: %v", err)
	}
	var names []string
	for _, f := range zr.File {
		names = append(names, f.Name)
	}
	return names
}

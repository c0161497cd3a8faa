//go:build linux

package agent

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
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

// hoistAgent is a running `hoist agent`.
type hoistAgent struct {
	cmd  *exec.Cmd
	out  *hoisttest.SyncBuffer
	done chan struct{}
}

// startHoistAgent runs the built hoist binary's agent command for a
// compute of f, against Hoist's TLS listener (trusting Hoist's CA with
// --ca-file), with the test's credentials in the environment as the AWS
// SDKs read them (and no shared config or metadata service to find).
func startHoistAgent(t *testing.T, e *env, f *fleet, compute string, extra ...string) *hoistAgent {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "agent")
	_ = os.Chmod(filepath.Dir(dir), 0o711) // the processes' account passes through
	args := append([]string{"agent", "--endpoint", e.h.TLSURL, "--fleet", f.id, "--location", f.loc, "--ip", "127.0.0.1",
		"--compute-name", compute, "--ca-file", e.caFile(), "--data-dir", dir, "--heartbeat-interval", "1s",
		"--terminate-grace", "10s", "--process-env", strings.Join(gameServerEnv, ","), "--log-level", "debug"}, extra...)
	cmd := exec.Command(hoisttest.Binary(t), args...)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(),
		"AWS_ACCESS_KEY_ID=" + hoisttest.AccessKeyID, "AWS_SECRET_ACCESS_KEY=" + hoisttest.SecretAccessKey,
		"AWS_REGION=" + hoisttest.Region, "AWS_CONFIG_FILE=/nonexistent", "AWS_SHARED_CREDENTIALS_FILE=/nonexistent",
		"AWS_EC2_METADATA_DISABLED=true"}
	a := &hoistAgent{cmd: cmd, out: &hoisttest.SyncBuffer{}, done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = a.out, a.out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = cmd.Wait(); close(a.done) }()
	t.Cleanup(func() {
		select {
		case <-a.done:
		default:
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-a.done
		}
		if strings.Contains(a.out.String(), "Authorization=") || strings.Contains(e.h.Log(), "Authorization=") {
			t.Error("a log holds a connection URL with its token")
		}
		if t.Failed() || os.Getenv("HOIST_TEST_AGENT_LOG") != "" {
			t.Logf("hoist agent log:\n%s", hoisttest.Tail(a.out.String(), 120))
		}
	})
	return a
}

// fleetProcesses returns the PIDs (in this namespace) of the game servers
// of a fleet, by their GAMELIFT_SDK_FLEET_ID, with their process IDs.
func fleetProcesses(fleetID string) map[int]string {
	out := map[int]string{}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		env, err := os.ReadFile("/proc/" + e.Name() + "/environ")
		if err != nil || !bytes.Contains(env, []byte("GAMELIFT_SDK_FLEET_ID="+fleetID+"\x00")) {
			continue
		}
		if exe, _ := os.Readlink("/proc/" + e.Name() + "/exe"); filepath.Base(exe) != "gameserver" {
			continue // the init each process runs under
		}
		for _, kv := range bytes.Split(env, []byte{0}) {
			if id, ok := bytes.CutPrefix(kv, []byte("GAMELIFT_SDK_PROCESS_ID=")); ok {
				out[pid] = string(id)
			}
		}
	}
	return out
}

// residentKiB returns a process's resident memory (VmRSS).
func residentKiB(pid int) int {
	b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	for line := range strings.Lines(string(b)) {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			n, _ := strconv.Atoi(strings.Fields(rest)[0])
			return n
		}
	}
	return 0
}

// TestHoistAgent: `hoist agent` (the built binary) makes a compute of an
// ANYWHERE fleet and runs the runtime configuration's game servers on it:
// they register and host a game session with a player session; one that
// is killed is reported (SERVER_PROCESS_CRASHED) and replaced; SIGTERM has
// Hoist send each TerminateProcess, then the compute is deregistered and
// the agent exits 0 with no process left.
func TestHoistAgent(t *testing.T) {
	e := startHoist(t)
	f := e.newFleet(t)
	a := startHoistAgent(t, e, f, "laptop-1")
	var procs map[int]string
	eventually(t, waitLong, "two game servers running", func() (bool, string) {
		procs = fleetProcesses(f.id)
		return len(procs) == 2, a.out.String()
	})
	if st := e.computeStatus(t, f.id, "laptop-1"); st != types.ComputeStatusActive {
		t.Fatalf("compute status %s", st)
	}
	var gsID string
	eventually(t, waitLong, "a game session created", func() (bool, string) {
		out, err := e.gl.CreateGameSession(e.ctx, &gl.CreateGameSessionInput{FleetId: aws.String(f.id), Location: aws.String(f.loc),
			MaximumPlayerSessionCount: aws.Int32(2)})
		if err != nil {
			return false, err.Error()
		}
		gsID = aws.ToString(out.GameSession.GameSessionId)
		return true, ""
	})
	eventually(t, waitShort, "game session ACTIVE", func() (bool, string) {
		st := e.gameSession(t, gsID).Status
		return st == types.GameSessionStatusActive, string(st)
	})
	if _, err := e.gl.CreatePlayerSession(e.ctx, &gl.CreatePlayerSessionInput{GameSessionId: aws.String(gsID), PlayerId: aws.String("p1")}); err != nil {
		t.Fatalf("CreatePlayerSession: %v", err)
	}
	t.Logf("hoist agent resident memory at rest, two processes running: %d KiB", residentKiB(a.cmd.Process.Pid))

	// FORCE_TERMINATE: Hoist has the agent kill the game session's process.
	if _, err := e.gl.TerminateGameSession(e.ctx, &gl.TerminateGameSessionInput{GameSessionId: aws.String(gsID),
		TerminationMode: types.TerminationModeForceTerminate}); err != nil {
		t.Fatalf("FORCE_TERMINATE: %v", err)
	}
	eventually(t, waitShort, "the game session FORCE_TERMINATED", func() (bool, string) {
		g := e.gameSession(t, gsID)
		return g.Status == types.GameSessionStatusTerminated && g.StatusReason == types.GameSessionStatusReasonForceTerminated,
			string(g.Status) + " " + string(g.StatusReason)
	})
	eventually(t, waitShort, "the killed process's event", func() (bool, string) {
		return e.hasEvent(t, f.id, types.EventCodeServerProcessForceTerminated, "")
	})
	eventually(t, waitLong, "two game servers again", func() (bool, string) {
		procs = fleetProcesses(f.id)
		return len(procs) == 2, strconv.Itoa(len(procs))
	})

	// A game server that dies is reported and replaced.
	var victim int
	for pid := range procs {
		victim = pid
	}
	killed := procs[victim]
	if err := syscall.Kill(victim, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	eventually(t, waitShort, "the killed process's crash event", func() (bool, string) {
		return e.hasEvent(t, f.id, types.EventCodeServerProcessCrashed, killed)
	})
	eventually(t, waitLong, "a replacement", func() (bool, string) {
		now := fleetProcesses(f.id)
		for _, id := range now {
			if id == killed {
				return false, "the killed process is still there"
			}
		}
		return len(now) == 2, strconv.Itoa(len(now)) + " processes"
	})
	left := fleetProcesses(f.id)

	// SIGTERM: processes are told to end (TerminateProcess, from Hoist),
	// the compute goes, the agent exits 0.
	if err := a.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-a.done:
	case <-time.After(waitLong):
		t.Fatal("hoist agent did not exit after SIGTERM")
	}
	if code := a.cmd.ProcessState.ExitCode(); code != 0 {
		t.Errorf("hoist agent exited with %d", code)
	}
	if n := len(fleetProcesses(f.id)); n != 0 {
		t.Errorf("%d game servers outlived the agent", n)
	}
	for _, id := range left {
		if !strings.Contains(e.h.Log(), "process="+id+" action=TerminateProcess") {
			t.Errorf("process %s was not sent TerminateProcess", id)
		}
	}
	_, err := e.gl.DescribeCompute(e.ctx, &gl.DescribeComputeInput{FleetId: aws.String(f.id), ComputeName: aws.String("laptop-1")})
	var nf *types.NotFoundException
	if !errors.As(err, &nf) {
		t.Errorf("the compute after the agent ended: %v", err)
	}
}

// TestHoistAgentReconnect: Hoist restarts under a running agent: the
// agent's socket drops, it reconnects with backoff to the same endpoint
// and its processes run on (none is relaunched); afterwards they host a
// new game session.
func TestHoistAgentReconnect(t *testing.T) {
	addr, err := hoisttest.FreeLoopbackAddr()
	if err != nil {
		t.Fatal(err)
	}
	tlsAddr, err := hoisttest.FreeLoopbackAddr()
	if err != nil {
		t.Fatal(err)
	}
	dataDir := t.TempDir()
	_ = os.Chmod(filepath.Dir(dataDir), 0o711)
	listen := []string{"--addr", addr, "--tls-addr", tlsAddr}
	e := startHoistIn(t, dataDir, listen)
	f := e.newFleet(t)
	a := startHoistAgent(t, e, f, "laptop-r")
	var before map[int]string
	eventually(t, waitLong, "two game servers running", func() (bool, string) {
		before = fleetProcesses(f.id)
		return len(before) == 2, a.out.String()
	})
	e.h.Stop()
	e = startHoistIn(t, dataDir, listen)
	eventually(t, waitLong, "the agent reconnected", func() (bool, string) {
		return strings.Count(a.out.String(), "connected to the agent endpoint") >= 2, hoisttest.Tail(a.out.String(), 10)
	})
	var gsID string
	eventually(t, waitLong, "a game session created after the restart", func() (bool, string) {
		out, err := e.gl.CreateGameSession(e.ctx, &gl.CreateGameSessionInput{FleetId: aws.String(f.id), Location: aws.String(f.loc),
			MaximumPlayerSessionCount: aws.Int32(2)})
		if err != nil {
			return false, err.Error()
		}
		gsID = aws.ToString(out.GameSession.GameSessionId)
		return true, ""
	})
	eventually(t, waitShort, "game session ACTIVE", func() (bool, string) {
		st := e.gameSession(t, gsID).Status
		return st == types.GameSessionStatusActive, string(st)
	})
	// One key, taken once: firstKey's map iteration order differs between
	// calls.
	k := firstKey(before)
	if after := fleetProcesses(f.id); len(after) != 2 || after[k] != before[k] {
		t.Errorf("processes before the restart %v, after %v: they should run on", before, after)
	}
}

func firstKey(m map[int]string) int {
	for k := range m {
		return k
	}
	return 0
}

// TestHoistAgentDeregistered: the compute of a running agent is
// deregistered: Hoist sends StartComputeTermination, the agent ends its
// processes and exits 0.
func TestHoistAgentDeregistered(t *testing.T) {
	e := startHoist(t)
	f := e.newFleet(t)
	a := startHoistAgent(t, e, f, "laptop-d")
	eventually(t, waitLong, "two game servers ready", func() (bool, string) {
		u, err := e.gl.DescribeFleetUtilization(e.ctx, &gl.DescribeFleetUtilizationInput{FleetIds: []string{f.id}})
		if err != nil || len(u.FleetUtilization) != 1 {
			return false, fmt.Sprint(err)
		}
		n := aws.ToInt32(u.FleetUtilization[0].ActiveServerProcessCount)
		return n == 2, fmt.Sprint(n, " active")
	})
	if _, err := e.gl.DeregisterCompute(e.ctx, &gl.DeregisterComputeInput{FleetId: aws.String(f.id), ComputeName: aws.String("laptop-d")}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-a.done:
	case <-time.After(waitLong):
		t.Fatal("hoist agent did not exit after its compute was deregistered")
	}
	if code := a.cmd.ProcessState.ExitCode(); code != 0 || !strings.Contains(a.out.String(), "StartComputeTermination") {
		t.Errorf("hoist agent exited with %d", code)
	}
	if n := len(fleetProcesses(f.id)); n != 0 {
		t.Errorf("%d game servers outlived the agent", n)
	}
}

//go:build linux

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	gl "github.com/aws/aws-sdk-go-v2/service/gamelift"
	"github.com/aws/aws-sdk-go-v2/service/gamelift/types"

	"github.com/hoistgg/hoist/e2e/hoisttest"
	"github.com/hoistgg/hoist/e2e/loadreport"
	"github.com/hoistgg/hoist/e2e/netns"
	"github.com/hoistgg/hoist/e2e/sysinfo"
)

// --- network namespaces outside a test ---

// toolTB stands in for the testing.TB e2e/netns takes: it keeps the
// cleanups, logs, and turns Fatal and Skip into a panic that withNetwork
// recovers as an error. Only the methods e2e/netns calls are implemented.
type toolTB struct {
	testing.TB
	log      io.Writer
	cleanups []func()
}

// tbFailure is a Fatal or Skip of toolTB.
type tbFailure struct{ msg string }

func (t *toolTB) Helper()                        {}
func (t *toolTB) Cleanup(f func())               { t.cleanups = append(t.cleanups, f) }
func (t *toolTB) Fatal(args ...any)              { panic(tbFailure{fmt.Sprint(args...)}) }
func (t *toolTB) Fatalf(format string, a ...any) { panic(tbFailure{fmt.Sprintf(format, a...)}) }
func (t *toolTB) Skipf(format string, a ...any)  { panic(tbFailure{fmt.Sprintf(format, a...)}) }
func (t *toolTB) Logf(format string, a ...any)   { fmt.Fprintf(t.log, format+"\n", a...) }
func (t *toolTB) Errorf(format string, a ...any) { fmt.Fprintf(t.log, format+"\n", a...) }

// withNetwork creates a bridge with hosts network namespaces (root only),
// runs f, and removes them whatever happens.
func withNetwork(log io.Writer, hosts int, f func(n *netns.Network) error) (err error) {
	tb := &toolTB{log: log}
	defer func() {
		for i := len(tb.cleanups) - 1; i >= 0; i-- {
			tb.cleanups[i]()
		}
	}()
	defer func() {
		if r := recover(); r != nil {
			fail, ok := r.(tbFailure)
			if !ok {
				panic(r)
			}
			err = errors.New(fail.msg)
		}
	}()
	return f(netns.New(tb, hosts))
}

// --- Hoist ---

// hoist is a running Hoist listening on one IP address.
type hoist struct {
	*loadreport.Hoist
	bin       string
	gl        *gl.Client
	pprofAddr string
}

// startHoist runs `hoist serve` listening on ip (also its --instance-ip:
// its TLS certificate names it), with --pprof-addr on loopback and extra
// arguments.
func (e *env) startHoist(ip string, extra ...string) (*hoist, error) {
	pprofAddr, err := hoisttest.FreeLoopbackAddr()
	if err != nil {
		return nil, err
	}
	extra = withTimings(append(extra, "--local-hosting", e.cfg.LocalHosting), e.cfg.timings)
	args := append([]string{"--addr", net.JoinHostPort(ip, "0"), "--tls-addr", net.JoinHostPort(ip, "0"),
		"--instance-ip", ip, "--pprof-addr", pprofAddr}, extra...)
	lh, err := loadreport.StartHoist(e.hoistBin, e.cfg.dataParent, "hoist-hostsload-", true, args...)
	if err != nil {
		return nil, err
	}
	gc := hoisttest.NewV2(lh.URL, hoisttest.AccessKeyID, hoisttest.SecretAccessKey)
	return &hoist{Hoist: lh, bin: e.hoistBin, gl: gc, pprofAddr: pprofAddr}, nil
}

// withTimings adds timings (name=duration,...) to the --timings of args.
func withTimings(args []string, timings string) []string {
	if timings == "" {
		return args
	}
	for i, a := range args {
		if a == "--timings" && i+1 < len(args) {
			out := slices.Clone(args)
			out[i+1] += "," + timings
			return out
		}
	}
	return append(args, "--timings", timings)
}

// fail adds the end of Hoist's log to err.
func (h *hoist) fail(err error) error {
	return fmt.Errorf("%w\nhoist log:\n%s", err, h.LogTail(40))
}

// credentialsEnv is the environment `hoist admin` and Anywhere agents sign
// with.
func credentialsEnv() []string {
	return []string{"AWS_ACCESS_KEY_ID=" + hoisttest.AccessKeyID, "AWS_SECRET_ACCESS_KEY=" + hoisttest.SecretAccessKey,
		"AWS_REGION=" + hoisttest.Region, "AWS_CONFIG_FILE=/nonexistent", "AWS_SHARED_CREDENTIALS_FILE=/nonexistent",
		"AWS_EC2_METADATA_DISABLED=true"}
}

// admin runs `hoist admin command args...` and returns its output.
func (h *hoist) admin(command string, args ...string) (string, error) {
	cmd := exec.Command(h.bin, append([]string{"admin", command, "--endpoint", h.URL}, args...)...)
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH")}, credentialsEnv()...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("hoist admin %s: %w: %s", command, err, out)
	}
	return strings.TrimSpace(string(out)), nil
}

// --- agents ---

// agent is a running `hoist agent`.
type agent struct {
	cmd  *exec.Cmd
	out  *hoisttest.SyncBuffer
	dir  string
	done chan struct{}
}

// commandFunc makes an agent's command: exec.CommandContext on this
// machine, or a network namespace's Host.Command.
type commandFunc func(ctx context.Context, name string, args ...string) *exec.Cmd

// startAgent runs `hoist agent args...` with env, its state directory
// given with dirFlag, and waits until its output says ready.
func (e *env) startAgent(command commandFunc, env []string, ready, dirFlag string, args ...string) (*agent, error) {
	dir, err := os.MkdirTemp(e.cfg.dataParent, "hoist-hostsload-agent-")
	if err != nil {
		return nil, err
	}
	if err := os.Chmod(dir, 0o711); err != nil {
		return nil, err
	}
	a := &agent{dir: filepath.Join(dir, "agent"), out: &hoisttest.SyncBuffer{}, done: make(chan struct{})}
	a.cmd = command(context.Background(), e.hoistBin, append(append([]string{"agent"}, args...), dirFlag, a.dir)...)
	a.cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir}, env...)
	a.cmd.Stdout, a.cmd.Stderr = a.out, a.out
	a.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := a.cmd.Start(); err != nil {
		return nil, err
	}
	go func() { _ = a.cmd.Wait(); close(a.done) }()
	err = loadreport.WaitFor(context.Background(), time.Minute, "the agent ready", func() (bool, string, error) {
		select {
		case <-a.done:
			return false, "", fmt.Errorf("the agent exited:\n%s", a.out.String())
		default:
		}
		return strings.Contains(a.out.String(), ready), "not yet", nil
	})
	if err != nil {
		a.stop()
	}
	return a, err
}

// agentTimings are the pool agents' process timers (as Hoist's).
const agentTimings = "processes.stagger=10ms"

// startPoolAgent enrols and runs a pool agent with address addr in loc.
func (e *env) startPoolAgent(h *hoist, command commandFunc, loc, addr, capacity string) (*agent, error) {
	tok, err := h.admin("create-enrolment-token", "--pool", "load")
	if err != nil {
		return nil, err
	}
	return e.startAgent(command, nil, "connected to Hoist", "--dir", "--pool", "load", "--endpoint", h.TLSURL, "--enrolment-token", tok,
		"--location", loc, "--address", addr, "--instances", capacity, "--reconnect-max", "1s", "--timings", agentTimings)
}

// stop stops the agent (SIGTERM; its group is killed after 30s) and
// removes its directory.
func (a *agent) stop() {
	_ = a.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-a.done:
	case <-time.After(30 * time.Second):
		_ = syscall.Kill(-a.cmd.Process.Pid, syscall.SIGKILL)
		<-a.done
	}
	_ = os.RemoveAll(filepath.Dir(a.dir))
}

// --- CPU ---

// cpuTime is the CPU time a process used so far (0 once it is gone).
func cpuTime(pid int) time.Duration {
	st, _ := sysinfo.ReadStat(pid)
	return time.Duration(st.Ticks) * time.Second / sysinfo.TicksPerSecond
}

// cores is the CPU time used over a wall time, in cores.
func cores(used, over time.Duration) float64 {
	if over <= 0 {
		return 0
	}
	return used.Seconds() / over.Seconds()
}

// --- builds and fleets ---

// uploadBuild uploads the game server as a new build and waits until it
// is READY.
func (e *env) uploadBuild(ctx context.Context, h *hoist) (string, error) {
	return loadreport.UploadBuild(ctx, h.gl, h.URL, "hostsload", e.archive)
}

// fleetInput is a managed fleet of the game server in locations (the
// first is its home Region: Hoist's), perInstance game servers an
// instance, players accepted on every address.
func fleetInput(build string, perInstance int, params string, locations ...string) *gl.CreateFleetInput {
	in := &gl.CreateFleetInput{Name: aws.String("hostsload"), BuildId: aws.String(build), EC2InstanceType: types.EC2InstanceTypeC5Large,
		RuntimeConfiguration: &types.RuntimeConfiguration{ServerProcesses: []types.ServerProcess{{
			LaunchPath: aws.String("/local/game/gameserver"), Parameters: aws.String("-host 0.0.0.0 " + params),
			ConcurrentExecutions: aws.Int32(int32(perInstance))}}}}
	for _, l := range locations {
		in.Locations = append(in.Locations, types.LocationConfiguration{Location: aws.String(l)})
	}
	return in
}

// locationsActive reports whether every location of a fleet is ACTIVE
// (an ERROR one is an error).
func (h *hoist) locationsActive(ctx context.Context, fleetID string) (bool, string, error) {
	out, err := h.gl.DescribeFleetLocationAttributes(ctx, &gl.DescribeFleetLocationAttributesInput{FleetId: aws.String(fleetID)})
	if err != nil {
		return false, "", err
	}
	var states []string
	all := len(out.LocationAttributes) > 0
	for _, l := range out.LocationAttributes {
		st := l.LocationState.Status
		if st == types.FleetStatusError {
			return false, "", fmt.Errorf("location %s is ERROR", aws.ToString(l.LocationState.Location))
		}
		all = all && st == types.FleetStatusActive
		states = append(states, aws.ToString(l.LocationState.Location)+"="+string(st))
	}
	return all, strings.Join(states, ","), nil
}

//go:build linux

package hosts

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	gl "github.com/aws/aws-sdk-go-v2/service/gamelift"
	"github.com/aws/aws-sdk-go-v2/service/gamelift/types"

	"github.com/hoistgg/hoist/e2e/hoisttest"
	"github.com/hoistgg/hoist/e2e/netns"
	"github.com/hoistgg/hoist/internal/server"
)

// anywhereAgent is a running `hoist agent` in Anywhere mode.
type anywhereAgent struct {
	out  *hoisttest.SyncBuffer
	done chan struct{}
}

// startAnywhereAgent runs `hoist agent --endpoint ... --fleet ... --location
// ... --ip <host's address>` in host h, with the test's credentials as the
// AWS SDKs read them and Hoist's CA bundle.
func (e *env) startAnywhereAgent(t *testing.T, h *netns.Host, fleetID, loc, name string) *anywhereAgent {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "agent")
	_ = os.Chmod(filepath.Dir(dir), 0o711) // the game user passes through
	cmd := h.Command(context.Background(), e.bin, "agent", "--endpoint", e.h.TLSURL, "--fleet", fleetID, "--location", loc,
		"--ip", h.Addr.String(), "--compute-name", name, "--ca-file", filepath.Join(e.h.DataDir, server.CABundleFile),
		"--data-dir", dir, "--heartbeat-interval", "1s", "--terminate-grace", "10s",
		"--process-env", strings.Join(processEnv, ","), "--log-level", "debug")
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(),
		"AWS_ACCESS_KEY_ID=" + hoisttest.AccessKeyID, "AWS_SECRET_ACCESS_KEY=" + hoisttest.SecretAccessKey,
		"AWS_REGION=" + hoisttest.Region, "AWS_CONFIG_FILE=/nonexistent", "AWS_SHARED_CREDENTIALS_FILE=/nonexistent",
		"AWS_EC2_METADATA_DISABLED=true"}
	a := &anywhereAgent{out: &hoisttest.SyncBuffer{}, done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = a.out, a.out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = cmd.Wait(); close(a.done) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM) // it deregisters its compute
		select {
		case <-a.done:
		case <-time.After(waitShort):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-a.done
		}
		if t.Failed() {
			t.Logf("hoist agent %s log:\n%s", name, hoisttest.Tail(a.out.String(), 80))
		}
	})
	return a
}

// TestAnywhereFleetOnTwoHosts: an ANYWHERE fleet with a custom location on
// each of two hosts (network namespaces on the test's bridge), each
// running `hoist agent` for its own address, against Hoist on the bridge
// (credentials, TLS): both computes' game servers register; a game
// session created in each location lands on that location's host and
// reports its address; a player from the other host connects to it there
// and the game server accepts the player session.
func TestAnywhereFleetOnTwoHosts(t *testing.T) {
	n := netns.New(t, 2)
	e := startHoist(t, n.Addr.String())
	locs := []string{"custom-netns-a", "custom-netns-b"}
	var lcs []types.LocationConfiguration
	for _, l := range locs {
		if _, err := e.gl.CreateLocation(e.ctx, &gl.CreateLocationInput{LocationName: aws.String(l)}); err != nil {
			t.Fatal(err)
		}
		lcs = append(lcs, types.LocationConfiguration{Location: aws.String(l)})
	}
	out, err := e.gl.CreateFleet(e.ctx, &gl.CreateFleetInput{Name: aws.String("anywhere"), ComputeType: types.ComputeTypeAnywhere,
		Locations: lcs, RuntimeConfiguration: &types.RuntimeConfiguration{ServerProcesses: []types.ServerProcess{{
			LaunchPath: aws.String(hoisttest.GameServerBinary(t)), Parameters: aws.String("-host 0.0.0.0 -accept-players"),
			ConcurrentExecutions: aws.Int32(2)}}}})
	if err != nil {
		t.Fatal(err)
	}
	fleet := aws.ToString(out.FleetAttributes.FleetId)
	for i, h := range n.Hosts {
		e.startAnywhereAgent(t, h, fleet, locs[i], fmt.Sprintf("netns-%d", i))
	}
	for i, h := range n.Hosts {
		eventually(t, waitLong, "2 game servers ready on host "+h.Addr.String(), func() (bool, string) {
			n, err := e.activeProcessesIn(fleet, locs[i])
			return err == nil && n == 2, fmt.Sprint(n, " ", err)
		})
	}
	for i, h := range n.Hosts {
		other := n.Hosts[1-i]
		s := e.playSession(t, fleet, locs[i], other.Dial)
		if s.ip != h.Addr.String() {
			t.Fatalf("a game session in %s at %s, want its host's %s", locs[i], s.ip, h.Addr)
		}
		c, err := e.gl.DescribeCompute(e.ctx, &gl.DescribeComputeInput{FleetId: aws.String(fleet), ComputeName: aws.String(fmt.Sprintf("netns-%d", i))})
		if err != nil || aws.ToString(c.Compute.IpAddress) != h.Addr.String() || c.Compute.ComputeStatus != types.ComputeStatusActive {
			t.Fatalf("compute netns-%d: %+v, %v; want ACTIVE at %s", i, c, err, h.Addr)
		}
	}
}

// activeProcessesIn counts a fleet's ACTIVE server processes in a location.
func (e *env) activeProcessesIn(fleetID, loc string) (int32, error) {
	out, err := e.gl.DescribeFleetLocationUtilization(e.ctx, &gl.DescribeFleetLocationUtilizationInput{FleetId: aws.String(fleetID),
		Location: aws.String(loc)})
	if err != nil {
		return 0, err
	}
	return aws.ToInt32(out.FleetUtilization.ActiveServerProcessCount), nil
}

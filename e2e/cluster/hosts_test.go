package cluster_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
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

	"github.com/hoistgg/hoist/e2e/cluster"
	"github.com/hoistgg/hoist/e2e/hoisttest"
	"github.com/hoistgg/hoist/internal/store"
	"github.com/hoistgg/hoist/internal/store/postgres"
)

// hostTimings are the replicas' timers in TestPoolHostOnAnotherReplica.
var hostTimings = []string{"fleets.reconcile=200ms", "fleets.launch-backoff=500ms", "sessions.sweep=200ms",
	"processes.stagger=20ms", "processes.terminate-grace=3s", "processes.shutdown-grace=3s", "processes.kill-grace=1s",
	"hosts.heartbeat=1s", "hosts.heartbeat-grace=8s", "hosts.start-grace=3s", "hosts.check=250ms"}

// poolHostOptions are the options of a cluster of replicas (0: the
// harness's default count) running TLS for pool hosts, with hostTimings
// and the test game server's short health and reconnect intervals, plus
// processEnv's variables for its processes.
func poolHostOptions(replicas int, processEnv ...string) cluster.Options {
	env := append([]string{"HEALTHCHECK_INTERVAL=3s", "HEALTHCHECK_MAX_JITTER=100ms", "SERVICE_CALL_TIMEOUT=5s",
		"HOIST_TEST_RECONNECT_INTERVAL=1s"}, processEnv...)
	return cluster.Options{Replicas: replicas, TLS: true, Args: []string{"--timings", strings.Join(hostTimings, ","),
		"--process-env", strings.Join(env, ",")}}
}

// TestPoolHostOnAnotherReplica: three replicas on one database (TLS, no
// local hosting); a pool host's agent (`hoist agent --pool`) connected to
// B, the fleet's build uploaded to B, and fleets created through A until
// one's reconciler shard is held by a replica other than B. That fleet
// becomes ACTIVE on the host (its StartInstance went through B's inbox,
// without its secrets, and B made them), a game session created through
// C reaches its process, and the host drained through C stops its
// instances once their game session ended (StopInstance through B).
func TestPoolHostOnAnotherReplica(t *testing.T) {
	c := cluster.Start(t, poolHostOptions(0))
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	a, bR, cR := c.Replicas[0].V2(), c.Replicas[1], c.Replicas[2]
	st, err := postgres.Open(ctx, c.DatabaseURL, postgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	hostID := startPoolAgent(ctx, t, bR)
	build := uploadBuild(ctx, t, bR)
	idB := replicaID(t, bR)
	var fleetID string
	for i := 0; fleetID == ""; i++ {
		if i == 6 {
			t.Fatal("six fleets all reconciled by B, the host's replica")
		}
		id := createHostFleet(ctx, t, a, build, fmt.Sprintf("hosts-%d", i))
		if h := shardHolder(ctx, t, st, id); h != idB {
			t.Logf("fleet %s is reconciled by replica %s, the host's is %s (B)", id, h, idB)
			fleetID = id
		}
	}
	cc := cR.V2()
	polls := 0
	waitFor(ctx, t, "fleet "+fleetID+" ACTIVE", func() (bool, error) {
		out, err := cc.DescribeFleetAttributes(ctx, &gl.DescribeFleetAttributesInput{FleetIds: []string{fleetID}})
		if err != nil {
			return false, err
		}
		if polls++; polls%50 == 0 || out.FleetAttributes[0].Status == types.FleetStatusError {
			if ev := fleetEvents(ctx, cc, fleetID); strings.Contains(ev, "FAILED") {
				return false, fmt.Errorf("its instance's start failed; events:\n%s", ev)
			}
		}
		return out.FleetAttributes[0].Status == types.FleetStatusActive, nil
	})
	id := createActive(ctx, t, cc, fleetID, hoisttest.Region)
	var drained struct{ Host struct{ Status string } }
	if err := cR.Admin(ctx, "DrainHost", map[string]string{"HostId": hostID}, &drained); err != nil || drained.Host.Status != "DRAINING" {
		t.Fatalf("DrainHost through C: %+v, %v", drained, err)
	}
	if _, err := a.TerminateGameSession(ctx, &gl.TerminateGameSessionInput{GameSessionId: aws.String(id),
		TerminationMode: types.TerminationModeForceTerminate}); err != nil {
		t.Fatal(err)
	}
	waitFor(ctx, t, "the drained host's instances stopped", func() (bool, error) {
		var out struct {
			Hosts []struct {
				HostId, Status string
				Instances      int
			}
		}
		if err := c.Replicas[0].Admin(ctx, "ListHosts", struct{}{}, &out); err != nil {
			return false, err
		}
		for _, h := range out.Hosts {
			if h.HostId == hostID {
				return h.Status == "DRAINING" && h.Instances == 0, nil
			}
		}
		return false, fmt.Errorf("host %s not listed", hostID)
	})
}

// replicaID reads a replica's ID from its data directory.
func replicaID(t *testing.T, r *cluster.Replica) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(r.DataDir, "replica-id"))
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

// shardHolder waits until a fleet's reconciler shard is held and returns
// the replica holding it.
func shardHolder(ctx context.Context, t *testing.T, st store.Store, fleetID string) string {
	t.Helper()
	var holder string
	waitFor(ctx, t, "fleet "+fleetID+"'s shard held", func() (bool, error) {
		gs, err := st.Leases(ctx, store.ShardLeasePrefix("fleets")+fleetID)
		for _, g := range gs {
			if g.Name == store.ShardLeasePrefix("fleets")+fleetID {
				holder = g.Holder
			}
		}
		return holder != "", err
	})
	return holder
}

// startPoolAgent enrols a pool host with a token of replica r (which pins
// r's CA) and runs its agent connected to r's TLS listener; it returns
// the host's ID once the agent is connected.
func startPoolAgent(ctx context.Context, t *testing.T, r *cluster.Replica) string {
	t.Helper()
	id, _ := startPoolAgentVia(ctx, t, r, r.Process().TLSURL)
	return id
}

// startPoolAgentVia enrols a pool host with a token of replica r and runs
// its agent connected to endpoint (r's TLS listener, or a proxy in front
// of replicas); it returns the host's ID once the agent is connected, and
// the agent's log.
func startPoolAgentVia(ctx context.Context, t *testing.T, r *cluster.Replica, endpoint string) (string, *hoisttest.SyncBuffer) {
	t.Helper()
	var tok struct{ Token string }
	if err := r.Admin(ctx, "CreateEnrolmentToken", map[string]string{"Pool": "pool"}, &tok); err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	_ = os.Chmod(tmp, 0o711) // the game user passes through it
	_ = os.Chmod(filepath.Dir(tmp), 0o711)
	ready := filepath.Join(tmp, "ready.json")
	cmd := exec.Command(hoisttest.Binary(t), "agent", "--pool", "pool", "--endpoint", endpoint,
		"--dir", filepath.Join(tmp, "agent"), "--reconnect-max", "1s", "--enrolment-token", tok.Token,
		"--location", hoisttest.Region, "--address", "127.0.0.1", "--instances", "*=8", "--log-level", "debug",
		"--timings", "processes.stagger=20ms,processes.terminate-grace=3s,processes.shutdown-grace=3s,processes.kill-grace=1s")
	cmd.Env = append(os.Environ(), "HOIST_READY_FILE="+ready)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out := &hoisttest.SyncBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-done
		}
		if t.Failed() {
			t.Logf("agent log:\n%s", out.String())
		}
	})
	var hostID string
	waitFor(ctx, t, "the agent connected", func() (bool, error) {
		select {
		case <-done:
			return false, fmt.Errorf("the agent exited:\n%s", out.String())
		default:
		}
		var r struct {
			HostID string `json:"host_id"`
		}
		if b, err := os.ReadFile(ready); err == nil && json.Unmarshal(b, &r) == nil {
			hostID = r.HostID
		}
		return hostID != "" && strings.Contains(out.String(), "connected to Hoist"), nil
	})
	return hostID, out
}

// uploadBuild uploads the test game server as a build through replica r
// (its files stay on r) and waits until it is READY.
func uploadBuild(ctx context.Context, t *testing.T, r *cluster.Replica) string {
	t.Helper()
	cl := r.V2()
	out, err := cl.CreateBuild(ctx, &gl.CreateBuildInput{Name: aws.String("gameserver"), Version: aws.String("1"),
		OperatingSystem: types.OperatingSystemAmazonLinux2023})
	if err != nil {
		t.Fatal(err)
	}
	cr := out.UploadCredentials
	s3c := s3.New(s3.Options{Region: hoisttest.Region, BaseEndpoint: aws.String(r.URL()), UsePathStyle: true,
		Credentials: credentials.NewStaticCredentialsProvider(aws.ToString(cr.AccessKeyId), aws.ToString(cr.SecretAccessKey), aws.ToString(cr.SessionToken))})
	if _, err := s3c.PutObject(ctx, &s3.PutObjectInput{Bucket: out.StorageLocation.Bucket, Key: out.StorageLocation.Key,
		Body: bytes.NewReader(hoisttest.GameServerZip(t))}); err != nil {
		t.Fatal(err)
	}
	id := aws.ToString(out.Build.BuildId)
	waitFor(ctx, t, "build READY", func() (bool, error) {
		b, err := cl.DescribeBuild(ctx, &gl.DescribeBuildInput{BuildId: aws.String(id)})
		return err == nil && b.Build.Status == types.BuildStatusReady, err
	})
	return id
}

// createHostFleet creates a managed fleet of the game server, one
// instance in the home Region, one process on it, with GENERATED
// certificates (so its instance's certificate and key go to the host).
func createHostFleet(ctx context.Context, t *testing.T, cl *gl.Client, build, name string) string {
	t.Helper()
	out, err := cl.CreateFleet(ctx, &gl.CreateFleetInput{Name: aws.String(name), BuildId: aws.String(build),
		EC2InstanceType:          types.EC2InstanceTypeC5Large,
		CertificateConfiguration: &types.CertificateConfiguration{CertificateType: types.CertificateTypeGenerated},
		RuntimeConfiguration: &types.RuntimeConfiguration{ServerProcesses: []types.ServerProcess{{
			LaunchPath: aws.String("/local/game/gameserver"), Parameters: aws.String("-host 127.0.0.1"),
			ConcurrentExecutions: aws.Int32(1)}}}})
	if err != nil {
		t.Fatal(err)
	}
	return aws.ToString(out.FleetAttributes.FleetId)
}

// fleetEvents lists a fleet's events, for a failure's message.
func fleetEvents(ctx context.Context, cl *gl.Client, fleetID string) string {
	out, err := cl.DescribeFleetEvents(ctx, &gl.DescribeFleetEventsInput{FleetId: aws.String(fleetID), Limit: aws.Int32(50)})
	if err != nil {
		return err.Error()
	}
	var b strings.Builder
	for _, ev := range out.Events {
		fmt.Fprintf(&b, "  %s %s\n", ev.EventCode, aws.ToString(ev.Message))
	}
	return b.String()
}

package cluster_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	gl "github.com/aws/aws-sdk-go-v2/service/gamelift"
	"github.com/aws/aws-sdk-go-v2/service/gamelift/types"

	"github.com/hoistgg/hoist/e2e/cluster"
	"github.com/hoistgg/hoist/internal/replicas"
	"github.com/hoistgg/hoist/internal/store"
	"github.com/hoistgg/hoist/internal/store/postgres"
)

// janitorBound is how long after a replica dies its registration is
// removed and its connections cleared (docs/replicas.md): its lease's
// 10 s, the janitor's 2 s interval, and the janitor's own lease passing
// on when the dead replica held it.
const janitorBound = 25 * time.Second

// TestMessagesBetweenReplicas: three replicas on one database; game
// servers (the SDK 5 test game server) of an Anywhere fleet connect to B.
// A game session created through A activates (CreateGameSession reached
// the process through B's inbox) and TerminateGameSession through C ends
// it (TerminateProcess). Then B is paused with SIGSTOP past its
// registration: the janitor clears its game server, and B, resumed, has
// it reconnect, after which a game session reaches it again. Then B is
// killed with SIGKILL: a game server
// that reached B through a proxy reconnects to C and a new game session
// created through A activates on it; the registry drops B and clears the
// process that stayed disconnected within janitorBound.
func TestMessagesBetweenReplicas(t *testing.T) {
	c := cluster.Start(t, cluster.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	a, b, cc := c.Replicas[0].V2(), c.Replicas[1].V2(), c.Replicas[2].V2()
	fleetID := anywhereFleet(ctx, t, a, "msgs")
	waitFor(ctx, t, "fleet ACTIVE", func() (bool, error) {
		out, err := a.DescribeFleetAttributes(ctx, &gl.DescribeFleetAttributesInput{FleetIds: []string{fleetID}})
		return err == nil && out.FleetAttributes[0].Status == types.FleetStatusActive, err
	})
	endpointB, token := registerCompute(ctx, t, b, fleetID, "compute-b", "custom-msgs")
	if !t.Run("CreateThroughATerminateThroughC", func(t *testing.T) {
		gs := startGameServer(t, endpointB, token, fleetID, "compute-b", "process-direct")
		waitFor(ctx, t, "the game server ready", func() (bool, error) { return gs.logged("msg=ready"), nil })
		id := createActive(ctx, t, a, fleetID, "custom-msgs")
		if _, err := cc.TerminateGameSession(ctx, &gl.TerminateGameSessionInput{GameSessionId: aws.String(id),
			TerminationMode: types.TerminationModeTriggerOnProcessTerminate}); err != nil {
			t.Fatal(err)
		}
		waitFor(ctx, t, "the game server told to terminate, and gone", func() (bool, error) {
			done, code := gs.exited()
			if done && code != 0 {
				return false, fmt.Errorf("game server exited %d", code)
			}
			return done && gs.logged("asked to terminate"), nil
		})
		waitFor(ctx, t, "the game session TERMINATED", func() (bool, error) {
			return sessionStatus(ctx, a, id) == types.GameSessionStatusTerminated, nil
		})
	}) {
		return
	}
	if !t.Run("AgentOnBActionOnA", func(t *testing.T) {
		agentOnB(ctx, t, a, b, fleetID, "ws://"+strings.TrimPrefix(c.Replicas[2].URL(), "http://")+"/sdk")
	}) {
		return
	}
	st, err := postgres.Open(ctx, c.DatabaseURL, postgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if !t.Run("PauseTheHoldingReplica", func(t *testing.T) { pauseHolder(ctx, t, c, st, fleetID, endpointB, token) }) {
		return
	}
	t.Run("KillTheHoldingReplica", func(t *testing.T) { killHolder(ctx, t, c, st, fleetID, token) })
}

// killHolder: a game server connected to B through a proxy, and a test
// SDK client connected to B directly; B killed, the game server
// reconnects through the proxy to C and a game session created through A
// activates on it; B's registration and the other process's connection
// are cleared within janitorBound.
func killHolder(ctx context.Context, t *testing.T, c *cluster.Cluster, st store.Store, fleetID, token string) {
	a, bR, cR := c.Replicas[0].V2(), c.Replicas[1], c.Replicas[2]
	px := newProxy(t, strings.TrimPrefix(bR.URL(), "http://"))
	gs := startGameServer(t, "ws://"+px.Addr()+"/sdk", token, fleetID, "compute-b", "process-proxied")
	waitFor(ctx, t, "the game server ready", func() (bool, error) { return gs.logged("msg=ready"), nil })
	idB := holder(ctx, t, st, "process-proxied")
	if idB == "" {
		t.Fatal("the proxied game server's process names no replica")
	}
	stay := startGameServer(t, "ws://"+strings.TrimPrefix(bR.URL(), "http://")+"/sdk", token, fleetID, "compute-b", "process-stays")
	waitFor(ctx, t, "the second game server ready", func() (bool, error) { return stay.logged("msg=ready"), nil })
	px.Route(strings.TrimPrefix(cR.URL(), "http://"))
	bR.Kill()
	killed := time.Now()
	_ = stay.cmd.Process.Kill() // it would reconnect to B's address, where nothing listens: it stays disconnected
	waitFor(ctx, t, "the game server reconnected through the proxy", func() (bool, error) {
		return strings.Count(gs.out.String(), "connected to the SDK endpoint") >= 2, nil
	})
	waitFor(ctx, t, "its process connected to another replica", func() (bool, error) {
		h := holder(ctx, t, st, "process-proxied")
		return h != "" && h != idB, nil
	})
	waitFor(ctx, t, "B's registration removed", func() (bool, error) {
		recs, err := replicas.List(ctx, st)
		for _, r := range recs {
			if r.ID == idB {
				return false, err
			}
		}
		return err == nil, err
	})
	waitFor(ctx, t, "the process left on B cleared", func() (bool, error) { return holder(ctx, t, st, "process-stays") == "", nil })
	if d := time.Since(killed); d > janitorBound {
		t.Errorf("B cleared %v after its kill, beyond %v", d, janitorBound)
	} else {
		t.Logf("B's registration and connections cleared %v after its kill", d.Round(100*time.Millisecond))
	}
	// The one placeable process is the one that moved to C.
	createActive(ctx, t, a, fleetID, "custom-msgs")
}

// pauseHolder: B stopped with SIGSTOP past its registration: the janitor
// clears its game server's connection; B, resumed, finds its registration
// gone and closes its sockets, so the game server reconnects and is
// recorded again; a game session created through A then activates on it,
// and TerminateGameSession through C ends it.
func pauseHolder(ctx context.Context, t *testing.T, c *cluster.Cluster, st store.Store, fleetID, endpointB, token string) {
	a, cc, bR := c.Replicas[0].V2(), c.Replicas[2].V2(), c.Replicas[1]
	gs := startGameServer(t, endpointB, token, fleetID, "compute-b", "process-paused")
	waitFor(ctx, t, "the game server ready", func() (bool, error) { return gs.logged("msg=ready"), nil })
	idB := holder(ctx, t, st, "process-paused")
	bR.Pause()
	paused := time.Now()
	waitFor(ctx, t, "the paused replica's process cleared", func() (bool, error) {
		return holder(ctx, t, st, "process-paused") == "", nil
	})
	t.Logf("B's process cleared %v after B paused", time.Since(paused).Round(100*time.Millisecond))
	bR.Resume()
	waitFor(ctx, t, "the game server recorded on B again", func() (bool, error) {
		return holder(ctx, t, st, "process-paused") == idB, nil
	})
	id := createActive(ctx, t, a, fleetID, "custom-msgs")
	if _, err := cc.TerminateGameSession(ctx, &gl.TerminateGameSessionInput{GameSessionId: aws.String(id),
		TerminationMode: types.TerminationModeTriggerOnProcessTerminate}); err != nil {
		t.Fatal(err)
	}
	waitFor(ctx, t, "the game server gone", func() (bool, error) { done, _ := gs.exited(); return done, nil })
}

// holder is the replica a process's record names as holding its
// connection.
func holder(ctx context.Context, t *testing.T, st store.Store, pid string) string {
	t.Helper()
	var p struct{ ConnectedTo string }
	if err := getJSON(ctx, st, "Process", pid, &p); err != nil {
		t.Fatalf("process %s: %v", pid, err)
	}
	return p.ConnectedTo
}

// registerCompute registers a compute through cl (its SDK endpoint is
// that replica's) and returns the endpoint and an auth token.
func registerCompute(ctx context.Context, t *testing.T, cl *gl.Client, fleetID, name, location string) (string, string) {
	t.Helper()
	reg, err := cl.RegisterCompute(ctx, &gl.RegisterComputeInput{FleetId: aws.String(fleetID), ComputeName: aws.String(name),
		IpAddress: aws.String("127.0.0.1"), Location: aws.String(location)})
	if err != nil {
		t.Fatal(err)
	}
	tok, err := cl.GetComputeAuthToken(ctx, &gl.GetComputeAuthTokenInput{FleetId: aws.String(fleetID), ComputeName: aws.String(name)})
	if err != nil {
		t.Fatal(err)
	}
	return aws.ToString(reg.Compute.GameLiftServiceSdkEndpoint), aws.ToString(tok.AuthToken)
}

// createActive creates a game session through cl (retrying while no
// process is placeable) and waits until it is ACTIVE; an ERROR (the
// process never heard of it) fails the test.
func createActive(ctx context.Context, t *testing.T, cl *gl.Client, fleetID, location string) string {
	t.Helper()
	var id string
	waitFor(ctx, t, "CreateGameSession placed", func() (bool, error) {
		out, err := cl.CreateGameSession(ctx, &gl.CreateGameSessionInput{FleetId: aws.String(fleetID),
			Location: aws.String(location), MaximumPlayerSessionCount: aws.Int32(4)})
		var full *types.FleetCapacityExceededException
		if errors.As(err, &full) {
			return false, nil
		}
		if err == nil {
			id = aws.ToString(out.GameSession.GameSessionId)
		}
		return err == nil, err
	})
	waitFor(ctx, t, "game session "+id+" ACTIVE", func() (bool, error) {
		switch st := sessionStatus(ctx, cl, id); st {
		case types.GameSessionStatusActive:
			return true, nil
		case types.GameSessionStatusError, types.GameSessionStatusTerminated:
			return false, fmt.Errorf("game session %s is %s: its process never got CreateGameSession", id, st)
		}
		return false, nil
	})
	return id
}

// sessionStatus is a game session's status ("" when it cannot be read).
func sessionStatus(ctx context.Context, cl *gl.Client, id string) types.GameSessionStatus {
	out, err := cl.DescribeGameSessions(ctx, &gl.DescribeGameSessionsInput{GameSessionId: aws.String(id)})
	if err != nil || len(out.GameSessions) != 1 {
		return ""
	}
	return out.GameSessions[0].Status
}

// getJSON reads one record of the cluster's store.
func getJSON(ctx context.Context, st store.Store, kind, id string, v any) error {
	return st.View(ctx, func(tx store.Tx) error {
		_, err := store.GetJSON(ctx, tx, store.Kind(kind), id, v)
		return err
	})
}

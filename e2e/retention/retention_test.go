// Package retention_test shows through the real AWS SDK that ended game
// sessions and their player sessions leave Hoist after the retention
// period (--session-retention; GameLift: 30 days), with Hoist's clock
// injected so that days pass at once: a Hoist composed in this process
// (internal/server) serves the API and the SDK endpoint on a loopback port,
// a simulated game server speaks the Server SDK protocol (e2e/sdkclient).
package retention_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	gl "github.com/aws/aws-sdk-go-v2/service/gamelift"
	"github.com/aws/aws-sdk-go-v2/service/gamelift/types"

	"github.com/hoistgg/hoist/e2e/sdkclient"
	"github.com/hoistgg/hoist/internal/clocktest"
	"github.com/hoistgg/hoist/internal/config"
	"github.com/hoistgg/hoist/internal/server"
)

const retention = 48 * time.Hour

func TestEndedSessionsLeaveAfterRetention(t *testing.T) {
	clock := clocktest.New(time.Now().UTC())
	cfg := &config.Config{DataDir: t.TempDir(), Region: "us-west-2", Account: "123456789012",
		InstanceIP: "127.0.0.1", LogLevel: "error", LogFormat: "text", ShutdownGrace: 5 * time.Second,
		SessionRetention: retention,
		Timings:          config.Timings{SessionsSweep: 10 * time.Millisecond, FleetsReconcile: 10 * time.Millisecond}}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv, err := server.New(server.Options{Config: cfg, Addr: ln.Addr().String(), Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: srv.Handler()}
	go hs.Serve(ln)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	runDone := make(chan error, 1)
	go func() { runDone <- srv.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		<-runDone
		hs.Close()
		srv.Close(context.Background())
	})

	client := gl.NewFromConfig(aws.Config{Region: "us-west-2",
		Credentials: credentials.NewStaticCredentialsProvider("AKIDRETENTION", "secret", ""),
		HTTPClient:  &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{Proxy: nil}},
		Retryer:     func() aws.Retryer { return aws.NopRetryer{} }},
		func(o *gl.Options) { o.BaseEndpoint = aws.String("http://" + ln.Addr().String()) })

	// An Anywhere fleet with one compute and one process that activates
	// the game sessions it is given.
	const location, compute = "custom-retention", "compute-1"
	must(t, "CreateLocation", func() error {
		_, err := client.CreateLocation(ctx, &gl.CreateLocationInput{LocationName: aws.String(location)})
		return err
	})
	f, err := client.CreateFleet(ctx, &gl.CreateFleetInput{Name: aws.String("retention"), ComputeType: types.ComputeTypeAnywhere,
		Locations: []types.LocationConfiguration{{Location: aws.String(location)}}})
	if err != nil {
		t.Fatalf("CreateFleet: %v", err)
	}
	fleetID := aws.ToString(f.FleetAttributes.FleetId)
	eventually(t, ctx, "fleet ACTIVE", func() (bool, error) {
		out, err := client.DescribeFleetAttributes(ctx, &gl.DescribeFleetAttributesInput{FleetIds: []string{fleetID}})
		return err == nil && len(out.FleetAttributes) == 1 && out.FleetAttributes[0].Status == types.FleetStatusActive, err
	})
	reg, err := client.RegisterCompute(ctx, &gl.RegisterComputeInput{FleetId: aws.String(fleetID), ComputeName: aws.String(compute),
		IpAddress: aws.String("127.0.0.1"), Location: aws.String(location)})
	if err != nil {
		t.Fatalf("RegisterCompute: %v", err)
	}
	tok, err := client.GetComputeAuthToken(ctx, &gl.GetComputeAuthTokenInput{FleetId: aws.String(fleetID), ComputeName: aws.String(compute)})
	if err != nil {
		t.Fatalf("GetComputeAuthToken: %v", err)
	}
	proc, err := sdkclient.Dial(ctx, aws.ToString(reg.Compute.GameLiftServiceSdkEndpoint),
		sdkclient.Query("process-1", compute, fleetID, aws.ToString(tok.AuthToken)), sdkclient.Options{
			OnMessage: func(c *sdkclient.Client, fr *sdkclient.Frame) {
				if fr.Action == "CreateGameSession" {
					id, _ := fr.Fields()["GameSessionId"].(string)
					c.Call(ctx, "ActivateGameSession", map[string]any{"GameSessionId": id})
				}
			}})
	if err != nil {
		t.Fatalf("SDK connection: %v", err)
	}
	defer proc.Close(1000, "")
	if _, err := proc.Call(ctx, "ActivateServerProcess", map[string]any{"SdkVersion": sdkclient.SDKVersion,
		"SdkLanguage": sdkclient.SDKLanguage, "Port": 7777, "LogPaths": []string{}}); err != nil {
		t.Fatalf("ProcessReady: %v", err)
	}

	// A game session with a player, ended by ProcessEnding.
	var gsID string
	eventually(t, ctx, "CreateGameSession placed", func() (bool, error) {
		out, err := client.CreateGameSession(ctx, &gl.CreateGameSessionInput{FleetId: aws.String(fleetID),
			Location: aws.String(location), MaximumPlayerSessionCount: aws.Int32(2)})
		var full *types.FleetCapacityExceededException
		if errors.As(err, &full) { // the process's ProcessReady is not placeable yet
			return false, nil
		}
		if err == nil {
			gsID = aws.ToString(out.GameSession.GameSessionId)
		}
		return err == nil, err
	})
	eventually(t, ctx, "game session ACTIVE", func() (bool, error) {
		gs, err := describe(ctx, client, gsID)
		return err == nil && gs.Status == types.GameSessionStatusActive, err
	})
	ps, err := client.CreatePlayerSession(ctx, &gl.CreatePlayerSessionInput{GameSessionId: aws.String(gsID), PlayerId: aws.String("player-1")})
	if err != nil {
		t.Fatalf("CreatePlayerSession: %v", err)
	}
	psID := aws.ToString(ps.PlayerSession.PlayerSessionId)
	if _, err := proc.Call(ctx, "TerminateServerProcess", nil); err != nil {
		t.Fatalf("ProcessEnding: %v", err)
	}
	var ended time.Time
	eventually(t, ctx, "game session TERMINATED", func() (bool, error) {
		gs, err := describe(ctx, client, gsID)
		if err == nil && gs.Status == types.GameSessionStatusTerminated {
			ended = aws.ToTime(gs.TerminationTime)
		}
		return err == nil && gs.Status == types.GameSessionStatusTerminated, err
	})

	// Just before the retention ends, both are still there.
	clock.Set(ended.Add(retention - time.Minute))
	if _, err := describe(ctx, client, gsID); err != nil {
		t.Fatalf("DescribeGameSessions a minute before the retention ends: %v", err)
	}
	if _, err := client.DescribePlayerSessions(ctx, &gl.DescribePlayerSessionsInput{PlayerSessionId: aws.String(psID)}); err != nil {
		t.Fatalf("DescribePlayerSessions a minute before the retention ends: %v", err)
	}
	// Once it has ended, the sweep deletes them: NotFoundException, as
	// GameLift answers for a game session older than its 30 days.
	clock.Set(ended.Add(retention + time.Second))
	eventually(t, ctx, "game session deleted", func() (bool, error) {
		_, err := describe(ctx, client, gsID)
		var nf *types.NotFoundException
		return errors.As(err, &nf), nil
	})
	_, err = client.DescribePlayerSessions(ctx, &gl.DescribePlayerSessionsInput{PlayerSessionId: aws.String(psID)})
	var nf *types.NotFoundException
	if !errors.As(err, &nf) {
		t.Errorf("DescribePlayerSessions of a player session past retention: %v, want NotFoundException", err)
	}
	byPlayer, err := client.DescribePlayerSessions(ctx, &gl.DescribePlayerSessionsInput{PlayerId: aws.String("player-1")})
	if err != nil || len(byPlayer.PlayerSessions) != 0 {
		t.Errorf("DescribePlayerSessions by PlayerId past retention: %d sessions, %v; want none", len(byPlayer.PlayerSessions), err)
	}
}

func describe(ctx context.Context, client *gl.Client, id string) (types.GameSession, error) {
	out, err := client.DescribeGameSessions(ctx, &gl.DescribeGameSessionsInput{GameSessionId: aws.String(id)})
	if err != nil {
		return types.GameSession{}, err
	}
	if len(out.GameSessions) != 1 {
		return types.GameSession{}, errors.New("DescribeGameSessions answered no game session")
	}
	return out.GameSessions[0], nil
}

func must(t *testing.T, what string, f func() error) {
	t.Helper()
	if err := f(); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// eventually polls cond (which the background loops make true) until it
// holds; an error from cond ends the test.
func eventually(t *testing.T, ctx context.Context, what string, cond func() (bool, error)) {
	t.Helper()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for {
		ok, err := cond()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if ok {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%s: not within the test's time", what)
		case <-tick.C:
		}
	}
}

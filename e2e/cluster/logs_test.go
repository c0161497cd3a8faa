package cluster_test

import (
	"archive/zip"
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	gl "github.com/aws/aws-sdk-go-v2/service/gamelift"
	"github.com/aws/aws-sdk-go-v2/service/gamelift/types"

	"github.com/hoistgg/hoist/e2e/cluster"
	"github.com/hoistgg/hoist/e2e/hoisttest"
)

// TestLogsFromAnotherReplica: a game session runs on a pool host
// connected to replica A, so its logs are collected into A's data
// directory when it ends. The URL GetGameSessionLogUrl gives through B
// downloads them from B (B streams them from A over the replicas' signed
// route). Once A is killed and gone from the registry, B answers 404
// saying the logs were on a replica that is no longer running.
func TestLogsFromAnotherReplica(t *testing.T) {
	c := cluster.Start(t, poolHostOptions(2))
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	aR, bR := c.Replicas[0], c.Replicas[1]
	a, b := aR.V2(), bR.V2()
	startPoolAgent(ctx, t, aR)
	fleetID := createHostFleet(ctx, t, a, uploadBuild(ctx, t, aR), "logs-on-a")
	waitFor(ctx, t, "fleet "+fleetID+" ACTIVE on A's host", func() (bool, error) {
		out, err := a.DescribeFleetAttributes(ctx, &gl.DescribeFleetAttributesInput{FleetIds: []string{fleetID}})
		return err == nil && out.FleetAttributes[0].Status == types.FleetStatusActive, err
	})
	id := createActive(ctx, t, a, fleetID, hoisttest.Region)
	if _, err := a.TerminateGameSession(ctx, &gl.TerminateGameSessionInput{GameSessionId: aws.String(id),
		TerminationMode: types.TerminationModeTriggerOnProcessTerminate}); err != nil {
		t.Fatal(err)
	}
	var u string
	waitFor(ctx, t, "the game session's logs collected", func() (bool, error) {
		out, err := b.GetGameSessionLogUrl(ctx, &gl.GetGameSessionLogUrlInput{GameSessionId: aws.String(id)})
		if err == nil {
			u = aws.ToString(out.PreSignedUrl)
		}
		return err == nil, nil
	})
	if !strings.HasPrefix(u, bR.URL()) {
		t.Fatalf("B's log URL %q is not B's (%s)", u, bR.URL())
	}
	status, body := get(ctx, t, u)
	if status != http.StatusOK {
		t.Fatalf("the log URL through B: %d %s", status, body)
	}
	zr, err := zip.NewReader(bytes.NewReader(body), int64(len(body)))
	if err != nil || len(zr.File) == 0 {
		t.Fatalf("the logs through B are not a zip of the collected files (%v): %q", err, body)
	}
	// A's log reaches the test through a pipe, a moment after A wrote it.
	waitFor(ctx, t, "A's log of serving the logs to B (B must ask A, the replica holding them)", func() (bool, error) {
		return strings.Contains(aR.Process().Log(), "logs: served a log to another replica"), nil
	})
	aR.Kill()
	waitFor(ctx, t, "B saying the logs were on a replica no longer running", func() (bool, error) {
		status, body := get(ctx, t, u)
		return status == http.StatusNotFound && strings.Contains(string(body), "no longer running"), nil
	})
}

// get GETs u and returns its status and body.
func get(ctx context.Context, t *testing.T, u string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := (&http.Client{Transport: &http.Transport{Proxy: nil}}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, body
}

//go:build linux

package hosting

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	gl "github.com/aws/aws-sdk-go-v2/service/gamelift"
	"github.com/aws/aws-sdk-go-v2/service/gamelift/types"

	"github.com/hoistgg/hoist/e2e/hoisttest"
	"github.com/hoistgg/hoist/e2e/sdkclient"
)

// fileLimit is the open-file limit Hoist runs with in TestFileLimitHeadroom.
const fileLimit = 256

// TestFileLimitHeadroom: a Hoist started with an open-file limit of 256
// (prlimit) is sent 300 SDK WebSockets from three Anywhere computes' tokens
// (each within --sdk-compute-sockets). It accepts as many as its bound on
// long-lived connections (the limit less 128 files) and refuses the rest
// 503 before the upgrade, and meanwhile its health check and the API keep
// answering. Before the bound the sockets took every file: Hoist stopped
// accepting connections, health and API included.
func TestFileLimitHeadroom(t *testing.T) {
	prlimit, err := exec.LookPath("prlimit")
	if err != nil {
		t.Skip("prlimit (util-linux) is not installed: it starts Hoist with a low open-file limit")
	}
	h := startLimited(t, prlimit)
	e := &env{h: h, gl: h.V2(), ctx: hoisttest.Context(t, 5*time.Minute)}
	e.dumpOnFailure(t)
	max := longConnectionBound(t, h.Log())
	tokens := anywhereTokens(t, e, 3)
	noKeepAlive := &http.Client{Transport: &http.Transport{Proxy: nil, DisableKeepAlives: true}}
	opened, refused := 0, 0
	for c, tok := range tokens {
		for i := range 100 {
			ctx, cancel := context.WithTimeout(e.ctx, 5*time.Second)
			client, err := sdkclient.Dial(ctx, tok.endpoint, sdkclient.Query(fmt.Sprintf("p-%d-%d", c, i), tok.compute, tok.fleetID, tok.token),
				sdkclient.Options{HTTPClient: noKeepAlive})
			cancel()
			var he *sdkclient.HandshakeError
			switch {
			case err == nil:
				opened++
				t.Cleanup(func() { client.Drop() })
			case errors.As(err, &he) && he.StatusCode == http.StatusServiceUnavailable:
				refused++
			default:
				t.Fatalf("socket %d of compute %d (%d open): %v", i, c, opened, err)
			}
		}
	}
	if opened != max || refused != 300-max {
		t.Errorf("%d sockets open, %d refused 503; want %d and %d", opened, refused, max, 300-max)
	}
	for i := range 20 {
		resp, err := (&http.Client{Timeout: 5 * time.Second}).Get(h.URL + "/hoist/health")
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("health check %d with every long-lived connection taken: %v %v", i, resp, err)
		}
		resp.Body.Close()
		if _, err := e.gl.ListFleets(e.ctx, &gl.ListFleetsInput{}); err != nil {
			t.Fatalf("ListFleets %d with every long-lived connection taken: %v", i, err)
		}
	}
}

// startLimited starts Hoist under prlimit with fileLimit open files (soft
// and hard), stopped when the test ends.
func startLimited(t *testing.T, prlimit string) *hoisttest.Hoist {
	t.Helper()
	dataDir := t.TempDir()
	_ = os.Chmod(filepath.Dir(dataDir), 0o711)
	lim := strconv.Itoa(fileLimit)
	args := append([]string{"--nofile=" + lim + ":" + lim, "--", hoisttest.Binary(t)}, append(hoisttest.ServeArgs(dataDir, true), "--local-hosting", "in-process")...)
	p, err := hoisttest.Launch("hoist", prlimit, args, hoisttest.CredentialsEnv(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	h := &hoisttest.Hoist{Process: p, DataDir: dataDir}
	t.Cleanup(func() {
		if err := p.Stop(30 * time.Second); err != nil {
			t.Error(err)
		}
	})
	return h
}

// longConnectionBound reads the bound Hoist logged at start.
func longConnectionBound(t *testing.T, log string) int {
	t.Helper()
	m := regexp.MustCompile(`long-lived connections bounded"? max=(\d+) openFileLimit=(\d+)`).FindStringSubmatch(log)
	if m == nil {
		t.Fatalf("Hoist did not log its bound on long-lived connections:\n%s", log)
	}
	if m[2] != strconv.Itoa(fileLimit) {
		t.Fatalf("Hoist runs with an open-file limit of %s, want %d", m[2], fileLimit)
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

// computeToken is an Anywhere compute's endpoint and credentials.
type computeToken struct{ endpoint, fleetID, compute, token string }

// anywhereTokens makes an Anywhere fleet with n registered computes.
func anywhereTokens(t *testing.T, e *env, n int) []computeToken {
	t.Helper()
	const loc = "custom-filelimit"
	if _, err := e.gl.CreateLocation(e.ctx, &gl.CreateLocationInput{LocationName: aws.String(loc)}); err != nil {
		t.Fatal(err)
	}
	created, err := e.gl.CreateFleet(e.ctx, &gl.CreateFleetInput{Name: aws.String("filelimit"), ComputeType: types.ComputeTypeAnywhere,
		Locations: []types.LocationConfiguration{{Location: aws.String(loc)}}})
	if err != nil {
		t.Fatal(err)
	}
	fleetID := aws.ToString(created.FleetAttributes.FleetId)
	e.waitFleet(t, fleetID, types.FleetStatusActive)
	var out []computeToken
	for i := range n {
		name := fmt.Sprintf("host-%d", i)
		e.register(t, fleetID, name, loc)
		// The plain listener's endpoint: the test dials without TLS.
		out = append(out, computeToken{endpoint: "ws" + strings.TrimPrefix(e.h.URL, "http") + "/sdk",
			fleetID: fleetID, compute: name, token: e.authToken(t, fleetID, name)})
	}
	return out
}

//go:build linux

package hosting

import (
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	gl "github.com/aws/aws-sdk-go-v2/service/gamelift"
	"github.com/aws/aws-sdk-go-v2/service/gamelift/types"
)

// TestTokenRefresh: an Anywhere game server connected with a compute auth
// token that expires in 3 s is sent RefreshConnection with a fresh token
// before each expiry, moves to the new socket each time, and still hosts a
// game session long after its first token expired.
func TestTokenRefresh(t *testing.T) {
	e := startHoist(t, "fleets.token-ttl=3s")
	e.dumpOnFailure(t)
	const loc = "custom-refresh"
	if _, err := e.gl.CreateLocation(e.ctx, &gl.CreateLocationInput{LocationName: aws.String(loc)}); err != nil {
		t.Fatal(err)
	}
	created, err := e.gl.CreateFleet(e.ctx, &gl.CreateFleetInput{Name: aws.String("refresh"), ComputeType: types.ComputeTypeAnywhere,
		Locations: []types.LocationConfiguration{{Location: aws.String(loc)}}})
	if err != nil {
		t.Fatal(err)
	}
	fleetID := aws.ToString(created.FleetAttributes.FleetId)
	e.waitFleet(t, fleetID, types.FleetStatusActive)
	reg := e.register(t, fleetID, "laptop-r", loc)
	issued := time.Now()
	token := e.authToken(t, fleetID, "laptop-r")
	// The endpoint is wss:// (the TLS listener is on): the game server
	// trusts Hoist's CA as an Anywhere host does, by SSL_CERT_FILE.
	gs := startGameServer(t, aws.ToString(reg.GameLiftServiceSdkEndpoint), token, fleetID, "laptop-r", "refresh-1",
		[]string{"SSL_CERT_FILE=" + filepath.Join(e.h.DataDir, "ca-bundle.pem")})
	gs.port()
	// Each token lives 3 s and is refreshed half-way: by the third refresh
	// the first token has long expired.
	eventually(t, waitShort, "three RefreshConnection messages", func() (bool, string) {
		n := strings.Count(gs.out.String(), "refreshing the connection")
		return n >= 3 && time.Since(issued) > 3*time.Second, "refreshes seen: " + strconv.Itoa(n)
	})
	if strings.Contains(e.h.Log(), token) {
		t.Error("Hoist logged a compute auth token")
	}
	e.waitLocationProcesses(t, fleetID, loc, 1)
	s := e.createIn(t, fleetID, loc)
	if aws.ToString(s.ComputeName) != "laptop-r" {
		t.Errorf("game session on %s, want laptop-r", aws.ToString(s.ComputeName))
	}
	e.deleteFleet(t, fleetID)
}

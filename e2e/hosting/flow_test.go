//go:build linux

package hosting

import (
	"archive/zip"
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	gl "github.com/aws/aws-sdk-go-v2/service/gamelift"
	"github.com/aws/aws-sdk-go-v2/service/gamelift/types"

	"github.com/hoistgg/hoist/e2e/hoisttest"
)

// testFlow is the whole managed hosting story with aws-sdk-go-v2: upload a
// build, create a fleet, wait for ACTIVE, create a game session that the
// process activates, create player sessions and accept and remove them
// over the game server's player port, terminate, download the logs, delete
// the fleet, and no process is left.
func testFlow(t *testing.T, e *env) {
	fleetID, attrs := flowFleet(t, e)
	active := flowGameSession(t, e, fleetID, attrs)
	reserved := flowPlayers(t, e, active)
	flowTerminate(t, e, fleetID, active, reserved)
	e.deleteFleet(t, fleetID)
	if !e.hasEvent(t, fleetID, types.EventCodeFleetDeleted, "") {
		t.Errorf("no FLEET_DELETED event:\n%s", e.eventText(t, fleetID))
	}
	// A deleted fleet is gone for new work (InvalidFleetStatusException is
	// checked on a fleet in ERROR, testInvalidLaunchPath).
	_, err := e.gl.CreateGameSession(e.ctx, &gl.CreateGameSessionInput{FleetId: aws.String(fleetID), MaximumPlayerSessionCount: aws.Int32(1)})
	wantErr[*types.NotFoundException](t, "CreateGameSession on a deleted fleet", err)
}

// flowFleet uploads the game server and runs it on a fleet of one
// instance with two server processes.
func flowFleet(t *testing.T, e *env) (string, *types.FleetAttributes) {
	buildID := e.uploadGameServer(t, "flow")
	created := e.createFleet(t, fleetSpec{name: "flow", build: buildID, params: "-accept-players", concurrent: 2})
	fleetID := aws.ToString(created.FleetAttributes.FleetId)
	if st := created.FleetAttributes.Status; st != types.FleetStatusNew {
		t.Errorf("CreateFleet: status %s, want NEW", st)
	}
	if got := aws.ToString(created.FleetAttributes.BuildId); got != buildID {
		t.Errorf("CreateFleet: BuildId %q, want %q", got, buildID)
	}
	e.waitFleet(t, fleetID, types.FleetStatusActive)
	e.waitIdleProcesses(t, fleetID, 2)
	checkCreationEvents(t, e, fleetID)
	if pids := fleetPIDs(fleetID); len(pids) != 2 {
		t.Fatalf("fleet %s runs %d game server processes (%v), want 2 (ConcurrentExecutions)", fleetID, len(pids), pids)
	}

	return fleetID, created.FleetAttributes
}

// flowGameSession creates a game session with every field of the seed and
// waits for the process to activate it.
func flowGameSession(t *testing.T, e *env, fleetID string, attrs *types.FleetAttributes) types.GameSession {
	// The game session, as the seed describes CreateGameSession.
	props := []types.GameProperty{{Key: aws.String("mode"), Value: aws.String("ctf")}, {Key: aws.String("map"), Value: aws.String("dust")}}
	out, err := e.gl.CreateGameSession(e.ctx, &gl.CreateGameSessionInput{
		FleetId: aws.String(fleetID), Location: aws.String(hoisttest.Region), MaximumPlayerSessionCount: aws.Int32(3),
		Name: aws.String("flow game"), GameProperties: props, GameSessionData: aws.String(`{"round":1}`),
		CreatorId: aws.String("creator-1"), IdempotencyToken: aws.String("flow-token-1"),
	})
	if err != nil {
		t.Fatalf("CreateGameSession: %v", err)
	}
	gs := out.GameSession
	gsID := aws.ToString(gs.GameSessionId)
	if want := "arn:aws:gamelift:" + hoisttest.Region + "::gamesession/" + fleetID + "/flow-token-1"; gsID != want {
		t.Errorf("GameSessionId %q, want %q", gsID, want)
	}
	if gs.Status != types.GameSessionStatusActivating && gs.Status != types.GameSessionStatusActive {
		t.Errorf("CreateGameSession: status %s, want ACTIVATING", gs.Status)
	}
	active := e.waitGameSession(t, gsID, types.GameSessionStatusActive)
	checkSession(t, active, fleetID, attrs)
	if aws.ToString(active.CreatorId) != "creator-1" || aws.ToString(active.GameSessionData) != `{"round":1}` ||
		aws.ToString(active.Name) != "flow game" || len(active.GameProperties) != 2 || aws.ToInt32(active.MaximumPlayerSessionCount) != 3 {
		t.Errorf("game session does not carry the request's fields: %+v", active)
	}

	_, err = e.gl.GetGameSessionLogUrl(e.ctx, &gl.GetGameSessionLogUrlInput{GameSessionId: aws.String(gsID)})
	wantErr[*types.NotFoundException](t, "GetGameSessionLogUrl of a game session that has not ended", err)

	return active
}

// flowPlayers reserves player slots and has the game server accept and
// remove players over its player port; it returns a player session left
// RESERVED.
func flowPlayers(t *testing.T, e *env, active types.GameSession) string {
	gsID := aws.ToString(active.GameSessionId)
	// The port is the game server's own player port.
	pl := dialPlayer(t, aws.ToString(active.IpAddress), aws.ToInt32(active.Port))
	if got := pl.do("PING"); got != "PONG" {
		t.Fatalf("player port answered %q to PING", got)
	}

	// Player sessions: RESERVED, ACTIVE when the game server accepts them,
	// COMPLETED when it removes them; slots are counted throughout.
	ps1, err := e.gl.CreatePlayerSession(e.ctx, &gl.CreatePlayerSessionInput{GameSessionId: aws.String(gsID),
		PlayerId: aws.String("player-1"), PlayerData: aws.String("blue")})
	if err != nil {
		t.Fatalf("CreatePlayerSession: %v", err)
	}
	p1 := ps1.PlayerSession
	if p1.Status != types.PlayerSessionStatusReserved || aws.ToString(p1.IpAddress) != aws.ToString(active.IpAddress) ||
		aws.ToInt32(p1.Port) != aws.ToInt32(active.Port) || aws.ToString(p1.PlayerData) != "blue" {
		t.Errorf("CreatePlayerSession: %+v", p1)
	}
	pss, err := e.gl.CreatePlayerSessions(e.ctx, &gl.CreatePlayerSessionsInput{GameSessionId: aws.String(gsID),
		PlayerIds: []string{"player-2", "player-3"}, PlayerDataMap: map[string]string{"player-2": "red"}})
	if err != nil {
		t.Fatalf("CreatePlayerSessions: %v", err)
	}
	if len(pss.PlayerSessions) != 2 {
		t.Fatalf("CreatePlayerSessions: %d sessions", len(pss.PlayerSessions))
	}
	p2, p3 := pss.PlayerSessions[0], pss.PlayerSessions[1]
	if n := aws.ToInt32(e.gameSession(t, gsID).CurrentPlayerSessionCount); n != 3 {
		t.Errorf("CurrentPlayerSessionCount %d after 3 reservations, want 3", n)
	}
	_, err = e.gl.CreatePlayerSession(e.ctx, &gl.CreatePlayerSessionInput{GameSessionId: aws.String(gsID), PlayerId: aws.String("player-4")})
	wantErr[*types.GameSessionFullException](t, "CreatePlayerSession in a full game session", err)

	details, err := e.gl.GetPlayerConnectionDetails(e.ctx, &gl.GetPlayerConnectionDetailsInput{GameSessionId: aws.String(gsID),
		PlayerIds: []string{"player-1"}})
	if err != nil {
		t.Fatalf("GetPlayerConnectionDetails: %v", err)
	}
	if d := details.PlayerConnectionDetails; len(d) != 1 || len(d[0].Endpoints) != 1 ||
		aws.ToInt32(d[0].Endpoints[0].Port) != aws.ToInt32(active.Port) || aws.ToString(d[0].Endpoints[0].IpAddress) != aws.ToString(active.IpAddress) {
		t.Errorf("GetPlayerConnectionDetails: %+v", d)
	}

	pl.must("ACCEPT " + aws.ToString(p1.PlayerSessionId))
	e.waitPlayerSession(t, aws.ToString(p1.PlayerSessionId), types.PlayerSessionStatusActive)
	if a := pl.do("ACCEPT " + aws.ToString(p1.PlayerSessionId)); !strings.HasPrefix(a, "ERROR 400") {
		t.Errorf("accepting an ACTIVE player session again: %q, want ERROR 400", a)
	}
	if a := pl.do("ACCEPT psess-00000000-0000-0000-0000-000000000000"); !strings.HasPrefix(a, "ERROR 404") {
		t.Errorf("accepting an unknown player session: %q, want ERROR 404", a)
	}
	// A second player connection accepts player 2; it leaves by closing it.
	pl2 := dialPlayer(t, aws.ToString(active.IpAddress), aws.ToInt32(active.Port))
	pl2.must(aws.ToString(p2.PlayerSessionId))
	e.waitPlayerSession(t, aws.ToString(p2.PlayerSessionId), types.PlayerSessionStatusActive)
	desc := pl.must("DESCRIBE")
	if !strings.Contains(desc, aws.ToString(p1.PlayerSessionId)) || !strings.Contains(desc, aws.ToString(p3.PlayerSessionId)) {
		t.Errorf("the game server's DescribePlayerSessions misses player sessions: %s", desc)
	}

	pl.must("REMOVE " + aws.ToString(p1.PlayerSessionId))
	done := e.waitPlayerSession(t, aws.ToString(p1.PlayerSessionId), types.PlayerSessionStatusCompleted)
	if done.TerminationTime == nil {
		t.Errorf("a COMPLETED player session has no TerminationTime")
	}
	if n := aws.ToInt32(e.gameSession(t, gsID).CurrentPlayerSessionCount); n != 2 {
		t.Errorf("CurrentPlayerSessionCount %d after a player left, want 2", n)
	}
	pl2.close()
	e.waitPlayerSession(t, aws.ToString(p2.PlayerSessionId), types.PlayerSessionStatusCompleted)
	// The freed slots take new players.
	if _, err := e.gl.CreatePlayerSessions(e.ctx, &gl.CreatePlayerSessionsInput{GameSessionId: aws.String(gsID),
		PlayerIds: []string{"player-4", "player-5"}}); err != nil {
		t.Fatalf("CreatePlayerSessions into freed slots: %v", err)
	}

	byPlayer, err := e.gl.DescribePlayerSessions(e.ctx, &gl.DescribePlayerSessionsInput{PlayerId: aws.String("player-1")})
	if err != nil || len(byPlayer.PlayerSessions) != 1 || byPlayer.PlayerSessions[0].Status != types.PlayerSessionStatusCompleted {
		t.Errorf("DescribePlayerSessions by PlayerId: %+v, %v", byPlayer, err)
	}
	completed, err := e.gl.DescribePlayerSessions(e.ctx, &gl.DescribePlayerSessionsInput{GameSessionId: aws.String(gsID),
		PlayerSessionStatusFilter: aws.String("COMPLETED")})
	if err != nil || len(completed.PlayerSessions) != 2 {
		t.Errorf("DescribePlayerSessions COMPLETED: %+v, %v", completed, err)
	}

	return aws.ToString(p3.PlayerSessionId)
}

// flowTerminate ends the game session, checks what it leaves (TERMINATED,
// players COMPLETED, a new process) and downloads its logs.
func flowTerminate(t *testing.T, e *env, fleetID string, active types.GameSession, reserved string) {
	gsID := aws.ToString(active.GameSessionId)
	// Terminate: the process is asked to end, the session is TERMINATED,
	// its reserved players COMPLETED, and a new process takes its place.
	term, err := e.gl.TerminateGameSession(e.ctx, &gl.TerminateGameSessionInput{GameSessionId: aws.String(gsID),
		TerminationMode: types.TerminationModeTriggerOnProcessTerminate})
	if err != nil {
		t.Fatalf("TerminateGameSession: %v", err)
	}
	if st := term.GameSession.Status; st != types.GameSessionStatusTerminating {
		t.Errorf("TerminateGameSession: status %s, want TERMINATING", st)
	}
	ended := e.waitGameSession(t, gsID, types.GameSessionStatusTerminated)
	if ended.StatusReason != types.GameSessionStatusReasonTriggeredOnProcessTerminate || ended.TerminationTime == nil {
		t.Errorf("terminated game session: reason %q, termination time %v", ended.StatusReason, ended.TerminationTime)
	}
	e.waitPlayerSession(t, reserved, types.PlayerSessionStatusCompleted)
	_, err = e.gl.CreatePlayerSession(e.ctx, &gl.CreatePlayerSessionInput{GameSessionId: aws.String(gsID), PlayerId: aws.String("late")})
	wantErr[*types.InvalidGameSessionStatusException](t, "CreatePlayerSession in a TERMINATED game session", err)
	e.waitIdleProcesses(t, fleetID, 2)

	// The logs: the process's output and the game server's own log.
	files := downloadLogs(t, e, gsID)
	// The process was told the game session's properties and connection.
	output := files["process-output.log"]
	for _, want := range []string{"game session started", "mode:ctf", "dns=" + aws.ToString(active.DnsName),
		fmt.Sprintf("port=%d", aws.ToInt32(active.Port)), "ip=" + aws.ToString(active.IpAddress)} {
		if !strings.Contains(output, want) {
			t.Errorf("process-output.log lacks %q:\n%s", want, output)
		}
	}
	found := false
	for name, body := range files {
		if strings.HasPrefix(name, "files/logs/gameserver-") && strings.Contains(body, "asked to terminate") {
			found = true
		}
	}
	if !found {
		t.Errorf("the logs hold no game server log that shows TerminateProcess; files: %v", keys(files))
	}

}

// checkCreationEvents checks that a fleet that became ACTIVE recorded each
// status it went through, in order.
func checkCreationEvents(t *testing.T, e *env, fleetID string) {
	t.Helper()
	var codes []types.EventCode
	for _, ev := range e.events(t, fleetID) {
		codes = append(codes, ev.EventCode)
	}
	want := []types.EventCode{types.EventCodeFleetCreated, types.EventCodeFleetStateDownloading, types.EventCodeFleetStateValidating,
		types.EventCodeFleetStateBuilding, types.EventCodeFleetStateActivating, types.EventCodeFleetStateActive}
	i := 0
	for _, c := range codes {
		if i < len(want) && c == want[i] {
			i++
		}
	}
	if i != len(want) {
		t.Errorf("fleet events %v do not hold %v in order", codes, want)
	}
}

// checkSession checks the connection fields of an ACTIVE game session.
func checkSession(t *testing.T, gs types.GameSession, fleetID string, attrs *types.FleetAttributes) {
	t.Helper()
	if aws.ToString(gs.IpAddress) != "127.0.0.1" || aws.ToInt32(gs.Port) < 1 || aws.ToString(gs.DnsName) == "" {
		t.Errorf("game session has IpAddress %q, Port %d, DnsName %q", aws.ToString(gs.IpAddress), aws.ToInt32(gs.Port), aws.ToString(gs.DnsName))
	}
	if aws.ToString(gs.FleetId) != fleetID || aws.ToString(gs.FleetArn) != aws.ToString(attrs.FleetArn) ||
		aws.ToString(gs.Location) != hoisttest.Region || gs.PlayerSessionCreationPolicy != types.PlayerSessionCreationPolicyAcceptAll {
		t.Errorf("game session fleet/location/policy: %q %q %q %s", aws.ToString(gs.FleetId), aws.ToString(gs.FleetArn),
			aws.ToString(gs.Location), gs.PlayerSessionCreationPolicy)
	}
}

// downloadLogs gets a game session's log URL, downloads the zip it serves
// and returns its files; a tampered URL is refused.
func downloadLogs(t *testing.T, e *env, gsID string) map[string]string {
	t.Helper()
	var u string
	eventually(t, waitShort, "logs of "+gsID, func() (bool, string) {
		out, err := e.gl.GetGameSessionLogUrl(e.ctx, &gl.GetGameSessionLogUrlInput{GameSessionId: aws.String(gsID)})
		if err != nil {
			return false, err.Error()
		}
		u = aws.ToString(out.PreSignedUrl)
		return true, ""
	})
	resp, err := http.Get(u)
	if err != nil {
		t.Fatalf("GET log URL: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET log URL: %s: %s", resp.Status, body)
	}
	zr, err := zip.NewReader(bytes.NewReader(body), int64(len(body)))
	if err != nil {
		t.Fatalf("the log download is not a zip: %v", err)
	}
	files := map[string]string{}
	for _, f := range zr.File {
		rc, err := f.Open()
		if err != nil {
			t.Fatalf("log archive entry %s: %v", f.Name, err)
		}
		b, _ := io.ReadAll(rc)
		rc.Close()
		files[f.Name] = string(b)
	}

	// Any change to the signed URL is refused.
	parsed, _ := url.Parse(u)
	q := parsed.Query()
	for name, change := range map[string]func(url.Values){
		"signature": func(v url.Values) { s := v.Get("signature"); v.Set("signature", flip(s)) },
		"expires":   func(v url.Values) { v.Set("expires", v.Get("expires")+"0") },
		"session":   func(v url.Values) { v.Set("gameSessionId", v.Get("gameSessionId")+"x") },
	} {
		v := url.Values{}
		for k, vs := range q {
			v[k] = slices.Clone(vs)
		}
		change(v)
		bad := *parsed
		bad.RawQuery = v.Encode()
		resp, err := http.Get(bad.String())
		if err != nil {
			t.Fatalf("GET tampered log URL: %v", err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden {
			t.Errorf("log URL with a changed %s: %s, want 403", name, resp.Status)
		}
	}
	return files
}

// flip changes the last hex digit of s.
func flip(s string) string {
	if s == "" {
		return "0"
	}
	last := s[len(s)-1]
	if last == '0' {
		last = '1'
	} else {
		last = '0'
	}
	return s[:len(s)-1] + string(last)
}

func keys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

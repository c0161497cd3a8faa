package main

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/hoistgg/hoist/internal/hosting"
	"github.com/hoistgg/hoist/internal/pki"
	"github.com/hoistgg/hoist/internal/sdkconn"
	"github.com/hoistgg/hoist/internal/sdkconn/sdkconntest"
)

const gsID = "arn:aws:gamelift:us-west-2::gamesession/fleet-5c7f/gs-1"

func sendCreateGameSession(t *testing.T, e *sdkconntest.Endpoint, pid string) {
	t.Helper()
	err := e.Server.SendToProcess(context.Background(), pid, hosting.Message{"Action": "CreateGameSession",
		"GameSessionId": gsID, "GameSessionName": "test", "GameSessionData": "", "MatchmakerData": "",
		"MaximumPlayerSessionCount": 4, "Port": 7777, "IpAddress": "127.0.0.1", "DnsName": "",
		"GameProperties": map[string]string{"mode": "ctf"}})
	if err != nil {
		t.Fatal(err)
	}
}

// waitReady waits until the process is ready: it called ProcessReady and,
// having its reply, sent its first heartbeat (a CreateGameSession that
// reaches it before the reply is ignored, as the SDK ignores it).
func waitReady(t *testing.T, e *sdkconntest.Endpoint, pid string) sdkconntest.Call {
	t.Helper()
	ready := e.API.WaitMethod(t, wait, "ProcessReady", pid, 1)
	e.API.WaitMethod(t, wait, "Heartbeat", pid, 1)
	return ready
}

func send(t *testing.T, e *sdkconntest.Endpoint, pid string, msg hosting.Message) {
	t.Helper()
	if err := e.Server.SendToProcess(context.Background(), pid, msg); err != nil {
		t.Fatal(err)
	}
}

// TestLifecycle runs the whole life of a process: connect, ProcessReady
// with a real port, heartbeats, a game session, players, TerminateProcess.
func TestLifecycle(t *testing.T) {
	e := endpoint(t, nil)
	p := start(t, e.URL, "proc-1", []string{"HOIST_TEST_ACCEPT_PLAYERS=1"})

	c := e.API.WaitMethod(t, wait, "Connected", "proc-1", 1)
	if c.Conn.FleetID != fleet || c.Conn.ComputeName != host || c.Conn.SDKLanguage != "Go" || c.Conn.SDKVersion != "5.6.0" {
		t.Errorf("connected as %+v", c.Conn)
	}
	ready := e.API.WaitMethod(t, wait, "ProcessReady", "proc-1", 1)
	wantLogs := []string{"/local/game/logs/gameserver-proc-1.log"}
	if ready.Port <= 0 || !reflect.DeepEqual(ready.LogPaths, wantLogs) {
		t.Errorf("ProcessReady(port %d, logs %v)", ready.Port, ready.LogPaths)
	}
	if _, err := os.Stat(filepath.Join(p.dir, "logs", "gameserver-proc-1.log")); err != nil {
		t.Errorf("log file: %v", err)
	}
	for n := 1; n <= 3; n++ {
		if hb := e.API.WaitMethod(t, wait, "Heartbeat", "proc-1", n); !hb.Healthy {
			t.Error("unhealthy heartbeat")
		}
	}
	pl := dialPlayer(t, ready.Port)
	if got := pl.say(t, "PING"); got != "PONG" {
		t.Fatalf("PING: %q", got)
	}
	if got := pl.say(t, "psess-1"); !strings.HasPrefix(got, "ERROR 0 no game session") {
		t.Errorf("before a game session: %q", got)
	}

	sendCreateGameSession(t, e, "proc-1")
	if a := e.API.WaitMethod(t, wait, "ActivateGameSession", "proc-1", 1); a.GameSessionID != gsID {
		t.Errorf("activated %q", a.GameSessionID)
	}
	p.out.waitFor(t, "game session started", "mode:ctf")
	if got := pl.say(t, "psess-1"); got != "OK" {
		t.Errorf("accept: %q", got)
	}
	if a := e.API.WaitMethod(t, wait, "AcceptPlayerSession", "proc-1", 1); a.GameSessionID != gsID || a.PlayerSessionID != "psess-1" {
		t.Errorf("accepted %+v", a)
	}
	if got := pl.say(t, "DESCRIBE"); !strings.HasPrefix(got, "OK ") {
		t.Errorf("describe: %q", got)
	}
	if got := pl.say(t, "REMOVE psess-1"); got != "OK" {
		t.Errorf("remove: %q", got)
	}
	e.API.WaitMethod(t, wait, "RemovePlayerSession", "proc-1", 1)

	send(t, e, "proc-1", hosting.Message{"Action": "TerminateProcess", "TerminationTime": int64(1700000000000)})
	e.API.WaitMethod(t, wait, "ProcessEnding", "proc-1", 1)
	if code := p.exitCode(t); code != exitOK {
		t.Errorf("exit code %d", code)
	}
	if d := e.API.WaitMethod(t, wait, "Disconnected", "proc-1", 1); !d.Normal {
		t.Error("the exit after ProcessEnding was not a normal close")
	}
}

// TestPlayerLeaves removes a player's session when its connection closes.
func TestPlayerLeaves(t *testing.T) {
	e := endpoint(t, nil)
	start(t, e.URL, "proc-1", nil, "-accept-players")
	ready := waitReady(t, e, "proc-1")
	sendCreateGameSession(t, e, "proc-1")
	e.API.WaitMethod(t, wait, "ActivateGameSession", "proc-1", 1)
	pl := dialPlayer(t, ready.Port)
	if got := pl.say(t, "ACCEPT psess-9"); got != "OK" {
		t.Fatalf("accept: %q", got)
	}
	pl.conn.Close()
	if r := e.API.WaitMethod(t, wait, "RemovePlayerSession", "proc-1", 1); r.PlayerSessionID != "psess-9" {
		t.Errorf("removed %+v", r)
	}
}

func TestPlayerCommandsOff(t *testing.T) {
	e := endpoint(t, nil)
	start(t, e.URL, "proc-1", nil)
	ready := waitReady(t, e, "proc-1")
	if got := dialPlayer(t, ready.Port).say(t, "psess-1"); !strings.Contains(got, "player commands are off") {
		t.Errorf("got %q", got)
	}
}

// TestKnobs checks each failure knob, set by environment or by flag.
func TestKnobs(t *testing.T) {
	t.Run("unhealthy", func(t *testing.T) {
		e := endpoint(t, nil)
		start(t, e.URL, "proc-1", []string{"HOIST_TEST_UNHEALTHY=1"})
		for n := 1; n <= 3; n++ {
			if hb := e.API.WaitMethod(t, wait, "Heartbeat", "proc-1", n); hb.Healthy {
				t.Error("healthy heartbeat")
			}
		}
	})
	t.Run("no-activate", func(t *testing.T) {
		e := endpoint(t, nil)
		p := start(t, e.URL, "proc-1", nil, "-no-activate")
		waitReady(t, e, "proc-1")
		sendCreateGameSession(t, e, "proc-1")
		p.out.waitFor(t, "not activating the game session")
		e.API.WaitMethod(t, wait, "Heartbeat", "proc-1", e.API.Count("Heartbeat")+1)
		if n := e.API.Count("ActivateGameSession"); n != 0 {
			t.Errorf("%d activations", n)
		}
	})
	t.Run("crash-after-activate", func(t *testing.T) {
		e := endpoint(t, nil)
		p := start(t, e.URL, "proc-1", []string{"HOIST_TEST_CRASH_AFTER_ACTIVATE=1"})
		waitReady(t, e, "proc-1")
		sendCreateGameSession(t, e, "proc-1")
		if code := p.exitCode(t); code != exitCrash {
			t.Errorf("exit code %d, want %d", code, exitCrash)
		}
		if d := e.API.WaitMethod(t, wait, "Disconnected", "proc-1", 1); d.Normal {
			t.Error("a crash counted as a normal close")
		}
		if n := e.API.Count("ProcessEnding"); n != 0 {
			t.Error("ProcessEnding before the crash")
		}
	})
	t.Run("no-heartbeat", func(t *testing.T) {
		e := endpoint(t, nil)
		p := start(t, e.URL, "proc-1", []string{"HOIST_TEST_NO_HEARTBEAT=1"})
		e.API.WaitMethod(t, wait, "ProcessReady", "proc-1", 1)
		p.out.waitFor(t, "not sending heartbeats")
		if n := e.API.Count("Heartbeat"); n != 0 {
			t.Errorf("%d heartbeats", n)
		}
	})
	t.Run("no-ready", func(t *testing.T) {
		e := endpoint(t, nil)
		p := start(t, e.URL, "proc-1", nil, "-no-ready")
		e.API.WaitMethod(t, wait, "Connected", "proc-1", 1)
		p.out.waitFor(t, "not calling ProcessReady")
		if n := e.API.Count("ProcessReady"); n != 0 {
			t.Errorf("%d ProcessReady calls", n)
		}
	})
	t.Run("end-after", func(t *testing.T) {
		e := endpoint(t, nil)
		p := start(t, e.URL, "proc-1", []string{"HOIST_TEST_END_AFTER=50ms"})
		waitReady(t, e, "proc-1")
		sendCreateGameSession(t, e, "proc-1")
		e.API.WaitMethod(t, wait, "ProcessEnding", "proc-1", 1)
		if code := p.exitCode(t); code != exitOK {
			t.Errorf("exit code %d", code)
		}
	})
	t.Run("log-paths", func(t *testing.T) {
		e := endpoint(t, nil)
		start(t, e.URL, "proc-1", []string{"HOIST_TEST_LOG_PATHS=none"})
		if r := e.API.WaitMethod(t, wait, "ProcessReady", "proc-1", 1); len(r.LogPaths) != 0 {
			t.Errorf("LogPaths %v", r.LogPaths)
		}
	})
}

// TestActOnSession tries every call naming another process's game
// session; the fake refuses them as sessions does (403) and the game
// server logs each status.
func TestActOnSession(t *testing.T) {
	const other = "arn:aws:gamelift:us-west-2::gamesession/fleet-5c7f/someone-else"
	fake := &sdkconntest.API{Hook: func(_ context.Context, c sdkconntest.Call) (map[string]any, error) {
		if c.GameSessionID == other || c.Describe.GameSessionID == other {
			return nil, &hosting.SDKError{Status: 403, Message: "game session belongs to another process"}
		}
		return nil, nil
	}}
	e := endpoint(t, fake)
	p := start(t, e.URL, "proc-1", []string{"HOIST_TEST_ACT_ON_SESSION=" + other}, "-act-on-player-session", "psess-7")
	for _, action := range []string{"ActivateGameSession", "AcceptPlayerSession", "RemovePlayerSession",
		"UpdatePlayerSessionCreationPolicy", "DescribePlayerSessions"} {
		p.out.waitFor(t, "msg=act-on-session", "action="+action+" ", "status=403")
	}
	if a := fake.WaitMethod(t, wait, "AcceptPlayerSession", "proc-1", 1); a.PlayerSessionID != "psess-7" {
		t.Errorf("player session %q", a.PlayerSessionID)
	}
}

func TestSignalEndsTheProcess(t *testing.T) {
	e := endpoint(t, nil)
	p := start(t, e.URL, "proc-1", nil)
	waitReady(t, e, "proc-1")
	p.signal(syscall.SIGTERM)
	e.API.WaitMethod(t, wait, "ProcessEnding", "proc-1", 1)
	if code := p.exitCode(t); code != exitOK {
		t.Errorf("exit code %d", code)
	}
}

func TestBadTokenGivesUp(t *testing.T) {
	e := endpoint(t, nil)
	p := start(t, e.URL, "proc-1", []string{"GAMELIFT_SDK_AUTH_TOKEN=wrong"})
	if code := p.exitCode(t); code != exitError {
		t.Errorf("exit code %d", code)
	}
	p.out.waitFor(t, "handshake refused with HTTP 403")
	if n := e.API.Count("Connected"); n != 0 {
		t.Errorf("%d connections", n)
	}
}

// TestReconnectAfterDrop cuts the network under the process: it dials the
// same URL again and carries on (heartbeats on the new socket).
func TestReconnectAfterDrop(t *testing.T) {
	e := endpoint(t, nil)
	px := newProxy(t, strings.TrimPrefix(e.HTTP.URL, "http://"))
	start(t, e.URL, "proc-1", []string{"GAMELIFT_SDK_WEBSOCKET_URL=ws://" + px.addr() + "/sdk"})
	first := waitReady(t, e, "proc-1").Conn
	px.cut()
	if d := e.API.WaitMethod(t, wait, "Disconnected", "proc-1", 1); d.Normal || d.Conn.ConnID != first.ConnID {
		t.Errorf("Disconnected %+v normal=%v", d.Conn, d.Normal)
	}
	second := e.API.WaitMethod(t, wait, "Connected", "proc-1", 2).Conn
	if second.ConnID == first.ConnID {
		t.Fatal("no new socket")
	}
	e.API.WaitFor(t, wait, func(c sdkconntest.Call) bool {
		return c.Method == "Heartbeat" && c.Conn.ConnID == second.ConnID
	})
}

// TestRefreshConnection sends RefreshConnection with a new endpoint and
// token: the process opens a second socket, drops the first, and later
// reconnects to the new endpoint.
func TestRefreshConnection(t *testing.T) {
	e := endpoint(t, nil)
	px := newProxy(t, strings.TrimPrefix(e.HTTP.URL, "http://"))
	start(t, e.URL, "proc-1", nil)
	first := waitReady(t, e, "proc-1").Conn
	send(t, e, "proc-1", hosting.Message{"Action": "RefreshConnection",
		"RefreshConnectionEndpoint": "ws://" + px.addr() + "/sdk", "AuthToken": token2})
	second := e.API.WaitMethod(t, wait, "Connected", "proc-1", 2).Conn
	if d := e.API.WaitMethod(t, wait, "Disconnected", "proc-1", 1); d.Conn.ConnID != first.ConnID {
		t.Errorf("disconnected %+v, want the first socket", d.Conn)
	}
	e.API.WaitFor(t, wait, func(c sdkconntest.Call) bool {
		return c.Method == "Heartbeat" && c.Conn.ConnID == second.ConnID
	})
	// A drop now reconnects through the refreshed endpoint (the proxy).
	px.cut()
	e.API.WaitMethod(t, wait, "Connected", "proc-1", 3)
	if px.count() == 0 {
		t.Error("the reconnect did not use the refreshed endpoint")
	}
}

// TestWSSWithSSLCertFile connects over wss to an endpoint whose certificate
// comes from Hoist's CA, trusted the documented way: SSL_CERT_FILE.
func TestWSSWithSSLCertFile(t *testing.T) {
	if runtime.GOOS == "darwin" || runtime.GOOS == "windows" {
		t.Skip("SSL_CERT_FILE is not honoured on " + runtime.GOOS)
	}
	ca, err := pki.LoadOrCreateCA(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	cert, err := ca.IssueServerCert(nil)
	if err != nil {
		t.Fatal(err)
	}
	e := sdkconntest.StartTLS(t, sdkconn.Config{}, sdkconntest.Tokens{token: {FleetID: fleet, ComputeName: host}}, cert)
	url := strings.Replace(e.URL, "127.0.0.1", "localhost", 1)
	start(t, url, "proc-1", []string{"SSL_CERT_FILE=" + ca.CertFile})
	waitReady(t, e, "proc-1")

	untrusted := start(t, url, "proc-2", []string{"SSL_CERT_FILE=" + os.DevNull})
	untrusted.out.waitFor(t, "connecting to the SDK endpoint failed", "certificate")
}

// backfiller is a hosting.Backfiller that records what it gets.
type backfiller struct {
	mu     sync.Mutex
	starts []hosting.BackfillRequest
	stops  []string
}

func (b *backfiller) StartMatchBackfill(_ context.Context, _ hosting.Conn, req hosting.BackfillRequest) (string, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.starts = append(b.starts, req)
	return req.TicketID, nil
}

func (b *backfiller) StopMatchBackfill(_ context.Context, _ hosting.Conn, gs, conf, ticket string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.stops = append(b.stops, gs+" "+conf+" "+ticket)
	return nil
}

// TestMatchmakerDataAndBackfill: the game server keeps the MatchmakerData
// of CreateGameSession and of each UpdateGameSession (MATCHDATA shows
// them), and sends StartMatchBackfill and StopMatchBackfill for its game
// session on the player commands BACKFILL and STOPBACKFILL.
func TestMatchmakerDataAndBackfill(t *testing.T) {
	fake := &sdkconntest.API{}
	bf := &backfiller{}
	e := sdkconntest.Start(t, sdkconn.Config{API: fake, Backfiller: bf}, sdkconntest.Tokens{token: {FleetID: fleet, ComputeName: host}})
	proc := start(t, e.URL, "proc-1", nil, "-accept-players")
	ready := waitReady(t, e, "proc-1")
	send(t, e, "proc-1", hosting.Message{"Action": "CreateGameSession", "GameSessionId": gsID, "MatchmakerData": `{"matchId":"m1"}`,
		"MaximumPlayerSessionCount": 4, "Port": 7777, "IpAddress": "127.0.0.1", "GameProperties": map[string]string{}})
	e.API.WaitMethod(t, wait, "ActivateGameSession", "proc-1", 1)
	pl := dialPlayer(t, ready.Port)
	if got := pl.say(t, "MATCHDATA"); got != `OK {"MatchmakerData":"{\"matchId\":\"m1\"}","Updates":[]}` {
		t.Fatalf("MATCHDATA: %s", got)
	}
	conf := "arn:aws:gamelift:us-west-2:123456789012:matchmakingconfiguration/duel"
	got := pl.say(t, `BACKFILL {"MatchmakingConfigurationArn":"`+conf+`","TicketId":"bf-1","Players":[{"PlayerId":"alice","Team":"red",`+
		`"LatencyInMs":{"us-west-2":20},"PlayerAttributes":{"skill":{"AttrType":"DOUBLE","N":10}}}]}`)
	if got != `OK {"TicketId":"bf-1"}` {
		t.Fatalf("BACKFILL: %s", got)
	}
	bf.mu.Lock()
	if len(bf.starts) != 1 || bf.starts[0].GameSessionArn != gsID || bf.starts[0].ConfigurationArn != conf ||
		len(bf.starts[0].Players) != 1 || *bf.starts[0].Players[0].PlayerAttributes["skill"].N != 10 {
		t.Errorf("Backfiller got %+v", bf.starts)
	}
	bf.mu.Unlock()

	send(t, e, "proc-1", hosting.Message{"Action": "UpdateGameSession", "UpdateReason": "MATCHMAKING_DATA_UPDATED", "BackfillTicketId": "bf-1",
		"GameSession": map[string]any{"GameSessionId": gsID, "MatchmakerData": `{"matchId":"m1","n":2}`}})
	send(t, e, "proc-1", hosting.Message{"Action": "UpdateGameSession", "UpdateReason": "BACKFILL_CANCELLED", "BackfillTicketId": "bf-2",
		"GameSession": map[string]any{"GameSessionId": gsID, "MatchmakerData": `{"matchId":"m1","n":2}`}})
	proc.out.waitFor(t, "game session updated", "reason=BACKFILL_CANCELLED", "backfillTicket=bf-2")
	want := `OK {"MatchmakerData":"{\"matchId\":\"m1\",\"n\":2}","Updates":[` +
		`{"UpdateReason":"MATCHMAKING_DATA_UPDATED","BackfillTicketId":"bf-1","MatchmakerData":"{\"matchId\":\"m1\",\"n\":2}"},` +
		`{"UpdateReason":"BACKFILL_CANCELLED","BackfillTicketId":"bf-2","MatchmakerData":"{\"matchId\":\"m1\",\"n\":2}"}]}`
	if got := pl.say(t, "MATCHDATA"); got != want {
		t.Fatalf("MATCHDATA after updates:\n%s\nwant\n%s", got, want)
	}
	if got := pl.say(t, "STOPBACKFILL "+conf+" bf-2"); got != "OK" {
		t.Fatalf("STOPBACKFILL: %s", got)
	}
	bf.mu.Lock()
	if len(bf.stops) != 1 || bf.stops[0] != gsID+" "+conf+" bf-2" {
		t.Errorf("stops %v", bf.stops)
	}
	bf.mu.Unlock()
}

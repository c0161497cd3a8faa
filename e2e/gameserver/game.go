package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hoistgg/hoist/e2e/sdkclient"
)

// Exit codes.
const (
	exitOK    = 0 // ended on TerminateProcess, END or a signal, ProcessEnding accepted
	exitError = 1 // could not start, or ProcessEnding failed
	exitCrash = 3 // -crash-after-activate, -crash-on-start
)

// processReadyTimeout is how long the Go SDK waits for the reply to
// ActivateServerProcess.
const processReadyTimeout = 6 * time.Second

// game is the game server: its player port, its log and its SDK state.
type game struct {
	cfg *config
	log *slog.Logger
	ln  net.Listener
	sdk *sdk
	// logPaths are reported in ProcessReady.
	logPaths []string

	ready    atomic.Bool
	stopBeat chan struct{}
	endOnce  sync.Once
	exit     chan int

	mu            sync.Mutex
	gameSessionID string
	// matchmakerData is the game session's MatchmakerData, from
	// CreateGameSession and then from each UpdateGameSession.
	matchmakerData string
	// updates are the UpdateGameSession messages received, oldest first.
	updates []sessionUpdate
}

// sessionUpdate is what the game server keeps of an UpdateGameSession
// message (the SDK's OnUpdateGameSession callback).
type sessionUpdate struct {
	UpdateReason     string
	BackfillTicketID string `json:"BackfillTicketId"`
	MatchmakerData   string
}

func newGame(cfg *config) (*game, error) {
	name := "gameserver-" + safeName(cfg.processID) + ".log"
	if err := os.MkdirAll("logs", 0o755); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(filepath.Join("logs", name), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	log := slog.New(slog.NewTextHandler(io.MultiWriter(os.Stdout, f), &slog.HandlerOptions{Level: slog.LevelDebug}))
	log = log.With("process", cfg.processID)
	ln, err := net.Listen("tcp", net.JoinHostPort(cfg.host, strconv.Itoa(cfg.port)))
	if err != nil {
		return nil, fmt.Errorf("player port: %w", err)
	}
	logPaths := cfg.logPaths
	if logPaths == nil {
		logPaths = []string{"/local/game/logs/" + name}
	}
	g := &game{cfg: cfg, log: log, ln: ln, logPaths: logPaths, stopBeat: make(chan struct{}), exit: make(chan int, 1)}
	g.sdk = &sdk{log: log, onMessage: g.onMessage, callTimeout: cfg.callTimeout, reconnectBase: cfg.reconnectBase, forceTLS: cfg.forceTLS,
		disconnectTimeout: cfg.disconnectTimeout, processID: cfg.processID, hostID: cfg.hostID, fleetID: cfg.fleetID}
	return g, nil
}

// safeName keeps letters, digits, '.', '-' and '_' of a process ID.
func safeName(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '.' || r == '-' || r == '_' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' {
			return r
		}
		return '_'
	}, s)
}

// run starts the game server and returns its exit code.
func (g *game) run() int {
	g.log.Info("starting", "fleet", g.cfg.fleetID, "host", g.cfg.hostID, "endpoint", g.cfg.url)
	if err := g.sdk.connect(g.cfg.url, g.cfg.token); err != nil {
		g.log.Error("InitSDK failed", "err", err)
		return exitError
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	go func() {
		s := <-sig
		g.end("signal " + s.String())
	}()
	go g.servePlayers()
	port := g.ln.Addr().(*net.TCPAddr).Port
	if g.cfg.noReady {
		g.log.Warn("not calling ProcessReady (no-ready)", "port", port)
	} else if err := g.processReady(port); err != nil {
		g.log.Error("ProcessReady failed", "err", err)
		g.sdk.destroy()
		return exitError
	}
	return <-g.exit
}

func (g *game) processReady(port int) error {
	_, err := g.sdk.call("ActivateServerProcess", map[string]any{
		"SdkVersion": sdkclient.SDKVersion, "SdkLanguage": sdkclient.SDKLanguage,
		"Port": port, "LogPaths": g.logPaths,
	}, processReadyTimeout)
	if err != nil {
		return err
	}
	g.ready.Store(true)
	g.log.Info("ready", "port", port, "logPaths", g.logPaths)
	if !g.cfg.noHeartbeat {
		go g.heartbeats()
	} else {
		g.log.Warn("not sending heartbeats (no-heartbeat)")
	}
	if g.cfg.actOnSession != "" {
		go g.actOnSession()
	}
	return nil
}

// heartbeats reports health right after ProcessReady, then every interval
// plus or minus jitter, each report on its own goroutine (as the SDK does).
func (g *game) heartbeats() {
	for g.ready.Load() {
		go g.heartbeat()
		wait := g.cfg.healthInterval
		if j := g.cfg.healthJitter.Milliseconds(); j > 0 {
			wait += time.Duration(rand.Int64N(2*j)-j) * time.Millisecond
		}
		select {
		case <-time.After(wait):
		case <-g.stopBeat:
			return
		}
	}
}

func (g *game) heartbeat() {
	healthy := !g.cfg.unhealthy
	if _, err := g.sdk.call("HeartbeatServerProcess", map[string]any{"HealthStatus": healthy}, 0); err != nil {
		g.log.Warn("could not send health status", "err", err)
		return
	}
	g.log.Debug("heartbeat", "healthy", healthy)
}

// onMessage handles the service's messages (the SDK's callbacks).
func (g *game) onMessage(_ *sdkclient.Client, f *sdkclient.Frame) {
	switch f.Action {
	case "CreateGameSession":
		g.onStartGameSession(f)
	case "UpdateGameSession":
		g.onUpdateGameSession(f)
	case "TerminateProcess":
		var m struct{ TerminationTime int64 }
		f.Decode(&m)
		g.log.Info("asked to terminate", "terminationTime", time.UnixMilli(m.TerminationTime).UTC())
		go g.end("TerminateProcess")
	case "RefreshConnection":
		var m struct{ RefreshConnectionEndpoint, AuthToken string }
		f.Decode(&m)
		g.log.Info("refreshing the connection", "endpoint", m.RefreshConnectionEndpoint)
		go func() {
			if err := g.sdk.connect(m.RefreshConnectionEndpoint, m.AuthToken); err != nil {
				g.log.Error("refreshing the connection failed", "err", err)
			}
		}()
	default:
		g.log.Warn("unknown message", "action", f.Action)
	}
}

// createGameSession is the CreateGameSession message.
type createGameSession struct {
	GameSessionID             string `json:"GameSessionId"`
	GameSessionName           string
	GameSessionData           string
	MatchmakerData            string
	MaximumPlayerSessionCount int
	Port                      int
	IPAddress                 string `json:"IpAddress"`
	DNSName                   string `json:"DnsName"`
	GameProperties            map[string]string
}

func (g *game) onStartGameSession(f *sdkclient.Frame) {
	var m createGameSession
	if err := f.Decode(&m); err != nil {
		g.log.Warn("bad CreateGameSession", "err", err)
		return
	}
	if !g.ready.Load() {
		g.log.Info("game session on a process that is not ready: ignored", "gameSession", m.GameSessionID)
		return
	}
	g.mu.Lock()
	g.gameSessionID, g.matchmakerData = m.GameSessionID, m.MatchmakerData
	g.mu.Unlock()
	g.log.Info("game session started", "gameSession", m.GameSessionID, "name", m.GameSessionName,
		"maxPlayers", m.MaximumPlayerSessionCount, "ip", m.IPAddress, "dns", m.DNSName, "port", m.Port,
		"properties", m.GameProperties, "matchmakerData", m.MatchmakerData)
	if g.cfg.crashOnStart {
		g.log.Warn("crashing (crash-on-start)")
		os.Exit(exitCrash)
	}
	if g.cfg.noActivate {
		g.log.Warn("not activating the game session (no-activate)")
		return
	}
	if _, err := g.sdk.call("ActivateGameSession", map[string]any{"GameSessionId": m.GameSessionID}, 0); err != nil {
		g.log.Error("ActivateGameSession failed", "err", err)
		return
	}
	g.log.Info("game session activated", "gameSession", m.GameSessionID)
	if g.cfg.crashAfterActivate {
		g.log.Warn("crashing (crash-after-activate)")
		os.Exit(exitCrash)
	}
	if g.cfg.endAfter > 0 {
		time.AfterFunc(g.cfg.endAfter, func() { g.end("end-after") })
	}
}

// onUpdateGameSession records an UpdateGameSession message (match
// backfill): its reason and ticket, and the new MatchmakerData.
func (g *game) onUpdateGameSession(f *sdkclient.Frame) {
	var m struct {
		GameSession struct {
			GameSessionID  string `json:"GameSessionId"`
			MatchmakerData string
		}
		sessionUpdate
	}
	if err := f.Decode(&m); err != nil {
		g.log.Warn("bad UpdateGameSession", "err", err)
		return
	}
	u := m.sessionUpdate
	u.MatchmakerData = m.GameSession.MatchmakerData
	g.mu.Lock()
	if u.UpdateReason == "MATCHMAKING_DATA_UPDATED" {
		g.matchmakerData = u.MatchmakerData
	}
	g.updates = append(g.updates, u)
	g.mu.Unlock()
	g.log.Info("game session updated", "gameSession", m.GameSession.GameSessionID, "reason", u.UpdateReason,
		"backfillTicket", u.BackfillTicketID, "matchmakerData", u.MatchmakerData)
}

// end calls ProcessEnding, closes the SDK and makes run return (once).
func (g *game) end(reason string) {
	g.endOnce.Do(func() {
		g.log.Info("ending", "reason", reason)
		_, err := g.sdk.call("TerminateServerProcess", nil, 0)
		if g.ready.CompareAndSwap(true, false) {
			close(g.stopBeat)
		}
		g.sdk.destroy()
		code := exitOK
		if err != nil {
			g.log.Error("ProcessEnding failed", "err", err)
			code = exitError
		}
		g.exit <- code
	})
}

func (g *game) session() string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.gameSessionID
}

// actOnSession tries every call that names a game session on another
// process's session and logs each outcome as
// "act-on-session action=<Action> status=<StatusCode>".
func (g *game) actOnSession() {
	gs := g.cfg.actOnSession
	ps := g.cfg.actOnPlayerSession
	if ps == "" {
		ps = "psess-00000000-0000-0000-0000-000000000000"
	}
	for _, c := range []struct {
		action string
		fields map[string]any
	}{
		{"ActivateGameSession", map[string]any{"GameSessionId": gs}},
		{"AcceptPlayerSession", map[string]any{"GameSessionId": gs, "PlayerSessionId": ps}},
		{"RemovePlayerSession", map[string]any{"GameSessionId": gs, "PlayerSessionId": ps}},
		{"UpdatePlayerSessionCreationPolicy", map[string]any{"GameSessionId": gs, "PlayerSessionPolicy": "DENY_ALL"}},
		{"DescribePlayerSessions", map[string]any{"GameSessionId": gs}},
	} {
		f, err := g.sdk.call(c.action, c.fields, 0)
		status, msg := 0, ""
		if f != nil {
			status, msg = f.StatusCode, f.ErrorMessage
		} else if err != nil {
			msg = err.Error()
		}
		g.log.Info("act-on-session", "action", c.action, "status", status, "error", msg)
	}
}

// servePlayers accepts player connections on the player port.
func (g *game) servePlayers() {
	for {
		conn, err := g.ln.Accept()
		if err != nil {
			return
		}
		go g.servePlayer(conn)
	}
}

// servePlayer answers one player connection, a line per command (see
// README.md). Player sessions accepted on it and not removed are removed
// when it closes, as a game does when a player leaves.
func (g *game) servePlayer(conn net.Conn) {
	defer conn.Close()
	accepted := map[string]bool{}
	defer func() {
		for ps := range accepted {
			g.playerCall("RemovePlayerSession", map[string]any{"GameSessionId": g.session(), "PlayerSessionId": ps})
		}
	}()
	sc := bufio.NewScanner(io.LimitReader(conn, 1<<20))
	sc.Buffer(nil, 1<<20) // a BACKFILL line lists every player
	for sc.Scan() {
		cmd, arg, _ := strings.Cut(strings.TrimSpace(sc.Text()), " ")
		if strings.HasPrefix(cmd, "psess-") { // a bare player session ID
			cmd, arg = "ACCEPT", cmd
		}
		reply := g.playerCommand(strings.ToUpper(cmd), strings.TrimSpace(arg), accepted)
		if _, err := fmt.Fprintln(conn, reply); err != nil {
			return
		}
	}
}

func (g *game) playerCommand(cmd, arg string, accepted map[string]bool) string {
	if cmd == "PING" {
		return "PONG"
	}
	if !g.cfg.acceptPlayers {
		return "ERROR 0 player commands are off (set HOIST_TEST_ACCEPT_PLAYERS=1 or -accept-players)"
	}
	gs := g.session()
	if gs == "" && cmd != "END" {
		return "ERROR 0 no game session yet"
	}
	switch cmd {
	case "ACCEPT":
		reply := g.playerCall("AcceptPlayerSession", map[string]any{"GameSessionId": gs, "PlayerSessionId": arg})
		if reply == "OK" {
			accepted[arg] = true
		}
		return reply
	case "REMOVE":
		delete(accepted, arg)
		return g.playerCall("RemovePlayerSession", map[string]any{"GameSessionId": gs, "PlayerSessionId": arg})
	case "POLICY":
		return g.playerCall("UpdatePlayerSessionCreationPolicy", map[string]any{"GameSessionId": gs, "PlayerSessionPolicy": arg})
	case "DESCRIBE":
		return g.playerCall("DescribePlayerSessions", map[string]any{"GameSessionId": gs})
	case "MATCHDATA":
		g.mu.Lock()
		b, _ := json.Marshal(map[string]any{"MatchmakerData": g.matchmakerData, "Updates": append([]sessionUpdate{}, g.updates...)})
		g.mu.Unlock()
		return "OK " + string(b)
	case "BACKFILL":
		// arg: {"MatchmakingConfigurationArn":..., "TicketId":..., "Players":[...]}
		var fields map[string]any
		if err := json.Unmarshal([]byte(arg), &fields); err != nil || fields == nil {
			return "ERROR 0 BACKFILL takes a JSON object (MatchmakingConfigurationArn, TicketId, Players)"
		}
		fields["GameSessionArn"] = gs
		return g.playerCall("StartMatchBackfill", fields)
	case "STOPBACKFILL":
		conf, ticket, _ := strings.Cut(arg, " ")
		return g.playerCall("StopMatchBackfill", map[string]any{"GameSessionArn": gs,
			"MatchmakingConfigurationArn": conf, "TicketId": strings.TrimSpace(ticket)})
	case "END":
		go g.end("END from a player")
		return "OK"
	}
	return "ERROR 0 unknown command " + strconv.Quote(cmd)
}

// playerCall makes an SDK call for a player command: "OK", "OK <result
// JSON>" or "ERROR <status> <message>".
func (g *game) playerCall(action string, fields map[string]any) string {
	f, err := g.sdk.call(action, fields, 0)
	var se *sdkclient.StatusError
	switch {
	case errors.As(err, &se):
		g.log.Info(action+" refused", "status", se.StatusCode, "error", se.Message)
		return fmt.Sprintf("ERROR %d %s", se.StatusCode, se.Message)
	case err != nil:
		return "ERROR 0 " + err.Error()
	}
	g.log.Info(action, "fields", fields)
	if action != "DescribePlayerSessions" && action != "StartMatchBackfill" {
		return "OK"
	}
	m := f.Fields()
	for _, k := range []string{"Action", "RequestId", "StatusCode"} {
		delete(m, k)
	}
	b, _ := json.Marshal(m)
	return "OK " + string(b)
}

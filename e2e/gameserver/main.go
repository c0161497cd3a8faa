// Command gameserver is Hoist's test game server: a small program that
// behaves like a game server built with the official GameLift Server SDK 5
// for Go, speaking the SDK's WebSocket protocol the way the SDK does (see
// README.md). Hoist's tests build it and run it on fleets; it can also be
// run by hand against an Anywhere fleet.
//
// It reads the GAMELIFT_SDK_* environment like the SDK's parameterless
// InitSDK, connects, calls ProcessReady with the port of a real TCP
// listener, sends heartbeats, activates the game sessions it is given, ends
// on TerminateProcess, and reconnects when the connection drops. Knobs
// (environment variables or flags) make it misbehave for failure tests.
package main

import (
	"flag"
	"fmt"
	"os"
	"regexp"
	"strings"
	"time"

	"github.com/hoistgg/hoist/e2e/sdkclient"
)

// config is everything the game server is told, by the environment (as
// the SDK reads it) and by flags (RuntimeConfiguration Parameters).
type config struct {
	// SDK environment.
	url, token, processID, hostID, fleetID string
	healthInterval, healthJitter           time.Duration
	callTimeout, disconnectTimeout         time.Duration
	reconnectBase                          time.Duration

	// Game.
	host     string
	port     int
	logPaths []string // nil: the default; empty: none (HOIST_TEST_LOG_PATHS=none)

	// Knobs.
	crashAfterActivate, unhealthy, noActivate, acceptPlayers bool
	noHeartbeat, noReady                                     bool
	forceTLS                                                 bool
	actOnSession, actOnPlayerSession                         string
	endAfter                                                 time.Duration
	crashOnStart                                             bool
}

// SDK validation patterns (the SDK refuses other values before connecting).
var (
	fleetIDPattern = regexp.MustCompile(`^[a-zA-Z0-9.-]+$`)
	hostIDPattern  = regexp.MustCompile(`^[a-zA-Z0-9\-]+(/[a-zA-Z0-9\-]+)?$`)
)

// managedResource is the process ID the SDK replaces with a random UUID.
const managedResource = "ManagedResource"

// loadConfig reads the environment and the flags in args.
func loadConfig(args []string, getenv func(string) string) (*config, []string, error) {
	c := &config{
		url: getenv("GAMELIFT_SDK_WEBSOCKET_URL"), token: getenv("GAMELIFT_SDK_AUTH_TOKEN"),
		processID: getenv("GAMELIFT_SDK_PROCESS_ID"), hostID: getenv("GAMELIFT_SDK_HOST_ID"),
		fleetID: getenv("GAMELIFT_SDK_FLEET_ID"),
	}
	var warnings []string
	dur := func(key string, def time.Duration) time.Duration {
		v := getenv(key)
		if v == "" {
			return def
		}
		d, err := time.ParseDuration(v) // as the SDK parses them: "5s", not "5"
		if err != nil {
			warnings = append(warnings, fmt.Sprintf("%s=%q is not a duration (like 5s); using %v, as the SDK does", key, v, def))
			return def
		}
		return d
	}
	c.healthInterval = dur("HEALTHCHECK_INTERVAL", 60*time.Second)
	c.healthJitter = dur("HEALTHCHECK_MAX_JITTER", 10*time.Second)
	c.callTimeout = dur("SERVICE_CALL_TIMEOUT", 20*time.Second)
	c.disconnectTimeout = dur("DISCONNECT_WEBSOCKET_TIMEOUT", 5*time.Second)
	c.reconnectBase = dur("HOIST_TEST_RECONNECT_INTERVAL", 8*time.Second)
	switch lp := getenv("HOIST_TEST_LOG_PATHS"); lp {
	case "": // the default
	case "none":
		c.logPaths = []string{}
	default:
		c.logPaths = splitList(lp)
	}
	env := func(k string) bool { v := getenv(k); return v != "" && v != "0" && v != "false" }

	fs := flag.NewFlagSet("gameserver", flag.ContinueOnError)
	fs.StringVar(&c.host, "host", "127.0.0.1", "address the player port listens on")
	fs.IntVar(&c.port, "port", 0, "player port (0: any free port)")
	fs.BoolVar(&c.crashAfterActivate, "crash-after-activate", env("HOIST_TEST_CRASH_AFTER_ACTIVATE"), "exit with code 3 right after activating a game session")
	fs.BoolVar(&c.crashOnStart, "crash-on-start", env("HOIST_TEST_CRASH_ON_START"), "exit with code 3 on CreateGameSession, before activating it")
	fs.BoolVar(&c.unhealthy, "unhealthy", env("HOIST_TEST_UNHEALTHY"), "report HealthStatus false")
	fs.BoolVar(&c.noActivate, "no-activate", env("HOIST_TEST_NO_ACTIVATE"), "never call ActivateGameSession")
	fs.BoolVar(&c.acceptPlayers, "accept-players", env("HOIST_TEST_ACCEPT_PLAYERS"), "serve player commands on the player port")
	fs.BoolVar(&c.noHeartbeat, "no-heartbeat", env("HOIST_TEST_NO_HEARTBEAT"), "never send heartbeats")
	fs.BoolVar(&c.noReady, "no-ready", env("HOIST_TEST_NO_READY"), "connect but never call ProcessReady")
	fs.BoolVar(&c.forceTLS, "force-tls", env("HOIST_TEST_FORCE_TLS"), "speak TLS whatever the URL's scheme, as the C++ Server SDK does")
	fs.StringVar(&c.actOnSession, "act-on-session", getenv("HOIST_TEST_ACT_ON_SESSION"), "after ProcessReady, act on this game session (another process's)")
	fs.StringVar(&c.actOnPlayerSession, "act-on-player-session", getenv("HOIST_TEST_ACT_ON_PLAYER_SESSION"), "player session used by -act-on-session")
	fs.DurationVar(&c.endAfter, "end-after", dur("HOIST_TEST_END_AFTER", 0), "end the game session (ProcessEnding, exit 0) this long after activating it")
	if err := fs.Parse(args); err != nil {
		return nil, nil, err
	}
	if c.processID == managedResource {
		c.processID = sdkclient.NewUUID()
	}
	return c, warnings, c.validate()
}

// validate applies the SDK's own checks (InitSDK fails on them).
func (c *config) validate() error {
	switch {
	case c.url == "":
		return fmt.Errorf("GAMELIFT_SDK_WEBSOCKET_URL is required")
	case c.processID == "":
		return fmt.Errorf("GAMELIFT_SDK_PROCESS_ID is required")
	case c.token == "":
		return fmt.Errorf("GAMELIFT_SDK_AUTH_TOKEN is required (this test server does not sign URLs with SigV4)")
	case len(c.fleetID) > 256 || !fleetIDPattern.MatchString(c.fleetID):
		return fmt.Errorf("GAMELIFT_SDK_FLEET_ID %q is not a fleet ID", c.fleetID)
	case len(c.hostID) > 256 || !hostIDPattern.MatchString(c.hostID):
		return fmt.Errorf("GAMELIFT_SDK_HOST_ID %q is not a compute name", c.hostID)
	case c.port < 0 || c.port > 60000:
		return fmt.Errorf("-port %d is out of range 0-60000", c.port)
	}
	return nil
}

func splitList(s string) []string {
	out := []string{}
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

func main() {
	cfg, warnings, err := loadConfig(os.Args[1:], os.Getenv)
	if err != nil {
		fmt.Fprintln(os.Stderr, "gameserver:", err)
		os.Exit(2)
	}
	g, err := newGame(cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, "gameserver:", err)
		os.Exit(1)
	}
	for _, w := range warnings {
		g.log.Warn(w)
	}
	os.Exit(g.run())
}

//go:build linux

// Command hostsload measures Hoist with hosts on other machines (issue 19
// §7): it starts the real Hoist binary (with credentials, so every SigV4
// signature is verified; a new data directory) and real agents (`hoist
// agent`), on network namespaces the tool creates (e2e/netns, root only)
// or on this machine's loopback, and drives Hoist through the AWS SDK for
// Go v2. See docs/performance.md ("Hosts").
//
//	go run ./e2e/hostsload -scenario fleet      [-repeats 5]
//	go run ./e2e/hostsload -scenario sessions   [-rate 10] [-duration 60s] [-processes 8] [-remote netns]
//	go run ./e2e/hostsload -scenario heartbeats [-hosts 100,1000] [-window 2m]
//	go run ./e2e/hostsload -scenario agents     [-settle 10s]
//
// Scenario fleet: three pool hosts (network namespaces), each in its own
// location; each run uploads a new build and creates a fleet in those
// three locations (one instance in each, so one on each host), and the
// same fleet in three locations no host serves (three instances on
// Hoist's own machine), and times CreateFleet to ACTIVE.
//
// Scenario sessions: one fleet with a location on Hoist's own machine
// (us-west-2) and one on a pool host (eu-west-1; -remote netns puts the
// host in a network namespace, loopback on 127.0.0.2); one client creates
// game sessions alternately in each location, at most -rate a second, and
// times CreateGameSession to the game server's accepted activation (read
// from its log with inotify: e2e/activations).
//
// Scenario heartbeats: -hosts simulated pool hosts on loopback, each
// enrolled and speaking the host protocol (Hello, then Heartbeat at the
// interval Hoist tells it) over its own TLS WebSocket; Hoist's CPU time
// over -window, and its memory and goroutines per host.
//
// Scenario agents: the resident memory of `hoist agent` at rest: a pool
// agent with no instance and with one instance of two game servers, and
// an Anywhere agent running two game servers.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/hoistgg/hoist/e2e/hoisttest"
	"github.com/hoistgg/hoist/e2e/loadreport"
	"github.com/hoistgg/hoist/e2e/sysinfo"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// Config is one invocation's settings.
type Config struct {
	Scenario string `json:"scenario"`
	Repeats  int    `json:"repeats"`

	// sessions
	Rate      float64       `json:"rate,omitempty"`
	Duration  time.Duration `json:"-"`
	Processes int           `json:"processes_per_instance,omitempty"`
	Remote    string        `json:"remote,omitempty"`

	// LocalHosting is Hoist's --local-hosting: how its own machine runs
	// instances (agent, the default, or in-process).
	LocalHosting string `json:"local_hosting"`

	// heartbeats
	Hosts  []int         `json:"hosts,omitempty"`
	Window time.Duration `json:"-"`

	// agents
	Settle time.Duration `json:"-"`

	DurationS float64 `json:"duration_s,omitempty"`
	WindowS   float64 `json:"window_s,omitempty"`
	SettleS   float64 `json:"settle_s,omitempty"`

	hoistBin   string
	dataParent string
	jsonPath   string
	timings    string
	profileDir string
	args       []string
}

// parseFlags reads the command line.
func parseFlags(args []string, stderr io.Writer) (*Config, error) {
	c := &Config{args: args}
	fs := flag.NewFlagSet("hostsload", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&c.Scenario, "scenario", "", "fleet, sessions, heartbeats or agents (required)")
	fs.IntVar(&c.Repeats, "repeats", 3, "runs (each with a new Hoist, but fleet: one Hoist, a new fleet each run); medians are reported")
	fs.Float64Var(&c.Rate, "rate", 10, "sessions: game sessions a second at most, both locations together")
	fs.DurationVar(&c.Duration, "duration", 60*time.Second, "sessions: measured time of each run")
	fs.IntVar(&c.Processes, "processes", 8, "sessions: game servers per instance")
	fs.StringVar(&c.Remote, "remote", "netns", "sessions: where the pool host is: netns (a network namespace, root only) or loopback (127.0.0.2)")
	fs.StringVar(&c.LocalHosting, "local-hosting", "agent", "Hoist's --local-hosting: agent (the default: this machine's instances in Hoist's local agent) or in-process")
	hosts := fs.String("hosts", "100,1000", "heartbeats: simulated hosts, one phase each")
	fs.DurationVar(&c.Window, "window", 2*time.Minute, "heartbeats: measured time of each phase, after every host heartbeated once")
	fs.DurationVar(&c.Settle, "settle", 10*time.Second, "agents: time at rest before memory is read")
	fs.StringVar(&c.jsonPath, "json", "", "also write the results as JSON to this file")
	fs.StringVar(&c.hoistBin, "hoist", "", "a Hoist binary to run (default: go build ./cmd/hoist)")
	fs.StringVar(&c.dataParent, "data-parent", "", "directory for the temporary data directories (default: the system's temp dir)")
	fs.StringVar(&c.profileDir, "profile", "", "heartbeats: write a CPU profile of Hoist over each window to this directory")
	fs.StringVar(&c.timings, "timings", "", "name=duration,... added to Hoist's --timings (e.g. hosts.heartbeat=1s for a quick heartbeats run); the defaults are Hoist's")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	var err error
	if c.Hosts, err = loadreport.IntList(*hosts); err != nil {
		return nil, fmt.Errorf("-hosts: %w", err)
	}
	switch {
	case fs.NArg() > 0:
		return nil, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	case c.Scenario != "fleet" && c.Scenario != "sessions" && c.Scenario != "heartbeats" && c.Scenario != "agents":
		return nil, fmt.Errorf("-scenario: want fleet, sessions, heartbeats or agents, got %q", c.Scenario)
	case c.LocalHosting != "agent" && c.LocalHosting != "in-process":
		return nil, fmt.Errorf("-local-hosting: want agent or in-process, got %q", c.LocalHosting)
	case c.Remote != "netns" && c.Remote != "loopback":
		return nil, fmt.Errorf("-remote: want netns or loopback, got %q", c.Remote)
	case c.Repeats <= 0 || c.Duration <= 0 || c.Window <= 0 || c.Settle < 0 || c.Rate <= 0:
		return nil, errors.New("-repeats, -duration, -window and -rate must be positive, -settle at least 0")
	case c.Processes < 1 || c.Processes > 50:
		return nil, errors.New("-processes: 1 to 50")
	}
	c.keepOwn()
	return c, nil
}

// keepOwn keeps only the scenario's own settings in the report.
func (c *Config) keepOwn() {
	switch c.Scenario {
	case "sessions":
		c.DurationS = c.Duration.Seconds()
	case "heartbeats":
		c.WindowS = c.Window.Seconds()
	case "agents":
		c.SettleS = c.Settle.Seconds()
	}
	if c.Scenario != "sessions" {
		c.Rate, c.Processes, c.Remote = 0, 0, ""
	}
	if c.Scenario != "heartbeats" {
		c.Hosts = nil
	}
}

// run is main's body.
func run(args []string, stdout, stderr io.Writer) int {
	return loadreport.Main("hostsload", args, stdout, stderr, parseFlags, runScenario)
}

// JSONPath is the -json file.
func (c *Config) JSONPath() string { return c.jsonPath }

// Report is the result of an invocation.
type Report struct {
	Command    string            `json:"command"`
	Config     *Config           `json:"config"`
	Machine    sysinfo.Machine   `json:"machine"`
	Fleet      []*FleetRun       `json:"fleet,omitempty"`
	Sessions   []*SessionsRun    `json:"sessions,omitempty"`
	Heartbeats []*HeartbeatPhase `json:"heartbeats,omitempty"`
	Agents     []*AgentsRun      `json:"agents,omitempty"`
	// Medians are the medians over the runs.
	Medians any `json:"medians"`
}

// env is what every scenario needs.
type env struct {
	cfg      *Config
	log      io.Writer
	hoistBin string
	bin      string // the directory of the built binaries
	archive  []byte // the game server's build archive
	gsBin    string // the game server's binary (Anywhere launch path)
}

// runScenario builds what the scenario needs and runs it.
func runScenario(ctx context.Context, cfg *Config, log io.Writer) (*Report, error) {
	rep := &Report{Command: "go run ./e2e/hostsload " + strings.Join(cfg.args, " "), Config: cfg,
		Machine: sysinfo.DescribeMachine(cfg.dataParent)}
	tmp, err := os.MkdirTemp("", "hoist-hostsload-bin-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	if err := os.Chmod(tmp, 0o755); err != nil { // the game user runs the game server from here
		return nil, err
	}
	e := &env{cfg: cfg, log: log, hoistBin: cfg.hoistBin, bin: tmp}
	if e.hoistBin == "" {
		fmt.Fprintln(log, "hostsload: building cmd/hoist")
		e.hoistBin = filepath.Join(tmp, "hoist")
		if err := hoisttest.GoBuild("./cmd/hoist", e.hoistBin); err != nil {
			return nil, err
		}
	}
	if cfg.Scenario != "heartbeats" {
		fmt.Fprintln(log, "hostsload: building e2e/gameserver")
		if e.gsBin, e.archive, err = hoisttest.BuildGameServer(tmp); err != nil {
			return nil, err
		}
	}
	switch cfg.Scenario {
	case "fleet":
		err = e.runFleet(ctx, rep)
	case "sessions":
		err = e.runSessions(ctx, rep)
	case "heartbeats":
		err = e.runHeartbeats(ctx, rep)
	case "agents":
		err = e.runAgents(ctx, rep)
	}
	rep.summarize()
	return rep, err
}

// summarize fills in the medians.
func (rep *Report) summarize() {
	switch rep.Config.Scenario {
	case "fleet":
		rep.Medians = summarizeFleet(rep.Fleet)
	case "sessions":
		rep.Medians = summarizeSessions(rep.Sessions)
	case "heartbeats":
		rep.Medians = summarizeHeartbeats(rep.Heartbeats)
	case "agents":
		rep.Medians = summarizeAgents(rep.Agents)
	}
}

// Print writes the report for people.
func (rep *Report) Print(w io.Writer) {
	fmt.Fprintf(w, "\n%s\n%s\nHoist's machine: --local-hosting %s\n\n", rep.Command, rep.Machine, rep.Config.LocalHosting)
	switch rep.Config.Scenario {
	case "fleet":
		printFleet(w, rep)
	case "sessions":
		printSessions(w, rep)
	case "heartbeats":
		printHeartbeats(w, rep)
	case "agents":
		printAgents(w, rep)
	}
}

// mib converts KiB to MiB.
func mib(kib int64) float64 { return float64(kib) / 1024 }

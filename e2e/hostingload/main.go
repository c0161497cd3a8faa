//go:build linux

// Command hostingload measures Hoist's managed hosting with real server
// processes: it starts the real Hoist binary (with credentials, so every
// SigV4 signature is verified; a new data directory; loopback ports),
// uploads the test game server (e2e/gameserver) as a build and drives
// Hoist through the AWS SDK for Go v2 and the Server SDK's WebSocket
// protocol (e2e/sdkclient). See docs/performance.md.
//
//	go run ./e2e/hostingload -scenario sessions  [-clients 1,8] [-rate 10,0] [-instances 4] [-processes 32]
//	go run ./e2e/hostingload -scenario processes [-counts 100,250,500,1000] [-heartbeat 60s,5s] [-soak 2m]
//	go run ./e2e/hostingload -scenario sdk       [-sockets 1,16,64,256] [-inflight 1,8]
//	go run ./e2e/hostingload -scenario placement [-placements 2000] [-clients 1,8]
//	go run ./e2e/hostingload -scenario placement -store postgres [-database-url URL] [-replicas 3]
//
// Scenario sessions: a fleet of -instances instances of -processes game
// servers, each ending its game session (ProcessEnding, exit 0) right
// after activating it, so that it is replaced; -clients concurrent clients
// loop CreateGameSession -> ACTIVE, at most -rate game sessions a second
// (0: as fast as they can). The latency is from the start of the
// CreateGameSession call to the moment the game server's log says Hoist
// accepted its ActivateGameSession (inotify on the processes' output, no
// polling).
//
// Scenario processes: for each count, fleets of up to 20 instances of up
// to 50 game servers; the time until every process is ready, then a soak
// window in which every heartbeat must be answered and no process may end,
// with Hoist's and the game servers' memory and CPU, a probe's heartbeat
// round trips, and game sessions created after the soak.
//
// Scenario sdk: an Anywhere compute and simulated processes (e2e/sdkclient)
// sending HeartbeatServerProcess back-to-back through the real Hoist.
//
// Scenario placement: an Anywhere compute with -placements ready simulated
// processes and a game session queue on its fleet; -clients concurrent
// clients start as many placements at once; each process activates the
// game session it is sent at once, as a game server does. The latency is
// from the start of StartGameSessionPlacement to the chosen process's
// reply to ActivateGameSession (sent after the activation, which makes the
// placement FULFILLED, committed). With -store postgres it starts
// -replicas Hoists on a new schema of the database; the processes connect
// to the one holding the queue's shard of the placement loop, the clients
// call them in turn.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
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
	// Durations are also given in seconds in the JSON output.
	Duration time.Duration `json:"-"`
	Warmup   time.Duration `json:"-"`
	Stagger  time.Duration `json:"-"`

	// sessions
	Clients    []int         `json:"clients,omitempty"`
	Rates      []float64     `json:"rates,omitempty"`
	Processes  int           `json:"processes_per_instance,omitempty"`
	Instances  int           `json:"instances,omitempty"`
	GameLength time.Duration `json:"-"`

	// processes
	Counts         []int           `json:"counts,omitempty"`
	Heartbeats     []time.Duration `json:"-"`
	Soak           time.Duration   `json:"-"`
	ReadyTimeout   time.Duration   `json:"-"`
	ActivateBound  time.Duration   `json:"-"`
	HeartbeatBound time.Duration   `json:"-"`
	Activations    int             `json:"activations,omitempty"`
	ProbeInterval  time.Duration   `json:"-"`

	// placement
	Placements int `json:"placements,omitempty"`
	// Store is Hoist's --store (journal or postgres), Replicas how many
	// Hoists share it (postgres only): the clients' calls are spread over
	// them.
	Store    string `json:"store,omitempty"`
	Replicas int    `json:"replicas,omitempty"`
	// ProcessesOn is where the simulated processes connect: "holder"
	// (the replica holding the queue's shard) or "spread" (process i to
	// replica i mod N, so that the others' game sessions reach them
	// through the holder's posts to their replicas' inboxes).
	ProcessesOn string `json:"processes_on,omitempty"`

	// sdk
	Sockets  []int `json:"sockets,omitempty"`
	Inflight []int `json:"inflight,omitempty"`

	DurationS float64 `json:"duration_s"`
	WarmupS   float64 `json:"warmup_s"`
	StaggerMS float64 `json:"stagger_ms"`

	hoistBin    string
	databaseURL string // never reported: it may hold a password
	dataParent  string
	profileDir  string
	jsonPath    string
	args        []string
}

func parseFlags(args []string, stderr io.Writer) (*Config, error) {
	c := &Config{args: args}
	fs := flag.NewFlagSet("hostingload", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&c.Scenario, "scenario", "", "sessions, processes, sdk or placement (required)")
	fs.IntVar(&c.Repeats, "repeats", 3, "runs (each with a new Hoist); medians are reported")
	fs.DurationVar(&c.Duration, "duration", 20*time.Second, "sessions, sdk: measured time of each phase")
	fs.DurationVar(&c.Warmup, "warmup", 3*time.Second, "sessions, sdk: unmeasured load before each phase")
	fs.DurationVar(&c.Stagger, "stagger", 10*time.Millisecond, "sessions, processes: Hoist's processes.stagger, the least time between two process launches on one instance (Hoist's default is 1s)")
	clients := fs.String("clients", "1,8", "sessions, placement: concurrent clients, one phase each")
	fs.IntVar(&c.Placements, "placements", 2000, "placement: ready simulated processes, and placements started, per phase")
	fs.StringVar(&c.Store, "store", "journal", "placement: Hoist's store, journal (the default store) or postgres (a new schema of -database-url's database per run)")
	fs.StringVar(&c.databaseURL, "database-url", os.Getenv("HOIST_DATABASE_URL"), "placement with -store postgres: the database (default $HOIST_DATABASE_URL; empty: the PG* variables)")
	fs.IntVar(&c.Replicas, "replicas", 1, "placement with -store postgres: Hoist replicas sharing the database, the clients' calls spread over them")
	fs.StringVar(&c.ProcessesOn, "processes-on", "holder", "placement: the replica the simulated processes connect to: holder (the queue's shard holder, which places every game session) or spread (process i to replica i mod -replicas: game sessions for the others go through replica inboxes)")
	rates := fs.String("rate", "0", "sessions: game sessions per second all clients together start at most (0: as fast as they can), one phase each")
	fs.IntVar(&c.Processes, "processes", 32, "sessions: server processes per instance")
	fs.IntVar(&c.Instances, "instances", 4, "sessions: instances of the fleet (each launches its processes on its own, one per -stagger)")
	fs.DurationVar(&c.GameLength, "game-length", time.Millisecond, "sessions: how long a game server keeps its game session after activating it (-end-after)")
	counts := fs.String("counts", "100,250,500,1000", "processes: process counts, one run each (above 50: a multiple of 50)")
	heartbeats := fs.String("heartbeat", "60s,5s", "processes: the game servers' heartbeat intervals (HEALTHCHECK_INTERVAL), one run each; Hoist is told the same")
	fs.DurationVar(&c.Soak, "soak", 2*time.Minute, "processes: the window over which every process must keep its heartbeats answered")
	fs.DurationVar(&c.ReadyTimeout, "ready-timeout", 10*time.Minute, "processes: how long all processes may take to be ready")
	fs.DurationVar(&c.ActivateBound, "activate-bound", time.Second, "processes: a game session created after the soak must be ACTIVE within this")
	fs.DurationVar(&c.HeartbeatBound, "heartbeat-bound", 5*time.Second, "processes: every heartbeat of the probe must be answered within this (the short heartbeat interval; the SDK gives up after 20s)")
	fs.IntVar(&c.Activations, "activations", 5, "processes: game sessions created one after the other after the soak")
	fs.DurationVar(&c.ProbeInterval, "probe-interval", 100*time.Millisecond, "processes: how often the probe process sends a heartbeat during the soak")
	sockets := fs.String("sockets", "1,16,64,256", "sdk: simulated processes (one WebSocket each), one phase each")
	inflight := fs.String("inflight", "1", "sdk: heartbeats in flight per socket (1 is how the SDK calls), one phase each")
	fs.StringVar(&c.jsonPath, "json", "", "also write the results as JSON to this file")
	fs.StringVar(&c.hoistBin, "hoist", "", "a Hoist binary to run (default: go build ./cmd/hoist)")
	fs.StringVar(&c.dataParent, "data-parent", "", "directory for Hoist's temporary data directories (default: the system's temp dir)")
	fs.StringVar(&c.profileDir, "profile", "", "write a CPU profile of Hoist (via --pprof-addr) of each measured window, and one second of its execution trace, to this directory")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	var err error
	if c.Clients, err = loadreport.IntList(*clients); err != nil {
		return nil, fmt.Errorf("-clients: %w", err)
	}
	if c.Counts, err = loadreport.IntList(*counts); err != nil {
		return nil, fmt.Errorf("-counts: %w", err)
	}
	if c.Sockets, err = loadreport.IntList(*sockets); err != nil {
		return nil, fmt.Errorf("-sockets: %w", err)
	}
	if c.Inflight, err = loadreport.IntList(*inflight); err != nil {
		return nil, fmt.Errorf("-inflight: %w", err)
	}
	for _, s := range strings.Split(*rates, ",") {
		r, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
		if err != nil || r < 0 {
			return nil, fmt.Errorf("-rate: %q is not a rate (0 or more)", s)
		}
		c.Rates = append(c.Rates, r)
	}
	for _, s := range strings.Split(*heartbeats, ",") {
		d, err := time.ParseDuration(strings.TrimSpace(s))
		if err != nil || d <= 0 {
			return nil, fmt.Errorf("-heartbeat: %q is not a positive duration", s)
		}
		c.Heartbeats = append(c.Heartbeats, d)
	}
	switch {
	case fs.NArg() > 0:
		return nil, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	case c.Scenario != "sessions" && c.Scenario != "processes" && c.Scenario != "sdk" && c.Scenario != "placement":
		return nil, fmt.Errorf("-scenario: want sessions, processes, sdk or placement, got %q", c.Scenario)
	case c.Placements < 1:
		return nil, errors.New("-placements must be positive")
	case c.Store != "journal" && c.Store != "postgres":
		return nil, fmt.Errorf("-store: want journal or postgres, got %q", c.Store)
	case c.Store != "journal" && c.Scenario != "placement":
		return nil, errors.New("-store postgres: only with -scenario placement")
	case c.Replicas < 1 || (c.Replicas > 1 && c.Store != "postgres"):
		return nil, errors.New("-replicas: at least 1, and more than 1 only with -store postgres")
	case c.ProcessesOn != "holder" && c.ProcessesOn != "spread":
		return nil, fmt.Errorf("-processes-on: want holder or spread, got %q", c.ProcessesOn)
	case c.Repeats <= 0 || c.Duration <= 0 || c.Warmup < 0 || c.Stagger <= 0 || c.Soak <= 0 || c.GameLength <= 0:
		return nil, errors.New("-repeats, -duration, -stagger, -soak and -game-length must be positive")
	case c.Processes < 1 || c.Processes > maxPerInstance:
		return nil, fmt.Errorf("-processes: 1 to %d", maxPerInstance)
	case c.Instances < 1 || c.Instances > maxInstances:
		return nil, fmt.Errorf("-instances: 1 to %d", maxInstances)
	}
	for _, n := range c.Counts {
		if n > maxPerInstance && n%maxPerInstance != 0 {
			return nil, fmt.Errorf("-counts: %d is above %d and not a multiple of it", n, maxPerInstance)
		}
	}
	c.DurationS, c.WarmupS, c.StaggerMS = c.Duration.Seconds(), c.Warmup.Seconds(), float64(c.Stagger)/1e6
	switch c.Scenario { // keep only the scenario's own settings in the report
	case "sessions":
		c.Counts, c.Sockets, c.Inflight, c.Heartbeats, c.Activations, c.Placements = nil, nil, nil, nil, 0, 0
		c.Store, c.Replicas, c.ProcessesOn = "", 0, ""
	case "processes":
		c.Clients, c.Rates, c.Sockets, c.Inflight, c.Processes, c.Instances, c.DurationS, c.WarmupS, c.Placements = nil, nil, nil, nil, 0, 0, 0, 0, 0
		c.Store, c.Replicas, c.ProcessesOn = "", 0, ""
	case "sdk":
		c.Clients, c.Rates, c.Counts, c.Heartbeats, c.Processes, c.Instances, c.Activations, c.StaggerMS, c.Placements = nil, nil, nil, nil, 0, 0, 0, 0, 0
		c.Store, c.Replicas, c.ProcessesOn = "", 0, ""
	case "placement":
		c.Rates, c.Counts, c.Sockets, c.Inflight, c.Heartbeats, c.Processes, c.Instances, c.Activations = nil, nil, nil, nil, nil, 0, 0, 0
		c.DurationS, c.WarmupS, c.StaggerMS = 0, 0, 0
	}
	return c, nil
}

func run(args []string, stdout, stderr io.Writer) int {
	return loadreport.Main("hostingload", args, stdout, stderr, parseFlags, runScenario)
}

// JSONPath is the -json file.
func (c *Config) JSONPath() string { return c.jsonPath }

// Report is the result of an invocation.
type Report struct {
	Command   string            `json:"command"`
	Config    *Config           `json:"config"`
	Machine   sysinfo.Machine   `json:"machine"`
	Sessions  []*SessionsPhase  `json:"sessions,omitempty"`
	Processes []*ProcessesRun   `json:"processes,omitempty"`
	SDK       []*SDKPhase       `json:"sdk,omitempty"`
	Placement []*PlacementPhase `json:"placement,omitempty"`
	// Medians are the medians over the runs, per phase.
	Medians any `json:"medians"`
	// Skipped says what was not run and why (e.g. not enough memory).
	Skipped []string `json:"skipped,omitempty"`
}

// env is what every scenario needs: the binaries and the log.
type env struct {
	cfg      *Config
	log      io.Writer
	hoistBin string
	archive  []byte // the game server's build archive
}

func runScenario(ctx context.Context, cfg *Config, log io.Writer) (*Report, error) {
	rep := &Report{Command: "go run ./e2e/hostingload " + strings.Join(cfg.args, " "), Config: cfg,
		Machine: sysinfo.DescribeMachine(cfg.dataParent)}
	if cfg.profileDir != "" {
		if err := os.MkdirAll(cfg.profileDir, 0o755); err != nil {
			return nil, err
		}
	}
	tmp, err := os.MkdirTemp("", "hoist-hostingload-bin-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	e := &env{cfg: cfg, log: log, hoistBin: cfg.hoistBin}
	if e.hoistBin == "" {
		fmt.Fprintln(log, "hostingload: building cmd/hoist")
		e.hoistBin = filepath.Join(tmp, "hoist")
		if err := hoisttest.GoBuild("./cmd/hoist", e.hoistBin); err != nil {
			return nil, err
		}
	}
	if cfg.Scenario != "sdk" && cfg.Scenario != "placement" {
		fmt.Fprintln(log, "hostingload: building e2e/gameserver")
		if _, e.archive, err = hoisttest.BuildGameServer(tmp); err != nil {
			return nil, err
		}
	}
	switch cfg.Scenario {
	case "sessions":
		err = e.runSessions(ctx, rep)
	case "processes":
		err = e.runProcesses(ctx, rep)
	case "sdk":
		err = e.runSDK(ctx, rep)
	case "placement":
		err = e.runPlacement(ctx, rep)
	}
	rep.summarize()
	return rep, err
}

// startHoist starts Hoist with extra arguments, and --pprof-addr when
// profiles are asked for (the address is returned).
func (e *env) startHoist(extra ...string) (*hoist, string, error) {
	pprofAddr := ""
	if e.cfg.profileDir != "" {
		var err error
		if pprofAddr, err = hoisttest.FreeLoopbackAddr(); err != nil {
			return nil, "", err
		}
		extra = append(extra, "--pprof-addr", pprofAddr)
	}
	h, err := startHoist(e.hoistBin, e.cfg.dataParent, extra)
	return h, pprofAddr, err
}

// profile starts a CPU profile of Hoist for d, and a trace of one second
// of it, when asked for; the returned function waits for them.
func (e *env) profile(pprofAddr string, d time.Duration, name string) func() error {
	if pprofAddr == "" {
		return func() error { return nil }
	}
	return profiles(pprofAddr, d, filepath.Join(e.cfg.profileDir, name))
}

// --- statistics ---

// errorCounts counts errors by kind.
type errorCounts map[string]int

func (m errorCounts) total() int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

func (m errorCounts) String() string {
	var parts []string
	for k, n := range m {
		parts = append(parts, fmt.Sprintf("%s x%d", k, n))
	}
	slices.Sort(parts)
	return strings.Join(parts, ", ")
}

func mib(kib int64) float64 { return float64(kib) / 1024 }

func (rep *Report) summarize() {
	switch rep.Config.Scenario {
	case "sessions":
		rep.Medians = summarizeSessions(rep.Sessions)
	case "processes":
		rep.Medians = summarizeProcesses(rep.Processes)
	case "sdk":
		rep.Medians = summarizeSDK(rep.SDK)
	case "placement":
		rep.Medians = summarizePlacement(rep.Placement)
	}
}

func (rep *Report) Print(w io.Writer) {
	fmt.Fprintf(w, "\n%s\n%s\n\n", rep.Command, rep.Machine)
	switch rep.Config.Scenario {
	case "sessions":
		printSessions(w, rep)
	case "processes":
		printProcesses(w, rep)
	case "sdk":
		printSDK(w, rep)
	case "placement":
		printPlacement(w, rep)
	}
	for _, s := range rep.Skipped {
		fmt.Fprintln(w, "skipped:", s)
	}
}

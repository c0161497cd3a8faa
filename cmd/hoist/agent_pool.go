package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/hoistgg/hoist/internal/config"
	"github.com/hoistgg/hoist/internal/fleets/local"
	hostagent "github.com/hoistgg/hoist/internal/hosts/agent"
	"github.com/hoistgg/hoist/internal/store/filelock"
)

const poolAgentUsage = `usage: hoist agent --pool NAME --endpoint URL [flags]

Runs this machine as a pool host: Hoist places instances of managed fleets on it.
The first run enrols the host with --enrolment-token (or $HOIST_ENROLMENT_TOKEN) and
keeps its credential in --dir; later runs reconnect with it. See docs/hosts.md
("Pool hosts").

flags:
`

// poolMode reports whether hoist agent's arguments ask for pool mode
// (--pool).
func poolMode(args []string) bool {
	return slices.ContainsFunc(args, func(a string) bool {
		return a == "--pool" || a == "-pool" || strings.HasPrefix(a, "--pool=") || strings.HasPrefix(a, "-pool=") ||
			a == "--local" || a == "-local"
	})
}

// poolAgent runs `hoist agent --pool`.
func poolAgent(args []string, stdout, stderr io.Writer) int {
	cfg, logCfg, err := poolAgentFlags(args, stdout, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintln(stderr, "hoist agent:", err)
		return 2
	}
	log, err := newLogger(logCfg, stderr)
	if err != nil {
		fmt.Fprintln(stderr, "hoist agent:", err)
		return 2
	}
	cfg.Logger, cfg.Version = log, versionString()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if cfg.Local {
		// One local agent per state directory: the lock (its file holds the
		// agent's process ID) tells hoist serve that one runs.
		lock, err := filelock.Lock(filepath.Join(cfg.Dir, "agent.lock"))
		if err != nil {
			fmt.Fprintln(stderr, "hoist agent: another local agent runs:", err)
			return 0
		}
		defer lock.Close()
	}
	a, err := hostagent.New(ctx, cfg)
	if err != nil {
		fmt.Fprintln(stderr, "hoist agent:", err)
		return 1
	}
	if err := writeAgentReady(os.Getenv("HOIST_READY_FILE"), a.HostID()); err != nil {
		log.Error("writing ready file", "err", err)
	}
	if err := a.Run(ctx); err != nil {
		fmt.Fprintln(stderr, "hoist agent:", err)
		if cfg.Local && hostagent.Retired(err) {
			return 0
		}
		return 1
	}
	return 0
}

// poolAgentFlags reads the pool agent's command line.
func poolAgentFlags(args []string, stdout, stderr io.Writer) (hostagent.Config, *config.Config, error) {
	fs := flag.NewFlagSet("hoist agent", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stdout, poolAgentUsage)
		fs.SetOutput(stdout)
		fs.PrintDefaults()
	}
	var cfg hostagent.Config
	logCfg := &config.Config{}
	instances, timings := "", ""
	fs.StringVar(&cfg.Pool, "pool", "", "pool to enrol in (required)")
	fs.StringVar(&cfg.Endpoint, "endpoint", os.Getenv("HOIST_ENDPOINT"), "Hoist's TLS listener, https://host:port ($HOIST_ENDPOINT)")
	fs.StringVar(&cfg.Token, "enrolment-token", os.Getenv("HOIST_ENROLMENT_TOKEN"), "enrolment token from hoist admin create-enrolment-token, to enrol ($HOIST_ENROLMENT_TOKEN)")
	fs.StringVar(&cfg.Location, "location", "", "fleet location this host serves, e.g. us-west-2 (to enrol)")
	fs.StringVar(&cfg.Address, "address", "", "IP address of this host's game servers, as players reach them (to enrol)")
	fs.StringVar(&cfg.DNSName, "dns-name", "", "DNS name of this host, if it has one (to enrol)")
	fs.StringVar(&instances, "instances", "*=1", "instances this host runs at once, TYPE=N,... (* = any other type) (to enrol)")
	fs.StringVar(&cfg.Dir, "dir", "hoist-agent", "state directory: the host's credential, Hoist's CA, instances, builds")
	fs.StringVar(&cfg.CAFile, "ca-file", "", "trust this CA certificate (PEM) instead of the enrolment token's pin")
	fs.StringVar(&cfg.ProcessUser, "process-user", config.DefaultProcessUser, "when run as root, the unprivileged user server processes run as (as hoist serve's)")
	fs.DurationVar(&cfg.ReconnectMax, "reconnect-max", 30*time.Second, "longest wait between two attempts to reach Hoist")
	fs.StringVar(&timings, "timings", "", "processes.*=duration,... overriding the server process timers (as hoist serve's)")
	fs.BoolVar(&cfg.Local, "local", false, "run as Hoist's own machine (started by hoist serve with --local-hosting agent; its credential and Hoist's address are in --dir)")
	fs.DurationVar(&cfg.OrphanTimeout, "orphan-timeout", config.DefaultLocalOrphanTimeout, "with --local: how long game servers keep running while no Hoist is connected")
	fs.StringVar(&logCfg.LogLevel, "log-level", "info", "debug, info, warn, error")
	fs.StringVar(&logCfg.LogFormat, "log-format", "text", "text or json")
	if err := fs.Parse(args); err != nil {
		return cfg, nil, err
	}
	if fs.NArg() > 0 {
		return cfg, nil, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	var err error
	if cfg.Instances, err = parseInstances(instances); err != nil {
		return cfg, nil, fmt.Errorf("--instances: %w", err)
	}
	t, err := config.ParseTimings(timings)
	if err != nil {
		return cfg, nil, fmt.Errorf("--timings: %w", err)
	}
	cfg.Provider = local.Config{Stagger: t.ProcessesStagger, TerminateGrace: t.ProcessesTerminateGrace,
		ShutdownGrace: t.ProcessesShutdownGrace, KillGrace: t.ProcessesKillGrace, MinUptime: t.ProcessesMinUptime,
		CrashBackoff: t.ProcessesCrashBackoff}
	return cfg, logCfg, nil
}

// parseInstances reads TYPE=N,... .
func parseInstances(v string) (map[string]int, error) {
	out := map[string]int{}
	for _, kv := range strings.Split(v, ",") {
		kv = strings.TrimSpace(kv)
		if kv == "" {
			continue
		}
		typ, n, ok := strings.Cut(kv, "=")
		c, err := strconv.Atoi(strings.TrimSpace(n))
		if !ok || err != nil || c < 1 || strings.TrimSpace(typ) == "" {
			return nil, fmt.Errorf("%q is not TYPE=N with N at least 1", kv)
		}
		out[strings.TrimSpace(typ)] += c
	}
	if len(out) == 0 {
		return nil, errors.New("give at least one TYPE=N")
	}
	return out, nil
}

// writeAgentReady writes the host's ID as JSON to path (nothing when
// ""), for tests and scripts.
func writeAgentReady(path, hostID string) error {
	if path == "" {
		return nil
	}
	b, _ := json.Marshal(map[string]string{"host_id": hostID})
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

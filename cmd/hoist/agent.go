package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"time"

	awsconfig "github.com/aws/aws-sdk-go-v2/config"

	"github.com/hoistgg/hoist/internal/anywhere"
	"github.com/hoistgg/hoist/internal/config"
)

const agentUsage = `usage: hoist agent --endpoint URL --fleet ID --location LOCATION --ip ADDRESS [flags]

Makes this host a compute of an ANYWHERE fleet and runs the fleet's server
processes on it, as Amazon's GameLift Agent does: RegisterCompute, then the
GameLift Agent protocol on the endpoint RegisterCompute names (heartbeats, the
runtime configuration, process reports); SIGTERM or SIGINT ends the processes
(Hoist sends each TerminateProcess; what is left after --terminate-grace is
killed) and deregisters the compute. Processes run in their own PID namespace
(or process group), as an unprivileged user when the agent runs as root.

Requests are signed with the credentials the AWS SDKs find: $AWS_ACCESS_KEY_ID
and $AWS_SECRET_ACCESS_KEY, $AWS_PROFILE or --profile, the shared config and
credentials files. See docs/hosts.md ("Anywhere hosts"). With --pool, the host
runs instances of managed fleets instead (hoist agent --pool --help).

flags:
`

// agentFlags are the settings of hoist agent.
type agentFlags struct {
	endpoint, fleet, location, ip, computeName, dnsName, caFile string
	region, profile, dataDir, processUser, processEnv           string
	logLevel, logFormat                                         string
	heartbeat, terminateGrace                                   time.Duration
}

// parseAgentFlags reads hoist agent's flags and checks them.
func parseAgentFlags(args []string, stderr io.Writer) (*agentFlags, error) {
	f := &agentFlags{}
	fs := flag.NewFlagSet("hoist agent", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, agentUsage); fs.PrintDefaults() }
	def := firstEnv("HOIST_ENDPOINT", "AWS_ENDPOINT_URL_GAMELIFT", "AWS_ENDPOINT_URL")
	fs.StringVar(&f.endpoint, "endpoint", def, "Hoist's URL, http(s)://HOST:PORT ($HOIST_ENDPOINT, else $AWS_ENDPOINT_URL_GAMELIFT, else $AWS_ENDPOINT_URL)")
	fs.StringVar(&f.fleet, "fleet", "", "ID of the ANYWHERE fleet (required)")
	fs.StringVar(&f.location, "location", "", "custom location of the fleet the host is in (required)")
	fs.StringVar(&f.ip, "ip", "", "IP address players reach this host's game servers at (required)")
	fs.StringVar(&f.computeName, "compute-name", "", "compute name (default: the host name, with characters a compute name may not hold as -)")
	fs.StringVar(&f.dnsName, "dns-name", "", "DNS name players reach this host at (optional)")
	fs.StringVar(&f.caFile, "ca-file", "", "PEM file of CA certificates to trust for Hoist's TLS listener (Hoist's ca-bundle.pem); given to processes with the system's roots as SSL_CERT_FILE")
	fs.StringVar(&f.region, "region", "", "region to sign for (default: the AWS config's, else "+config.DefaultRegion+")")
	fs.StringVar(&f.profile, "profile", "", "AWS shared config profile ($AWS_PROFILE)")
	fs.StringVar(&f.dataDir, "data-dir", "hoist-agent-data", "the agent's directory: processes' home directories and output")
	fs.StringVar(&f.processUser, "process-user", "hoist-game", "when the agent runs as root, the unprivileged user processes run as (created if missing); empty: the agent's user")
	fs.StringVar(&f.processEnv, "process-env", "", "KEY=value,... added to every process's environment")
	fs.DurationVar(&f.heartbeat, "heartbeat-interval", time.Minute, "time between heartbeats")
	fs.DurationVar(&f.terminateGrace, "terminate-grace", 5*time.Minute, "how long processes have to end once the agent terminates, before they are killed")
	fs.StringVar(&f.logLevel, "log-level", "info", "debug, info, warn or error")
	fs.StringVar(&f.logFormat, "log-format", "text", "text or json")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	return f, f.check()
}

// check says which required flag is missing or wrong.
func (f *agentFlags) check() error {
	for name, v := range map[string]string{"--endpoint": f.endpoint, "--fleet": f.fleet, "--location": f.location, "--ip": f.ip} {
		if v == "" {
			return fmt.Errorf("%s is required", name)
		}
	}
	if !strings.HasPrefix(f.endpoint, "http://") && !strings.HasPrefix(f.endpoint, "https://") {
		return fmt.Errorf("--endpoint %q: want http(s)://HOST:PORT", f.endpoint)
	}
	if f.heartbeat <= 0 || f.terminateGrace <= 0 {
		return errors.New("--heartbeat-interval and --terminate-grace must be positive")
	}
	dir, err := filepath.Abs(f.dataDir)
	if err != nil {
		return fmt.Errorf("--data-dir: %w", err)
	}
	f.dataDir = dir
	if f.computeName == "" {
		host, err := os.Hostname()
		if err != nil {
			return fmt.Errorf("--compute-name is required (the host name is unknown: %v)", err)
		}
		f.computeName = computeNameOf(host)
	}
	return nil
}

// computeNameOf makes a compute name of a host name: GameLift's pattern
// allows letters, digits and -.
func computeNameOf(host string) string {
	return regexp.MustCompile(`[^a-zA-Z0-9-]`).ReplaceAllString(host, "-")
}

// firstEnv returns the first environment variable of names that is set.
func firstEnv(names ...string) string {
	for _, n := range names {
		if v := os.Getenv(n); v != "" {
			return v
		}
	}
	return ""
}

// agent runs hoist agent: with --pool, as a pool host (poolAgent).
func agent(args []string, stdout, stderr io.Writer) int {
	if poolMode(args) {
		return poolAgent(args, stdout, stderr)
	}
	if len(args) > 0 && (args[0] == "help" || args[0] == "-h" || args[0] == "--help") {
		args = []string{"--help"}
	}
	f, err := parseAgentFlags(args, stderr)
	switch {
	case errors.Is(err, flag.ErrHelp):
		return 0
	case err != nil:
		fmt.Fprintln(stderr, "hoist agent:", err)
		return 2
	}
	if err := runAgent(f, stderr); err != nil {
		fmt.Fprintln(stderr, "hoist agent:", err)
		return 1
	}
	return 0
}

// runAgent loads the AWS configuration and runs the agent until SIGTERM or
// SIGINT (or the service) ends it.
func runAgent(f *agentFlags, stderr io.Writer) error {
	log, err := newLogger(&config.Config{LogLevel: f.logLevel, LogFormat: f.logFormat}, stderr)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var opts []func(*awsconfig.LoadOptions) error
	if f.profile != "" {
		opts = append(opts, awsconfig.WithSharedConfigProfile(f.profile))
	}
	if f.region != "" {
		opts = append(opts, awsconfig.WithRegion(f.region))
	}
	awsCfg, err := awsconfig.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return fmt.Errorf("AWS configuration: %w", err)
	}
	if awsCfg.Region == "" {
		awsCfg.Region = config.DefaultRegion // Hoist serves whatever region a request is signed for
	}
	var env []string
	if f.processEnv != "" {
		env = strings.Split(f.processEnv, ",")
	}
	log.Info("hoist agent starting", "version", versionString(), "endpoint", f.endpoint, "fleet", f.fleet,
		"compute", f.computeName, "location", f.location, "ip", f.ip)
	return anywhere.Run(ctx, anywhere.Config{Endpoint: f.endpoint, FleetID: f.fleet, Location: f.location, IPAddress: f.ip,
		ComputeName: f.computeName, DNSName: f.dnsName, CAFile: f.caFile, AWS: awsCfg, Dir: f.dataDir,
		ProcessUser: f.processUser, ProcessEnv: env, HeartbeatInterval: f.heartbeat, TerminateGrace: f.terminateGrace,
		Logger: log.With("component", "agent")})
}

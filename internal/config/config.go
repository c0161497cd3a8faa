// Package config reads Hoist's configuration from flags and the environment
// (every flag has a HOIST_* equivalent; a flag given on the command line wins),
// and the API credentials Hoist verifies SigV4 signatures against.
package config

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"net"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"time"
)

// Config is everything `hoist serve` needs.
type Config struct {
	Addr    string
	TLSAddr string
	DataDir string
	// Store is the embedded store backend: StoreJournal, StoreSQLite, or
	// "" to choose by what the data directory holds (see Server).
	Store string
	// JournalWrites is how the journal store writes: JournalDirect (the
	// default: O_DIRECT|O_DSYNC where the file system allows it) or
	// JournalBuffered (through the page cache, and fdatasync).
	JournalWrites   string
	Region          string
	Account         string
	InstanceIP      string
	CredentialsFile string
	LogLevel        string
	LogFormat       string
	// PprofAddr, when set, is a loopback address serving net/http/pprof
	// (for profiling under load; see docs/performance.md).
	PprofAddr string
	// HealthExpiry is how long a FleetIQ game server may go without a health
	// report before Hoist deregisters it.
	HealthExpiry time.Duration
	// ShutdownGrace bounds graceful shutdown (in-flight requests, process stop).
	ShutdownGrace time.Duration
	// MemoryLimit is the Go runtime's soft memory limit in bytes
	// (debug.SetMemoryLimit); 0 leaves the runtime's own (GOMEMLIMIT, or
	// none).
	MemoryLimit int64
	// SessionRetention is how long ended game sessions and their player
	// sessions stay in the store; 0 keeps the default (30 days, as GameLift).
	SessionRetention time.Duration
	// Credentials are the access key pairs SigV4 signatures are verified with;
	// empty means unauthenticated mode (loopback only).
	Credentials map[string]string
	// ProcessEnv is added to the environment of every server process Hoist
	// launches for a managed fleet (KEY=value entries).
	ProcessEnv []string
	// Timings override timers of the background loops, by name (see
	// TimingNames); meant for development and tests.
	Timings map[string]time.Duration
}

// TimingNames lists the timers --timings may override, with what each is.
var TimingNames = map[string]string{
	"fleetiq.status-step":         "time a game server group spends in each transient status",
	"fleetiq.sweep":               "how often expired claims and health are swept",
	"fleetiq.deleted-retention":   "how long a DELETED game server group stays visible",
	"sessions.sweep":              "how often the session timers are checked",
	"sessions.reservation":        "how long a player session stays RESERVED",
	"sessions.activation-timeout": "game session activation timeout when the fleet sets none",
	"sessions.heartbeat-interval": "the SDK's heartbeat period",
	"sessions.heartbeat-jitter":   "the SDK's heartbeat jitter",
	"sessions.ready-timeout":      "how long a process may take to call ProcessReady",
	"sessions.terminate-grace":    "how long a TERMINATING process has before Hoist escalates",
	"fleets.reconcile":            "how often fleets are reconciled",
	"fleets.policy-interval":      "how often scaling policies are evaluated",
	"fleets.activation-timeout":   "how long a fleet location may take to become ACTIVE",
	"fleets.launch-backoff":       "first wait after an instance failed to start",
	"fleets.token-ttl":            "lifetime of an Anywhere compute auth token",
	"processes.stagger":           "least time between two process launches on an instance",
	"processes.terminate-grace":   "how long a process has after TerminateProcess before it is killed",
	"processes.shutdown-grace":    "the same while Hoist shuts down",
	"processes.kill-grace":        "how long an unreachable process has after SIGTERM",
	"processes.min-uptime":        "a process ending sooner than this counts as a crash",
	"processes.crash-backoff":     "first wait before relaunching a crashed process",
}

// Defaults.
const (
	DefaultAddr         = "127.0.0.1:9080"
	DefaultTLSAddr      = "127.0.0.1:9443"
	DefaultDataDir      = "hoist-data"
	DefaultRegion       = "us-west-2"
	DefaultAccount      = "123456789012"
	DefaultHealthExpiry = 5 * time.Minute
	// DefaultSessionRetention is how long GameLift keeps ended game sessions.
	DefaultSessionRetention = 30 * 24 * time.Hour

	// StoreJournal is the default store: in memory, with a journal on disk.
	StoreJournal = "journal"
	// StoreSQLite is the SQLite store.
	StoreSQLite = "sqlite"
	// JournalDirect and JournalBuffered are the values of --journal-writes.
	JournalDirect   = "direct"
	JournalBuffered = "buffered"
)

// Parse reads flags (args, without the program and subcommand names) and the
// environment (getenv, normally os.Getenv).
func Parse(args []string, getenv func(string) string, stderr io.Writer) (*Config, error) {
	c := &Config{}
	fs := flag.NewFlagSet("hoist serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	env := func(name, def string) string {
		if v := getenv(name); v != "" {
			return v
		}
		return def
	}
	fs.StringVar(&c.Addr, "addr", env("HOIST_ADDR", DefaultAddr), "API, S3 upload and SDK WebSocket listen address ($HOIST_ADDR)")
	fs.StringVar(&c.TLSAddr, "tls-addr", env("HOIST_TLS_ADDR", DefaultTLSAddr), "the same routes over TLS (wss for the SDK); empty disables ($HOIST_TLS_ADDR)")
	fs.StringVar(&c.DataDir, "data-dir", env("HOIST_DATA_DIR", DefaultDataDir), "where Hoist keeps its store, builds, instances and CA ($HOIST_DATA_DIR)")
	fs.StringVar(&c.Store, "store", env("HOIST_STORE", ""), "embedded store: journal (the default for a new data directory) or sqlite ($HOIST_STORE; see docs/configuration.md)")
	fs.StringVar(&c.JournalWrites, "journal-writes", env("HOIST_JOURNAL_WRITES", JournalDirect), "journal store writes: direct (O_DIRECT|O_DSYNC where possible) or buffered (page cache and fdatasync) ($HOIST_JOURNAL_WRITES; see docs/configuration.md)")
	fs.StringVar(&c.Region, "region", env("HOIST_REGION", DefaultRegion), "the region in ARNs and the fleets' home location ($HOIST_REGION)")
	fs.StringVar(&c.Account, "account", env("HOIST_ACCOUNT", DefaultAccount), "the account ID in ARNs ($HOIST_ACCOUNT)")
	fs.StringVar(&c.InstanceIP, "instance-ip", env("HOIST_INSTANCE_IP", "127.0.0.1"), "IP address reported for instances and game sessions ($HOIST_INSTANCE_IP)")
	fs.StringVar(&c.CredentialsFile, "credentials-file", env("HOIST_CREDENTIALS_FILE", ""), "AWS-style credentials file of access keys to accept ($HOIST_CREDENTIALS_FILE)")
	fs.StringVar(&c.LogLevel, "log-level", env("HOIST_LOG_LEVEL", "info"), "debug, info, warn or error ($HOIST_LOG_LEVEL)")
	fs.StringVar(&c.LogFormat, "log-format", env("HOIST_LOG_FORMAT", "text"), "text or json ($HOIST_LOG_FORMAT)")
	fs.StringVar(&c.PprofAddr, "pprof-addr", env("HOIST_PPROF_ADDR", ""), "serve net/http/pprof on this loopback address, for profiling; empty disables ($HOIST_PPROF_ADDR)")
	he, err := durationEnv(getenv, "HOIST_HEALTH_EXPIRY", DefaultHealthExpiry)
	if err != nil {
		return nil, err
	}
	fs.DurationVar(&c.HealthExpiry, "health-expiry", he, "deregister FleetIQ game servers silent this long ($HOIST_HEALTH_EXPIRY)")
	fs.DurationVar(&c.ShutdownGrace, "shutdown-grace", 30*time.Second, "how long graceful shutdown may take")
	memLimit := fs.String("memory-limit", env("HOIST_MEMORY_LIMIT", ""), "soft memory limit of the Go runtime, GOMEMLIMIT syntax (e.g. 2GiB); empty keeps GOMEMLIMIT or none ($HOIST_MEMORY_LIMIT; see docs/configuration.md)")
	sr, err := durationEnv(getenv, "HOIST_SESSION_RETENTION", DefaultSessionRetention)
	if err != nil {
		return nil, err
	}
	fs.DurationVar(&c.SessionRetention, "session-retention", sr, "how long ended game sessions and their player sessions are kept ($HOIST_SESSION_RETENTION)")
	processEnv := fs.String("process-env", env("HOIST_PROCESS_ENV", ""), "KEY=value,... added to the environment of managed server processes ($HOIST_PROCESS_ENV)")
	timings := fs.String("timings", env("HOIST_TIMINGS", ""), "name=duration,... overriding background timers, for development and tests ($HOIST_TIMINGS; see docs/configuration.md)")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	creds, err := LoadCredentials(c.CredentialsFile, getenv("HOIST_CREDENTIALS"))
	if err != nil {
		return nil, err
	}
	c.Credentials = creds
	if c.MemoryLimit, err = ParseByteSize(*memLimit); err != nil {
		return nil, fmt.Errorf("--memory-limit: %w", err)
	}
	if c.ProcessEnv, err = parseProcessEnv(*processEnv); err != nil {
		return nil, err
	}
	if c.Timings, err = ParseTimings(*timings); err != nil {
		return nil, err
	}
	return c, c.check()
}

func durationEnv(getenv func(string) string, name string, def time.Duration) (time.Duration, error) {
	v := getenv(name)
	if v == "" {
		return def, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		return 0, fmt.Errorf("$%s: %w", name, err)
	}
	return d, nil
}

func (c *Config) check() error {
	if c.Region == "" || c.Account == "" {
		return errors.New("region and account must not be empty")
	}
	switch c.Store {
	case "", StoreJournal, StoreSQLite:
	default:
		return fmt.Errorf("--store %q: want %s or %s", c.Store, StoreJournal, StoreSQLite)
	}
	switch c.JournalWrites {
	case "", JournalDirect, JournalBuffered:
	default:
		return fmt.Errorf("--journal-writes %q: want %s or %s", c.JournalWrites, JournalDirect, JournalBuffered)
	}
	if c.SessionRetention < time.Minute {
		return fmt.Errorf("--session-retention %s: want at least 1m", c.SessionRetention)
	}
	if c.PprofAddr != "" && !IsLoopback(c.PprofAddr) {
		return fmt.Errorf("--pprof-addr %s: the profiling endpoint listens on loopback addresses only", c.PprofAddr)
	}
	if len(c.Credentials) == 0 {
		for _, a := range []string{c.Addr, c.TLSAddr} {
			if a != "" && !IsLoopback(a) {
				return fmt.Errorf("refusing to listen on %s without credentials: configure --credentials-file or $HOIST_CREDENTIALS, or listen on a loopback address", a)
			}
		}
	}
	return nil
}

// IsLoopback reports whether a listen address binds only loopback interfaces.
// An empty host (all interfaces) is not loopback.
func IsLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.IsLoopback()
}

// LoadCredentials reads access key pairs from an AWS shared-credentials style
// file (every profile's aws_access_key_id / aws_secret_access_key pair counts)
// and from inline "AKID:SECRET,AKID2:SECRET2".
func LoadCredentials(file, inline string) (map[string]string, error) {
	creds := map[string]string{}
	for _, pair := range strings.Split(inline, ",") {
		pair = strings.TrimSpace(pair)
		if pair == "" {
			continue
		}
		id, secret, ok := strings.Cut(pair, ":")
		if !ok || id == "" || secret == "" {
			return nil, errors.New("$HOIST_CREDENTIALS: want ACCESS_KEY_ID:SECRET pairs separated by commas")
		}
		creds[id] = secret
	}
	if file == "" {
		return creds, nil
	}
	f, err := os.Open(file)
	if err != nil {
		return nil, fmt.Errorf("credentials file: %w", err)
	}
	defer f.Close()
	return creds, parseCredentialsFile(f, file, creds)
}

func parseCredentialsFile(r io.Reader, name string, creds map[string]string) error {
	var id, secret string
	flush := func() error {
		switch {
		case id != "" && secret != "":
			creds[id] = secret
		case id != "" || secret != "":
			return fmt.Errorf("credentials file %s: a profile has an access key ID without a secret, or the reverse", name)
		}
		id, secret = "", ""
		return nil
	}
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "" || strings.HasPrefix(line, "#") || strings.HasPrefix(line, ";"):
		case strings.HasPrefix(line, "["):
			if err := flush(); err != nil {
				return err
			}
		default:
			k, v, ok := strings.Cut(line, "=")
			if !ok {
				continue
			}
			switch strings.TrimSpace(k) {
			case "aws_access_key_id":
				id = strings.TrimSpace(v)
			case "aws_secret_access_key":
				secret = strings.TrimSpace(v)
			}
		}
	}
	if err := sc.Err(); err != nil {
		return err
	}
	return flush()
}

// ParseByteSize reads a byte count as GOMEMLIMIT writes it: a
// non-negative integer with an optional unit B, KiB, MiB, GiB or TiB
// ("512MiB", "2GiB", "1073741824"). "" and "off" are 0 (no limit).
func ParseByteSize(v string) (int64, error) {
	v = strings.TrimSpace(v)
	if v == "" || v == "off" {
		return 0, nil
	}
	num, mult := v, int64(1)
	for _, u := range []struct {
		suffix string
		mult   int64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"TiB", 1 << 40}, {"B", 1}} {
		if n, ok := strings.CutSuffix(v, u.suffix); ok {
			num, mult = n, u.mult
			break
		}
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil || n < 0 || num == "" || num[0] == '+' {
		return 0, fmt.Errorf("%q is not a byte count such as 512MiB or 2GiB", v)
	}
	if n > math.MaxInt64/mult {
		return 0, fmt.Errorf("%q is too large", v)
	}
	return n * mult, nil
}

// parseProcessEnv reads "KEY=value,KEY2=value2".
func parseProcessEnv(v string) ([]string, error) {
	var out []string
	for _, kv := range strings.Split(v, ",") {
		kv = strings.TrimSpace(kv)
		if kv == "" {
			continue
		}
		if k, _, ok := strings.Cut(kv, "="); !ok || k == "" {
			return nil, fmt.Errorf("--process-env: %q is not KEY=value", kv)
		}
		out = append(out, kv)
	}
	return out, nil
}

// ParseTimings reads "name=duration,..." with names from TimingNames.
func ParseTimings(v string) (map[string]time.Duration, error) {
	out := map[string]time.Duration{}
	for _, kv := range strings.Split(v, ",") {
		kv = strings.TrimSpace(kv)
		if kv == "" {
			continue
		}
		k, dv, ok := strings.Cut(kv, "=")
		if !ok {
			return nil, fmt.Errorf("--timings: %q is not name=duration", kv)
		}
		k = strings.TrimSpace(k)
		if _, known := TimingNames[k]; !known {
			return nil, fmt.Errorf("--timings: unknown timer %q (see docs/configuration.md)", k)
		}
		d, err := time.ParseDuration(strings.TrimSpace(dv))
		if err != nil || d <= 0 {
			return nil, fmt.Errorf("--timings: %s: want a positive duration such as 2s, got %q", k, dv)
		}
		out[k] = d
	}
	return out, nil
}

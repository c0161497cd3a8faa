// Package config reads Hoist's configuration from flags and the environment,
// and the API credentials Hoist verifies SigV4 signatures against. Every
// setting is declared once, in Settings (settings.go): its flag, its HOIST_*
// environment variable, its default and its help; a flag given on the
// command line wins over the variable, which wins over the default.
package config

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Config is everything `hoist serve` needs.
type Config struct {
	Addr    string
	TLSAddr string
	DataDir string
	// Store is the store backend: StoreJournal, StoreSQLite, StorePostgres,
	// or "" to choose by what the data directory holds (see Server).
	Store string
	// DatabaseURL is the PostgreSQL connection string of StorePostgres
	// ("": the PG* environment variables alone). It may hold a password:
	// never print it.
	DatabaseURL string
	// JournalWrites is how the journal store writes: JournalDirect (the
	// default: O_DIRECT|O_DSYNC where the file system allows it) or
	// JournalBuffered (through the page cache, and fdatasync).
	JournalWrites string
	Region        string
	Account       string
	InstanceIP    string
	// HostNetworks are the networks of pool hosts' addresses that Hoist's
	// CA may sign (--host-networks): GENERATED fleet certificates of
	// instances on a host name its address when they hold it.
	HostNetworks    []netip.Prefix
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
	// ProcessUser is the unprivileged account managed server processes run
	// as when Hoist runs as root (created if missing; further instances
	// running at once get ProcessUser-1, -2, ...); empty runs them as
	// Hoist's own user.
	ProcessUser string
	// LocalHosting says how Hoist runs the instances its own machine hosts:
	// LocalAgent (a local agent process that outlives hoist serve, so a
	// restart ends no game), LocalInProcess (inside hoist serve: they end
	// with it) or LocalOff (only pool hosts run instances).
	LocalHosting string
	// LocalOrphanTimeout is how long the local agent keeps its game
	// servers running while no Hoist is connected to it.
	LocalOrphanTimeout time.Duration
	// PlacementCosts are hourly instance prices by instance type ("TYPE"
	// or "TYPE/SPOT", "TYPE/ON_DEMAND"), the cost of a queue's
	// PriorityOrder COST (internal/placement).
	PlacementCosts map[string]float64
	// MaxUnpackedSize caps the total size of the files one build archive
	// unpacks to, in bytes.
	MaxUnpackedSize int64
	// Webhooks maps an SNS topic ARN to the HTTP(S) URLs its events are
	// POSTed to (docs/events.md).
	Webhooks map[string][]Webhook
	// EventOutbox bounds the events Hoist keeps, waiting for webhook
	// delivery or for the live stream's replay; past it the oldest are
	// deleted.
	EventOutbox int
	// Timings override timers of the background loops (zero keeps the
	// domain's default); meant for development and tests.
	Timings Timings
	// ReadyFile, when set, is where Hoist writes its bound addresses as JSON
	// once it serves (tests and scripts that listen on port 0 read it).
	ReadyFile string
	// HTTPHeaderTimeout, HTTPBodyTimeout and HTTPIdleTimeout bound how
	// long a client may take to send a request's headers and its body,
	// and how long an idle keep-alive connection stays open; 0 disables
	// one. HTTPMaxBodies caps the API and admin request bodies read at
	// once (0: no cap), HTTPBodyMemory the bytes of those bodies (0: no
	// cap). See docs/security.md.
	HTTPHeaderTimeout time.Duration
	HTTPBodyTimeout   time.Duration
	HTTPIdleTimeout   time.Duration
	HTTPMaxBodies     int
	HTTPBodyMemory    int64
	// MaxLongConnections bounds the SDK WebSockets and live event streams
	// open at once (0: from the open-file limit); MaxEventStreams the
	// event streams; SDKComputeSockets the SDK WebSockets of one compute
	// (0: none); SDKMessageRate the requests one SDK WebSocket is served a
	// second (0: none). See docs/security.md.
	MaxLongConnections int
	MaxEventStreams    int
	SDKComputeSockets  int
	SDKMessageRate     int
	// SDKScheme is the scheme of the Server SDK URL Hoist hands out:
	// SDKSchemeAuto (wss:// when the TLS listener is on, else ws://),
	// SDKSchemeWS or SDKSchemeWSS.
	SDKScheme string
	// DNSSuffix is the domain game sessions' and computes' DNS names are
	// made under (GameLift's pattern, e.g. ec2-127-0-0-1.<region>.<suffix>).
	DNSSuffix string
	// Clock is ClockReal, or ClockManual: the time of game sessions,
	// placements, tickets, claims and scaling stands still until an admin
	// action advances it (docs/clock.md).
	Clock string
	// Console serves the web console at /console; ConsoleSession is how
	// long a sign-in to it lasts (docs/console.md).
	Console        bool
	ConsoleSession time.Duration
	// MetricsToken, when set, is the bearer token GET /metrics requires
	// from every client; unset, /metrics answers loopback clients only.
	MetricsToken string

	// credentialsInline is $HOIST_CREDENTIALS, read into Credentials.
	credentialsInline string
}

// DefaultConsoleSession is how long a sign-in to the console lasts.
const DefaultConsoleSession = 12 * time.Hour

// Defaults.
const (
	DefaultAddr         = "127.0.0.1:9080"
	DefaultTLSAddr      = "127.0.0.1:9443"
	DefaultDataDir      = "hoist-data"
	DefaultRegion       = "us-west-2"
	DefaultAccount      = "123456789012"
	DefaultHealthExpiry = 5 * time.Minute
	DefaultProcessUser  = "hoist-game"
	// DefaultLocalOrphanTimeout outlasts the reconnect attempts of the
	// official Go Server SDK (about three minutes): a game server that gave
	// up reconnecting cannot be managed by the next Hoist anyway.
	DefaultLocalOrphanTimeout = 5 * time.Minute
	// DefaultSessionRetention is how long GameLift keeps ended game sessions.
	DefaultSessionRetention = 30 * 24 * time.Hour
	// DefaultShutdownGrace bounds a graceful shutdown.
	DefaultShutdownGrace = 30 * time.Second
	// DefaultMaxUnpackedSize is the default of --max-unpacked-size.
	DefaultMaxUnpackedSize int64 = 20 << 30

	DefaultHTTPHeaderTimeout = 10 * time.Second
	DefaultHTTPBodyTimeout   = time.Minute
	DefaultHTTPIdleTimeout   = 2 * time.Minute
	DefaultHTTPMaxBodies     = 32
	// DefaultMaxEventStreams is the default of --max-event-streams.
	DefaultMaxEventStreams = 64
	// DefaultHTTPBodyMemory is the default of --http-body-memory.
	DefaultHTTPBodyMemory int64 = 64 << 20

	// DefaultEventOutbox is the default of --event-outbox.
	DefaultEventOutbox = 10000

	DefaultDNSSuffix = "hoist.localhost"

	// SDKSchemeAuto, SDKSchemeWS and SDKSchemeWSS are the values of
	// --sdk-scheme.
	SDKSchemeAuto = "auto"
	SDKSchemeWS   = "ws"
	SDKSchemeWSS  = "wss"

	// StoreJournal is the default store: in memory, with a journal on disk.
	StoreJournal = "journal"
	// StoreSQLite is the SQLite store.
	StoreSQLite = "sqlite"
	// StorePostgres is a PostgreSQL database, which several replicas share.
	StorePostgres = "postgres"
	// JournalDirect and JournalBuffered are the values of --journal-writes.
	JournalDirect   = "direct"
	JournalBuffered = "buffered"
)

// Values of Clock.
const (
	ClockReal   = "real"
	ClockManual = "manual"
)

// Values of LocalHosting.
const (
	LocalAgent     = "agent"
	LocalInProcess = "in-process"
	LocalOff       = "off"
)

func (c *Config) check() error {
	if c.Region == "" || c.Account == "" {
		return errors.New("--region and --account must not be empty")
	}
	if c.DataDir == "" {
		return errors.New("--data-dir ($HOIST_DATA_DIR) must not be empty")
	}
	switch c.Store {
	case "", StoreJournal, StoreSQLite, StorePostgres:
	default:
		return fmt.Errorf("--store %q: want %s, %s or %s", c.Store, StoreJournal, StoreSQLite, StorePostgres)
	}
	if c.DatabaseURL != "" && c.Store != StorePostgres {
		return errors.New("--database-url ($HOIST_DATABASE_URL) is set but --store is not postgres: set --store postgres, or unset it")
	}
	switch c.LocalHosting {
	case "", LocalAgent, LocalInProcess, LocalOff:
	default:
		return fmt.Errorf("--local-hosting %q: want %s, %s or %s", c.LocalHosting, LocalAgent, LocalInProcess, LocalOff)
	}
	if c.LocalOrphanTimeout < 0 {
		return fmt.Errorf("--local-orphan-timeout %s: must not be negative", c.LocalOrphanTimeout)
	}
	switch c.Clock {
	case "", ClockReal, ClockManual:
	default:
		return fmt.Errorf("--clock %q: want %s or %s", c.Clock, ClockReal, ClockManual)
	}
	switch c.JournalWrites {
	case "", JournalDirect, JournalBuffered:
	default:
		return fmt.Errorf("--journal-writes %q: want %s or %s", c.JournalWrites, JournalDirect, JournalBuffered)
	}
	var level slog.Level
	if level.UnmarshalText([]byte(c.LogLevel)) != nil {
		return fmt.Errorf("--log-level %q: want debug, info, warn or error", c.LogLevel)
	}
	if c.LogFormat != "text" && c.LogFormat != "json" {
		return fmt.Errorf("--log-format %q: want text or json", c.LogFormat)
	}
	if c.SessionRetention < time.Minute {
		return fmt.Errorf("--session-retention %s: want at least 1m", c.SessionRetention)
	}
	if c.HTTPHeaderTimeout < 0 || c.HTTPBodyTimeout < 0 || c.HTTPIdleTimeout < 0 || c.HTTPMaxBodies < 0 {
		return errors.New("--http-header-timeout, --http-body-timeout, --http-idle-timeout and --http-max-bodies must not be negative")
	}
	if c.MaxLongConnections < 0 || c.MaxEventStreams < 1 || c.SDKComputeSockets < 0 || c.SDKMessageRate < 0 {
		return errors.New("--max-long-connections, --sdk-compute-sockets and --sdk-message-rate must not be negative, --max-event-streams must be at least 1")
	}
	if c.ConsoleSession < time.Minute {
		return fmt.Errorf("--console-session %s: want at least 1m", c.ConsoleSession)
	}
	if c.EventOutbox < 1 {
		return fmt.Errorf("--event-outbox %d: want at least 1", c.EventOutbox)
	}
	switch c.SDKScheme {
	case "", SDKSchemeAuto, SDKSchemeWS:
	case SDKSchemeWSS:
		if c.TLSAddr == "" {
			return errors.New("--sdk-scheme wss needs the TLS listener (--tls-addr)")
		}
	default:
		return fmt.Errorf("--sdk-scheme %q: want %s, %s or %s", c.SDKScheme, SDKSchemeAuto, SDKSchemeWS, SDKSchemeWSS)
	}
	if c.DNSSuffix == "" || strings.HasPrefix(c.DNSSuffix, ".") || strings.HasSuffix(c.DNSSuffix, ".") {
		return fmt.Errorf("--dns-suffix %q: want a domain such as %s", c.DNSSuffix, DefaultDNSSuffix)
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

// absoluteDataDir resolves the data directory against the working
// directory, once, at start: every path Hoist derives from it and hands to
// a server process (SSL_CERT_FILE, the instance directories, certificate
// paths) or keeps in a record (log directories) then means the same file
// wherever the process runs.
func (c *Config) absoluteDataDir() error {
	abs, err := filepath.Abs(c.DataDir)
	if err != nil {
		return fmt.Errorf("--data-dir %q: %w", c.DataDir, err)
	}
	c.DataDir = abs
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

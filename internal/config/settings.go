package config

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"net"
	"net/netip"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Setting declares one setting, once: the flag, the environment variable,
// the default and the help all come from here, and the README's and
// docs/configuration.md's tables are tested against it.
type Setting struct {
	// Flag is the flag's name without dashes; "" for a setting read only
	// from the environment.
	Flag string
	// Env is the environment variable. A variable that is set, even to the
	// empty string, counts as given: HOIST_TLS_ADDR= turns TLS off as
	// --tls-addr= does.
	Env string
	// Default is the value the setting has when neither is given, written
	// as it would be given ("" is none).
	Default string
	// DocDefault is what the docs' tables show as the default when it is not
	// Default (a default that depends on something else).
	DocDefault string
	// Help is the flag's help text (without the variable's name, which is
	// added).
	Help string
	// value binds the setting to its field of a Config.
	value func(*Config) flag.Value
}

// Adding a setting is one entry here, binding it to its Config field with
// str, dur, boolean or integer (and a row in the README's and
// docs/configuration.md's tables, which TestDocs checks):
//
//	{Flag: "dns-suffix", Env: "HOIST_DNS_SUFFIX", Default: "localhost",
//		Help:  "domain under which game sessions' DnsName is made",
//		value: str(func(c *Config) *string { return &c.DNSSuffix })},
var settings = []Setting{
	{Flag: "addr", Env: "HOIST_ADDR", Default: DefaultAddr,
		Help:  "API, S3 upload and SDK WebSocket listen address",
		value: addr(func(c *Config) *string { return &c.Addr }, false)},
	{Flag: "tls-addr", Env: "HOIST_TLS_ADDR", Default: DefaultTLSAddr,
		Help:  "the same routes over TLS (wss for the SDK); empty disables",
		value: addr(func(c *Config) *string { return &c.TLSAddr }, true)},
	{Flag: "sdk-scheme", Env: "HOIST_SDK_SCHEME", Default: SDKSchemeAuto,
		Help:  "Server SDK URL handed to game servers: auto (wss:// when the TLS listener is on), ws or wss",
		value: str(func(c *Config) *string { return &c.SDKScheme })},
	{Flag: "dns-suffix", Env: "HOIST_DNS_SUFFIX", Default: DefaultDNSSuffix,
		Help:  "domain of the DNS names of game sessions and computes, ec2-<ip>.<region>.<suffix>",
		value: str(func(c *Config) *string { return &c.DNSSuffix })},
	{Flag: "data-dir", Env: "HOIST_DATA_DIR", Default: DefaultDataDir,
		Help:  "where Hoist keeps its store, builds, instances and CA",
		value: str(func(c *Config) *string { return &c.DataDir })},
	{Flag: "store", Env: "HOIST_STORE", DocDefault: StoreJournal,
		Help:  "store: journal (the default for a new data directory) or sqlite, embedded; or postgres, a database several replicas may share (see docs/configuration.md)",
		value: str(func(c *Config) *string { return &c.Store })},
	{Flag: "database-url", Env: "HOIST_DATABASE_URL",
		Help:  "with --store postgres, the database's connection string (postgres://user:password@host:port/db?... or key=value ...); what it leaves out comes from the PG* variables (PGHOST, PGUSER, PGPASSWORD, ...); never logged nor shown",
		value: secret(func(c *Config) *string { return &c.DatabaseURL })},
	{Flag: "journal-writes", Env: "HOIST_JOURNAL_WRITES", Default: JournalDirect,
		Help:  "journal store writes: direct (O_DIRECT|O_DSYNC where possible) or buffered (page cache and fdatasync)",
		value: str(func(c *Config) *string { return &c.JournalWrites })},
	{Flag: "region", Env: "HOIST_REGION", Default: DefaultRegion,
		Help:  "the region in ARNs and the fleets' home location",
		value: str(func(c *Config) *string { return &c.Region })},
	{Flag: "account", Env: "HOIST_ACCOUNT", Default: DefaultAccount,
		Help:  "the account ID in ARNs",
		value: str(func(c *Config) *string { return &c.Account })},
	{Flag: "instance-ip", Env: "HOIST_INSTANCE_IP", Default: "127.0.0.1",
		Help:  "IP address reported for instances and game sessions",
		value: str(func(c *Config) *string { return &c.InstanceIP })},
	{Flag: "host-networks", Env: "HOIST_HOST_NETWORKS",
		Help:  "CIDR,... : networks of pool hosts' addresses Hoist's CA may sign, so that GENERATED fleet certificates of their instances name them; fixed when the CA is created (see docs/security.md)",
		value: func(c *Config) flag.Value { return (*networksValue)(&c.HostNetworks) }},
	{Flag: "credentials-file", Env: "HOIST_CREDENTIALS_FILE",
		Help:  "AWS-style credentials file of access keys to accept",
		value: str(func(c *Config) *string { return &c.CredentialsFile })},
	{Env: "HOIST_CREDENTIALS",
		Help:  "access keys to accept: AKID:SECRET,AKID2:SECRET2",
		value: str(func(c *Config) *string { return &c.credentialsInline })},
	{Flag: "health-expiry", Env: "HOIST_HEALTH_EXPIRY", Default: DefaultHealthExpiry.String(), DocDefault: "5m",
		Help:  "deregister FleetIQ game servers silent this long; negative disables",
		value: dur(func(c *Config) *time.Duration { return &c.HealthExpiry })},
	{Flag: "max-unpacked-size", Env: "HOIST_MAX_UNPACKED_SIZE", Default: "20GiB",
		Help:  "most bytes one build archive may unpack to: a number of bytes, optionally with B, KiB, MiB, GiB or TiB",
		value: size(func(c *Config) *int64 { return &c.MaxUnpackedSize })},
	{Flag: "session-retention", Env: "HOIST_SESSION_RETENTION", Default: DefaultSessionRetention.String(), DocDefault: "720h",
		Help:  "how long ended game sessions and their player sessions are kept (at least 1m)",
		value: dur(func(c *Config) *time.Duration { return &c.SessionRetention })},
	{Flag: "memory-limit", Env: "HOIST_MEMORY_LIMIT",
		Help:  "soft memory limit of the Go runtime, GOMEMLIMIT syntax (e.g. 2GiB); empty or off keeps GOMEMLIMIT or none",
		value: func(c *Config) flag.Value { return (*limitValue)(&c.MemoryLimit) }},
	{Flag: "process-env", Env: "HOIST_PROCESS_ENV",
		Help:  "KEY=value,... added to the environment of managed server processes",
		value: func(c *Config) flag.Value { return (*processEnvValue)(&c.ProcessEnv) }},
	{Flag: "process-user", Env: "HOIST_PROCESS_USER", Default: DefaultProcessUser,
		Help:  "when Hoist runs as root, the unprivileged user managed server processes run as (NAME, then NAME-1, NAME-2, ... for each further instance running at once), created with useradd if missing; empty runs them as Hoist's own user",
		value: str(func(c *Config) *string { return &c.ProcessUser })},
	{Flag: "local-hosting", Env: "HOIST_LOCAL_HOSTING", Default: DefaultLocalHosting, DocDefault: "agent (in-process on Windows)",
		Help:  "how this machine runs the instances it hosts: agent (a local agent process that outlives hoist serve: a restart with SIGTERM or kill -9 ends no game; SIGINT ends them), in-process (they end with hoist serve) or off (only pool hosts)",
		value: str(func(c *Config) *string { return &c.LocalHosting })},
	{Flag: "local-orphan-timeout", Env: "HOIST_LOCAL_ORPHAN_TIMEOUT", Default: DefaultLocalOrphanTimeout.String(), DocDefault: "5m",
		Help:  "how long the local agent keeps game servers running while no Hoist is connected to it; then it ends them and exits (0: never)",
		value: dur(func(c *Config) *time.Duration { return &c.LocalOrphanTimeout })},
	{Flag: "webhooks", Env: "HOIST_WEBHOOKS",
		Help:  "TOPIC_ARN=URL,... : POST the events of the SNS topic a queue or matchmaking configuration notifies to these HTTP(S) URLs, signed; sns+URL (sns+https://...) sends SNS's notification envelope (see docs/events.md)",
		value: func(c *Config) flag.Value { return (*webhooksValue)(&c.Webhooks) }},
	{Flag: "event-outbox", Env: "HOIST_EVENT_OUTBOX", Default: strconv.Itoa(DefaultEventOutbox),
		Help:  "most events kept, waiting for webhook delivery or for the live stream's replay; past it the oldest are deleted (logged, counted)",
		value: integer(func(c *Config) *int { return &c.EventOutbox })},
	{Flag: "placement-costs", Env: "HOIST_PLACEMENT_COSTS",
		Help:  "TYPE=price,... hourly instance prices by instance type (TYPE or TYPE/SPOT, TYPE/ON_DEMAND) for a queue's PriorityOrder COST; unlisted types cost 0",
		value: func(c *Config) flag.Value { return (*costsValue)(&c.PlacementCosts) }},
	{Flag: "timings", Env: "HOIST_TIMINGS",
		Help:  "name=duration,... overriding background timers, for development and tests (see docs/configuration.md)",
		value: func(c *Config) flag.Value { return (*timingsValue)(&c.Timings) }},
	{Flag: "log-level", Env: "HOIST_LOG_LEVEL", Default: "info",
		Help:  "debug, info, warn or error",
		value: str(func(c *Config) *string { return &c.LogLevel })},
	{Flag: "log-format", Env: "HOIST_LOG_FORMAT", Default: "text",
		Help:  "text or json",
		value: str(func(c *Config) *string { return &c.LogFormat })},
	{Flag: "pprof-addr", Env: "HOIST_PPROF_ADDR",
		Help:  "serve net/http/pprof on this loopback address, for profiling; empty disables",
		value: addr(func(c *Config) *string { return &c.PprofAddr }, true)},
	{Flag: "http-header-timeout", Env: "HOIST_HTTP_HEADER_TIMEOUT", Default: DefaultHTTPHeaderTimeout.String(), DocDefault: "10s",
		Help:  "how long a client may take to send a request's headers; 0 disables",
		value: dur(func(c *Config) *time.Duration { return &c.HTTPHeaderTimeout })},
	{Flag: "http-body-timeout", Env: "HOIST_HTTP_BODY_TIMEOUT", Default: DefaultHTTPBodyTimeout.String(), DocDefault: "1m",
		Help:  "how long a client may take to send a request body (an S3 upload: how long it may pause); 0 disables",
		value: dur(func(c *Config) *time.Duration { return &c.HTTPBodyTimeout })},
	{Flag: "http-idle-timeout", Env: "HOIST_HTTP_IDLE_TIMEOUT", Default: DefaultHTTPIdleTimeout.String(), DocDefault: "2m",
		Help:  "how long an idle keep-alive connection stays open; 0 disables",
		value: dur(func(c *Config) *time.Duration { return &c.HTTPIdleTimeout })},
	{Flag: "http-max-bodies", Env: "HOIST_HTTP_MAX_BODIES", Default: "32",
		Help:  "API and admin request bodies read at once; more wait a second, then get 503; 0: no cap",
		value: integer(func(c *Config) *int { return &c.HTTPMaxBodies })},
	{Flag: "http-body-memory", Env: "HOIST_HTTP_BODY_MEMORY", Default: "64MiB",
		Help:  "bytes of API and admin request bodies read into memory at once (B, KiB, MiB, GiB); more wait a second, then get 503; 0 or off: no cap",
		value: func(c *Config) flag.Value { return (*limitValue)(&c.HTTPBodyMemory) }},
	{Flag: "max-long-connections", Env: "HOIST_MAX_LONG_CONNECTIONS", Default: "0", DocDefault: "0 (auto)",
		Help:  "SDK WebSockets and live event streams open at once, in all; more are refused 503; 0: the open-file limit less a quarter of it (at least 128 files) kept for the API, health, the store and game servers",
		value: integer(func(c *Config) *int { return &c.MaxLongConnections })},
	{Flag: "max-event-streams", Env: "HOIST_MAX_EVENT_STREAMS", Default: "64",
		Help:  "live event streams (GET /hoist/events) open at once; one access key may open a quarter of them; more are refused 429",
		value: integer(func(c *Config) *int { return &c.MaxEventStreams })},
	{Flag: "sdk-compute-sockets", Env: "HOIST_SDK_COMPUTE_SOCKETS", Default: "100",
		Help:  "SDK WebSockets one compute's credentials may hold open at once (two per server process while it refreshes its connection); more are refused 429; 0: no cap",
		value: integer(func(c *Config) *int { return &c.SDKComputeSockets })},
	{Flag: "sdk-message-rate", Env: "HOIST_SDK_MESSAGE_RATE", Default: "10",
		Help:  "requests one SDK WebSocket is served a second, after a burst of three seconds' worth; more are answered 429; 0: no cap",
		value: integer(func(c *Config) *int { return &c.SDKMessageRate })},
	{Flag: "shutdown-grace", Env: "HOIST_SHUTDOWN_GRACE", Default: DefaultShutdownGrace.String(), DocDefault: "30s",
		Help:  "how long a graceful shutdown (SIGINT, SIGTERM) may take",
		value: dur(func(c *Config) *time.Duration { return &c.ShutdownGrace })},
	{Env: "HOIST_READY_FILE",
		Help:  "once serving, write the bound addresses as JSON to this file (for tests and scripts)",
		value: str(func(c *Config) *string { return &c.ReadyFile })},
	{Flag: "clock", Env: "HOIST_CLOCK", Default: ClockReal,
		Help:  "real, or manual: Hoist's clock stands still until hoist admin clock advance moves it (tests of timeouts, expansions and retention; see docs/clock.md)",
		value: str(func(c *Config) *string { return &c.Clock })},
	{Flag: "console", Env: "HOIST_CONSOLE", Default: "true",
		Help:  "serve the web console at /console: loopback clients only without credentials; with them, operators sign in with an access key pair (see docs/console.md); false turns it off",
		value: boolean(func(c *Config) *bool { return &c.Console })},
	{Flag: "console-session", Env: "HOIST_CONSOLE_SESSION", Default: DefaultConsoleSession.String(), DocDefault: "12h",
		Help:  "how long a sign-in to the console lasts (at least 1m)",
		value: dur(func(c *Config) *time.Duration { return &c.ConsoleSession })},
	{Flag: "metrics-token", Env: "HOIST_METRICS_TOKEN",
		Help:  "bearer token GET /metrics (Prometheus) requires from every client (Authorization: Bearer <token>); unset, it answers loopback clients only; never logged nor shown",
		value: secret(func(c *Config) *string { return &c.MetricsToken })},
}

// Settings returns every setting, in declaration order.
func Settings() []Setting { return append([]Setting(nil), settings...) }

// Parse reads the settings from flags (args, without the program and
// subcommand names), the environment (lookupEnv, normally os.LookupEnv) and
// the defaults, then the credentials, and makes the data directory
// absolute. With -h or --help it prints the flags to stderr and returns
// flag.ErrHelp; otherwise it prints nothing: a bad value is one error
// naming the flag or variable, the value and what was expected.
func Parse(args []string, lookupEnv func(string) (string, bool), stderr io.Writer) (*Config, error) {
	c := &Config{}
	fs := flag.NewFlagSet("hoist serve", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	var bad error // the first bad flag value, as Parse returns it
	for _, s := range settings {
		v := s.value(c)
		if s.Default != "" {
			if err := v.Set(s.Default); err != nil {
				return nil, fmt.Errorf("config: default of %s: %w", s.Env, err)
			}
		}
		if e, ok := lookupEnv(s.Env); ok {
			if err := v.Set(e); err != nil {
				return nil, fmt.Errorf("$%s %q: %w", s.Env, e, err)
			}
		}
		if s.Flag != "" {
			fs.Var(&namedValue{Value: v, name: "--" + s.Flag, bad: &bad}, s.Flag, s.Help+" ($"+s.Env+")")
		}
	}
	if err := fs.Parse(args); err != nil {
		return nil, flagError(fs, err, bad, stderr)
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	creds, err := LoadCredentials(c.CredentialsFile, c.credentialsInline)
	if err != nil {
		return nil, err
	}
	c.Credentials = creds
	if err := c.check(); err != nil {
		return c, err
	}
	return c, c.absoluteDataDir()
}

// flagError is the one error Parse returns for a command line the flag
// set refused (err): the bad value's own error when a value was bad, a
// short sentence for an unknown flag or a missing value. For -h and
// --help it prints the usage to stderr and returns flag.ErrHelp.
func flagError(fs *flag.FlagSet, err, bad error, stderr io.Writer) error {
	if errors.Is(err, flag.ErrHelp) {
		fs.SetOutput(stderr)
		printUsage(fs)
		return flag.ErrHelp
	}
	if bad != nil {
		return bad
	}
	msg := err.Error()
	if name, ok := strings.CutPrefix(msg, "flag provided but not defined: -"); ok {
		return fmt.Errorf("unknown flag --%s (hoist serve --help lists the flags)", strings.TrimPrefix(name, "-"))
	}
	if name, ok := strings.CutPrefix(msg, "flag needs an argument: -"); ok {
		return fmt.Errorf("--%s needs a value", strings.TrimPrefix(name, "-"))
	}
	return err
}

// printUsage prints hoist serve's usage: every flag with its variable, then
// the settings read only from the environment.
func printUsage(fs *flag.FlagSet) {
	out := fs.Output()
	fmt.Fprintf(out, "usage: hoist [serve] [flags]\n\nEvery flag has an environment variable (shown after its help); a flag given here wins over it.\n\nflags:\n")
	fs.PrintDefaults()
	fmt.Fprintf(out, "\nenvironment only:\n")
	for _, s := range settings {
		if s.Flag == "" {
			fmt.Fprintf(out, "  %s\n    \t%s\n", s.Env, s.Help)
		}
	}
}

// namedValue is a setting's flag: a bad value's error names the flag and
// the value, and the first one is kept in *bad (the flag package's own
// message would name the flag with one dash and print the usage).
type namedValue struct {
	flag.Value
	name string
	bad  *error
}

func (v *namedValue) Set(s string) error {
	if err := v.Value.Set(s); err != nil {
		err = fmt.Errorf("%s %q: %w", v.name, s, err)
		if *v.bad == nil {
			*v.bad = err
		}
		return err
	}
	return nil
}

// String is the value's, "" for the zero namedValue (flag.PrintDefaults
// makes one to tell a default from the zero value).
func (v *namedValue) String() string {
	if v == nil || v.Value == nil {
		return ""
	}
	return v.Value.String()
}

// IsBoolFlag passes a bool flag's nature on (--flag without a value).
func (v *namedValue) IsBoolFlag() bool {
	b, ok := v.Value.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}

// str binds a string field.
func str(field func(*Config) *string) func(*Config) flag.Value {
	return func(c *Config) flag.Value { return (*stringValue)(field(c)) }
}

// secret binds a string field whose value is never shown (a password in
// a connection string): its String is empty, so that --help shows no
// "default" taken from the environment.
func secret(field func(*Config) *string) func(*Config) flag.Value {
	return func(c *Config) flag.Value { return (*secretValue)(field(c)) }
}

// secretValue is a string setting that is never shown.
type secretValue string

func (v *secretValue) Set(s string) error { *v = secretValue(s); return nil }
func (v *secretValue) String() string     { return "" }

// addr binds a listen address, host:port; optional allows "" (off).
func addr(field func(*Config) *string, optional bool) func(*Config) flag.Value {
	return func(c *Config) flag.Value { return &addrValue{p: field(c), optional: optional} }
}

// addrValue is a listen address setting.
type addrValue struct {
	p        *string
	optional bool
}

func (v *addrValue) Set(s string) error {
	if s == "" && v.optional {
		*v.p = ""
		return nil
	}
	if err := checkAddr(s); err != nil {
		if v.optional {
			return fmt.Errorf("%w, or empty to turn it off", err)
		}
		return err
	}
	*v.p = s
	return nil
}

func (v *addrValue) String() string {
	if v == nil || v.p == nil {
		return ""
	}
	return *v.p
}

// checkAddr checks a listen address: host:port, the host possibly empty
// (every interface), the port a number from 0 (any free port) to 65535.
func checkAddr(s string) error {
	_, port, err := net.SplitHostPort(s)
	if err == nil {
		var n int
		n, err = strconv.Atoi(port)
		if err == nil && (n < 0 || n > 65535 || strings.TrimLeft(port, "0123456789") != "") {
			err = errors.New("port out of range")
		}
	}
	if err != nil {
		return errors.New("want host:port, such as " + DefaultAddr + " (port 0: any free port)")
	}
	return nil
}

// boolean binds a bool field (given as --flag, --flag=false, or a
// variable holding true or false).
func boolean(field func(*Config) *bool) func(*Config) flag.Value {
	return func(c *Config) flag.Value { return (*boolValue)(field(c)) }
}

// integer binds an int field.
func integer(field func(*Config) *int) func(*Config) flag.Value {
	return func(c *Config) flag.Value { return (*intValue)(field(c)) }
}

// size binds a byte count (ParseSize's form).
func size(field func(*Config) *int64) func(*Config) flag.Value {
	return func(c *Config) flag.Value { return (*sizeValue)(field(c)) }
}

type sizeValue int64

func (v *sizeValue) Set(s string) error {
	n, err := ParseSize(s)
	if err == nil {
		*v = sizeValue(n)
	}
	return err
}

func (v *sizeValue) String() string {
	if v == nil || *v <= 0 {
		return ""
	}
	return FormatSize(int64(*v))
}

// limitValue is a byte count that may be none: "", "off" or "0" is 0,
// anything else ParseSize's form (--memory-limit).
type limitValue int64

func (v *limitValue) Set(s string) error {
	switch strings.TrimSpace(s) {
	case "", "off", "0":
		*v = 0
		return nil
	}
	n, err := ParseSize(s)
	if err == nil {
		*v = limitValue(n)
	}
	return err
}

func (v *limitValue) String() string {
	if v == nil || *v <= 0 {
		return ""
	}
	return FormatSize(int64(*v))
}

// dur binds a duration field.
func dur(field func(*Config) *time.Duration) func(*Config) flag.Value {
	return func(c *Config) flag.Value { return (*durationValue)(field(c)) }
}

type stringValue string

func (v *stringValue) Set(s string) error { *v = stringValue(s); return nil }
func (v *stringValue) String() string {
	if v == nil {
		return ""
	}
	return string(*v)
}

type boolValue bool

func (v *boolValue) Set(s string) error {
	b, err := strconv.ParseBool(s)
	if err != nil {
		return errors.New("want true or false")
	}
	*v = boolValue(b)
	return nil
}

func (v *boolValue) String() string   { return strconv.FormatBool(v != nil && bool(*v)) }
func (v *boolValue) IsBoolFlag() bool { return true }

type intValue int

func (v *intValue) Set(s string) error {
	n, err := strconv.Atoi(s)
	if err != nil {
		return errors.New("want an integer")
	}
	*v = intValue(n)
	return nil
}

func (v *intValue) String() string {
	if v == nil {
		return "0"
	}
	return strconv.Itoa(int(*v))
}

type durationValue time.Duration

func (v *durationValue) Set(s string) error {
	d, err := time.ParseDuration(s)
	if err != nil {
		return errors.New("want a duration such as 30s or 5m")
	}
	*v = durationValue(d)
	return nil
}

func (v *durationValue) String() string {
	if v == nil {
		return "0s"
	}
	return time.Duration(*v).String()
}

// networksValue is --host-networks: "198.18.0.0/15,10.1.0.0/16".
type networksValue []netip.Prefix

func (v *networksValue) Set(s string) error {
	var out []netip.Prefix
	for _, p := range strings.Split(s, ",") {
		p = strings.TrimSpace(p)
		if p == "" {
			continue
		}
		n, err := netip.ParsePrefix(p)
		if err != nil {
			return fmt.Errorf("%q is not a network in CIDR form, such as 10.1.0.0/16", p)
		}
		if n.Bits() == 0 {
			return fmt.Errorf("%s holds every address: name the hosts' networks", p)
		}
		out = append(out, n.Masked())
	}
	*v = out
	return nil
}

func (v *networksValue) String() string {
	if v == nil {
		return ""
	}
	parts := make([]string, len(*v))
	for i, p := range *v {
		parts[i] = p.String()
	}
	return strings.Join(parts, ",")
}

// processEnvValue is --process-env: "KEY=value,KEY2=value2".
type processEnvValue []string

func (v *processEnvValue) Set(s string) error {
	var out []string
	for _, kv := range strings.Split(s, ",") {
		kv = strings.TrimSpace(kv)
		if kv == "" {
			continue
		}
		if k, _, ok := strings.Cut(kv, "="); !ok || k == "" {
			return fmt.Errorf("%q is not KEY=value", kv)
		}
		out = append(out, kv)
	}
	*v = out
	return nil
}

func (v *processEnvValue) String() string {
	if v == nil {
		return ""
	}
	return strings.Join(*v, ",")
}

// Webhook is one URL of --webhooks.
type Webhook struct {
	// URL is the http:// or https:// URL events are POSTed to.
	URL string
	// SNS: the URL was given as sns+URL, and gets SNS's notification
	// envelope around each event.
	SNS bool
}

// snsPrefix, before a webhook's URL, selects SNS's envelope.
const snsPrefix = "sns+"

// String writes w as --webhooks reads it.
func (w Webhook) String() string {
	if w.SNS {
		return snsPrefix + w.URL
	}
	return w.URL
}

// webhooksValue is --webhooks: "TOPIC_ARN=URL,TOPIC_ARN=sns+URL2": a
// topic may be given more than once, for several URLs; "sns+" before a
// URL (any case) selects SNS's envelope for that URL, which must then be
// given so wherever it appears.
type webhooksValue map[string][]Webhook

func (v *webhooksValue) Set(s string) error {
	out := map[string][]Webhook{}
	sns := map[string]bool{} // the format each URL was given with
	for _, kv := range strings.Split(s, ",") {
		kv = strings.TrimSpace(kv)
		if kv == "" {
			continue
		}
		topic, raw, ok := strings.Cut(kv, "=")
		topic, raw = strings.TrimSpace(topic), strings.TrimSpace(raw)
		if !ok || !strings.HasPrefix(topic, "arn:") {
			return fmt.Errorf("%q is not TOPIC_ARN=URL", kv)
		}
		w, err := parseWebhook(raw)
		if err != nil {
			return fmt.Errorf("%s: %w", topic, err)
		}
		if was, seen := sns[w.URL]; seen && was != w.SNS {
			return fmt.Errorf("%s: %s is given both with and without %s; a URL has one format", topic, w.URL, snsPrefix)
		}
		sns[w.URL] = w.SNS
		out[topic] = append(out[topic], w)
	}
	*v = out
	return nil
}

// parseWebhook reads one URL of --webhooks: [sns+]http(s)://host/...,
// without user information.
func parseWebhook(raw string) (Webhook, error) {
	var w Webhook
	if len(raw) >= len(snsPrefix) && strings.EqualFold(raw[:len(snsPrefix)], snsPrefix) {
		w.SNS, raw = true, raw[len(snsPrefix):]
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil {
		return Webhook{}, fmt.Errorf("%q is not an http:// or https:// URL without user information (optionally after %s)", raw, snsPrefix)
	}
	w.URL = u.String()
	return w, nil
}

func (v *webhooksValue) String() string {
	if v == nil {
		return ""
	}
	var parts []string
	for topic, hooks := range *v {
		for _, w := range hooks {
			parts = append(parts, topic+"="+w.String())
		}
	}
	sort.Strings(parts)
	return strings.Join(parts, ",")
}

// sizeUnits are the suffixes ParseSize reads, longest first.
var sizeUnits = []struct {
	suffix string
	shift  uint
}{{"TiB", 40}, {"GiB", 30}, {"MiB", 20}, {"KiB", 10}, {"B", 0}}

// ParseSize reads a positive byte count: digits, optionally followed by
// B, KiB, MiB, GiB or TiB.
func ParseSize(v string) (int64, error) {
	num, shift := strings.TrimSpace(v), uint(0)
	for _, u := range sizeUnits {
		if n, ok := strings.CutSuffix(num, u.suffix); ok {
			num, shift = strings.TrimSpace(n), u.shift
			break
		}
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil || n <= 0 || n > math.MaxInt64>>shift {
		return 0, errors.New("want a positive number of bytes, optionally with B, KiB, MiB, GiB or TiB")
	}
	return n << shift, nil
}

// FormatSize writes a positive byte count as ParseSize reads it, in the
// largest unit that divides it: 20GiB, 1536MiB, 1000B.
func FormatSize(n int64) string {
	for _, u := range sizeUnits {
		if u.shift > 0 && n%(1<<u.shift) == 0 {
			return strconv.FormatInt(n>>u.shift, 10) + u.suffix
		}
	}
	return strconv.FormatInt(n, 10) + "B"
}

// costsValue reads --placement-costs: TYPE=price,... with non-negative
// prices.
type costsValue map[string]float64

func (v *costsValue) Set(s string) error {
	out := map[string]float64{}
	for _, kv := range strings.Split(s, ",") {
		kv = strings.TrimSpace(kv)
		if kv == "" {
			continue
		}
		k, price, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return fmt.Errorf("%q is not TYPE=price", kv)
		}
		f, err := strconv.ParseFloat(price, 64)
		if err != nil || f < 0 || math.IsInf(f, 0) || math.IsNaN(f) {
			return fmt.Errorf("%q: the price must be a non-negative number", kv)
		}
		out[k] = f
	}
	*v = out
	return nil
}

func (v *costsValue) String() string {
	if v == nil || len(*v) == 0 {
		return ""
	}
	keys := make([]string, 0, len(*v))
	for k := range *v {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + strconv.FormatFloat((*v)[k], 'g', -1, 64)
	}
	return strings.Join(parts, ",")
}

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
	"net"
	"net/netip"
	"os"
	"strings"
	"time"
)

// Config is everything `hoist serve` needs.
type Config struct {
	Addr            string
	TLSAddr         string
	DataDir         string
	Region          string
	Account         string
	InstanceIP      string
	CredentialsFile string
	LogLevel        string
	LogFormat       string
	// HealthExpiry is how long a FleetIQ game server may go without a health
	// report before Hoist deregisters it.
	HealthExpiry time.Duration
	// ShutdownGrace bounds graceful shutdown (in-flight requests, process stop).
	ShutdownGrace time.Duration
	// Credentials are the access key pairs SigV4 signatures are verified with;
	// empty means unauthenticated mode (loopback only).
	Credentials map[string]string
}

// Defaults.
const (
	DefaultAddr         = "127.0.0.1:9080"
	DefaultTLSAddr      = "127.0.0.1:9443"
	DefaultDataDir      = "hoist-data"
	DefaultRegion       = "us-west-2"
	DefaultAccount      = "123456789012"
	DefaultHealthExpiry = 5 * time.Minute
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
	fs.StringVar(&c.Region, "region", env("HOIST_REGION", DefaultRegion), "the region in ARNs and the fleets' home location ($HOIST_REGION)")
	fs.StringVar(&c.Account, "account", env("HOIST_ACCOUNT", DefaultAccount), "the account ID in ARNs ($HOIST_ACCOUNT)")
	fs.StringVar(&c.InstanceIP, "instance-ip", env("HOIST_INSTANCE_IP", "127.0.0.1"), "IP address reported for instances and game sessions ($HOIST_INSTANCE_IP)")
	fs.StringVar(&c.CredentialsFile, "credentials-file", env("HOIST_CREDENTIALS_FILE", ""), "AWS-style credentials file of access keys to accept ($HOIST_CREDENTIALS_FILE)")
	fs.StringVar(&c.LogLevel, "log-level", env("HOIST_LOG_LEVEL", "info"), "debug, info, warn or error ($HOIST_LOG_LEVEL)")
	fs.StringVar(&c.LogFormat, "log-format", env("HOIST_LOG_FORMAT", "text"), "text or json ($HOIST_LOG_FORMAT)")
	he, err := durationEnv(getenv, "HOIST_HEALTH_EXPIRY", DefaultHealthExpiry)
	if err != nil {
		return nil, err
	}
	fs.DurationVar(&c.HealthExpiry, "health-expiry", he, "deregister FleetIQ game servers silent this long ($HOIST_HEALTH_EXPIRY)")
	fs.DurationVar(&c.ShutdownGrace, "shutdown-grace", 30*time.Second, "how long graceful shutdown may take")
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

package config

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func envOf(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

func TestParse(t *testing.T) {
	dir := t.TempDir()
	credFile := filepath.Join(dir, "credentials")
	os.WriteFile(credFile, []byte("[default]\naws_access_key_id = AKIDFILE\naws_secret_access_key = s3cret\n\n[other]\naws_access_key_id=AK2\naws_secret_access_key=sec2\n"), 0o600)
	tests := map[string]struct {
		args    []string
		env     map[string]string
		check   func(t *testing.T, c *Config)
		wantErr string
	}{
		"defaults": {check: func(t *testing.T, c *Config) {
			if c.Addr != DefaultAddr || !filepath.IsAbs(c.DataDir) || filepath.Base(c.DataDir) != DefaultDataDir || c.Region != DefaultRegion || len(c.Credentials) != 0 || c.HealthExpiry != DefaultHealthExpiry {
				t.Errorf("%+v", c)
			}
		}},
		"env then flag wins": {
			args: []string{"--addr", "127.0.0.1:1"},
			env:  map[string]string{"HOIST_ADDR": "127.0.0.1:2", "HOIST_DATA_DIR": "/x", "HOIST_HEALTH_EXPIRY": "90s"},
			check: func(t *testing.T, c *Config) {
				if c.Addr != "127.0.0.1:1" || c.DataDir != "/x" || c.HealthExpiry != 90*time.Second {
					t.Errorf("%+v", c)
				}
			}},
		"non-loopback without credentials refused": {args: []string{"--addr", "0.0.0.0:9080"}, wantErr: "refusing to listen"},
		"non-loopback tls refused":                 {args: []string{"--tls-addr", ":9443"}, wantErr: "refusing to listen"},
		"non-loopback with credentials": {
			args: []string{"--addr", "0.0.0.0:9080", "--credentials-file", credFile},
			env:  map[string]string{"HOIST_CREDENTIALS": "AKINLINE:x"},
			check: func(t *testing.T, c *Config) {
				if c.Credentials["AKIDFILE"] != "s3cret" || c.Credentials["AK2"] != "sec2" || c.Credentials["AKINLINE"] != "x" {
					t.Errorf("%v", c.Credentials)
				}
			}},
		"bad inline credentials": {env: map[string]string{"HOIST_CREDENTIALS": "nocolon"}, wantErr: "ACCESS_KEY_ID:SECRET"},
		"bad duration":           {env: map[string]string{"HOIST_HEALTH_EXPIRY": "soon"}, wantErr: "HOIST_HEALTH_EXPIRY"},
		"stray argument":         {args: []string{"extra"}, wantErr: "unexpected argument"},
		"pprof on loopback": {args: []string{"--pprof-addr", "127.0.0.1:6060"}, check: func(t *testing.T, c *Config) {
			if c.PprofAddr != "127.0.0.1:6060" {
				t.Errorf("%+v", c)
			}
		}},
		"store from env": {env: map[string]string{"HOIST_STORE": "sqlite"}, check: func(t *testing.T, c *Config) {
			if c.Store != StoreSQLite {
				t.Errorf("Store = %q", c.Store)
			}
		}},
		"unknown store refused": {args: []string{"--store", "mongo"}, wantErr: `--store "mongo"`},
		"postgres": {args: []string{"--store", "postgres"}, env: map[string]string{"HOIST_DATABASE_URL": "postgres://h/db"},
			check: func(t *testing.T, c *Config) {
				if c.Store != StorePostgres || c.DatabaseURL != "postgres://h/db" {
					t.Errorf("Store %q DatabaseURL %q", c.Store, c.DatabaseURL)
				}
			}},
		"postgres from the PG variables": {env: map[string]string{"HOIST_STORE": "postgres"}, check: func(t *testing.T, c *Config) {
			if c.Store != StorePostgres || c.DatabaseURL != "" {
				t.Errorf("Store %q DatabaseURL %q", c.Store, c.DatabaseURL)
			}
		}},
		"database url without postgres refused": {args: []string{"--database-url", "postgres://h/db"}, wantErr: "--store is not postgres"},
		"journal writes from env": {env: map[string]string{"HOIST_JOURNAL_WRITES": "buffered"}, check: func(t *testing.T, c *Config) {
			if c.JournalWrites != JournalBuffered {
				t.Errorf("JournalWrites = %q", c.JournalWrites)
			}
		}},
		"journal writes default": {check: func(t *testing.T, c *Config) {
			if c.JournalWrites != JournalDirect {
				t.Errorf("JournalWrites = %q", c.JournalWrites)
			}
		}},
		"clock default": {check: func(t *testing.T, c *Config) {
			if c.Clock != ClockReal {
				t.Errorf("Clock = %q", c.Clock)
			}
		}},
		"unknown clock refused":          {args: []string{"--clock", "fake"}, wantErr: `--clock "fake": want real or manual`},
		"unknown journal writes refused": {args: []string{"--journal-writes", "async"}, wantErr: `--journal-writes "async"`},
		"memory limit from env": {env: map[string]string{"HOIST_MEMORY_LIMIT": "2GiB"}, check: func(t *testing.T, c *Config) {
			if c.MemoryLimit != 2<<30 {
				t.Errorf("MemoryLimit = %d", c.MemoryLimit)
			}
		}},
		"memory limit default none": {check: func(t *testing.T, c *Config) {
			if c.MemoryLimit != 0 || c.SessionRetention != DefaultSessionRetention {
				t.Errorf("MemoryLimit = %d, SessionRetention = %s", c.MemoryLimit, c.SessionRetention)
			}
		}},
		"bad memory limit refused": {args: []string{"--memory-limit", "2GB"}, wantErr: "memory-limit"},
		"session retention from env": {env: map[string]string{"HOIST_SESSION_RETENTION": "24h"}, check: func(t *testing.T, c *Config) {
			if c.SessionRetention != 24*time.Hour {
				t.Errorf("SessionRetention = %s", c.SessionRetention)
			}
		}},
		"tiny session retention refused": {args: []string{"--session-retention", "1s"}, wantErr: "--session-retention"},
		"pprof elsewhere refused":        {env: map[string]string{"HOIST_PPROF_ADDR": "0.0.0.0:6060", "HOIST_CREDENTIALS": "AK:x"}, wantErr: "loopback addresses only"},
		"empty variable turns TLS off": {env: map[string]string{"HOIST_TLS_ADDR": ""}, check: func(t *testing.T, c *Config) {
			if c.TLSAddr != "" {
				t.Errorf("TLSAddr = %q", c.TLSAddr)
			}
		}},
		"empty flag turns TLS off": {args: []string{"--tls-addr="}, check: func(t *testing.T, c *Config) {
			if c.TLSAddr != "" {
				t.Errorf("TLSAddr = %q", c.TLSAddr)
			}
		}},
		"shutdown grace and pprof from env": {env: map[string]string{"HOIST_SHUTDOWN_GRACE": "5s", "HOIST_PPROF_ADDR": "127.0.0.1:6060"}, check: func(t *testing.T, c *Config) {
			if c.ShutdownGrace != 5*time.Second || c.PprofAddr != "127.0.0.1:6060" {
				t.Errorf("%+v", c)
			}
		}},
		"shutdown grace default": {check: func(t *testing.T, c *Config) {
			if c.ShutdownGrace != DefaultShutdownGrace {
				t.Errorf("ShutdownGrace = %v", c.ShutdownGrace)
			}
		}},
		"empty duration variable refused like an empty flag": {env: map[string]string{"HOIST_SHUTDOWN_GRACE": ""}, wantErr: "$HOIST_SHUTDOWN_GRACE"},
		"empty data dir refused":                             {env: map[string]string{"HOIST_DATA_DIR": ""}, wantErr: "--data-dir"},
		"timings typed": {env: map[string]string{"HOIST_TIMINGS": "fleets.reconcile=100ms"}, args: []string{"--timings", "sessions.reservation=2s, processes.stagger=10ms"},
			check: func(t *testing.T, c *Config) {
				want := Timings{SessionsReservation: 2 * time.Second, ProcessesStagger: 10 * time.Millisecond}
				if c.Timings != want {
					t.Errorf("Timings = %+v, want %+v (the flag replaces the variable)", c.Timings, want)
				}
			}},
		"unknown timer refused": {args: []string{"--timings", "fleets.nap=1s"}, wantErr: `unknown timer "fleets.nap"`},
		"process env": {env: map[string]string{"HOIST_PROCESS_ENV": "A=1, B=2"}, check: func(t *testing.T, c *Config) {
			if strings.Join(c.ProcessEnv, ";") != "A=1;B=2" {
				t.Errorf("ProcessEnv = %q", c.ProcessEnv)
			}
		}},
		"bad process env": {args: []string{"--process-env", "nokey"}, wantErr: `"nokey" is not KEY=value`},
		"webhooks": {env: map[string]string{"HOIST_WEBHOOKS": "arn:aws:sns:us-west-2:1:t=http://127.0.0.1:8/a?x=1, arn:aws:sns:us-west-2:1:t=sns+https://h.example/b,arn:aws:sns:us-west-2:1:u=http://[::1]:9/,arn:aws:sns:us-west-2:1:u=SNS+https://h.example/b"},
			check: func(t *testing.T, c *Config) {
				got := fmt.Sprint(c.Webhooks)
				if got != "map[arn:aws:sns:us-west-2:1:t:[http://127.0.0.1:8/a?x=1 sns+https://h.example/b] arn:aws:sns:us-west-2:1:u:[http://[::1]:9/ sns+https://h.example/b]]" {
					t.Errorf("Webhooks = %s", got)
				}
				if c.EventOutbox != DefaultEventOutbox {
					t.Errorf("EventOutbox = %d", c.EventOutbox)
				}
			}},
		"webhook without a topic ARN": {args: []string{"--webhooks", "topic=http://127.0.0.1/"}, wantErr: `"topic=http://127.0.0.1/" is not TOPIC_ARN=URL`},
		"webhook not http":            {args: []string{"--webhooks", "arn:aws:sns:x:1:t=ftp://h/"}, wantErr: "is not an http:// or https:// URL"},
		"webhook sns not http":        {args: []string{"--webhooks", "arn:aws:sns:x:1:t=sns+ftp://h/"}, wantErr: "is not an http:// or https:// URL"},
		"webhook with user info":      {args: []string{"--webhooks", "arn:aws:sns:x:1:t=http://u:p@h/"}, wantErr: "is not an http:// or https:// URL"},
		"webhook with two formats": {args: []string{"--webhooks", "arn:aws:sns:x:1:t=sns+http://h/,arn:aws:sns:x:1:u=http://h/"},
			wantErr: "http://h/ is given both with and without sns+"},
		"webhook backlog": {args: []string{"--event-outbox", "5"}, check: func(t *testing.T, c *Config) {
			if c.EventOutbox != 5 {
				t.Errorf("EventOutbox = %d", c.EventOutbox)
			}
		}},
		"webhook backlog zero": {args: []string{"--event-outbox", "0"}, wantErr: "--event-outbox 0: want at least 1"},
		"ready file": {env: map[string]string{"HOIST_READY_FILE": "r.json"}, check: func(t *testing.T, c *Config) {
			if c.ReadyFile != "r.json" {
				t.Errorf("ReadyFile = %q", c.ReadyFile)
			}
		}},
		"max unpacked size default": {check: func(t *testing.T, c *Config) {
			if c.MaxUnpackedSize != DefaultMaxUnpackedSize {
				t.Errorf("MaxUnpackedSize = %d", c.MaxUnpackedSize)
			}
		}},
		"max unpacked size from env": {env: map[string]string{"HOIST_MAX_UNPACKED_SIZE": "512MiB"}, check: func(t *testing.T, c *Config) {
			if c.MaxUnpackedSize != 512<<20 {
				t.Errorf("MaxUnpackedSize = %d", c.MaxUnpackedSize)
			}
		}},
		"max unpacked size flag wins": {args: []string{"--max-unpacked-size", "3GiB"}, env: map[string]string{"HOIST_MAX_UNPACKED_SIZE": "1GiB"}, check: func(t *testing.T, c *Config) {
			if c.MaxUnpackedSize != 3<<30 {
				t.Errorf("MaxUnpackedSize = %d", c.MaxUnpackedSize)
			}
		}},
		"bad max unpacked size":  {env: map[string]string{"HOIST_MAX_UNPACKED_SIZE": "lots"}, wantErr: "HOIST_MAX_UNPACKED_SIZE"},
		"zero max unpacked size": {args: []string{"--max-unpacked-size", "0"}, wantErr: "positive number"},
		"sdk scheme and dns suffix defaults": {check: func(t *testing.T, c *Config) {
			if c.SDKScheme != SDKSchemeAuto || c.DNSSuffix != DefaultDNSSuffix {
				t.Errorf("SDKScheme %q, DNSSuffix %q", c.SDKScheme, c.DNSSuffix)
			}
		}},
		"sdk scheme and dns suffix from env": {env: map[string]string{"HOIST_SDK_SCHEME": "ws", "HOIST_DNS_SUFFIX": "games.example"},
			check: func(t *testing.T, c *Config) {
				if c.SDKScheme != SDKSchemeWS || c.DNSSuffix != "games.example" {
					t.Errorf("SDKScheme %q, DNSSuffix %q", c.SDKScheme, c.DNSSuffix)
				}
			}},
		"unknown sdk scheme refused":    {args: []string{"--sdk-scheme", "http"}, wantErr: `--sdk-scheme "http"`},
		"wss without tls refused":       {args: []string{"--sdk-scheme", "wss", "--tls-addr", ""}, wantErr: "needs the TLS listener"},
		"dns suffix with a dot refused": {args: []string{"--dns-suffix", ".example"}, wantErr: "--dns-suffix"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			c, err := Parse(tc.args, envOf(tc.env), io.Discard)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, c)
		})
	}
}

func TestParseSize(t *testing.T) {
	for in, want := range map[string]int64{"1": 1, "10B": 10, "2KiB": 2048, "3 MiB": 3 << 20, "20GiB": 20 << 30, "1TiB": 1 << 40} {
		if got, err := ParseSize(in); err != nil || got != want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "-1", "0", "1GB", "1.5GiB", "99999999999TiB", "GiB"} {
		if _, err := ParseSize(in); err == nil {
			t.Errorf("ParseSize(%q) accepted", in)
		}
	}
}

func TestIsLoopback(t *testing.T) {
	for addr, want := range map[string]bool{
		"127.0.0.1:1": true, "127.9.9.9:1": true, "[::1]:1": true, "localhost:1": true,
		":1": false, "0.0.0.0:1": false, "10.0.0.1:1": false, "[::]:1": false, "bad": false,
	} {
		if got := IsLoopback(addr); got != want {
			t.Errorf("%s: %v", addr, got)
		}
	}
}

func TestCredentialsFileHalfProfile(t *testing.T) {
	err := parseCredentialsFile(strings.NewReader("[p]\naws_access_key_id=A\n"), "f", map[string]string{})
	if err == nil {
		t.Fatal("want error")
	}
}

func TestHTTPLimits(t *testing.T) {
	c, err := Parse(nil, func(string) (string, bool) { return "", false }, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if c.HTTPHeaderTimeout != DefaultHTTPHeaderTimeout || c.HTTPBodyTimeout != DefaultHTTPBodyTimeout ||
		c.HTTPIdleTimeout != DefaultHTTPIdleTimeout || c.HTTPMaxBodies != DefaultHTTPMaxBodies || c.HTTPBodyMemory != DefaultHTTPBodyMemory {
		t.Errorf("defaults: %v %v %v %d %d", c.HTTPHeaderTimeout, c.HTTPBodyTimeout, c.HTTPIdleTimeout, c.HTTPMaxBodies, c.HTTPBodyMemory)
	}
	env := map[string]string{"HOIST_HTTP_HEADER_TIMEOUT": "1s", "HOIST_HTTP_BODY_TIMEOUT": "2s", "HOIST_HTTP_IDLE_TIMEOUT": "3s", "HOIST_HTTP_MAX_BODIES": "4"}
	c, err = Parse([]string{"--http-max-bodies", "5"}, envOf(env), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if c.HTTPHeaderTimeout != time.Second || c.HTTPBodyTimeout != 2*time.Second || c.HTTPIdleTimeout != 3*time.Second || c.HTTPMaxBodies != 5 {
		t.Errorf("from env and flags: %v %v %v %d", c.HTTPHeaderTimeout, c.HTTPBodyTimeout, c.HTTPIdleTimeout, c.HTTPMaxBodies)
	}
	for _, bad := range [][]string{{"--http-max-bodies", "-1"}, {"--http-body-timeout", "-1s"}} {
		if _, err := Parse(bad, envOf(nil), io.Discard); err == nil {
			t.Errorf("%v accepted", bad)
		}
	}
	if _, err := Parse(nil, envOf(map[string]string{"HOIST_HTTP_MAX_BODIES": "many"}), io.Discard); err == nil {
		t.Error("HOIST_HTTP_MAX_BODIES=many accepted")
	}
}

// TestMemoryLimitValue: --memory-limit takes ParseSize's form, or none.
func TestMemoryLimitValue(t *testing.T) {
	good := map[string]int64{"": 0, "off": 0, "0": 0, "1024": 1024, "512B": 512, "64KiB": 64 << 10,
		"512MiB": 512 << 20, "2GiB": 2 << 30, "1TiB": 1 << 40, " 3GiB ": 3 << 30}
	for in, want := range good {
		var v limitValue
		if err := v.Set(in); err != nil || int64(v) != want {
			t.Errorf("--memory-limit %q = %d, %v; want %d", in, v, err, want)
		}
	}
	for _, in := range []string{"2GB", "1.5GiB", "-1", "GiB", "MiB1", "9999999TiB", "lots"} {
		var v limitValue
		if err := v.Set(in); err == nil {
			t.Errorf("--memory-limit %q = %d, want an error", in, v)
		}
	}
}

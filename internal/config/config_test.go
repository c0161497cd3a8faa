package config

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func envOf(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

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
			if c.Addr != DefaultAddr || c.DataDir != DefaultDataDir || c.Region != DefaultRegion || len(c.Credentials) != 0 || c.HealthExpiry != DefaultHealthExpiry {
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
		"bad memory limit refused": {args: []string{"--memory-limit", "2GB"}, wantErr: "--memory-limit"},
		"session retention from env": {env: map[string]string{"HOIST_SESSION_RETENTION": "24h"}, check: func(t *testing.T, c *Config) {
			if c.SessionRetention != 24*time.Hour {
				t.Errorf("SessionRetention = %s", c.SessionRetention)
			}
		}},
		"tiny session retention refused": {args: []string{"--session-retention", "1s"}, wantErr: "--session-retention"},
		"pprof elsewhere refused":        {env: map[string]string{"HOIST_PPROF_ADDR": "0.0.0.0:6060", "HOIST_CREDENTIALS": "AK:x"}, wantErr: "loopback addresses only"},
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

func TestParseByteSize(t *testing.T) {
	good := map[string]int64{"": 0, "off": 0, "0": 0, "1024": 1024, "512B": 512, "64KiB": 64 << 10,
		"512MiB": 512 << 20, "2GiB": 2 << 30, "1TiB": 1 << 40, " 3GiB ": 3 << 30}
	for in, want := range good {
		if got, err := ParseByteSize(in); err != nil || got != want {
			t.Errorf("ParseByteSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"2GB", "1.5GiB", "-1", "+5", "GiB", "MiB1", "2 GiB", "9999999TiB", "lots"} {
		if got, err := ParseByteSize(in); err == nil {
			t.Errorf("ParseByteSize(%q) = %d, want an error", in, got)
		}
	}
}

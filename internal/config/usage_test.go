package config

import (
	"bytes"
	"errors"
	"flag"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestDataDirIsAbsolute: the data directory is resolved against the
// working directory Hoist starts in, once, so that every path derived from
// it (the CA bundle handed to server processes as SSL_CERT_FILE, instance
// directories, certificates, logs) means the same file in a process that
// runs elsewhere.
func TestDataDirIsAbsolute(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	tests := map[string]struct {
		args []string
		env  map[string]string
		want string
	}{
		"default":       {want: filepath.Join(wd, DefaultDataDir)},
		"relative flag": {args: []string{"--data-dir", "a/../b"}, want: filepath.Join(wd, "b")},
		"relative env":  {env: map[string]string{"HOIST_DATA_DIR": "./c"}, want: filepath.Join(wd, "c")},
		"absolute":      {args: []string{"--data-dir", "/srv/hoist/"}, want: "/srv/hoist"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			c, err := Parse(tc.args, envOf(tc.env), &bytes.Buffer{})
			if err != nil {
				t.Fatal(err)
			}
			if c.DataDir != tc.want {
				t.Errorf("DataDir = %q, want %q", c.DataDir, tc.want)
			}
		})
	}
}

// TestBadValueOneError: a bad flag or variable value is one error naming
// the setting, the value and what was expected, and nothing is printed
// (hoist serve prints the error once, without the usage around it).
func TestBadValueOneError(t *testing.T) {
	tests := map[string]struct {
		args []string
		env  map[string]string
		want string
	}{
		"size flag": {args: []string{"--max-unpacked-size=12XB"},
			want: `--max-unpacked-size "12XB": want a positive number of bytes, optionally with B, KiB, MiB, GiB or TiB`},
		"size variable": {env: map[string]string{"HOIST_MAX_UNPACKED_SIZE": "12XB"},
			want: `$HOIST_MAX_UNPACKED_SIZE "12XB": want a positive number of bytes, optionally with B, KiB, MiB, GiB or TiB`},
		"address flag": {args: []string{"--addr=nonsense"},
			want: `--addr "nonsense": want host:port, such as 127.0.0.1:9080 (port 0: any free port)`},
		"address variable": {env: map[string]string{"HOIST_TLS_ADDR": "127.0.0.1:99999"},
			want: `$HOIST_TLS_ADDR "127.0.0.1:99999": want host:port, such as 127.0.0.1:9080 (port 0: any free port), or empty to turn it off`},
		"duration flag": {args: []string{"--health-expiry", "soon"},
			want: `--health-expiry "soon": want a duration such as 30s or 5m`},
		"unknown flag":  {args: []string{"--adr=127.0.0.1:1"}, want: `unknown flag --adr (hoist serve --help lists the flags)`},
		"missing value": {args: []string{"--data-dir"}, want: `--data-dir needs a value`},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			var stderr bytes.Buffer
			_, err := Parse(tc.args, envOf(tc.env), &stderr)
			if err == nil || err.Error() != tc.want {
				t.Errorf("error %v\nwant  %s", err, tc.want)
			}
			if stderr.Len() != 0 {
				t.Errorf("printed besides the error:\n%s", stderr.String())
			}
		})
	}
}

// TestEmptyAddrRefused: --addr has no off switch (the TLS listener has).
func TestEmptyAddrRefused(t *testing.T) {
	if _, err := Parse([]string{"--addr="}, envOf(nil), &bytes.Buffer{}); err == nil || !strings.Contains(err.Error(), "--addr") {
		t.Errorf("--addr= gave %v", err)
	}
}

// TestHelp: --help prints the usage (sizes as a person writes them) and
// returns flag.ErrHelp.
func TestHelp(t *testing.T) {
	var stderr bytes.Buffer
	_, err := Parse([]string{"--help"}, envOf(nil), &stderr)
	if !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("--help: %v", err)
	}
	help := stderr.String()
	for _, want := range []string{"usage: hoist [serve] [flags]", "-max-unpacked-size", "(default 20GiB)", "HOIST_READY_FILE"} {
		if !strings.Contains(help, want) {
			t.Errorf("--help lacks %q:\n%s", want, help)
		}
	}
	if strings.Contains(help, "21474836480") {
		t.Errorf("--help shows a size in bytes:\n%s", help)
	}
	stderr.Reset()
	if _, err := Parse([]string{"--help"}, envOf(map[string]string{"HOIST_MEMORY_LIMIT": "1536MiB"}), &stderr); !errors.Is(err, flag.ErrHelp) ||
		!strings.Contains(stderr.String(), "(default 1536MiB)") {
		t.Errorf("--help with $HOIST_MEMORY_LIMIT=1536MiB: %v\n%s", err, stderr.String())
	}
}

// TestHelpHidesDatabaseURL: --help shows the settings' values taken from
// the environment as their defaults, but never the database's connection
// string (it holds a password); a bad setting's error does not show it
// either.
func TestHelpHidesDatabaseURL(t *testing.T) {
	const secret = "pa55-w0rd"
	env := map[string]string{"HOIST_DATABASE_URL": "postgres://hoist:" + secret + "@db.example/hoist", "HOIST_STORE": "postgres"}
	var stderr bytes.Buffer
	if _, err := Parse([]string{"--help"}, envOf(env), &stderr); !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("--help: %v", err)
	}
	if help := stderr.String(); strings.Contains(help, secret) || !strings.Contains(help, "-database-url") {
		t.Errorf("--help shows the connection string, or lacks the flag:\n%s", help)
	}
	env["HOIST_STORE"] = "journal"
	if _, err := Parse(nil, envOf(env), io.Discard); err == nil || strings.Contains(err.Error(), secret) {
		t.Errorf("--database-url without --store postgres: %v, want an error without the password", err)
	}
}

// TestFormatSize: sizes are written in the largest unit that divides them.
func TestFormatSize(t *testing.T) {
	for n, want := range map[int64]string{20 << 30: "20GiB", 1536 << 20: "1536MiB", 1 << 40: "1TiB", 1000: "1000B", 3 << 10: "3KiB"} {
		if got := FormatSize(n); got != want {
			t.Errorf("FormatSize(%d) = %q, want %q", n, got, want)
		}
	}
}

// FuzzSize: every size ParseSize accepts is positive and FormatSize writes
// it back as ParseSize reads it.
func FuzzSize(f *testing.F) {
	for _, s := range []string{"20GiB", "1", "12XB", "9223372036854775807", "8589934592GiB", " 3 KiB", "0B", "-1MiB"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := ParseSize(s)
		if err != nil {
			return
		}
		if n <= 0 {
			t.Fatalf("%q accepted as %d", s, n)
		}
		if back, err := ParseSize(FormatSize(n)); err != nil || back != n {
			t.Fatalf("%q = %d is written %q, which reads back as %d, %v", s, n, FormatSize(n), back, err)
		}
	})
}

// FuzzAddr: every listen address the address settings accept splits into
// a host and a numeric port from 0 to 65535.
func FuzzAddr(f *testing.F) {
	for _, s := range []string{"127.0.0.1:9080", "[::1]:0", ":9443", "nonsense", "127.0.0.1:99999", "localhost:http", "", "a:b:c", "h:+1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if checkAddr(s) != nil {
			return
		}
		_, port, err := net.SplitHostPort(s)
		n, perr := strconv.Atoi(port)
		if err != nil || perr != nil || n < 0 || n > 65535 || strings.TrimLeft(port, "0123456789") != "" {
			t.Fatalf("%q accepted: port %q", s, port)
		}
	})
}

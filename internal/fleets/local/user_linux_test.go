//go:build linux

package local

import (
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/hoistgg/hoist/internal/fleets"
)

// testUID is an unused UID and GID the test runs processes as (setuid needs
// no account).
const testUID = 64917

// TestProcessesRunAsUser: with Config.User (Hoist as root), server
// processes and the install script run as that user with no
// supplementary groups; the game root and home/ are the user's, logs/ and
// the instance directory root's; the user can read none of Hoist's files
// next to the instances directory, nor Hoist's environment, and can read
// its certificates.
func TestProcessesRunAsUser(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	// Not parallel: the umask is the whole test binary's.
	var dataDir string
	f := newFixture(t, func(c *Config) {
		c.User = &User{Name: "test", UID: testUID, GID: testUID}
		dataDir = filepath.Dir(c.Dir)
		// The test's temporary directories are 0700: let the user through.
		for d := dataDir; d != os.TempDir() && d != "/"; d = filepath.Dir(d) {
			os.Chmod(d, 0o711)
		}
	})
	os.Chmod(filepath.Dir(f.fifo), 0o711)
	os.Chmod(f.fifo, 0o666)
	defer setUmask(setUmask(0o077)) // as SetupUser does
	secret := filepath.Join(dataDir, "store", "secret")
	if err := os.MkdirAll(filepath.Dir(secret), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(secret, []byte("s"), 0o600); err != nil {
		t.Fatal(err)
	}
	f.file("install.sh", "id -u > installed-as\n", 0o644)
	f.script("server.sh", `{ id -u; id -G; cat `+shellQuote(secret)+` && echo READ-SECRET
cat /proc/`+strconv.Itoa(os.Getpid())+`/environ >/dev/null && echo READ-ENVIRON
cat ../certificates/privateKey.pem >/dev/null && echo READ-CERT
touch "$HOME/h" && echo WROTE-HOME
touch ./g && echo WROTE-GAME
touch ../logs/x && echo WROTE-LOGS
} > "out-$GAMELIFT_SDK_PROCESS_ID" 2>/dev/null
`+sleeper)
	spec := f.spec("fleet-1", "i-1", sp("/local/game/server.sh", "", 1))
	spec.Certificate = &fleets.CertificateFiles{Certificate: []byte("c"), Chain: []byte("ch"), PrivateKey: []byte("k"), Root: []byte("r")}
	r := f.startSpec(spec)
	p := r.waitStarts(1)[0]
	r.b.pid(t, p.ProcessID)
	layout := f.p.Layout("fleet-1", "i-1")
	out, err := os.ReadFile(filepath.Join(layout.GameRoot, "out-"+p.ProcessID))
	if err != nil {
		t.Fatal(err)
	}
	want := strconv.Itoa(testUID) + "\n" + strconv.Itoa(testUID) + "\nREAD-CERT\nWROTE-HOME\nWROTE-GAME\n"
	if string(out) != want {
		t.Errorf("the process saw:\n%s\nwant:\n%s", out, want)
	}
	if b, err := os.ReadFile(filepath.Join(layout.GameRoot, "installed-as")); err != nil || strings.TrimSpace(string(b)) != strconv.Itoa(testUID) {
		t.Errorf("install.sh ran as %q (%v), want %d", b, err, testUID)
	}
	for dir, want := range map[string]struct {
		uid  int
		perm os.FileMode
	}{layout.Dir: {0, 0o711}, filepath.Dir(layout.Dir): {0, 0o711}, f.cfg.Dir: {0, 0o711},
		filepath.Join(layout.Dir, "logs"): {0, 0o700}, layout.GameRoot: {testUID, 0o700},
		filepath.Join(layout.Dir, "home"): {testUID, 0o700}, layout.CertificateDir: {testUID, 0o700}} {
		st, err := os.Stat(dir)
		if err != nil {
			t.Fatal(err)
		}
		if uid := int(st.Sys().(*syscall.Stat_t).Uid); uid != want.uid || st.Mode().Perm() != want.perm {
			t.Errorf("%s: owner %d mode %v, want %d %v", dir, uid, st.Mode().Perm(), want.uid, want.perm)
		}
	}
	if err := f.p.StopInstance("i-1", "done"); err != nil {
		t.Fatal(err)
	}
	r.waitStopped()
}

// TestConfineDataDir: the data directory and its instances directory are
// traversable only; everything else at its top loses group and other
// permissions; unreachable names the first directory others cannot pass.
func TestConfineDataDir(t *testing.T) {
	base := t.TempDir()
	data := filepath.Join(base, "data")
	for _, d := range []string{"store", "pki", "builds/b-1"} {
		if err := os.MkdirAll(filepath.Join(data, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(data, "hoist.db"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := confineDataDir(data); err != nil {
		t.Fatal(err)
	}
	for p, want := range map[string]os.FileMode{data: 0o711, filepath.Join(data, "instances"): 0o711,
		filepath.Join(data, "store"): 0o700, filepath.Join(data, "pki"): 0o700, filepath.Join(data, "builds"): 0o700,
		filepath.Join(data, "hoist.db"): 0o600} {
		if st, err := os.Stat(p); err != nil || st.Mode().Perm() != want {
			t.Errorf("%s: %v, %v; want %v", p, st.Mode().Perm(), err, want)
		}
	}
	if err := os.Chmod(base, 0o700); err != nil {
		t.Fatal(err)
	}
	if got := unreachable(data); got != base {
		t.Errorf("unreachable = %q, want %q", got, base)
	}
	if err := os.Chmod(base, 0o711); err != nil {
		t.Fatal(err)
	}
	if got := unreachable(data); got != "" && got != filepath.Dir(base) {
		t.Errorf("unreachable = %q after chmod o+x of %s", got, base)
	}
}

// TestSetupUserWarnsOrRefuses: not root, or with no process user, Hoist
// warns that server processes run as its own user and confines nothing;
// an account with UID 0 is refused.
func TestSetupUserWarnsOrRefuses(t *testing.T) {
	for name, tc := range map[string]struct {
		user string
		euid int
		warn string
	}{
		"not root": {user: DefaultUser, euid: 1000, warn: "Hoist does not run as root"},
		"no user":  {user: "", euid: 0, warn: "server processes run as root"},
	} {
		t.Run(name, func(t *testing.T) {
			var logs strings.Builder
			dir := filepath.Join(t.TempDir(), "data")
			u, err := setupUser(tc.user, dir, slog.New(slog.NewTextHandler(&logs, nil)), tc.euid)
			if u != nil || err != nil {
				t.Fatalf("setupUser = %+v, %v; want nil, nil", u, err)
			}
			if !strings.Contains(logs.String(), "level=WARN") || !strings.Contains(logs.String(), tc.warn) {
				t.Errorf("log %q lacks the warning %q", logs.String(), tc.warn)
			}
			if _, err := os.Stat(dir); !os.IsNotExist(err) {
				t.Errorf("the data directory was touched (%v)", err)
			}
		})
	}
	t.Run("UID 0", func(t *testing.T) {
		if os.Geteuid() != 0 {
			t.Skip("needs root (it would create an account otherwise)")
		}
		if _, err := setupUser("root", t.TempDir(), slog.New(slog.DiscardHandler), 0); err == nil ||
			!strings.Contains(err.Error(), "unprivileged") {
			t.Errorf("setupUser(root) = %v, want a refusal", err)
		}
	})
}

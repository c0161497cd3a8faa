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
// no account); slot n gets testUID+n.
const testUID = 64917

// userFixture is a fixture whose instances run as testUID+slot, with the
// umask SetupUser sets, and its directories and report FIFO reachable by
// those users. It returns the data directory (the instances directory's
// parent).
func userFixture(t *testing.T) (*fixture, string) {
	var dataDir string
	f := newFixture(t, func(c *Config) {
		c.Users = func(slot int) (*User, error) {
			return &User{Name: "test", UID: testUID + slot, GID: testUID + slot}, nil
		}
		dataDir = filepath.Dir(c.Dir)
		c.AccountLockDir = filepath.Join(dataDir, "locks")
		// The test's temporary directories are 0700: let the users through.
		for d := dataDir; d != os.TempDir() && d != "/"; d = filepath.Dir(d) {
			os.Chmod(d, 0o711)
		}
	})
	os.Chmod(filepath.Dir(f.fifo), 0o711)
	os.Chmod(f.fifo, 0o666)
	old := setUmask(0o077)
	t.Cleanup(func() { setUmask(old) })
	return f, dataDir
}

// TestProcessesRunAsUser: with Config.Users (Hoist as root), server
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
	f, dataDir := userFixture(t)
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
		"not root": {user: "hoist-game", euid: 1000, warn: "Hoist does not run as root"},
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

// TestInstancesHaveTheirOwnUser: two instances running at once run as
// different users, and one's processes cannot read the other's game files;
// a slot is reused once its instance has stopped.
func TestInstancesHaveTheirOwnUser(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	f, _ := userFixture(t)
	f.script("server.sh", `{ id -u; cat ../../../fleet-1/i-1/game/secret-* 2>/dev/null; } > "probe-$GAMELIFT_SDK_PROCESS_ID"
echo mine > "secret-$GAMELIFT_SDK_PROCESS_ID"
`+sleeper)
	r1 := f.start("fleet-1", "i-1", sp("/local/game/server.sh", "", 1))
	p1 := r1.waitStarts(1)[0]
	r1.b.pid(t, p1.ProcessID)
	r2 := f.start("fleet-2", "i-2", sp("/local/game/server.sh", "", 1))
	p2 := r2.waitStarts(1)[0]
	r2.b.pid(t, p2.ProcessID)
	read := func(fleet, inst, name string) string {
		b, err := os.ReadFile(filepath.Join(f.p.Layout(fleet, inst).GameRoot, name))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	if got, want := read("fleet-1", "i-1", "probe-"+p1.ProcessID), strconv.Itoa(testUID)+"\n"; got != want {
		t.Errorf("instance 1 saw %q, want %q", got, want)
	}
	// The second instance's process knows the path of the first's game
	// root: it may not read it.
	if got, want := read("fleet-2", "i-2", "probe-"+p2.ProcessID), strconv.Itoa(testUID+1)+"\n"; got != want {
		t.Errorf("instance 2 saw %q, want %q (its own UID, and nothing of instance 1)", got, want)
	}
	if b, err := os.ReadFile(filepath.Join(f.p.Layout("fleet-1", "i-1").GameRoot, "secret-"+p1.ProcessID)); err != nil || string(b) != "mine\n" {
		t.Fatalf("instance 1 did not write its secret: %q, %v", b, err)
	}
	if err := f.p.StopInstance("i-1", "done"); err != nil {
		t.Fatal(err)
	}
	r1.waitStopped()
	r3 := f.start("fleet-1", "i-3", sp("/local/game/server.sh", "", 1))
	p3 := r3.waitStarts(1)[0]
	r3.b.pid(t, p3.ProcessID)
	if got, want := read("fleet-1", "i-3", "probe-"+p3.ProcessID), strconv.Itoa(testUID)+"\n"; got != want {
		t.Errorf("instance 3, started after instance 1 stopped, saw %q; want slot 0's %q", got, want)
	}
	for id, r := range map[string]*recorder{"i-2": r2, "i-3": r3} {
		if err := f.p.StopInstance(id, "done"); err != nil {
			t.Fatal(err)
		}
		r.waitStopped()
	}
}

//go:build linux

package hosting

import (
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hoistgg/hoist/e2e/hoisttest"
)

// probeScript reports what a game server can see of Hoist, then runs the
// game server: its user, its environment, which of Hoist's files (listed
// in probe-files by the test) it can read, whether it can read the
// environment of its parent (its init) or of Hoist (by its PID, in
// probe-hoist-pid), whether it sees more processes than its own (its
// init, its shell and the subshell counting them), and whether it can
// list the data directory.
const probeScript = `#!/bin/sh
{
  echo "uid $(id -u)"
  while IFS= read -r f; do
    head -c 1 "$f" >/dev/null 2>&1 && echo "read $f"
  done < probe-files
  head -c 1 /proc/$PPID/environ >/dev/null 2>&1 && echo "read parent-environ"
  head -c 1 /proc/$(cat probe-hoist-pid)/environ >/dev/null 2>&1 && echo "read hoist-environ"
  n=$(set -- /proc/[0-9]*; echo $#)
  [ "$n" -le 3 ] || echo "saw $n processes"
  ls "$(cat probe-data-dir)" >/dev/null 2>&1 && echo "listed data-dir"
  ls "$(cat probe-data-dir)/instances" >/dev/null 2>&1 && echo "listed instances"
  ls "$(cat probe-data-dir)/local-host" >/dev/null 2>&1 && echo "listed local-host"
  ls "$(cat probe-data-dir)/local-host/instances" >/dev/null 2>&1 && echo "listed local-host/instances"
} > probe.txt 2>&1
env > probe-env.txt
exec ./gameserver "$@"
`

// TestServerProcessConfinement: Hoist run as root (this machine's CI) with
// secrets in its environment runs a game server as its unprivileged user,
// with only the documented environment: the game server cannot read a
// file of Hoist's data directory (but the public CA bundle), nor Hoist's environment, nor list the
// data directory, and has no variable of Hoist's own. A second fleet's
// game server, running at the same time, runs as another user and cannot
// read the first one's files or environment.
func TestServerProcessConfinement(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("Hoist confines server processes when it runs as root")
	}
	const secret = "do-not-leak-" + "7f3a"
	h := hoisttest.Start(t, hoisttest.Options{Args: []string{
		"--timings", strings.Join(dedupe(baseTimings), ","),
		"--process-env", strings.Join(baseEnv, ","),
	}, Env: []string{"FOO_SECRET=" + secret, "AWS_SECRET_ACCESS_KEY=" + secret}})
	e := &env{h: h, gl: h.V2(), ctx: hoisttest.Context(t, 10*time.Minute)}
	e.dumpOnFailure(t)

	// Every file Hoist has in its data directory so far (store, CA, ...).
	var files []string
	err := filepath.WalkDir(h.DataDir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (p == filepath.Join(h.DataDir, "instances") || p == filepath.Join(h.DataDir, "local-host", "instances")) {
			return filepath.SkipDir
		}
		// The CA bundle (system roots and Hoist's CA certificate, no key)
		// is public by design: it is the game server's SSL_CERT_FILE.
		if d.Type().IsRegular() && filepath.Base(p) != "ca-bundle.pem" {
			files = append(files, p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(strings.Join(files, "\n"), "ca-key.pem") {
		t.Fatalf("the data directory holds no CA key yet: %v", files)
	}
	archive := gameServerArchive(t, map[string]archiveFile{
		"run.sh":          {body: probeScript, mode: 0o755},
		"probe-files":     {body: strings.Join(files, "\n") + "\n", mode: 0o644},
		"probe-data-dir":  {body: h.DataDir, mode: 0o644},
		"probe-hoist-pid": {body: strconv.Itoa(h.PID()), mode: 0o644},
	})
	buildID, err := e.createBuild(t, "confinement", archive)
	if err != nil {
		t.Fatal(err)
	}
	e.waitBuild(t, buildID, "READY")
	fleetID := e.newFleet(t, fleetSpec{name: "confinement", build: buildID, launchPath: "/local/game/run.sh"})

	roots := instanceGlob(h.DataDir, fleetID, "*", "game")
	if len(roots) != 1 {
		t.Fatalf("game roots of fleet %s: %v", fleetID, roots)
	}
	probe, err := os.ReadFile(filepath.Join(roots[0], "probe.txt"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(probe)), "\n")
	if len(lines) == 0 || lines[0] == "uid 0" || !strings.HasPrefix(lines[0], "uid ") {
		t.Errorf("the game server runs as %q, want an unprivileged user", lines[0])
	}
	for _, l := range lines[1:] {
		t.Errorf("the game server could: %s", l)
	}
	envText, err := os.ReadFile(filepath.Join(roots[0], "probe-env.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(envText), secret) || strings.Contains(string(envText), hoisttest.SecretAccessKey) {
		t.Errorf("a secret of Hoist's environment reached the game server:\n%s", envText)
	}
	for _, kv := range strings.Split(strings.TrimSpace(string(envText)), "\n") {
		k, _, _ := strings.Cut(kv, "=")
		switch {
		case k == "PATH" || k == "HOME" || k == "PWD" || k == "SHLVL" || k == "OLDPWD" || k == "_":
		case strings.HasPrefix(k, "GAMELIFT_SDK_"), k == "SSL_CERT_FILE":
		case strings.Contains(strings.Join(baseEnv, ","), k+"="):
		default:
			t.Errorf("the game server got %s, which is not in its documented environment", kv)
		}
	}

	// A second fleet, running at the same time, tries the first one's
	// files (game root, certificates) and its processes' environment: its
	// instance runs as another user, which can read none of it.
	var others []string
	filepath.WalkDir(filepath.Dir(roots[0]), func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			others = append(others, p)
		}
		return nil
	})
	for _, pid := range fleetPIDs(fleetID) {
		others = append(others, "/proc/"+strconv.Itoa(pid)+"/environ")
	}
	archive2 := gameServerArchive(t, map[string]archiveFile{
		"run.sh":          {body: probeScript, mode: 0o755},
		"probe-files":     {body: strings.Join(others, "\n") + "\n", mode: 0o644},
		"probe-data-dir":  {body: h.DataDir, mode: 0o644},
		"probe-hoist-pid": {body: strconv.Itoa(h.PID()), mode: 0o644},
	})
	build2, err := e.createBuild(t, "confinement-2", archive2)
	if err != nil {
		t.Fatal(err)
	}
	e.waitBuild(t, build2, "READY")
	fleet2 := e.newFleet(t, fleetSpec{name: "confinement-2", build: build2, launchPath: "/local/game/run.sh"})
	roots2 := instanceGlob(h.DataDir, fleet2, "*", "game")
	if len(roots2) != 1 {
		t.Fatalf("game roots of fleet %s: %v", fleet2, roots2)
	}
	probe2, err := os.ReadFile(filepath.Join(roots2[0], "probe.txt"))
	if err != nil {
		t.Fatal(err)
	}
	lines2 := strings.Split(strings.TrimSpace(string(probe2)), "\n")
	if lines2[0] == lines[0] || lines2[0] == "uid 0" {
		t.Errorf("the second fleet's game server runs as %q, the first's as %q: want two unprivileged users", lines2[0], lines[0])
	}
	for _, l := range lines2[1:] {
		t.Errorf("the second fleet's game server could: %s", l)
	}
	e.deleteFleet(t, fleet2)
	e.deleteFleet(t, fleetID)
}

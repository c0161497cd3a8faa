package deploy

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/hoistgg/hoist/e2e/hoisttest"
)

// unitNames are the systemd units Hoist ships, in deploy/systemd/.
var unitNames = []string{"hoist.service", "hoist-agent.service", "hoist-anywhere.service"}

// unitsDir is deploy/systemd/ in the repository.
func unitsDir() string { return filepath.Join(hoisttest.RepoRoot(), "deploy", "systemd") }

// unit is a systemd unit file as systemd reads it: per section, the
// values of each key in the order given (comments and blank lines left
// out; Hoist's units continue no line).
type unit map[string]map[string][]string

// readUnit reads a unit file (or an environment file, whose lines all
// fall in the section "").
func readUnit(t *testing.T, path string) unit {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	u := unit{"": {}}
	section := ""
	sc := bufio.NewScanner(bytes.NewReader(b))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "" || line[0] == '#' || line[0] == ';':
		case strings.HasPrefix(line, "[") && strings.HasSuffix(line, "]"):
			section = line[1 : len(line)-1]
			if u[section] == nil {
				u[section] = map[string][]string{}
			}
		default:
			k, v, ok := strings.Cut(line, "=")
			if !ok || strings.HasSuffix(line, `\`) {
				t.Fatalf("%s:%d: %q is neither a section, a comment nor a single-line Key=Value", path, n, line)
			}
			k = strings.TrimSpace(k)
			u[section][k] = append(u[section][k], strings.TrimSpace(v))
		}
	}
	return u
}

// get is a key's value in a section: its last, as systemd takes it.
func (u unit) get(section, key string) string {
	vs := u[section][key]
	if len(vs) == 0 {
		return ""
	}
	return vs[len(vs)-1]
}

// TestUnitsVerify runs systemd-analyze verify on the shipped units, in a
// root of their own that has /usr/local/bin/hoist (the units' ExecStart);
// any warning (an unknown key, a value systemd cannot parse) fails it.
func TestUnitsVerify(t *testing.T) {
	if _, err := exec.LookPath("systemd-analyze"); err != nil {
		t.Skip("systemd-analyze is not installed (Debian: apt-get install systemd): the units are not verified")
	}
	root := t.TempDir()
	etc := filepath.Join(root, "etc", "systemd", "system")
	bin := filepath.Join(root, "usr", "local", "bin")
	for _, d := range []string{etc, bin} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// What ExecStart runs needs only to exist and be executable.
	if err := os.WriteFile(filepath.Join(bin, "hoist"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, name := range unitNames {
		b, err := os.ReadFile(filepath.Join(unitsDir(), name))
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(etc, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	args := append([]string{"verify", "--root=" + root, "--man=no", "--recursive-errors=no"}, paths...)
	out, err := exec.Command("systemd-analyze", args...).CombinedOutput()
	if err != nil || len(bytes.TrimSpace(out)) > 0 {
		t.Errorf("systemd-analyze %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// TestServeUnitKeepsGames holds hoist.service to what Hoist's restarts
// need (docs/configuration.md, "Restarts"): systemd signals hoist serve
// alone (KillMode=process: control-group and mixed would kill the local
// agent and its game servers), with SIGTERM to restart (the agent keeps
// the games for the next Hoist) and SIGINT to stop (Hoist ends them
// gracefully), and waits longer than --shutdown-grace; and no directive
// that stops Hoist from hosting: its game servers run as other accounts it
// creates (useradd writes /etc), under an init in PID and mount namespaces
// of their own, and outlive a restart (a private /tmp would be deleted
// under them).
func TestServeUnitKeepsGames(t *testing.T) {
	u := readUnit(t, filepath.Join(unitsDir(), "hoist.service"))
	for key, want := range map[string]string{
		"KillMode": "process", "KillSignal": "SIGINT", "RestartKillSignal": "SIGTERM",
		"User": "", "DynamicUser": "", "PrivateTmp": "", "PrivateUsers": "", "RestrictNamespaces": "",
		"SystemCallFilter": "", "CapabilityBoundingSet": "", "AmbientCapabilities": "",
		"ProtectProc": "", "MemoryDenyWriteExecute": "", "ReadOnlyPaths": "", "InaccessiblePaths": "",
	} {
		if got := u.get("Service", key); got != want {
			t.Errorf("hoist.service: %s=%s, want %q", key, got, want)
		}
	}
	if ps := u.get("Service", "ProtectSystem"); ps == "full" || ps == "strict" {
		t.Errorf("hoist.service: ProtectSystem=%s makes /etc read-only: useradd cannot create the game servers' accounts", ps)
	}
	stop, err := time.ParseDuration(u.get("Service", "TimeoutStopSec"))
	if err != nil || stop <= 30*time.Second {
		t.Errorf("hoist.service: TimeoutStopSec=%s (%v), want more than --shutdown-grace's 30s", u.get("Service", "TimeoutStopSec"), err)
	}
	for _, name := range []string{"hoist-agent.service", "hoist-anywhere.service"} {
		a := readUnit(t, filepath.Join(unitsDir(), name))
		if km := a.get("Service", "KillMode"); km != "mixed" {
			t.Errorf("%s: KillMode=%s, want mixed: SIGTERM to the agent, which ends its game servers itself", name, km)
		}
	}
}

// TestServeUnitSignals runs hoist serve as hoist.service has systemd run
// it, with the signals the unit names, sent to hoist serve alone
// (KillMode=process): after the restart signal the local agent still runs
// and the next Hoist takes it back; after the stop signal it has ended.
// (TestRestartEndsNoGame, e2e/hosting, shows that game servers and their
// sessions go on through the restart.)
func TestServeUnitSignals(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the local agent and the units are for Linux")
	}
	u := readUnit(t, filepath.Join(unitsDir(), "hoist.service"))
	if km := u.get("Service", "KillMode"); km != "process" {
		t.Fatalf("hoist.service: KillMode=%s: systemd would signal the local agent too", km)
	}
	restart, stop := signalNamed(t, u.get("Service", "RestartKillSignal")), signalNamed(t, u.get("Service", "KillSignal"))
	dataDir := filepath.Join(t.TempDir(), "data")
	_ = os.Chmod(filepath.Dir(dataDir), 0o711) // the game accounts pass through it
	t.Cleanup(func() { _ = hoisttest.StopLocalAgent(dataDir, 30*time.Second) })

	h := serve(t, dataDir)
	agent := waitAgentConnected(t, dataDir, 1)
	if err := h.StopWith(restart, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	t.Logf("hoist serve stopped with %s (RestartKillSignal); its local agent is process %d", unix.SignalName(restart), agent)
	if !running(agent) {
		t.Fatalf("RestartKillSignal=%s to hoist serve ended its local agent (process %d)", unix.SignalName(restart), agent)
	}
	h = serve(t, dataDir)
	if again := waitAgentConnected(t, dataDir, 2); again != agent {
		t.Fatalf("after the restart the local agent is process %d, want %d (the one that kept running)", again, agent)
	}
	t.Logf("the next hoist serve took the local agent back")
	if err := h.StopWith(stop, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	t.Logf("hoist serve stopped with %s (KillSignal)", unix.SignalName(stop))
	if !exits(agent, 30*time.Second) {
		t.Errorf("KillSignal=%s to hoist serve left its local agent (process %d) running", unix.SignalName(stop), agent)
	}
}

// signalNamed is the signal a unit names (SIGTERM, SIGINT, ...).
func signalNamed(t *testing.T, name string) syscall.Signal {
	t.Helper()
	s := unix.SignalNum(name)
	if s == 0 {
		t.Fatalf("%q is not a signal", name)
	}
	return s
}

// serve starts hoist serve on dataDir with its defaults but the listeners
// (kernel-chosen loopback ports, no TLS): the local agent among them.
func serve(t *testing.T, dataDir string) *hoisttest.Process {
	t.Helper()
	p, err := hoisttest.Launch("hoist", hoisttest.Binary(t), hoisttest.ServeArgs(dataDir, false), nil, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.StopWith(syscall.SIGINT, 30*time.Second) })
	return p
}

// connectedLine is what the local agent logs each time it connects to Hoist.
var connectedLine = regexp.MustCompile(`msg="agent: connected to Hoist"`)

// waitAgentConnected waits until the local agent of dataDir has connected
// to Hoist n times in all (its log says so) and returns its process ID.
func waitAgentConnected(t *testing.T, dataDir string, n int) int {
	t.Helper()
	dir := filepath.Join(dataDir, "local-host")
	deadline := time.Now().Add(60 * time.Second)
	for {
		log, _ := os.ReadFile(filepath.Join(dir, "agent.log"))
		lock, _ := os.ReadFile(filepath.Join(dir, "agent.lock"))
		pid, err := strconv.Atoi(strings.TrimSpace(string(lock)))
		if len(connectedLine.FindAll(log, -1)) >= n && err == nil && pid > 1 {
			return pid
		}
		if time.Now().After(deadline) {
			t.Fatalf("the local agent did not connect %d times within 60s; its log:\n%s", n, log)
		}
		<-time.After(20 * time.Millisecond) // polling files the agent writes
	}
}

// running reports whether process pid exists.
func running(pid int) bool { return syscall.Kill(pid, 0) == nil }

// exits waits up to d for process pid (not a child of this one) to end.
func exits(pid int, d time.Duration) bool {
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return true // gone already
	}
	defer unix.Close(fd)
	n, err := unix.Poll([]unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}, int(d.Milliseconds()))
	return err == nil && n == 1
}

// unitVariable is a variable ExecStart uses: ${NAME} or $NAME.
var unitVariable = regexp.MustCompile(`\$\{?([A-Za-z_][A-Za-z0-9_]*)\}?`)

// TestUnitFlags: the flags the units and their settings files give hoist
// are flags of the command they run, the variables ExecStart uses are set
// in its settings file, and every HOIST_* variable of
// hoist.env is a setting of hoist serve; so a renamed flag or setting
// fails here, not on a production machine.
func TestUnitFlags(t *testing.T) {
	bin := hoisttest.Binary(t)
	for _, name := range unitNames {
		u := readUnit(t, filepath.Join(unitsDir(), name))
		words := strings.Fields(u.get("Service", "ExecStart"))
		if len(words) < 2 || words[0] != "/usr/local/bin/hoist" {
			t.Fatalf("%s: ExecStart=%s, want /usr/local/bin/hoist COMMAND ...", name, u.get("Service", "ExecStart"))
		}
		helpArgs := []string{words[1], "--help"}
		if slices.Contains(words, "--pool") {
			helpArgs = []string{"agent", "--pool", "x", "--help"}
		}
		help := helpOf(t, bin, helpArgs...)
		env := readUnit(t, filepath.Join(unitsDir(), filepath.Base(u.get("Service", "EnvironmentFile"))))
		for _, m := range unitVariable.FindAllStringSubmatch(u.get("Service", "ExecStart"), -1) {
			if env[""][m[1]] == nil {
				t.Errorf("%s: ExecStart uses $%s, which its settings file does not set", name, m[1])
			}
			words = append(words, strings.Fields(env.get("", m[1]))...)
		}
		for _, w := range words {
			flag, _, _ := strings.Cut(w, "=")
			if strings.HasPrefix(flag, "--") && !strings.Contains(help, "\n  -"+flag[2:]+" ") && !strings.Contains(help, "\n  -"+flag[2:]+"\n") {
				t.Errorf("%s: hoist %s has no flag %s", name, strings.Join(helpArgs, " "), flag)
			}
		}
	}
	help := helpOf(t, bin, "serve", "--help")
	for _, line := range readLines(t, filepath.Join(unitsDir(), "hoist.env")) {
		line = strings.TrimPrefix(line, "#")
		if v, _, ok := strings.Cut(line, "="); ok && strings.HasPrefix(v, "HOIST_") && !regexp.MustCompile(`\b`+v+`\b`).MatchString(help) {
			t.Errorf("hoist.env: %s is not a setting of hoist serve", v)
		}
	}
}

// helpOf is the usage text hoist prints for args.
func helpOf(t *testing.T, bin string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, _ := exec.CommandContext(ctx, bin, args...).CombinedOutput() // --help exits 0 or 2
	if !bytes.Contains(out, []byte("usage:")) {
		t.Fatalf("hoist %s: no usage text:\n%s", strings.Join(args, " "), out)
	}
	return string(out)
}

// readLines reads a file's lines.
func readLines(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(string(b), "\n")
}

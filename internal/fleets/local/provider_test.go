//go:build linux

package local

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hoistgg/hoist/internal/fleets"
)

var processIDPattern = regexp.MustCompile(`^process-[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)

func TestNewRefusesNoDir(t *testing.T) {
	if _, err := New(Config{}); err == nil {
		t.Fatal("New without Dir succeeded")
	}
}

// TestInstanceRunsItsRuntimeConfiguration: the layout, the build in the
// game root, ConcurrentExecutions processes per entry in order and
// staggered, output captured, and StopInstance.
func TestInstanceRunsItsRuntimeConfiguration(t *testing.T) {
	t.Parallel()
	const stagger = 150 * time.Millisecond
	f := newFixture(t, func(c *Config) { c.Stagger = stagger })
	f.script("server.sh", "echo \"out $GAMELIFT_SDK_PROCESS_ID $*\"\necho \"err $GAMELIFT_SDK_PROCESS_ID\" >&2\n"+sleeper)
	f.script("bin/other.sh", sleeper)
	f.file("data/map.txt", "map", 0o644)

	layout := f.p.Layout("fleet-1", "i-1")
	dir := filepath.Join(f.cfg.Dir, "fleet-1", "i-1")
	if want := (fleets.InstanceLayout{Dir: dir, GameRoot: filepath.Join(dir, "game"),
		CertificateDir: filepath.Join(dir, "certificates")}); layout != want {
		t.Fatalf("Layout = %+v, want %+v", layout, want)
	}
	r := f.start("fleet-1", "i-1", sp("/local/game/server.sh", "-a 'b c'", 2), sp("/local/game/bin/other.sh", "", 1))
	starts := r.waitStarts(3)

	r.snapshot(func() {
		if want := []fleets.Step{fleets.StepDownload, fleets.StepValidate, fleets.StepBuild, fleets.StepActivate}; !slices.Equal(r.steps, want) {
			t.Errorf("steps %v, want %v (no install script)", r.steps, want)
		}
	})
	for i, want := range []struct{ lp, params string }{
		{"/local/game/server.sh", "-a 'b c'"}, {"/local/game/server.sh", "-a 'b c'"}, {"/local/game/bin/other.sh", ""},
	} {
		s := starts[i]
		if s.LaunchPath != want.lp || s.Parameters != want.params {
			t.Errorf("process %d runs %s %q, want %s %q", i, s.LaunchPath, s.Parameters, want.lp, want.params)
		}
		if !processIDPattern.MatchString(s.ProcessID) {
			t.Errorf("process ID %q is not process-<uuid>", s.ProcessID)
		}
		if s.OutputPath != filepath.Join(dir, "logs", s.ProcessID+".log") {
			t.Errorf("process %s writes its output to %s", s.ProcessID, s.OutputPath)
		}
		if i > 0 {
			if gap := s.StartedAt.Sub(starts[i-1].StartedAt); gap < stagger {
				t.Errorf("process %d started %v after the one before, want at least the stagger %v", i, gap, stagger)
			}
		}
	}
	if starts[0].ProcessID == starts[1].ProcessID {
		t.Fatal("two processes share an ID")
	}
	for _, s := range starts[:2] {
		out, err := os.ReadFile(s.OutputPath)
		if err != nil {
			t.Fatal(err)
		}
		if want := "out " + s.ProcessID + " -a b c\nerr " + s.ProcessID + "\n"; string(out) != want {
			t.Errorf("output of %s = %q, want %q", s.ProcessID, out, want)
		}
	}
	if data, err := os.ReadFile(filepath.Join(layout.GameRoot, "data", "map.txt")); err != nil || string(data) != "map" {
		t.Errorf("the build's data/map.txt in the game root: %q, %v", data, err)
	}
	if _, err := os.Stat(layout.CertificateDir); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("an instance without a certificate has %s (%v)", layout.CertificateDir, err)
	}
	if got := f.p.Instances(); len(got) != 1 || got[0] != (fleets.InstanceRef{FleetID: "fleet-1", InstanceID: "i-1", Location: "us-west-2"}) {
		t.Errorf("Instances = %+v", got)
	}

	if err := f.p.StopInstance("i-1", "scale-in"); err != nil {
		t.Fatal(err)
	}
	r.waitStopped()
	r.snapshot(func() {
		if len(r.starts) != 3 {
			t.Errorf("%d processes started, want 3 (none after StopInstance)", len(r.starts))
		}
		for _, e := range r.exits {
			if e.StopReason != "scale-in" || e.Killed || e.Signal != "terminated" || e.ExitCode != -1 {
				t.Errorf("exit %+v, want ended by SIGTERM (askTerm) for scale-in", e)
			}
		}
	})
	if _, err := os.Stat(dir); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the stopped instance's directory is still there (%v)", err)
	}
	if got := f.p.Instances(); len(got) != 0 {
		t.Errorf("Instances after InstanceStopped = %+v", got)
	}
	if err := f.p.StopInstance("i-1", "again"); !errors.Is(err, fleets.ErrUnknownInstance) {
		t.Errorf("StopInstance of a stopped instance = %v", err)
	}
}

// TestProcessEnvironmentArgumentsAndDirectory: each process gets PATH, HOME
// (the instance's home/), the instance's variables and its own
// GAMELIFT_SDK_PROCESS_ID, and nothing else of Hoist's environment; its
// Parameters split into arguments, and the game root as working directory.
func TestProcessEnvironmentArgumentsAndDirectory(t *testing.T) {
	for k, v := range map[string]string{"HOIST_CREDENTIALS": "AKID:SECRET", "HOIST_DATA_DIR": "/var/hoist",
		"hoist_lower": "x", "AWS_SECRET_ACCESS_KEY": "aws-secret", "AWS_ACCESS_KEY_ID": "AKID", "Aws_Profile": "p",
		"GAMELIFT_REGION": "us-east-1", "GAMELIFT_SDK_PROCESS_ID": "stale", "GAMELIFT_SDK_AUTH_TOKEN": "stale-token",
		"FOO_SECRET": "not for games", "PATH": "/usr/local/bin:/usr/bin:/bin"} {
		t.Setenv(k, v)
	}
	f := newFixture(t, nil) // New reads the environment
	f.script("server.sh", `env > "env-$GAMELIFT_SDK_PROCESS_ID"
for a in "$@"; do printf '[%s]\n' "$a"; done > "args-$GAMELIFT_SDK_PROCESS_ID"
pwd -P > "pwd-$GAMELIFT_SDK_PROCESS_ID"
`+sleeper)
	spec := f.spec("fleet-1", "i-1", sp("/local/game/server.sh", `-port 7777 -name "two words" 'single $HOME' back\ slash "q\"uote" ""`, 2))
	instanceEnv := map[string]string{"GAMELIFT_SDK_WEBSOCKET_URL": "ws://127.0.0.1:9080/sdk", "GAMELIFT_SDK_AUTH_TOKEN": "0123abcd",
		"GAMELIFT_SDK_FLEET_ID": "fleet-1", "GAMELIFT_SDK_HOST_ID": "i-1", "HEALTHCHECK_INTERVAL": "5"}
	for k, v := range instanceEnv {
		spec.Env = append(spec.Env, k+"="+v)
	}
	r := f.startSpec(spec)
	starts := r.waitStarts(2)
	root, err := filepath.EvalSymlinks(f.p.Layout("fleet-1", "i-1").GameRoot)
	if err != nil {
		t.Fatal(err)
	}
	if starts[0].ProcessID == starts[1].ProcessID {
		t.Fatal("two processes share an ID")
	}
	for _, s := range starts {
		id := s.ProcessID
		data, err := os.ReadFile(filepath.Join(root, "env-"+id))
		if err != nil {
			t.Fatalf("the process did not write its environment in the game root: %v", err)
		}
		env := map[string]string{}
		for _, kv := range strings.Split(strings.TrimSpace(string(data)), "\n") {
			k, v, _ := strings.Cut(kv, "=")
			env[k] = v
		}
		if env["GAMELIFT_SDK_PROCESS_ID"] != id {
			t.Errorf("GAMELIFT_SDK_PROCESS_ID = %q, want %q", env["GAMELIFT_SDK_PROCESS_ID"], id)
		}
		for k, v := range instanceEnv {
			if env[k] != v {
				t.Errorf("%s = %q, want the instance's %q", k, env[k], v)
			}
		}
		if env["PATH"] != "/usr/local/bin:/usr/bin:/bin" || env["HOME"] != filepath.Join(f.p.Layout("fleet-1", "i-1").Dir, "home") {
			t.Errorf("PATH=%q HOME=%q, want Hoist's PATH and the instance's home/", env["PATH"], env["HOME"])
		}
		for k, v := range env {
			switch k {
			case "PATH", "HOME", "GAMELIFT_SDK_PROCESS_ID", "PWD", "OLDPWD", "SHLVL", "_": // the shell adds the last four
				continue
			}
			if _, ok := instanceEnv[k]; !ok {
				t.Errorf("the process got %s=%s, which is neither PATH, HOME nor the instance's", k, v)
			}
		}
		args, err := os.ReadFile(filepath.Join(root, "args-"+id))
		if err != nil {
			t.Fatal(err)
		}
		if want := "[-port]\n[7777]\n[-name]\n[two words]\n[single $HOME]\n[back slash]\n[q\"uote]\n[]\n"; string(args) != want {
			t.Errorf("arguments\n%s\nwant\n%s", args, want)
		}
		pwd, err := os.ReadFile(filepath.Join(root, "pwd-"+id))
		if err != nil || strings.TrimSpace(string(pwd)) != root {
			t.Errorf("working directory %q, %v; want the game root %s", pwd, err, root)
		}
	}
}

// TestLaunchPathMapping: /local/game/... and C:\game\... map into the game
// root, through symbolic links inside the build, from a build directory
// that is itself a symbolic link.
func TestLaunchPathMapping(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	f.script("bin/server.sh", sleeper)
	if err := os.Symlink("bin/server.sh", filepath.Join(f.build, "link.sh")); err != nil {
		t.Fatal(err)
	}
	linked := filepath.Join(t.TempDir(), "build-link")
	if err := os.Symlink(f.build, linked); err != nil {
		t.Fatal(err)
	}
	lps := []string{`C:\game\bin\server.sh`, "/local/game/link.sh", "/local/game//bin/./server.sh"}
	spec := f.spec("fleet-1", "i-1", sp(lps[0], "", 1), sp(lps[1], "", 1), sp(lps[2], "", 1))
	spec.BuildDir = linked
	r := f.startSpec(spec)
	starts := r.waitStarts(3)
	for i, s := range starts {
		if s.LaunchPath != lps[i] {
			t.Errorf("process %d runs %q, want %q", i, s.LaunchPath, lps[i])
		}
	}
}

// TestSetupFailures: a launch path that cannot be run is found while
// validating, before any process starts; a missing build fails the
// download. The instance is then stopped and removed.
func TestSetupFailures(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, launchPath string
		noBuild          bool
		step             fleets.Step
		msg              string
	}{
		{name: "outside /local/game", launchPath: "/opt/game/server.sh", step: fleets.StepValidate, msg: "is not under /local/game"},
		{name: "missing", launchPath: "/local/game/missing.sh", step: fleets.StepValidate, msg: "does not exist in the build"},
		{name: "climbing out", launchPath: "/local/game/../server.sh", step: fleets.StepValidate, msg: "leaves the game directory"},
		{name: "a directory", launchPath: "/local/game/bin", step: fleets.StepValidate, msg: "is not a file"},
		{name: "link out of the build", launchPath: "/local/game/escape.sh", step: fleets.StepValidate, msg: "does not exist in the build"},
		{name: "no build", launchPath: "/local/game/server.sh", noBuild: true, step: fleets.StepDownload, msg: "no such file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, nil)
			f.script("server.sh", sleeper)
			f.script("bin/tool.sh", sleeper)
			outside := filepath.Join(t.TempDir(), "outside.sh")
			if err := os.WriteFile(outside, []byte("#!/bin/sh\n"), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(outside, filepath.Join(f.build, "escape.sh")); err != nil {
				t.Fatal(err)
			}
			spec := f.spec("fleet-1", "i-1", sp(tt.launchPath, "", 1))
			if tt.noBuild {
				spec.BuildDir = filepath.Join(f.build, "nope")
			}
			r := f.startSpec(spec)
			r.waitStopped()
			r.snapshot(func() {
				if len(r.stepFails) != 1 || r.stepFails[0].step != tt.step || !strings.Contains(r.stepFails[0].err.Error(), tt.msg) {
					t.Fatalf("step failures %+v, want %s saying %q", r.stepFails, tt.step, tt.msg)
				}
				if last := r.steps[len(r.steps)-1]; last != tt.step {
					t.Errorf("steps %v end with %s, want %s", r.steps, last, tt.step)
				}
				if tt.step == fleets.StepValidate {
					var lp *fleets.LaunchPathError
					if !errors.As(r.stepFails[0].err, &lp) || lp.LaunchPath != tt.launchPath {
						t.Errorf("the failure %v is not a LaunchPathError for %s", r.stepFails[0].err, tt.launchPath)
					}
				}
				if len(r.starts) != 0 || len(r.launchFails) != 0 {
					t.Errorf("processes were launched: %v", r.log)
				}
			})
			if _, err := os.Stat(f.p.Layout("fleet-1", "i-1").Dir); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("the failed instance's directory is still there (%v)", err)
			}
			if got := f.p.Instances(); len(got) != 0 {
				t.Errorf("Instances = %+v", got)
			}
		})
	}
}

// TestLaunchFailures: a launch path that exists but cannot be executed is
// reported by LaunchFailed, with the slot backing off, while the other
// slots run.
func TestLaunchFailures(t *testing.T) {
	t.Parallel()
	const base = 250 * time.Millisecond
	f := newFixture(t, func(c *Config) { c.CrashBackoff, c.MaxBackoff = base, time.Minute })
	f.file("noexec.sh", "#!/bin/sh\nexit 0\n", 0o644)
	f.script("server.sh", sleeper)
	r := f.start("fleet-1", "i-1", sp("/local/game/noexec.sh", "", 1), sp("/local/game/server.sh", "", 1))
	r.waitStarts(1)
	r.b.waitFor(t, "three failed launches", func() bool { return len(r.launchFails) >= 3 })
	r.snapshot(func() {
		if r.steps[len(r.steps)-1] != fleets.StepActivate || len(r.stepFails) != 0 {
			t.Errorf("steps %v, failures %v: validation should pass (the file exists)", r.steps, r.stepFails)
		}
		for i, lf := range r.launchFails[:3] {
			var lp *fleets.LaunchPathError
			if lf.launchPath != "/local/game/noexec.sh" || !errors.As(lf.err, &lp) || lp.LaunchPath != lf.launchPath ||
				!errors.Is(lf.err, fs.ErrPermission) {
				t.Errorf("launch failure %+v, want a LaunchPathError (permission denied) for /local/game/noexec.sh", lf)
			}
			// The hook runs after the failed exec, so allow for how long
			// that took (an init's start: longer under the race
			// detector).
			if i > 0 {
				if gap, want := lf.at.Sub(r.launchFails[i-1].at), backoff(i, base, time.Minute); gap < want-150*time.Millisecond {
					t.Errorf("failed launch %d came %v after the one before, want about %v", i, gap, want)
				}
			}
		}
		for _, s := range r.starts {
			if s.LaunchPath != "/local/game/server.sh" {
				t.Errorf("started %+v", s)
			}
		}
	})
	if got := f.p.Instances(); len(got) != 1 {
		t.Errorf("a failed launch stopped the instance: %+v", got)
	}
}

// TestInstallScript: install.sh runs once, in the game root, before the
// launch paths are validated; its failure or timeout fails the instance;
// stopping the instance ends it.
func TestInstallScript(t *testing.T) {
	t.Parallel()
	t.Run("runs", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t, nil)
		f.file("install.sh", "pwd -P > installed\necho installing\necho warning >&2\nenv > install.env\n", 0o644)
		f.script("server.sh", "test -f installed || exit 9\n"+sleeper)
		spec := f.spec("fleet-1", "i-1", sp("/local/game/server.sh", "", 1))
		spec.Env = []string{"GAMELIFT_SDK_AUTH_TOKEN=secret-token"}
		r := f.startSpec(spec)
		r.waitStarts(1)
		r.snapshot(func() {
			want := []fleets.Step{fleets.StepDownload, fleets.StepInstall, fleets.StepValidate, fleets.StepBuild, fleets.StepActivate}
			if !slices.Equal(r.steps, want) {
				t.Errorf("steps %v, want %v", r.steps, want)
			}
		})
		layout := f.p.Layout("fleet-1", "i-1")
		root, _ := filepath.EvalSymlinks(layout.GameRoot)
		if data, err := os.ReadFile(filepath.Join(root, "installed")); err != nil || strings.TrimSpace(string(data)) != root {
			t.Errorf("install.sh ran in %q (%v), want the game root %s", data, err, root)
		}
		if data, err := os.ReadFile(filepath.Join(layout.Dir, "logs", "install.log")); err != nil || string(data) != "installing\nwarning\n" {
			t.Errorf("logs/install.log = %q, %v", data, err)
		}
		if data, err := os.ReadFile(filepath.Join(root, "install.env")); err != nil || strings.Contains(string(data), "GAMELIFT_SDK_") {
			t.Errorf("install.sh got the server processes' environment (%v):\n%s", err, data)
		}
	})
	t.Run("fails", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t, func(c *Config) { c.KeepDirs = true })
		f.file("install.sh", "echo 'cannot install libfoo'\nexit 7\n", 0o755)
		f.script("server.sh", sleeper)
		r := f.start("fleet-1", "i-1", sp("/local/game/server.sh", "", 1))
		r.waitStopped()
		r.snapshot(func() {
			if want := []fleets.Step{fleets.StepDownload, fleets.StepInstall}; !slices.Equal(r.steps, want) {
				t.Errorf("steps %v, want %v", r.steps, want)
			}
			if len(r.stepFails) != 1 || r.stepFails[0].step != fleets.StepInstall {
				t.Fatalf("step failures %+v, want INSTALL", r.stepFails)
			}
			msg := r.stepFails[0].err.Error()
			for _, want := range []string{"install.sh", "exit status 7", "cannot install libfoo"} {
				if !strings.Contains(msg, want) {
					t.Errorf("the failure %q does not say %q", msg, want)
				}
			}
			if len(r.starts) != 0 {
				t.Errorf("processes started after a failed install")
			}
		})
		if data, err := os.ReadFile(filepath.Join(f.p.Layout("fleet-1", "i-1").Dir, "logs", "install.log")); err != nil ||
			string(data) != "cannot install libfoo\n" {
			t.Errorf("with KeepDirs, logs/install.log = %q, %v", data, err)
		}
	})
	t.Run("times out", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t, func(c *Config) { c.InstallTimeout = 300 * time.Millisecond })
		f.file("install.sh", "R="+shellQuote(f.fifo)+"\nsleep 600 &\necho \"child - $!\" > \"$R\"\nwait\n", 0o644)
		f.script("server.sh", sleeper)
		r := f.start("fleet-1", "i-1", sp("/local/game/server.sh", "", 1))
		r.waitStopped()
		r.snapshot(func() {
			if len(r.stepFails) != 1 || r.stepFails[0].step != fleets.StepInstall ||
				!strings.Contains(r.stepFails[0].err.Error(), "did not finish within 300ms") {
				t.Fatalf("step failures %+v, want INSTALL timing out", r.stepFails)
			}
		})
		r.b.waitFor(t, "the install script's child", func() bool { return len(r.b.pids) == 1 })
		waitDead(t, r.b.allPIDs()...)
	})
	t.Run("stopped", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t, nil)
		f.file("install.sh", "R="+shellQuote(f.fifo)+"\necho \"install - $$\" > \"$R\"\nsleep 600 &\necho \"child - $!\" > \"$R\"\nwait\n", 0o644)
		f.script("server.sh", sleeper)
		r := f.start("fleet-1", "i-1", sp("/local/game/server.sh", "", 1))
		r.b.waitFor(t, "the install script's child", func() bool { return len(r.b.pids) == 2 })
		if err := f.p.StopInstance("i-1", "fleet deleting"); err != nil {
			t.Fatal(err)
		}
		r.waitStopped()
		r.snapshot(func() {
			if len(r.stepFails) != 0 || len(r.starts) != 0 {
				t.Errorf("stopping during install: %v", r.log)
			}
		})
		waitDead(t, r.b.allPIDs()...)
	})
}

// TestCrashedProcessesAreRelaunchedWithBackoff: a process that ends unasked
// is reported and replaced; quick failures double the wait up to
// MaxBackoff.
func TestCrashedProcessesAreRelaunchedWithBackoff(t *testing.T) {
	t.Parallel()
	const base, limit = 60 * time.Millisecond, 200 * time.Millisecond
	f := newFixture(t, func(c *Config) { c.CrashBackoff, c.MaxBackoff = base, limit })
	f.script("crash.sh", "report started $GAMELIFT_SDK_PROCESS_ID $$\nexit 3\n")
	f.script("killed.sh", "report started $GAMELIFT_SDK_PROCESS_ID $$\nkill -KILL $$\n")
	r := f.start("fleet-1", "i-1", sp("/local/game/crash.sh", "", 1))
	rk := f.start("fleet-1", "i-2", sp("/local/game/killed.sh", "", 1))

	const n = 5
	r.b.waitFor(t, "5 crashes", func() bool { return len(r.exits) >= n })
	r.snapshot(func() {
		for i, e := range r.exits[:n] {
			s := r.starts[i]
			if e.ProcessID != s.ProcessID || e.ExitCode != 3 || e.Signal != "" || e.StopReason != "" || e.Killed {
				t.Errorf("exit %d: %+v, want %s exiting with code 3 on its own", i, e, s.ProcessID)
			}
			if i+1 < len(r.starts) {
				gap, want := r.starts[i+1].StartedAt.Sub(s.StartedAt.Add(e.Uptime)), backoff(i+1, base, limit)
				if gap < want {
					t.Errorf("relaunch %d came %v after the crash, want at least %v", i+1, gap, want)
				}
			}
		}
	})
	if in := f.instance("i-1"); in != nil {
		in.mu.Lock()
		failures := in.failures[slot{"/local/game/crash.sh", ""}]
		in.mu.Unlock()
		if failures < n {
			t.Errorf("%d failures recorded after %d crashes", failures, n)
		}
	}

	rk.b.waitFor(t, "a process killed by a signal", func() bool { return len(rk.exits) >= 1 })
	rk.snapshot(func() {
		if e := rk.exits[0]; e.ExitCode != -1 || e.Signal != "killed" || e.StopReason != "" || e.Killed {
			t.Errorf("exit %+v, want ended by SIGKILL on its own", e)
		}
	})
}

// TestQuickExitsThatAreNotFailures: exiting with status 0, or after
// MinUptime, does not make the slot back off.
func TestQuickExitsThatAreNotFailures(t *testing.T) {
	t.Parallel()
	const minUptime = 200 * time.Millisecond
	// With an hour of backoff, a relaunch proves no failure was counted.
	f := newFixture(t, func(c *Config) {
		c.CrashBackoff, c.MaxBackoff, c.MinUptime, c.Stagger = time.Hour, time.Hour, minUptime, 20*time.Millisecond
	})
	f.script("done.sh", "report started $GAMELIFT_SDK_PROCESS_ID $$\nexit 0\n")
	f.script("late.sh", "report started $GAMELIFT_SDK_PROCESS_ID $$\nsleep 0.3\nexit 1\n")
	r0 := f.start("fleet-1", "i-1", sp("/local/game/done.sh", "", 1))
	r1 := f.start("fleet-1", "i-2", sp("/local/game/late.sh", "", 1))
	r0.waitStarts(3)
	if err := f.p.StopInstance("i-1", "done"); err != nil {
		t.Fatal(err)
	}
	r1.waitStarts(2)
	r1.snapshot(func() {
		if e := r1.exits[0]; e.ExitCode != 1 || e.Uptime < minUptime {
			t.Errorf("exit %+v, want code 1 after MinUptime", e)
		}
	})
	if in := f.instance("i-2"); in != nil {
		in.mu.Lock()
		n := len(in.failures)
		in.mu.Unlock()
		if n != 0 {
			t.Errorf("failures recorded for a process that ran longer than MinUptime")
		}
	}
}

// TestStopProcess: asked with AskToEnd, killed with its group after the
// grace period, SIGTERM and KillGrace when it cannot be asked, at once on
// a second call, and replaced.
func TestStopProcess(t *testing.T) {
	t.Parallel()
	t.Run("asked and ends", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t, nil) // askTerm
		f.script("server.sh", sleeper)
		r := f.start("fleet-1", "i-1", sp("/local/game/server.sh", "-port 1", 1))
		p := r.waitStarts(1)[0]
		before := time.Now()
		if err := f.p.StopProcess(p.ProcessID, "SERVER_PROCESS_TERMINATED_UNHEALTHY"); err != nil {
			t.Fatal(err)
		}
		e, _ := r.waitExit(p.ProcessID)
		after := time.Now()
		if e.StopReason != "SERVER_PROCESS_TERMINATED_UNHEALTHY" || e.Killed || e.Signal != "terminated" {
			t.Errorf("exit %+v, want ended by itself after being asked", e)
		}
		r.snapshot(func() {
			if len(r.asks) != 1 || r.asks[0].processID != p.ProcessID ||
				r.asks[0].deadline.Before(before.Add(time.Hour)) || r.asks[0].deadline.After(after.Add(time.Hour)) {
				t.Errorf("asks %+v, want one for %s with a deadline TerminateGrace (1h) ahead", r.asks, p.ProcessID)
			}
		})
		next := r.waitStarts(2)[1]
		if next.ProcessID == p.ProcessID || next.LaunchPath != p.LaunchPath || next.Parameters != p.Parameters {
			t.Errorf("replacement %+v of %+v", next, p)
		}
		if err := f.p.StopProcess(p.ProcessID, "again"); !errors.Is(err, fleets.ErrUnknownProcess) {
			t.Errorf("StopProcess of an ended process = %v", err)
		}
	})
	t.Run("ignores the request: killed after TerminateGrace", func(t *testing.T) {
		t.Parallel()
		const grace = 300 * time.Millisecond
		f := newFixture(t, func(c *Config) { c.TerminateGrace = grace })
		f.ask = askIgnored
		f.script("server.sh", stubborn)
		r := f.start("fleet-1", "i-1", sp("/local/game/server.sh", "", 1))
		p := r.waitStarts(1)[0]
		pid, child := r.b.pid(t, p.ProcessID), r.b.childOf(t, p.ProcessID)
		before := time.Now()
		if err := f.p.StopProcess(p.ProcessID, "FORCE_TERMINATED"); err != nil {
			t.Fatal(err)
		}
		e, at := r.waitExit(p.ProcessID)
		if e.StopReason != "FORCE_TERMINATED" || !e.Killed || e.Signal != "killed" || e.ExitCode != -1 {
			t.Errorf("exit %+v, want killed after its grace", e)
		}
		if at.Sub(before) < grace {
			t.Errorf("killed %v after StopProcess, before its grace of %v", at.Sub(before), grace)
		}
		waitDead(t, pid, child)
		r.waitStarts(2)
	})
	t.Run("cannot be asked: SIGTERM", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t, nil)
		f.ask = askFails
		f.script("server.sh", sleeper)
		r := f.start("fleet-1", "i-1", sp("/local/game/server.sh", "", 1))
		p := r.waitStarts(1)[0]
		if err := f.p.StopProcess(p.ProcessID, "scale-in"); err != nil {
			t.Fatal(err)
		}
		if e, _ := r.waitExit(p.ProcessID); e.Killed || e.Signal != "terminated" || e.StopReason != "scale-in" {
			t.Errorf("exit %+v, want ended by SIGTERM", e)
		}
	})
	t.Run("cannot be asked and ignores SIGTERM: killed after KillGrace", func(t *testing.T) {
		t.Parallel()
		const grace = 300 * time.Millisecond
		f := newFixture(t, func(c *Config) { c.KillGrace = grace }) // TerminateGrace 1h
		f.ask = askFails
		f.script("server.sh", stubborn)
		r := f.start("fleet-1", "i-1", sp("/local/game/server.sh", "", 1))
		p := r.waitStarts(1)[0]
		pid, child := r.b.pid(t, p.ProcessID), r.b.childOf(t, p.ProcessID)
		before := time.Now()
		if err := f.p.StopProcess(p.ProcessID, "scale-in"); err != nil {
			t.Fatal(err)
		}
		e, at := r.waitExit(p.ProcessID)
		if !e.Killed || e.Signal != "killed" {
			t.Errorf("exit %+v, want killed", e)
		}
		if at.Sub(before) < grace {
			t.Errorf("killed %v after StopProcess, before KillGrace %v", at.Sub(before), grace)
		}
		waitDead(t, pid, child)
	})
	t.Run("second call kills at once", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t, nil) // TerminateGrace 1h
		f.ask = askIgnored
		f.script("server.sh", stubborn)
		r := f.start("fleet-1", "i-1", sp("/local/game/server.sh", "", 1))
		p := r.waitStarts(1)[0]
		child := r.b.childOf(t, p.ProcessID)
		for _, reason := range []string{"first", "second"} {
			if err := f.p.StopProcess(p.ProcessID, reason); err != nil {
				t.Fatal(err)
			}
		}
		if e, _ := r.waitExit(p.ProcessID); !e.Killed || e.StopReason != "first" {
			t.Errorf("exit %+v, want killed, with the first reason", e)
		}
		waitDead(t, child)
	})
	t.Run("unknown", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t, nil)
		if err := f.p.StopProcess("process-nope", "x"); !errors.Is(err, fleets.ErrUnknownProcess) {
			t.Errorf("StopProcess of an unknown process = %v", err)
		}
		if err := f.p.StopInstance("i-nope", "x"); !errors.Is(err, fleets.ErrUnknownInstance) {
			t.Errorf("StopInstance of an unknown instance = %v", err)
		}
		f.p.UpdateRuntimeConfiguration("i-nope", rc(sp("/local/game/x", "", 1))) // no effect
	})
}

// TestKillProcess: killed with its group at once, never asked to end
// (FORCE_TERMINATE), and replaced.
func TestKillProcess(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil) // TerminateGrace 1h; the script ignores SIGTERM
	f.script("server.sh", stubborn)
	r := f.start("fleet-1", "i-1", sp("/local/game/server.sh", "", 1))
	p := r.waitStarts(1)[0]
	child := r.b.childOf(t, p.ProcessID)
	if err := f.p.KillProcess(p.ProcessID, "FORCE_TERMINATED"); err != nil {
		t.Fatal(err)
	}
	if e, _ := r.waitExit(p.ProcessID); !e.Killed || e.Signal != "killed" || e.StopReason != "FORCE_TERMINATED" {
		t.Errorf("exit %+v, want killed", e)
	}
	waitDead(t, child)
	r.snapshot(func() {
		if len(r.asks) != 0 {
			t.Errorf("asks %+v, want none", r.asks)
		}
	})
	r.waitStarts(2)
	if err := f.p.KillProcess(p.ProcessID, "again"); !errors.Is(err, fleets.ErrUnknownProcess) {
		t.Errorf("KillProcess of an ended process = %v", err)
	}
}

// TestStopInstance: every process is asked, then killed with its whole
// group after the grace; nothing is relaunched; InstanceStopped comes last.
func TestStopInstance(t *testing.T) {
	t.Parallel()
	t.Run("all processes", func(t *testing.T) {
		t.Parallel()
		const grace = 300 * time.Millisecond
		f := newFixture(t, func(c *Config) { c.TerminateGrace = grace })
		f.ask = askIgnored
		f.script("server.sh", stubborn)
		r := f.start("fleet-1", "i-1", sp("/local/game/server.sh", "", 2))
		starts := r.waitStarts(2)
		for _, s := range starts {
			r.b.childOf(t, s.ProcessID)
		}
		before := time.Now()
		if err := f.p.StopInstance("i-1", "scale-in"); err != nil {
			t.Fatal(err)
		}
		if err := f.p.StopInstance("i-1", "other reason"); err != nil {
			t.Errorf("StopInstance of a stopping instance = %v", err)
		}
		r.waitStopped()
		after := time.Now()
		r.snapshot(func() {
			if len(r.asks) != 2 {
				t.Errorf("asks %+v, want one per process", r.asks)
			}
			for _, a := range r.asks {
				if a.deadline.Before(before.Add(grace)) || a.deadline.After(after.Add(grace)) {
					t.Errorf("ask %+v: deadline not TerminateGrace ahead", a)
				}
			}
			for _, e := range r.exits {
				if e.StopReason != "scale-in" || !e.Killed {
					t.Errorf("exit %+v, want killed for scale-in", e)
				}
				if d := r.exitAt[e.ProcessID].Sub(before); d < grace {
					t.Errorf("process %s killed %v after StopInstance, before its grace", e.ProcessID, d)
				}
			}
			if len(r.starts) != 2 || len(r.exits) != 2 {
				t.Errorf("%d starts and %d exits, want 2 and 2", len(r.starts), len(r.exits))
			}
			if last := r.log[len(r.log)-1]; last != "instance stopped" {
				t.Errorf("last report %q", last)
			}
		})
		waitDead(t, r.b.allPIDs()...)
		if _, err := os.Stat(f.p.Layout("fleet-1", "i-1").Dir); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("the instance's directory is still there (%v)", err)
		}
	})
	t.Run("a process already ending keeps its grace", func(t *testing.T) {
		t.Parallel()
		const grace = 400 * time.Millisecond
		f := newFixture(t, func(c *Config) { c.TerminateGrace = grace })
		f.ask = askIgnored
		f.script("server.sh", stubborn)
		r := f.start("fleet-1", "i-1", sp("/local/game/server.sh", "", 2))
		starts := r.waitStarts(2)
		before := time.Now()
		if err := f.p.StopProcess(starts[0].ProcessID, "SERVER_PROCESS_TERMINATED_UNHEALTHY"); err != nil {
			t.Fatal(err)
		}
		if err := f.p.StopInstance("i-1", "scale-in"); err != nil {
			t.Fatal(err)
		}
		r.waitStopped()
		r.snapshot(func() {
			e := r.exit(starts[0].ProcessID)
			if e.StopReason != "SERVER_PROCESS_TERMINATED_UNHEALTHY" || !e.Killed {
				t.Errorf("exit %+v, want killed with the first reason", e)
			}
			if d := r.exitAt[e.ProcessID].Sub(before); d < grace {
				t.Errorf("the ending process was killed %v after StopProcess, before its grace %v", d, grace)
			}
			asked := 0
			for _, a := range r.asks {
				if a.processID == starts[0].ProcessID {
					asked++
				}
			}
			if asked != 1 {
				t.Errorf("the ending process was asked %d times", asked)
			}
		})
	})
}

// TestClose: Close ends every instance with ShutdownGrace, also processes
// already ending with a longer grace, returns when no process is left,
// and refuses new instances.
func TestClose(t *testing.T) {
	t.Parallel()
	const grace = 300 * time.Millisecond
	f := newFixture(t, func(c *Config) { c.ShutdownGrace = grace }) // TerminateGrace 1h
	f.ask = askIgnored
	f.script("server.sh", stubborn)
	ra := f.start("fleet-1", "i-1", sp("/local/game/server.sh", "", 2))
	rb := f.start("fleet-2", "i-2", sp("/local/game/server.sh", "", 1))
	ra.waitStarts(2)
	pb := rb.waitStarts(1)[0]
	rb.b.childOf(t, pb.ProcessID)
	if err := f.p.StopInstance("i-2", "scale-in"); err != nil { // asked with an hour of grace
		t.Fatal(err)
	}
	rb.b.waitFor(t, "i-2's process to be asked", func() bool { return len(rb.asks) == 1 })
	before := time.Now()
	took := f.close()
	if took < grace || took > waitLimit/2 {
		t.Errorf("Close took %v, want about ShutdownGrace %v", took, grace)
	}
	for _, r := range []*recorder{ra, rb} {
		r.snapshot(func() {
			if !r.stopped {
				t.Errorf("instance %s did not report InstanceStopped before Close returned", r.id)
			}
			for _, e := range r.exits {
				if !e.Killed {
					t.Errorf("exit %+v, want killed", e)
				}
			}
		})
	}
	ra.snapshot(func() {
		for _, a := range ra.asks {
			if d := a.deadline.Sub(before); d < grace || d > time.Minute {
				t.Errorf("Close asked %s to end within %v, want ShutdownGrace %v", a.processID, d, grace)
			}
		}
	})
	waitDead(t, f.b.allPIDs()...)
	if got := f.p.Instances(); len(got) != 0 {
		t.Errorf("Instances after Close = %+v", got)
	}
	if err := f.p.StartInstance(context.Background(), f.spec("fleet-1", "i-3", sp("/local/game/server.sh", "", 1)), &recorder{}); err == nil {
		t.Error("StartInstance after Close succeeded")
	}
}

func TestStartInstanceTwice(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	f.script("server.sh", sleeper)
	f.start("fleet-1", "i-1", sp("/local/game/server.sh", "", 1))
	if err := f.p.StartInstance(context.Background(), f.spec("fleet-1", "i-1"), &recorder{}); err == nil {
		t.Error("a second StartInstance of the same instance succeeded")
	}
}

// TestUpdateRuntimeConfiguration: running processes are left alone; new
// entries launch at once, and processes no longer wanted are not replaced.
func TestUpdateRuntimeConfiguration(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	f.script("a.sh", sleeper)
	f.script("b.sh", sleeper)
	rcA := rc(sp("/local/game/a.sh", "", 1))
	r := f.start("fleet-1", "i-1", rcA.ServerProcesses...)
	pa := r.waitStarts(1)[0]
	pidA := r.b.pid(t, pa.ProcessID)
	in := f.instance("i-1")
	idle := func(what string) {
		t.Helper()
		in.mu.Lock()
		_, launch, _ := nextLaunch(in.planInput(time.Now().Add(time.Hour)))
		in.mu.Unlock()
		if launch {
			t.Errorf("%s: the instance wants to launch a process", what)
		}
	}

	f.p.UpdateRuntimeConfiguration("i-1", rc(sp("/local/game/a.sh", "", 1))) // the same: nothing happens
	f.p.UpdateRuntimeConfiguration("i-1", rc(sp("/local/game/b.sh", "-b", 1)))
	pb := r.waitStarts(2)[1]
	if pb.LaunchPath != "/local/game/b.sh" || pb.Parameters != "-b" {
		t.Fatalf("after the update started %+v", pb)
	}
	if !alive(pidA) {
		t.Error("the update ended a running process")
	}
	// A ends: it is not replaced.
	if err := syscall.Kill(pidA, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if e, _ := r.waitExit(pa.ProcessID); e.StopReason != "" || e.Signal != "killed" {
		t.Errorf("exit %+v", e)
	}
	idle("after the old process ended")

	// More of B: one more starts. Fewer: none is stopped, and an ended one
	// is not replaced.
	f.p.UpdateRuntimeConfiguration("i-1", rc(sp("/local/game/b.sh", "-b", 2)))
	pb2 := r.waitStarts(3)[2]
	f.p.UpdateRuntimeConfiguration("i-1", rc(sp("/local/game/b.sh", "-b", 1)))
	idle("with more processes than wanted")
	if !alive(r.b.pid(t, pb.ProcessID)) || !alive(r.b.pid(t, pb2.ProcessID)) {
		t.Error("lowering ConcurrentExecutions ended a running process")
	}
	if err := f.p.StopProcess(pb.ProcessID, "test"); err != nil {
		t.Fatal(err)
	}
	r.waitExit(pb.ProcessID)
	idle("after one of two processes ended with one wanted")
	r.snapshot(func() {
		if len(r.starts) != 3 || len(r.asks) != 1 {
			t.Errorf("%d starts and asks %+v, want 3 starts and only the StopProcess ask", len(r.starts), r.asks)
		}
		for _, s := range r.starts[1:] {
			if s.LaunchPath != "/local/game/b.sh" {
				t.Errorf("started %+v after the update", s)
			}
		}
	})
}

// TestCertificates: the certificate files of a GENERATED fleet are written
// before any process starts, readable by the instance only.
func TestCertificates(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	f.script("server.sh", "test -f \"$CERTS/certificate.pem\" || exit 9\n"+sleeper)
	spec := f.spec("fleet-1", "i-1", sp("/local/game/server.sh", "", 1))
	layout := f.p.Layout("fleet-1", "i-1")
	spec.Env = []string{"CERTS=" + layout.CertificateDir}
	spec.Certificate = &fleets.CertificateFiles{Certificate: []byte("LEAF"), Chain: []byte("LEAF+CA"), PrivateKey: []byte("KEY"), Root: []byte("CA")}
	r := f.startSpec(spec)
	r.waitStarts(1)
	r.snapshot(func() {
		if len(r.exits) != 0 {
			t.Errorf("the process did not find its certificate: %v", r.log)
		}
	})
	if st, err := os.Stat(layout.CertificateDir); err != nil || st.Mode().Perm() != 0o700 {
		t.Errorf("certificate directory: %v, %v", st, err)
	}
	for name, want := range map[string]string{"certificate.pem": "LEAF", "certificateChain.pem": "LEAF+CA",
		"privateKey.pem": "KEY", "rootCertificate.pem": "CA"} {
		p := filepath.Join(layout.CertificateDir, name)
		data, err := os.ReadFile(p)
		st, _ := os.Stat(p)
		if err != nil || string(data) != want || st.Mode().Perm() != 0o600 {
			t.Errorf("%s = %q, %v (mode %v); want %q, 0600", name, data, err, st.Mode().Perm(), want)
		}
	}
}

// TestRelativeDir: a relative Config.Dir still launches processes (they
// start in their game root, so the launch path must be absolute).
func TestRelativeDir(t *testing.T) {
	t.Chdir(t.TempDir())
	f := newFixture(t, func(c *Config) { c.Dir = "instances" })
	f.script("server.sh", sleeper)
	if dir := f.p.Layout("fleet-1", "i-1").Dir; !filepath.IsAbs(dir) {
		t.Errorf("Layout gives the relative directory %s", dir)
	}
	r := f.start("fleet-1", "i-1", sp("/local/game/server.sh", "", 1))
	r.waitStarts(1)
	r.snapshot(func() {
		if len(r.launchFails) != 0 {
			t.Errorf("launch failed: %v", r.launchFails)
		}
	})
}

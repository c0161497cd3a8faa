//go:build linux

package local

import (
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/hoistgg/hoist/internal/fleets"
)

// TestHostPaths: with HostPaths (hoist agent's Anywhere compute) an
// instance places nothing; launch paths are absolute paths of this machine
// (anything else fails its launch); processes start in home/ with bare
// UUIDs as IDs; UpdateEnv gives later launches a new environment.
func TestHostPaths(t *testing.T) {
	t.Parallel()
	f := newFixture(t, func(c *Config) { c.HostPaths = true })
	f.script("server.sh", `env > "env-$GAMELIFT_SDK_PROCESS_ID"
pwd -P > "pwd-$GAMELIFT_SDK_PROCESS_ID"
`+sleeper)
	server := filepath.Join(f.build, "server.sh")
	spec := f.spec("fleet-1", "laptop-1", sp(server, "", 1), sp("server.sh", "", 1), sp(filepath.Join(f.build, "missing"), "", 1))
	spec.BuildDir, spec.Env = "", []string{"GAMELIFT_SDK_AUTH_TOKEN=first"}
	r := f.startSpec(spec)
	first := r.waitStarts(1)[0]
	r.b.waitFor(t, "both bad launch paths to fail", func() bool {
		bad := map[string]bool{}
		for _, lf := range r.launchFails {
			var lp *fleets.LaunchPathError
			if errors.As(lf.err, &lp) {
				bad[lp.LaunchPath] = true
			}
		}
		return bad["server.sh"] && bad[filepath.Join(f.build, "missing")]
	})
	layout := f.p.Layout("fleet-1", "laptop-1")
	if _, err := os.Stat(layout.GameRoot); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the instance has a game root: %v", err)
	}
	home, err := filepath.EvalSymlinks(filepath.Join(layout.Dir, "home"))
	if err != nil {
		t.Fatal(err)
	}
	uuid := regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)
	check := func(id, token string) {
		t.Helper()
		if !uuid.MatchString(id) {
			t.Errorf("process ID %q is not a bare UUID", id)
		}
		env, err := os.ReadFile(filepath.Join(home, "env-"+id))
		if err != nil || !strings.Contains(string(env), "GAMELIFT_SDK_AUTH_TOKEN="+token+"\n") ||
			!strings.Contains(string(env), "GAMELIFT_SDK_PROCESS_ID="+id+"\n") {
			t.Errorf("environment of %s (in home/): %q %v", id, env, err)
		}
		if pwd, err := os.ReadFile(filepath.Join(home, "pwd-"+id)); err != nil || strings.TrimSpace(string(pwd)) != home {
			t.Errorf("working directory %q %v, want home/ %s", pwd, err, home)
		}
	}
	check(first.ProcessID, "first")
	f.p.UpdateEnv("laptop-1", []string{"GAMELIFT_SDK_AUTH_TOKEN=second"})
	if err := f.p.KillProcess(first.ProcessID, "test"); err != nil {
		t.Fatal(err)
	}
	check(r.waitStarts(2)[1].ProcessID, "second")
}

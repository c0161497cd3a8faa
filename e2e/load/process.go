package main

import (
	"os"
	"path/filepath"
	"time"

	"github.com/hoistgg/hoist/e2e/hoisttest"
)

// server is a server process under load: Hoist or the ceiling, launched the
// way the e2e tests launch Hoist (hoisttest.Launch), with a temporary
// directory that stop removes.
type server struct {
	*hoisttest.Process
	dir string
}

// stop sends SIGTERM, waits for the exit (SIGKILL to the group after 30 s)
// and removes the temporary directory.
func (s *server) stop() error {
	err := s.Stop(30 * time.Second)
	_ = os.RemoveAll(s.dir)
	return err
}

// start launches bin, with the arguments args returns for a new temporary
// directory under parentDir ("": the system's).
func start(name, bin, parentDir string, args func(dir string) []string, env []string) (*server, error) {
	dir, err := os.MkdirTemp(parentDir, "hoist-load-"+name+"-")
	if err != nil {
		return nil, err
	}
	p, err := hoisttest.Launch(name, bin, args(dir), env, dir)
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	return &server{Process: p, dir: dir}, nil
}

// startCeiling starts this program again as the ceiling server.
func startCeiling() (*server, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	return start("ceiling", self, "", func(string) []string { return nil }, []string{roleEnv + "=" + roleCeiling})
}

// hoistOptions say how Hoist is started.
type hoistOptions struct {
	bin       string
	cred      credentials
	parentDir string // where the temporary data directory goes ("": the system's)
	pprofAddr string // --pprof-addr ("" for none)
	extraArgs []string
}

// startHoist starts the Hoist binary with credentials (so that every
// signature is verified), a new data directory and a loopback port.
func startHoist(o hoistOptions) (*server, error) {
	args := func(dir string) []string {
		a := append(hoisttest.ServeArgs(filepath.Join(dir, "data"), false),
			"--region", o.cred.Region, "--local-hosting", "in-process", // hosts no game server
			// The loop sends no health checks: keep the registered game
			// servers for the whole run.
			"--health-expiry", "24h")
		if o.pprofAddr != "" {
			a = append(a, "--pprof-addr", o.pprofAddr)
		}
		return append(a, o.extraArgs...)
	}
	env := []string{"HOIST_CREDENTIALS=" + o.cred.AccessKeyID + ":" + o.cred.Secret}
	return start("hoist", o.bin, o.parentDir, args, env)
}

// buildHoist builds cmd/hoist of the module into dir and returns the
// binary's path.
func buildHoist(dir string) (string, error) {
	bin := filepath.Join(dir, "hoist")
	return bin, hoisttest.GoBuild("./cmd/hoist", bin)
}

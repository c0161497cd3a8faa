// Package hoisttest starts a real Hoist binary on a loopback port for
// end-to-end tests and the load tools, and builds AWS SDK clients pointed at
// it.
package hoisttest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/hoistgg/hoist/internal/config"
)

// Test credentials used by the e2e suite (Hoist is started with them, so
// every request's SigV4 signature is really verified).
const (
	AccessKeyID     = "AKIDHOISTE2E"
	SecretAccessKey = "hoist-e2e-secret-key"
	Region          = "us-west-2"
	Account         = "123456789012"
)

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// RepoRoot returns the module root (the directory holding go.mod).
func RepoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
}

// Binary builds cmd/hoist once per test binary and returns its path.
func Binary(t testing.TB) string {
	t.Helper()
	bin, err := BuildBinary()
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

// BuildBinary builds cmd/hoist once per test binary, as Binary does, for
// callers without a testing.TB (TestMain, the load tools).
func BuildBinary() (string, error) {
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "hoist-e2e-bin-")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "hoist")
		buildErr = GoBuild("./cmd/hoist", binPath)
	})
	return binPath, buildErr
}

// RemoveBuilds removes what BuildBinary and GameServerBinary built, if
// they did: a test binary calls it once its tests ran (Main), a load tool
// when it ends. Without it every test binary leaves its build of Hoist
// (tens of MB) in the temporary directory.
func RemoveBuilds() {
	if binPath != "" {
		_ = os.RemoveAll(filepath.Dir(binPath))
	}
	RemoveGameServer()
}

// Main runs an e2e test binary's tests and then removes its builds
// (RemoveBuilds): TestMain is func TestMain(m *testing.M) {
// os.Exit(hoisttest.Main(m)) }.
func Main(m *testing.M) int {
	code := m.Run()
	RemoveBuilds()
	return code
}

// Hoist is a running Hoist process.
type Hoist struct {
	*Process
	// DataDir is the data directory.
	DataDir string
	t       testing.TB
	logs    func() string // Front's
}

// Front returns a Hoist that stands for several Hoist replicas behind one
// endpoint, url (a load balancer's): URL, V1 and V2 reach them, and Log
// returns logs(). It has no process of its own and no data directory:
// its replicas are started and stopped by whoever made them
// (e2e/cluster).
func Front(url string, logs func() string) *Hoist {
	return &Hoist{Process: &Process{Name: "cluster", URL: url}, logs: logs}
}

// Log returns everything Hoist has written so far (a Front: its
// replicas' logs).
func (h *Hoist) Log() string {
	if h.logs != nil {
		return h.logs()
	}
	return h.Process.Log()
}

// Options adjust a started Hoist.
type Options struct {
	// DataDir reuses a data directory (default: a new temp dir).
	DataDir string
	// Unauthenticated starts Hoist without credentials.
	Unauthenticated bool
	// Args and Env are added to the command line and environment.
	Args []string
	Env  []string
	// WorkDir, when set, starts Hoist the way the README does: as ./hoist
	// in this working directory (a link to the built binary is made there),
	// with no command-line flag but Args, so with its default, relative
	// data directory (DataDir is set to it) and the default Region and
	// account; only the listeners are moved to free loopback ports, through
	// HOIST_ADDR and HOIST_TLS_ADDR.
	WorkDir string
}

// Start runs Hoist on 127.0.0.1 with a random port and waits until it serves.
// It is stopped (SIGTERM) when the test ends.
func Start(t testing.TB, opts Options) *Hoist {
	t.Helper()
	bin := Binary(t)
	if opts.WorkDir != "" {
		opts.DataDir = filepath.Join(opts.WorkDir, config.DefaultDataDir)
		_ = os.Chmod(filepath.Dir(opts.WorkDir), 0o711) // as below
	} else if opts.DataDir == "" {
		opts.DataDir = t.TempDir()
		// Run as root, Hoist runs server processes as an unprivileged user,
		// which must pass through the test's temporary directory (0700).
		_ = os.Chmod(filepath.Dir(opts.DataDir), 0o711)
	}
	h, err := launch(bin, opts, t.TempDir(), t)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.Stop)
	return h
}

// launch starts Hoist with opts (opts.DataDir set), writing its ready file
// in tmp, and waits until it serves.
func launch(bin string, opts Options, tmp string, t testing.TB) (*Hoist, error) {
	var env []string
	if !opts.Unauthenticated {
		env = CredentialsEnv()
	}
	var p *Process
	var err error
	if opts.WorkDir != "" {
		p, err = launchLikeTheREADME(bin, opts, append(env, opts.Env...), tmp)
	} else {
		p, err = Launch("hoist", bin, append(ServeArgs(opts.DataDir, true), opts.Args...), append(env, opts.Env...), tmp)
	}
	if err != nil {
		return nil, err
	}
	return &Hoist{Process: p, DataDir: opts.DataDir, t: t}, nil
}

// launchLikeTheREADME runs ./hoist in opts.WorkDir (see Options.WorkDir).
func launchLikeTheREADME(bin string, opts Options, env []string, tmp string) (*Process, error) {
	link := filepath.Join(opts.WorkDir, "hoist")
	if err := os.Symlink(bin, link); err != nil && !os.IsExist(err) {
		return nil, err
	}
	env = append([]string{"HOIST_ADDR=127.0.0.1:0", "HOIST_TLS_ADDR=127.0.0.1:0"}, env...)
	return LaunchIn(opts.WorkDir, "hoist", "./hoist", opts.Args, env, tmp)
}

// Stop stops Hoist with SIGINT, which ends its local agent's game servers
// too, and waits for a clean exit (or kills after 30 s, and fails the
// test); then ends whatever local agent of its data directory is left (a
// test that killed Hoist, or stopped it with SIGTERM, leaves it running).
func (h *Hoist) Stop() {
	if err := h.Process.StopWith(syscall.SIGINT, 30*time.Second); err != nil {
		h.t.Errorf("%v", err)
	}
	if err := StopLocalAgent(h.DataDir, 30*time.Second); err != nil {
		h.t.Errorf("%v", err)
	}
}

// StopLocalAgent ends the local agent of a data directory, if one runs
// (SIGTERM: it ends its instances), and waits up to grace for it to exit,
// then kills it.
func StopLocalAgent(dataDir string, grace time.Duration) error {
	b, err := os.ReadFile(filepath.Join(dataDir, "local-host", "agent.lock"))
	if err != nil {
		return nil // no local agent ever ran here
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 1 || !localAgentRuns(pid, dataDir) {
		return nil
	}
	// A pidfd is readable once the process ended (it is not our child:
	// its exit cannot be waited for).
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return nil // gone already
	}
	defer unix.Close(fd)
	_ = syscall.Kill(pid, syscall.SIGTERM)
	fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	if n, err := unix.Poll(fds, int(grace.Milliseconds())); err == nil && n == 1 {
		return nil
	}
	_ = unix.PidfdSendSignal(fd, unix.SIGKILL, nil, 0)
	return fmt.Errorf("the local agent of %s (process %d) did not stop within %s of SIGTERM", dataDir, pid, grace)
}

// StopLocalAgentsUnder ends every local agent whose state directory is
// under dir (what the Hoists a script started under dir left), as
// StopLocalAgent does.
func StopLocalAgentsUnder(dir string, grace time.Duration) {
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		args := strings.Split(string(b), "\x00")
		if err != nil || len(args) < 5 || args[1] != "agent" || args[2] != "--local" || args[3] != "--dir" {
			continue
		}
		if d := args[4]; strings.HasPrefix(d, dir+string(filepath.Separator)) && filepath.Base(d) == "local-host" {
			_ = StopLocalAgent(filepath.Dir(d), grace)
		}
	}
}

// localAgentRuns reports whether process pid is the local agent of
// dataDir (and not a process that reused its ID).
func localAgentRuns(pid int, dataDir string) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	return err == nil && strings.Contains(string(b), "--local") &&
		strings.Contains(string(b), filepath.Join(dataDir, "local-host"))
}

// Context returns a context that ends with the test or after d.
func Context(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

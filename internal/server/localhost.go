package server

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"

	"github.com/hoistgg/hoist/internal/config"
	"github.com/hoistgg/hoist/internal/hosts"
	hostagent "github.com/hoistgg/hoist/internal/hosts/agent"
	"github.com/hoistgg/hoist/internal/store/filelock"
)

// Files of the local agent, in <data dir>/local-host (0711: the game
// servers' accounts reach their instances under it; everything else in it
// is Hoist's alone).
const (
	localHostDir = "local-host"
	// localAgentLock is held by the running local agent (its process ID
	// is written in it).
	localAgentLock = "agent.lock"
	// localAgentLog receives the local agent's output.
	localAgentLog = "agent.log"
)

// LocalAgentDir is the local agent's state directory.
func (s *Server) LocalAgentDir() string { return filepath.Join(s.cfg.DataDir, localHostDir) }

// localHostID is this machine's host ID (stable across restarts: it is
// the replica's).
func (s *Server) localHostID() string { return "local-" + s.replica }

// StartLocalHost, with --local-hosting agent, makes this machine a host
// run by the local agent (`hoist agent --local`, a process of its own
// that outlives hoist serve, so that a restart of Hoist ends no game):
// it records the Local host, writes the agent's credential and Hoist's
// address into its state directory, and, unless a local agent already
// runs (it then reconnects on its own), calls spawn to start one, with
// its output appended to agent.log. With another --local-hosting it does
// nothing.
func (s *Server) StartLocalHost(ctx context.Context, spawn func(dir string, output *os.File) error) error {
	if s.cfg.LocalHosting != config.LocalAgent {
		return nil
	}
	dir := s.LocalAgentDir()
	if err := os.MkdirAll(dir, 0o711); err != nil {
		return err
	}
	if err := os.Chmod(dir, 0o711); err != nil {
		return err
	}
	old, err := hostagent.LoadState(dir)
	if err != nil {
		s.log.Warn("local host: its credential file is damaged; writing a new one", "err", err)
		old = nil
	}
	lh := hosts.LocalHost{HostID: s.localHostID(), Location: s.cfg.Region, Address: s.cfg.InstanceIP,
		InstancesDir: filepath.Join(dir, "instances")}
	if old != nil && old.HostID == lh.HostID {
		lh.Secret = old.HostSecret
	}
	secret, err := s.hosts.EnsureLocalHost(ctx, lh)
	if err != nil {
		return err
	}
	st := &hostagent.State{Endpoint: s.localEndpoint(), HostID: lh.HostID, HostSecret: secret, Pool: "local",
		Location: lh.Location, Address: lh.Address}
	if err := hostagent.SaveState(dir, st, s.ca.CertPEM); err != nil {
		return err
	}
	return s.spawnLocalAgent(dir, spawn)
}

// localEndpoint is the address the local agent reaches Hoist at: the plain
// listener, on loopback when it listens on every address.
func (s *Server) localEndpoint() string {
	host, port, err := net.SplitHostPort(s.addr)
	if err != nil {
		return "http://" + s.addr
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		host = "127.0.0.1"
	}
	return "http://" + net.JoinHostPort(host, port)
}

// spawnLocalAgent starts the local agent unless one holds its lock.
func (s *Server) spawnLocalAgent(dir string, spawn func(dir string, output *os.File) error) error {
	lock, err := filelock.Lock(filepath.Join(dir, localAgentLock))
	if errors.Is(err, filelock.ErrLocked) {
		s.log.Info("local host: the local agent runs already: it reconnects", "dir", dir)
		return nil
	}
	if err != nil {
		return err
	}
	_ = lock.Close() // the agent takes it
	out, err := openAgentLog(filepath.Join(dir, localAgentLog))
	if err != nil {
		return err
	}
	defer out.Close()
	if err := spawn(dir, out); err != nil {
		return fmt.Errorf("starting the local agent: %w", err)
	}
	s.log.Info("local host: local agent started", "dir", dir, "log", filepath.Join(dir, localAgentLog))
	return nil
}

// maxAgentLog is the size past which the local agent's log is moved to
// agent.log.1 (replacing it) when an agent starts.
const maxAgentLog = 16 << 20

// openAgentLog opens the local agent's log for appending, rotating it
// once when it grew past maxAgentLog.
func openAgentLog(path string) (*os.File, error) {
	if fi, err := os.Stat(path); err == nil && fi.Size() > maxAgentLog {
		_ = os.Rename(path, path+".1")
	}
	return os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
}

// RetireLocalHost ends the games of the local agent and the agent itself
// (SIGINT to hoist serve): Hoist keeps serving while their processes are
// told to end. Nothing to do without a local agent, or when it is not
// connected.
func (s *Server) RetireLocalHost(ctx context.Context) error {
	if s.cfg.LocalHosting != config.LocalAgent {
		return nil
	}
	return s.hosts.RetireLocalHost(ctx, s.localHostID(), "Hoist was stopped with SIGINT")
}

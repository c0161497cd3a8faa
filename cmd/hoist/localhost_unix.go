//go:build unix

package main

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hoistgg/hoist/internal/config"
)

// localReconnectMax caps the local agent's wait between two attempts to
// reach a restarting Hoist: on loopback, a refused attempt costs nothing.
const localReconnectMax = "2s"

// localAgentSpawner returns how hoist serve starts its local agent: this
// binary's `agent --local`, in a session of its own (no terminal's SIGINT,
// no parent-death signal: it outlives hoist serve), with the process
// settings of hoist serve and its output in output. When the agent ends
// while ctx lasts (it crashed, or was killed), exited is called.
func localAgentSpawner(ctx context.Context, cfg *config.Config, exited func(error)) func(dir string, output *os.File) error {
	return func(dir string, output *os.File) error {
		if testing.Testing() {
			// This binary is a test: run as `agent --local` it would run
			// its tests again.
			return errors.New("a test binary cannot start the local agent: use --local-hosting in-process")
		}
		exe, err := os.Executable()
		if err != nil {
			return err
		}
		cmd := exec.Command(exe, "agent", "--local", "--dir", dir, "--process-user", cfg.ProcessUser,
			"--orphan-timeout", cfg.LocalOrphanTimeout.String(), "--reconnect-max", localReconnectMax,
			"--timings", cfg.Timings.String(), "--log-level", cfg.LogLevel, "--log-format", cfg.LogFormat)
		cmd.Stdout, cmd.Stderr = output, output
		cmd.Env = withoutHoistVars(os.Environ()) // its settings are its flags
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		if err := cmd.Start(); err != nil {
			return err
		}
		done := make(chan struct{})
		spawned.set(cmd.Process, done)
		go func() {
			err := cmd.Wait() // reaped if it ends while hoist serve runs
			close(done)
			if ctx.Err() == nil {
				exited(err)
			}
		}()
		return nil
	}
}

// spawned is the local agent this hoist serve started last, while it runs.
var spawned agentProcess

// agentProcess is a started local agent and a channel closed once it
// exited.
type agentProcess struct {
	mu   sync.Mutex
	p    *os.Process
	done chan struct{}
}

func (a *agentProcess) set(p *os.Process, done chan struct{}) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.p, a.done = p, done
}

// endSpawnedAgent ends the local agent this hoist serve started, if it
// still runs (SIGTERM: it ends its game servers, then exits), waiting up
// to grace, then kills it. SIGINT to hoist serve does this when the agent
// could not be told to retire over its connection (it had not connected
// yet). It reports whether there was one to end.
func endSpawnedAgent(grace time.Duration) bool {
	spawned.mu.Lock()
	p, done := spawned.p, spawned.done
	spawned.mu.Unlock()
	if p == nil {
		return false
	}
	select {
	case <-done:
		return false
	default:
	}
	_ = p.Signal(syscall.SIGTERM)
	select {
	case <-done:
	case <-time.After(grace):
		_ = p.Kill()
		<-done
	}
	return true
}

// withoutHoistVars drops the HOIST_* variables from an environment (the
// local agent must not take hoist serve's, HOIST_READY_FILE above all).
func withoutHoistVars(env []string) []string {
	out := env[:0:0]
	for _, kv := range env {
		if !strings.HasPrefix(kv, "HOIST_") {
			out = append(out, kv)
		}
	}
	return out
}

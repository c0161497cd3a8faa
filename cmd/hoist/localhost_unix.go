//go:build unix

package main

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"

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
		go func() {
			err := cmd.Wait() // reaped if it ends while hoist serve runs
			if ctx.Err() == nil {
				exited(err)
			}
		}()
		return nil
	}
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

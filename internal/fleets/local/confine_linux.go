//go:build linux

package local

import (
	"log/slog"
	"os/exec"

	"github.com/hoistgg/hoist/internal/fleets/local/procinit"
)

// confineChild is a process running under its init (procinit): the init
// is what the provider signals.
type confineChild struct{ p *procinit.Process }

// pid is the init's PID (the process has another, in its namespace).
func (c confineChild) pid() int { return c.p.Init.Process.Pid }

// wait waits for the init and returns the status it reported.
func (c confineChild) wait() (exitStatus, error) {
	e, err := c.p.Wait()
	st := exitStatus{code: e.Code}
	if e.Signal != 0 {
		st.signal = e.Signal.String()
	}
	return st, err
}

// newConfiner returns how the provider starts processes confined: each
// under an init in PID and mount namespaces of its own. Where the system
// cannot create them (or cfg says not to), it logs why and returns nil:
// processes are then started directly, in process groups.
func newConfiner(cfg Config, log *slog.Logger) func(*exec.Cmd) (child, error) {
	if cfg.noConfine {
		return nil
	}
	c, err := procinit.New()
	if err != nil {
		log.Warn("local: server processes cannot get PID and mount namespaces of their own, so what they start in a session of its own (setsid) can outlive them, and they can see every process of this machine; run Hoist as root, or allow unprivileged user namespaces (see docs/fleets.md)",
			"err", err)
		return nil
	}
	log.Info("local: server processes run in PID and mount namespaces of their own", "userNamespace", c.UserNamespace())
	return func(cmd *exec.Cmd) (child, error) {
		p, err := c.Start(cmd)
		if err != nil {
			return nil, err
		}
		return confineChild{p}, nil
	}
}

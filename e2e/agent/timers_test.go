//go:build linux

package agent

import (
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/gamelift/types"

	"github.com/hoistgg/hoist/internal/agentproto"
)

// TestAgentTimers: compute auth tokens that last 8 s (RefreshConnection
// comes at half their life, with a new token that opens a second socket
// while the first stays open), and agents lost after 2 s without a
// heartbeat (the compute is IMPAIRED, and ACTIVE again at the next one).
func TestAgentTimers(t *testing.T) {
	e := startHoist(t, "fleets.token-ttl=8s", "agents.heartbeat-timeout=2s")
	t.Run("Refresh", func(t *testing.T) {
		t.Parallel()
		f := e.newFleet(t)
		agentEP, _, tok := f.compute(t, "rf-1")
		a := mustDial(t, e, agentEP, f.id, "rf-1", tok)
		start := time.Now()
		var m agentproto.RefreshConnectionMessage
		if err := decodeReply(a.next(agentproto.ActionRefreshConnection), &m); err != nil {
			t.Fatal(err)
		}
		took, exp := time.Since(start), m.ExpirationTime.Time()
		if m.RefreshConnectionEndpoint != agentEP || m.AuthToken == "" || m.AuthToken == tok ||
			exp.Before(time.Now().Add(5*time.Second)) || exp.After(time.Now().Add(9*time.Second)) || took > 6*time.Second {
			t.Fatalf("RefreshConnection after %s: %+v (expires in %s)", took, m, time.Until(exp))
		}
		// As the Java agent: a new socket with the new token, the old one
		// kept a while; both are served.
		b := mustDial(t, e, m.RefreshConnectionEndpoint, f.id, "rf-1", m.AuthToken)
		for name, x := range map[string]*javaAgent{"old": a, "new": b} {
			if r := x.heartbeat(agentproto.StatusInitializing); r.Status != agentproto.StatusInitializing {
				t.Errorf("heartbeat on the %s socket: %+v", name, r)
			}
		}
	})
	t.Run("Lost", func(t *testing.T) {
		t.Parallel()
		f := e.newFleet(t)
		agentEP, _, tok := f.compute(t, "lo-1")
		f.compute(t, "lo-2") // no agent
		a := mustDial(t, e, agentEP, f.id, "lo-1", tok)
		a.heartbeat(agentproto.StatusInitializing)
		eventually(t, waitShort, "compute IMPAIRED", func() (bool, string) {
			st := e.computeStatus(t, f.id, "lo-1")
			return st == types.ComputeStatusImpaired, string(st)
		})
		a.heartbeat(agentproto.StatusActivating)
		if st := e.computeStatus(t, f.id, "lo-1"); st != types.ComputeStatusActive {
			t.Errorf("after a heartbeat again: %s", st)
		}
		// A compute whose agent never heartbeat is never IMPAIRED.
		if st := e.computeStatus(t, f.id, "lo-2"); st != types.ComputeStatusActive {
			t.Errorf("a compute without an agent: %s", st)
		}
	})
}

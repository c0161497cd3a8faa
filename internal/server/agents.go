package server

import (
	"context"
	"errors"
	"strings"

	"github.com/hoistgg/hoist/internal/agentconn"
	"github.com/hoistgg/hoist/internal/hosting"
	"github.com/hoistgg/hoist/internal/replicas"
	"github.com/hoistgg/hoist/internal/store"
)

// agentsRef forwards to the GameLift Agent endpoint once it exists
// (sessions is made before it).
type agentsRef struct {
	s   *agentconn.Server
	srv *Server
}

var _ hosting.ComputeAgents = (*agentsRef)(nil)

// SendToCompute forwards to the agent endpoint; an agent connected to
// another replica is reached through that replica's inbox.
func (a *agentsRef) SendToCompute(ctx context.Context, fleetID, computeName string, msg hosting.Message) error {
	err := a.s.SendToCompute(ctx, fleetID, computeName, msg)
	if !errors.Is(err, agentconn.ErrNotConnected) {
		return err
	}
	return a.srv.relaySend(ctx, replicas.TargetCompute, fleetID+"/"+computeName, agentconn.AgentHolder, msg, err)
}

// AgentHolder forwards to the agent endpoint.
func (a *agentsRef) AgentHolder(ctx context.Context, tx store.Tx, fleetID, computeName string) (string, error) {
	return a.s.AgentHolder(ctx, tx, fleetID, computeName)
}

// HasAgent forwards to the agent endpoint.
func (a *agentsRef) HasAgent(ctx context.Context, tx store.Tx, fleetID, computeName string) (bool, error) {
	return a.s.HasAgent(ctx, tx, fleetID, computeName)
}

// agentEndpoint is the GameLift Agent endpoint RegisterCompute names: the
// SDK endpoint's scheme and address, path /agent.
func agentEndpoint(sdk string) string {
	return strings.TrimSuffix(sdk, "/sdk") + "/agent"
}

package server

import (
	"context"
	"strings"

	"github.com/hoistgg/hoist/internal/agentconn"
	"github.com/hoistgg/hoist/internal/hosting"
	"github.com/hoistgg/hoist/internal/store"
)

// agentsRef forwards to the GameLift Agent endpoint once it exists
// (sessions is made before it).
type agentsRef struct{ s *agentconn.Server }

var _ hosting.ComputeAgents = (*agentsRef)(nil)

// SendToCompute forwards to the agent endpoint.
func (a *agentsRef) SendToCompute(ctx context.Context, fleetID, computeName string, msg hosting.Message) error {
	return a.s.SendToCompute(ctx, fleetID, computeName, msg)
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

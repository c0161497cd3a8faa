package aliases

import "github.com/hoistgg/hoist/internal/api"

// checkRouting checks a routing strategy given to CreateAlias or
// UpdateAlias (the model's own constraints were checked on decoding) and
// returns the strategy to store. The rules, where the model is silent:
//   - Type is required;
//   - SIMPLE needs FleetId (a fleet ID, not an ARN: the model's pattern);
//     a Message given with it is kept and has no effect;
//   - TERMINAL takes no FleetId (it routes to no fleet); its Message is
//     optional.
func checkRouting(rs *api.RoutingStrategy) (*api.RoutingStrategy, error) {
	if rs == nil {
		return nil, api.NewInvalidRequestException("RoutingStrategy is required")
	}
	out := &api.RoutingStrategy{Type: rs.Type, FleetId: rs.FleetId, Message: rs.Message}
	switch rs.Type {
	case api.RoutingStrategyTypeSimple:
		if api.ToString(rs.FleetId) == "" {
			return nil, api.NewInvalidRequestException("RoutingStrategy.FleetId is required with Type SIMPLE")
		}
	case api.RoutingStrategyTypeTerminal:
		if rs.FleetId != nil {
			return nil, api.NewInvalidRequestException("RoutingStrategy.FleetId must not be given with Type TERMINAL: a terminal alias routes to no fleet")
		}
	case "":
		return nil, api.NewInvalidRequestException("RoutingStrategy.Type is required (SIMPLE or TERMINAL)")
	default:
		return nil, api.NewInvalidRequestException("RoutingStrategy.Type %q is not SIMPLE or TERMINAL", rs.Type)
	}
	if out.Message != nil && *out.Message == "" {
		out.Message = nil
	}
	return out, nil
}

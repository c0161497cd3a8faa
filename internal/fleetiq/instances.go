package fleetiq

import (
	"context"
	"slices"

	"github.com/hoistgg/hoist/internal/api"
	"github.com/hoistgg/hoist/internal/store"
)

// DescribeGameServerInstances lists a group's instances by instance ID,
// only those InstanceIds names when it is given (IDs the group does not
// have are left out).
func (s *Service) DescribeGameServerInstances(ctx context.Context, in *api.DescribeGameServerInstancesInput) (*api.DescribeGameServerInstancesOutput, error) {
	now := s.now()
	out := &api.DescribeGameServerInstancesOutput{GameServerInstances: []api.GameServerInstance{}}
	err := s.cfg.Store.View(ctx, func(tx store.Tx) error {
		grp, _, err := s.findGroup(ctx, tx, api.ToString(in.GameServerGroupName), now)
		if err != nil {
			return err
		}
		var insts []*instanceRec
		match := func(rec store.Record) bool {
			inst, err := decode[instanceRec](rec)
			if err != nil || (len(in.InstanceIds) > 0 && !slices.Contains(in.InstanceIds, inst.ID)) {
				return false
			}
			insts = append(insts, inst)
			return true
		}
		q := store.Query{Kind: kindInstance, Parent: grp.Name, HasParent: true, Order: store.OrderID}
		_, next, err := page(ctx, tx, q, api.ToString(in.NextToken), limitOf(in.Limit), match)
		if err != nil {
			return err
		}
		arn := api.String(s.groupARN(grp.Name))
		for _, inst := range insts {
			out.GameServerInstances = append(out.GameServerInstances, api.GameServerInstance{
				GameServerGroupArn:  arn,
				GameServerGroupName: api.String(grp.Name),
				InstanceId:          api.String(inst.ID),
				InstanceStatus:      inst.Status,
			})
		}
		if next != "" {
			out.NextToken = api.String(next)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// SetInstanceStatus sets the status of an instance of a group (ACTIVE,
// DRAINING or SPOT_TERMINATING): the operator's stand-in for what GameLift
// does on its own when EC2 reclaims a Spot instance. Claims use DRAINING
// instances only when their filter allows it, SPOT_TERMINATING instances
// never. Errors are api errors: InvalidRequestException for another status,
// NotFoundException for an unknown group or instance.
func (s *Service) SetInstanceStatus(ctx context.Context, group, instanceID, status string) error {
	st := api.GameServerInstanceStatus(status)
	if !st.IsValid() {
		return api.NewInvalidRequestException("InstanceStatus %q: want ACTIVE, DRAINING or SPOT_TERMINATING", status)
	}
	now := s.now()
	changed := false
	err := s.cfg.Store.Update(ctx, func(tx store.Tx) error {
		grp, _, err := s.findGroup(ctx, tx, group, now)
		if err != nil {
			return err
		}
		inst, err := loadInstance(ctx, tx, grp.Name, instanceID)
		if err != nil {
			return err
		}
		if inst == nil {
			return api.NewNotFoundException("Instance %s not found in game server group %s", instanceID, group)
		}
		if inst.Status == st {
			return nil
		}
		inst.Status, changed = st, true
		return putInstance(ctx, tx, inst)
	})
	if err == nil && changed {
		s.log.Info("fleetiq: instance status set", "group", group, "instance", instanceID, "status", status)
	}
	return err
}

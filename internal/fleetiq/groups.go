package fleetiq

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/hoistgg/hoist/internal/api"
	"github.com/hoistgg/hoist/internal/store"
	"github.com/hoistgg/hoist/internal/tags"
)

// CreateGameServerGroup creates a game server group. It starts NEW and
// becomes ACTIVATING, then ACTIVE, one StatusStep apart (Hoist launches no
// instances); game servers may register at once.
func (s *Service) CreateGameServerGroup(ctx context.Context, in *api.CreateGameServerGroupInput) (*api.CreateGameServerGroupOutput, error) {
	if err := checkCreate(in); err != nil {
		return nil, err
	}
	now := s.now()
	g := newGroup(in, now, s.asgARN(api.ToString(in.GameServerGroupName), now))
	err := s.cfg.Store.Update(ctx, func(tx store.Tx) error {
		old, err := loadGroup(ctx, tx, g.Name)
		if err != nil {
			return err
		}
		if old != nil {
			if st := s.status(old, now); !st.gone && st.status != statusDeleted {
				return api.NewConflictException("A game server group named %s already exists (status %s)", g.Name, st.status)
			}
		}
		if err := s.putGroup(ctx, tx, g); err != nil {
			return err
		}
		if len(in.Tags) == 0 {
			return nil
		}
		return tags.Set(ctx, tx, s.groupARN(g.Name), in.Tags)
	})
	if err != nil {
		return nil, err
	}
	return &api.CreateGameServerGroupOutput{GameServerGroup: s.groupOut(g, s.status(g, now))}, nil
}

// newGroup returns the record of a group created at now from in, with
// GameLift's defaults (SPOT_PREFERRED, NO_PROTECTION).
func newGroup(in *api.CreateGameServerGroupInput, now time.Time, asgARN string) *groupRec {
	g := &groupRec{
		Name:                api.ToString(in.GameServerGroupName),
		Status:              statusNew,
		Since:               ms(now),
		Created:             ms(now),
		Updated:             ms(now),
		RoleArn:             api.ToString(in.RoleArn),
		Balancing:           in.BalancingStrategy,
		Protection:          in.GameServerProtectionPolicy,
		InstanceDefinitions: in.InstanceDefinitions,
		LaunchTemplate:      in.LaunchTemplate,
		AutoScalingPolicy:   in.AutoScalingPolicy,
		MinSize:             api.ToInt32(in.MinSize),
		MaxSize:             api.ToInt32(in.MaxSize),
		VpcSubnets:          in.VpcSubnets,
		AutoScalingGroupArn: asgARN,
	}
	if g.Balancing == "" {
		g.Balancing = api.BalancingStrategySpotPreferred
	}
	if g.Protection == "" {
		g.Protection = api.GameServerProtectionPolicyNoProtection
	}
	return g
}

// checkCreate makes the semantic checks the model's constraints do not.
func checkCreate(in *api.CreateGameServerGroupInput) error {
	name := api.ToString(in.GameServerGroupName)
	if strings.ContainsAny(name, "/ \t\r\n") || strings.HasPrefix(name, "arn:") {
		return api.NewInvalidRequestException("GameServerGroupName %q: a name must not contain \"/\" or white space, nor start with \"arn:\"", name)
	}
	if lo, hi := api.ToInt32(in.MinSize), api.ToInt32(in.MaxSize); lo > hi {
		return api.NewInvalidRequestException("MinSize (%d) must not be greater than MaxSize (%d)", lo, hi)
	}
	if lt := in.LaunchTemplate; lt != nil && (lt.LaunchTemplateId == nil) == (lt.LaunchTemplateName == nil) {
		return api.NewInvalidRequestException("LaunchTemplate must give exactly one of LaunchTemplateId and LaunchTemplateName")
	}
	return checkInstanceDefinitions(in.InstanceDefinitions)
}

// checkInstanceDefinitions refuses an instance type listed twice.
func checkInstanceDefinitions(defs []api.InstanceDefinition) error {
	seen := make(map[api.GameServerGroupInstanceType]bool, len(defs))
	for _, d := range defs {
		if seen[d.InstanceType] {
			return api.NewInvalidRequestException("InstanceDefinitions lists the instance type %s more than once", d.InstanceType)
		}
		seen[d.InstanceType] = true
	}
	return nil
}

// asgARN synthesizes the ARN of the Auto Scaling group GameLift would have
// created for the group (named like the group; its UUID derived from the
// group's name and creation time).
func (s *Service) asgARN(name string, created time.Time) string {
	sum := sha256.Sum256([]byte(fmt.Sprintf("%s\x00%d", name, created.UnixNano())))
	h := hex.EncodeToString(sum[:16])
	uuid := h[:8] + "-" + h[8:12] + "-4" + h[13:16] + "-a" + h[17:20] + "-" + h[20:32]
	return "arn:aws:autoscaling:" + s.cfg.Region + ":" + s.cfg.Account +
		":autoScalingGroup:" + uuid + ":autoScalingGroupName/" + name
}

// groupOut returns the API view of g in state st.
func (s *Service) groupOut(g *groupRec, st groupState) *api.GameServerGroup {
	updated := max(g.Updated, ms(st.since))
	out := &api.GameServerGroup{
		AutoScalingGroupArn:        api.String(g.AutoScalingGroupArn),
		BalancingStrategy:          g.Balancing,
		CreationTime:               api.Time(fromMS(g.Created)),
		GameServerGroupArn:         api.String(s.groupARN(g.Name)),
		GameServerGroupName:        api.String(g.Name),
		GameServerProtectionPolicy: g.Protection,
		InstanceDefinitions:        g.InstanceDefinitions,
		LastUpdatedTime:            api.Time(fromMS(updated)),
		RoleArn:                    api.String(g.RoleArn),
		Status:                     st.status,
	}
	if len(g.Suspended) > 0 {
		out.SuspendedActions = g.Suspended
	}
	return out
}

// findGroup loads the group a GameServerGroupName names, with its state at
// now; a group that does not exist (or was deleted longer than the
// retention ago) is a NotFoundException.
func (s *Service) findGroup(ctx context.Context, tx store.Tx, nameOrARN string, now time.Time) (*groupRec, groupState, error) {
	name := groupName(nameOrARN)
	g, err := loadGroup(ctx, tx, name)
	if err != nil {
		return nil, groupState{}, err
	}
	if g == nil {
		return nil, groupState{}, api.NewNotFoundException("Game server group %s not found", nameOrARN)
	}
	st := s.status(g, now)
	if st.gone {
		return nil, groupState{}, api.NewNotFoundException("Game server group %s not found", nameOrARN)
	}
	return g, st, nil
}

// DescribeGameServerGroup returns a group.
func (s *Service) DescribeGameServerGroup(ctx context.Context, in *api.DescribeGameServerGroupInput) (*api.DescribeGameServerGroupOutput, error) {
	now := s.now()
	var out *api.GameServerGroup
	err := s.cfg.Store.View(ctx, func(tx store.Tx) error {
		g, st, err := s.findGroup(ctx, tx, api.ToString(in.GameServerGroupName), now)
		if err == nil {
			out = s.groupOut(g, st)
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	return &api.DescribeGameServerGroupOutput{GameServerGroup: out}, nil
}

// ListGameServerGroups lists groups in creation order (DELETED ones until
// the retention ends).
func (s *Service) ListGameServerGroups(ctx context.Context, in *api.ListGameServerGroupsInput) (*api.ListGameServerGroupsOutput, error) {
	now := s.now()
	out := &api.ListGameServerGroupsOutput{GameServerGroups: []api.GameServerGroup{}}
	err := s.cfg.Store.View(ctx, func(tx store.Tx) error {
		var groups []*groupRec
		match := func(rec store.Record) bool {
			g, err := decode[groupRec](rec)
			if err != nil || s.status(g, now).gone {
				return false
			}
			groups = append(groups, g)
			return true
		}
		q := store.Query{Kind: kindGroup, Order: store.OrderCreated}
		_, next, err := page(ctx, tx, q, api.ToString(in.NextToken), limitOf(in.Limit), match)
		if err != nil {
			return err
		}
		for _, g := range groups {
			out.GameServerGroups = append(out.GameServerGroups, *s.groupOut(g, s.status(g, now)))
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

// changeGroup applies fn to a live group and returns the changed group. A
// group being deleted answers InvalidRequestException, a deleted one
// NotFoundException.
func (s *Service) changeGroup(ctx context.Context, nameOrARN string, fn func(g *groupRec) error) (*api.GameServerGroup, error) {
	now := s.now()
	var out *api.GameServerGroup
	err := s.cfg.Store.Update(ctx, func(tx store.Tx) error {
		g, st, err := s.findGroup(ctx, tx, nameOrARN, now)
		if err != nil {
			return err
		}
		if err := checkLive(nameOrARN, st); err != nil {
			return err
		}
		if err := fn(g); err != nil {
			return err
		}
		g.Status, g.Since, g.Updated = st.status, ms(st.since), ms(now)
		if err := s.putGroup(ctx, tx, g); err != nil {
			return err
		}
		out = s.groupOut(g, st)
		return nil
	})
	return out, err
}

// checkLive refuses changes to a group that is being deleted.
func checkLive(nameOrARN string, st groupState) error {
	switch {
	case st.status == statusDeleted:
		return api.NewNotFoundException("Game server group %s not found (it was deleted)", nameOrARN)
	case !st.live():
		return api.NewInvalidRequestException("Game server group %s is being deleted (status %s)", nameOrARN, st.status)
	}
	return nil
}

// UpdateGameServerGroup changes a group's instance definitions, role,
// balancing strategy or game server protection policy.
func (s *Service) UpdateGameServerGroup(ctx context.Context, in *api.UpdateGameServerGroupInput) (*api.UpdateGameServerGroupOutput, error) {
	if err := checkInstanceDefinitions(in.InstanceDefinitions); err != nil {
		return nil, err
	}
	out, err := s.changeGroup(ctx, api.ToString(in.GameServerGroupName), func(g *groupRec) error {
		if in.InstanceDefinitions != nil {
			g.InstanceDefinitions = in.InstanceDefinitions
		}
		if in.RoleArn != nil {
			g.RoleArn = *in.RoleArn
		}
		if in.BalancingStrategy != "" {
			g.Balancing = in.BalancingStrategy
		}
		if in.GameServerProtectionPolicy != "" {
			g.Protection = in.GameServerProtectionPolicy
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return &api.UpdateGameServerGroupOutput{GameServerGroup: out}, nil
}

// SuspendGameServerGroup suspends group activities (REPLACE_INSTANCE_TYPES).
func (s *Service) SuspendGameServerGroup(ctx context.Context, in *api.SuspendGameServerGroupInput) (*api.SuspendGameServerGroupOutput, error) {
	out, err := s.changeGroup(ctx, api.ToString(in.GameServerGroupName), func(g *groupRec) error {
		for _, a := range in.SuspendActions {
			if !slices.Contains(g.Suspended, a) {
				g.Suspended = append(g.Suspended, a)
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return &api.SuspendGameServerGroupOutput{GameServerGroup: out}, nil
}

// ResumeGameServerGroup resumes suspended activities.
func (s *Service) ResumeGameServerGroup(ctx context.Context, in *api.ResumeGameServerGroupInput) (*api.ResumeGameServerGroupOutput, error) {
	out, err := s.changeGroup(ctx, api.ToString(in.GameServerGroupName), func(g *groupRec) error {
		g.Suspended = slices.DeleteFunc(g.Suspended, func(a api.GameServerGroupAction) bool {
			return slices.Contains(in.ResumeActions, a)
		})
		return nil
	})
	if err != nil {
		return nil, err
	}
	return &api.ResumeGameServerGroupOutput{GameServerGroup: out}, nil
}

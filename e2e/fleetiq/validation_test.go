package fleetiq_test

import (
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	gl "github.com/aws/aws-sdk-go-v2/service/gamelift"
	"github.com/aws/aws-sdk-go-v2/service/gamelift/types"
)

// TestInvalidInputs: inputs the model or Hoist refuses are answered
// InvalidRequestException naming the member. Both SDKs' client-side checks
// are off (aws-sdk-go v1: DisableParamValidation; v2: the required-member
// check removed), so every request reaches Hoist.
func TestInvalidInputs(t *testing.T) {
	group := uniq("invalid")
	createGroup(t, sharedClients[0].c, group)
	register(t, sharedClients[0].c, group, group+"-gs1", instanceN(1))

	createWith := func(edit func(in *gl.CreateGameServerGroupInput)) func(context.Context, client) error {
		return func(ctx context.Context, c client) error {
			in := groupInput(group + "-new")
			edit(in)
			_, err := c.CreateGameServerGroup(ctx, in)
			return err
		}
	}
	registerWith := func(edit func(in *gl.RegisterGameServerInput)) func(context.Context, client) error {
		return func(ctx context.Context, c client) error {
			in := &gl.RegisterGameServerInput{GameServerGroupName: aws.String(group), GameServerId: aws.String(group + "-gs2"),
				InstanceId: aws.String(instanceN(1))}
			edit(in)
			_, err := c.RegisterGameServer(ctx, in)
			return err
		}
	}
	claimWith := func(edit func(in *gl.ClaimGameServerInput)) func(context.Context, client) error {
		return func(ctx context.Context, c client) error {
			in := &gl.ClaimGameServerInput{GameServerGroupName: aws.String(group)}
			edit(in)
			_, err := c.ClaimGameServer(ctx, in)
			return err
		}
	}
	updateWith := func(edit func(in *gl.UpdateGameServerInput)) func(context.Context, client) error {
		return func(ctx context.Context, c client) error {
			in := &gl.UpdateGameServerInput{GameServerGroupName: aws.String(group), GameServerId: aws.String(group + "-gs1")}
			edit(in)
			_, err := c.UpdateGameServer(ctx, in)
			return err
		}
	}
	tests := map[string]struct {
		call     func(context.Context, client) error
		mentions []string
	}{
		"create: RoleArn missing": {createWith(func(in *gl.CreateGameServerGroupInput) { in.RoleArn = nil }), []string{"RoleArn", "null"}},
		"create: one instance definition": {createWith(func(in *gl.CreateGameServerGroupInput) {
			in.InstanceDefinitions = in.InstanceDefinitions[:1]
		}), []string{"InstanceDefinitions", "length"}},
		"create: unknown instance type": {createWith(func(in *gl.CreateGameServerGroupInput) {
			in.InstanceDefinitions[0].InstanceType = "c5.colossal"
		}), []string{"InstanceDefinitions[0].InstanceType", "c5.colossal"}},
		"create: instance type twice": {createWith(func(in *gl.CreateGameServerGroupInput) {
			in.InstanceDefinitions[1].InstanceType = in.InstanceDefinitions[0].InstanceType
		}), []string{"InstanceDefinitions", "c5.large"}},
		"create: MinSize negative":        {createWith(func(in *gl.CreateGameServerGroupInput) { in.MinSize = aws.Int32(-1) }), []string{"MinSize"}},
		"create: MaxSize zero":            {createWith(func(in *gl.CreateGameServerGroupInput) { in.MaxSize = aws.Int32(0) }), []string{"MaxSize"}},
		"create: MinSize above MaxSize":   {createWith(func(in *gl.CreateGameServerGroupInput) { in.MinSize = aws.Int32(11) }), []string{"MinSize", "MaxSize"}},
		"create: name with a slash":       {createWith(func(in *gl.CreateGameServerGroupInput) { in.GameServerGroupName = aws.String("frogs/na") }), []string{"GameServerGroupName", "frogs/na"}},
		"create: name with a space":       {createWith(func(in *gl.CreateGameServerGroupInput) { in.GameServerGroupName = aws.String("frogs na") }), []string{"GameServerGroupName"}},
		"create: launch template id+name": {createWith(func(in *gl.CreateGameServerGroupInput) { in.LaunchTemplate.LaunchTemplateId = aws.String("lt-0123") }), []string{"LaunchTemplate"}},
		"create: launch template empty":   {createWith(func(in *gl.CreateGameServerGroupInput) { in.LaunchTemplate = &types.LaunchTemplateSpecification{} }), []string{"LaunchTemplate"}},
		"create: unknown balancing": {createWith(func(in *gl.CreateGameServerGroupInput) { in.BalancingStrategy = "CHEAPEST" }),
			[]string{"BalancingStrategy", "CHEAPEST"}},
		"create: target value missing": {createWith(func(in *gl.CreateGameServerGroupInput) {
			in.AutoScalingPolicy = &types.GameServerGroupAutoScalingPolicy{TargetTrackingConfiguration: &types.TargetTrackingConfiguration{}}
		}), []string{"AutoScalingPolicy.TargetTrackingConfiguration.TargetValue"}},
		"create: bad subnet": {createWith(func(in *gl.CreateGameServerGroupInput) { in.VpcSubnets = []string{"net-1"} }), []string{"VpcSubnets[0]"}},
		"register: short instance ID": {registerWith(func(in *gl.RegisterGameServerInput) { in.InstanceId = aws.String("i-123") }),
			[]string{"InstanceId", "i-123"}},
		"register: short game server ID": {registerWith(func(in *gl.RegisterGameServerInput) { in.GameServerId = aws.String("ab") }),
			[]string{"GameServerId"}},
		"register: game server ID pattern": {registerWith(func(in *gl.RegisterGameServerInput) { in.GameServerId = aws.String("%%%") }),
			[]string{"GameServerId", "pattern"}},
		"register: blank connection info": {registerWith(func(in *gl.RegisterGameServerInput) { in.ConnectionInfo = aws.String("   ") }),
			[]string{"ConnectionInfo"}},
		"register: instance ID missing": {registerWith(func(in *gl.RegisterGameServerInput) { in.InstanceId = nil }), []string{"InstanceId", "null"}},
		"claim: filter without ACTIVE": {claimWith(func(in *gl.ClaimGameServerInput) {
			in.FilterOption = &types.ClaimFilterOption{InstanceStatuses: []types.FilterInstanceStatus{"DRAINING"}}
		}), []string{"FilterOption.InstanceStatuses", "ACTIVE"}},
		"claim: unknown filter status": {claimWith(func(in *gl.ClaimGameServerInput) {
			in.FilterOption = &types.ClaimFilterOption{InstanceStatuses: []types.FilterInstanceStatus{"ACTIVE", "SPOT_TERMINATING"}}
		}), []string{"FilterOption.InstanceStatuses[1]", "SPOT_TERMINATING"}},
		"claim: empty game server data": {claimWith(func(in *gl.ClaimGameServerInput) { in.GameServerData = aws.String("") }), []string{"GameServerData"}},
		"claim: group missing":          {claimWith(func(in *gl.ClaimGameServerInput) { in.GameServerGroupName = nil }), []string{"GameServerGroupName", "null"}},
		"update: unknown utilization": {updateWith(func(in *gl.UpdateGameServerInput) { in.UtilizationStatus = "BUSY" }),
			[]string{"UtilizationStatus", "BUSY"}},
		"update: unknown health check": {updateWith(func(in *gl.UpdateGameServerInput) { in.HealthCheck = "SICK" }),
			[]string{"HealthCheck", "SICK"}},
		"update: game server ID missing": {updateWith(func(in *gl.UpdateGameServerInput) { in.GameServerId = nil }), []string{"GameServerId", "null"}},
		"list game servers: Limit 0": {func(ctx context.Context, c client) error {
			_, err := c.ListGameServers(ctx, &gl.ListGameServersInput{GameServerGroupName: aws.String(group), Limit: aws.Int32(0)})
			return err
		}, []string{"Limit"}},
		"list game servers: sort order": {func(ctx context.Context, c client) error {
			_, err := c.ListGameServers(ctx, &gl.ListGameServersInput{GameServerGroupName: aws.String(group), SortOrder: "SIDEWAYS"})
			return err
		}, []string{"SortOrder", "SIDEWAYS"}},
		"list groups: Limit 0": {func(ctx context.Context, c client) error {
			_, err := c.ListGameServerGroups(ctx, &gl.ListGameServerGroupsInput{Limit: aws.Int32(0)})
			return err
		}, []string{"Limit"}},
		"instances: short instance ID": {func(ctx context.Context, c client) error {
			_, err := c.DescribeGameServerInstances(ctx, &gl.DescribeGameServerInstancesInput{GameServerGroupName: aws.String(group),
				InstanceIds: []string{instanceN(1), "i-1"}})
			return err
		}, []string{"InstanceIds[1]", "i-1"}},
		"instances: empty InstanceIds": {func(ctx context.Context, c client) error {
			_, err := c.DescribeGameServerInstances(ctx, &gl.DescribeGameServerInstancesInput{GameServerGroupName: aws.String(group),
				InstanceIds: []string{}})
			return err
		}, []string{"InstanceIds"}},
		"delete: unknown option": {func(ctx context.Context, c client) error {
			_, err := c.DeleteGameServerGroup(ctx, &gl.DeleteGameServerGroupInput{GameServerGroupName: aws.String(group), DeleteOption: "NUKE"})
			return err
		}, []string{"DeleteOption", "NUKE"}},
		"describe group: name missing": {func(ctx context.Context, c client) error {
			_, err := c.DescribeGameServerGroup(ctx, &gl.DescribeGameServerGroupInput{})
			return err
		}, []string{"GameServerGroupName", "null"}},
		"suspend: no actions": {func(ctx context.Context, c client) error {
			_, err := c.SuspendGameServerGroup(ctx, &gl.SuspendGameServerGroupInput{GameServerGroupName: aws.String(group),
				SuspendActions: []types.GameServerGroupAction{}})
			return err
		}, []string{"SuspendActions"}},
		"resume: unknown action": {func(ctx context.Context, c client) error {
			_, err := c.ResumeGameServerGroup(ctx, &gl.ResumeGameServerGroupInput{GameServerGroupName: aws.String(group),
				ResumeActions: []types.GameServerGroupAction{"EVERYTHING"}})
			return err
		}, []string{"ResumeActions[0]", "EVERYTHING"}},
		"update group: instance definitions": {func(ctx context.Context, c client) error {
			_, err := c.UpdateGameServerGroup(ctx, &gl.UpdateGameServerGroupInput{GameServerGroupName: aws.String(group),
				InstanceDefinitions: []types.InstanceDefinition{{InstanceType: "c5.large"}}})
			return err
		}, []string{"InstanceDefinitions"}},
		"tag: Tags missing": {func(ctx context.Context, c client) error {
			_, err := c.TagResource(ctx, &gl.TagResourceInput{ResourceARN: aws.String(groupARN(group))})
			return err
		}, []string{"Tags", "null"}},
		"untag: empty key": {func(ctx context.Context, c client) error {
			_, err := c.UntagResource(ctx, &gl.UntagResourceInput{ResourceARN: aws.String(groupARN(group)), TagKeys: []string{""}})
			return err
		}, []string{"TagKeys"}},
	}
	clients := []namedClient{{"v2", newV2(shared, false)}, {"v1", newV1(shared)}}
	for _, nc := range clients {
		t.Run(nc.name, func(t *testing.T) {
			for name, tc := range tests {
				t.Run(name, func(t *testing.T) {
					wantErr(t, tc.call(ctx(t), nc.c), "InvalidRequestException", tc.mentions...)
				})
			}
		})
	}
	// Nothing was created, registered or changed.
	if _, err := describeGroup(t, sharedClients[0].c, group+"-new"); code(err) != "NotFoundException" {
		t.Errorf("a refused create left a group: %v", err)
	}
	out, err := sharedClients[0].c.ListGameServers(ctx(t), &gl.ListGameServersInput{GameServerGroupName: aws.String(group)})
	if err != nil || len(out.GameServers) != 1 || out.GameServers[0].ClaimStatus != "" ||
		out.GameServers[0].UtilizationStatus != types.GameServerUtilizationStatusAvailable {
		t.Errorf("game servers after refused calls: %+v %v", out, err)
	}
}
